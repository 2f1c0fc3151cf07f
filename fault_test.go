package minibus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/stretchr/testify/require"
)

// Tests of WithFaultInjector and Operation.

// faultPlan is a fault injector that records what it is asked and fails
// the operations it is told to.
type faultPlan struct {
	mu    sync.Mutex
	asked []string         // "Op entity"
	fail  map[string]error // "Op entity" → error
	boom  any              // when set, the injector panics with it
}

func (f *faultPlan) inject(op minibus.Operation, entity string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := op.String() + " " + entity
	f.asked = append(f.asked, key)
	if f.boom != nil {
		panic(f.boom)
	}
	return f.fail[key]
}

// failing makes op on entity fail with err; nil err clears the plan.
func (f *faultPlan) failing(op minibus.Operation, entity string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = map[string]error{}
	if err != nil {
		f.fail[op.String()+" "+entity] = err
	}
}

// calls returns what the injector was asked since the last calls.
func (f *faultPlan) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.asked
	f.asked = nil
	return out
}

// faultEnv is a namespace with a fault plan and a journal.
type faultEnv struct {
	ns   *minibus.Namespace
	plan *faultPlan
	j    *journal
}

func newFaultEnv(t *testing.T) *faultEnv {
	t.Helper()
	plan := &faultPlan{}
	ns, _, j := observed(t, minibus.WithFaultInjector(plan.inject))
	return &faultEnv{ns: ns, plan: plan, j: j}
}

// state describes everything a failed call must leave as it was: counts,
// and every message of the entity's queues with its state and delivery
// count.
func state(t *testing.T, q interface {
	NewReceiver(*minibus.ReceiverOptions) (*minibus.Receiver, error)
}, counts func() string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(counts())
	for _, sq := range []minibus.SubQueue{minibus.SubQueueNone, minibus.SubQueueDeadLetter} {
		r, err := q.NewReceiver(&minibus.ReceiverOptions{SubQueue: sq})
		if err != nil { // a session entity's main queue
			continue
		}
		msgs, err := r.PeekMessages(context.Background(), 100, &minibus.PeekMessagesOptions{FromSequenceNumber: 1})
		require.NoError(t, err)
		for _, m := range msgs {
			fmt.Fprintf(&b, " %v#%d:%v:dc=%d", sq, m.SequenceNumber, m.State, m.DeliveryCount)
		}
		_ = r.Close(context.Background())
	}
	return b.String()
}

func queueCounts(q *minibus.Queue) func() string {
	return func() string {
		p := q.RuntimeProperties()
		return fmt.Sprintf("active=%d scheduled=%d dead=%d size=%d", p.ActiveMessageCount, p.ScheduledMessageCount, p.DeadLetterMessageCount, p.SizeInBytes)
	}
}

