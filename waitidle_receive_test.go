package minibus_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/stretchr/testify/require"
)

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
