package store

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// emptyReserve empties the reserve for a test, and again after it.
func emptyReserve(t *testing.T) {
	empty := func() {
		r := &reserve
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ms, r.bytes, r.low, r.collections = nil, 0, 0, 0
		r.n.Store(0)
		r.full.Store(false)
	}
	empty()
	t.Cleanup(empty)
}

// recycled returns n messages with bodies of size bytes, recycled through a
// store, and the addresses of their bodies.
func recycled(t *testing.T, n, size int) map[*byte]bool {
	t.Helper()
	s := newStore()
	bodies := map[*byte]bool{}
	msgs := make([]*Message, n)
	for i := range msgs {
		msgs[i] = put(s, int64(i+1), 0, Main, Available)
		msgs[i].Body = make([]byte, size)
		bodies[unsafe.SliceData(msgs[i].Body)] = true
	}
	for _, m := range msgs {
		s.Remove(m)
	}
	return bodies
}

// The reserve keeps recycled bodies' room past the collections that empty
// a sync.Pool: the sends after them take it instead of allocating.
func TestReserveOutlivesCollections(t *testing.T) {
	emptyReserve(t)
	const n = 100
	bodies := recycled(t, n, 1024)
	runtime.GC()
	runtime.GC() // pool is empty now
	for range n {
		m := NewMessage()
		require.GreaterOrEqual(t, cap(m.Body), 1024)
		require.True(t, bodies[unsafe.SliceData(m.Body[:1])], "room from the reserve")
		delete(bodies, unsafe.SliceData(m.Body[:1]))
	}
	require.Empty(t, bodies)
	require.Zero(t, reserve.n.Load())
}

// The reserve holds at most reserveBytes of room; the rest goes to pool.
func TestReserveBounded(t *testing.T) {
	emptyReserve(t)
	recycled(t, 2*reserveBytes/maxPooledBody, maxPooledBody)
	require.LessOrEqual(t, reserve.bytes, reserveBytes)
	require.Equal(t, reserveBytes/maxPooledBody, int(reserve.n.Load()))
	require.True(t, reserve.full.Load())
	require.NotNil(t, fromReserve())
	require.False(t, reserve.full.Load(), "room again")
}

// collections runs trimReserve n times, as n collections would, and
// returns its last answer.
func collections(n int) (holds bool) {
	for range n {
		holds = trimReserve()
	}
	return holds
}

// What sits in the reserve unused through reserveIdle collections is let
// go at the last; what was taken or kept meanwhile stays, and an empty
// reserve stops asking to be called after collections.
func TestReserveLetsGoWhatSitsUnused(t *testing.T) {
	emptyReserve(t)
	recycled(t, 10, 1024)
	require.True(t, collections(1), "the window begins")
	require.Equal(t, 10, reserve.low)
	var taken []*Message
	for range 3 {
		taken = append(taken, fromReserve())
	}
	keep(taken[0])
	require.True(t, collections(reserveIdle-1), "too soon")
	require.Equal(t, 8, int(reserve.n.Load()))
	require.True(t, collections(1))
	require.Equal(t, 1, int(reserve.n.Load()), "the 7 never taken are gone")
	require.Equal(t, cap(taken[0].Body), reserve.bytes)
	require.Same(t, taken[0], fromReserve())
	keep(taken[1])
	require.True(t, collections(reserveIdle), "kept in the window: stays")
	require.Equal(t, 1, int(reserve.n.Load()))
	require.False(t, collections(reserveIdle), "empty: no more calls")
	require.Zero(t, reserve.bytes)
	require.False(t, reserve.armed)
}

// A reserve that holds anything is looked at after each collection: the
// first begins its window.
func TestReserveWatchesCollections(t *testing.T) {
	emptyReserve(t)
	recycled(t, 10, 1024)
	began := func() bool {
		reserve.mu.Lock()
		defer reserve.mu.Unlock()
		return reserve.collections > 0
	}
	for i := 0; i < 1000 && !began(); i++ {
		runtime.GC()
		runtime.Gosched() // the cleanup runs on a goroutine of its own
	}
	require.True(t, began())
}
