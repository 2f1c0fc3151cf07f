package minibus

import "github.com/minibus-go/minibus/internal/store"

// lockList holds an entity's locked messages, linked through their arena
// slots, in the order their locks end: by (LockedUntil, key), as the
// deadline index orders other deadlines (SEMANTICS T3). It is the deadline
// index of locks, and it is a list rather than a btree because locks come
// and go on every receive and settlement: with one LockDuration and a clock
// that does not go back, a new lock ends last, so taking and releasing a
// lock costs O(1). A lock that ends earlier than the last one (after an
// update shortened LockDuration, or when a test set the clock back) walks
// back to its place. Guarded by the entity's mutex.
type lockList struct {
	head, tail uint32 // arena slots; 0: none
}

// lockBefore reports whether a's lock ends before b's.
func lockBefore(a, b *store.Message) bool {
	return a.LockedUntil < b.LockedUntil || (a.LockedUntil == b.LockedUntil && a.Key.Less(b.Key))
}

// first returns the locked message whose lock ends first, or nil.
func (l *lockList) first(a *store.Arena) *store.Message {
	if l.head == 0 {
		return nil
	}
	return a.At(l.head)
}

// next returns the locked message after m, or nil.
func (l *lockList) next(a *store.Arena, m *store.Message) *store.Message {
	if m.LockNext == 0 {
		return nil
	}
	return a.At(m.LockNext)
}

// insert puts m, which has a slot and a LockedUntil, in its place.
func (l *lockList) insert(a *store.Arena, m *store.Message) {
	after := l.tail // the lock m goes after; 0: m goes first
	for after != 0 && lockBefore(m, a.At(after)) {
		after = a.At(after).LockPrev
	}
	m.LockPrev = after
	if after == 0 {
		m.LockNext = l.head
		l.head = m.Slot
	} else {
		prev := a.At(after)
		m.LockNext = prev.LockNext
		prev.LockNext = m.Slot
	}
	if m.LockNext == 0 {
		l.tail = m.Slot
	} else {
		a.At(m.LockNext).LockPrev = m.Slot
	}
}

// remove takes m out of the list.
func (l *lockList) remove(a *store.Arena, m *store.Message) {
	if m.LockPrev == 0 {
		l.head = m.LockNext
	} else {
		a.At(m.LockPrev).LockNext = m.LockNext
	}
	if m.LockNext == 0 {
		l.tail = m.LockPrev
	} else {
		a.At(m.LockNext).LockPrev = m.LockPrev
	}
	m.LockPrev, m.LockNext = 0, 0
}
