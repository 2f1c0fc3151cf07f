// Package store holds the messages of minibus entities in btree indexes.
//
// A [Stream] is one ordered stream of messages: the main queue or a
// dead-letter queue of an entity, or one session of it. It indexes its
// messages by [Key] in two btrees, one for the available messages (what a
// receive takes, lowest key first) and one for the deferred and scheduled
// ones, so that a receive never walks past them and a peek merges two
// ordered walks. Locked messages are not in a Stream: they come and go on
// every receive and settlement, and the broker keeps them in a list of its
// own.
//
// The indexes hold a message's key and its slot in the entity's [Arena], no
// pointer. Streams are not safe for concurrent use: the entity that owns a
// stream guards it with its own mutex. The [Stream] interface is the seam
// for a durable store; [NewStream] returns the in-memory one.
package store

import "github.com/google/btree"

// Stream is one ordered stream of messages.
type Stream interface {
	// Add puts m into the stream in m.State, and into the stream's arena if
	// it is in none. m.Key must not be in the stream.
	Add(m *Message)
	// Remove takes m out of the stream (not out of the arena). It does
	// nothing if m is not in it.
	Remove(m *Message)
	// First returns the available message with the lowest key, or nil.
	First() *Message
	// Take removes the available message with the lowest key from the
	// stream and returns it, or returns nil. The caller may Add it back in
	// another state.
	Take() *Message
	// Get returns the message with key k in any state, or nil.
	Get(k Key) *Message
	// Ascend calls fn for every message with key >= from, in key order and
	// in any state, until fn returns false. fn must not change the stream.
	Ascend(from Key, fn func(*Message) bool)
	// Len returns the number of messages in the stream.
	Len() int
	// Available returns the number of available messages.
	Available() int
}

// degree is the btree degree: nodes hold up to 2*degree-1 items.
const degree = 32

// item is a message's key and arena slot: 16 bytes, no pointer.
type item struct {
	seq  int64
	cp   uint32
	slot uint32
}

func itemOf(m *Message) item { return item{m.Key.Seq, m.Key.Copy, m.Slot} }
func keyItem(k Key) item     { return item{seq: k.Seq, cp: k.Copy} }
func (it item) key() Key     { return Key{it.seq, it.cp} }

func lessItem(a, b item) bool { return a.seq < b.seq || (a.seq == b.seq && a.cp < b.cp) }

// memStream is the in-memory Stream.
type memStream struct {
	arena *Arena
	avail *btree.BTreeG[item] // State Available
	held  *btree.BTreeG[item] // every other state
	buf   []item              // Ascend's chunk, kept between calls
}

// NewStream returns an empty in-memory stream whose messages live in arena.
func NewStream(arena *Arena) Stream {
	return &memStream{
		arena: arena,
		avail: btree.NewG(degree, lessItem),
		held:  btree.NewG(degree, lessItem),
	}
}

func (s *memStream) tree(st State) *btree.BTreeG[item] {
	if st == Available {
		return s.avail
	}
	return s.held
}

func (s *memStream) Add(m *Message) {
	s.arena.Put(m)
	s.tree(m.State).ReplaceOrInsert(itemOf(m))
}

func (s *memStream) Remove(m *Message) {
	s.tree(m.State).Delete(keyItem(m.Key))
}

func (s *memStream) First() *Message {
	it, ok := s.avail.Min()
	if !ok {
		return nil
	}
	return s.arena.At(it.slot)
}

func (s *memStream) Take() *Message {
	it, ok := s.avail.DeleteMin()
	if !ok {
		return nil
	}
	return s.arena.At(it.slot)
}

func (s *memStream) Get(k Key) *Message {
	if it, ok := s.held.Get(keyItem(k)); ok {
		return s.arena.At(it.slot)
	}
	if it, ok := s.avail.Get(keyItem(k)); ok {
		return s.arena.At(it.slot)
	}
	return nil
}

// Ascend merges the two trees. google/btree has no cursors, so it walks the
// held tree in chunks and interleaves the available messages below each.
func (s *memStream) Ascend(from Key, fn func(*Message) bool) {
	const chunk = 64
	if s.buf == nil {
		s.buf = make([]item, 0, chunk)
	}
	buf := s.buf
	next := from
	for {
		// Collect up to chunk held items from next.
		buf = buf[:0]
		s.held.AscendGreaterOrEqual(keyItem(next), func(it item) bool {
			buf = append(buf, it)
			return len(buf) < chunk
		})
		// Available items below the first held item... interleaved.
		var stop bool
		emit := func(it item) bool {
			if !fn(s.arena.At(it.slot)) {
				stop = true
				return false
			}
			return true
		}
		if len(buf) == 0 {
			s.avail.AscendGreaterOrEqual(keyItem(next), emit)
			return
		}
		for _, h := range buf {
			s.avail.AscendRange(keyItem(next), h, emit)
			if stop || !emit(h) {
				return
			}
			next = Key{h.seq, h.cp + 1}
			if h.cp == ^uint32(0) {
				next = Key{h.seq + 1, 0}
			}
		}
		if len(buf) < chunk {
			s.avail.AscendGreaterOrEqual(keyItem(next), emit)
			return
		}
	}
}

func (s *memStream) Len() int       { return s.avail.Len() + s.held.Len() }
func (s *memStream) Available() int { return s.avail.Len() }
