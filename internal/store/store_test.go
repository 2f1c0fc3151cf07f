package store

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newStore() *Store { return New(NewQuota(1<<30), false) }

func put(s *Store, seq int64, cp uint32, q Queue, st State) *Message {
	m := NewMessage()
	s.Put(m, Key{Seq: seq, Copy: cp}, q, st, Never)
	return m
}

// putSized puts a message with a body of n bytes into s's main queue under
// sequence number seq.
func putSized(s *Store, seq int64, n int) *Message {
	m := NewMessage()
	m.Body = make([]byte, n)
	s.Put(m, Key{Seq: seq}, Main, Available, Never)
	return m
}

func keys(s *Store, q Queue, from Key, locked bool, max int) []Key {
	var out []Key
	s.Ascend(q, from, locked, func(m *Message) bool {
		out = append(out, m.Key())
		return len(out) < max
	})
	return out
}

func TestKeyOrder(t *testing.T) {
	require.True(t, Key{1, 5}.Less(Key{2, 0}))
	require.True(t, Key{2, 0}.Less(Key{2, 1}))
	require.False(t, Key{2, 1}.Less(Key{2, 1}))
	require.Equal(t, Key{2, 2}, Key{2, 1}.Next())
	require.Equal(t, Key{3, 0}, Key{2, ^uint32(0)}.Next())
}

// Equal sequence numbers with different copy ordinals are different items:
// the btree keeps both.
func TestCopiesAreDistinct(t *testing.T) {
	s := newStore()
	put(s, 1, 0, Main, Available)
	put(s, 1, 1, Main, Available)
	put(s, 1, 2, Main, Deferred)
	require.EqualValues(t, 3, s.Len(Main))
	require.Equal(t, 2, s.Available(Main))
	require.Equal(t, []Key{{1, 0}, {1, 1}, {1, 2}}, keys(s, Main, Key{}, false, 10))
}

// Counts follow every move; a lock takes the first available message, a
// release returns it to its position.
func TestLockMoveAndCounts(t *testing.T) {
	s := newStore()
	b := put(s, 2, 0, Main, Available)
	a := put(s, 1, 0, Main, Available)
	require.Same(t, a, s.LockFirst(Main, 100))
	require.Equal(t, Locked, a.State())
	require.EqualValues(t, 100, a.LockedUntil())
	require.NotZero(t, a.Token())
	require.Same(t, a, s.ByToken(a.Token()))
	require.EqualValues(t, 1, s.Count(Main, Locked))
	require.EqualValues(t, 1, s.Count(Main, Available))

	tok := a.Token()
	s.Move(a, Main, Available, Never) // the lock ends: back to its position
	require.Nil(t, s.ByToken(tok), "a released token is lost")
	require.Zero(t, a.LockedUntil())
	require.Same(t, a, s.LockFirst(Main, 200), "first again (Q4)")
	require.NotEqual(t, tok, a.Token(), "a new token at every lock")

	s.Move(a, DeadLetterQueue, Available, Never)
	require.EqualValues(t, 0, s.Count(Main, Locked))
	require.EqualValues(t, 1, s.Len(DeadLetterQueue))
	require.Equal(t, Main, b.Queue())

	s.Lock(b, 300)
	s.Move(b, Main, Deferred, Never)
	require.EqualValues(t, 1, s.Count(Main, Deferred))
	require.Nil(t, s.LockFirst(Main, 400), "deferred messages are not taken")
	require.Same(t, b, s.Get(Main, Key{Seq: 2}))
	s.Remove(b)
	require.Nil(t, s.Get(Main, Key{Seq: 2}))
	require.EqualValues(t, 0, s.Len(Main))
}

// A token names a message only while it holds that lock: forged, stale and
// foreign tokens find nothing.
func TestTokens(t *testing.T) {
	s := newStore()
	m := put(s, 1, 0, Main, Available)
	s.LockFirst(Main, 10)
	tok := m.Token()
	forged := tok
	forged[15] ^= 1
	require.Nil(t, s.ByToken(forged))
	require.Nil(t, s.ByToken([16]byte{}))
	require.Nil(t, newStore().ByToken(tok), "another store's token")
	s.Renew(m, 20)
	require.Same(t, m, s.ByToken(tok), "a renewal keeps the token")
	s.Remove(m)
	require.Nil(t, s.ByToken(tok))
}

