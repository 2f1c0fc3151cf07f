package store

// lockList holds a store's locked messages, linked through their arena
// slots, in the order their locks end: by (lockedUntil, key), as the
// deadline index orders other deadlines (SEMANTICS T3). It is a list rather
// than a btree because locks come and go on every receive and settlement:
// with one LockDuration and a clock that does not go back, a new lock ends
// last, so taking and releasing a lock costs O(1). A lock that ends earlier
// than the last one (after an update shortened LockDuration, or when a test
// set the clock back) walks back to its place.
type lockList struct {
	head, tail uint32 // arena slots; 0: none
}

// lockBefore reports whether a's lock ends before b's.
func lockBefore(a, b *Message) bool {
	return a.lockedUntil < b.lockedUntil || (a.lockedUntil == b.lockedUntil && a.key.Less(b.key))
}

// first returns the locked message whose lock ends first, or nil.
func (l *lockList) first(a *arena) *Message {
	if l.head == 0 {
		return nil
	}
	return a.at(l.head)
}

// next returns the locked message after m, or nil.
func (l *lockList) next(a *arena, m *Message) *Message {
	if m.lockNext == 0 {
		return nil
	}
	return a.at(m.lockNext)
}

// insert puts m, which has a slot and a lockedUntil, in its place.
func (l *lockList) insert(a *arena, m *Message) {
	after := l.tail // the lock m goes after; 0: m goes first
	for after != 0 && lockBefore(m, a.at(after)) {
		after = a.at(after).lockPrev
	}
	m.lockPrev = after
	if after == 0 {
		m.lockNext = l.head
		l.head = m.slot
	} else {
		prev := a.at(after)
		m.lockNext = prev.lockNext
		prev.lockNext = m.slot
	}
	if m.lockNext == 0 {
		l.tail = m.slot
	} else {
		a.at(m.lockNext).lockPrev = m.slot
	}
}

// remove takes m out of the list.
func (l *lockList) remove(a *arena, m *Message) {
	if m.lockPrev == 0 {
		l.head = m.lockNext
	} else {
		a.at(m.lockPrev).lockNext = m.lockNext
	}
	if m.lockNext == 0 {
		l.tail = m.lockPrev
	} else {
		a.at(m.lockNext).lockPrev = m.lockPrev
	}
	m.lockPrev, m.lockNext = 0, 0
}
