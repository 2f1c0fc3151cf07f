package store

import (
	"reflect"
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
	view := m.View(Available, false)
	s.Remove(m) // pinned: not recycled
	require.Equal(t, "hello", string(m.Body))
	require.Equal(t, Key{Seq: 1}, view.Key)
	view.Release() // not the owner: left to the collector
	require.Equal(t, "hello", string(m.Body))

	own := put(s, 2, 0, Main, Available)
	own.Body = append(own.Body, "mine"...)
	own.Props = map[string]any{"k": 1}
	taken := s.RemoveFirst(Main)
	require.Same(t, own, taken)
	view = taken.View(Available, true)
	view.Release() // the owner: recycled
	require.Nil(t, own.Props, "a recycled message keeps nothing but its body's room")
	require.Empty(t, own.Body)
}

func TestCopySharesBody(t *testing.T) {
	m := NewMessage()
	m.Body = append(m.Body, "shared"...)
	c := m.Copy()
	require.Same(t, m.share, c.share)
	require.Equal(t, int32(2), m.share.holders.Load(), "m and c")
	require.False(t, c.Stored())
	require.Equal(t, Never, c.due)
	s := newStore()
	s.Put(c, Key{Seq: 1}, Main, Available, Never)
	s.Remove(c)
	require.Nil(t, c.Body, "a copy's struct is reused but not the body it shares")
	require.Nil(t, c.share)
	require.Equal(t, "shared", string(m.Body))
	require.Equal(t, int32(1), m.share.holders.Load())

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

// A body that a topic's copies share is reused only once the message they
// were copied from and every copy have been recycled, in any order; a copy
// of a copy shares it too. The last to go keeps the room.
func TestSharedBodyReusedAfterLastHolder(t *testing.T) {
	for last := range 4 {
		s := newStore()
		m := NewMessage()
		m.Body = append(m.Body[:0], "shared"...)
		body := unsafe.SliceData(m.Body)
		c1, c2 := m.Copy(), m.Copy()
		c3 := c2.Copy() // forwarded to a topic, say
		holders := []*Message{m, c1, c2, c3}
		require.Equal(t, int32(4), m.share.holders.Load())
		for i, c := range holders[1:] {
			s.Put(c, Key{Seq: int64(i + 1)}, Main, Available, Never)
		}
		let := func(h *Message) {
			if h == m {
				Recycle(m)
			} else {
				s.Remove(h)
			}
		}
		for i, h := range holders {
			if i != last {
				let(h)
				require.Nil(t, h.Body, "%d let go while %d holds the body", i, last)
			}
		}
		require.Equal(t, "shared", string(holders[last].Body), "held by %d", last)
		let(holders[last])
		require.Empty(t, holders[last].Body, "recycled with its room")
		require.Same(t, body, unsafe.SliceData(holders[last].Body[:1]), "the room kept is the shared body's")
	}
}

// A copy that a snapshot still reads when it leaves its store is not
// recycled, so the room it shares is never reused: the reader's bytes stay.
func TestSharedBodyPinnedNeverReused(t *testing.T) {
	s := newStore()
	m := NewMessage()
	m.Body = append(m.Body[:0], "read"...)
	c1, c2 := m.Copy(), m.Copy()
	s.Put(c1, Key{Seq: 1}, Main, Available, Never)
	s.Put(c2, Key{Seq: 2}, Main, Available, Never)
	view := c1.View(Available, false)
	s.Remove(c1)
	s.Remove(c2)
	Recycle(m)
	view.Release()
	require.Equal(t, "read", string(c1.Body))
	require.Equal(t, int32(1), c1.share.holders.Load(), "c1 never lets go")
}

// A stored message's record stays in the allocator's 256-byte size class:
// one more field that crosses it costs every queued message 32 bytes (the
// heap per queued message that bench/ measures).
func TestMessageFitsItsSizeClass(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(Message{}), uintptr(256))
}

// TestCopyKeepsEveryField: Copy names the fields it copies (it may not read
// pins, which a reader elsewhere may be writing): a field added to Message
// must be added there too, or left out there and here on purpose.
func TestCopyKeepsEveryField(t *testing.T) {
	m := &Message{
		MessageID: "id", IDSeed: 1, SessionID: "s", Headers: &Headers{Subject: "x"},
		Body: []byte("b"), Props: map[string]any{"p": 1}, Scheduled: 2,
		TTL: 3, Enqueued: 4, Expires: 5, Deliveries: 6, Hops: 7,
		FromDeferral: true, EnqueuedSeq: 8, DL: &DeadLetter{Reason: "r"}, RenewUntil: 9,
		key: Key{Seq: 10}, state: Locked, queue: DeadLetterQueue, lockedUntil: 11, token: [16]byte{12},
		due: 13, size: 14, madeID: "made",
		slot: 15, pins: 16, lockPrev: 17, lockNext: 18,
	}
	c := m.Copy()
	want := *m
	want.slot, want.pins, want.lockPrev, want.lockNext, want.due = 0, 0, 0, 0, Never
	require.Equal(t, want, *c)
	// Every field above is set: a new one would be zero here and in the
	// copy alike, so the count says when to come back.
	require.Equal(t, 29, reflect.TypeOf(Message{}).NumField(), "a field added to Message: add it to Copy and to this test")
}