// Each operation fails with the injected error, returned as it is, changes
// nothing and produces no event; the injector is asked with the operation
// and the entity's name ("queue", "topic/Subscriptions/sub"), once per
// call (a SendMessages batch is one OpSend); the same call then succeeds.
func TestFault_EachOperation(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("injected")

	// check fails op on entity, runs call, and checks all of the above.
	check := func(t *testing.T, f *faultEnv, op minibus.Operation, entity string, describe func() string, call func() error) {
		t.Helper()
		before := describe()
		f.j.take()
		f.plan.calls()
		f.plan.failing(op, entity, boom)
		err := call()
		require.Error(t, err)
		require.True(t, err == boom, "the injected error as it is, not %v", err)
		require.Equal(t, []string{op.String() + " " + entity}, f.plan.calls(), "asked once")
		require.Empty(t, f.j.take(), "an injected failure produces no event")
		f.plan.failing(op, entity, nil)
		require.Equal(t, before, describe(), "an injected failure changes nothing")
		require.NoError(t, call(), "the same call without the fault")
	}

	t.Run("send", func(t *testing.T) {
		f := newFaultEnv(t)
		q, err := f.ns.CreateQueue("q", nil)
		require.NoError(t, err)
		desc := func() string { return state(t, q, queueCounts(q)) }
		check(t, f, minibus.OpSend, "q", desc, func() error { return q.SendMessage(ctx, &minibus.Message{}, nil) })
		check(t, f, minibus.OpSend, "q", desc, func() error {
			return q.SendMessages(ctx, []*minibus.Message{{}, {}, {}}, nil)
		})
		check(t, f, minibus.OpSchedule, "q", desc, func() error {
			_, err := q.ScheduleMessages(ctx, []*minibus.Message{{}}, epoch.Add(time.Hour), nil)
			return err
		})
		seqs, err := q.ScheduleMessages(ctx, []*minibus.Message{{}, {}}, epoch.Add(time.Hour), nil)
		require.NoError(t, err)
		require.Equal(t, []int64{6, 7}, seqs, "no failed call took a sequence number")
		check(t, f, minibus.OpCancelScheduled, "q", desc, func() error { return q.CancelScheduledMessages(ctx, seqs[:1], nil) })

		topic, err := f.ns.CreateTopic("t", nil)
		require.NoError(t, err)
		sub, err := topic.CreateSubscription("s", nil)
		require.NoError(t, err)
		tdesc := func() string {
			return state(t, sub, func() string {
				return fmt.Sprint(topic.RuntimeProperties().ScheduledMessageCount, sub.RuntimeProperties().ActiveMessageCount)
			})
		}
		check(t, f, minibus.OpSend, "t", tdesc, func() error { return topic.SendMessage(ctx, &minibus.Message{}, nil) })
		check(t, f, minibus.OpSchedule, "t", tdesc, func() error {
			_, err := topic.ScheduleMessages(ctx, []*minibus.Message{{}}, epoch.Add(time.Hour), nil)
			return err
		})
	})

	t.Run("receive", func(t *testing.T) {
		f := newFaultEnv(t)
		q, err := f.ns.CreateQueue("q", nil)
		require.NoError(t, err)
		desc := func() string { return state(t, q, queueCounts(q)) }
		require.NoError(t, q.SendMessages(ctx, []*minibus.Message{{}, {}, {}, {}}, nil))
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		defer r.Close(ctx)
		check(t, f, minibus.OpPeek, "q", desc, func() error {
			msgs, err := r.PeekMessages(ctx, 1, nil)
			if err == nil && msgs[0].SequenceNumber != 1 {
				return fmt.Errorf("the failed peek moved the cursor: got #%d", msgs[0].SequenceNumber)
			}
			return err
		})
		var got *minibus.ReceivedMessage
		check(t, f, minibus.OpReceive, "q", desc, func() error {
			msgs, err := r.ReceiveMessages(ctx, 1, &minibus.ReceiveMessagesOptions{NoWait: true})
			if err == nil {
				got = msgs[0]
			}
			return err
		})
		require.EqualValues(t, 1, got.DeliveryCount, "the failed receive counted no delivery")
		require.NoError(t, r.DeferMessage(ctx, got, nil))
		check(t, f, minibus.OpReceive, "q", desc, func() error {
			msgs, err := r.ReceiveDeferredMessages(ctx, []int64{got.SequenceNumber}, nil)
			if err == nil {
				got = msgs[0]
			}
			return err
		})
		require.EqualValues(t, 2, got.DeliveryCount)
		require.NoError(t, r.CompleteMessage(ctx, got, nil))
		check(t, f, minibus.OpReceive, "q", desc, func() error {
			_, err := r.DeleteMessages(ctx, 1, nil)
			return err
		})
		require.EqualValues(t, 2, q.RuntimeProperties().ActiveMessageCount)

		// A subscription is named "topic/Subscriptions/sub".
		topic, err := f.ns.CreateTopic("t", nil)
		require.NoError(t, err)
		sub, err := topic.CreateSubscription("s", nil)
		require.NoError(t, err)
		require.NoError(t, topic.SendMessage(ctx, &minibus.Message{}, nil))
		sr, err := sub.NewReceiver(nil)
		require.NoError(t, err)
		defer sr.Close(ctx)
		sdesc := func() string {
			return state(t, sub, func() string { return fmt.Sprint(sub.RuntimeProperties().ActiveMessageCount) })
		}
		check(t, f, minibus.OpReceive, "t/Subscriptions/s", sdesc, func() error {
			_, err := sr.ReceiveMessages(ctx, 1, &minibus.ReceiveMessagesOptions{NoWait: true})
			return err
		})
		dlq, err := sub.NewReceiver(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
		require.NoError(t, err)
		defer dlq.Close(ctx)
		check(t, f, minibus.OpPeek, "t/Subscriptions/s", sdesc, func() error {
			_, err := dlq.PeekMessages(ctx, 1, nil)
			return err
		})
	})

	t.Run("settle", func(t *testing.T) {
		f := newFaultEnv(t)
		q, err := f.ns.CreateQueue("q", nil)
		require.NoError(t, err)
		desc := func() string { return state(t, q, queueCounts(q)) }
		require.NoError(t, q.SendMessages(ctx, []*minibus.Message{{}, {}, {}, {}, {}, {}}, nil))
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		defer r.Close(ctx)
		msgs, err := r.ReceiveMessages(ctx, 6, nil)
		require.NoError(t, err)
		require.Len(t, msgs, 6)
		lockedUntil := msgs[4].LockedUntil
		check(t, f, minibus.OpRenewLock, "q", desc, func() error {
			err := r.RenewMessageLock(ctx, msgs[4], nil)
			if err != nil && !msgs[4].LockedUntil.Equal(lockedUntil) {
				return errors.New("the failed renewal moved LockedUntil")
			}
			return err
		})
		check(t, f, minibus.OpComplete, "q", desc, func() error { return r.CompleteMessage(ctx, msgs[0], nil) })
		check(t, f, minibus.OpAbandon, "q", desc, func() error { return r.AbandonMessage(ctx, msgs[1], nil) })
		check(t, f, minibus.OpDeadLetter, "q", desc, func() error {
			return r.DeadLetterMessage(ctx, msgs[2], &minibus.DeadLetterOptions{Reason: "R"})
		})
		check(t, f, minibus.OpDefer, "q", desc, func() error { return r.DeferMessage(ctx, msgs[3], nil) })
		check(t, f, minibus.OpRelease, "q", desc, func() error { return r.ReleaseMessage(ctx, msgs[5], nil) })
		p := q.RuntimeProperties()
		require.EqualValues(t, 4, p.ActiveMessageCount) // abandoned, deferred, locked, released
		require.EqualValues(t, 1, p.DeadLetterMessageCount)
	})

	t.Run("sessions", func(t *testing.T) {
		f := newFaultEnv(t)
		q, err := f.ns.CreateQueue("q", &minibus.QueueProperties{RequiresSession: true})
		require.NoError(t, err)
		desc := func() string {
			ids, err := q.ListSessions(ctx)
			require.NoError(t, err)
			return state(t, q, queueCounts(q)) + fmt.Sprint(ids)
		}
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{SessionID: "a"}, nil))
		var s *minibus.SessionReceiver
		check(t, f, minibus.OpAcceptSession, "q", desc, func() error {
			var err error
			s, err = q.AcceptSession(ctx, "a", nil)
			return err
		})
		lockedUntil := s.LockedUntil()
		check(t, f, minibus.OpRenewLock, "q", desc, func() error {
			err := s.RenewSessionLock(ctx, nil)
			if err != nil && !s.LockedUntil().Equal(lockedUntil) {
				return errors.New("the failed renewal moved LockedUntil")
			}
			return err
		})
		require.NoError(t, s.Close(ctx))
		check(t, f, minibus.OpAcceptSession, "q", desc, func() error {
			var err error
			s, err = q.AcceptNextSession(ctx, nil)
			return err
		})
		require.Equal(t, "a", s.SessionID(), "the failed AcceptNextSession did not hold the session")
		require.NoError(t, s.Close(ctx))
	})
}

