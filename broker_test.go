package minibus_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// Close: blocked calls return ErrClosed, later calls return ErrClosed, Close
// is idempotent, and (goleak, synctest) no goroutine survives it.
func TestCloseNamespace(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	e.send(q, "a")
	r := e.receiver(q, nil)
	m := e.receive(r, 1)[0]

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := r.ReceiveMessages(context.Background(), 1, nil)
			errs <- err
		})
	}
	require.NoError(t, e.ns.Close())
	wg.Wait()
	close(errs)
	for err := range errs {
		requireSentinel(t, err, minibus.ErrClosed, "namespace")
	}
	require.NoError(t, e.ns.Close(), "idempotent")
	requireSentinel(t, q.SendMessage(e.ctx, &minibus.Message{}, nil), minibus.ErrClosed, "namespace")
	requireSentinel(t, r.CompleteMessage(e.ctx, m, nil), minibus.ErrClosed, "namespace")
	_, err := e.ns.CreateQueue("x", nil)
	requireSentinel(t, err, minibus.ErrClosed, "namespace")
	_, err = q.ScheduleMessages(e.ctx, []*minibus.Message{{}}, at(time.Hour), nil)
	requireSentinel(t, err, minibus.ErrClosed, "namespace")
	requireSentinel(t, q.CancelScheduledMessages(e.ctx, []int64{1}, nil), minibus.ErrClosed, "namespace")
	_, err = e.ns.Queue("q")
	requireSentinel(t, err, minibus.ErrClosed, "namespace")
	require.Nil(t, e.ns.Queues())
}

// L11, Close: Namespace.Close wakes a blocked receiver, which returns
// ErrClosed.
func TestL11_NamespaceCloseWakesBlockedReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mock := clock.NewMock()
		ns := minibus.NewNamespace(minibus.WithClock(mock))
		q, err := ns.CreateQueue("q", nil)
		require.NoError(t, err)
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		defer r.Close(ctx) // also wakes a receive a broken Close left blocked
		type result struct {
			msgs []*minibus.ReceivedMessage
			err  error
		}
		done := make(chan result, 1)
		go func() {
			msgs, err := r.ReceiveMessages(ctx, 1, nil)
			done <- result{msgs, err}
		}()
		synctest.Wait()
		require.Empty(t, done, "blocked: the queue is empty")
		require.NoError(t, ns.Close())
		select {
		case res := <-done:
			require.Nil(t, res.msgs)
			requireSentinel(t, res.err, minibus.ErrClosed, "")
		case <-time.After(resultTimeout):
			t.Fatal("Namespace.Close did not wake the blocked receiver")
		}
	})
}

// A whole lifecycle on the real clock inside a synctest bubble, where time is
// virtual: locks expire, TTLs run out, scheduled messages activate and idle
// queues disappear at the right instants, a blocked receiver wakes through
// the namespace's timer, and nothing is left running after Close (synctest
// fails on a leaked goroutine).
func TestLifecycleInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ns := minibus.NewNamespace() // the real clock: virtual time in the bubble
		defer ns.Close()
		start := time.Now()
		q, err := ns.CreateQueue("q", &minibus.QueueProperties{
			LockDuration: 10 * time.Second, DefaultMessageTimeToLive: time.Hour,
			DeadLetteringOnMessageExpiration: true,
		})
		require.NoError(t, err)
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{Body: []byte("a")}, nil))
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		m, err := r.ReceiveMessages(ctx, 1, nil)
		require.NoError(t, err)

		// Blocks until the lock expires after 10s of virtual time.
		again, err := r.ReceiveMessages(ctx, 1, nil)
		require.NoError(t, err)
		require.Equal(t, m[0].SequenceNumber, again[0].SequenceNumber)
		require.Equal(t, 10*time.Second, time.Since(start))
		require.NoError(t, r.CompleteMessage(ctx, again[0], nil))

		// Blocks until a scheduled message activates.
		_, err = q.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte("later")}}, start.Add(time.Minute), nil)
		require.NoError(t, err)
		later, err := r.ReceiveMessages(ctx, 1, nil)
		require.NoError(t, err)
		require.Equal(t, "later", string(later[0].Body))
		require.Equal(t, time.Minute, time.Since(start))
		require.NoError(t, r.AbandonMessage(ctx, later[0], nil))

		// The abandoned message expires an hour after its activation.
		time.Sleep(time.Hour)
		rp := q.RuntimeProperties()
		require.Zero(t, rp.ActiveMessageCount)
		require.EqualValues(t, 1, rp.DeadLetterMessageCount)

		// An idle queue disappears after AutoDeleteOnIdle; a blocked receiver
		// learns it at that instant.
		idle, err := ns.CreateQueue("idle", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute})
		require.NoError(t, err)
		ir, err := idle.NewReceiver(nil)
		require.NoError(t, err)
		before := time.Now()
		_, err = ir.ReceiveMessages(ctx, 1, nil)
		require.ErrorIs(t, err, minibus.ErrNotFound)
		require.Equal(t, 5*time.Minute, time.Since(before))
		require.Equal(t, []string{"q"}, ns.Queues())

		// A receive with a deadline returns at the deadline.
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err = r.ReceiveMessages(dctx, 1, nil)
		require.ErrorIs(t, err, context.DeadlineExceeded)

		// Close wakes a blocked receiver.
		errc := make(chan error)
		go func() {
			_, err := r.ReceiveMessages(ctx, 1, nil)
			errc <- err
		}()
		synctest.Wait()
		require.NoError(t, ns.Close())
		require.ErrorIs(t, <-errc, minibus.ErrClosed)
	})
}

// TestNamespaceLogger: the namespace gives layers built on it (the AMQP
// server) the logger it was given, and a nil namespace a discarding one.
func TestNamespaceLogger(t *testing.T) {
	l := slog.New(slog.NewTextHandler(io.Discard, nil))
	ns := minibus.NewNamespace(minibus.WithLogger(l))
	defer ns.Close()
	require.Same(t, l, ns.Logger())
	var none *minibus.Namespace
	require.NotNil(t, none.Logger())
	none.Logger().Info("discarded")
}
