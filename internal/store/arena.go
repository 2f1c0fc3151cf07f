package store

// Arena holds the messages of one entity and gives each a slot number, so
// that the indexes refer to messages by slot rather than by pointer. Index
// items without pointers are what makes the btrees cheap under a busy
// garbage collector: moving items within a node costs no write barriers, and
// the collector never scans the nodes.
//
// Slot 0 is never used: a Message with Slot 0 is in no arena. An Arena is
// not safe for concurrent use; its entity's mutex guards it.
type Arena struct {
	msgs []*Message // by slot; msgs[0] is always nil
	free []uint32
}

// NewArena returns an empty arena.
func NewArena() *Arena { return &Arena{msgs: make([]*Message, 1, 64)} }

// Put gives m a slot, unless it has one.
func (a *Arena) Put(m *Message) {
	if m.Slot != 0 {
		return
	}
	if n := len(a.free); n > 0 {
		m.Slot = a.free[n-1]
		a.free = a.free[:n-1]
		a.msgs[m.Slot] = m
		return
	}
	m.Slot = uint32(len(a.msgs))
	a.msgs = append(a.msgs, m)
}

// Free gives m's slot back; m must be in no index any more.
func (a *Arena) Free(m *Message) {
	if m.Slot == 0 {
		return
	}
	a.msgs[m.Slot] = nil
	a.free = append(a.free, m.Slot)
	m.Slot = 0
}

// At returns the message in slot s, which must be in use.
func (a *Arena) At(s uint32) *Message { return a.msgs[s] }

// Lookup returns the message in slot s, or nil when s is not in use: s may
// come from outside (a lock token).
func (a *Arena) Lookup(s uint32) *Message {
	if s == 0 || int(s) >= len(a.msgs) {
		return nil
	}
	return a.msgs[s]
}

// Len returns the number of messages in the arena.
func (a *Arena) Len() int { return len(a.msgs) - 1 - len(a.free) }
