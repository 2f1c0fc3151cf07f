package minibus_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/stretchr/testify/require"
)

// Tests of Namespace.WaitIdle.

// WaitIdle returns at once with no running processor, whatever the
// entities hold; it returns ErrClosed on a closed namespace and
// ErrInvalidArgument for nil.
func TestWaitIdle_Basics(t *testing.T) {
	env := minibustest.New(t)
	ns := env.Namespace()
	q := mkQueue(t, env, "q", nil)
	sendBodies(t, q, "not processed")
	require.NoError(t, ns.WaitIdle(context.Background()))
	p, err := q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error { return nil }, nil)
	require.NoError(t, err)
	_ = p // never run: not waited for
	require.NoError(t, ns.WaitIdle(context.Background()))
	var nilCtx context.Context
	requireSentinel(t, ns.WaitIdle(nilCtx), minibus.ErrInvalidArgument, "nil context")
	var nilNS *minibus.Namespace
	require.ErrorIs(t, nilNS.WaitIdle(context.Background()), minibus.ErrInvalidArgument)
	require.NoError(t, ns.Close())
	require.ErrorIs(t, ns.WaitIdle(context.Background()), minibus.ErrClosed)
}

// WaitIdle returns only once no handler runs (SEMANTICS P1): not while one
// is held, and ctx.Err() when ctx ends first.
func TestWaitIdle_WaitsForHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", nil)
		h := newHolder(t)
		p, err := q.NewProcessor(h.handle, &minibus.ProcessorOptions{MaxConcurrentCalls: 3})
		require.NoError(t, err)
		env.Start(p)
		sendBodies(t, q, "a", "b", "c")
		synctest.Wait()
		calls := h.pending()
		require.Len(t, calls, 3)

		ctx, cancel := context.WithCancel(context.Background())
		canceled := make(chan error, 1)
		go func() { canceled <- env.Namespace().WaitIdle(ctx) }()
		var finished atomic.Int64
		idle := make(chan int64, 1)
		go func() {
			if err := env.Namespace().WaitIdle(context.Background()); err != nil {
				idle <- -1
				return
			}
			idle <- finished.Load()
		}()
		synctest.Wait()
		require.Empty(t, idle)
		cancel()
		require.ErrorIs(t, <-canceled, context.Canceled)
		for i, c := range calls {
			finished.Add(1)
			c.reply <- nil
			synctest.Wait()
			if i < len(calls)-1 {
				require.Empty(t, idle, "WaitIdle returned with %d handlers running", len(calls)-1-i)
			}
		}
		require.EqualValues(t, 3, <-idle)
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
}

// stillClock is a clock whose AfterFunc timers never fire: the namespace
// then catches up only when a call (or WaitIdle) starts.
type stillClock struct{ clock.Clock }

func (c stillClock) AfterFunc(d time.Duration, _ func()) *clock.Timer {
	return c.Clock.AfterFunc(d, func() {})
}

// WaitIdle first catches up to the clock: a message that became available
// through time, with no timer to notice, is handled before it returns.
func TestWaitIdle_CatchesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := clock.NewMock()
		mock.Set(epoch)
		var mu sync.Mutex
		var events []minibus.Event
		ns := minibus.NewNamespace(minibus.WithClock(stillClock{mock}), minibus.WithObserver(func(ev minibus.Event) {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		}))
		defer ns.Close()
		journal := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return eventLines(events, "q", minibus.EventActivated)
		}
		q, err := ns.CreateQueue("q", nil)
		require.NoError(t, err)
		h := newHolder(t)
		p, err := q.NewProcessor(h.handle, &minibus.ProcessorOptions{MaxConcurrentCalls: 2})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := runAsync(t, p, ctx)
		// A held call keeps the processor busy throughout, so that WaitIdle
		// cannot see it idle while it takes the later message.
		sendBodies(t, q, "anchor")
		anchor := h.next(t)
		_, err = q.ScheduleMessages(context.Background(), []*minibus.Message{{Body: []byte("later")}}, epoch.Add(time.Minute), nil)
		require.NoError(t, err)
		synctest.Wait() // the processor's free handler waits in a receive
		mock.Add(time.Minute)
		synctest.Wait()
		require.Empty(t, journal(), "nothing caught up yet")
		h.requireNoCall(t)

		idle := make(chan error, 1)
		go func() { idle <- ns.WaitIdle(context.Background()) }()
		later := h.next(t)
		require.Equal(t, "later", string(later.msg.Body))
		require.Equal(t, []string{"Activated q seq=3 id=" + later.msg.MessageID + " dc=0 at=+1m0s"}, journal())
		synctest.Wait()
		require.Empty(t, idle)
		later.reply <- nil
		synctest.Wait()
		require.Empty(t, idle)
		anchor.reply <- nil
		synctest.Wait()
		require.NoError(t, <-idle)
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
		cancel()
		require.NoError(t, runResult(t, done))
	})
}

