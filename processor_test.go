package minibus_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/stretchr/testify/require"
)

// Tests of processors from NewProcessor: what a handler's result does to
// its message, concurrency, retries and automatic lock renewal. Run's errors
// and shutdown are in processor_run_test.go, session processors in
// processor_session_test.go, WaitIdle in waitidle_test.go.
//
// Most of these tests run inside synctest.Test on the mock clock of a minibustest.Env:
// synctest.Wait returns once every goroutine of the test, the processor's
// included, is blocked, so a test knows that a processor has taken all it
// can, or that a call is blocked, without sleeping. Moving the mock clock
// (Clock().Add) fires the namespace's timers; a processor polls nothing, so
// between two moves nothing happens.

// Bad input: nil handler, negative concurrency, the wrong kind of entity,
// bad options: ErrInvalidArgument. Zero concurrency is the default.
func TestProcessor_BadInput(t *testing.T) {
	env := minibustest.New(t)
	ns := env.Namespace()
	plain := mkQueue(t, env, "plain", nil)
	sess := mkQueue(t, env, "sess", &minibus.QueueProperties{RequiresSession: true})
	topic, err := ns.CreateTopic("t", nil)
	require.NoError(t, err)
	plainSub, err := topic.CreateSubscription("plain", nil)
	require.NoError(t, err)
	sessSub, err := topic.CreateSubscription("sess", &minibus.SubscriptionProperties{RequiresSession: true})
	require.NoError(t, err)
	ok := func(context.Context, *minibus.ReceivedMessage) error { return nil }

	type plainMaker interface {
		NewProcessor(minibus.Handler, *minibus.ProcessorOptions) (*minibus.Processor, error)
	}
	type sessionMaker interface {
		NewSessionProcessor(minibus.Handler, *minibus.SessionProcessorOptions) (*minibus.Processor, error)
	}
	for _, c := range []struct {
		name string
		m    plainMaker
	}{{`queue "plain"`, plain}, {`subscription "t/Subscriptions/plain"`, plainSub}} {
		_, err := c.m.NewProcessor(nil, nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, "nil Handler")
		_, err = c.m.NewProcessor(ok, &minibus.ProcessorOptions{MaxConcurrentCalls: -1})
		requireSentinel(t, err, minibus.ErrInvalidArgument, "MaxConcurrentCalls -1")
		_, err = c.m.NewProcessor(ok, &minibus.ProcessorOptions{ReceiveMode: 7})
		requireSentinel(t, err, minibus.ErrInvalidArgument, "ReceiveMode")
		_, err = c.m.NewProcessor(ok, &minibus.ProcessorOptions{SubQueue: 7})
		requireSentinel(t, err, minibus.ErrInvalidArgument, "SubQueue")
		for _, o := range []*minibus.ProcessorOptions{nil, {}, {MaxConcurrentCalls: 0}, {SubQueue: minibus.SubQueueDeadLetter}} {
			p, err := c.m.NewProcessor(ok, o)
			require.NoError(t, err, c.name)
			require.NotNil(t, p)
		}
	}
	for _, m := range []plainMaker{sess, sessSub} {
		_, err := m.NewProcessor(ok, nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, "use NewSessionProcessor")
		// A session entity's dead-letter queue is read without sessions.
		_, err = m.NewProcessor(ok, &minibus.ProcessorOptions{SubQueue: minibus.SubQueueDeadLetter})
		require.NoError(t, err)
	}
	for _, m := range []sessionMaker{plain, plainSub} {
		_, err := m.NewSessionProcessor(ok, nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, "use NewProcessor")
	}
	for _, m := range []sessionMaker{sess, sessSub} {
		_, err := m.NewSessionProcessor(nil, nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, "nil Handler")
		_, err = m.NewSessionProcessor(ok, &minibus.SessionProcessorOptions{MaxConcurrentSessions: -3})
		requireSentinel(t, err, minibus.ErrInvalidArgument, "MaxConcurrentSessions -3")
		_, err = m.NewSessionProcessor(ok, &minibus.SessionProcessorOptions{ReceiveMode: -1})
		requireSentinel(t, err, minibus.ErrInvalidArgument, "ReceiveMode")
		for _, o := range []*minibus.SessionProcessorOptions{nil, {}, {MaxConcurrentSessions: 0}} {
			_, err := m.NewSessionProcessor(ok, o)
			require.NoError(t, err)
		}
	}

	// A processor of a deleted entity does not run.
	require.NoError(t, ns.DeleteQueue("plain"))
	if p, err := plain.NewProcessor(ok, nil); err == nil {
		requireSentinel(t, p.Run(context.Background()), minibus.ErrNotFound, `"plain"`)
	} else {
		requireSentinel(t, err, minibus.ErrNotFound, `"plain"`)
	}

	// Run: nil processor, nil context.
	var nilP *minibus.Processor
	requireSentinel(t, nilP.Run(context.Background()), minibus.ErrInvalidArgument, "nil *Processor")
	p, err := sess.NewSessionProcessor(ok, nil)
	require.NoError(t, err)
	var nilCtx context.Context
	requireSentinel(t, p.Run(nilCtx), minibus.ErrInvalidArgument, "nil context")
}

