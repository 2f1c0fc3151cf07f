package store

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sync/atomic"
)

// Quota is the byte budget of an entity (SEMANTICS V3): a queue's own, or a
// topic's, which its subscriptions' stores share. Every store adds what it
// holds to its quota, and its entity the bytes of its session states (SS9),
// so Used is always the sum of their Bytes and of those states. Safe for
// concurrent use.
type Quota struct {
	used  atomic.Int64
	limit atomic.Int64
}

// NewQuota returns a quota of limit bytes.
func NewQuota(limit int64) *Quota {
	q := new(Quota)
	q.limit.Store(limit)
	return q
}

// Used returns the bytes held by the stores of the quota.
func (q *Quota) Used() int64 { return q.used.Load() }

// Limit returns the quota's limit in bytes.
func (q *Quota) Limit() int64 { return q.limit.Load() }

// SetLimit changes the limit; what is held already stays.
func (q *Quota) SetLimit(n int64) { q.limit.Store(n) }

// Fits reports whether n more bytes stay within the limit now.
func (q *Quota) Fits(n int64) bool { return n <= q.limit.Load()-q.used.Load() }

// Add adds n bytes, or takes -n away: what stores tallied (Store.Tally).
func (q *Quota) Add(n int64) { q.used.Add(n) }

// TryAdd adds n bytes if they fit in the limit (n <= 0 always does),
// atomically, and reports whether it did.
func (q *Quota) TryAdd(n int64) bool { return q.grow(n) }

