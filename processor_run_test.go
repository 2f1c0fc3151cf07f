package minibus_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/stretchr/testify/require"
)

// Tests of Processor.Run: its errors, its shutdown when ctx ends (a stuck
// handler included), and its whole life inside synctest.Test.

// Run returns ErrNotFound or ErrClosed at once for a deleted entity or a
// closed namespace, and when that happens while it runs; a second Run while
// one runs is ErrInvalidArgument; Started is closed while Run runs; a
// processor can run again after Run returned.
func TestProcessor_RunErrors(t *testing.T) {
	ok := func(context.Context, *minibus.ReceivedMessage) error { return nil }
	ctx := context.Background()

	t.Run("at once", func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", nil)
		sq := mkQueue(t, env, "s", &minibus.QueueProperties{RequiresSession: true})
		p, err := q.NewProcessor(ok, nil)
		require.NoError(t, err)
		sp, err := sq.NewSessionProcessor(ok, nil)
		require.NoError(t, err)
		require.NoError(t, env.Namespace().DeleteQueue("q"))
		requireSentinel(t, p.Run(ctx), minibus.ErrNotFound, `"q"`)
		require.NoError(t, env.Namespace().Close())
		require.ErrorIs(t, sp.Run(ctx), minibus.ErrClosed)
	})

	t.Run("second Run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			env := minibustest.New(t)
			q := mkQueue(t, env, "q", nil)
			p, err := q.NewProcessor(ok, nil)
			require.NoError(t, err)
			started := p.Started()
			select {
			case <-started:
				t.Fatal("Started is closed before Run")
			default:
			}
			rctx, cancel := context.WithCancel(ctx)
			done := runAsync(t, p, rctx)
			<-started
			requireSentinel(t, p.Run(ctx), minibus.ErrInvalidArgument, "running already")
			requireRunning(t, done)
			cancel()
			require.NoError(t, runResult(t, done))
			select {
			case <-p.Started():
				t.Fatal("Started is closed after Run returned")
			default:
			}
			// It runs again.
			stop := env.Start(p)
			sendBodies(t, q, "a")
			synctest.Wait()
			env.WaitIdle()
			require.Zero(t, q.RuntimeProperties().TotalMessageCount)
			require.NoError(t, stop())
			// A Run whose ctx has ended returns nil.
			cancel()
			require.NoError(t, p.Run(rctx))
		})
	})

	deleted := func(t *testing.T, session bool, sub bool) {
		synctest.Test(t, func(t *testing.T) {
			env := minibustest.New(t)
			ns := env.Namespace()
			h := newHolder(t)
			var p *minibus.Processor
			var err error
			var remove func() error
			var send sender
			if sub {
				topic, terr := ns.CreateTopic("t", nil)
				require.NoError(t, terr)
				s, serr := topic.CreateSubscription("s", &minibus.SubscriptionProperties{RequiresSession: session})
				require.NoError(t, serr)
				if session {
					p, err = s.NewSessionProcessor(h.handle, nil)
				} else {
					p, err = s.NewProcessor(h.handle, nil)
				}
				remove = func() error { return topic.DeleteSubscription("s") }
				send = topic
			} else {
				q := mkQueue(t, env, "q", &minibus.QueueProperties{RequiresSession: session})
				if session {
					p, err = q.NewSessionProcessor(h.handle, nil)
				} else {
					p, err = q.NewProcessor(h.handle, nil)
				}
				remove = func() error { return ns.DeleteQueue("q") }
				send = q
			}
			require.NoError(t, err)
			done := runAsync(t, p, ctx)
			// A message in hand when the entity goes: Run waits for its
			// handler, whose settlement fails.
			sendToSession(t, send, "s", "a")
			c := h.next(t)
			synctest.Wait() // every session loop waits in AcceptNextSession (see TestSessionProcessor_DeleteRace)
			require.NoError(t, remove())
			synctest.Wait()
			requireRunning(t, done)
			c.reply <- nil
			require.ErrorIs(t, runResult(t, done), minibus.ErrNotFound)
		})
	}
	t.Run("queue deleted", func(t *testing.T) { deleted(t, false, false) })
	t.Run("session queue deleted", func(t *testing.T) { deleted(t, true, false) })
	t.Run("subscription deleted", func(t *testing.T) { deleted(t, false, true) })
	t.Run("session subscription deleted", func(t *testing.T) { deleted(t, true, true) })

	t.Run("namespace closed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			env := minibustest.New(t)
			q := mkQueue(t, env, "q", nil)
			sq := mkQueue(t, env, "s", &minibus.QueueProperties{RequiresSession: true})
			p, err := q.NewProcessor(ok, &minibus.ProcessorOptions{MaxConcurrentCalls: 4})
			require.NoError(t, err)
			sp, err := sq.NewSessionProcessor(ok, nil)
			require.NoError(t, err)
			done := runAsync(t, p, ctx)
			sdone := runAsync(t, sp, ctx)
			synctest.Wait()
			require.NoError(t, env.Namespace().Close())
			require.ErrorIs(t, runResult(t, done), minibus.ErrClosed)
			require.ErrorIs(t, runResult(t, sdone), minibus.ErrClosed)
			require.ErrorIs(t, env.Namespace().WaitIdle(ctx), minibus.ErrClosed)
		})
	})
}

