package engine

// The engine's vocabulary: the values the root maps its public types onto
// (TestEnumsMirror holds the mirrored enums to the public ones) and that
// the codec writes. Nothing here knows an entity; everything above uses it.

import (
	"fmt"
	"strconv"
	"time"

	"github.com/minibus-go/minibus/internal/sqlfilter"
	"github.com/minibus-go/minibus/internal/store"
)

// Kind says what an entity is.
type Kind uint8

const (
	KindQueue Kind = iota
	KindTopic
	KindSubscription
)

func (k Kind) String() string {
	switch k {
	case KindQueue:
		return "queue"
	case KindTopic:
		return "topic"
	}
	return "subscription"
}

// Status says which operations an entity accepts (SEMANTICS V5). The root
// package's TestEnumsMirror (enums_internal_test.go) holds the public
// EntityStatus, which converts to and from it, to its values and names.
type Status int

const (
	StatusActive Status = iota
	StatusDisabled
	StatusSendDisabled
	StatusReceiveDisabled
	// NumStatuses counts the statuses.
	NumStatuses
)

func (s Status) String() string {
	names := [...]string{"Active", "Disabled", "SendDisabled", "ReceiveDisabled"}
	if s >= 0 && int(s) < len(names) {
		return names[s]
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

func (s Status) canSend() bool { return s == StatusActive || s == StatusReceiveDisabled }

func (s Status) canReceive() bool { return s == StatusActive || s == StatusSendDisabled }

// Config is an entity's settings in the units of its public properties,
// checked and with defaults filled in by the caller. Zero durations mean
// "none": no time to live, no idle deletion. A subscription's MaxSizeMB and
// MaxMessageKB are its topic's.
type Config struct {
	LockDuration               time.Duration
	MaxDeliveryCount           int32
	TTL                        time.Duration // DefaultMessageTimeToLive
	DeadLetterOnExpiry         bool
	DeadLetterOnFilterError    bool
	AutoDeleteOnIdle           time.Duration
	RequiresSession            bool
	RequiresDuplicateDetection bool
	DuplicateWindow            time.Duration
	ForwardTo                  string
	ForwardDeadLetteredTo      string
	MaxSizeMB                  int32
	MaxMessageKB               int64
	Status                     Status
}

// maxSize is the entity's quota in bytes (SEMANTICS V3).
func (c *Config) maxSize() int64 { return int64(c.MaxSizeMB) << 20 }

// maxMessageSize is the largest message in bytes (SEMANTICS V3).
func (c *Config) maxMessageSize() int64 { return c.MaxMessageKB << 10 }

// Counts are an entity's message counts and times (SEMANTICS L13).
type Counts struct {
	// Active counts available, locked and deferred messages.
	Active, Scheduled, DeadLetter, TransferDeadLetter int64
	// Size is SizeInBytes: a queue's messages; a topic's scheduled messages
	// and its subscriptions' messages.
	Size                       int64
	Subscriptions              int
	Created, Updated, Accessed time.Time
}

// Mode says how a receiver takes messages. The root package's
// TestEnumsMirror (enums_internal_test.go) holds the public ReceiveMode,
// which maps to it, to its values and names.
type Mode uint8

const (
	PeekLock Mode = iota
	ReceiveAndDelete
	// NumModes counts the modes.
	NumModes
)

func (m Mode) String() string {
	switch m {
	case PeekLock:
		return "PeekLock"
	case ReceiveAndDelete:
		return "ReceiveAndDelete"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Op is a settlement.
type Op uint8

const (
	Complete Op = iota
	Abandon
	DeadLetter
	Defer
	Renew
	// Release ends the lock without counting the delivery (SEMANTICS L15).
	// A settle record carries its Op: new ones go at the end.
	Release
)

// settleOps are the operations of the settlements, for the fault
// injector.
var settleOps = [...]Operation{Complete: OpComplete, Abandon: OpAbandon, DeadLetter: OpDeadLetter, Defer: OpDefer, Renew: OpRenewLock,
	Release: OpRelease}

// Settlement is what to do to a locked message.
type Settlement struct {
	Op    Op
	Token [16]byte
	// Seq is the message's sequence number as the caller knows it (0: not
	// known), for error texts.
	Seq int64
	// Props is a validated copy of PropertiesToModify, for Abandon, Defer and
	// DeadLetter.
	Props               map[string]any
	Reason, Description string
	// RetryAfter, for Abandon, keeps the message from being received again
	// until this long after now (a processor's retry delay); 0: at once.
	RetryAfter time.Duration
}

// Operation is a call a fault injector can fail. The root package's
// TestEnumsMirror (enums_internal_test.go) holds the public Operation, which
// converts from it, to its values and names.
type Operation uint8

const (
	OpSend Operation = iota
	OpSchedule
	OpCancelScheduled
	OpReceive
	OpPeek
	OpComplete
	OpAbandon
	OpDeadLetter
	OpDefer
	OpRenewLock
	OpAcceptSession
	OpRelease
	// NumOperations counts the operations.
	NumOperations
)

func (op Operation) String() string {
	names := [...]string{"Send", "Schedule", "CancelScheduled", "Receive", "Peek", "Complete", "Abandon",
		"DeadLetter", "Defer", "RenewLock", "AcceptSession", "Release"}
	if int(op) < len(names) {
		return names[op]
	}
	return "Operation(" + strconv.Itoa(int(op)) + ")"
}

// EventKind says what happened. The root package's TestEnumsMirror
// (enums_internal_test.go) holds the public EventKind, which converts to it,
// to its values and names.
type EventKind uint8

const (
	EventSent EventKind = iota
	EventScheduled
	EventActivated
	EventDelivered
	EventCompleted
	EventAbandoned
	EventDeferred
	EventDeadLettered
	EventExpired
	EventLockLost
	EventForwarded
	EventEntityCreated
	EventEntityDeleted
	EventCanceled
	EventRemoved
	EventReleased
	// NumEventKinds counts the kinds.
	NumEventKinds
)

// Event is one thing that happened in the broker, at instant At.
type Event struct {
	Kind       EventKind
	At         int64
	Entity     string      // path: "orders", "topic/Subscriptions/sub"
	Queue      store.Queue // where the message was before the event
	Seq        int64
	MessageID  string
	Deliveries uint32
	Reason     string
}

func (k EventKind) String() string {
	names := [...]string{"Sent", "Scheduled", "Activated", "Delivered", "Completed", "Abandoned", "Deferred",
		"DeadLettered", "Expired", "LockLost", "Forwarded", "EntityCreated", "EntityDeleted", "Canceled", "Removed", "Released"}
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("EventKind(%d)", k)
}

// FilterKind says what filter a rule has.
type FilterKind uint8

const (
	FilterTrue FilterKind = iota
	FilterFalse
	FilterSQL
	FilterCorrelation
)

// RuleSpec describes a rule as data, what a log can record and a snapshot
// keep: its name, its filter and its optional SQL action.
type RuleSpec struct {
	Name   string
	Filter FilterKind
	// SQL and Params are a FilterSQL's expression and parameters.
	SQL    string
	Params map[string]any
	// Correlation and CorrelationProps are a FilterCorrelation's fields.
	Correlation      sqlfilter.CorrelationFields
	CorrelationProps map[string]any
	// HasAction says the rule has an action: ActionSQL with ActionParams.
	HasAction    bool
	ActionSQL    string
	ActionParams map[string]any
}