// A panicking injector fails the call with an error that says so, instead
// of crashing; nothing changes.
func TestFault_PanickingInjector(t *testing.T) {
	ctx := context.Background()
	f := newFaultEnv(t)
	q, err := f.ns.CreateQueue("q", nil)
	require.NoError(t, err)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{}, nil))
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(ctx)
	f.j.take()
	f.plan.mu.Lock()
	f.plan.boom = "injector bug"
	f.plan.mu.Unlock()
	err = q.SendMessage(ctx, &minibus.Message{}, nil)
	require.ErrorContains(t, err, "fault injector panicked")
	require.ErrorContains(t, err, "injector bug")
	require.ErrorContains(t, err, `queue "q"`)
	require.ErrorIs(t, err, minibus.ErrInvalidArgument, "it wraps a sentinel, as every error does")
	_, err = r.ReceiveMessages(ctx, 1, nil)
	require.ErrorContains(t, err, "fault injector panicked")
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
	require.Empty(t, f.j.take())
	require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount)
	f.plan.mu.Lock()
	f.plan.boom = nil
	f.plan.mu.Unlock()
	msgs, err := r.ReceiveMessages(ctx, 1, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, msgs[0].DeliveryCount)
}

// Each WithFaultInjector adds one; the first error wins.
func TestFault_SeveralInjectors(t *testing.T) {
	ctx := context.Background()
	first, second := &faultPlan{}, &faultPlan{}
	ns := minibus.NewNamespace(minibus.WithFaultInjector(nil), minibus.WithFaultInjector(first.inject), minibus.WithFaultInjector(second.inject))
	defer ns.Close()
	q, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{}, nil))
	require.Equal(t, []string{"Send q"}, first.calls())
	require.Equal(t, []string{"Send q"}, second.calls())

	errSecond := errors.New("second")
	second.failing(minibus.OpSend, "q", errSecond)
	require.ErrorIs(t, q.SendMessage(ctx, &minibus.Message{}, nil), errSecond)
	errFirst := errors.New("first")
	first.failing(minibus.OpSend, "q", errFirst)
	require.ErrorIs(t, q.SendMessage(ctx, &minibus.Message{}, nil), errFirst)
	require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount)
}

