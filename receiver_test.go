package minibus_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// The receiver's options and calls beyond the L rules (lock_test.go,
// receiver_conformance_test.go): NoWait, MaxWaitTime and DeleteMessages.

func TestNewReceiverBadOptions(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	_, err := q.NewReceiver(&minibus.ReceiverOptions{ReceiveMode: 5})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "ReceiveMode")
	_, err = q.NewReceiver(&minibus.ReceiverOptions{SubQueue: -1})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "SubQueue")
	_, err = q.AcceptSession(e.ctx, "s", nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "does not require sessions")
	_, err = q.AcceptNextSession(e.ctx, nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "does not require sessions")
	var nilQ *minibus.Queue
	requireSentinel(t, nilQ.SendMessage(e.ctx, &minibus.Message{}, nil), minibus.ErrInvalidArgument, "nil *Queue")
	//lint:ignore SA1012 a nil context is bad input that must not panic
	requireSentinel(t, q.SendMessage(nil, &minibus.Message{}, nil), minibus.ErrInvalidArgument, "nil context")
}

// Tests of ReceiveMessagesOptions.NoWait and MaxWaitTime, and of
// Receiver.DeleteMessages.

type receiveResult struct {
	msgs []*minibus.ReceivedMessage
	err  error
}

// NoWait returns what is available now, possibly nothing (nil, nil),
// without waiting; a drain loop ends by itself.
func TestReceiveNoWait(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	r := e.receiver(q, nil)
	noWait := &minibus.ReceiveMessagesOptions{NoWait: true}
	msgs, err := r.ReceiveMessages(e.ctx, 10, noWait)
	require.NoError(t, err)
	require.Nil(t, msgs)

	e.send(q, "a", "b", "c", "d", "e")
	var drained []string
	for {
		msgs, err := r.ReceiveMessages(e.ctx, 2, noWait)
		require.NoError(t, err)
		if len(msgs) == 0 {
			break
		}
		require.LessOrEqual(t, len(msgs), 2)
		for _, m := range msgs {
			drained = append(drained, string(m.Body))
			require.NoError(t, r.CompleteMessage(e.ctx, m, nil))
		}
	}
	require.Equal(t, []string{"a", "b", "c", "d", "e"}, drained)

	// NoWait wins over MaxWaitTime; a scheduled message is not available.
	_, err = q.ScheduleMessages(e.ctx, []*minibus.Message{{}}, at(time.Minute), nil)
	require.NoError(t, err)
	msgs, err = r.ReceiveMessages(e.ctx, 1, &minibus.ReceiveMessagesOptions{NoWait: true, MaxWaitTime: time.Hour})
	require.NoError(t, err)
	require.Nil(t, msgs)
	e.advanceTo(time.Minute)
	msgs, err = r.ReceiveMessages(e.ctx, 1, noWait)
	require.NoError(t, err)
	require.Len(t, msgs, 1, "caught up to the clock first")

	// A session receiver, in receive-and-delete mode too.
	sq := e.sessionQueue("s", nil)
	e.sendSession(sq, "x", "1", "2")
	s, err := sq.AcceptSession(e.ctx, "x", &minibus.SessionReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
	require.NoError(t, err)
	defer s.Close(e.ctx)
	msgs, err = s.ReceiveMessages(e.ctx, 10, noWait)
	require.NoError(t, err)
	require.Equal(t, []string{"1", "2"}, bodies(msgs))
	msgs, err = s.ReceiveMessages(e.ctx, 10, noWait)
	require.NoError(t, err)
	require.Nil(t, msgs)

	// Bad input and errors are as without NoWait.
	_, err = r.ReceiveMessages(e.ctx, 0, noWait)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "maxMessages 0")
	canceled, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err = r.ReceiveMessages(canceled, 1, noWait)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, r.Close(e.ctx))
	_, err = r.ReceiveMessages(e.ctx, 1, noWait)
	require.ErrorIs(t, err, minibus.ErrClosed)
}

