package minibus_test

import (
	"context"
	"fmt"
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

// SEMANTICS P: Namespace.WaitIdle waits for running processors (P1) and
// for blocked receives with something to take (P2), never for a message a
// receive returned (P3).

// WaitIdle returns at once with no running processor, whatever the
// entities hold; it returns ErrClosed on a closed namespace and
// ErrInvalidArgument for nil.
func TestP1_WaitIdleBasics(t *testing.T) {
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
func TestP1_WaitIdleWaitsForHandlers(t *testing.T) {
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
func TestP1_T3_WaitIdleCatchesUp(t *testing.T) {
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
func TestP1_WaitIdleAfterClockMove(t *testing.T) {
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
func TestP1_WaitIdleWithSessionsAndStoppedProcessors(t *testing.T) {
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
func TestP1_SendThenWaitIdle(t *testing.T) {
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

// Tests of what WaitIdle sees outside processors (SEMANTICS P2, P3): a
// receive (or AcceptNextSession) blocked while there is something to take
// keeps the namespace busy until it has taken it; a message it returned is
// its caller's. Each runs in a synctest bubble, where env.WaitIdle's 10 s
// safety limit passes as soon as everything is blocked: a WaitIdle that
// would hang fails at once.

// receiveLoop runs the loop every azservicebus user writes (receive,
// handle, settle) on its own goroutine until ctx ends, and returns the
// channel that gets the error that ended it.
func receiveLoop(ctx context.Context, r *minibus.Receiver, max int) <-chan error {
	done := make(chan error, 1)
	go func() {
		for {
			msgs, err := r.ReceiveMessages(ctx, max, nil)
			if err != nil {
				done <- err
				return
			}
			for _, m := range msgs {
				if err := r.CompleteMessage(context.Background(), m, nil); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	return done
}

// delivered reports whether the journal has id's EventDelivered.
func delivered(env *minibustest.Env, id string) bool {
	for _, ev := range env.Events() {
		if ev.Kind == minibus.EventDelivered && ev.MessageID == id {
			return true
		}
	}
	return false
}

// P2: a hand-written receive loop waiting in ReceiveMessages, a message
// sent: WaitIdle returns only once the loop has taken it. (Rounds, as a
// WaitIdle blind to the loop returns early only when it looks before the
// loop's goroutine runs.)
func TestP2_WaitIdleWaitsForAReceiveLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", nil)
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := receiveLoop(ctx, r, 1)
		for i := range 20 {
			synctest.Wait() // the loop waits in ReceiveMessages
			id := fmt.Sprint("m", i)
			sendBodies(t, q, id)
			env.WaitIdle()
			require.True(t, delivered(env, id), "P2: WaitIdle returned before the loop took %s", id)
		}
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		synctest.Wait()
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
}

// P2 with T5: a message scheduled for later wakes the waiting loop when
// Advance moves the clock to it, and Advance returns after the loop took
// it. With a clock whose timers never fire, the activation is WaitIdle's
// own catch-up, and WaitIdle still returns only after the take.
func TestP2_AdvanceWakesAWaitingReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", nil)
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := receiveLoop(ctx, r, 10)
		for i := range 10 {
			id := fmt.Sprint("later", i)
			_, err := q.ScheduleMessages(context.Background(), []*minibus.Message{{MessageID: id}}, env.Clock().Now().Add(time.Hour), nil)
			require.NoError(t, err)
			synctest.Wait()
			env.Advance(time.Hour - time.Nanosecond)
			require.False(t, delivered(env, id), "S2: not due yet")
			env.Advance(time.Nanosecond)
			require.True(t, delivered(env, id), "P2: Advance returned before the loop took %s", id)
		}
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	})
	synctest.Test(t, func(t *testing.T) {
		mock := clock.NewMock()
		mock.Set(epoch)
		env := minibustest.New(t, minibus.WithClock(stillClock{mock}))
		q := mkQueue(t, env, "q", nil)
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := receiveLoop(ctx, r, 10)
		for i := range 10 {
			id := fmt.Sprint("later", i)
			_, err := q.ScheduleMessages(context.Background(), []*minibus.Message{{MessageID: id}}, mock.Now().Add(time.Minute), nil)
			require.NoError(t, err)
			synctest.Wait()
			mock.Add(time.Minute)
			synctest.Wait()
			require.False(t, delivered(env, id), "no timer: nothing caught up yet")
			env.WaitIdle()
			require.True(t, delivered(env, id), "P2: WaitIdle returned before the loop took %s", id)
		}
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	})
}

// P2 with SS3: an AcceptNextSession waiting, a message for a new session:
// WaitIdle returns once the accept took the session.
func TestP2_WaitIdleWaitsForAWaitingAccept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", &minibus.QueueProperties{RequiresSession: true})
		for i := range 10 {
			accepted := make(chan *minibus.SessionReceiver, 1)
			go func() {
				s, err := q.AcceptNextSession(context.Background(), nil)
				if err != nil {
					accepted <- nil
					return
				}
				accepted <- s
			}()
			synctest.Wait() // the accept waits
			id := fmt.Sprint("s", i)
			sendToSession(t, q, id, "x")
			env.WaitIdle()
			_, err := q.AcceptSession(context.Background(), id, nil)
			require.ErrorIs(t, err, minibus.ErrSessionCannotBeLocked, "P2: WaitIdle returned before the accept took %s (round %d)", id, i)
			s := <-accepted
			require.NotNil(t, s)
			require.Equal(t, id, s.SessionID())
			// A session receiver's receive is a receive too (P2).
			msgs, err := s.ReceiveMessages(context.Background(), 1, nil)
			require.NoError(t, err)
			require.NoError(t, s.CompleteMessage(context.Background(), msgs[0], nil))
			got := make(chan []*minibus.ReceivedMessage, 1)
			go func() {
				msgs, _ := s.ReceiveMessages(context.Background(), 1, nil)
				got <- msgs
			}()
			synctest.Wait()
			sendToSession(t, q, id, "y")
			env.WaitIdle()
			require.Len(t, env.EventsFor(q.Name(), minibus.EventDelivered), 2*(i+1), "P2: the session's waiting receive took y")
			msgs = <-got
			require.Len(t, msgs, 1)
			require.NoError(t, s.CompleteMessage(context.Background(), msgs[0], nil))
			require.NoError(t, s.Close(context.Background()))
		}
	})
}

// P3: a test that holds a received message itself and calls WaitIdle does
// not hang, whether its receive waited or not, while more messages wait
// for nobody, and while the goroutine that received hands the message
// over to the test only after WaitIdle.
func TestP3_HeldMessagesDoNotHangWaitIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", nil)
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		sendBodies(t, q, "a", "b")
		held, err := r.ReceiveMessages(context.Background(), 1, nil)
		require.NoError(t, err)
		env.WaitIdle() // a held, b waits for nobody

		// A receive that waited, its message handed over an unbuffered
		// channel the test reads after WaitIdle.
		_, err = r.ReceiveMessages(context.Background(), 1, nil) // b
		require.NoError(t, err)
		handed := make(chan *minibus.ReceivedMessage)
		go func() {
			msgs, err := r.ReceiveMessages(context.Background(), 1, nil)
			if err != nil {
				close(handed)
				return
			}
			handed <- msgs[0]
		}()
		synctest.Wait()
		sendBodies(t, q, "c")
		env.WaitIdle()
		c := <-handed
		require.Equal(t, "c", string(c.Body))
		env.WaitIdle()
		require.NoError(t, r.CompleteMessage(context.Background(), held[0], nil))
		require.NoError(t, r.CompleteMessage(context.Background(), c, nil))
	})
}

