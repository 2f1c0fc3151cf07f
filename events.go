package minibus

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/minibus-go/minibus/internal/engine"
)

// Event is one thing that happened in the broker: a message sent,
// delivered, settled, expired …, or an entity created or deleted. Give
// [WithObserver] a function to see them all.
type Event struct {
	Kind EventKind
	// At is the instant the event took effect on the namespace clock: for a
	// deadline (an expiry, a lock's end, an activation), its own instant
	// (SEMANTICS T3).
	At time.Time
	// Entity names where it happened: "orders", or
	// "orders/Subscriptions/billing".
	Entity string
	// SubQueue is where the message was before the event.
	SubQueue SubQueue
	// SequenceNumber, MessageID and DeliveryCount describe the message; zero
	// for entity events. EventActivated carries the new sequence number (Q1).
	SequenceNumber int64
	MessageID      string
	DeliveryCount  uint32
	// Reason is the dead-letter reason of EventDeadLettered, and the
	// destination of EventForwarded.
	Reason string
}

// EventKind says what an Event is.
type EventKind int

const (
	// EventSent: a message was accepted by a queue or topic, or copied to a
	// subscription.
	EventSent EventKind = iota
	// EventScheduled: a message was scheduled (SEMANTICS S1).
	EventScheduled
	// EventActivated: a scheduled message activated (S4).
	EventActivated
	// EventDelivered: a message was received (or fetched from deferral).
	EventDelivered
	// EventCompleted: a locked message was completed.
	EventCompleted
	// EventAbandoned: a locked message was abandoned.
	EventAbandoned
	// EventDeferred: a locked message was deferred.
	EventDeferred
	// EventDeadLettered: a message moved to a dead-letter queue (Reason
	// says why), or to a transfer dead-letter queue.
	EventDeadLettered
	// EventExpired: a message expired (E5); EventDeadLettered follows when
	// the entity dead-letters expired messages.
	EventExpired
	// EventLockLost: a lock ended without settlement (L6); an
	// EventDeadLettered follows when that was the last delivery.
	EventLockLost
	// EventForwarded: a message left for another entity (F2, D4); Reason
	// names it.
	EventForwarded
	// EventEntityCreated: a queue, topic or subscription was created.
	EventEntityCreated
	// EventEntityDeleted: one was deleted, explicitly or on idle (A3).
	EventEntityDeleted
	// EventCanceled: a scheduled message was canceled (S3).
	EventCanceled
	// EventRemoved: DeleteMessages removed a message.
	EventRemoved
	// EventReleased: a locked message was released (ReleaseMessage,
	// SEMANTICS L15). Its DeliveryCount is that of the delivery released;
	// the message's own is back to one less. EventExpired follows when it
	// is past its ExpiresAt, EventForwarded when its entity forwards now.
	EventReleased
)

// String returns the kind's name: "Sent", "Delivered", ….
func (k EventKind) String() string {
	if k < EventSent || k > EventReleased {
		return "EventKind(" + strconv.Itoa(int(k)) + ")"
	}
	return engine.EventKind(k).String() // the same values (TestEnumsMirror)
}

// WithObserver adds f, which is called with every broker event: in order
// per entity, outside every broker lock, for every event of a call before
// that call returns, and for every deadline at or before now before the
// next call (or WaitIdle) returns. Compound outcomes give both events in
// order (EventExpired then EventDeadLettered; EventLockLost then
// EventDeadLettered at MaxDeliveryCount). A topic send gives EventSent for
// the topic and one per subscription copy. The events of one entity come
// one call of f at a time; events of different entities may come at once,
// from different goroutines, so f must be safe for concurrent use. f must
// not block for long and must not call the namespace; while it handles an
// event, a call of another goroutine that waits for a later event of the
// same entity waits for f. A panic of f is recovered and logged at Error
// level on the namespace's logger ([WithLogger]): the call that handed the
// event over keeps its own result, and the other observers and the later
// events are observed as usual. Each WithObserver adds one; all are called.
func WithObserver(f func(Event)) Option {
	return func(o *options) {
		if f != nil {
			o.observers = append(o.observers, f)
		}
	}
}