// Each WithFaultInjector option adds one and all are called: the later
// ones also when an earlier one fails the call. (A counting injector given
// to minibustest.New sees the calls FailNext fails.)
func TestFault_AllInjectorsAreCalled(t *testing.T) {
	first, second := &faultPlan{}, &faultPlan{}
	ns := minibus.NewNamespace(minibus.WithFaultInjector(first.inject), minibus.WithFaultInjector(second.inject))
	defer ns.Close()
	q, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	first.failing(minibus.OpSend, "q", errors.New("first"))
	require.Error(t, q.SendMessage(context.Background(), &minibus.Message{}, nil))
	require.Equal(t, []string{"Send q"}, second.calls(), "the second injector is called too")

	// A panic of the first is its error: the second is asked all the same.
	first.mu.Lock()
	first.boom = "injector bug"
	first.mu.Unlock()
	err = q.SendMessage(context.Background(), &minibus.Message{}, nil)
	require.ErrorContains(t, err, "fault injector panicked")
	require.Equal(t, []string{"Send q"}, second.calls(), "the second injector is called after a panic")
}

// A processor's own receives and settlements go through the fault
// injector: a failed settlement leaves the message locked until its lock
// ends, then it is delivered again.
func TestFault_Processor(t *testing.T) {
	boom := errors.New("injected")
	for _, c := range []struct {
		op     minibus.Operation
		result error
	}{
		{minibus.OpComplete, nil},
		{minibus.OpAbandon, errors.New("retry")},
		{minibus.OpDeadLetter, &minibus.DeadLetterError{Reason: "R"}},
	} {
		t.Run(c.op.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logger, logs := debugLogger()
				rec := &faultPlan{}
				env := minibustest.New(t, minibus.WithLogger(logger), minibus.WithFaultInjector(rec.inject))
				q := mkQueue(t, env, "q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
				var mu sync.Mutex
				var seen []uint32
				p, err := q.NewProcessor(func(_ context.Context, m *minibus.ReceivedMessage) error {
					mu.Lock()
					seen = append(seen, m.DeliveryCount)
					mu.Unlock()
					if m.DeliveryCount > 1 && c.op == minibus.OpAbandon {
						return nil
					}
					return c.result
				}, &minibus.ProcessorOptions{MaxAutoLockRenewalDuration: -1})
				require.NoError(t, err)
				env.Start(p)
				env.FailNext("q", c.op, 1, boom)
				sendBodies(t, q, "x")
				synctest.Wait()
				env.WaitIdle()
				require.Contains(t, logs.String(), "settling failed")
				require.Contains(t, logs.String(), "injected")
				require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount, "still locked")
				env.Advance(30 * time.Second) // the lock ends: delivered again
				mu.Lock()
				require.Equal(t, []uint32{1, 2}, seen)
				mu.Unlock()
				props := q.RuntimeProperties()
				require.Zero(t, props.ActiveMessageCount)
				if c.op == minibus.OpDeadLetter {
					require.EqualValues(t, 1, props.DeadLetterMessageCount)
				}
				// The failed settlement went through the injector: its error
				// is in the log above.
				require.Contains(t, rec.calls(), "Receive q", "the processor's receives go through the injector")
			})
		})
	}

	t.Run("session", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := &faultPlan{}
			env := minibustest.New(t, minibus.WithFaultInjector(rec.inject))
			q := mkQueue(t, env, "q", &minibus.QueueProperties{RequiresSession: true})
			p, err := q.NewSessionProcessor(func(context.Context, *minibus.ReceivedMessage) error { return nil }, nil)
			require.NoError(t, err)
			env.Start(p)
			sendToSession(t, q, "s", "x")
			synctest.Wait()
			env.WaitIdle()
			asked := rec.calls()
			require.Contains(t, asked, "AcceptSession q")
			require.Contains(t, asked, "Receive q")
			require.Contains(t, asked, "Complete q")
		})
	})
}