// P2 and P3 over the server's pattern: a pump goroutine waits in
// ReceiveMessages, hands each message to a remote client, and settles it
// when the client's disposition arrives. WaitIdle neither returns while a
// message waits for the pump nor hangs while the client holds messages.
func TestP3_PumpToARemoteClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", nil)
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		remote := make(chan *minibus.ReceivedMessage, 100) // the wire
		pumped := make(chan error, 1)
		go func() {
			for {
				msgs, err := r.ReceiveMessages(ctx, 10, nil)
				if err != nil {
					pumped <- err
					return
				}
				for _, m := range msgs {
					remote <- m
				}
			}
		}()
		for i := range 5 {
			synctest.Wait() // the pump waits
			id := fmt.Sprint("m", i)
			sendBodies(t, q, id)
			env.WaitIdle()
			require.True(t, delivered(env, id), "P2: WaitIdle returned before the pump took %s", id)
		}
		require.Len(t, remote, 5, "the client holds five messages, unsettled")
		env.WaitIdle()
		for range 5 { // the client's dispositions arrive
			require.NoError(t, r.CompleteMessage(context.Background(), <-remote, nil))
		}
		require.Len(t, env.EventsOf(minibus.EventCompleted), 5)
		cancel()
		require.ErrorIs(t, <-pumped, context.Canceled)
	})
}

