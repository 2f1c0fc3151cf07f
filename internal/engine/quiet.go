package engine

import (
	"context"

	"github.com/minibus-go/minibus/internal/store"
)

// Quiescence: WaitQuiet (the root's WaitIdle, SEMANTICS P) waits until all
// the work registered on the broker is quiet, with nothing to do now. Quiet
// is that word alone here: "idle" is the idleness an entity is deleted for
// (AutoDeleteOnIdle, SEMANTICS A).

// AddWork registers x until RemoveWork.
func (b *Broker) AddWork(x Work) {
	w := &b.quiet
	w.mu.Lock()
	if w.works == nil {
		w.works = make(map[Work]struct{})
	}
	w.works[x] = struct{}{}
	w.mu.Unlock()
}

// RemoveWork ends AddWork and tells WaitQuiet.
func (b *Broker) RemoveWork(x Work) {
	w := &b.quiet
	w.mu.Lock()
	delete(w.works, x)
	w.wakeLocked()
	w.mu.Unlock()
}

// WorkChanged tells WaitQuiet that some work may have become quiet.
func (b *Broker) WorkChanged() {
	w := &b.quiet
	w.mu.Lock()
	w.wakeLocked()
	w.mu.Unlock()
}

func (w *quiescence) wakeLocked() {
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
}

// WaitQuiet returns once, after catching up to the clock, all the work
// registered is quiet; ctx.Err() if ctx ends first; ErrClosed when the
// broker is closed.
func (b *Broker) WaitQuiet(ctx context.Context) error {
	w := &b.quiet
	for {
		w.mu.Lock()
		if w.changed == nil {
			w.changed = make(chan struct{})
		}
		changed := w.changed
		works := make([]Work, 0, len(w.works))
		for x := range w.works {
			works = append(works, x)
		}
		w.mu.Unlock()
		if b.life.closed() {
			return errClosed
		}
		b.CatchUp()
		busy := false
		for _, x := range works {
			if !x.Quiet() {
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

// blockLocked registers a call of r (nil: an AcceptNextSession of e) that
// is about to wait for the first time. e.mu is held.
func (e *Entity) blockLocked(r *Receiver) *blocked {
	x := &blocked{e: e, r: r}
	e.b.AddWork(x)
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
func (x *blocked) Quiet() bool {
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
	e.b.RemoveWork(x)
}
