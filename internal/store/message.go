package store

import "math"

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

// State is where a message is within its stream.
type State uint8

const (
	// Available messages can be received.
	Available State = iota
	// Locked messages are held under a peek-lock. A Stream does not hold
	// them: the broker keeps them in its list of locks.
	Locked
	// Deferred messages wait for ReceiveDeferredMessages.
	Deferred
	// Scheduled messages wait for their enqueue time.
	Scheduled
	numStates
)

// NumStates is the number of states, for arrays indexed by State.
const NumStates = int(numStates)

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
	}
	return "unknown"
}

// Headers holds the rarely set string properties of a message, so that a
// message without them costs one pointer.
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

// Message is one stored message: the broker's bookkeeping, then the message
// as sent. The broker owns every field; Body and Props are never shared with
// callers. A Message is guarded by the lock of the entity that holds it.
type Message struct {
	Key   Key
	State State
	// Sub says which stream of its entity holds the message (the broker's
	// main, dead-letter or transfer dead-letter queue).
	Sub uint8
	// FromDeferral is set on a message locked by ReceiveDeferredMessages: when
	// its lock ends unsettled it returns to Deferred (SEMANTICS L6).
	FromDeferral bool
	// SharedBody is set when topic copies share the body: the body is then
	// never reused (recycle.go).
	SharedBody bool
	Deliveries uint32
	// Slot is the message's slot in its entity's Arena, 0 when in none.
	Slot uint32
	// pins counts the copies being made from the message outside its
	// entity's lock (recycle.go).
	pins int32
	// LockPrev and LockNext link a locked message into its entity's list of
	// locks, by arena slot (0: none).
	LockPrev, LockNext uint32
	// Due is the instant of the message's one pending deadline (lock end,
	// expiry or activation), or Never.
	Due int64

	Enqueued    int64 // EnqueuedTime; for a scheduled message, its scheduled time
	Expires     int64 // ExpiresAt, or Never
	TTL         int64 // TimeToLive as sent, 0 when not set
	Scheduled   int64 // ScheduledEnqueueTime as sent, or Unset
	LockedUntil int64
	Token       [16]byte
	EnqueuedSeq int64 // the sequence number first assigned where the message entered
	Size        int64 // bytes counted against the entity quota (SEMANTICS V3)

	// MessageID is the id the sender gave. When it gave none, IDSeed is not
	// zero and the broker's id is derived from it when someone looks
	// (SEMANTICS DD2), so that a message costs no id string until then.
	MessageID string
	IDSeed    uint64
	SessionID string
	Headers   *Headers // nil when every header is empty
	Body      []byte
	Props     map[string]any
	DL        *DeadLetter // nil unless dead-lettered
}
