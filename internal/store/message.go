package store

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
)

// Instants are int64 nanoseconds since the Unix epoch, as time.Time.UnixNano.
const (
	// Never is the instant that never comes: the ExpiresAt of a message with no
	// time to live, the deadline of an entity that never idles.
	Never int64 = math.MaxInt64
	// Unset marks an optional instant that was not given.
	Unset int64 = math.MinInt64
)

// Key orders the messages of one entity: by sequence number, then by copy
// ordinal. Queues and dead-letter queues use copy 0 only; a subscription can
// hold several copies of one topic message (one per matching rule with an
// action, SEMANTICS R2), which share the topic's sequence number.
type Key struct {
	Seq  int64
	Copy uint32
}

// Less reports whether k sorts before o.
func (k Key) Less(o Key) bool {
	return k.Seq < o.Seq || (k.Seq == o.Seq && k.Copy < o.Copy)
}

// Next returns the smallest key after k.
func (k Key) Next() Key {
	if k.Copy == math.MaxUint32 {
		return Key{Seq: k.Seq + 1}
	}
	return Key{Seq: k.Seq, Copy: k.Copy + 1}
}

// State is where a message is within its queue.
type State uint8

const (
	// Available messages can be received.
	Available State = iota
	// Locked messages are held under a peek-lock.
	Locked
	// Deferred messages wait for ReceiveDeferredMessages.
	Deferred
	// Scheduled messages wait for their enqueue time.
	Scheduled
	// Delayed messages were released and become available again at their
	// due instant (a processor's retry delay); in a session they hold back
	// the session's later messages.
	Delayed
	// NumStates counts the states; the root package's TestEnumsMirror
	// (enums_internal_test.go) holds the public MessageState to them.
	NumStates
)

func (s State) String() string {
	switch s {
	case Available:
		return "available"
	case Locked:
		return "locked"
	case Deferred:
		return "deferred"
	case Scheduled:
		return "scheduled"
	case Delayed:
		return "delayed"
	}
	return "unknown"
}

// Queue names one of an entity's three message queues.
type Queue uint8

const (
	// Main is the entity's own queue.
	Main Queue = iota
	// DeadLetterQueue is its dead-letter queue.
	DeadLetterQueue
	// TransferQueue is its transfer dead-letter queue.
	TransferQueue
	// NumQueues counts the queues; the root package's TestEnumsMirror
	// (enums_internal_test.go) holds the public SubQueue to them.
	NumQueues
)

func (q Queue) String() string {
	names := [...]string{"Main", "DeadLetter", "Transfer"}
	if int(q) < len(names) {
		return names[q]
	}
	return "Queue(" + strconv.Itoa(int(q)) + ")"
}

// Headers holds the rarely set string properties of a message, so that a
// message without them costs one pointer. Its fields are those of
// sqlfilter.Headers, in the same order, so that either converts to the
// other.
type Headers struct {
	ContentType      string
	CorrelationID    string
	Subject          string
	To               string
	ReplyTo          string
	ReplyToSessionID string
	PartitionKey     string
}

// DeadLetter records why a message was dead-lettered.
type DeadLetter struct {
	Reason      string
	Description string
	Source      string
}