// When Run's ctx ends, the handlers' ctx ends too; a result returned after
// that is still settled, and Run returns once the handlers return, without
// the clock moving.
func TestProcessor_ResultAfterCancelIsSettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", nil)
		entered := make(chan struct{}, 3)
		p, err := q.NewProcessor(func(ctx context.Context, m *minibus.ReceivedMessage) error {
			entered <- struct{}{}
			<-ctx.Done()
			switch string(m.Body) {
			case "complete":
				return nil
			case "dead":
				return &minibus.DeadLetterError{Reason: "Late"}
			}
			return ctx.Err()
		}, &minibus.ProcessorOptions{MaxConcurrentCalls: 3})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := runAsync(t, p, ctx)
		sendBodies(t, q, "complete", "dead", "retry")
		for range 3 {
			<-entered
		}
		synctest.Wait()
		requireRunning(t, done)
		cancel()
		require.NoError(t, runResult(t, done))
		require.Empty(t, entered, "no message taken after ctx ended (retry was abandoned, available again)")
		require.Equal(t, epoch, env.Clock().Now())
		require.Equal(t, []string{
			"Abandoned q seq=3 id=retry dc=1 at=+0s",
			"Completed q seq=1 id=complete dc=1 at=+0s",
			"DeadLettered q seq=2 id=dead dc=1 reason=Late at=+0s",
		}, sortedLines(eventLines(env.Events(), "q", minibus.EventCompleted, minibus.EventDeadLettered, minibus.EventAbandoned)))
		props := q.RuntimeProperties()
		require.EqualValues(t, 1, props.ActiveMessageCount)
		require.EqualValues(t, 1, props.DeadLetterMessageCount)
	})
}