// Next gives the earliest deadline, expiries, activations and lock ends
// alike, ties by key (SEMANTICS T3).
func TestNextDeadline(t *testing.T) {
	s := newStore()
	require.Equal(t, Never, s.Next().At)
	a, b, c := NewMessage(), NewMessage(), NewMessage()
	s.Put(a, Key{Seq: 3}, Main, Available, 50)
	s.Put(b, Key{Seq: 2}, Main, Scheduled, 50)
	s.Put(c, Key{Seq: 1}, Main, Available, Never)
	d := s.Next()
	require.Equal(t, int64(50), d.At)
	require.Same(t, b, d.M, "ties in key order")
	require.False(t, d.LockEnd)
	s.LockFirst(Main, 50) // c, key 1: first of the three ties
	d = s.Next()
	require.Same(t, c, d.M)
	require.True(t, d.LockEnd)
	s.Remove(c)
	s.Rekey(b, Key{Seq: 4}, Available, 60)
	require.Same(t, a, s.Next().M)
	s.Lock(a, 70) // a locked message has no expiry pending
	require.Same(t, b, s.Next().M)
	require.Equal(t, int64(60), s.Next().At)
}

// Ascend merges available, held and (on request) locked messages in key
// order, from any key, stopping when told, across chunk boundaries.
func TestAscendMergesStates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		s := newStore()
		var all, unlocked []Key
		n := rng.IntN(400)
		for i := range n {
			copies := uint32(1 + rng.IntN(2))
			for c := range copies {
				st := []State{Available, Deferred, Scheduled, Locked}[rng.IntN(4)]
				k := Key{int64(i + 1), c}
				m := NewMessage()
				if st == Locked {
					s.Put(m, k, Main, Deferred, Never)
					s.Lock(m, int64(rng.IntN(1000)))
				} else {
					s.Put(m, k, Main, st, Never)
					unlocked = append(unlocked, k)
				}
				all = append(all, k)
			}
		}
		from := Key{Seq: int64(rng.IntN(n + 2))}
		max := 1 + rng.IntN(300)
		want := func(ks []Key) []Key {
			var out []Key
			for _, k := range ks {
				if !k.Less(from) && len(out) < max {
					out = append(out, k)
				}
			}
			return out
		}
		require.True(t, slices.Equal(want(all), keys(s, Main, from, true, max)), "with locked")
		require.True(t, slices.Equal(want(unlocked), keys(s, Main, from, false, max)), "without locked")
	}
}

// The list of locks keeps (lockedUntil, key) order whatever the order of
// inserts, ties included (SEMANTICS T3), and survives removals anywhere.
func TestLockListOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		a := newArena()
		var l lockList
		var in []*Message
		for n := range rng.IntN(40) {
			if len(in) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(in))
				l.remove(&a, in[i])
				in = slices.Delete(in, i, i+1)
				continue
			}
			m := &Message{
				key:         Key{Seq: int64(rng.IntN(20)), Copy: uint32(n)}, // unique
				lockedUntil: int64(rng.IntN(5)),                             // many ties
			}
			a.put(m)
			l.insert(&a, m)
			in = append(in, m)
		}
		want := append([]*Message{}, in...)
		slices.SortFunc(want, func(x, y *Message) int {
			if lockBefore(x, y) {
				return -1
			}
			if lockBefore(y, x) {
				return 1
			}
			return 0
		})
		got := []*Message{}
		for m := l.first(&a); m != nil; m = l.next(&a, m) {
			got = append(got, m)
		}
		require.Equal(t, want, got)
		if len(got) > 0 {
			require.Equal(t, got[len(got)-1].slot, l.tail)
		}
	}
}

// Deadlines come out by instant, ties by key (SEMANTICS T3), and two
// deadlines at one instant are both kept.
func TestDeadlineOrder(t *testing.T) {
	d := newDeadlines()
	a := newArena()
	msg := func(seq int64, cp uint32, due int64) *Message {
		m := &Message{key: Key{Seq: seq, Copy: cp}, due: Never}
		a.put(m)
		d.set(m, due)
		return m
	}
	m1 := msg(1, 0, 20)
	m2 := msg(3, 0, 10)
	m3 := msg(2, 0, 10)
	m4 := msg(2, 1, 10)
	require.Equal(t, 4, d.t.Len())
	var got []*Message
	for {
		it, ok := d.min()
		if !ok {
			break
		}
		m := a.at(it.slot)
		got = append(got, m)
		d.set(m, Never)
	}
	require.Equal(t, []*Message{m3, m4, m2, m1}, got)
	d.set(m1, 5)
	d.set(m1, 7) // replaces
	require.Equal(t, 1, d.t.Len())
}

