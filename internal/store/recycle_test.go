package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A message is recycled only when nothing can reach it: out of any arena,
// not pinned by a copy in progress, its body its own.
func TestRecycleOnlyUnreachable(t *testing.T) {
	a := NewArena()
	m := NewMessage()
	m.Body = append(m.Body, "hello"...)
	a.Put(m)
	require.False(t, Recycle(m), "still in an arena")
	a.Free(m)

	m.Pin()
	require.False(t, Recycle(m), "pinned by a copy in progress")
	m.Unpin()

	c := m.Copy()
	require.True(t, c.SharedBody)
	require.True(t, m.SharedBody)
	require.Equal(t, uint32(0), c.Slot)
	require.True(t, Recycle(c), "a copy's struct is reused")
	require.Nil(t, c.Body, "but not the body it shares")

	own := NewMessage()
	own.Body = append(own.Body, "mine"...)
	own.Props = map[string]any{"k": 1}
	require.True(t, Recycle(own))
	require.Nil(t, own.Props, "a recycled message keeps nothing but its body's room")
	require.Empty(t, own.Body)

	big := NewMessage()
	big.Body = make([]byte, maxPooledBody+1)
	require.True(t, Recycle(big))
	require.Nil(t, big.Body, "huge bodies are not kept")
}
