package engine

import (
	"context"
	"slices"
	"time"
)

func newWaiter(owner *Receiver) *waiter { return &waiter{ch: make(chan struct{}, 1), owner: owner} }

func (l *waitList) add(w *waiter) { l.ws = append(l.ws, w) }

// remove takes w out of the list and reports whether it was still there (not
// yet woken).
func (l *waitList) remove(w *waiter) bool {
	i := slices.Index(l.ws, w)
	if i < 0 {
		return false
	}
	l.ws = slices.Delete(l.ws, i, i+1)
	return true
}

// wake wakes up to n waiters, oldest first: n messages became available.
func (l *waitList) wake(n int) {
	for n > 0 && len(l.ws) > 0 {
		w := l.ws[0]
		l.ws = slices.Delete(l.ws, 0, 1)
		select {
		case w.ch <- struct{}{}:
		default:
		}
		n--
	}
}

// wakeAll wakes every waiter: the entity was deleted or changed status, or
// the broker closed.
func (l *waitList) wakeAll() { l.wake(len(l.ws)) }

// wakeOwned wakes the waiters of owner, which closed.
func (l *waitList) wakeOwned(owner *Receiver) {
	for i := 0; i < len(l.ws); {
		if w := l.ws[i]; w.owner == owner {
			l.ws = slices.Delete(l.ws, i, i+1)
			select {
			case w.ch <- struct{}{}:
			default:
			}
			continue
		}
		i++
	}
}

// wait blocks until w is woken (by a message, a change of the entity, or a
// close of the receiver or the broker: the caller then looks again), a
// deadline of e is due (the caller then catches up), timeout fires (the
// caller looks again and finds its own deadline passed) or ctx ends. woken
// reports that the waiter was taken off its list by a wake-up; when false,
// the caller must take it off.
func (b *Broker) wait(ctx context.Context, e *Entity, w *waiter, timeout <-chan time.Time) (woken bool, err error) {
	due := b.watch(e)
	defer b.unwatch(e)
	if due {
		return false, nil
	}
	select {
	case <-w.ch:
		return true, nil
	case <-timeout:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// waitOn waits on w, which the caller added to list under e.mu and then
// released e.mu: until a wake-up (the caller then looks again: nil), a due
// deadline of e (nil too) or the end of ctx. When w was not woken it is
// taken off list; a wake-up that raced with that is passed on.
func (e *Entity) waitOn(ctx context.Context, list *waitList, w *waiter, timeout <-chan time.Time) error {
	woken, err := e.b.wait(ctx, e, w, timeout)
	if !woken {
		e.mu.Lock()
		if !list.remove(w) {
			<-w.ch
			list.wake(1)
		}
		e.mu.Unlock()
	}
	return err
}