// The defaults: MaxConcurrentCalls 0 is one call at a time,
// MaxConcurrentSessions 0 is 8 sessions at once.
func TestProcessor_DefaultConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", nil)
		h := newHolder(t)
		p, err := q.NewProcessor(h.handle, &minibus.ProcessorOptions{MaxConcurrentCalls: 0})
		require.NoError(t, err)
		env.Start(p)
		sendBodies(t, q, "a", "b", "c")
		synctest.Wait()
		cs := h.pending()
		require.Equal(t, []string{"a"}, callBodies(cs), "one call at a time")
		cs[0].reply <- nil
		synctest.Wait()
		cs = h.pending()
		require.Equal(t, []string{"b"}, callBodies(cs))
		cs[0].reply <- nil
		h.next(t).reply <- nil
		synctest.Wait()
		require.EqualValues(t, 1, h.max.Load())

		sq := mkQueue(t, env, "s", &minibus.QueueProperties{RequiresSession: true})
		hs := newHolder(t)
		sp, err := sq.NewSessionProcessor(hs.handle, &minibus.SessionProcessorOptions{MaxConcurrentSessions: 0})
		require.NoError(t, err)
		env.Start(sp)
		for i := range 10 {
			sendToSession(t, sq, "s"+strconv.Itoa(i), "m"+strconv.Itoa(i))
		}
		synctest.Wait()
		cs = hs.pending()
		require.Len(t, cs, 8, "8 sessions at once")
		for _, c := range cs {
			c.reply <- nil
		}
		synctest.Wait()
		cs = hs.pending()
		require.Len(t, cs, 2)
		for _, c := range cs {
			c.reply <- nil
		}
		env.WaitIdle()
		require.EqualValues(t, 8, hs.max.Load())
		require.Zero(t, sq.RuntimeProperties().ActiveMessageCount)
	})
}

