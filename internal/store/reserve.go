package store

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// The reserve keeps recycled Messages with body room past the collections
// that empty a sync.Pool (pool loses what it holds within two of them). A
// broker whose backlog swings, growing while sends outpace receives and
// shrinking after, recycles a swing's worth of bodies while it shrinks; with
// pool alone most of them are gone by the time the next swing's sends want
// them, and each is allocated again. The reserve holds up to reserveBytes of
// room; what sits in it unused through reserveIdle collections is let go.
// It counts collections, not time: the broker reads no clock of its own
// (SEMANTICS T1), and a process that collects is one that wants memory.
//
// Records go to the reserve before pool and come from pool before the
// reserve, so the reserve fills first and is drawn on when pool runs dry.

// reserveBytes bounds the body room the reserve holds.
const reserveBytes = 8 << 20

// reserveIdle is how many collections a message sits through in the
// reserve unused before the last of them lets it go.
const reserveIdle = 16

var reserve struct {
	mu    sync.Mutex
	ms    []*Message // a stack: the bottom ones have waited longest
	bytes int        // the room of ms
	// low is the fewest messages ms has held since the window began,
	// collections ago: the bottom low have not been used since.
	low         int
	collections int
	armed       bool // a collection will call afterCollection

	n    atomic.Int32 // len(ms), read without mu
	full atomic.Bool  // a keep found no space; cleared when one is taken
}

// keep recycles m, which has body room: into the reserve while it has
// space, else into pool.
func keep(m *Message) {
	if !reserve.full.Load() {
		r := &reserve
		r.mu.Lock()
		if c := cap(m.Body); r.bytes+c <= reserveBytes {
			r.ms = append(r.ms, m)
			r.bytes += c
			r.n.Store(int32(len(r.ms)))
			arm := !r.armed
			r.armed = true
			r.mu.Unlock()
			if arm {
				armCollection()
			}
			return
		}
		r.full.Store(true)
		r.mu.Unlock()
	}
	pool.Put(m)
}

// withRoom returns a recycled Message with body room, from pool, then from
// the reserve, or nil.
func withRoom() *Message {
	if m, ok := pool.Get().(*Message); ok {
		return m
	}
	return fromReserve()
}

// fromReserve returns the message kept last in the reserve, or nil.
func fromReserve() *Message {
	if reserve.n.Load() == 0 {
		return nil
	}
	r := &reserve
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.ms) - 1
	if n < 0 {
		return nil
	}
	m := r.ms[n]
	r.ms[n] = nil
	r.ms = r.ms[:n]
	r.bytes -= cap(m.Body)
	r.low = min(r.low, n)
	r.n.Store(int32(n))
	r.full.Store(false)
	return m
}

// collectionTick is a value whose cleanup runs after the collection that
// finds it unreachable; its pointer and size keep the allocator from
// batching it with others, which could put the cleanup off indefinitely.
type collectionTick struct {
	_ *int
	_ [16]byte
}

// armCollection has afterCollection called after the next collection.
func armCollection() {
	runtime.AddCleanup(new(collectionTick), func(struct{}) { afterCollection() }, struct{}{})
}

// afterCollection counts a collection, lets go of what has sat unused in
// the reserve through reserveIdle of them, and asks to be called again
// after the next collection while the reserve holds anything.
func afterCollection() {
	if trimReserve() {
		armCollection()
	}
}

// trimReserve counts a collection. Once the window has lasted reserveIdle
// of them, it lets go of the messages that sat in the reserve unused
// through it, and begins a new one; it reports whether the reserve still
// holds any. Those it lets go are left to the collector.
func trimReserve() (holds bool) {
	r := &reserve
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collections++
	switch {
	case r.collections == 1:
		r.low = len(r.ms) // the window begins
	case r.collections > reserveIdle:
		for _, m := range r.ms[:r.low] {
			r.bytes -= cap(m.Body)
		}
		rest := copy(r.ms, r.ms[r.low:])
		clear(r.ms[rest:])
		r.ms = r.ms[:rest]
		r.n.Store(int32(rest))
		r.full.Store(false)
		r.collections, r.low = 1, rest
	}
	if len(r.ms) == 0 {
		r.armed, r.collections = false, 0
	}
	return r.armed
}