// MaxWaitTime bounds a blocked receive on the namespace clock: nil, nil once
// the clock passes it, the messages if they come first (a send, or time:
// an activation); a negative one is ErrInvalidArgument.
func TestReceiveMaxWaitTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		q := e.queue("q", nil)
		r := e.receiver(q, nil)
		wait := &minibus.ReceiveMessagesOptions{MaxWaitTime: 10 * time.Second}
		receive := func(r *minibus.Receiver, opts ...*minibus.ReceiveMessagesOptions) <-chan receiveResult {
			o := wait
			if len(opts) > 0 {
				o = opts[0]
			}
			ch := make(chan receiveResult, 1)
			go func() {
				msgs, err := r.ReceiveMessages(e.ctx, 5, o)
				ch <- receiveResult{msgs, err}
			}()
			return ch
		}

		// Nothing comes: nil, nil exactly when the clock passes MaxWaitTime.
		res := receive(r)
		synctest.Wait()
		require.Empty(t, res, "blocked")
		e.mock.Add(10*time.Second - time.Nanosecond)
		synctest.Wait()
		require.Empty(t, res, "blocked")
		e.mock.Add(time.Nanosecond)
		synctest.Wait()
		got := <-res
		require.NoError(t, got.err)
		require.Nil(t, got.msgs)

		// A send within the wait.
		res = receive(r)
		synctest.Wait()
		e.mock.Add(5 * time.Second)
		e.send(q, "a", "b")
		synctest.Wait()
		got = <-res
		require.NoError(t, got.err)
		require.Equal(t, []string{"a", "b"}, bodies(got.msgs))

		// An activation within the wait wakes it at its instant.
		_, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("s")}}, e.mock.Now().Add(9*time.Second), nil)
		require.NoError(t, err)
		res = receive(r)
		synctest.Wait()
		e.mock.Add(9 * time.Second)
		synctest.Wait()
		got = <-res
		require.NoError(t, got.err)
		require.Equal(t, []string{"s"}, bodies(got.msgs))

		// A lock that ends within the wait: a and b were locked at +15s for
		// LockDuration (1m), s at +24s.
		res = receive(r, &minibus.ReceiveMessagesOptions{MaxWaitTime: 2 * time.Minute})
		synctest.Wait()
		e.mock.Add(51 * time.Second) // to +1m15s
		synctest.Wait()
		got = <-res
		require.NoError(t, got.err)
		require.Equal(t, []string{"a", "b"}, bodies(got.msgs))
		require.EqualValues(t, 2, got.msgs[0].DeliveryCount)

		// ctx still ends a wait; closing the receiver too.
		ctx, cancel := context.WithCancel(e.ctx)
		done := make(chan error, 1)
		go func() {
			_, err := r.ReceiveMessages(ctx, 1, wait)
			done <- err
		}()
		synctest.Wait()
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		other := e.receiver(q, nil)
		res = receive(other)
		synctest.Wait()
		require.NoError(t, other.Close(e.ctx))
		require.ErrorIs(t, (<-res).err, minibus.ErrClosed)

		// A session receiver.
		sq := e.sessionQueue("s", nil)
		s, err := sq.AcceptSession(e.ctx, "x", nil)
		require.NoError(t, err)
		defer s.Close(e.ctx)
		sres := make(chan receiveResult, 1)
		go func() {
			msgs, err := s.ReceiveMessages(e.ctx, 1, &minibus.ReceiveMessagesOptions{MaxWaitTime: 5 * time.Second})
			sres <- receiveResult{msgs, err}
		}()
		synctest.Wait()
		e.mock.Add(5 * time.Second)
		synctest.Wait()
		got = <-sres
		require.NoError(t, got.err)
		require.Nil(t, got.msgs)

		_, err = r.ReceiveMessages(e.ctx, 1, &minibus.ReceiveMessagesOptions{MaxWaitTime: -time.Second})
		requireSentinel(t, err, minibus.ErrInvalidArgument, "MaxWaitTime -1s")
	})
}

