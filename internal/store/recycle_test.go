package store

import (
	"testing"

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
