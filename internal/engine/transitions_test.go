package engine

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
	"github.com/stretchr/testify/require"
)

// White tests of the transitions: each one's effect on the entity's store,
// its counts and its pending deadlines, called directly under the lock.

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newQueue(t *testing.T, c Config) (*Entity, *clock.Mock) {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(epoch)
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { b.Close() })
	if c.LockDuration == 0 {
		c.LockDuration = time.Minute
	}
	if c.MaxDeliveryCount == 0 {
		c.MaxDeliveryCount = 10
	}
	c.MaxSizeMB, c.MaxMessageKB = 1, 64
	e, err := b.Create(KindQueue, "q", c)
	require.NoError(t, err)
	return e, mock
}

func record(ttl time.Duration) *store.Message {
	m := store.NewMessage()
	m.Body = append(m.Body, "body"...)
	m.TTL = int64(ttl)
	return m
}

func now0() int64 { return epoch.UnixNano() }

func TestTTLRules(t *testing.T) {
	require.Equal(t, int64(5), effectiveTTL(5, 0), "E1: the message's own")
	require.Equal(t, int64(3), effectiveTTL(5, 3), "E1: cut by the cap")
	require.Equal(t, int64(3), effectiveTTL(0, 3))
	require.Zero(t, effectiveTTL(0, 0), "none")
	require.Equal(t, int64(2), capTTL(0, 2))
	require.Equal(t, int64(2), capTTL(5, 2))
	require.Equal(t, store.Never, expiry(10, 0))
	require.Equal(t, int64(15), expiry(10, 5))
	require.Equal(t, int64(maxInstant), expiry(10, math.MaxInt64), "E2: finite stays finite")
	require.Equal(t, int64(maxInstant), after(maxInstant, 1))
}

func TestAcceptExpireAndDeadLetter(t *testing.T) {
	e, _ := newQueue(t, Config{DeadLetterOnExpiry: true})
	e.mu.Lock()
	defer e.mu.Unlock()
	m := record(time.Second)
	require.Equal(t, int64(1), e.acceptLocked(m, now0()))
	require.Equal(t, store.Available, m.State())
	require.Equal(t, now0()+int64(time.Second), m.Expires, "E2")
	d := e.st.Next()
	require.Same(t, m, d.M)
	require.Equal(t, m.Expires, d.At)

	e.advanceLocked(d.At-1, false)
	require.Equal(t, store.Main, m.Queue(), "not expired 1ns before (T2)")
	e.advanceLocked(d.At, false)
	require.Equal(t, store.DeadLetterQueue, m.Queue(), "E5")
	require.Equal(t, ReasonTTLExpired, m.DL.Reason)
	require.Equal(t, store.Never, e.st.Next().At, "E6: nothing expires in a dead-letter queue")
}

func TestScheduleAndActivate(t *testing.T) {
	e, _ := newQueue(t, Config{TTL: time.Hour})
	e.mu.Lock()
	defer e.mu.Unlock()
	m := record(0)
	at := now0() + int64(time.Minute)
	m.Scheduled = at
	require.Equal(t, int64(1), e.acceptLocked(m, now0()), "S1: a number when scheduled")
	require.Equal(t, store.Scheduled, m.State())
	require.Equal(t, int64(1), e.st.Count(store.Main, store.Scheduled))
	e.advanceLocked(at, false)
	require.Equal(t, store.Available, m.State())
	require.Equal(t, store.Key{Seq: 2}, m.Key(), "S4: a new number at activation")
	require.Equal(t, at, m.Enqueued, "Q3")
	require.Equal(t, at+int64(time.Hour), m.Expires, "E2 from activation")
	require.Equal(t, at, e.lastActivation)
}

