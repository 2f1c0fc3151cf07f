package store

import (
	"sync"
	"sync/atomic"
)

// Messages and their body buffers are recycled: a broker that moves a
// million messages a second would otherwise spend much of its time
// allocating, zeroing and collecting 1 KiB bodies, and every new body would
// be cold memory.
//
// The rule that makes it safe: a Message is recycled only once nothing can
// reach it. Its entity has let go of it (it is in no arena and no index),
// and no receive or peek is still copying from it: those pin the message
// under the entity's lock and unpin it when their copy is done. A body that
// a topic's copies share is never reused; their Message structs are.

// maxPooledBody is the largest body buffer kept for reuse.
const maxPooledBody = 64 << 10

var pool = sync.Pool{New: func() any { return new(Message) }}

// NewMessage returns a zero Message, possibly with spare Body capacity
// (Body has length 0).
func NewMessage() *Message { return pool.Get().(*Message) }

// Recycle gives m back for reuse if nothing can reach it: it must have left
// its entity and no copy may be pinning it. Its body's room is kept only
// when the body is its own. It reports whether m was recycled.
func Recycle(m *Message) bool {
	if m.Slot != 0 || atomic.LoadInt32(&m.pins) != 0 {
		return false
	}
	body := m.Body[:0]
	if m.SharedBody || cap(body) > maxPooledBody {
		body = nil
	}
	*m = Message{Body: body}
	pool.Put(m)
	return true
}

// Pin marks m as being copied from outside its entity's lock, so that it is
// not recycled meanwhile. Call it under the entity's lock.
func (m *Message) Pin() { atomic.AddInt32(&m.pins, 1) }

// Unpin ends a Pin. It may be called without the entity's lock.
func (m *Message) Unpin() { atomic.AddInt32(&m.pins, -1) }

// Copy returns a new Message that is a copy of m sharing m's body and
// properties, for a topic's subscription: in no arena, unpinned, and, like
// m from now on, marked SharedBody so that the body is never reused.
func (m *Message) Copy() *Message {
	m.SharedBody = true
	c := NewMessage()
	*c = *m
	c.Slot = 0
	c.pins = 0
	return c
}
