package minibus_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/modeltest"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"pgregory.net/rapid"
)

// The namespace: Close, under load too, its lifecycle in synctest bubbles
// and its logger.

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

// I16, clean shutdown: Close during heavy concurrent use, and a seeded
// lifecycle simulation inside a testing/synctest bubble (T3).

// closeLedger is what the workers of TestCloseUnderLoad did, for one
// receivable place (a queue, or a subscription taking every topic message).
type closeLedger struct {
	sendsStarted, sendsAcked    atomic.Int64
	completesStarted, completed atomic.Int64
	radInFlight, radReceived    atomic.Int64
	mu                          sync.Mutex
	acked, ended, radSeen, seen map[string]int
}

func newCloseLedger() *closeLedger {
	return &closeLedger{acked: map[string]int{}, ended: map[string]int{}, radSeen: map[string]int{}, seen: map[string]int{}}
}

const closeMaxReceive = 4

// bounds checks one RuntimeProperties reading against the ledger: nothing
// acknowledged is missing (every acked send is counted unless something that
// may have ended it has started) and nothing appeared from nowhere. The
// reads around rp are ordered so that the bounds hold whatever the
// workers did meanwhile.
func (l *closeLedger) bounds(total func() int64) error {
	ackedBefore := l.sendsAcked.Load()
	doneBefore := l.completed.Load() + l.radReceived.Load()
	n := total()
	inFlight := l.radInFlight.Load() // before radReceived: a receive that ends in between is counted twice, never missed
	endedAfter := l.completesStarted.Load() + l.radReceived.Load() + inFlight*closeMaxReceive
	startedAfter := l.sendsStarted.Load()
	if n < ackedBefore-endedAfter {
		return fmt.Errorf("lost: %d messages counted, but %d sends were acknowledged and at most %d ended", n, ackedBefore, endedAfter)
	}
	if n > startedAfter-doneBefore {
		return fmt.Errorf("phantom: %d messages counted, but at most %d sent and at least %d ended", n, startedAfter, doneBefore)
	}
	return nil
}

