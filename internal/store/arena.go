package store

// arena holds the messages of one store and gives each a slot number, so
// that the indexes refer to messages by slot rather than by pointer. Index
// items without pointers are what makes the btrees cheap under a busy
// garbage collector: moving items within a node costs no write barriers, and
// the collector never scans the nodes.
//
// Slot 0 is never used: a Message with slot 0 is in no arena.
type arena struct {
	msgs []*Message // by slot; msgs[0] is always nil
	free []uint32
}

func newArena() arena { return arena{msgs: make([]*Message, 1, 64)} }

// put gives m a slot.
func (a *arena) put(m *Message) {
	if n := len(a.free); n > 0 {
		m.slot = a.free[n-1]
		a.free = a.free[:n-1]
		a.msgs[m.slot] = m
		return
	}
	m.slot = uint32(len(a.msgs))
	a.msgs = append(a.msgs, m)
}

// release gives m's slot back; m must be in no index any more.
func (a *arena) release(m *Message) {
	a.msgs[m.slot] = nil
	a.free = append(a.free, m.slot)
	m.slot = 0
}

// at returns the message in slot s, which must be in use.
func (a *arena) at(s uint32) *Message { return a.msgs[s] }

// lookup returns the message in slot s, or nil when s is not in use: s may
// come from outside (a lock token).
func (a *arena) lookup(s uint32) *Message {
	if s == 0 || int(s) >= len(a.msgs) {
		return nil
	}
	return a.msgs[s]
}
