package minibus

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/minibus-go/minibus/internal/engine"
	"github.com/minibus-go/minibus/internal/store"
)

// Message is a message to send. Every field is optional; the zero value of a
// field means "not set". Send copies Body and ApplicationProperties (SEMANTICS
// V4): changing them after the call changes nothing in the broker.
type Message struct {
	// MessageID identifies the message, up to 128 characters. Default: a
	// random 32-character hex id (SEMANTICS DD2).
	MessageID string
	// Body is the payload. A nil Body reads back nil, an empty one empty
	// (SEMANTICS V4).
	Body []byte
	// ContentType describes the body, e.g. "application/json".
	ContentType string
	// CorrelationID is for the application's own correlation.
	CorrelationID string
	// Subject is the application's label (sys.Label in SQL filters).
	Subject string
	// To is the application's destination address; the broker ignores it.
	To string
	// ReplyTo is the address to reply to.
	ReplyTo string
	// ReplyToSessionID is the session to reply to.
	ReplyToSessionID string
	// SessionID puts the message in a session, up to 128 characters.
	SessionID string
	// PartitionKey is kept and returned, up to 128 characters; minibus has no
	// partitions.
	PartitionKey string
	// TimeToLive is how long the message lives after it is enqueued. Default
	// 0: the entity's DefaultMessageTimeToLive, which also caps it
	// (SEMANTICS E1). Negative is ErrInvalidArgument.
	TimeToLive time.Duration
	// ScheduledEnqueueTime, when after now, makes the send schedule the
	// message for that instant (SEMANTICS S1). Default zero: enqueue now.
	ScheduledEnqueueTime time.Time
	// ApplicationProperties are the application's own properties. Values may
	// be nil, string, bool, any integer or float type, time.Time,
	// time.Duration or []byte; anything else is ErrInvalidArgument.
	ApplicationProperties map[string]any
}

// ReceivedMessage is a message as the broker returns it from a receive or a
// peek. It is a copy: changing it changes nothing in the broker (SEMANTICS
// V4). The zero value, with only LockToken set, can settle a message by its
// lock token (SEMANTICS L10).
type ReceivedMessage struct {
	// Message is the message as sent, with a MessageID always set, TimeToLive
	// the effective time to live (0 when the message never expires), and
	// ApplicationProperties changed by any PropertiesToModify.
	Message
	// SequenceNumber is the number the entity gave the message (SEMANTICS
	// Q1); for a subscription, the topic's number (Q2).
	SequenceNumber int64
	// EnqueuedSequenceNumber is the number first assigned where the message
	// entered, set on messages that were auto-forwarded.
	EnqueuedSequenceNumber int64
	// EnqueuedTime is when the message was enqueued; for a scheduled message
	// its activation time (SEMANTICS Q3).
	EnqueuedTime time.Time
	// ExpiresAt is when the message expires (SEMANTICS E2); zero: never.
	ExpiresAt time.Time
	// LockedUntil is when the lock ends (SEMANTICS L1); zero in
	// receive-and-delete mode and for peeked messages. RenewMessageLock
	// updates it.
	LockedUntil time.Time
	// LockToken identifies this delivery's lock: random and unique per
	// delivery; zero when there is no lock.
	LockToken [16]byte
	// DeliveryCount is how many times the message has been delivered,
	// counting this delivery (SEMANTICS L1); for a peeked message, the
	// deliveries so far.
	DeliveryCount uint32
	// State is Active, Deferred or Scheduled (SEMANTICS L14).
	State MessageState
	// DeadLetterReason is why the message was dead-lettered.
	DeadLetterReason string
	// DeadLetterErrorDescription says more about DeadLetterReason.
	DeadLetterErrorDescription string
	// DeadLetterSource names the entity the message was dead-lettered in,
	// when it was forwarded out of that entity's dead-letter queue.
	DeadLetterSource string

	// origin is the receiver a peek-lock delivery came from, so that settling
	// through another entity or sub-queue is ErrInvalidArgument rather than
	// ErrLockLost; nil for messages the caller built.
	origin *engine.Receiver
	// how is how the message was obtained.
	how obtained
}

type obtained uint8

const (
	obtainedByToken obtained = iota // built by the caller: settle by token
	obtainedLocked
	obtainedDeleted // receive-and-delete
	obtainedPeeked
)

// MessageState is the state of a received or peeked message.
type MessageState int

const (
	// MessageStateActive is a message that is or was receivable.
	MessageStateActive MessageState = iota
	// MessageStateDeferred is a deferred message (SEMANTICS L3, L14).
	MessageStateDeferred
	// MessageStateScheduled is a scheduled message shown by a peek (S2).
	MessageStateScheduled
)