// TestCloseUnderLoad closes the namespace while senders, blocked and active
// receivers (both modes), settlers, a monitor and a clock goroutine work on
// a queue and a topic (I16). Close returns promptly (the 10 s bound is a
// hang detector only), every worker stops with ErrClosed, every call after
// it returns ErrClosed, nothing acknowledged was lost up to the last
// reading before Close, nothing was completed twice, and no goroutine is
// left.
func TestCloseUnderLoad(t *testing.T) {
	defer goleak.VerifyNone(t)
	mock := clock.NewMock()
	mock.Set(epoch)
	ns := minibus.NewNamespace(minibus.WithClock(mock))
	ctx := context.Background()

	q, err := ns.CreateQueue("work", &minibus.QueueProperties{LockDuration: 30 * time.Second, MaxDeliveryCount: 100})
	require.NoError(t, err)
	idle, err := ns.CreateQueue("idle", nil)
	require.NoError(t, err)
	top, err := ns.CreateTopic("events", nil)
	require.NoError(t, err)
	sub, err := top.CreateSubscription("all", &minibus.SubscriptionProperties{LockDuration: 30 * time.Second, MaxDeliveryCount: 100})
	require.NoError(t, err)

	// A message held under a lock across Close, to settle afterwards.
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{Body: []byte("held")}, nil))
	holder, err := q.NewReceiver(nil)
	require.NoError(t, err)
	held, err := holder.ReceiveMessages(ctx, 1, nil)
	require.NoError(t, err)

	type place struct {
		name string
		l    *closeLedger
		send func(context.Context, []*minibus.Message, *minibus.SendMessageOptions) error
		recv func(*minibus.ReceiverOptions) (*minibus.Receiver, error)
		rp   func() int64
	}
	places := []*place{
		{"work", newCloseLedger(), q.SendMessages, q.NewReceiver, func() int64 { return q.RuntimeProperties().TotalMessageCount }},
		{"events", newCloseLedger(), top.SendMessages, sub.NewReceiver, func() int64 { return sub.RuntimeProperties().TotalMessageCount }},
	}
	places[0].l.sendsStarted.Store(1) // "held"
	places[0].l.sendsAcked.Store(1)
	places[0].l.acked["held"] = 1

	var wg sync.WaitGroup
	var violations sync.Map
	violate := func(format string, args ...any) { violations.Store(fmt.Sprintf(format, args...), true) }
	stopped := map[string]*atomic.Int64{}
	// worker runs f until it reports ErrClosed; any other unexpected error
	// is a violation.
	worker := func(kind string, seed uint64, f func(rng *rand.Rand) error) {
		if stopped[kind] == nil {
			stopped[kind] = new(atomic.Int64)
		}
		c := stopped[kind]
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, seed))
			for {
				err := f(rng)
				switch {
				case err == nil, errors.Is(err, minibus.ErrLockLost), errors.Is(err, context.DeadlineExceeded):
				case errors.Is(err, minibus.ErrClosed):
					c.Add(1)
					return
				default:
					violate("%s: %v", kind, err)
					return
				}
			}
		}()
	}
	for i, p := range places {
		for s := range 3 {
			var n int
			worker("sender", uint64(10*i+s), func(rng *rand.Rand) error {
				var msgs []*minibus.Message
				for range 1 + rng.IntN(3) {
					n++
					msgs = append(msgs, &minibus.Message{Body: []byte(fmt.Sprintf("%s-%d-%d", p.name, s, n))})
				}
				p.l.sendsStarted.Add(int64(len(msgs)))
				if err := p.send(ctx, msgs, nil); err != nil {
					return err
				}
				p.l.mu.Lock()
				for _, m := range msgs {
					p.l.acked[string(m.Body)]++
				}
				p.l.mu.Unlock()
				p.l.sendsAcked.Add(int64(len(msgs)))
				return nil
			})
		}
		for c := range 3 {
			rad := c == 2
			opts := &minibus.ReceiverOptions{}
			if rad {
				opts.ReceiveMode = minibus.ReceiveModeReceiveAndDelete
			}
			r, err := p.recv(opts)
			require.NoError(t, err)
			worker("receiver", uint64(100+10*i+c), func(rng *rand.Rand) error {
				// A real deadline so that a receiver also waits now and
				// then; Close must wake those that wait.
				rctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
				defer cancel()
				if rad {
					p.l.radInFlight.Add(1)
				}
				msgs, err := r.ReceiveMessages(rctx, 1+rng.IntN(closeMaxReceive), nil)
				if rad {
					p.l.radReceived.Add(int64(len(msgs)))
					p.l.radInFlight.Add(-1)
				}
				if err != nil {
					if len(msgs) > 0 {
						violate("receive returned %d messages and %v", len(msgs), err)
					}
					return err
				}
				p.l.mu.Lock()
				for _, m := range msgs {
					p.l.seen[string(m.Body)]++
					if rad {
						p.l.radSeen[string(m.Body)]++
					}
				}
				p.l.mu.Unlock()
				if rad {
					return nil
				}
				for _, m := range msgs {
					if rng.IntN(5) == 0 {
						if err := r.AbandonMessage(ctx, m, nil); err != nil {
							return err
						}
						continue
					}
					p.l.completesStarted.Add(1)
					if err := r.CompleteMessage(ctx, m, nil); err != nil {
						return err
					}
					p.l.completed.Add(1)
					p.l.mu.Lock()
					p.l.ended[string(m.Body)]++
					p.l.mu.Unlock()
				}
				return nil
			})
		}
	}
	// Receivers blocked for good on an empty queue: only Close wakes them.
	for i := range 3 {
		r, err := idle.NewReceiver(nil)
		require.NoError(t, err)
		worker("blocked receiver", uint64(200+i), func(*rand.Rand) error {
			msgs, err := r.ReceiveMessages(ctx, 1, nil)
			if err == nil {
				violate("an empty queue delivered %d messages", len(msgs))
			}
			return err
		})
	}
	// The one clock goroutine, until its first call after Close fails.
	worker("clock", 300, func(rng *rand.Rand) error {
		mock.Add(time.Duration(rng.Int64N(int64(time.Second))))
		_, err := ns.Queue("work")
		return err
	})
	// The monitor: the count bounds, until just before Close.
	stopMonitor := make(chan struct{})
	monitorDone := make(chan int)
	go func() {
		n := 0
		for {
			for _, p := range places {
				if err := p.l.bounds(p.rp); err != nil {
					violate("%s: %v", p.name, err)
				}
			}
			n++
			select {
			case <-stopMonitor:
				monitorDone <- n
				return
			default:
			}
		}
	}()

	time.Sleep(300 * time.Millisecond)
	close(stopMonitor)
	readings := <-monitorDone // its last reading was taken under full load, just now
	closed := make(chan error, 1)
	go func() { closed <- ns.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10 s (hang detector)")
	}
	workersDone := make(chan struct{})
	go func() { wg.Wait(); close(workersDone) }()
	select {
	case <-workersDone:
	case <-time.After(10 * time.Second):
		t.Fatal("workers still running 10 s after Close: a call did not return ErrClosed")
	}

	violations.Range(func(k, _ any) bool { t.Error(k); return true })
	for _, p := range places {
		l := p.l
		for body, n := range l.ended {
			if n > 1 {
				t.Errorf("%s: %s completed %d times", p.name, body, n)
			}
		}
		for body, n := range l.radSeen {
			if n > 1 || l.ended[body] > 0 {
				t.Errorf("%s: %s received-and-deleted %d times, completed %d times", p.name, body, n, l.ended[body])
			}
		}
		// Every send has returned: nil (acknowledged) or ErrClosed (changed
		// nothing), so whatever was delivered was acknowledged.
		for body := range l.seen {
			if l.acked[body] == 0 {
				t.Errorf("%s: %s delivered, never acknowledged", p.name, body)
			}
		}
		t.Logf("%s: %d sends acknowledged, %d completed, %d received-and-deleted", p.name,
			l.sendsAcked.Load(), l.completed.Load(), l.radReceived.Load())
	}
	t.Logf("%d count readings under load; workers stopped by ErrClosed: senders %d, receivers %d, blocked %d, clock %d",
		readings, stopped["sender"].Load(), stopped["receiver"].Load(), stopped["blocked receiver"].Load(), stopped["clock"].Load())

	// Every call afterwards returns ErrClosed; Close is idempotent.
	requireClosed := func(what string, err error) {
		t.Helper()
		require.ErrorIs(t, err, minibus.ErrClosed, what)
	}
	r, err := q.NewReceiver(nil)
	require.Nil(t, r)
	requireClosed("NewReceiver", err)
	_, err = ns.CreateQueue("new", nil)
	requireClosed("CreateQueue", err)
	_, err = ns.CreateTopic("new", nil)
	requireClosed("CreateTopic", err)
	_, err = ns.Queue("work")
	requireClosed("Queue", err)
	_, err = ns.Topic("events")
	requireClosed("Topic", err)
	_, err = ns.UpdateQueue("work", minibus.QueueProperties{})
	requireClosed("UpdateQueue", err)
	_, err = ns.UpdateTopic("events", minibus.TopicProperties{})
	requireClosed("UpdateTopic", err)
	requireClosed("DeleteQueue", ns.DeleteQueue("work"))
	requireClosed("DeleteTopic", ns.DeleteTopic("events"))
	requireClosed("SendMessage", q.SendMessage(ctx, &minibus.Message{}, nil))
	requireClosed("SendMessages", q.SendMessages(ctx, []*minibus.Message{{}}, nil))
	_, err = q.ScheduleMessages(ctx, []*minibus.Message{{}}, epoch.Add(time.Hour), nil)
	requireClosed("ScheduleMessages", err)
	requireClosed("CancelScheduledMessages", q.CancelScheduledMessages(ctx, []int64{1}, nil))
	requireClosed("topic SendMessage", top.SendMessage(ctx, &minibus.Message{}, nil))
	_, err = top.ScheduleMessages(ctx, []*minibus.Message{{}}, epoch.Add(time.Hour), nil)
	requireClosed("topic ScheduleMessages", err)
	_, err = top.CreateSubscription("new", nil)
	requireClosed("CreateSubscription", err)
	_, err = top.Subscription("all")
	requireClosed("Subscription", err)
	_, err = top.UpdateSubscription("all", minibus.SubscriptionProperties{})
	requireClosed("UpdateSubscription", err)
	requireClosed("DeleteSubscription", top.DeleteSubscription("all"))
	requireClosed("CreateRule", sub.CreateRule("r", nil))
	requireClosed("DeleteRule", sub.DeleteRule("$Default"))
	_, err = sub.NewReceiver(nil)
	requireClosed("subscription NewReceiver", err)
	_, err = holder.ReceiveMessages(ctx, 1, nil)
	requireClosed("ReceiveMessages", err)
	_, err = holder.PeekMessages(ctx, 1, nil)
	requireClosed("PeekMessages", err)
	_, err = holder.ReceiveDeferredMessages(ctx, []int64{1}, nil)
	requireClosed("ReceiveDeferredMessages", err)
	requireClosed("RenewMessageLock", holder.RenewMessageLock(ctx, held[0], nil))
	requireClosed("AbandonMessage", holder.AbandonMessage(ctx, held[0], nil))
	requireClosed("DeferMessage", holder.DeferMessage(ctx, held[0], nil))
	requireClosed("DeadLetterMessage", holder.DeadLetterMessage(ctx, held[0], nil))
	requireClosed("CompleteMessage", holder.CompleteMessage(ctx, held[0], nil))
	require.Nil(t, ns.Queues())
	require.Nil(t, ns.Topics())
	require.Nil(t, top.Subscriptions())
	require.Nil(t, sub.Rules())
	require.Zero(t, q.RuntimeProperties())
	require.Zero(t, top.RuntimeProperties())
	require.Zero(t, sub.RuntimeProperties())
	require.NoError(t, ns.Close())
	require.NoError(t, holder.Close(ctx))
}

