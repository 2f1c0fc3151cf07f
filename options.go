package minibus

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus/internal/engine"
	"github.com/minibus-go/minibus/internal/store"
)

// Option configures a [Namespace] at [NewNamespace] or [Open].
type Option func(*options)

type options struct {
	clock     clock.Clock
	logger    *slog.Logger
	observers []func(Event)
	injectors []func(Operation, string) error
	store     storeOptions // Open's (open.go)
}

func defaultOptions() options {
	return options{
		clock:  clock.New(),
		logger: slog.New(slog.DiscardHandler),
	}
}

// WithLogger sets the logger for entity lifecycle events (created, updated,
// deleted, deleted on idle) at Info level, broker-made dead-lettering at
// Debug level and an observer's recovered panic at Error level. The default
// discards everything. A nil logger keeps the default.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// ReceiveMode says how a receiver takes messages.
type ReceiveMode int

const (
	// ReceiveModePeekLock locks each received message for the entity's
	// LockDuration; it must then be settled (SEMANTICS L1). The default.
	ReceiveModePeekLock ReceiveMode = iota
	// ReceiveModeReceiveAndDelete removes each message as it is returned
	// (SEMANTICS L7).
	ReceiveModeReceiveAndDelete
)

func (m ReceiveMode) String() string {
	switch m {
	case ReceiveModePeekLock:
		return "PeekLock"
	case ReceiveModeReceiveAndDelete:
		return "ReceiveAndDelete"
	}
	return "ReceiveMode(" + strconv.Itoa(int(m)) + ")"
}

func (m ReceiveMode) engine() engine.Mode {
	if m == ReceiveModeReceiveAndDelete {
		return engine.ReceiveAndDelete
	}
	return engine.PeekLock
}

func (m ReceiveMode) check(culprit string) error {
	if m != ReceiveModePeekLock && m != ReceiveModeReceiveAndDelete {
		return errorf(ErrInvalidArgument, culprit, "ReceiveMode %v is not a receive mode", m)
	}
	return nil
}

// SubQueue selects what a receiver reads from an entity.
type SubQueue int

const (
	// SubQueueNone is the entity itself. The default.
	SubQueueNone SubQueue = iota
	// SubQueueDeadLetter is the entity's dead-letter queue (SEMANTICS D1).
	SubQueueDeadLetter
	// SubQueueTransfer is the entity's transfer dead-letter queue, where
	// messages go that could not be forwarded (SEMANTICS F3).
	SubQueueTransfer
)

func (s SubQueue) String() string {
	switch s {
	case SubQueueNone:
		return "None"
	case SubQueueDeadLetter:
		return "DeadLetter"
	case SubQueueTransfer:
		return "Transfer"
	}
	return "SubQueue(" + strconv.Itoa(int(s)) + ")"
}

// subQueueOf maps an engine queue back (TestEnumsMirror).
func subQueueOf(q store.Queue) SubQueue {
	switch q {
	case store.DeadLetterQueue:
		return SubQueueDeadLetter
	case store.TransferQueue:
		return SubQueueTransfer
	}
	return SubQueueNone
}

// queue maps s, which must be valid, to the engine's queue.
func (s SubQueue) queue() store.Queue {
	switch s {
	case SubQueueDeadLetter:
		return store.DeadLetterQueue
	case SubQueueTransfer:
		return store.TransferQueue
	}
	return store.Main
}

func (s SubQueue) check(culprit string) error {
	if s < SubQueueNone || s > SubQueueTransfer {
		return errorf(ErrInvalidArgument, culprit, "SubQueue %v is not a sub-queue", s)
	}
	return nil
}

// ReceiverOptions configures NewReceiver. The zero value (and nil) is a
// peek-lock receiver on the entity itself.
type ReceiverOptions struct {
	// ReceiveMode is how messages are taken. Default ReceiveModePeekLock.
	ReceiveMode ReceiveMode
	// SubQueue is what is read. Default SubQueueNone, the entity itself.
	SubQueue SubQueue
}

// SessionReceiverOptions configures AcceptSession and AcceptNextSession.
type SessionReceiverOptions struct {
	// ReceiveMode is how messages are taken. Default ReceiveModePeekLock.
	ReceiveMode ReceiveMode
}

// PeekMessagesOptions configures PeekMessages.
type PeekMessagesOptions struct {
	// FromSequenceNumber is the first sequence number to return. Default 0:
	// continue after the last message this receiver peeked without
	// FromSequenceNumber (SEMANTICS L12).
	FromSequenceNumber int64
}

// AbandonMessageOptions configures AbandonMessage.
type AbandonMessageOptions struct {
	// PropertiesToModify are merged into the message's ApplicationProperties
	// (SEMANTICS L3). Default nil: none.
	PropertiesToModify map[string]any
}

// DeferMessageOptions configures DeferMessage.
type DeferMessageOptions struct {
	// PropertiesToModify are merged into the message's ApplicationProperties.
	// Default nil: none.
	PropertiesToModify map[string]any
}

// DeadLetterOptions configures DeadLetterMessage.
type DeadLetterOptions struct {
	// Reason becomes the message's DeadLetterReason. Default "".
	Reason string
	// ErrorDescription becomes its DeadLetterErrorDescription. Default "".
	ErrorDescription string
	// PropertiesToModify are merged into the message's ApplicationProperties.
	// Default nil: none.
	PropertiesToModify map[string]any
}

// SendMessageOptions configures SendMessage and SendMessages. Empty today,
// kept for growth.
type SendMessageOptions struct{}

// ScheduleMessagesOptions configures ScheduleMessages. Empty today.
type ScheduleMessagesOptions struct{}

// CancelScheduledMessagesOptions configures CancelScheduledMessages. Empty
// today.
type CancelScheduledMessagesOptions struct{}

// ReceiveMessagesOptions configures ReceiveMessages.
type ReceiveMessagesOptions struct {
	// NoWait returns what is available now, possibly nothing (nil, nil),
	// instead of waiting. Default false: wait.
	NoWait bool
	// MaxWaitTime, when positive, returns nil, nil if nothing arrives within
	// it, on the namespace clock. Default 0: wait as long as ctx allows.
	MaxWaitTime time.Duration
}

// DeleteMessagesOptions configures DeleteMessages.
type DeleteMessagesOptions struct {
	// BeforeEnqueueTime deletes only messages enqueued at or before it.
	// Default zero: no limit.
	BeforeEnqueueTime time.Time
}

// ReceiveDeferredMessagesOptions configures ReceiveDeferredMessages. Empty
// today.
type ReceiveDeferredMessagesOptions struct{}

// CompleteMessageOptions configures CompleteMessage. Empty today.
type CompleteMessageOptions struct{}

// RenewMessageLockOptions configures RenewMessageLock. Empty today.
type RenewMessageLockOptions struct{}

// ReleaseMessageOptions configures ReleaseMessage. Empty today, kept for
// growth.
type ReleaseMessageOptions struct{}

// GetSessionStateOptions configures GetSessionState. Empty today.
type GetSessionStateOptions struct{}

// SetSessionStateOptions configures SetSessionState. Empty today.
type SetSessionStateOptions struct{}

// RenewSessionLockOptions configures RenewSessionLock. Empty today.
type RenewSessionLockOptions struct{}
