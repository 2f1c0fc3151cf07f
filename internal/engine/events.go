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
//
// Transitions push events under their entity's lock, so each entity's events
// are in the order of its state; each event gets the next ticket. A call
// hands the waiting events to the observer itself once it holds no entity
// lock (deliverEvents), with no broker lock held while the observer runs:
// events of one entity go out one at a time, in order (the entity's lane is
// busy meanwhile), and events of different entities may go out at once from
// different goroutines. So an observer that waits for another goroutine's
// call does not hold up that call's events, unless they are of the entity
// whose event the observer is handling.
//
// A call returns once every event pushed before it ends has been handed
// over, and every event pushed since it began (its own among them) has been
// observed: another goroutine may have taken them, and the call waits until
// that delivery is over. mu is a leaf lock.
type events struct {
	on      bool // an observer or a debug logger wants events
	observe func(Event)
	// open counts the events pushed and not yet observed: 0 is the fast
	// path of deliverEvents. last is the ticket of the last event pushed;
	// tickets count from 1.
	open atomic.Int64
	last atomic.Uint64

	mu sync.Mutex
	// ended is signalled, on mu, when an observer call ends.
	ended sync.Cond
	// queue holds the events not yet handed over, from head, in ticket
	// order; an event handed over out of order (its lane was free, an
	// earlier one's was busy) leaves a hole. waiting counts the others.
	queue   []queued
	head    int
	waiting int
	// running are the tickets of the events being observed now.
	running []uint64
	// lanes are the entities' lanes by lower-case path, so that an entity
	// deleted and created again keeps its order; nil when events are not
	// wanted.
	lanes  map[string]*lane
	shared lane
}

// lane orders the events of one entity path: one at a time, in order.
type lane struct {
	busy bool // one of its events is being observed; guarded by events.mu
}

// queued is an event waiting to be handed over.
type queued struct {
	Event
	ticket uint64
	lane   *lane // nil: a hole, handed over already
}

func (ev *events) init(on bool, observe func(Event)) {
	ev.on, ev.observe = on, observe
	ev.ended.L = &ev.mu
	if on {
		ev.lanes = make(map[string]*lane)
	}
}

