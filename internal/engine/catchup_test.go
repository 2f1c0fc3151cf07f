package engine

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus/internal/store"
	"github.com/stretchr/testify/require"
)

// jumpyClock is a mock clock that moves on by jump right after one chosen
// reading is taken (the broker reads with Since): what a mock.Add in
// another goroutine does between a reading and the timer set from it.
type jumpyClock struct {
	*clock.Mock
	skip atomic.Int32 // readings to take before the one that jumps
	jump atomic.Int64 // how far it jumps; 0: no jump pending
	// fired receives once each timer callback has returned.
	fired chan struct{}
}

func (c *jumpyClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	return c.Mock.AfterFunc(d, func() {
		f()
		c.fired <- struct{}{}
	})
}

func (c *jumpyClock) Since(t time.Time) time.Duration {
	d := c.Mock.Since(t)
	if c.jump.Load() != 0 && c.skip.Add(-1) < 0 {
		c.Mock.Add(time.Duration(c.jump.Swap(0)))
	}
	return d
}

// T5: a receiver blocks on a queue whose scheduled message activates at
// +10s; while the broker arms its timer the clock moves from 0 to +20s, so
// that a timer set from the reading at 0 would fire at +30s. The timer must
// fire when the clock next moves, for the receivers already blocked, and
// armedAt must not say +10s: a receiver that blocked later for a deadline
// before the timer's (say +25s) would then trust that timer instead of
// arming its own, and would not wake when the clock reached its deadline.
func TestArm_T5_ClockMovesWhileTheTimerIsSet(t *testing.T) {
	c := &jumpyClock{Mock: clock.NewMock(), fired: make(chan struct{}, 4)}
	c.Set(epoch)
	b := New(Options{Clock: c, Logger: slog.New(slog.DiscardHandler)})
	defer b.Close()
	e, err := b.Create(KindQueue, "q", Config{LockDuration: time.Minute, MaxDeliveryCount: 10, MaxSizeMB: 1, MaxMessageKB: 64})
	require.NoError(t, err)
	m := record(0)
	m.Scheduled = epoch.Add(10 * time.Second).UnixNano()
	_, err = e.Send(context.Background(), []*store.Message{m}, store.Unset, false)
	require.NoError(t, err)

	// watch reads the clock once, then arm reads it: that reading jumps.
	c.skip.Store(1)
	c.jump.Store(int64(20 * time.Second))
	due := b.watch(e)
	defer b.unwatch(e)
	require.True(t, due, "the activation at +10s is due once the clock is at +20s")
	require.Equal(t, epoch.Add(20*time.Second), c.Now())
	require.Equal(t, epoch.Add(20*time.Second).UnixNano(), b.sched.armedAt.Load(),
		"the timer fires at the clock's time, and armedAt says so")

	c.Mock.Add(0) // fires the timers due at +20s
	select {
	case <-c.fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the timer did not fire when the clock moved")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	require.Zero(t, e.st.Count(store.Main, store.Scheduled), "the timer's catch-up activated the message (S4)")
	require.Equal(t, 1, e.st.Available(store.Main))
}
