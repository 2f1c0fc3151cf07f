package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
)

// EventKind says what happened; its values are those of the public
// EventKind.
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

// events is the broker's queue of events on their way to the observer.
// Transitions append to it under their entity's lock (so each entity's
// events are in order); every call, once it holds no entity lock, delivers
// what is waiting before it returns. mu is a leaf lock; deliverMu
// serializes deliveries and is taken with no entity lock held.
type events struct {
	on        bool // an observer or a debug logger wants events
	observe   func(Event)
	mu        sync.Mutex
	waiting   []Event
	n         atomic.Int32
	deliverMu sync.Mutex
}

func (ev *events) push(x Event) {
	ev.mu.Lock()
	ev.waiting = append(ev.waiting, x)
	ev.n.Add(1)
	ev.mu.Unlock()
}

// emitLocked records an event of message m at instant at.
func (e *Entity) emitLocked(kind EventKind, m *store.Message, q store.Queue, at int64, reason string) {
	if !e.b.events.on {
		return
	}
	e.b.events.push(Event{Kind: kind, At: at, Entity: e.path, Queue: q, Seq: m.Key().Seq,
		MessageID: m.ID(), Deliveries: m.Deliveries, Reason: reason})
}

// emitKeyed is emitLocked for a message that is in no store: k is its key.
func (e *Entity) emitKeyed(kind EventKind, m *store.Message, k store.Key, q store.Queue, at int64, reason string) {
	if !e.b.events.on {
		return
	}
	e.b.events.push(Event{Kind: kind, At: at, Entity: e.path, Queue: q, Seq: k.Seq,
		MessageID: m.ID(), Deliveries: m.Deliveries, Reason: reason})
}

// emitEntity records the creation or deletion of e at instant at.
func (e *Entity) emitEntity(kind EventKind, at int64) {
	if e.b.events.on {
		e.b.events.push(Event{Kind: kind, At: at, Entity: e.path})
	}
}

// deliverEvents hands the waiting events to the observer and the logger, in
// order. A call that emitted events returns only after they are delivered:
// it waits for a concurrent delivery that took them.
func (b *Broker) deliverEvents() {
	ev := &b.events
	if ev.n.Load() == 0 {
		return
	}
	ev.deliverMu.Lock()
	defer ev.deliverMu.Unlock()
	for ev.n.Load() > 0 {
		ev.mu.Lock()
		batch := ev.waiting
		ev.waiting = nil
		ev.n.Store(0)
		ev.mu.Unlock()
		for _, x := range batch {
			b.logEvent(x)
			if ev.observe != nil {
				ev.observe(x)
			}
		}
	}
}

func (b *Broker) logEvent(x Event) {
	if !b.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	attrs := []any{"kind", x.Kind, "entity", x.Entity, "at", b.Time(x.At)}
	if x.Seq != 0 {
		attrs = append(attrs, "seq", x.Seq, "messageID", x.MessageID, "deliveries", x.Deliveries)
	}
	if x.Reason != "" {
		attrs = append(attrs, "reason", x.Reason)
	}
	b.log.Debug("minibus: event", attrs...)
}

func (k EventKind) String() string {
	names := [...]string{"Sent", "Scheduled", "Activated", "Delivered", "Completed", "Abandoned", "Deferred",
		"DeadLettered", "Expired", "LockLost", "Forwarded", "EntityCreated", "EntityDeleted", "Canceled", "Removed"}
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("EventKind(%d)", k)
}

// Operation is a call a fault injector can fail; its values are those of
// the public Operation.
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
)

// inject asks every fault injector, in order, whether op on e fails: all
// are asked, and the first error wins. A panicking injector fails the call
// too, with an error that wraps ErrInvalidArgument: the namespace was given
// a bad injector.
func (b *Broker) inject(op Operation, e *Entity) error {
	var first error
	for _, f := range b.faults {
		if err := askFault(f, op, e); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// askFault asks f whether op on e fails, turning a panic into an error.
func askFault(f func(Operation, string) error, op Operation, e *Entity) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errs.Errorf(errs.ErrInvalidArgument, e.describe(), "fault injector panicked: %v", r)
		}
	}()
	return f(op, e.path)
}
