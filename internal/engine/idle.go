package engine

import (
	"context"
	"sync"

	"github.com/minibus-go/minibus/internal/store"
)

// Idler is work on the broker that WaitIdle waits for: a running processor,
// or a blocked receive (blocked). WaitIdle waits until every Idler
// registered is idle.
type Idler interface {
	// Idle reports whether the work has nothing to do now: nothing running,
	// nothing available to it. It is called with no broker lock held and
	// may take entity locks.
	Idle() bool
}

// idleWatch holds the registered idlers, and a broadcast of their changes
// for WaitIdle.
type idleWatch struct {
	mu      sync.Mutex
	idlers  map[Idler]struct{}
	changed chan struct{} // closed at the next change; nil when nobody waits
}

// AddIdler registers x until RemoveIdler.
func (b *Broker) AddIdler(x Idler) {
	w := &b.idle
	w.mu.Lock()
	if w.idlers == nil {
		w.idlers = make(map[Idler]struct{})
	}
	w.idlers[x] = struct{}{}
	w.mu.Unlock()
}

// RemoveIdler ends AddIdler and tells WaitIdle.
func (b *Broker) RemoveIdler(x Idler) {
	w := &b.idle
	w.mu.Lock()
	delete(w.idlers, x)
	w.wakeLocked()
	w.mu.Unlock()
}

// Changed tells WaitIdle that an idler may have become idle.
func (b *Broker) Changed() {
	w := &b.idle
	w.mu.Lock()
	w.wakeLocked()
	w.mu.Unlock()
}

func (w *idleWatch) wakeLocked() {
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
}

// WaitIdle returns once, after catching up to the clock, every registered
// idler is idle; ctx.Err() if ctx ends first; ErrClosed when the broker is
// closed.
func (b *Broker) WaitIdle(ctx context.Context) error {
	w := &b.idle
	for {
		w.mu.Lock()
		if w.changed == nil {
			w.changed = make(chan struct{})
		}
		changed := w.changed
		idlers := make([]Idler, 0, len(w.idlers))
		for x := range w.idlers {
			idlers = append(idlers, x)
		}
		w.mu.Unlock()
		if b.life.closed() {
			return errClosed
		}
		b.CatchUp()
		busy := false
		for _, x := range idlers {
			if !x.Idle() {
				busy = true
				break
			}
		}
		if !busy {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// blocked is a Receive, or an AcceptNextSession (r nil), that has waited,
// as WaitIdle sees it (SEMANTICS P2, P3): registered under the entity's
// lock before the call first waits, removed when the call returns. It is
// not idle while what the call waits for is there to take (the call was
// woken and is on its way to take it), nor from the instant it took until
// it returns; what it returned is its caller's, and not waited for.
type blocked struct {
	e *Entity
	r *Receiver // the receive's receiver; nil for an AcceptNextSession
	// took is set, under e.mu, when the call takes messages or a session.
	took bool
}

// blockLocked registers a call of r (nil: an AcceptNextSession of e) that
// is about to wait for the first time. e.mu is held.
func (e *Entity) blockLocked(r *Receiver) *blocked {
	x := &blocked{e: e, r: r}
	e.b.AddIdler(x)
	return x
}

// tookLocked records that the call took what it waited for. e.mu is held;
// x may be nil (the call never waited).
func (x *blocked) tookLocked() {
	if x != nil {
		x.took = true
	}
}

// Idle reports whether nothing the call could take is there: no message
// for a receive (of its queue, or of its session), no session to accept.
func (x *blocked) Idle() bool {
	e := x.e
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case x.took:
		return false
	case e.deleted.Load() || e.b.life.closed():
		return true
	case x.r == nil:
		_, ok := e.st.NextSession()
		return !ok
	}
	return x.r.available() == 0
}

// done ends x when its call returns, in the call's goroutine, after the
// call's events are observed; x may be nil. A call that took nothing may
// have been woken for a message (or session) it leaves behind, as when its
// ctx ended or its receiver closed just after the wake-up: the wake-up is
// passed on, so that no other call stays blocked while something it could
// take is there (SEMANTICS L8, SS3).
func (x *blocked) done() {
	if x == nil {
		return
	}
	e := x.e
	if !x.took && !e.b.life.closed() {
		e.mu.Lock()
		if !e.deleted.Load() {
			if x.r == nil {
				if _, ok := e.st.NextSession(); ok {
					e.waiters[store.Main].wake(1)
				}
			} else if x.r.available() > 0 {
				x.r.waitList().wake(1)
			}
		}
		e.mu.Unlock()
	}
	e.b.RemoveIdler(x)
}