// Message is one stored message: the message as sent, its life in the
// broker, and the store's bookkeeping, which only the store changes.
//
// The fields as sent are set before the message enters a store and do not
// change while it is in one, but for Props, which changes only through
// [Store.SetProps]. The life fields are the engine's to write under its
// entity's lock. A Message is guarded by the lock of the entity that holds
// it.
type Message struct {
	// As sent.

	// MessageID is the id the sender gave. When it gave none, IDSeed is not
	// zero and the broker's id is made from it when someone looks (see ID),
	// so that a message costs no id string until then.
	MessageID string
	IDSeed    uint64
	SessionID string
	Headers   *Headers // nil when every header is empty
	Body      []byte
	Props     map[string]any
	// Scheduled is the ScheduledEnqueueTime as sent, or Unset.
	Scheduled int64

	// Life in the broker.

	// TTL is the time to live as sent (0: not set) until the message is
	// enqueued, then its effective time to live (0: it never expires).
	TTL        int64
	Enqueued   int64 // EnqueuedTime; for a scheduled message, its scheduled time
	Expires    int64 // ExpiresAt, or Never
	Deliveries uint32
	Hops       uint8 // ForwardTo moves so far
	// FromDeferral is set on a message locked by ReceiveDeferredMessages: when
	// its lock ends unsettled it returns to Deferred (SEMANTICS L6).
	FromDeferral bool
	EnqueuedSeq  int64 // the sequence number first assigned where the message entered
	DL           *DeadLetter
	// RenewUntil, while the message is locked, is until when its lock is
	// renewed automatically at its end; 0: not renewed.
	RenewUntil int64

	// Bookkeeping.

	key   Key
	state State
	queue Queue
	// slot is the message's slot in its store's arena, 0 when in none.
	slot uint32
	// lockPrev and lockNext link a locked message into its store's list of
	// locks, by arena slot (0: none).
	lockPrev, lockNext uint32
	lockedUntil        int64
	token              [16]byte
	// due is the instant of the message's pending expiry or activation, or
	// Never. A lock's end is lockedUntil.
	due int64
	// size is what the message counted against its store when it entered,
	// or when SetProps changed it.
	size int64
	// pins counts the views being read from the message outside its
	// entity's lock (recycle.go).
	pins int32
	// share, once a topic has copied the message, counts the messages that
	// share its body; the last of them to be recycled keeps the body's room
	// for reuse (recycle.go).
	share *share
	// madeID caches the broker-made id once ID made it.
	madeID string
}

// Key returns the message's key in its store.
func (m *Message) Key() Key { return m.key }

// State returns the message's state in its store.
func (m *Message) State() State { return m.state }

// Queue returns the queue of its store that holds the message.
func (m *Message) Queue() Queue { return m.queue }

// LockedUntil returns when the message's lock ends; 0 when it is not locked.
func (m *Message) LockedUntil() int64 { return m.lockedUntil }

// Token returns the lock token of a locked message; zero when it is not
// locked.
func (m *Message) Token() [16]byte { return m.token }

// Stored reports whether the message is in a store.
func (m *Message) Stored() bool { return m.slot != 0 }

// Size returns the message's size as SEMANTICS V3 counts it: the body, the
// string properties, and the application properties' keys and values (8
// bytes for numbers and times); a broker-made MessageID counts its 32
// characters.
func (m *Message) Size() int64 {
	if m.slot != 0 {
		return m.size
	}
	return m.SizeWith(m.Props)
}

// SizeWith returns the size the message would have with props as its
// application properties.
func (m *Message) SizeWith(props map[string]any) int64 {
	n := int64(len(m.Body) + len(m.MessageID) + len(m.SessionID))
	if m.IDSeed != 0 && m.MessageID == "" {
		n += IDLength
	}
	if h := m.Headers; h != nil {
		n += int64(len(h.ContentType) + len(h.CorrelationID) + len(h.Subject) + len(h.To) +
			len(h.ReplyTo) + len(h.ReplyToSessionID) + len(h.PartitionKey))
	}
	for k, v := range props {
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
	}
	return 8 // the other integers and floats, time.Time, time.Duration
}

// IDLength is the length of a broker-made message id.
const IDLength = 32

// ID returns the message's MessageID: the sender's, or the one the broker
// made for it (SEMANTICS DD2).
func (m *Message) ID() string {
	if m.MessageID != "" || m.IDSeed == 0 {
		return m.MessageID
	}
	if m.madeID == "" {
		m.madeID = string(AppendID(make([]byte, 0, IDLength), m.IDSeed))
	}
	return m.madeID
}

// AppendID appends the IDLength hex characters of the broker-made id with
// this seed: 128 bits, the seed and a mix of it, shaped as a version 4 UUID.
func AppendID(dst []byte, seed uint64) []byte {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	binary.LittleEndian.PutUint64(b[8:], mix64(seed))
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

// Due returns the instant of the message's pending expiry, activation or
// retry, or Never; a lock's end is LockedUntil.
func (m *Message) Due() int64 { return m.due }