// A nil result completes the message; one call at a time handles the
// messages in sequence order; a processor works on a subscription as on a
// queue.
func TestProcessor_CompletesInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", nil)
		topic, err := env.Namespace().CreateTopic("t", nil)
		require.NoError(t, err)
		sub, err := topic.CreateSubscription("s", nil)
		require.NoError(t, err)

		var mu sync.Mutex
		var got []string
		handler := func(_ context.Context, m *minibus.ReceivedMessage) error {
			mu.Lock()
			got = append(got, fmt.Sprintf("%s#%d dc=%d", m.Body, m.SequenceNumber, m.DeliveryCount))
			mu.Unlock()
			return nil
		}
		qp, err := q.NewProcessor(handler, nil)
		require.NoError(t, err)
		sp, err := sub.NewProcessor(handler, nil)
		require.NoError(t, err)
		env.Start(qp)
		env.Start(sp)
		sendBodies(t, q, "a", "b", "c")
		synctest.Wait()
		env.WaitIdle()
		mu.Lock()
		require.Equal(t, []string{"a#1 dc=1", "b#2 dc=1", "c#3 dc=1"}, got)
		got = nil
		mu.Unlock()
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
		require.Len(t, eventLines(env.Events(), "q", minibus.EventCompleted), 3)

		sendBodies(t, topic, "x", "y")
		synctest.Wait()
		env.WaitIdle()
		mu.Lock()
		require.Equal(t, []string{"x#1 dc=1", "y#2 dc=1"}, got)
		mu.Unlock()
		require.Zero(t, sub.RuntimeProperties().TotalMessageCount)
		require.Len(t, eventLines(env.Events(), "t/Subscriptions/s", minibus.EventCompleted), 2)
	})
}

// MaxConcurrentCalls handlers run at once, never more, and a free handler
// takes the next message at once.
func TestProcessor_MaxConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", nil)
		h := newHolder(t)
		p, err := q.NewProcessor(h.handle, &minibus.ProcessorOptions{MaxConcurrentCalls: 3})
		require.NoError(t, err)
		env.Start(p)
		var bodies []string
		for i := range 10 {
			bodies = append(bodies, strconv.Itoa(i))
		}
		sendBodies(t, q, bodies...)
		var running []hcall
		var handled []string
		for len(handled) < 10 {
			synctest.Wait()
			running = append(running, h.pending()...)
			require.LessOrEqual(t, len(running), 3, "running: %v", callBodies(running))
			require.Equal(t, min(3, 10-len(handled)), len(running), "a free handler takes the next message at once")
			// Release the oldest call.
			running[0].reply <- nil
			handled = append(handled, string(running[0].msg.Body))
			running = running[1:]
		}
		env.WaitIdle()
		require.EqualValues(t, 3, h.max.Load())
		require.ElementsMatch(t, bodies, handled, "each message once")
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
}

// A processor holds at most MaxConcurrentCalls messages locked and not
// settled, handled or waiting for a handler, at every moment (issue 42:
// a pool that took one message more than it has free handlers went
// unnoticed, as the handlers never ran more than MaxConcurrentCalls): the
// deliveries not yet settled, counted from the events, never pass 3.
func TestProcessor_MaxConcurrentCallsBoundsTheLocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", nil)
		h := newHolder(t)
		p, err := q.NewProcessor(h.handle, &minibus.ProcessorOptions{MaxConcurrentCalls: 3})
		require.NoError(t, err)
		env.Start(p)
		var bodies []string
		for i := range 10 {
			bodies = append(bodies, strconv.Itoa(i))
		}
		sendBodies(t, q, bodies...)
		// held counts the deliveries the events show taken and not yet
		// settled.
		held := func() int {
			n := 0
			for _, ev := range env.Events() {
				switch ev.Kind {
				case minibus.EventDelivered:
					n++
				case minibus.EventCompleted, minibus.EventAbandoned, minibus.EventDeadLettered,
					minibus.EventDeferred, minibus.EventLockLost, minibus.EventReleased:
					n--
				}
			}
			return n
		}
		var running []hcall
		for handled := 0; handled < 10; handled++ {
			synctest.Wait()
			running = append(running, h.pending()...)
			require.Equal(t, min(3, 10-handled), held(), "messages locked and not settled, with %d handled", handled)
			require.Equal(t, min(3, 10-handled), len(running))
			running[0].reply <- nil
			running = running[1:]
		}
		env.WaitIdle()
		require.Zero(t, held())
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
}