// DeleteMessages removes up to maxMessages available or deferred messages,
// oldest first, without delivering them, and returns how many; never a
// locked or scheduled one.
func TestDeleteMessages(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	r := e.receiver(q, nil)
	e.send(q, "a", "b", "c", "d", "e")
	n, err := r.DeleteMessages(e.ctx, 2, nil)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []int64{3, 4, 5}, seqs(e.peekAll(r)), "oldest first")

	// Locked and scheduled messages stay; deferred ones go.
	locked := e.receive(r, 2) // c, d
	require.NoError(t, r.DeferMessage(e.ctx, locked[1], nil))
	_, err = q.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("s")}}, at(time.Hour), nil)
	require.NoError(t, err)
	n, err = r.DeleteMessages(e.ctx, 100, &minibus.DeleteMessagesOptions{})
	require.NoError(t, err)
	require.Equal(t, 2, n, "d (deferred) and e")
	require.Equal(t, []string{"c", "s"}, bodies(e.peekAll(r)))
	require.NoError(t, r.CompleteMessage(e.ctx, locked[0], nil), "the locked message was not touched")
	p := q.RuntimeProperties()
	require.Zero(t, p.ActiveMessageCount)
	require.EqualValues(t, 1, p.ScheduledMessageCount)
	n, err = r.DeleteMessages(e.ctx, 100, nil)
	require.NoError(t, err)
	require.Zero(t, n)

	// The dead-letter queue, and a receive-and-delete receiver.
	e.send(q, "x", "y")
	for _, m := range e.receive(r, 2) {
		require.NoError(t, r.DeadLetterMessage(e.ctx, m, nil))
	}
	dlq := e.receiver(q, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter, ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
	n, err = dlq.DeleteMessages(e.ctx, 10, nil)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Zero(t, q.RuntimeProperties().DeadLetterMessageCount)

	// A subscription.
	topic := e.topic("t", nil)
	sub := e.subscription(topic, "s", nil)
	e.send(topic, "1", "2", "3")
	sr := e.receiver(sub, nil)
	n, err = sr.DeleteMessages(e.ctx, 10, nil)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Zero(t, sub.RuntimeProperties().TotalMessageCount)

	// Bad input and errors.
	_, err = r.DeleteMessages(e.ctx, 0, nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "maxMessages 0")
	canceled, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err = r.DeleteMessages(canceled, 1, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, r.Close(e.ctx))
	_, err = r.DeleteMessages(e.ctx, 1, nil)
	require.ErrorIs(t, err, minibus.ErrClosed)
	other := e.receiver(q, nil)
	require.NoError(t, e.ns.DeleteQueue("q"))
	_, err = other.DeleteMessages(e.ctx, 1, nil)
	require.ErrorIs(t, err, minibus.ErrNotFound)
}

// DeleteMessages removes available and deferred messages only: a message
// locked by a receive, or by a fetch from deferral, stays, and its holder
// settles it (issue 42: three sent, one held, one deferred, a delete with
// BeforeEnqueueTime after all three took the held one too). Over every
// plain receiver kind: queue, subscription, their dead-letter queues.
func TestDeleteMessages_NeverLocked(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		if f.session {
			t.Skip("a SessionReceiver has no DeleteMessages")
		}
		f.put("a", "b", "c", "d")
		r := f.receiver(minibus.ReceiveModePeekLock).(*minibus.Receiver)
		held := f.receive(r, 1)[0]
		deferred := f.receive(r, 2)
		require.NoError(t, r.DeferMessage(f.ctx, deferred[0], nil))
		require.NoError(t, r.DeferMessage(f.ctx, deferred[1], nil))
		fetched, err := r.ReceiveDeferredMessages(f.ctx, []int64{deferred[1].SequenceNumber}, nil)
		require.NoError(t, err)
		f.mock.Add(time.Second)

		n, err := r.DeleteMessages(f.ctx, 10, &minibus.DeleteMessagesOptions{BeforeEnqueueTime: f.mock.Now().Add(time.Hour)})
		require.NoError(t, err)
		require.Equal(t, 2, n, "b (deferred) and d (available), not a nor c (locked)")
		require.Equal(t, []string{"a", "c"}, bodies(f.peekAll(r)))
		require.EqualValues(t, 2, f.active())
		require.NoError(t, r.CompleteMessage(f.ctx, held, nil), "the held message was not touched")
		require.NoError(t, r.CompleteMessage(f.ctx, fetched[0], nil), "nor the one fetched from deferral")
		require.Zero(t, f.active())
	})
}

