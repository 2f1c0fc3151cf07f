package engine

// What the root's processors ask of the engine beyond receiving and
// settling: the count of what each receive takes (OnTake), the automatic
// renewal of locks (AutoRenew, StopRenewing), whether an entity has nothing
// for them (Quiet, for WaitQuiet) and a wait for a change (WaitChange).

import (
	"context"
	"time"

	"github.com/minibus-go/minibus/internal/store"
)

// OnTake makes the receiver call f, under the entity's lock, with the number
// of messages each receive takes: f must not block or call the broker.
func (r *Receiver) OnTake(f func(n int)) {
	r.e.mu.Lock()
	r.taken = f
	r.e.mu.Unlock()
}

// AutoRenew makes the receiver's locks renew themselves at their end, on
// the namespace clock, until d after each delivery (for a session receiver,
// after the session was accepted): a processor's automatic lock renewal.
func (r *Receiver) AutoRenew(d time.Duration) {
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	r.renewFor = int64(d)
	if s := r.sess; s != nil && s.holder == r {
		s.renewUntil = after(s.acceptedAt, int64(d))
		e.st.LockedIn(s.id, func(m *store.Message) { m.RenewUntil = s.renewUntil })
	}
}

// StopRenewing ends the automatic renewal of the locks of tokens, which
// then end at their LockedUntil; with none, of the receiver's session and
// its messages.
func (r *Receiver) StopRenewing(tokens ...[16]byte) {
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range tokens {
		if m := e.st.ByToken(t); m != nil {
			m.RenewUntil = 0
		}
	}
	if s := r.sess; len(tokens) == 0 && s != nil && s.holder == r {
		s.renewUntil = 0
		e.st.LockedIn(s.id, func(m *store.Message) { m.RenewUntil = 0 })
	}
}

// Quiet reports whether, at one instant under e's lock, busy() is false and
// nothing waits to be taken from queue q: no message available and, for the
// main queue of a session entity, no session to accept and no message
// available in a session of held(). Reading both under the lock is what
// makes the answer true of one instant: a receive that takes a message tells
// busy's count under the same lock (OnTake). busy and held run under e's
// lock: they must not block or call the broker. A deleted entity has
// nothing to take.
func (e *Entity) Quiet(q store.Queue, busy func() bool, held func() []*Receiver) bool {
	c := e.call(noFault)
	c.end = endLeave
	defer c.exit(nil)
	if _, err := c.enter(noContext); err != nil {
		e.mu.Lock() // gone or closed: only busy counts
		defer e.mu.Unlock()
		return !busy()
	}
	if busy() {
		return false
	}
	if q != store.Main || e.sessions == nil {
		return e.st.Available(q) == 0
	}
	if _, ok := e.st.NextSession(); ok {
		return false
	}
	if held != nil {
		for _, r := range held() {
			if r.available() > 0 {
				return false
			}
		}
	}
	return true
}

// WaitChange blocks until something happens on queue q of e that may let a
// receive (or, on the main queue of a session entity, an accept) that
// failed succeed when tried again: a message becomes available there, e
// changes status or is deleted, the broker closes; or until d passes on the
// namespace clock, or ctx ends (ctx.Err()). It catches up first, so that a
// due deadline does not end the wait at once. A wake-up it takes is passed
// on, so that a receive blocked on q does not miss it.
func (e *Entity) WaitChange(ctx context.Context, q store.Queue, d time.Duration) error {
	c := e.call(noFault)
	c.end = endObserved
	defer c.exit(nil)
	if _, err := c.enter(noContext); err != nil {
		return nil // gone or closed: the retry says so
	}
	list := &e.waiters[q]
	w := newWaiter(nil)
	list.add(w)
	c.leave()
	t := e.b.clock.Timer(d)
	defer t.Stop()
	woken, err := e.b.wait(ctx, e, w, t.C)
	e.mu.Lock()
	if woken || !list.remove(w) {
		if !woken {
			<-w.ch
		}
		list.wake(1)
	}
	e.mu.Unlock()
	return err
}
