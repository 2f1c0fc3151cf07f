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

// T3: one clock jump across many deadlines gives, at the next call, exactly
// the state that stepping through them gives: lock ends, redeliveries,
// expiries, dead-lettering and idle deletion in time order.
func TestT3_OneJumpEqualsSteps(t *testing.T) {
	run := func(step time.Duration) (active, dead int64, reasons []string, queues []string) {
		e := newEnv(t)
		q := e.queue("q", &minibus.QueueProperties{
			LockDuration: time.Minute, MaxDeliveryCount: 2, DefaultMessageTimeToLive: 150 * time.Second,
			DeadLetteringOnMessageExpiration: true,
		})
		e.queue("idle", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute})
		e.send(q, "ttl", "max", "stay")
		r := e.receiver(q, nil)
		got := e.receive(r, 2) // "ttl" and "max" locked until +1m
		require.NoError(t, r.DeferMessage(e.ctx, got[1], nil))
		m, err := r.ReceiveDeferredMessages(e.ctx, []int64{got[1].SequenceNumber}, nil)
		require.NoError(t, err)
		_ = m
		// At +1m both locks end: "ttl" is available again (1 delivery of 2),
		// "max" has had 2 deliveries: MaxDeliveryCountExceeded. At +150s
		// "ttl" and "stay" expire to the DLQ. At +5m the idle queue goes.
		for elapsed := time.Duration(0); elapsed < 10*time.Minute; elapsed += step {
			e.mock.Add(step)
		}
		rp := q.RuntimeProperties()
		dlq := e.receiver(q, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
		for _, d := range e.peekAll(dlq) {
			reasons = append(reasons, string(d.Body)+":"+d.DeadLetterReason)
		}
		return rp.ActiveMessageCount, rp.DeadLetterMessageCount, reasons, e.ns.Queues()
	}
	a1, d1, r1, q1 := run(10 * time.Minute)
	a2, d2, r2, q2 := run(time.Second)
	require.Equal(t, []any{a2, d2, r2, q2}, []any{a1, d1, r1, q1})
	require.Zero(t, a1)
	require.Equal(t, []string{"ttl:TTLExpiredException", "max:MaxDeliveryCountExceeded", "stay:TTLExpiredException"}, r1)
	require.Equal(t, []string{"q"}, q1)
}

// T4: a namespace keeps at most one clock timer, whatever the number of
// deadlines and blocked receivers.
func TestT4_OneTimerPerNamespace(t *testing.T) {
	e := newEnv(t)
	qs := make([]*minibus.Queue, 5)
	for i := range qs {
		qs[i] = e.queue(string(rune('a'+i)), &minibus.QueueProperties{LockDuration: 5 * time.Second, AutoDeleteOnIdle: time.Hour})
	}
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	for _, q := range qs {
		for i := range 50 {
			_, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{}}, at(time.Duration(i)*time.Second), nil)
			require.NoError(t, err)
		}
		r := e.receiver(q, nil)
		for range 3 {
			wg.Go(func() {
				for ctx.Err() == nil {
					_, _ = r.ReceiveMessages(ctx, 7, nil) // locks expire: redelivered
				}
			})
		}
	}
	for range 100 {
		e.mock.Add(time.Second)
	}
	cancel()
	wg.Wait()
	require.Equal(t, int64(1), e.clock.timers.Load(), "clock timers created: one, reset as deadlines change")
}

// T5: a receiver blocked in ReceiveMessages wakes when a message becomes
// available through time: a scheduled activation or a lock expiry. Run in a
// synctest bubble so that "blocked" and "woken" are exact.
func TestT5_BlockedReceiverWakesThroughTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mock := clock.NewMock()
		ns := minibus.NewNamespace(minibus.WithClock(mock))
		defer ns.Close()
		q, err := ns.CreateQueue("q", nil)
		require.NoError(t, err)
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		got := make(chan []*minibus.ReceivedMessage, 1)
		receive := func() {
			msgs, err := r.ReceiveMessages(ctx, 10, nil)
			if err != nil {
				t.Error(err)
			}
			got <- msgs
		}

		_, err = q.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte("s")}}, mock.Now().Add(5*time.Minute), nil)
		require.NoError(t, err)
		go receive()
		synctest.Wait()
		require.Empty(t, got, "nothing yet")
		mock.Add(5*time.Minute - 1)
		synctest.Wait()
		require.Empty(t, got, "1ns early")
		mock.Add(1)
		synctest.Wait()
		require.Len(t, got, 1, "woken by the activation")
		first := <-got
		require.Equal(t, "s", string(first[0].Body))

		go receive()
		synctest.Wait()
		mock.Add(time.Minute) // the lock ends: redelivered to the blocked receiver
		synctest.Wait()
		require.Len(t, got, 1, "woken by the lock expiry")
		again := <-got
		require.Equal(t, first[0].SequenceNumber, again[0].SequenceNumber)
		require.EqualValues(t, 2, again[0].DeliveryCount)
	})
}

// T4: the timer is armed only for deadlines of entities a receiver is
// blocked on: a receiver blocked on one queue does not make a clock jump
// fire the timer for every deadline of another (benbjohnson/clock sleeps
// 1 ms of real time per timer it fires).
func TestT4_TimerOnlyForWatchedEntities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		mock := clock.NewMock()
		cc := &countingClock{Clock: mock}
		ns := minibus.NewNamespace(minibus.WithClock(cc))
		defer ns.Close()
		idle, err := ns.CreateQueue("idle", nil)
		require.NoError(t, err)
		busy, err := ns.CreateQueue("busy", nil)
		require.NoError(t, err)
		for i := range 100 {
			_, err := busy.ScheduleMessages(ctx, []*minibus.Message{{}}, mock.Now().Add(time.Duration(i+1)*time.Second), nil)
			require.NoError(t, err)
		}
		r, err := idle.NewReceiver(nil)
		require.NoError(t, err)
		done := make(chan error)
		go func() {
			_, err := r.ReceiveMessages(ctx, 1, nil)
			done <- err
		}()
		synctest.Wait()
		mock.Add(time.Hour)
		synctest.Wait()
		require.Zero(t, cc.fired.Load(), "no timer fired for the other queue's deadlines")
		require.EqualValues(t, 100, busy.RuntimeProperties().ActiveMessageCount)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	})
}

// T5: blocked receivers on several queues each wake for their own queue's
// deadline, in one jump.
func TestT5_ManyQueuesOneJump(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mock := clock.NewMock()
		ns := minibus.NewNamespace(minibus.WithClock(mock))
		defer ns.Close()
		var wg sync.WaitGroup
		for i := range 10 {
			q, err := ns.CreateQueue("q"+string(rune('0'+i)), nil)
			require.NoError(t, err)
			_, err = q.ScheduleMessages(ctx, []*minibus.Message{{}}, mock.Now().Add(time.Duration(i+1)*time.Minute), nil)
			require.NoError(t, err)
			r, err := q.NewReceiver(nil)
			require.NoError(t, err)
			wg.Go(func() {
				msgs, err := r.ReceiveMessages(ctx, 1, nil)
				if err != nil || len(msgs) != 1 {
					t.Error(err, len(msgs))
				}
			})
		}
		synctest.Wait()
		mock.Add(time.Hour)
		wg.Wait()
	})
}