func TestTakeLockEndAndSettle(t *testing.T) {
	e, _ := newQueue(t, Config{MaxDeliveryCount: 2})
	e.mu.Lock()
	defer e.mu.Unlock()
	m := record(time.Hour)
	e.acceptLocked(m, now0())
	views := e.takeLocked(&Receiver{e: e, q: store.Main}, 10, now0(), nil)
	require.Len(t, views, 1)
	views[0].Release()
	require.Equal(t, store.Locked, m.State())
	require.Equal(t, uint32(1), m.Deliveries, "L1")
	until := now0() + int64(time.Minute)
	require.Equal(t, until, m.LockedUntil())
	require.True(t, e.st.Next().LockEnd, "a locked message's pending deadline is its lock's end (E4)")

	e.advanceLocked(until, false) // L6: back to its position
	require.Equal(t, store.Available, m.State())
	require.Equal(t, m.Expires, e.st.Next().At, "its expiry is pending again")

	e.takeLocked(&Receiver{e: e, q: store.Main}, 1, until, nil)[0].Release()
	e.lockEndedLocked(m, until) // an abandon at the second delivery
	require.Equal(t, store.DeadLetterQueue, m.Queue(), "L6: MaxDeliveryCount first")
	require.Equal(t, ReasonMaxDelivery, m.DL.Reason)
	require.Equal(t, "Message could not be consumed after 2 delivery attempts.", m.DL.Description)
}

func TestDeferFetchAndReturn(t *testing.T) {
	e, _ := newQueue(t, Config{})
	e.mu.Lock()
	defer e.mu.Unlock()
	m := record(time.Second)
	e.acceptLocked(m, now0())
	e.takeLocked(&Receiver{e: e, q: store.Main}, 1, now0(), nil)[0].Release()
	e.deferLocked(m)
	require.Equal(t, store.Deferred, m.State())
	require.Equal(t, store.Never, e.st.Next().At, "E7: deferred messages do not expire")
	s := e.fetchDeferredLocked(m, store.Main, PeekLock, now0(), now0()+int64(time.Minute), 0)
	s.Release()
	require.Equal(t, store.Deferred, s.State, "L14")
	require.True(t, m.FromDeferral)
	e.lockEndedLocked(m, now0()+int64(time.Hour))
	require.Equal(t, store.Deferred, m.State(), "L6: back to Deferred, even past ExpiresAt")
	require.Equal(t, uint32(2), m.Deliveries, "L9: each fetch is a delivery")
}

func TestModifyWithinLimits(t *testing.T) {
	e, _ := newQueue(t, Config{})
	e.mu.Lock()
	defer e.mu.Unlock()
	m := record(0)
	e.acceptLocked(m, now0())
	big := map[string]any{"k": string(make([]byte, 64<<10))}
	err := e.modifyLocked(m, big)
	require.ErrorIs(t, err, errs.ErrMessageTooLarge, "V3")
	require.Nil(t, m.Props, "nothing changed")
	require.NoError(t, e.modifyLocked(m, map[string]any{"k": "v"}))
	require.Equal(t, "v", m.Props["k"])
	require.Equal(t, m.Size(), e.quota.Used())
}

// Catch-up processes one entity's deadlines in (instant, key) order: a lock
// end and an expiry at the same instant go by sequence number (T3).
func TestAdvanceOrder(t *testing.T) {
	e, _ := newQueue(t, Config{DeadLetterOnExpiry: true, MaxDeliveryCount: 1})
	e.mu.Lock()
	defer e.mu.Unlock()
	a, b := record(time.Minute), record(time.Minute)
	e.acceptLocked(a, now0())
	e.acceptLocked(b, now0())
	e.takeLocked(&Receiver{e: e, q: store.Main}, 1, now0(), nil)[0].Release() // a locked until +1m
	e.advanceLocked(now0()+int64(time.Minute), false)
	require.Equal(t, ReasonMaxDelivery, a.DL.Reason, "seq 1: its lock ended first")
	require.Equal(t, ReasonTTLExpired, b.DL.Reason, "seq 2 expired at the same instant")
	var order []int64
	e.st.Ascend(store.DeadLetterQueue, store.Key{}, true, func(m *store.Message) bool {
		order = append(order, m.Key().Seq)
		return true
	})
	require.Equal(t, []int64{1, 2}, order)
}