// grow adds n bytes if they fit, atomically, and reports whether it did.
func (q *Quota) grow(n int64) bool {
	for {
		used := q.used.Load()
		if n > 0 && n > q.limit.Load()-used {
			return false
		}
		if q.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// Store holds the messages of one entity in its three queues, with every
// pending deadline: expiries and activations in a deadline index, lock ends
// in a list of locks. Messages live in an arena, so that the indexes hold
// slots, not pointers, and a lock token carries its message's slot, so that
// settling finds the message without a map.
//
// The methods keep the indexes, the counts and the quota consistent with
// the messages; callers change a stored message's bookkeeping only through
// them. A Store is not safe for concurrent use: its entity's mutex guards
// it.
type Store struct {
	arena  arena
	mask   uint32 // xor-ed into the slot a lock token carries
	queues [NumQueues]stream
	// sessions partitions the main queue's available and deferred messages
	// by session (sessions.go); nil when the entity has no sessions.
	sessions  *sessions
	deadlines deadlines
	locks     lockList
	bytes     int64
	quota     *Quota
	// tally, when set, makes Put count in tallied the bytes it stores
	// instead of adding them to quota (Tally).
	tally   bool
	tallied int64
}

// New returns an empty store that counts what it holds against quota. With
// bySession set, the main queue's available and deferred messages are kept
// per session (see Hold and the other session methods).
func New(quota *Quota, bySession bool) *Store {
	s := &Store{arena: newArena(), mask: rand.Uint32(), deadlines: newDeadlines(), quota: quota}
	for i := range s.queues {
		s.queues[i] = newStream()
	}
	if bySession {
		s.sessions = newSessions()
	}
	return s
}

// home returns the stream whose trees hold m, available, deferred or
// scheduled: its session's, for a session's message of the main queue.
func (s *Store) home(m *Message) *stream {
	if s.sessions != nil && m.queue == Main && m.state != Scheduled {
		return &s.sessions.get(m.SessionID).trees
	}
	return &s.queues[m.queue]
}

// index puts m in its home's trees.
func (s *Store) index(m *Message) {
	s.home(m).index(m)
	s.sessions.changed(s, m)
}

// unindex takes m, not locked, out of its home's trees.
func (s *Store) unindex(m *Message) {
	s.home(m).unindex(m)
	s.sessions.changed(s, m)
}

// Put adds m, which is in no store, to queue q under key k, in state st
// (Available, Deferred or Scheduled), with a pending expiry or activation
// at due (Never: none). k must be new in q.
func (s *Store) Put(m *Message, k Key, q Queue, st State, due int64) {
	s.arena.put(m)
	m.key, m.queue, m.state = k, q, st
	m.size = m.SizeWith(m.Props)
	s.bytes += m.size
	if s.tally {
		s.tallied += m.size
	} else {
		s.quota.used.Add(m.size)
	}
	s.queues[q].count[st]++
	s.index(m)
	s.deadlines.set(m, due)
}

// Tally makes Put count the bytes it stores, for TakeTally, instead of
// adding each message's to the quota. A topic's subscriptions share its
// quota, and a publish puts a copy in each: it adds their bytes to the
// quota once, not once a copy, each addition being a write that the other
// cores' receives and settlements contend for.
func (s *Store) Tally() { s.tally = true }

// TakeTally ends a Tally and returns the bytes Put stored since, which the
// caller adds to the quota (Quota.Add) before it lets go of the store's
// lock, so that no one sees the quota without them.
func (s *Store) TakeTally() int64 {
	n := s.tallied
	s.tally, s.tallied = false, 0
	return n
}

// Move moves stored m to queue q in state st (Available or Deferred), with
// a pending deadline at due (Never: none), ending its lock if it has one. Its
// key stays; it must be new in q.
func (s *Store) Move(m *Message, q Queue, st State, due int64) {
	s.leave(m)
	m.queue, m.state = q, st
	s.queues[q].count[st]++
	s.index(m)
	s.deadlines.set(m, due)
}

// Rekey gives m, stored and not locked, the key k in its queue, in state st
// with a pending deadline at due: a scheduled message activating with a new
// sequence number (SEMANTICS S4).
func (s *Store) Rekey(m *Message, k Key, st State, due int64) {
	s.deadlines.set(m, Never)
	s.leave(m)
	m.key, m.state = k, st
	s.queues[m.queue].count[st]++
	s.index(m)
	s.deadlines.set(m, due)
}

// leave takes m out of its queue's index and counts, and out of the list of
// locks; it stays in the arena.
func (s *Store) leave(m *Message) {
	if m.state == Locked {
		s.unlock(m)
	} else {
		s.unindex(m)
	}
	s.queues[m.queue].count[m.state]--
}

// Remove takes m out of the store for good, with its deadline and lock, and
// recycles it unless a view is reading it.
func (s *Store) Remove(m *Message) {
	s.drop(m)
	recycle(m)
}

// Detach takes m out of the store for good, with its deadline and lock, and
// gives it to the caller: a message leaving for another entity.
func (s *Store) Detach(m *Message) { s.drop(m) }

// drop takes m out of the store: indexes, counts, arena and bytes.
func (s *Store) drop(m *Message) {
	s.deadlines.set(m, Never)
	s.leave(m)
	s.release(m)
}

// release gives m's slot and bytes back; m is in no index any more.
func (s *Store) release(m *Message) {
	s.arena.release(m)
	s.bytes -= m.size
	s.quota.used.Add(-m.size)
}

// LockFirst locks the first available message of q until until under a new
// token and returns it, or returns nil: a receive in peek-lock mode without
// a second search. For the main queue of a store kept by session, use
// LockFirstIn.
func (s *Store) LockFirst(q Queue, until int64) *Message {
	return s.lockFirst(&s.queues[q], until)
}

func (s *Store) lockFirst(home *stream, until int64) *Message {
	it, ok := home.avail.DeleteMin()
	if !ok {
		return nil
	}
	m := s.arena.at(it.slot)
	s.sessions.changed(s, m)
	s.deadlines.set(m, Never)
	sq := &s.queues[m.queue]
	sq.count[Available]--
	sq.count[Locked]++
	m.state = Locked
	s.lock(m, until)
	return m
}

// RemoveFirst takes the first available message of q out of the store and
// returns it, or returns nil: a receive-and-delete. The caller owns it; a
// View with owned set recycles it on Release. For the main queue of a
// store kept by session, use RemoveFirstIn.
func (s *Store) RemoveFirst(q Queue) *Message {
	return s.removeFirst(&s.queues[q])
}

func (s *Store) removeFirst(home *stream) *Message {
	it, ok := home.avail.DeleteMin()
	if !ok {
		return nil
	}
	m := s.arena.at(it.slot)
	s.sessions.changed(s, m)
	s.queues[m.queue].count[Available]--
	s.deadlines.set(m, Never)
	s.release(m)
	return m
}

// Lock locks m, available or deferred, until until under a new token. Its
// pending deadline goes: a locked message neither expires nor activates.
func (s *Store) Lock(m *Message, until int64) {
	s.deadlines.set(m, Never)
	s.unindex(m)
	sq := &s.queues[m.queue]
	sq.count[m.state]--
	sq.count[Locked]++
	m.state = Locked
	s.lock(m, until)
}

// lock gives m, in state Locked and out of the indexes, its lock: an end,
// a token and its place in the list of locks.
func (s *Store) lock(m *Message, until int64) {
	m.lockedUntil = until
	m.token = s.newToken(m)
	s.locks.insert(&s.arena, m)
	s.sessions.locked(s, m, 1)
}

// newToken returns a lock token for m: its arena slot, masked, then 96
// random bits. The slot makes the token unique among the store's locked
// messages and finds the message without a map (Locked); the random bits
// make every delivery's token new and unguessable.
func (s *Store) newToken(m *Message) [16]byte {
	var t [16]byte
	binary.LittleEndian.PutUint32(t[:4], m.slot^s.mask)
	binary.LittleEndian.PutUint32(t[4:8], rand.Uint32()|1) // never all zero
	binary.LittleEndian.PutUint64(t[8:], rand.Uint64())
	return t
}

// unlock ends m's lock; m stays in state Locked, out of the indexes, until
// the caller moves it on.
func (s *Store) unlock(m *Message) {
	s.locks.remove(&s.arena, m)
	m.token = [16]byte{}
	m.lockedUntil = 0
	s.sessions.locked(s, m, -1)
}

// Renew moves the end of m's lock to until; the token stays.
func (s *Store) Renew(m *Message, until int64) {
	s.locks.remove(&s.arena, m)
	m.lockedUntil = until
	s.locks.insert(&s.arena, m)
}

// ByToken returns the message locked under token, or nil.
func (s *Store) ByToken(token [16]byte) *Message {
	m := s.arena.lookup(binary.LittleEndian.Uint32(token[:4]) ^ s.mask)
	if m == nil || m.state != Locked || m.token != token {
		return nil
	}
	return m
}

// Deadline is a store's earliest pending deadline: a lock's end (LockEnd) or
// an expiry or activation of M at instant At. At is Never when there is
// none.
type Deadline struct {
	At      int64
	M       *Message
	LockEnd bool
}

// Next returns the earliest pending deadline, ties broken by key (SEMANTICS
// T3).
func (s *Store) Next() Deadline {
	d := Deadline{At: Never}
	if it, ok := s.deadlines.min(); ok {
		d = Deadline{At: it.due, M: s.arena.at(it.slot)}
	}
	if l := s.locks.first(&s.arena); l != nil {
		if d.M == nil || l.lockedUntil < d.At || (l.lockedUntil == d.At && l.key.Less(d.M.key)) {
			d = Deadline{At: l.lockedUntil, M: l, LockEnd: true}
		}
	}
	return d
}

// Get returns the message of q with key k in state Available, Deferred or
// Scheduled, or nil.
func (s *Store) Get(q Queue, k Key) *Message {
	sq := &s.queues[q]
	if it, ok := sq.held.Get(keyItem(k)); ok {
		return s.arena.at(it.slot)
	}
	if it, ok := sq.avail.Get(keyItem(k)); ok {
		return s.arena.at(it.slot)
	}
	return nil
}

// Ascend calls fn for every message of q with key >= from, in key order,
// until fn returns false; with locked set, locked messages are merged in
// (in O(locks) a call). fn must not change the store. For the main queue of
// a store kept by session it sees only the scheduled messages; use
// AscendIn.
func (s *Store) Ascend(q Queue, from Key, locked bool, fn func(*Message) bool) {
	s.ascend(&s.queues[q], from, func(m *Message) bool {
		return locked && m.queue == q && (s.sessions == nil || q != Main)
	}, fn)
}

// ascend walks home's trees merged with the locked messages that mine
// selects.
func (s *Store) ascend(home *stream, from Key, mine func(*Message) bool, fn func(*Message) bool) {
	var held []*Message
	for m := s.locks.first(&s.arena); m != nil; m = s.locks.next(&s.arena, m) {
		if mine(m) && !m.key.Less(from) {
			held = append(held, m)
		}
	}
	slices.SortFunc(held, func(a, b *Message) int {
		if a.key.Less(b.key) {
			return -1
		}
		return 1
	})
	more := true
	home.ascend(from, func(slot uint32) bool {
		m := s.arena.at(slot)
		for len(held) > 0 && held[0].key.Less(m.key) {
			if more, held = fn(held[0]), held[1:]; !more {
				return false
			}
		}
		more = fn(m)
		return more
	})
	for more && len(held) > 0 {
		more, held = fn(held[0]), held[1:]
	}
}

// Count returns the number of messages of q in state st.
func (s *Store) Count(q Queue, st State) int64 { return s.queues[q].count[st] }

// Len returns the number of messages of q in any state.
func (s *Store) Len(q Queue) int64 { return s.queues[q].len() }

// Available returns the number of available messages of q.
func (s *Store) Available(q Queue) int { return s.queues[q].avail.Len() }

// Bytes returns the total size of the store's messages.
func (s *Store) Bytes() int64 { return s.bytes }

// Messages returns the number of messages in all three queues.
func (s *Store) Messages() int64 {
	var n int64
	for q := range s.queues {
		n += s.queues[q].len()
	}
	return n
}

// SetProps gives stored m the application properties props, unless its
// quota cannot take what that adds: then it changes nothing and returns
// false.
func (s *Store) SetProps(m *Message, props map[string]any) bool {
	size := m.SizeWith(props)
	if !s.quota.grow(size - m.size) {
		return false
	}
	s.setProps(m, props, size)
	return true
}

// PutProps gives stored m the application properties props whatever its
// quota: a replay applies what the live call was allowed, which may have
// been room another store of the quota freed before it recorded doing so.
func (s *Store) PutProps(m *Message, props map[string]any) {
	size := m.SizeWith(props)
	s.quota.used.Add(size - m.size)
	s.setProps(m, props, size)
}

// setProps gives m props, of size bytes, once the quota has them.
func (s *Store) setProps(m *Message, props map[string]any, size int64) {
	s.bytes += size - m.size
	m.size = size
	m.Props = props
}

// Clear drops every message: the entity is deleted. Their bytes leave the
// quota; the messages are left to the collector.
func (s *Store) Clear() {
	s.quota.used.Add(-s.bytes)
	*s = *New(s.quota, s.sessions != nil)
}

// Find returns the message of q with key k in state Available, Deferred,
// Scheduled or Delayed, or nil; session names the session of a message of
// a store kept by session. It serves the replay of a log, which names
// messages by key.
func (s *Store) Find(q Queue, k Key, session string) *Message {
	if s.sessions != nil && q == Main {
		if x := s.sessions.byID[session]; x != nil {
			if it, ok := x.trees.avail.Get(keyItem(k)); ok {
				return s.arena.at(it.slot)
			}
			if it, ok := x.trees.held.Get(keyItem(k)); ok {
				return s.arena.at(it.slot)
			}
		}
	}
	return s.Get(q, k)
}

// Each calls fn for every message in the store, in no order. fn must not
// change the store.
func (s *Store) Each(fn func(*Message)) {
	for _, m := range s.arena.msgs {
		if m != nil {
			fn(m)
		}
	}
}

// Restore adds m, which is in no store, to queue q under key k in state st
// with the pending deadline due, as a snapshot recorded it: locked until
// lockedUntil under a new token when st is Locked. k must be new in q.
func (s *Store) Restore(m *Message, k Key, q Queue, st State, due, lockedUntil int64) {
	if st != Locked {
		s.Put(m, k, q, st, due)
		return
	}
	s.Put(m, k, q, Available, Never)
	s.Lock(m, lockedUntil)
}

// Holds reports whether m is in the store.
func (s *Store) Holds(m *Message) bool { return m.slot != 0 && s.arena.lookup(m.slot) == m }