// A *DeadLetterError, returned as is or wrapped, dead-letters the message
// with its reason and description.
func TestProcessor_DeadLetterError(t *testing.T) {
	cause := errors.New("no such customer")
	dl := &minibus.DeadLetterError{Reason: "BadOrder", ErrorDescription: "customer 42", Err: cause}
	require.Equal(t, "dead-letter: BadOrder: customer 42: no such customer", dl.Error())
	require.ErrorIs(t, dl, cause)
	require.Equal(t, cause, dl.Unwrap())
	require.Equal(t, "dead-letter: R", (&minibus.DeadLetterError{Reason: "R"}).Error())
	require.Nil(t, (&minibus.DeadLetterError{}).Unwrap())

	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", nil)
		p, err := q.NewProcessor(func(_ context.Context, m *minibus.ReceivedMessage) error {
			switch string(m.Body) {
			case "plain":
				return &minibus.DeadLetterError{Reason: "Plain", ErrorDescription: "as is"}
			case "wrapped":
				return fmt.Errorf("handling %s: %w", m.Body, dl)
			}
			return fmt.Errorf("twice: %w", fmt.Errorf("once: %w", &minibus.DeadLetterError{Reason: "Deep"}))
		}, &minibus.ProcessorOptions{MaxConcurrentCalls: 3})
		require.NoError(t, err)
		env.Start(p)
		sendBodies(t, q, "plain", "wrapped", "deep")
		synctest.Wait()
		env.WaitIdle()
		props := q.RuntimeProperties()
		require.Zero(t, props.ActiveMessageCount)
		require.EqualValues(t, 3, props.DeadLetterMessageCount)
		dlq, err := q.NewReceiver(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
		require.NoError(t, err)
		defer dlq.Close(context.Background())
		msgs, err := dlq.PeekMessages(context.Background(), 10, nil)
		require.NoError(t, err)
		var got []string
		for _, m := range msgs {
			got = append(got, fmt.Sprintf("%s %s/%s dc=%d", m.Body, m.DeadLetterReason, m.DeadLetterErrorDescription, m.DeliveryCount))
		}
		require.Equal(t, []string{"plain Plain/as is dc=1", "wrapped BadOrder/customer 42 dc=1", "deep Deep/ dc=1"}, got)
		require.Equal(t, []string{
			"DeadLettered q seq=1 id=plain dc=1 reason=Plain at=+0s",
			"DeadLettered q seq=2 id=wrapped dc=1 reason=BadOrder at=+0s",
			"DeadLettered q seq=3 id=deep dc=1 reason=Deep at=+0s",
		}, sortedLines(eventLines(env.Events(), "q", minibus.EventDeadLettered)))
	})
}