// The quota holds what its stores hold, and SetProps refuses growth past
// the limit, changing nothing (SEMANTICS V3).
func TestQuota(t *testing.T) {
	q := NewQuota(100)
	s1, s2 := New(q, false), New(q, false)
	m := putSized(s1, 1, 40)
	n := putSized(s2, 1, 30)
	require.EqualValues(t, 70, q.Used())
	require.True(t, q.Fits(30))
	require.False(t, q.Fits(31))
	require.False(t, s1.SetProps(m, map[string]any{"k": string(make([]byte, 30))}), "40+31 > 100-30")
	require.Nil(t, m.Props)
	require.EqualValues(t, 40, m.Size())
	require.True(t, s1.SetProps(m, map[string]any{"k": string(make([]byte, 29))}))
	require.EqualValues(t, 100, q.Used())
	require.EqualValues(t, 70, s1.Bytes())
	s1.Move(m, DeadLetterQueue, Available, Never)
	require.EqualValues(t, 100, q.Used(), "moves keep bytes")
	s1.Clear()
	require.EqualValues(t, 30, q.Used())
	s2.Remove(n)
	require.Zero(t, q.Used())
}

// A tallied Put counts its bytes for the caller, which adds them to the
// quota at once; a Remove meanwhile still comes off the quota.
func TestQuotaTally(t *testing.T) {
	q := NewQuota(100)
	s1, s2 := New(q, false), New(q, false)
	old := putSized(s1, 1, 5)
	s1.Tally()
	s2.Tally()
	putSized(s1, 2, 10)
	putSized(s2, 2, 20)
	s1.Remove(old)
	require.Zero(t, q.Used(), "tallied bytes wait for the caller")
	require.EqualValues(t, 10, s1.Bytes())
	q.Add(s1.TakeTally() + s2.TakeTally())
	require.EqualValues(t, 30, q.Used())
	require.Zero(t, s1.TakeTally(), "a take ends the tally")
	putSized(s1, 3, 7)
	require.EqualValues(t, 37, q.Used(), "untallied again")
}

// A store kept by session takes a session's messages in order, offers the
// unheld session whose first available message is oldest, and forgets a
// session with nothing left (SEMANTICS SS3, SS4).
func TestSessions(t *testing.T) {
	s := New(NewQuota(1<<30), true)
	msg := func(seq int64, id string) *Message {
		m := NewMessage()
		m.SessionID = id
		s.Put(m, Key{Seq: seq}, Main, Available, Never)
		return m
	}
	b1 := msg(1, "b")
	msg(2, "a")
	b3 := msg(3, "b")
	id, ok := s.NextSession()
	require.True(t, ok)
	require.Equal(t, "b", id, "b's first message is oldest")
	s.Hold("b")
	id, _ = s.NextSession()
	require.Equal(t, "a", id, "b is held")
	require.Equal(t, 2, s.AvailableIn("b"))
	require.Same(t, b1, s.LockFirstIn("b", 10))
	var locked []*Message
	s.LockedIn("b", func(m *Message) { locked = append(locked, m) })
	require.Equal(t, []*Message{b1}, locked)
	require.Equal(t, []Key{{1, 0}, {3, 0}}, func() (ks []Key) {
		s.AscendIn("b", Key{}, true, func(m *Message) bool { ks = append(ks, m.Key()); return true })
		return
	}())
	s.Move(b1, Main, Available, Never) // released to its position
	require.Same(t, b1, s.LockFirstIn("b", 10), "first again")
	s.Remove(b1)
	require.Same(t, b3, s.RemoveFirstIn("b"))
	s.Unhold("b")
	require.Empty(t, s.sessions.byID["b"], "forgotten: nothing left")
	require.Equal(t, []string{"a"}, s.SessionIDs())
	require.EqualValues(t, 1, s.Count(Main, Available))
	require.Nil(t, s.LockFirst(Main, 10), "the main stream holds no session's messages")
}
