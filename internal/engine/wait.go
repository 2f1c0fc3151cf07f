package engine

import (
	"slices"
)

// Blocked receivers: each waits on a waiter in its entity's waitList (the
// types are with the entity's state, entity.go), and a change of the entity
// wakes as many as it can serve (SEMANTICS L8).

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