// A failed call is retried after RetryDelay on the namespace clock, which
// gets the DeliveryCount of the failed delivery (1 on the first failure);
// meanwhile the message is counted but out of reach; at MaxDeliveryCount it
// is dead-lettered (an abandon then a dead-lettering).
func TestProcessor_RetryDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", &minibus.QueueProperties{MaxDeliveryCount: 3})
		var mu sync.Mutex
		var asked []uint32
		h := newHolder(t)
		p, err := q.NewProcessor(h.handle, &minibus.ProcessorOptions{
			RetryDelay: func(n uint32) time.Duration {
				mu.Lock()
				asked = append(asked, n)
				mu.Unlock()
				return time.Duration(n) * 10 * time.Second
			},
		})
		require.NoError(t, err)
		env.Start(p)
		sendBodies(t, q, "x")
		boom := errors.New("boom")

		c := h.next(t)
		require.EqualValues(t, 1, c.msg.DeliveryCount)
		c.reply <- boom
		synctest.Wait()
		env.WaitIdle() // waiting for the retry is idle
		require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount, "a message waiting for its retry is counted")
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		defer r.Close(context.Background())
		msgs, err := r.ReceiveMessages(context.Background(), 1, &minibus.ReceiveMessagesOptions{NoWait: true})
		require.NoError(t, err)
		require.Empty(t, msgs, "a message waiting for its retry is out of reach")

		env.Clock().Add(10*time.Second - time.Nanosecond)
		synctest.Wait()
		h.requireNoCall(t)
		env.Clock().Add(time.Nanosecond)
		c = h.next(t)
		require.EqualValues(t, 2, c.msg.DeliveryCount)
		require.EqualValues(t, 1, c.msg.SequenceNumber)
		c.reply <- boom
		synctest.Wait() // abandoned at +10s

		env.Clock().Add(20*time.Second - time.Nanosecond)
		synctest.Wait()
		h.requireNoCall(t)
		env.Clock().Add(time.Nanosecond)
		c = h.next(t)
		require.EqualValues(t, 3, c.msg.DeliveryCount)
		c.reply <- boom
		synctest.Wait()
		env.WaitIdle()

		mu.Lock()
		require.Equal(t, []uint32{1, 2, 3}, asked)
		mu.Unlock()
		props := q.RuntimeProperties()
		require.Zero(t, props.ActiveMessageCount)
		require.EqualValues(t, 1, props.DeadLetterMessageCount)
		require.Equal(t, []string{
			"Sent q seq=1 id=x dc=0 at=+0s",
			"Delivered q seq=1 id=x dc=1 at=+0s",
			"Abandoned q seq=1 id=x dc=1 at=+0s",
			"Delivered q seq=1 id=x dc=2 at=+10s",
			"Abandoned q seq=1 id=x dc=2 at=+10s",
			"Delivered q seq=1 id=x dc=3 at=+30s",
			"Abandoned q seq=1 id=x dc=3 at=+30s",
			"DeadLettered q seq=1 id=x dc=3 reason=MaxDeliveryCountExceeded at=+30s",
		}, eventLines(env.Events(), "q", minibus.EventSent, minibus.EventDelivered, minibus.EventAbandoned, minibus.EventDeadLettered))
	})
}

// Without RetryDelay a failed message is delivered again at once; a
// negative delay is no delay; a delay longer than the message's time to live
// lets it expire then (the message is not lost: it expires as any other).
func TestProcessor_RetryWithoutDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", &minibus.QueueProperties{DeadLetteringOnMessageExpiration: true})
		var mu sync.Mutex
		var seen []string
		fail := map[string]int{"a": 2, "b": 1}
		handler := func(_ context.Context, m *minibus.ReceivedMessage) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("%s dc=%d", m.Body, m.DeliveryCount))
			if fail[string(m.Body)] > 0 {
				fail[string(m.Body)]--
				return errors.New("not yet")
			}
			return nil
		}
		p, err := q.NewProcessor(handler, nil)
		require.NoError(t, err)
		stop := env.Start(p)
		sendBodies(t, q, "a")
		synctest.Wait()
		env.WaitIdle()
		require.NoError(t, stop())

		p, err = q.NewProcessor(handler, &minibus.ProcessorOptions{RetryDelay: func(uint32) time.Duration { return -time.Hour }})
		require.NoError(t, err)
		stop = env.Start(p)
		sendBodies(t, q, "b")
		synctest.Wait()
		env.WaitIdle()
		require.NoError(t, stop())
		mu.Lock()
		require.Equal(t, []string{"a dc=1", "a dc=2", "a dc=3", "b dc=1", "b dc=2"}, seen)
		mu.Unlock()
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)

		// A retry after the message's expiry: it expires at ExpiresAt.
		p, err = q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error { return errors.New("no") },
			&minibus.ProcessorOptions{RetryDelay: func(uint32) time.Duration { return time.Hour }})
		require.NoError(t, err)
		env.Start(p)
		require.NoError(t, q.SendMessage(context.Background(), &minibus.Message{MessageID: "c", TimeToLive: time.Minute}, nil))
		synctest.Wait()
		env.WaitIdle()
		env.Clock().Add(time.Minute)
		synctest.Wait()
		env.WaitIdle()
		require.EqualValues(t, 1, q.RuntimeProperties().DeadLetterMessageCount)
		require.Equal(t, []string{
			"Expired q seq=3 id=c dc=1 at=+1m0s",
			"DeadLettered q seq=3 id=c dc=1 reason=TTLExpiredException at=+1m0s",
		}, eventLines(env.Events(), "q", minibus.EventExpired, minibus.EventDeadLettered))
	})
}

