package engine

import (
	"context"
	"sync"
)

// Idler is work that runs on the broker, a processor: WaitIdle waits until
// every Idler registered is idle.
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
	w.mu.Unlock()
	b.Changed()
}

// Changed tells WaitIdle that an idler may have become idle.
func (b *Broker) Changed() {
	w := &b.idle
	w.mu.Lock()
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
	w.mu.Unlock()
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