// Advance (a mock Add, then WaitIdle): a scheduled message due within the
// move is handled before it returns.
func TestWaitIdle_AfterClockMove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", nil)
		var handled atomic.Int64
		p, err := q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error {
			handled.Add(1)
			return nil
		}, nil)
		require.NoError(t, err)
		env.Start(p)
		_, err = q.ScheduleMessages(context.Background(), []*minibus.Message{{}, {}}, epoch.Add(time.Hour), nil)
		require.NoError(t, err)
		synctest.Wait() // the processor waits in a receive before the clock moves
		env.Advance(time.Hour - time.Nanosecond)
		require.Zero(t, handled.Load())
		env.Clock().Add(time.Nanosecond)
		env.WaitIdle()
		require.EqualValues(t, 2, handled.Load())
	})
}

// WaitIdle waits while a session is available and every session slot is
// busy; it waits for running processors only (SEMANTICS P1).
func TestWaitIdle_SessionsAndStoppedProcessors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", &minibus.QueueProperties{RequiresSession: true})
		h := newHolder(t)
		p, err := q.NewSessionProcessor(h.handle, &minibus.SessionProcessorOptions{MaxConcurrentSessions: 2})
		require.NoError(t, err)
		stop := env.Start(p)
		sendToSession(t, q, "X", "anchor")
		anchor := h.next(t)
		sendToSession(t, q, "A", "a")
		a := h.next(t)
		sendToSession(t, q, "B", "b") // waits for a free slot
		idle := make(chan error, 1)
		go func() { idle <- env.Namespace().WaitIdle(context.Background()) }()
		synctest.Wait()
		require.Empty(t, idle)
		h.requireNoCall(t)
		a.reply <- nil
		b := h.next(t)
		require.Equal(t, "b", string(b.msg.Body))
		synctest.Wait()
		require.Empty(t, idle)
		b.reply <- nil
		synctest.Wait()
		require.Empty(t, idle)
		anchor.reply <- nil
		synctest.Wait()
		require.NoError(t, <-idle)

		// A stopped processor is not waited for, whatever its entity holds.
		require.NoError(t, stop())
		sendToSession(t, q, "C", "c")
		env.WaitIdle()
		require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount)
	})
}

// WaitIdle right after a send returns only once the handler of that
// message ran: a processor taking the message while WaitIdle looks is seen
// busy (idler.Idle reads the in-flight count and what is available at one
// instant, under the entity's lock).
func TestWaitIdle_SendThenWaitIdle(t *testing.T) {
	env := minibustest.New(t)
	q := mkQueue(t, env, "q", nil)
	var handled atomic.Int64
	p, err := q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error {
		handled.Add(1)
		return nil
	}, nil)
	require.NoError(t, err)
	env.Start(p)
	for i := int64(1); i <= 5000; i++ {
		require.NoError(t, q.SendMessage(context.Background(), &minibus.Message{}, nil))
		env.WaitIdle()
		require.Equal(t, i, handled.Load(), "WaitIdle returned before the handler ran (send %d)", i)
	}
}
