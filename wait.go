package minibus

// waiter is one blocked receive. Its channel has room for one wake-up, so
// waking never blocks, and a waiter is woken at most once per wait (STYLE.md
// practice 7: no blocking channel operation under a broker lock).
type waiter struct {
	ch chan struct{}
}

func newWaiter() *waiter { return &waiter{ch: make(chan struct{}, 1)} }

// waitList is a FIFO of blocked receives on one sub-queue, guarded by the
// entity's mutex.
type waitList struct {
	ws []*waiter
}

func (l *waitList) add(w *waiter) { l.ws = append(l.ws, w) }

// remove takes w out of the list and reports whether it was still there (not
// yet woken).
func (l *waitList) remove(w *waiter) bool {
	for i, x := range l.ws {
		if x == w {
			copy(l.ws[i:], l.ws[i+1:])
			l.ws[len(l.ws)-1] = nil
			l.ws = l.ws[:len(l.ws)-1]
			return true
		}
	}
	return false
}

// wake wakes up to n waiters, oldest first: n messages became available.
func (l *waitList) wake(n int) {
	for n > 0 && len(l.ws) > 0 {
		w := l.ws[0]
		copy(l.ws, l.ws[1:])
		l.ws[len(l.ws)-1] = nil
		l.ws = l.ws[:len(l.ws)-1]
		select {
		case w.ch <- struct{}{}:
		default:
		}
		n--
	}
}

// wakeAll wakes every waiter: the entity was deleted or changed status.
func (l *waitList) wakeAll() { l.wake(len(l.ws)) }
