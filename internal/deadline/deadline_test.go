package deadline

import (
	"testing"

	"github.com/minibus-go/minibus/internal/store"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Deadlines come out by instant, ties by key (sequence order, SEMANTICS T3),
// and two deadlines at one instant are both kept.
func TestOrder(t *testing.T) {
	x := New()
	require.Equal(t, store.Never, x.Next())
	x.Add(20, store.Key{Seq: 1}, 1)
	x.Add(10, store.Key{Seq: 3}, 2)
	x.Add(10, store.Key{Seq: 2}, 3)
	x.Add(10, store.Key{Seq: 2, Copy: 1}, 4)
	require.Equal(t, 4, x.Len())
	require.Equal(t, int64(10), x.Next())
	var got []uint32
	for x.Len() > 0 {
		it, ok := x.Min()
		require.True(t, ok)
		got = append(got, it.Slot)
		require.True(t, x.Remove(it.Due, it.Key()))
	}
	require.Equal(t, []uint32{3, 4, 2, 1}, got)
	require.False(t, x.Remove(10, store.Key{Seq: 2}))
	_, ok := x.Min()
	require.False(t, ok)
}
