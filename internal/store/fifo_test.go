package store

import (
	"testing"

	"github.com/google/btree"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The fifo answers every question as a btree holding the same keys would:
// random inserts (mostly above every key, as sends are), deletes from
// anywhere, takes of the lowest, lookups and walks.
func TestFIFOAgreesWithBTree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := newFIFO()
		ref := btree.NewG(degree, lessItem)
		next := int64(1)
		slot := uint32(1)
		key := func() item { // an existing key, or one near them
			return item{seq: rapid.Int64Range(0, next+1).Draw(t, "seq"), cp: rapid.Uint32Range(0, 2).Draw(t, "cp")}
		}
		for range rapid.IntRange(1, 1500).Draw(t, "ops") { // runs over several chunks
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3: // a send: above every key
				it := item{seq: next, slot: slot}
				next += rapid.Int64Range(1, 3).Draw(t, "gap")
				slot++
				f.ReplaceOrInsert(it)
				ref.ReplaceOrInsert(it)
			case 4: // a key back, anywhere: an abandon, a lock that ended
				it := key()
				it.slot = slot
				slot++
				f.ReplaceOrInsert(it)
				ref.ReplaceOrInsert(it)
			case 5, 6:
				a, okA := f.DeleteMin()
				b, okB := ref.DeleteMin()
				require.Equal(t, okB, okA)
				require.Equal(t, b, a)
			case 7:
				it := key()
				f.Delete(it)
				ref.Delete(it)
			case 8:
				it := key()
				a, okA := f.Get(it)
				b, okB := ref.Get(it)
				require.Equal(t, okB, okA)
				if okB {
					require.Equal(t, b, a)
				}
			case 9:
				from, to := key(), key()
				limit := rapid.IntRange(1, 50).Draw(t, "limit")
				var a, b []item
				f.AscendRange(from, to, func(it item) bool { a = append(a, it); return len(a) < limit })
				ref.AscendRange(from, to, func(it item) bool { b = append(b, it); return len(b) < limit })
				require.Equal(t, b, a, "range")
				a, b = nil, nil
				f.AscendGreaterOrEqual(from, func(it item) bool { a = append(a, it); return len(a) < limit })
				ref.AscendGreaterOrEqual(from, func(it item) bool { b = append(b, it); return len(b) < limit })
				require.Equal(t, b, a, "from")
			}
			require.Equal(t, ref.Len(), f.Len())
			a, okA := f.Min()
			b, okB := ref.Min()
			require.Equal(t, okB, okA)
			require.Equal(t, b, a)
		}
	})
}

// A queue that is sent to and received from in order keeps its keys in
// the run, never the btree, and gives back the chunks a backlog left.
func TestFIFOInOrder(t *testing.T) {
	f := newFIFO()
	for i := range 100_000 {
		f.ReplaceOrInsert(item{seq: int64(i + 1), slot: 1})
	}
	require.Zero(t, f.tree.Len())
	for i := range 100_000 {
		it, ok := f.DeleteMin()
		require.True(t, ok)
		require.EqualValues(t, i+1, it.seq)
	}
	require.Zero(t, f.Len())
	require.Len(t, f.chunks, 1, "the run lets its chunks go as it empties")
	for i := range 10 {
		f.ReplaceOrInsert(item{seq: int64(i + 200_000), slot: 1})
		_, ok := f.DeleteMin()
		require.True(t, ok)
	}
	require.Zero(t, f.tree.Len())
}
