package minibus

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/minibus-go/minibus/internal/store"
	"github.com/stretchr/testify/require"
)

// The list of locks keeps (LockedUntil, key) order whatever the order of
// inserts, ties included (SEMANTICS T3), and survives removals anywhere.
func TestLockListOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		a := store.NewArena()
		var l lockList
		var in []*store.Message
		for n := range rng.IntN(40) {
			if len(in) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(in))
				l.remove(a, in[i])
				in = slices.Delete(in, i, i+1)
				continue
			}
			m := &store.Message{
				Key:         store.Key{Seq: int64(rng.IntN(20)), Copy: uint32(n)}, // unique
				LockedUntil: int64(rng.IntN(5)),                                   // many ties
			}
			a.Put(m)
			l.insert(a, m)
			in = append(in, m)
		}
		want := append([]*store.Message{}, in...)
		slices.SortFunc(want, func(x, y *store.Message) int {
			if lockBefore(x, y) {
				return -1
			}
			if lockBefore(y, x) {
				return 1
			}
			return 0
		})
		got := []*store.Message{}
		for m := l.first(a); m != nil; m = l.next(a, m) {
			got = append(got, m)
		}
		require.Equal(t, want, got)
		if len(got) > 0 {
			require.Equal(t, got[len(got)-1].Slot, l.tail)
		}
	}
}