func (s MessageState) String() string {
	switch s {
	case MessageStateActive:
		return "Active"
	case MessageStateDeferred:
		return "Deferred"
	case MessageStateScheduled:
		return "Scheduled"
	}
	return "MessageState(" + strconv.Itoa(int(s)) + ")"
}

// maxIDLength is the longest MessageID, SessionID and PartitionKey, as
// Service Bus.
const maxIDLength = 128

// toRecord validates msg, message i of a call, and returns the broker's own
// copy of it (SEMANTICS V4): the one conversion to the engine's records.
// Sizes are checked against the entity later, under its lock.
func toRecord(msg *Message, i int) (*store.Message, error) {
	if err := checkMessage(msg, i); err != nil {
		return nil, err
	}
	props, err := copyProps(msg.ApplicationProperties)
	if err != nil {
		return nil, fmt.Errorf("message %d: %w", i, err)
	}
	m := store.NewMessage() // a recycled one, with room for a body
	m.MessageID = msg.MessageID
	m.SessionID = msg.SessionID
	m.Body = copyBody(m.Body, msg.Body)
	m.Props = props
	m.TTL = int64(msg.TimeToLive)
	if !msg.ScheduledEnqueueTime.IsZero() {
		m.Scheduled = engine.Instant(msg.ScheduledEnqueueTime)
	}
	if msg.ContentType != "" || msg.CorrelationID != "" || msg.Subject != "" || msg.To != "" ||
		msg.ReplyTo != "" || msg.ReplyToSessionID != "" || msg.PartitionKey != "" {
		m.Headers = &store.Headers{
			ContentType: msg.ContentType, CorrelationID: msg.CorrelationID, Subject: msg.Subject, To: msg.To,
			ReplyTo: msg.ReplyTo, ReplyToSessionID: msg.ReplyToSessionID, PartitionKey: msg.PartitionKey,
		}
	}
	if m.MessageID == "" {
		m.IDSeed = rand.Uint64() | 1 // SEMANTICS DD2: the id is made when read
	}
	return m, nil
}

// copyBody copies body into room's capacity when it fits; nil stays nil and
// empty stays empty (SEMANTICS V4).
func copyBody(room, body []byte) []byte {
	switch {
	case body == nil:
		return nil
	case cap(room) < len(body) || room == nil:
		return bytes.Clone(body)
	}
	return append(room[:0], body...)
}

// checkMessage checks the fields of a message that need no entity.
func checkMessage(msg *Message, i int) error {
	switch {
	case msg == nil:
		return fmt.Errorf("message %d is nil", i)
	case len(msg.MessageID) > maxIDLength:
		return fmt.Errorf("message %d: MessageID is %d characters, more than %d", i, len(msg.MessageID), maxIDLength)
	case len(msg.SessionID) > maxIDLength:
		return fmt.Errorf("message %d: SessionID is %d characters, more than %d", i, len(msg.SessionID), maxIDLength)
	case len(msg.PartitionKey) > maxIDLength:
		return fmt.Errorf("message %d: PartitionKey is %d characters, more than %d", i, len(msg.PartitionKey), maxIDLength)
	case msg.TimeToLive < 0:
		return fmt.Errorf("message %d: TimeToLive %v is negative", i, msg.TimeToLive)
	}
	return nil
}