// Every way a waiting receive or accept ends leaves nothing for WaitIdle:
// after its ctx ends, its receiver (or session receiver) closes, or its
// MaxWaitTime passes, a message sent makes no call busy, and WaitIdle
// returns at once.
func TestP2_EndedReceivesLeaveNothing(t *testing.T) {
	type started struct {
		done  <-chan error
		close func() error // the receiver's Close
	}
	receive := func(ctx context.Context, r msgReceiver, opts *minibus.ReceiveMessagesOptions) started {
		done := make(chan error, 1)
		go func() {
			_, err := r.ReceiveMessages(ctx, 1, opts)
			done <- err
		}()
		return started{done, func() error { return r.Close(context.Background()) }}
	}
	plain := func(t *testing.T, q, _ *minibus.Queue, ctx context.Context, opts *minibus.ReceiveMessagesOptions) started {
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		return receive(ctx, r, opts)
	}
	session := func(t *testing.T, _, sq *minibus.Queue, ctx context.Context) started {
		s, err := sq.AcceptSession(ctx, "s", nil)
		require.NoError(t, err)
		return receive(ctx, s, nil)
	}
	ends := []struct {
		name  string
		start func(t *testing.T, q, sq *minibus.Queue, ctx context.Context) started
		end   func(t *testing.T, env *minibustest.Env, s started, cancel func())
		want  error
	}{
		{name: "ctx", start: func(t *testing.T, q, sq *minibus.Queue, ctx context.Context) started {
			return plain(t, q, sq, ctx, nil)
		}, end: func(_ *testing.T, _ *minibustest.Env, _ started, cancel func()) { cancel() }, want: context.Canceled},
		{name: "MaxWaitTime", start: func(t *testing.T, q, sq *minibus.Queue, ctx context.Context) started {
			return plain(t, q, sq, ctx, &minibus.ReceiveMessagesOptions{MaxWaitTime: time.Second})
		}, end: func(_ *testing.T, env *minibustest.Env, _ started, _ func()) { env.Advance(time.Second) }},
		{name: "close", start: func(t *testing.T, q, sq *minibus.Queue, ctx context.Context) started {
			return plain(t, q, sq, ctx, nil)
		}, end: func(t *testing.T, _ *minibustest.Env, s started, _ func()) { require.NoError(t, s.close()) }, want: minibus.ErrClosed},
		{name: "session ctx", start: session,
			end: func(_ *testing.T, _ *minibustest.Env, _ started, cancel func()) { cancel() }, want: context.Canceled},
		{name: "session close", start: session,
			end: func(t *testing.T, _ *minibustest.Env, s started, _ func()) { require.NoError(t, s.close()) }, want: minibus.ErrClosed},
		{name: "session lock lost", start: session,
			end: func(_ *testing.T, env *minibustest.Env, _ started, _ func()) { env.Advance(time.Minute) }, want: minibus.ErrSessionLockLost},
		{name: "accept ctx", start: func(_ *testing.T, _, sq *minibus.Queue, ctx context.Context) started {
			done := make(chan error, 1)
			go func() {
				_, err := sq.AcceptNextSession(ctx, nil)
				done <- err
			}()
			return started{done: done}
		}, end: func(_ *testing.T, _ *minibustest.Env, _ started, cancel func()) { cancel() }, want: context.Canceled},
	}
	for _, x := range ends {
		t.Run(x.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				env := minibustest.New(t)
				q := mkQueue(t, env, "q", nil)
				sq := mkQueue(t, env, "sq", &minibus.QueueProperties{RequiresSession: true})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				s := x.start(t, q, sq, ctx)
				synctest.Wait()
				x.end(t, env, s, cancel)
				err := <-s.done
				if x.want == nil {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, x.want)
				}
				sendBodies(t, q, "after")
				sendToSession(t, sq, "s", "after")
				env.WaitIdle() // a call left registered would hold it
				require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount)
				require.EqualValues(t, 1, sq.RuntimeProperties().ActiveMessageCount)
			})
		})
	}
}
