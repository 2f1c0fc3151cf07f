package store

import (
	"runtime/debug"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// A message is recycled only when nothing can reach it: out of its store,
// no snapshot reading it; a shared body is never reused.
func TestRecycleOnlyUnreachable(t *testing.T) {
	s := newStore()
	m := NewMessage()
	m.Body = append(m.Body, "hello"...)
	s.Put(m, Key{Seq: 1}, Main, Available, Never)
	snap := m.Snapshot(Available, false)
	s.Remove(m) // pinned: not recycled
	require.Equal(t, "hello", string(m.Body))
	require.Equal(t, Key{Seq: 1}, snap.Key)
	snap.Release() // not the owner: left to the collector
	require.Equal(t, "hello", string(m.Body))

	own := put(s, 2, 0, Main, Available)
	own.Body = append(own.Body, "mine"...)
	own.Props = map[string]any{"k": 1}
	taken := s.RemoveFirst(Main)
	require.Same(t, own, taken)
	snap = taken.Snapshot(Available, true)
	snap.Release() // the owner: recycled
	require.Nil(t, own.Props, "a recycled message keeps nothing but its body's room")
	require.Empty(t, own.Body)
}

func TestCopySharesBody(t *testing.T) {
	m := NewMessage()
	m.Body = append(m.Body, "shared"...)
	c := m.Copy()
	require.True(t, c.sharedBody)
	require.True(t, m.sharedBody)
	require.False(t, c.Stored())
	require.Equal(t, Never, c.due)
	s := newStore()
	s.Put(c, Key{Seq: 1}, Main, Available, Never)
	s.Remove(c)
	require.Nil(t, c.Body, "a copy's struct is reused but not the body it shares")
	require.Equal(t, "shared", string(m.Body))

	big := NewMessage()
	big.Body = make([]byte, maxPooledBody+1)
	s.Put(big, Key{Seq: 2}, Main, Available, Never)
	s.Remove(big)
	require.Nil(t, big.Body, "huge bodies are not kept")
}

// TakeRoom gives a recycled body's room to one owner: no room it returned
// comes back from another TakeRoom or from NewMessage, and it returns only
// room that fits a copy of n bytes without holding more than twice as much.
func TestTakeRoomHasOneOwner(t *testing.T) {
	// Two collections would empty the pools, and leave nothing to take.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	s := newStore()
	const n = 200
	msgs := make([]*Message, n)
	for i := range msgs {
		msgs[i] = put(s, int64(i+1), 0, Main, Available)
		msgs[i].Body = make([]byte, 1024)
	}
	for _, m := range msgs {
		s.Remove(m)
	}
	require.Nil(t, TakeRoom(100), "1 KiB of room for 100 bytes")
	taken := map[*byte]bool{}
	for range n {
		room := TakeRoom(1000)
		if room == nil {
			continue // the pool may drop what it holds
		}
		require.Empty(t, room)
		require.GreaterOrEqual(t, cap(room), 1000)
		require.LessOrEqual(t, cap(room), 2000)
		p := unsafe.SliceData(room[:1])
		require.False(t, taken[p], "a room given twice")
		taken[p] = true
	}
	require.NotEmpty(t, taken, "no recycled room was taken")
	for range 2 * n {
		m := NewMessage()
		if cap(m.Body) > 0 {
			require.False(t, taken[unsafe.SliceData(m.Body[:1])], "a taken room went to a send")
		}
	}
}