// Operation is a call a fault injector can fail.
type Operation int

const (
	OpSend            Operation = iota // SendMessage, SendMessages (one per batch)
	OpSchedule                         // ScheduleMessages
	OpCancelScheduled                  // CancelScheduledMessages
	OpReceive                          // ReceiveMessages, ReceiveDeferredMessages, DeleteMessages
	OpPeek                             // PeekMessages
	OpComplete                         // CompleteMessage
	OpAbandon                          // AbandonMessage
	OpDeadLetter                       // DeadLetterMessage
	OpDefer                            // DeferMessage
	OpRenewLock                        // RenewMessageLock, RenewSessionLock
	OpAcceptSession                    // AcceptSession, AcceptNextSession
	OpRelease                          // ReleaseMessage
)

// String returns the operation's name: "Send", "Receive", ….
func (op Operation) String() string {
	names := [...]string{"Send", "Schedule", "CancelScheduled", "Receive", "Peek", "Complete", "Abandon",
		"DeadLetter", "Defer", "RenewLock", "AcceptSession", "Release"}
	if op < 0 || int(op) >= len(names) {
		return "Operation(" + strconv.Itoa(int(op)) + ")"
	}
	return names[op]
}

// WithFaultInjector adds f, which is called before each operation with the
// entity it acts on ("queue", or "topic/Subscriptions/sub"); a non-nil error
// fails that call, returned as it is, and changes nothing, not even an
// event. A processor's own receives and settlements go through it too. A
// panicking f fails the call instead of crashing, with an error that wraps
// [ErrInvalidArgument]. Each WithFaultInjector adds one; all are called,
// in the order given, also after one fails the call, and the first error
// wins.
func WithFaultInjector(f func(op Operation, entity string) error) Option {
	return func(o *options) {
		if f != nil {
			o.injectors = append(o.injectors, f)
		}
	}
}

// observer fans engine events out to the options' observers.
func (o *options) observer() func(*engine.Event) {
	obs, loc := o.observers, o.clock.Now().Location()
	switch len(obs) {
	case 0:
		return nil
	case 1:
		return observerCall(obs[0], loc, o.logger)
	}
	calls := make([]func(*engine.Event), len(obs))
	for i, f := range obs {
		calls[i] = observerCall(f, loc, o.logger)
	}
	return func(x *engine.Event) {
		for _, call := range calls {
			call(x)
		}
	}
}

// observerCall returns what calls f with an engine event, its instant in
// loc. A panic of f is recovered and logged on log at Error level, as a
// panicking fault injector fails only its own call: the call that hands
// the event over keeps its own result, and the other observers and the
// events after it are observed all the same. The Event is built where the
// call passes it: converted, returned and then passed, it would be copied
// right after being written, and reading back those stores stalls.
func observerCall(f func(Event), loc *time.Location, log *slog.Logger) func(*engine.Event) {
	return func(x *engine.Event) {
		defer func() {
			if v := recover(); v != nil {
				log.Error("minibus: observer panicked", "panic", v, "kind", EventKind(x.Kind), "entity", x.Entity, "seq", x.Seq)
			}
		}()
		f(Event{
			Kind: EventKind(x.Kind), Entity: x.Entity, SubQueue: subQueueOf(x.Queue),
			SequenceNumber: x.Seq, MessageID: x.MessageID, DeliveryCount: x.Deliveries, Reason: x.Reason,
			At: time.Unix(0, x.At).In(loc),
		})
	}
}

// faults adapts the options' fault injectors to the engine, which asks
// them all in turn. The engine's Operation converts to the public one as it
// is (TestEnumsMirror).
func (o *options) faults() []func(engine.Operation, string) error {
	fs := make([]func(engine.Operation, string) error, len(o.injectors))
	for i, f := range o.injectors {
		fs[i] = func(op engine.Operation, entity string) error { return f(Operation(op), entity) }
	}
	return fs
}