// A panic in the handler is recovered, logged, and counts as a failure: the
// message is retried; the processor goes on.
func TestProcessor_PanicIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logs := debugLogger()
		env := minibustest.New(t, minibus.WithLogger(logger))
		q := mkQueue(t, env, "q", nil)
		var calls atomic.Int64
		var asked atomic.Uint32
		p, err := q.NewProcessor(func(_ context.Context, m *minibus.ReceivedMessage) error {
			if calls.Add(1) == 1 {
				panic("kaboom")
			}
			return nil
		}, &minibus.ProcessorOptions{RetryDelay: func(n uint32) time.Duration { asked.Store(n); return 0 }})
		require.NoError(t, err)
		env.Start(p)
		sendBodies(t, q, "x", "y")
		synctest.Wait()
		env.WaitIdle()
		require.EqualValues(t, 3, calls.Load())
		require.EqualValues(t, 1, asked.Load(), "RetryDelay gets the panicked delivery's count")
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
		require.Contains(t, logs.String(), "kaboom")
		require.Contains(t, logs.String(), "panicked")
		require.Equal(t, []string{"Abandoned q seq=1 id=x dc=1 at=+0s"}, eventLines(env.Events(), "q", minibus.EventAbandoned))
	})
}

// In receive-and-delete mode the message is gone before the handler runs:
// a failure is logged, not retried.
func TestProcessor_ReceiveAndDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logs := debugLogger()
		env := minibustest.New(t, minibus.WithLogger(logger))
		q := mkQueue(t, env, "q", nil)
		var calls, locked atomic.Int64
		p, err := q.NewProcessor(func(_ context.Context, m *minibus.ReceivedMessage) error {
			calls.Add(1)
			if m.LockToken != [16]byte{} {
				locked.Add(1)
			}
			return errors.New("lost cause")
		}, &minibus.ProcessorOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete, MaxConcurrentCalls: 2})
		require.NoError(t, err)
		env.Start(p)
		sendBodies(t, q, "a", "b")
		synctest.Wait()
		env.WaitIdle()
		require.EqualValues(t, 2, calls.Load())
		require.Zero(t, locked.Load(), "no lock in receive-and-delete mode")
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
		require.Contains(t, logs.String(), "lost cause")
		require.Empty(t, eventLines(env.Events(), "q", minibus.EventAbandoned, minibus.EventCompleted))
	})
}

// A processor of a dead-letter queue.
func TestProcessor_DeadLetterQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", &minibus.QueueProperties{RequiresSession: true})
		sendToSession(t, q, "s", "a")
		s, err := q.AcceptSession(context.Background(), "s", nil)
		require.NoError(t, err)
		msgs, err := s.ReceiveMessages(context.Background(), 1, nil)
		require.NoError(t, err)
		require.NoError(t, s.DeadLetterMessage(context.Background(), msgs[0], &minibus.DeadLetterOptions{Reason: "R"}))
		require.NoError(t, s.Close(context.Background()))

		var reasons []string
		var mu sync.Mutex
		p, err := q.NewProcessor(func(_ context.Context, m *minibus.ReceivedMessage) error {
			mu.Lock()
			reasons = append(reasons, m.DeadLetterReason)
			mu.Unlock()
			return nil
		}, &minibus.ProcessorOptions{SubQueue: minibus.SubQueueDeadLetter})
		require.NoError(t, err)
		env.Start(p)
		synctest.Wait()
		env.WaitIdle()
		mu.Lock()
		require.Equal(t, []string{"R"}, reasons)
		mu.Unlock()
		require.Zero(t, q.RuntimeProperties().DeadLetterMessageCount)
		require.Equal(t, []string{"Completed q sq=DeadLetter seq=1 id=a dc=2 at=+0s"}, eventLines(env.Events(), "q", minibus.EventCompleted))
	})
}

