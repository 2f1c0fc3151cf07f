// Package store holds the messages of minibus entities in btree indexes.
//
// A [Stream] is one ordered stream of messages: the main queue or a
// dead-letter queue of an entity, or one session of it. It indexes its
// messages by [Key] in two btrees, one for the available messages (what a
// receive takes, lowest key first) and one for everything else (locked,
// deferred, scheduled), so that a receive never walks past held messages and
// a peek merges two ordered walks.
//
// Streams are not safe for concurrent use: the entity that owns a stream
// guards it with its own mutex. The [Stream] interface is the seam for a
// durable store; [NewStream] returns the in-memory one.
package store

import "github.com/google/btree"

// Stream is one ordered stream of messages.
type Stream interface {
	// Add puts m into the stream in m.State. m.Key must not be in the stream.
	Add(m *Message)
	// Remove takes m out of the stream. It does nothing if m is not in it.
	Remove(m *Message)
	// SetState moves m, which must be in the stream, to state s.
	SetState(m *Message, s State)
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

type item struct {
	k Key
	m *Message
}

func lessItem(a, b item) bool { return a.k.Less(b.k) }

// memStream is the in-memory Stream.
type memStream struct {
	avail *btree.BTreeG[item] // State Available
	held  *btree.BTreeG[item] // every other state
	buf   []item              // Ascend's chunk, kept between calls
}

// NewStream returns an empty in-memory stream.
func NewStream() Stream {
	return &memStream{
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
	s.tree(m.State).ReplaceOrInsert(item{m.Key, m})
}

func (s *memStream) Remove(m *Message) {
	s.tree(m.State).Delete(item{k: m.Key})
}

func (s *memStream) SetState(m *Message, st State) {
	from, to := s.tree(m.State), s.tree(st)
	m.State = st
	if from != to {
		from.Delete(item{k: m.Key})
		to.ReplaceOrInsert(item{m.Key, m})
	}
}

func (s *memStream) First() *Message {
	it, ok := s.avail.Min()
	if !ok {
		return nil
	}
	return it.m
}

func (s *memStream) Take() *Message {
	it, ok := s.avail.DeleteMin()
	if !ok {
		return nil
	}
	return it.m
}

func (s *memStream) Get(k Key) *Message {
	if it, ok := s.held.Get(item{k: k}); ok {
		return it.m
	}
	if it, ok := s.avail.Get(item{k: k}); ok {
		return it.m
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
	defer clear(buf[:cap(buf)]) // drop the pointers it held
	next := from
	for {
		// Collect up to chunk held items from next.
		buf = buf[:0]
		s.held.AscendGreaterOrEqual(item{k: next}, func(it item) bool {
			buf = append(buf, it)
			return len(buf) < chunk
		})
		// Available items below the first held item... interleaved.
		var stop bool
		emit := func(it item) bool {
			if !fn(it.m) {
				stop = true
				return false
			}
			return true
		}
		if len(buf) == 0 {
			s.avail.AscendGreaterOrEqual(item{k: next}, emit)
			return
		}
		for _, h := range buf {
			s.avail.AscendRange(item{k: next}, h, emit)
			if stop || !emit(h) {
				return
			}
			next = Key{h.k.Seq, h.k.Copy + 1}
			if h.k.Copy == ^uint32(0) {
				next = Key{h.k.Seq + 1, 0}
			}
		}
		if len(buf) < chunk {
			s.avail.AscendGreaterOrEqual(item{k: next}, emit)
			return
		}
	}
}

func (s *memStream) Len() int       { return s.avail.Len() + s.held.Len() }
func (s *memStream) Available() int { return s.avail.Len() }