// A receive blocked in one goroutine wakes when a send enqueues (L8).
func TestReceiveWakesOnEnqueue(t *testing.T) {
	e, _ := newQueue(t, Config{})
	r, err := e.NewReceiver(store.Main, PeekLock)
	require.NoError(t, err)
	got := make(chan []store.View, 1)
	go func() {
		s, err := r.Receive(context.Background(), 1, nil, 0)
		if err != nil {
			got <- nil
			return
		}
		got <- s
	}()
	_, err = e.Send(context.Background(), []*store.Message{record(0)}, store.Unset, false)
	require.NoError(t, err)
	select {
	case s := <-got:
		require.Len(t, s, 1)
		s[0].Release()
	case <-time.After(10 * time.Second): // a safety net, not a wait for the broker
		t.Fatal("the blocked receive did not wake")
	}
}

// A receive marks what it takes as a drain (store.Snapshot.Drain) only when
// it leaves messages behind and nothing has been enqueued for drainQuiet:
// then its copies out may take the room of settled bodies, which no send is
// waiting for.
func TestTakeMarksDrains(t *testing.T) {
	e, mock := newQueue(t, Config{})
	ctx := context.Background()
	r, err := e.NewReceiver(store.Main, PeekLock)
	require.NoError(t, err)
	send := func(n int) {
		t.Helper()
		recs := make([]*store.Message, n)
		for i := range recs {
			recs[i] = record(0)
		}
		_, err := e.Send(ctx, recs, store.Unset, false)
		require.NoError(t, err)
	}
	drains := func(max int) []bool {
		t.Helper()
		views, err := r.Receive(ctx, max, nil, -1)
		require.NoError(t, err)
		marks := make([]bool, len(views))
		for i := range views {
			marks[i] = views[i].Drain
			views[i].Release()
		}
		return marks
	}
	send(10)
	require.Equal(t, []bool{false, false}, drains(2), "just sent to")
	mock.Add(time.Duration(drainQuiet) - 1)
	require.Equal(t, []bool{false, false}, drains(2), "sent to 1ns less than drainQuiet ago")
	mock.Add(1)
	require.Equal(t, []bool{true, true}, drains(2), "a backlog nothing was sent to for drainQuiet")
	send(1)
	require.Equal(t, []bool{false}, drains(1), "sent to again")
	mock.Add(time.Duration(drainQuiet))
	require.Equal(t, []bool{false, false, false, false}, drains(10), "nothing left behind: the room is for the sends to come")
}

// A call reads the clock before it waits for the entity; a catch-up at a
// later clock reading may visit the entity in between. The call still acts
// at its own instant, so it must find every id remembered then: the
// catch-up forgets only what ended by the entity's own instant (SEMANTICS
// DD1; the concurrent replay test found a duplicate accepted at 1380s whose
// window ran to 1440s).
func TestCatchUpForgetsNoIdACallStillSees(t *testing.T) {
	e, mock := newQueue(t, Config{RequiresDuplicateDetection: true, DuplicateWindow: 2 * time.Minute})
	send := func() []int64 {
		m := record(0)
		m.MessageID = "m"
		seqs, err := e.Send(context.Background(), []*store.Message{m}, store.Unset, true)
		require.NoError(t, err)
		return seqs
	}
	require.Equal(t, []int64{1}, send())
	mock.Add(time.Minute)
	e.catchUp(now0() + int64(2*time.Minute)) // the window's end, read by a catch-up first
	require.Equal(t, 1, e.DuplicateHistory(), "remembered: the entity has acted at 1m at most")
	require.Equal(t, []int64{0}, send(), "DD1: sent at 1m, within m's window")
	mock.Add(time.Minute)
	require.Equal(t, []int64{2}, send(), "T2: at the window's end a resend is new")
}