// Automatic renewal: a held handler's lock is extended at each of its ends,
// on the namespace clock, past several LockDurations, until receipt +
// MaxAutoLockRenewalDuration; then it ends and the message is delivered
// again. The late handler's settlement fails and is logged.
func TestProcessor_AutoRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logs := debugLogger()
		env := minibustest.New(t, minibus.WithLogger(logger))
		q := mkQueue(t, env, "q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
		h := newHolder(t)
		p, err := q.NewProcessor(h.handle, &minibus.ProcessorOptions{MaxConcurrentCalls: 2, MaxAutoLockRenewalDuration: 2 * time.Minute})
		require.NoError(t, err)
		env.Start(p)
		sendBodies(t, q, "x")
		first := h.next(t)
		synctest.Wait() // the free handler waits in a receive before the clock moves
		require.Equal(t, epoch.Add(30*time.Second), first.msg.LockedUntil)

		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		defer r.Close(context.Background())
		for range 3 { // +30s, +60s, +90s: renewed each time
			env.Clock().Add(30 * time.Second)
			synctest.Wait()
			msgs, err := r.ReceiveMessages(context.Background(), 1, &minibus.ReceiveMessagesOptions{NoWait: true})
			require.NoError(t, err)
			require.Empty(t, msgs, "the lock is renewed at %v", env.Clock().Now())
			h.requireNoCall(t)
		}
		require.Empty(t, eventLines(env.Events(), "q", minibus.EventLockLost))

		env.Clock().Add(30 * time.Second) // +120s: the renewal limit
		second := h.next(t)
		require.Equal(t, first.msg.SequenceNumber, second.msg.SequenceNumber)
		require.EqualValues(t, 2, second.msg.DeliveryCount)
		require.Equal(t, []string{"LockLost q seq=1 id=x dc=1 at=+2m0s"}, eventLines(env.Events(), "q", minibus.EventLockLost))

		second.reply <- nil
		synctest.Wait()
		first.reply <- nil // too late: its lock is gone
		synctest.Wait()
		env.WaitIdle()
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
		require.Equal(t, []string{"Completed q seq=1 id=x dc=2 at=+2m0s"}, eventLines(env.Events(), "q", minibus.EventCompleted))
		require.Contains(t, logs.String(), "settling failed")
	})
}

// MaxAutoLockRenewalDuration < 0: no renewal; the lock ends after
// LockDuration and the message is delivered again.
func TestProcessor_RenewalDisabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
		h := newHolder(t)
		p, err := q.NewProcessor(h.handle, &minibus.ProcessorOptions{MaxConcurrentCalls: 2, MaxAutoLockRenewalDuration: -1})
		require.NoError(t, err)
		env.Start(p)
		sendBodies(t, q, "x")
		first := h.next(t)
		synctest.Wait() // the free handler waits in a receive before the clock moves
		env.Clock().Add(30*time.Second - time.Nanosecond)
		synctest.Wait()
		h.requireNoCall(t)
		env.Clock().Add(time.Nanosecond)
		second := h.next(t)
		require.EqualValues(t, 2, second.msg.DeliveryCount)
		require.Equal(t, []string{"LockLost q seq=1 id=x dc=1 at=+30s"}, eventLines(env.Events(), "q", minibus.EventLockLost))
		second.reply <- nil
		first.reply <- nil
		synctest.Wait()
		env.WaitIdle()
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
}