// Run blocks until ctx ends, the namespace closes (ErrClosed) or the entity
// is deleted (ErrNotFound): a failed receive of the processor's own (here an
// injected fault) is logged and tried again, and the message that arrives
// next is handled.
func TestFault_ProcessorGoesOnAfterAFailedReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", nil)
		var handled sync.WaitGroup
		handled.Add(1)
		p, err := q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error { handled.Done(); return nil }, nil)
		require.NoError(t, err)
		env.FailNext("q", minibus.OpReceive, 1, errors.New("injected"))
		ctx, cancel := context.WithCancel(context.Background())
		done := runAsync(t, p, ctx)
		sendBodies(t, q, "x")
		synctest.Wait()
		requireRunning(t, done)
		handled.Wait()
		cancel()
		require.NoError(t, runResult(t, done))
	})
}

// The same for a session processor: a failed accept, and a failed receive
// in the session it accepted, are logged and tried again.
func TestFault_SessionProcessorGoesOnAfterAFailedReceive(t *testing.T) {
	for _, op := range []minibus.Operation{minibus.OpAcceptSession, minibus.OpReceive} {
		t.Run(op.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log, buf := debugLogger()
				env := minibustest.New(t, minibus.WithLogger(log))
				q := mkQueue(t, env, "q", &minibus.QueueProperties{RequiresSession: true})
				var handled sync.WaitGroup
				handled.Add(1)
				p, err := q.NewSessionProcessor(func(context.Context, *minibus.ReceivedMessage) error { handled.Done(); return nil }, nil)
				require.NoError(t, err)
				env.FailNext("q", op, 1, errors.New("injected"))
				ctx, cancel := context.WithCancel(context.Background())
				done := runAsync(t, p, ctx)
				sendToSession(t, q, "s", "x")
				synctest.Wait()
				requireRunning(t, done)
				handled.Wait()
				cancel()
				require.NoError(t, runResult(t, done))
				require.Contains(t, buf.String(), "injected")
			})
		})
	}
}

