package store

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func msg(seq int64, copyNo uint32, st State) *Message {
	return &Message{Key: Key{Seq: seq, Copy: copyNo}, State: st}
}

func keys(s Stream, from Key, max int) []Key {
	var out []Key
	s.Ascend(from, func(m *Message) bool {
		out = append(out, m.Key)
		return len(out) < max
	})
	return out
}

func TestKeyOrder(t *testing.T) {
	require.True(t, Key{1, 5}.Less(Key{2, 0}))
	require.True(t, Key{2, 0}.Less(Key{2, 1}))
	require.False(t, Key{2, 1}.Less(Key{2, 1}))
}

// Equal sequence numbers with different copy ordinals are different items:
// the btree keeps both (STYLE.md practice 10).
func TestCopiesAreDistinct(t *testing.T) {
	s := NewStream(NewArena())
	s.Add(msg(1, 0, Available))
	s.Add(msg(1, 1, Available))
	s.Add(msg(1, 2, Deferred))
	require.Equal(t, 3, s.Len())
	require.Equal(t, 2, s.Available())
	require.Equal(t, []Key{{1, 0}, {1, 1}, {1, 2}}, keys(s, Key{}, 10))
}

func TestFirstTakeAndStates(t *testing.T) {
	s := NewStream(NewArena())
	require.Nil(t, s.First())
	a, b := msg(1, 0, Available), msg(2, 0, Available)
	s.Add(b)
	s.Add(a)
	require.Same(t, a, s.First())
	s.Remove(a)
	a.State = Deferred
	s.Add(a)
	require.Same(t, b, s.First())
	require.Same(t, a, s.Get(Key{1, 0}))
	s.Remove(a)
	a.State = Available
	s.Add(a) // back to its position
	require.Same(t, a, s.First())
	require.Same(t, a, s.Take())
	require.Equal(t, 1, s.Len(), "Take removes from the stream")
	require.Same(t, b, s.First())
	s.Add(a)
	s.Remove(a)
	s.Remove(a) // twice is harmless
	require.Equal(t, 1, s.Len())
	require.Nil(t, s.Get(Key{1, 0}))
}

// Ascend merges available and held messages in key order, from any key,
// stopping when told, across chunk boundaries.
func TestAscendMergesStates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		s := NewStream(NewArena())
		var all []Key
		n := rng.IntN(400)
		for i := range n {
			st := State(rng.IntN(NumStates))
			copies := uint32(1 + rng.IntN(2))
			for c := range copies {
				s.Add(msg(int64(i+1), c, st))
				all = append(all, Key{int64(i + 1), c})
			}
		}
		from := Key{Seq: int64(rng.IntN(n + 2))}
		max := 1 + rng.IntN(300)
		var want []Key
		for _, k := range all {
			if !k.Less(from) && len(want) < max {
				want = append(want, k)
			}
		}
		got := keys(s, from, max)
		require.True(t, slices.Equal(want, got), "from %v max %d: want %v got %v", from, max, want, got)
	}
}