// TestLifecycleSynctest is a seeded simulation (T3) inside a
// testing/synctest bubble, where the namespace runs on the real clock and
// the clock is the bubble's: receivers block in ReceiveMessages, the test
// sends, schedules and sleeps, receivers complete, abandon or drop their
// locks, and time moves only when every goroutine is blocked. Each delivery
// happens at the exact instant its message became available: its
// EnqueuedTime (send or activation), the instant of an abandon, or the end
// of the lock that expired (T5, I14). At the end every accepted message was
// completed or dead-lettered, and Close leaves no goroutine in the bubble.
func TestLifecycleSynctest(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rapid.SyncTest(rt, func(rt *rapid.T) {
			simulate(rt)
		})
	})
}

type simDelivery struct {
	at   time.Time
	msg  *minibus.ReceivedMessage
	verb string // what the receiver did: complete, abandon, drop
}

func simulate(t *rapid.T) {
	ctx := context.Background()
	ns := minibus.NewNamespace() // the real clock: the bubble's fake time
	const lock = 10 * time.Second
	q, err := ns.CreateQueue("q", &minibus.QueueProperties{LockDuration: lock, MaxDeliveryCount: 3,
		DefaultMessageTimeToLive: 10 * time.Minute, DeadLetteringOnMessageExpiration: true})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log []simDelivery
	var errs []string // from the receivers: rapid.T is not for other goroutines
	fail := func(format string, args ...any) {
		mu.Lock()
		errs = append(errs, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	receivers := modeltest.Between(t, "receivers", 1, 3)
	verbs := make([][]string, receivers)
	for i := range verbs {
		for range 50 {
			verbs[i] = append(verbs[i], modeltest.Pick(t, "verb", "complete", "complete", "abandon", "drop"))
		}
	}
	for i := range receivers {
		r, err := q.NewReceiver(nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				msgs, err := r.ReceiveMessages(ctx, 1, nil)
				if err != nil {
					if !errors.Is(err, minibus.ErrClosed) {
						fail("receive: %v", err)
					}
					return
				}
				m := msgs[0]
				verb := verbs[i][n%len(verbs[i])]
				mu.Lock()
				log = append(log, simDelivery{time.Now(), m, verb})
				mu.Unlock()
				switch verb {
				case "complete":
					err = r.CompleteMessage(ctx, m, nil)
				case "abandon":
					err = r.AbandonMessage(ctx, m, nil)
				}
				if err != nil {
					fail("%s seq %d: %v", verb, m.SequenceNumber, err)
				}
			}
		}()
	}
	sent := 0
	for range modeltest.Between(t, "steps", 1, 12) {
		switch modeltest.Pick(t, "step", "send", "schedule", "sleep") {
		case "send":
			sent++
			if err := q.SendMessage(ctx, &minibus.Message{Body: []byte(fmt.Sprint(sent))}, nil); err != nil {
				t.Fatal(err)
			}
		case "schedule":
			sent++
			at := time.Now().Add(modeltest.Pick(t, "in", time.Second, lock, 30*time.Second))
			if _, err := q.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte(fmt.Sprint(sent))}}, at, nil); err != nil {
				t.Fatal(err)
			}
		case "sleep":
			time.Sleep(modeltest.Pick(t, "for", time.Nanosecond, time.Second, lock, lock+time.Nanosecond))
		}
	}
	// Let every schedule, lock and retry run out.
	time.Sleep(5 * time.Minute)
	synctest.Wait()
	rp := q.RuntimeProperties()
	mu.Lock()
	completed := 0
	lastEnd := map[int64]time.Time{} // seq -> when its last delivery's lock ended
	for _, d := range log {
		m := d.msg
		want := m.EnqueuedTime
		if m.DeliveryCount > 1 {
			want = lastEnd[m.SequenceNumber]
		}
		if !d.at.Equal(want) {
			t.Errorf("seq %d delivery %d at %v, available since %v (T5)", m.SequenceNumber, m.DeliveryCount, d.at, want)
		}
		switch d.verb {
		case "complete":
			completed++
		case "abandon":
			// Nothing blocks between the receive and the abandon, so in
			// the bubble no time passes: the lock ends when it began.
			lastEnd[m.SequenceNumber] = d.at
		case "drop":
			lastEnd[m.SequenceNumber] = m.LockedUntil
		}
	}
	mu.Unlock()
	if rp.ActiveMessageCount != 0 || rp.ScheduledMessageCount != 0 || int(rp.DeadLetterMessageCount)+completed != sent {
		t.Errorf("sent %d, completed %d, counts %+v", sent, completed, rp)
	}
	if err := ns.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, e := range errs {
		t.Error(e)
	}
}