// A processor whose receives (a session processor: accepts) keep failing
// does not spin: it tries again once at once, then after a change of its
// entity or a pause on the namespace clock that doubles from 100ms. It
// handles the message once its receives work again. A receive-disabled
// queue (ErrEntityDisabled) is the same, and enabling it wakes the
// processor at once.
func TestFault_ProcessorRetriesWithoutSpinning(t *testing.T) {
	for _, session := range []bool{false, true} {
		t.Run(fmt.Sprintf("session=%v", session), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				plan := &faultPlan{}
				log, buf := debugLogger()
				env := minibustest.New(t, minibus.WithFaultInjector(plan.inject), minibus.WithLogger(log))
				props := minibus.QueueProperties{RequiresSession: session}
				q := mkQueue(t, env, "q", &props)
				var handled atomic.Int64
				h := func(context.Context, *minibus.ReceivedMessage) error { handled.Add(1); return nil }
				var p *minibus.Processor
				var err error
				op := minibus.OpReceive
				if session {
					op = minibus.OpAcceptSession
					p, err = q.NewSessionProcessor(h, &minibus.SessionProcessorOptions{MaxConcurrentSessions: 1})
				} else {
					p, err = q.NewProcessor(h, nil)
				}
				require.NoError(t, err)
				tries := func() int {
					n := 0
					for _, c := range plan.calls() {
						if c == op.String()+" q" {
							n++
						}
					}
					return n
				}

				sendToSession(t, q, "s", "x")
				plan.failing(op, "q", errors.New("injected"))
				ctx, cancel := context.WithCancel(context.Background())
				done := runAsync(t, p, ctx)
				synctest.Wait()
				require.Equal(t, 2, tries(), "once, then once more at once")
				for _, pause := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
					env.Clock().Add(pause - time.Millisecond)
					synctest.Wait()
					require.Zero(t, tries(), "before the pause of %v", pause)
					env.Clock().Add(time.Millisecond)
					synctest.Wait()
					require.Equal(t, 1, tries(), "after the pause of %v", pause)
				}
				require.Zero(t, handled.Load())
				plan.failing(op, "q", nil)
				env.Clock().Add(800 * time.Millisecond)
				env.WaitIdle()
				require.EqualValues(t, 1, handled.Load())
				require.Contains(t, buf.String(), "injected")

				// ErrEntityDisabled: a new message wakes it to try again, an
				// enabled queue to take it; the clock does not move.
				props.Status = minibus.EntityStatusReceiveDisabled
				_, err = env.Namespace().UpdateQueue("q", props)
				require.NoError(t, err)
				synctest.Wait()
				sendToSession(t, q, "s", "y")
				synctest.Wait()
				require.LessOrEqual(t, tries(), 4, "two tries for the update, two for the message")
				require.EqualValues(t, 1, handled.Load())
				requireRunning(t, done)
				props.Status = minibus.EntityStatusActive
				_, err = env.Namespace().UpdateQueue("q", props)
				require.NoError(t, err)
				env.WaitIdle()
				require.EqualValues(t, 2, handled.Load())
				require.Contains(t, buf.String(), "ReceiveDisabled")
				cancel()
				require.NoError(t, runResult(t, done))
			})
		})
	}
}