// laneOf returns the lane of the entity at path; nil when events are not
// wanted.
func (ev *events) laneOf(path string) *lane {
	if ev.lanes == nil {
		return nil
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	key := nameKey(path)
	l := ev.lanes[key]
	if l == nil {
		l = &lane{}
		ev.lanes[key] = l
	}
	return l
}

// mark returns the ticket of the last event pushed: a call that begins
// reads it, and waits at its end for the events after it to be observed.
func (ev *events) mark() uint64 { return ev.last.Load() }

func (ev *events) push(x Event, l *lane) {
	if l == nil {
		l = &ev.shared // an entity made before events were wanted
	}
	ev.mu.Lock()
	t := ev.last.Load() + 1
	ev.last.Store(t)
	ev.queue = append(ev.queue, queued{Event: x, ticket: t, lane: l})
	ev.waiting++
	ev.open.Add(1)
	ev.mu.Unlock()
}

// emitLocked records an event of message m at instant at.
func (e *Entity) emitLocked(kind EventKind, m *store.Message, q store.Queue, at int64, reason string) {
	if !e.b.events.on {
		return
	}
	e.b.events.push(Event{Kind: kind, At: at, Entity: e.path, Queue: q, Seq: m.Key().Seq,
		MessageID: m.ID(), Deliveries: m.Deliveries, Reason: reason}, e.lane)
}

// emitKeyed is emitLocked for a message that is in no store: k is its key.
func (e *Entity) emitKeyed(kind EventKind, m *store.Message, k store.Key, q store.Queue, at int64, reason string) {
	if !e.b.events.on {
		return
	}
	e.b.events.push(Event{Kind: kind, At: at, Entity: e.path, Queue: q, Seq: k.Seq,
		MessageID: m.ID(), Deliveries: m.Deliveries, Reason: reason}, e.lane)
}

// emitEntity records the creation or deletion of e at instant at.
func (e *Entity) emitEntity(kind EventKind, at int64) {
	if e.b.events.on {
		e.b.events.push(Event{Kind: kind, At: at, Entity: e.path}, e.lane)
	}
}

// deliverEvents hands the waiting events to the observer and the logger
// until every event pushed so far has been handed over and every one pushed
// after ticket since has been observed. It hands over what it can itself,
// in ticket order, and waits for the deliveries of other goroutines that
// it needs. With since = 0 it waits for every event so far.
func (b *Broker) deliverEvents(since uint64) {
	ev := &b.events
	if ev.open.Load() == 0 {
		return
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	until := ev.last.Load()
	for {
		if x, ok := ev.takeLocked(until); ok {
			b.handOverLocked(&x)
			continue
		}
		if ev.settledLocked(since, until) {
			return
		}
		ev.ended.Wait()
	}
}

// handOutEvents hands over the events pushed so far that it can without
// waiting: those of entities whose lane is free.
func (b *Broker) handOutEvents() {
	ev := &b.events
	if ev.open.Load() == 0 {
		return
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	until := ev.last.Load()
	for {
		x, ok := ev.takeLocked(until)
		if !ok {
			return
		}
		b.handOverLocked(&x)
	}
}

// handOverLocked gives x, taken, to the logger and the observer with ev.mu
// unlocked, then ends its delivery with ev.mu locked again, also when the
// observer panics.
func (b *Broker) handOverLocked(x *queued) {
	ev := &b.events
	ev.mu.Unlock()
	defer func() {
		ev.mu.Lock()
		ev.endLocked(x)
	}()
	b.logEvent(x.Event)
	if ev.observe != nil {
		ev.observe(x.Event)
	}
}

// takeLocked takes the first event up to ticket until whose lane is free:
// the earliest of its lane, as an earlier one would have been taken first.
func (ev *events) takeLocked(until uint64) (queued, bool) {
	for i := ev.head; i < len(ev.queue); i++ {
		x := &ev.queue[i]
		switch {
		case x.lane == nil:
			continue // a hole
		case x.ticket > until:
			return queued{}, false
		case x.lane.busy:
			continue
		}
		out := *x
		*x = queued{} // a hole; it holds no strings any more
		out.lane.busy = true
		ev.running = append(ev.running, out.ticket)
		ev.waiting--
		ev.compactLocked()
		return out, true
	}
	return queued{}, false
}

// compactLocked drops the holes at the head of the queue, and the others
// when they are most of it.
func (ev *events) compactLocked() {
	for ev.head < len(ev.queue) && ev.queue[ev.head].lane == nil {
		ev.head++
	}
	switch {
	case ev.head == len(ev.queue):
		ev.queue, ev.head = ev.queue[:0], 0
	case len(ev.queue)-ev.head > 2*ev.waiting+64:
		kept := ev.queue[:0]
		for _, x := range ev.queue[ev.head:] {
			if x.lane != nil {
				kept = append(kept, x)
			}
		}
		clear(ev.queue[len(kept):])
		ev.queue, ev.head = kept, 0
	}
}

// endLocked ends the delivery of x.
func (ev *events) endLocked(x *queued) {
	x.lane.busy = false
	for i, t := range ev.running {
		if t == x.ticket {
			last := len(ev.running) - 1
			ev.running[i] = ev.running[last]
			ev.running = ev.running[:last]
			break
		}
	}
	ev.open.Add(-1)
	ev.ended.Broadcast()
}

// settledLocked reports whether every event up to ticket until has been
// handed over and none after since is still being observed.
func (ev *events) settledLocked(since, until uint64) bool {
	for i := ev.head; i < len(ev.queue); i++ {
		if x := &ev.queue[i]; x.lane != nil {
			if x.ticket <= until {
				return false
			}
			break
		}
	}
	for _, t := range ev.running {
		if t > since && t <= until {
			return false
		}
	}
	return true
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