// BeforeEnqueueTime deletes only messages enqueued at or before it; zero is
// no limit.
func TestDeleteMessages_BeforeEnqueueTime(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	r := e.receiver(q, nil)
	for i, b := range []string{"a", "b", "c", "d"} {
		e.advanceTo(time.Duration(i) * time.Minute)
		e.send(q, b)
	}
	n, err := r.DeleteMessages(e.ctx, 10, &minibus.DeleteMessagesOptions{BeforeEnqueueTime: at(time.Minute)})
	require.NoError(t, err)
	require.Equal(t, 2, n, "a, and b enqueued exactly at the limit")
	require.Equal(t, []string{"c", "d"}, bodies(e.peekAll(r)))
	n, err = r.DeleteMessages(e.ctx, 10, &minibus.DeleteMessagesOptions{BeforeEnqueueTime: at(time.Minute)})
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = r.DeleteMessages(e.ctx, 1, &minibus.DeleteMessagesOptions{BeforeEnqueueTime: at(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []string{"d"}, bodies(e.peekAll(r)))
}

// A delete is activity (SEMANTICS A2): it puts off the deletion on idle,
// even when it removes nothing.
func TestDeleteMessages_IsActivity(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute})
	r := e.receiver(q, nil)
	e.advanceTo(4 * time.Minute)
	n, err := r.DeleteMessages(e.ctx, 1, nil)
	require.NoError(t, err)
	require.Zero(t, n)
	e.advanceTo(9*time.Minute - time.Nanosecond)
	_, err = e.ns.Queue("q")
	require.NoError(t, err, "alive until 5m after the delete")
	e.advanceTo(9 * time.Minute)
	_, err = e.ns.Queue("q")
	require.ErrorIs(t, err, minibus.ErrNotFound)
}

// movingClock is a mock clock read with an offset; the first time the
// namespace sets a timer, the clock moves by jump first, as a test's
// Clock().Add running between the namespace's reading of the clock and its
// setting of the timer would move it.
type movingClock struct {
	*clock.Mock
	mu     sync.Mutex
	offset time.Duration
	jump   time.Duration
	jumped bool
}

func (c *movingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Mock.Now().Add(c.offset)
}

func (c *movingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *movingClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	c.mu.Lock()
	if !c.jumped {
		c.jumped = true
		c.offset += c.jump
	}
	c.mu.Unlock()
	return c.Mock.AfterFunc(d, f)
}

// SEMANTICS T5 with a mock clock that moves while the namespace sets its
// timer (a test's Clock().Add running between the namespace's reading of
// the clock and its setting of the timer): the timer is set relative to
// the clock as it is then, so the namespace must set it again from a new
// reading, or it fires that much late and a blocked receive misses a
// lock's end. Here the clock moves 29 s while a receive blocked on a lock
// ending at +30 s sets the timer; the lock's end at +30 s must wake it.
func TestReceiveWakesWhenTheClockMovesWhileItBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := clock.NewMock()
		mock.Set(epoch)
		ns := minibus.NewNamespace(minibus.WithClock(&movingClock{Mock: mock, jump: 29 * time.Second}))
		defer ns.Close()
		ctx := context.Background()
		q, err := ns.CreateQueue("q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
		require.NoError(t, err)
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{}, nil))
		first, err := q.NewReceiver(nil)
		require.NoError(t, err)
		defer first.Close(ctx)
		_, err = first.ReceiveMessages(ctx, 1, nil) // locked until +30s
		require.NoError(t, err)
		second, err := q.NewReceiver(nil)
		require.NoError(t, err)
		defer second.Close(ctx)
		res := make(chan receiveResult, 1)
		go func() {
			msgs, err := second.ReceiveMessages(ctx, 1, nil)
			res <- receiveResult{msgs, err}
		}()
		synctest.Wait() // blocked; the clock reads +29s
		mock.Add(time.Second)
		synctest.Wait()
		select {
		case got := <-res:
			require.NoError(t, got.err)
			require.Len(t, got.msgs, 1)
		default:
			t.Fatal("the receive was not woken at the lock's end (+30s)")
		}
	})
}