// A handler that never returns delays Run's return by at most the entity's
// LockDuration of the namespace clock after ctx ends; its lock is no longer
// renewed, so it ends and the message is delivered again.
func TestProcessor_StuckHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logs := debugLogger()
		env := minibustest.New(t, minibus.WithLogger(logger))
		q := mkQueue(t, env, "q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
		h := newHolder(t)
		p, err := q.NewProcessor(h.handle, nil) // renewal: 5m
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := runAsync(t, p, ctx)
		sendBodies(t, q, "x")
		stuck := h.next(t)
		synctest.Wait()
		env.Clock().Add(45 * time.Second) // renewed at +30s until +60s
		synctest.Wait()
		_ = q.RuntimeProperties()
		require.Empty(t, eventLines(env.Events(), "q", minibus.EventLockLost))

		cancel() // at +45s
		synctest.Wait()
		require.ErrorIs(t, stuck.ctx.Err(), context.Canceled, "the handler's ctx ends with Run's")
		requireRunning(t, done)
		env.Clock().Add(15 * time.Second) // +60s: the lock ends, no longer renewed
		synctest.Wait()
		_ = q.RuntimeProperties()
		require.Equal(t, []string{"LockLost q seq=1 id=x dc=1 at=+1m0s"}, eventLines(env.Events(), "q", minibus.EventLockLost))
		requireRunning(t, done)
		env.Clock().Add(15*time.Second - time.Nanosecond)
		synctest.Wait()
		requireRunning(t, done)
		env.Clock().Add(time.Nanosecond) // +75s: ctx's end + LockDuration
		require.NoError(t, runResult(t, done))
		env.WaitIdle() // Run returned: its stuck handler is not waited for

		// The message is not lost.
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		defer r.Close(context.Background())
		msgs, err := r.ReceiveMessages(context.Background(), 1, &minibus.ReceiveMessagesOptions{NoWait: true})
		require.NoError(t, err)
		require.Len(t, msgs, 1)
		require.EqualValues(t, 2, msgs[0].DeliveryCount)
		require.NoError(t, r.CompleteMessage(context.Background(), msgs[0], nil))

		stuck.reply <- nil // at last: its settlement fails and is logged
		synctest.Wait()
		require.Contains(t, logs.String(), "settling failed")
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
}

// The processor's whole life inside synctest.Test on the real clock: the
// bubble's fake time drives the retry delay, the lock renewal and Run's
// shutdown limit; no goroutine is left behind.
func TestProcessor_LifecycleSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ns := minibus.NewNamespace() // the real clock: in the bubble, fake time
		defer ns.Close()
		q, err := ns.CreateQueue("orders", &minibus.QueueProperties{LockDuration: 30 * time.Second})
		require.NoError(t, err)
		var mu sync.Mutex
		var seen []string
		stuck := make(chan struct{})
		start := time.Now()
		p, err := q.NewProcessor(func(ctx context.Context, m *minibus.ReceivedMessage) error {
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s dc=%d +%v", m.Body, m.DeliveryCount, time.Since(start)))
			mu.Unlock()
			switch string(m.Body) {
			case "flaky":
				if m.DeliveryCount == 1 {
					return errors.New("try again")
				}
			case "slow":
				time.Sleep(3 * time.Minute) // renewed meanwhile
			case "stuck":
				<-stuck
			}
			return nil
		}, &minibus.ProcessorOptions{MaxConcurrentCalls: 4, RetryDelay: func(uint32) time.Duration { return time.Minute }})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := runAsync(t, p, ctx)
		sendBodies(t, q, "ok", "flaky", "slow")
		synctest.Wait()
		time.Sleep(time.Minute) // the flaky retry; slow's lock is renewed meanwhile
		synctest.Wait()
		mu.Lock()
		require.ElementsMatch(t, []string{"ok dc=1 +0s", "flaky dc=1 +0s", "slow dc=1 +0s", "flaky dc=2 +1m0s"}, seen)
		mu.Unlock()
		require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount, "slow is still held")
		require.NoError(t, ns.WaitIdle(context.Background())) // until slow returns
		require.Equal(t, 3*time.Minute, time.Since(start))
		mu.Lock()
		require.Len(t, seen, 4, "slow was not delivered again: its lock was renewed")
		mu.Unlock()
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)

		sendBodies(t, q, "stuck")
		synctest.Wait()
		cancelled := time.Now()
		cancel()
		require.NoError(t, runResultWithin(t, done, time.Hour))
		require.Equal(t, 30*time.Second, time.Since(cancelled), "Run gave up after LockDuration")
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		msgs, err := r.ReceiveMessages(context.Background(), 1, nil)
		require.NoError(t, err)
		require.Equal(t, "stuck", string(msgs[0].Body))
		require.EqualValues(t, 2, msgs[0].DeliveryCount)
		require.NoError(t, r.CompleteMessage(context.Background(), msgs[0], nil))
		close(stuck)
		synctest.Wait()
		require.NoError(t, ns.Close())
	})
}
