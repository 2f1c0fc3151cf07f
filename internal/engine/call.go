package engine

import (
	"context"
	"runtime"

	"github.com/minibus-go/minibus/internal/errs"
)

// A call is the frame of one exported engine call, a value on its stack:
// every call that reads or changes the broker comes in through enter and
// goes out through exit, so that what a call does on its way in and on its
// way out is written once, here, in its order:
//
//	c := r.call(OpComplete)
//	defer c.exit(&err)
//	now, err := c.enter(ctx)
//
// enter: asks the fault injectors about op (once, at the first enter), and
// whether the entity requires sessions when the call needs it; checks the
// receiver (closed), ctx (nil is ErrInvalidArgument naming the entity, an
// ended one is ctx.Err()) and the broker (closed, or its journal failed);
// reads the clock and catches up (SEMANTICS T3); locks the entity, moves
// now up to the latest instant the entity acted at (Entity.instant),
// processes what the entity has due then, and checks that it still exists
// (ErrNotFound); then the receiver again (closed, its session lost, SS5)
// and the entity's status (V5). On error the call holds nothing.
//
// exit: unlocks the entity if the call still holds it, yielding after a
// receive or a settlement to a topic's publish parked on it (yield);
// delivers what the call forwarded and hands its events to the observer,
// outside every lock; and in a durable broker waits until every record
// appended so far is as durable as the journal promises, which turns a nil
// error into ErrStoreFailed when it is not. What exit does besides
// unlocking is the call's ending.
type call struct {
	b *Broker
	e *Entity   // the entity the call locks; nil for a namespace call
	r *Receiver // the receiver whose call it is; nil for others
	// since is the events' ticket when the call began (events.mark): exit
	// waits until the events after it are observed.
	since uint64
	// waited is a Receive's or an AcceptNextSession's registration for
	// WaitQuiet, once the call has waited; exit ends it.
	waited *blocked
	op     Operation // asked of the fault injectors, unless it is noFault
	need   need
	end    ending
	held   bool // e.mu is held
	yield  bool // exit yields to a parked publish (Entity.publishers)
}

// need is what a call requires of its entity beyond existing: a set.
type need uint8

const (
	// needSend: a status that takes sends (ErrEntityDisabled, V5).
	needSend need = 1 << iota
	// needReceive: a status that takes receives and peeks (V5).
	needReceive
	// needSessions: an entity that requires sessions (ErrInvalidArgument),
	// asked before anything else but the fault injectors.
	needSessions
)

// ending is what a call's exit does besides unlocking.
type ending uint8

const (
	// endDurable: forwards land, events are observed and the records are
	// durable. A call that changes or shows state.
	endDurable ending = iota
	// endObserved: forwards land and events are observed; no wait for the
	// journal. A call that returns no state (WaitChange, Receiver.Close,
	// CatchUp).
	endObserved
	// endLeave: only the leave (the mutex let go). A lookup, whose catch-up
	// leaves what it forwarded and its events to the next call that ends
	// otherwise.
	endLeave
)

// noFault is the op of a call the fault injectors are not asked about.
const noFault Operation = 0xff

// noContext is the context of a call that takes none.
var noContext = context.Background()

// call starts a namespace call.
func (b *Broker) call(end ending) call {
	return call{b: b, since: b.events.mark(), op: noFault, end: end}
}

// call starts a call on e that asks the fault injectors about op (noFault:
// none); it ends durable.
func (e *Entity) call(op Operation) call {
	return call{b: e.b, e: e, since: e.b.events.mark(), op: op}
}

// call starts a call of r, which needs a status that takes receives; it
// asks the fault injectors about op (noFault: none) and ends durable.
func (r *Receiver) call(op Operation) call {
	return call{b: r.e.b, e: r.e, r: r, since: r.e.b.events.mark(), op: op, need: needReceive}
}

// enter enters the call (see call) and returns the instant it acts at. On
// success the call holds its entity's lock, if it has an entity.
func (c *call) enter(ctx context.Context) (int64, error) {
	b, e, r := c.b, c.e, c.r
	if c.op != noFault {
		op := c.op
		c.op = noFault // a call that enters again (a Receive that waited) was asked once
		if err := b.inject(op, e); err != nil {
			return 0, err
		}
	}
	if c.need&needSessions != 0 && e.sessions == nil {
		return 0, e.errNoSessions()
	}
	if r != nil && r.Closed() {
		return 0, r.ErrClosed()
	}
	if ctx == nil {
		return 0, errs.Errorf(errs.ErrInvalidArgument, e.describe(), "nil context")
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if b.life.closed() {
		return 0, errClosed
	}
	if err := b.errFailed(); err != nil {
		return 0, err
	}
	now := b.now()
	if e == nil {
		return now, nil
	}
	e.mu.Lock()
	if b.life.closed() {
		e.mu.Unlock()
		return 0, errClosed
	}
	if now < e.instant { // its instants never go back (I4)
		now = e.instant
	}
	e.instant = now
	if now >= e.localNext {
		e.advanceLocked(now, false)
	}
	if e.deleted.Load() {
		e.mu.Unlock()
		return 0, e.errNotFound()
	}
	e.pruneDupsLocked(now)
	c.held = true
	if err := c.checkLocked(); err != nil {
		c.leave()
		return 0, err
	}
	return now, nil
}

// checkLocked checks, under the entity's lock, the receiver and what the
// call needs of the entity's status.
func (c *call) checkLocked() error {
	e, r := c.e, c.r
	switch {
	case r != nil && r.Closed():
		return r.ErrClosed()
	case r != nil && r.sessionLost():
		return r.errSessionLost()
	case c.need&needSend != 0 && !e.cfg.Status.canSend():
		return errs.Errorf(errs.ErrEntityDisabled, e.describe(), "status %v refuses sends", e.cfg.Status)
	case c.need&needReceive != 0 && !e.cfg.Status.canReceive():
		return errs.Errorf(errs.ErrEntityDisabled, e.describe(), "status %v refuses receives", e.cfg.Status)
	}
	return nil
}

// leave lets go of the entity's mutex before the call's exit (a receive
// about to wait), yielding to a parked publish if the call said so.
func (c *call) leave() {
	c.held = false
	e := c.e
	e.mu.Unlock()
	if c.yield && e.publishers.Load() > 0 {
		// Go readies the woken publish on this goroutine's P, where it
		// would wait until this goroutine blocks (a receive's copies out,
		// a batch of settlements later) while it holds the topic and the
		// subscriptions locked before e, and every subscription's
		// receivers wait for it (bench/PROFILE.md, "Waiting for a P").
		runtime.Gosched()
	}
}

// exit leaves the call (see call), and returns only once its records are
// durable (I9). err is the call's result, which a
// failed journal replaces when it is nil; nil for a call that returns no
// error, which waits for no journal.
func (c *call) exit(err *error) {
	if c.held {
		c.leave()
	}
	if c.end == endLeave {
		return
	}
	b := c.b
	b.flushForwards()
	b.deliverEvents(c.since)
	if c.end == endDurable && err != nil && *err == nil {
		*err = b.durable()
	}
	c.waited.done()
}

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
