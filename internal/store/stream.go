package store

import "github.com/google/btree"

// degree is the btree degree: nodes hold up to 2*degree-1 items.
const degree = 32

// item is a message's key and arena slot: 16 bytes, no pointer.
type item struct {
	seq  int64
	cp   uint32
	slot uint32
}

func itemOf(m *Message) item { return item{m.key.Seq, m.key.Copy, m.slot} }
func keyItem(k Key) item     { return item{seq: k.Seq, cp: k.Copy} }

func lessItem(a, b item) bool { return a.seq < b.seq || (a.seq == b.seq && a.cp < b.cp) }

// stream is one queue of a store. It indexes its messages by key twice: a
// fifo for the available messages (what a receive takes, lowest key first)
// and a btree for the deferred and scheduled ones, so that a receive never
// walks past them and a peek merges two ordered walks. Locked messages
// are in neither: they come and go on every receive and settlement, and the
// store keeps them in its list of locks. count holds the number of messages
// in each state, locked ones included.
type stream struct {
	avail   fifo                // State Available
	held    *btree.BTreeG[item] // Deferred, Scheduled and Delayed
	count   [NumStates]int64
	delayed int // messages in state Delayed in the trees
}

func newStream() stream {
	return stream{avail: newFIFO(), held: btree.NewG(degree, lessItem)}
}

// index puts m, in state Available, Deferred, Scheduled or Delayed, into
// its tree. A session's stream counts its delayed messages.
func (s *stream) index(m *Message) {
	switch m.state {
	case Available:
		s.avail.ReplaceOrInsert(itemOf(m))
	case Delayed:
		s.delayed++
		fallthrough
	default:
		s.held.ReplaceOrInsert(itemOf(m))
	}
}

// unindex takes m out of its tree; a locked message is in none.
func (s *stream) unindex(m *Message) {
	switch m.state {
	case Locked:
	case Available:
		s.avail.Delete(keyItem(m.key))
	case Delayed:
		s.delayed--
		fallthrough
	default:
		s.held.Delete(keyItem(m.key))
	}
}

func (s *stream) len() int64 {
	var n int64
	for _, c := range s.count {
		n += c
	}
	return n
}

// ascend calls fn with the slot of every message in the trees with key >=
// from, in key order, until fn returns false. google/btree has no cursors,
// so it walks the held tree in chunks and interleaves the available messages
// below each.
func (s *stream) ascend(from Key, fn func(slot uint32) bool) {
	const chunk = 64
	var buf [chunk]item
	next := from
	for {
		held := buf[:0]
		s.held.AscendGreaterOrEqual(keyItem(next), func(it item) bool {
			held = append(held, it)
			return len(held) < chunk
		})
		stop := false
		emit := func(it item) bool {
			stop = !fn(it.slot)
			return !stop
		}
		for _, h := range held {
			s.avail.AscendRange(keyItem(next), h, emit)
			if stop || !emit(h) {
				return
			}
			next = Key{h.seq, h.cp}.Next()
		}
		if len(held) < chunk {
			s.avail.AscendGreaterOrEqual(keyItem(next), emit)
			return
		}
	}
}