// build makes the caller's messages from views, outside the entity's
// lock (SEMANTICS V4), and releases the views: each message gets its own
// body and properties (each body in an allocation of its own, or in a drain
// the room of a recycled one, capped at its length; one allocation for the
// bodies of a batch was slower on W6 in bench/, and a reader that kept one
// body kept the whole batch's), and the
// broker-made message ids are written (those the engine made already, for
// an event, are shared; the others share one allocation). r is the receiver
// of peek-lock deliveries, nil otherwise.
func build(b *engine.Broker, views []store.View, how obtained, r *engine.Receiver) []*ReceivedMessage {
	backing := make([]ReceivedMessage, len(views))
	out := make([]*ReceivedMessage, len(views))
	// Read ahead: the stored messages and their bodies may have gone cold
	// (a backlog), and what follows reads them one after the other; a tight
	// first pass that touches each cache line lets their misses overlap.
	var touched byte
	for i := range views {
		p := views[i].M.Body
		for j := 0; j < len(p); j += 64 {
			touched ^= p[j]
		}
	}
	keep(touched)
	ids := 0
	for i := range views {
		s := &views[i]
		fill(b, &backing[i], s, how, r)
		out[i] = &backing[i]
		if madeID(s.M) && s.MadeID == "" {
			ids++
		}
	}
	// The ids share one allocation, which the Builder's String does not copy.
	var idBuf strings.Builder
	idBuf.Grow(ids * store.IDLength)
	var id [store.IDLength]byte
	for i, rm := range out {
		m := views[i].M
		switch n := len(m.Body); {
		case m.Body == nil:
		case n == 0:
			rm.Body = []byte{}
		default:
			var room []byte
			if views[i].Drain {
				room = store.TakeRoom(n)
			}
			// append to nil allocates without zeroing what it then copies.
			rm.Body = append(room, m.Body...)[:n:n]
		}
		if madeID(m) && views[i].MadeID == "" {
			idBuf.Write(store.AppendID(id[:0], m.IDSeed))
		}
		rm.ApplicationProperties = cloneProps(rm.ApplicationProperties)
	}
	all := idBuf.String()
	for i, rm := range out {
		s := &views[i]
		switch {
		case !madeID(s.M):
		case s.MadeID != "":
			rm.MessageID = s.MadeID
		default:
			rm.MessageID, all = all[:store.IDLength], all[store.IDLength:]
		}
		s.Release()
	}
	return out
}

// keep keeps the compiler from dropping the reads that produced b.
//
//go:noinline
func keep(b byte) {}

// madeID reports whether the broker made m's MessageID (SEMANTICS DD2).
func madeID(m *store.Message) bool { return m.MessageID == "" && m.IDSeed != 0 }

// fill sets rm, a zero ReceivedMessage, from a view, sharing
// ApplicationProperties with the store until build copies them: the one
// conversion from the engine's records.
func fill(b *engine.Broker, rm *ReceivedMessage, s *store.View, how obtained, r *engine.Receiver) {
	m := s.M
	rm.MessageID = m.MessageID
	rm.SessionID = m.SessionID
	rm.TimeToLive = time.Duration(s.TTL)
	rm.ApplicationProperties = s.Props
	if m.Scheduled != store.Unset {
		rm.ScheduledEnqueueTime = b.Time(m.Scheduled)
	}
	if h := m.Headers; h != nil {
		rm.ContentType, rm.CorrelationID, rm.Subject, rm.To = h.ContentType, h.CorrelationID, h.Subject, h.To
		rm.ReplyTo, rm.ReplyToSessionID, rm.PartitionKey = h.ReplyTo, h.ReplyToSessionID, h.PartitionKey
	}
	rm.SequenceNumber = s.Key.Seq
	rm.EnqueuedSequenceNumber = s.EnqueuedSeq
	rm.EnqueuedTime = b.Time(s.Enqueued)
	rm.ExpiresAt = b.Time(s.Expires)
	rm.DeliveryCount = s.Deliveries
	rm.State = messageState(s.State)
	rm.how = how
	if how == obtainedLocked {
		rm.origin = r
		rm.LockedUntil = b.Time(s.LockedUntil)
		rm.LockToken = s.Token
	}
	if dl := s.DL; dl != nil {
		rm.DeadLetterReason, rm.DeadLetterErrorDescription, rm.DeadLetterSource = dl.Reason, dl.Description, dl.Source
	}
}

// messageState maps the store's state of a message to the one it shows
// (TestEnumsMirror).
func messageState(s store.State) MessageState {
	switch s {
	case store.Deferred:
		return MessageStateDeferred
	case store.Scheduled:
		return MessageStateScheduled
	}
	return MessageStateActive
}

// checkValue reports whether v is a property value minibus keeps.
func checkValue(v any) bool {
	switch v.(type) {
	case nil, string, bool, []byte, time.Time, time.Duration,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64,
		float32, float64:
		return true
	}
	return false
}

// copyProps validates and copies application properties, []byte values
// included. nil and empty maps copy to nil.
func copyProps(p map[string]any) (map[string]any, error) {
	if len(p) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(p))
	for k, v := range p {
		if !checkValue(v) {
			return nil, fmt.Errorf("application property %q has unsupported type %T", k, v)
		}
		if b, ok := v.([]byte); ok {
			v = bytes.Clone(b)
		}
		out[k] = v
	}
	return out, nil
}

// cloneProps copies a stored property map for a caller; []byte values are
// copied too.
func cloneProps(p map[string]any) map[string]any {
	if p == nil {
		return nil
	}
	out := make(map[string]any, len(p))
	for k, v := range p {
		if b, ok := v.([]byte); ok {
			v = bytes.Clone(b)
		}
		out[k] = v
	}
	return out
}
