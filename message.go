package minibus

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/minibus-go/minibus/internal/store"
)

// Message is a message to send. Every field is optional; the zero value of a
// field means "not set". Send copies Body and ApplicationProperties (SEMANTICS
// V4): changing them after the call changes nothing in the broker.
type Message struct {
	// MessageID identifies the message, up to 128 characters. Default: a
	// random 32-character hex id (SEMANTICS DD2).
	MessageID string
	// Body is the payload.
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

	// idSeed, when not zero, is the seed of the broker-made MessageID that
	// build writes.
	idSeed uint64
	// origin is the sub-queue a peek-lock delivery came from, so that
	// settling through another entity is ErrInvalidArgument rather than
	// ErrLockLost. nil for messages built by the caller.
	origin *subQueue
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

// Limits of message fields, as Service Bus.
const (
	maxIDLength = 128
)

// newRecord validates msg and returns the broker's own copy of it
// (SEMANTICS V4). i is the message's index in the caller's batch, for errors.
// It does not check sizes against an entity: that needs the entity's lock.
func newRecord(e *entity, msg *Message, i int) (*store.Message, error) {
	if err := checkMessage(msg, i); err != nil {
		return nil, errorf(ErrInvalidArgument, e.describe(), "%v", err)
	}
	props, err := copyProps(msg.ApplicationProperties)
	if err != nil {
		return nil, errorf(ErrInvalidArgument, e.describe(), "message %d: %v", i, err)
	}
	m := store.NewMessage() // a recycled one, with room for a body
	m.MessageID = msg.MessageID
	m.SessionID = msg.SessionID
	m.Body = copyBody(m.Body, msg.Body)
	m.Props = props
	m.TTL = int64(msg.TimeToLive)
	m.Scheduled = store.Unset
	m.Due = store.Never
	m.Expires = store.Never
	if !msg.ScheduledEnqueueTime.IsZero() {
		m.Scheduled = nanos(msg.ScheduledEnqueueTime)
	}
	if msg.ContentType != "" || msg.CorrelationID != "" || msg.Subject != "" || msg.To != "" ||
		msg.ReplyTo != "" || msg.ReplyToSessionID != "" || msg.PartitionKey != "" {
		m.Headers = &store.Headers{
			ContentType:      msg.ContentType,
			CorrelationID:    msg.CorrelationID,
			Subject:          msg.Subject,
			To:               msg.To,
			ReplyTo:          msg.ReplyTo,
			ReplyToSessionID: msg.ReplyToSessionID,
			PartitionKey:     msg.PartitionKey,
		}
	}
	if m.MessageID == "" {
		m.IDSeed = rand.Uint64() | 1 // SEMANTICS DD2: the id is made when read
	}
	m.Size = messageSize(m)
	return m, nil
}

// copyBody copies body into room's capacity when it fits; nil stays nil and
// empty stays empty.
func copyBody(room, body []byte) []byte {
	if body == nil {
		return nil
	}
	if cap(room) < len(body) {
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

// idLength is the length of a broker-made message id.
const idLength = 32

// messageID returns m's MessageID: the sender's, or the one the broker made
// for it (SEMANTICS DD2).
func messageID(m *store.Message) string {
	if m.MessageID != "" || m.IDSeed == 0 {
		return m.MessageID
	}
	return string(appendID(make([]byte, 0, idLength), m.IDSeed))
}

// appendID appends the 32 hex characters of the broker-made id with this
// seed: 128 bits, the seed and a mix of it, shaped as a version 4 UUID.
func appendID(dst []byte, seed uint64) []byte {
	var b [16]byte
	putUint64(b[:8], seed)
	putUint64(b[8:], mix64(seed))
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return hex.AppendEncode(dst, b[:])
}

// mix64 is splitmix64's finalizer.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func putUint64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

// messageSize is the size counted against MaxMessageSizeInKilobytes and
// MaxSizeInMegabytes (SEMANTICS V3): the body, the string properties, and
// the application properties' keys and values.
func messageSize(m *store.Message) int64 {
	n := int64(len(m.Body) + len(m.MessageID) + len(m.SessionID))
	if m.IDSeed != 0 && m.MessageID == "" {
		n += idLength
	}
	if h := m.Headers; h != nil {
		n += int64(len(h.ContentType) + len(h.CorrelationID) + len(h.Subject) + len(h.To) +
			len(h.ReplyTo) + len(h.ReplyToSessionID) + len(h.PartitionKey))
	}
	for k, v := range m.Props {
		n += int64(len(k)) + valueSize(v)
	}
	return n
}

func valueSize(v any) int64 {
	switch v := v.(type) {
	case nil:
		return 0
	case string:
		return int64(len(v))
	case []byte:
		return int64(len(v))
	case bool, int8, uint8:
		return 1
	case int16, uint16:
		return 2
	case int32, uint32, float32:
		return 4
	default:
		return 8
	}
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
			return nil, &propertyError{key: k, value: v}
		}
		if b, ok := v.([]byte); ok {
			v = bytes.Clone(b)
		}
		out[k] = v
	}
	return out, nil
}

// mergeProps returns props with mod merged in, copying both (SEMANTICS L3).
// It validates mod first and returns props unchanged on error.
func mergeProps(props, mod map[string]any) (map[string]any, error) {
	if len(mod) == 0 {
		return props, nil
	}
	add, err := copyProps(mod)
	if err != nil {
		return props, err
	}
	out := make(map[string]any, len(props)+len(add))
	for k, v := range props {
		out[k] = v
	}
	for k, v := range add {
		out[k] = v
	}
	return out, nil
}

type propertyError struct {
	key   string
	value any
}

func (e *propertyError) Error() string {
	return "application property " + strconv.Quote(e.key) + " has unsupported type " + typeName(e.value)
}

func typeName(v any) string {
	return fmt.Sprintf("%T", v)
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
