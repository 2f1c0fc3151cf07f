package minibus_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// Tests of WithObserver, Event and EventKind, and of the debug log line per
// event.

// journal records the events an observer is given.
type journal struct {
	mu  sync.Mutex
	evs []minibus.Event
}

func (j *journal) record(ev minibus.Event) {
	j.mu.Lock()
	j.evs = append(j.evs, ev)
	j.mu.Unlock()
}

// take returns the events recorded since the last take, one line each.
func (j *journal) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	lines := eventLines(j.evs, "")
	j.evs = nil
	return lines
}

func (j *journal) all() []minibus.Event {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]minibus.Event(nil), j.evs...)
}

// observed is a namespace on a mock clock at the epoch with a journal.
func observed(t *testing.T, opts ...minibus.Option) (*minibus.Namespace, *clock.Mock, *journal) {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(epoch)
	j := &journal{}
	ns := minibus.NewNamespace(append([]minibus.Option{minibus.WithClock(mock), minibus.WithObserver(j.record)}, opts...)...)
	t.Cleanup(func() { _ = ns.Close() })
	return ns, mock, j
}

// Every event of a queue's life, each with its kind, entity, sub-queue
// (where the message was before), sequence number (the new one for an
// activation), MessageID, DeliveryCount, reason and instant; and each
// delivered to the observer before the call that caused it returns.
func TestEvents_QueueLifecycle(t *testing.T) {
	ns, mock, j := observed(t)
	ctx := context.Background()
	q, err := ns.CreateQueue("q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
	require.NoError(t, err)
	require.Equal(t, []string{"EntityCreated q at=+0s"}, j.take())

	require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "a"}, nil))
	require.Equal(t, []string{"Sent q seq=1 id=a dc=0 at=+0s"}, j.take())
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(ctx)
	m := receiveOne(t, r)
	require.Equal(t, []string{"Delivered q seq=1 id=a dc=1 at=+0s"}, j.take())
	require.NoError(t, r.AbandonMessage(ctx, m, nil))
	require.Equal(t, []string{"Abandoned q seq=1 id=a dc=1 at=+0s"}, j.take())
	mock.Add(time.Second)
	m = receiveOne(t, r)
	require.Equal(t, []string{"Delivered q seq=1 id=a dc=2 at=+1s"}, j.take())
	require.NoError(t, r.DeferMessage(ctx, m, nil))
	require.Equal(t, []string{"Deferred q seq=1 id=a dc=2 at=+1s"}, j.take())
	msgs, err := r.ReceiveDeferredMessages(ctx, []int64{1}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"Delivered q seq=1 id=a dc=3 at=+1s"}, j.take())
	require.NoError(t, r.CompleteMessage(ctx, msgs[0], nil))
	require.Equal(t, []string{"Completed q seq=1 id=a dc=3 at=+1s"}, j.take())

	// Scheduling: EventScheduled and no EventSent; the activation carries
	// the new sequence number and its own instant.
	_, err = q.ScheduleMessages(ctx, []*minibus.Message{{MessageID: "s"}}, epoch.Add(time.Minute), nil)
	require.NoError(t, err)
	seqs, err := q.ScheduleMessages(ctx, []*minibus.Message{{MessageID: "c"}}, epoch.Add(time.Hour), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"Scheduled q seq=2 id=s dc=0 at=+1s", "Scheduled q seq=3 id=c dc=0 at=+1s"}, j.take())
	require.NoError(t, q.CancelScheduledMessages(ctx, seqs, nil))
	require.Equal(t, []string{"Canceled q seq=3 id=c dc=0 at=+1s"}, j.take())
	mock.Add(2 * time.Minute) // to +2m1s
	require.Empty(t, j.take(), "nothing happens until a call")
	_ = q.RuntimeProperties()
	require.Equal(t, []string{"Activated q seq=4 id=s dc=0 at=+1m0s"}, j.take(), "the deadline's own instant")

	m = receiveOne(t, r)
	require.NoError(t, r.DeadLetterMessage(ctx, m, &minibus.DeadLetterOptions{Reason: "Bad"}))
	require.Equal(t, []string{
		"Delivered q seq=4 id=s dc=1 at=+2m1s",
		"DeadLettered q seq=4 id=s dc=1 reason=Bad at=+2m1s",
	}, j.take())
	dlq, err := q.NewReceiver(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	require.NoError(t, err)
	defer dlq.Close(ctx)
	m = receiveOne(t, dlq)
	require.NoError(t, dlq.CompleteMessage(ctx, m, nil))
	require.Equal(t, []string{
		"Delivered q sq=DeadLetter seq=4 id=s dc=2 at=+2m1s",
		"Completed q sq=DeadLetter seq=4 id=s dc=2 at=+2m1s",
	}, j.take())

	require.NoError(t, q.SendMessages(ctx, []*minibus.Message{{MessageID: "d"}, {MessageID: "e"}}, nil))
	n, err := r.DeleteMessages(ctx, 1, nil)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []string{
		"Sent q seq=5 id=d dc=0 at=+2m1s",
		"Sent q seq=6 id=e dc=0 at=+2m1s",
		"Removed q seq=5 id=d dc=0 at=+2m1s",
	}, j.take())

	require.NoError(t, ns.DeleteQueue("q"))
	require.Equal(t, []string{"EntityDeleted q at=+2m1s"}, j.take())
}

func receiveOne(t *testing.T, r msgReceiver) *minibus.ReceivedMessage {
	t.Helper()
	msgs, err := r.ReceiveMessages(context.Background(), 1, &minibus.ReceiveMessagesOptions{NoWait: true})
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	return msgs[0]
}

// Compound outcomes give both events, in order, at the deadline's instant,
// delivered before the next call returns.
func TestEvents_CompoundOutcomes(t *testing.T) {
	ctx := context.Background()
	t.Run("expiry", func(t *testing.T) {
		ns, mock, j := observed(t)
		dl, err := ns.CreateQueue("dl", &minibus.QueueProperties{DeadLetteringOnMessageExpiration: true})
		require.NoError(t, err)
		drop, err := ns.CreateQueue("drop", nil)
		require.NoError(t, err)
		for _, q := range []*minibus.Queue{dl, drop} {
			require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "x", TimeToLive: 10 * time.Second}, nil))
		}
		j.take()
		mock.Add(time.Minute)
		_ = dl.RuntimeProperties()
		require.Equal(t, []string{
			"Expired dl seq=1 id=x dc=0 at=+10s",
			"DeadLettered dl seq=1 id=x dc=0 reason=TTLExpiredException at=+10s",
			"Expired drop seq=1 id=x dc=0 at=+10s",
		}, j.take(), "every deadline at or before now, before the call returns")
	})
	t.Run("lock lost at MaxDeliveryCount", func(t *testing.T) {
		ns, mock, j := observed(t)
		q, err := ns.CreateQueue("q", &minibus.QueueProperties{MaxDeliveryCount: 2, LockDuration: 30 * time.Second})
		require.NoError(t, err)
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "x"}, nil))
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		defer r.Close(ctx)
		receiveOne(t, r)
		mock.Add(30 * time.Second)
		receiveOne(t, r)
		mock.Add(time.Minute)
		_ = q.RuntimeProperties()
		require.Equal(t, []string{
			"EntityCreated q at=+0s",
			"Sent q seq=1 id=x dc=0 at=+0s",
			"Delivered q seq=1 id=x dc=1 at=+0s",
			"LockLost q seq=1 id=x dc=1 at=+30s",
			"Delivered q seq=1 id=x dc=2 at=+30s",
			"LockLost q seq=1 id=x dc=2 at=+1m0s",
			"DeadLettered q seq=1 id=x dc=2 reason=MaxDeliveryCountExceeded at=+1m0s",
		}, j.take())
	})
	t.Run("abandon at MaxDeliveryCount", func(t *testing.T) {
		ns, _, j := observed(t)
		q, err := ns.CreateQueue("q", &minibus.QueueProperties{MaxDeliveryCount: 1})
		require.NoError(t, err)
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "x"}, nil))
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		defer r.Close(ctx)
		m := receiveOne(t, r)
		j.take()
		require.NoError(t, r.AbandonMessage(ctx, m, nil))
		require.Equal(t, []string{
			"Abandoned q seq=1 id=x dc=1 at=+0s",
			"DeadLettered q seq=1 id=x dc=1 reason=MaxDeliveryCountExceeded at=+0s",
		}, j.take())
	})
	t.Run("session lock lost", func(t *testing.T) {
		ns, mock, j := observed(t)
		q, err := ns.CreateQueue("q", &minibus.QueueProperties{RequiresSession: true, MaxDeliveryCount: 1, LockDuration: 30 * time.Second})
		require.NoError(t, err)
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "x", SessionID: "s"}, nil))
		s, err := q.AcceptSession(ctx, "s", nil)
		require.NoError(t, err)
		defer s.Close(ctx)
		receiveOne(t, s)
		j.take()
		mock.Add(30 * time.Second)
		_ = q.RuntimeProperties()
		require.Equal(t, []string{
			"LockLost q seq=1 id=x dc=1 at=+30s",
			"DeadLettered q seq=1 id=x dc=1 reason=MaxDeliveryCountExceeded at=+30s",
		}, j.take())
	})
	t.Run("deleted on idle", func(t *testing.T) {
		ns, mock, j := observed(t)
		_, err := ns.CreateQueue("q", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute})
		require.NoError(t, err)
		mock.Add(7 * time.Minute)
		require.NoError(t, ns.WaitIdle(ctx)) // catches up
		require.Equal(t, []string{"EntityCreated q at=+0s", "EntityDeleted q at=+5m0s"}, j.take())
	})
}

// A topic send gives EventSent for the topic and one per subscription copy,
// named "topic/Subscriptions/sub"; a scheduled topic message gives
// EventScheduled, then at its activation EventActivated and the copies.
func TestEvents_Topic(t *testing.T) {
	ctx := context.Background()
	ns, mock, j := observed(t)
	topic, err := ns.CreateTopic("t", nil)
	require.NoError(t, err)
	a, err := topic.CreateSubscription("a", nil)
	require.NoError(t, err)
	_, err = topic.CreateSubscription("b", nil)
	require.NoError(t, err)
	_, err = topic.CreateSubscription("none", &minibus.SubscriptionProperties{DefaultRule: &minibus.RuleProperties{Filter: minibus.FalseFilter{}}})
	require.NoError(t, err)
	require.Equal(t, []string{
		"EntityCreated t at=+0s",
		"EntityCreated t/Subscriptions/a at=+0s",
		"EntityCreated t/Subscriptions/b at=+0s",
		"EntityCreated t/Subscriptions/none at=+0s",
	}, j.take())

	require.NoError(t, topic.SendMessage(ctx, &minibus.Message{MessageID: "m"}, nil))
	require.Equal(t, []string{
		"Sent t seq=1 id=m dc=0 at=+0s",
		"Sent t/Subscriptions/a seq=1 id=m dc=0 at=+0s",
		"Sent t/Subscriptions/b seq=1 id=m dc=0 at=+0s",
	}, j.take())

	_, err = topic.ScheduleMessages(ctx, []*minibus.Message{{MessageID: "s"}}, epoch.Add(time.Minute), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"Scheduled t seq=2 id=s dc=0 at=+0s"}, j.take())
	mock.Add(time.Minute)
	r, err := a.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(ctx)
	require.Equal(t, []string{
		"Activated t seq=3 id=s dc=0 at=+1m0s",
		"Sent t/Subscriptions/a seq=3 id=s dc=0 at=+1m0s",
		"Sent t/Subscriptions/b seq=3 id=s dc=0 at=+1m0s",
	}, j.take())
	m := receiveOne(t, r)
	require.NoError(t, r.CompleteMessage(ctx, m, nil))
	require.Equal(t, []string{
		"Delivered t/Subscriptions/a seq=1 id=m dc=1 at=+1m0s",
		"Completed t/Subscriptions/a seq=1 id=m dc=1 at=+1m0s",
	}, j.take())

	require.NoError(t, topic.DeleteSubscription("b"))
	require.Equal(t, []string{"EntityDeleted t/Subscriptions/b at=+1m0s"}, j.take())
	require.NoError(t, ns.DeleteTopic("t"))
	require.ElementsMatch(t, []string{
		"EntityDeleted t at=+1m0s",
		"EntityDeleted t/Subscriptions/a at=+1m0s",
		"EntityDeleted t/Subscriptions/none at=+1m0s",
	}, j.take())
}

// Forwarding: EventForwarded names the destination in Reason; the
// destination gets its EventSent; a forwarded dead letter leaves from the
// dead-letter queue.
func TestEvents_Forwarded(t *testing.T) {
	ctx := context.Background()
	ns, _, j := observed(t)
	_, err := ns.CreateQueue("dst", nil)
	require.NoError(t, err)
	src, err := ns.CreateQueue("src", &minibus.QueueProperties{ForwardTo: "dst"})
	require.NoError(t, err)
	dls, err := ns.CreateQueue("dls", &minibus.QueueProperties{ForwardDeadLetteredMessagesTo: "dst"})
	require.NoError(t, err)
	j.take()
	require.NoError(t, src.SendMessage(ctx, &minibus.Message{MessageID: "f"}, nil))
	require.Equal(t, []string{
		"Sent src seq=1 id=f dc=0 at=+0s",
		"Forwarded src seq=1 id=f dc=0 reason=dst at=+0s",
		"Sent dst seq=1 id=f dc=0 at=+0s",
	}, j.take())

	require.NoError(t, dls.SendMessage(ctx, &minibus.Message{MessageID: "d"}, nil))
	r, err := dls.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(ctx)
	m := receiveOne(t, r)
	j.take()
	require.NoError(t, r.DeadLetterMessage(ctx, m, &minibus.DeadLetterOptions{Reason: "No"}))
	require.Equal(t, []string{
		"DeadLettered dls seq=1 id=d dc=1 reason=No at=+0s",
		"Forwarded dls sq=DeadLetter seq=1 id=d dc=1 reason=dst at=+0s",
		"Sent dst seq=2 id=d dc=0 at=+0s",
	}, j.take())
}

// The observer is called outside the entity and namespace locks: a
// goroutine it waits for can read the very entity the event is about, also
// for an event of a deadline found by a catch-up.
func TestEvents_ObserverOutsideEntityLocks(t *testing.T) {
	ctx := context.Background()
	var q *minibus.Queue
	var ns *minibus.Namespace
	var peeker *minibus.Receiver
	failures := make(chan string, 10)
	calls := 0
	observer := func(ev minibus.Event) {
		if ev.Entity != "q" || (ev.Kind != minibus.EventSent && ev.Kind != minibus.EventExpired) {
			return
		}
		calls++
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = q.RuntimeProperties()
			_, _ = peeker.PeekMessages(ctx, 10, &minibus.PeekMessagesOptions{FromSequenceNumber: 1})
			_ = ns.Queues()
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			failures <- fmt.Sprintf("the observer of %v holds a lock the calls need", ev.Kind)
			<-done
		}
	}
	ns, mock, _ := observed(t, minibus.WithObserver(observer))
	var err error
	q, err = ns.CreateQueue("q", nil)
	require.NoError(t, err)
	peeker, err = q.NewReceiver(nil)
	require.NoError(t, err)
	defer peeker.Close(ctx)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{TimeToLive: time.Second}, nil))
	mock.Add(time.Second)
	_ = q.RuntimeProperties()
	require.Equal(t, 2, calls)
	require.Empty(t, failures)
}

// Events are delivered outside every broker lock, the catch-up's too: an
// observer of one entity's event that waits for another goroutine's call on
// another entity, whose deadline came in the same catch-up, does not
// deadlock; that call delivers its entity's event itself, before it returns
// (every deadline at or before now is observed before the next call
// returns).
func TestEvents_ObserverDuringCatchUpOutsideEveryLock(t *testing.T) {
	ctx := context.Background()
	var q2 *minibus.Queue
	var j *journal
	blocked := make(chan string, 10)
	done := make(chan struct{})
	observer := func(ev minibus.Event) {
		if ev.Kind != minibus.EventExpired || ev.Entity != "q1" {
			return
		}
		go func() {
			defer close(done)
			_ = q2.RuntimeProperties() // q2's deadline is due too: a catch-up
			if len(eventLines(j.all(), "q2", minibus.EventExpired)) != 1 {
				blocked <- "a namespace call returned before q2's expiry was observed"
			}
		}()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			blocked <- "a namespace call from another goroutine waited for the observer"
		}
	}
	defer func() { <-done }()
	ns, mock, j := observed(t, minibus.WithObserver(observer))
	q1, err := ns.CreateQueue("q1", nil)
	require.NoError(t, err)
	q2, err = ns.CreateQueue("q2", nil)
	require.NoError(t, err)
	require.NoError(t, q1.SendMessage(ctx, &minibus.Message{TimeToLive: 10 * time.Second}, nil))
	require.NoError(t, q2.SendMessage(ctx, &minibus.Message{TimeToLive: 20 * time.Second}, nil))
	mock.Add(time.Minute)
	_ = q1.RuntimeProperties()
	<-done
	select {
	case msg := <-blocked:
		t.Fatal(msg)
	default:
	}
}

// Events are in order per entity, whatever the concurrency: each queue's
// EventSent sequence numbers rise, and each message's events come in the
// order of its life.
func TestEvents_OrderPerEntity(t *testing.T) {
	ctx := context.Background()
	ns, _, j := observed(t)
	shared, err := ns.CreateQueue("shared", nil)
	require.NoError(t, err)
	const senders, each = 4, 200
	var wg sync.WaitGroup
	for g := range senders {
		own, err := ns.CreateQueue("own"+strconv.Itoa(g), nil)
		require.NoError(t, err)
		wg.Go(func() {
			for range each {
				if err := own.SendMessage(ctx, &minibus.Message{}, nil); err != nil {
					t.Error(err)
					return
				}
				if err := shared.SendMessage(ctx, &minibus.Message{}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	// Two receivers complete the shared queue's messages meanwhile.
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var received atomic.Int64
	for range 2 {
		r, err := shared.NewReceiver(nil)
		require.NoError(t, err)
		defer r.Close(ctx)
		wg.Go(func() {
			for i := 0; ; i++ {
				msgs, err := r.ReceiveMessages(rctx, 1+i%5, nil)
				if rctx.Err() != nil {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				for _, m := range msgs {
					if err := r.CompleteMessage(ctx, m, nil); err != nil {
						t.Error(err)
						return
					}
				}
				if received.Add(int64(len(msgs))) == senders*each {
					stop()
				}
			}
		})
	}
	wg.Wait()
	lastSent := map[string]int64{}
	stage := map[string]map[int64]minibus.EventKind{}
	for _, ev := range j.all() {
		if ev.SequenceNumber == 0 {
			continue
		}
		if ev.Kind == minibus.EventSent {
			require.Greater(t, ev.SequenceNumber, lastSent[ev.Entity], "EventSent of %s out of order", ev.Entity)
			lastSent[ev.Entity] = ev.SequenceNumber
		}
		if stage[ev.Entity] == nil {
			stage[ev.Entity] = map[int64]minibus.EventKind{}
		}
		prev, seen := stage[ev.Entity][ev.SequenceNumber]
		switch ev.Kind {
		case minibus.EventSent:
			require.False(t, seen)
		case minibus.EventDelivered:
			require.Equal(t, minibus.EventSent, prev, "%s #%d delivered before sent", ev.Entity, ev.SequenceNumber)
		case minibus.EventCompleted:
			require.Equal(t, minibus.EventDelivered, prev, "%s #%d completed before delivered", ev.Entity, ev.SequenceNumber)
		}
		stage[ev.Entity][ev.SequenceNumber] = ev.Kind
	}
	require.EqualValues(t, senders*each, lastSent["shared"])
	for g := range senders {
		require.EqualValues(t, each, lastSent["own"+strconv.Itoa(g)])
	}
	for seq, k := range stage["shared"] {
		require.Equal(t, minibus.EventCompleted, k, "shared #%d", seq)
	}
}

// A call returns only after the observer has seen its events, also when
// calls run concurrently and another goroutine's delivery took them.
func TestEvents_ObservedBeforeConcurrentCallsReturn(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	sent := map[string]int{}
	ns := minibus.NewNamespace(minibus.WithObserver(func(ev minibus.Event) {
		if ev.Kind != minibus.EventSent {
			return
		}
		time.Sleep(time.Microsecond) // a slow observer widens the window
		mu.Lock()
		sent[ev.Entity]++
		mu.Unlock()
	}))
	defer ns.Close()
	var wg sync.WaitGroup
	for g := range 4 {
		q, err := ns.CreateQueue("q"+strconv.Itoa(g), nil)
		require.NoError(t, err)
		wg.Go(func() {
			for i := 1; i <= 2000; i++ {
				if err := q.SendMessage(ctx, &minibus.Message{}, nil); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				n := sent[q.Name()]
				mu.Unlock()
				if n != i {
					t.Errorf("SendMessage %d on %s returned before its EventSent was observed", i, q.Name())
					return
				}
			}
		})
	}
	wg.Wait()
}

// Two goroutines send, receive and complete on one queue at once: each
// call returns only once the observer has seen its own event (which the
// other goroutine's delivery may have taken), and each message's events
// come in the order of its life.
func TestEvents_OneEntityConcurrentCalls(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[string][]minibus.EventKind{} // MessageID: its events' kinds
	ns := minibus.NewNamespace(minibus.WithObserver(func(ev minibus.Event) {
		mu.Lock()
		seen[ev.MessageID] = append(seen[ev.MessageID], ev.Kind)
		mu.Unlock()
	}))
	defer ns.Close()
	q, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	// observed reports whether the observer has seen kind for id.
	observed := func(id string, kind minibus.EventKind) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(seen[id], kind)
	}
	var wg sync.WaitGroup
	for g := range 2 {
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		defer r.Close(ctx)
		wg.Go(func() {
			for i := range 500 {
				id := fmt.Sprintf("g%d-%d", g, i)
				if err := q.SendMessage(ctx, &minibus.Message{MessageID: id}, nil); err != nil {
					t.Error(err)
					return
				}
				if !observed(id, minibus.EventSent) {
					t.Errorf("SendMessage of %s returned before its EventSent was observed", id)
					return
				}
				msgs, err := r.ReceiveMessages(ctx, 1, nil)
				if err != nil {
					t.Error(err)
					return
				}
				m := msgs[0] // this goroutine's or the other's
				if !observed(m.MessageID, minibus.EventDelivered) {
					t.Errorf("ReceiveMessages of %s returned before its EventDelivered was observed", m.MessageID)
					return
				}
				if err := r.CompleteMessage(ctx, m, nil); err != nil {
					t.Error(err)
					return
				}
				if !observed(m.MessageID, minibus.EventCompleted) {
					t.Errorf("CompleteMessage of %s returned before its EventCompleted was observed", m.MessageID)
					return
				}
			}
		})
	}
	wg.Wait()
	require.Len(t, seen, 1000+1) // and the queue's creation, without a message
	for id, kinds := range seen {
		if id != "" {
			require.Equal(t, []minibus.EventKind{minibus.EventSent, minibus.EventDelivered, minibus.EventCompleted}, kinds, id)
		}
	}
}

// One goroutine's events of many entities come in the order they happened:
// a topic's EventSent, then each subscription's, in their order.
func TestEvents_ManyEntitiesInOrder(t *testing.T) {
	ctx := context.Background()
	ns, _, j := observed(t)
	topic, err := ns.CreateTopic("t", nil)
	require.NoError(t, err)
	var want []string
	for i := range 40 {
		name := fmt.Sprintf("s%02d", i)
		_, err := topic.CreateSubscription(name, nil)
		require.NoError(t, err)
		want = append(want, "Sent t/Subscriptions/"+name+" seq=1 id=m dc=0 at=+0s")
	}
	j.take()
	require.NoError(t, topic.SendMessage(ctx, &minibus.Message{MessageID: "m"}, nil))
	require.Equal(t, append([]string{"Sent t seq=1 id=m dc=0 at=+0s"}, want...), j.take())
}

// An entity deleted and created again, under another case, keeps its
// events' order, each event with the path of its own entity.
func TestEvents_EntityCreatedAgain(t *testing.T) {
	ctx := context.Background()
	ns, _, j := observed(t)
	q, err := ns.CreateQueue("Orders", nil)
	require.NoError(t, err)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "a"}, nil))
	require.NoError(t, ns.DeleteQueue("Orders"))
	q, err = ns.CreateQueue("orders", nil)
	require.NoError(t, err)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "b"}, nil))
	require.Equal(t, []string{
		"EntityCreated Orders at=+0s",
		"Sent Orders seq=1 id=a dc=0 at=+0s",
		"EntityDeleted Orders at=+0s",
		"EntityCreated orders at=+0s",
		"Sent orders seq=1 id=b dc=0 at=+0s",
	}, j.take())
}

// An observer that panics does not fail the call that hands the event
// over (issue 42: the panic escaped from SendMessage, though the messages
// were sent): it is recovered and logged on the namespace's logger, the
// call keeps its own result, and the other observers and the later events
// are observed as usual, as a panicking fault injector fails nothing but
// its own call.
func TestEvents_ObserverPanics(t *testing.T) {
	ctx := context.Background()
	j, other := &journal{}, &journal{}
	var logged strings.Builder
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logged}, nil))
	mock := clock.NewMock()
	mock.Set(epoch)
	ns := minibus.NewNamespace(minibus.WithClock(mock), minibus.WithLogger(logger), minibus.WithObserver(func(ev minibus.Event) {
		if ev.MessageID == "boom" && (ev.Kind == minibus.EventSent || ev.Kind == minibus.EventExpired) {
			panic("observer failed")
		}
		j.record(ev)
	}), minibus.WithObserver(other.record))
	defer ns.Close()
	q, err := ns.CreateQueue("q", &minibus.QueueProperties{DefaultMessageTimeToLive: time.Minute})
	require.NoError(t, err)
	require.NotPanics(t, func() {
		require.NoError(t, q.SendMessages(ctx, []*minibus.Message{{MessageID: "boom"}, {MessageID: "next"}}, nil))
	})
	require.Equal(t, []string{"next"}, eventIDs(j.all(), minibus.EventSent), "the events after it, in the same call")
	require.Equal(t, []string{"boom", "next"}, eventIDs(other.all(), minibus.EventSent), "the other observer saw them all")
	require.Equal(t, int64(2), q.RuntimeProperties().ActiveMessageCount, "the messages were sent")
	logMu.Lock()
	line := logged.String()
	logMu.Unlock()
	require.Contains(t, line, "level=ERROR")
	require.Contains(t, line, `msg="minibus: observer panicked"`)
	require.Contains(t, line, `panic="observer failed"`)
	require.Contains(t, line, "kind=Sent entity=q seq=1")

	// A call that fails keeps its error, though the expiries its catch-up
	// hands over make the observer panic.
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(ctx)
	mock.Add(time.Minute)
	require.NotPanics(t, func() {
		err = r.CompleteMessage(ctx, &minibus.ReceivedMessage{LockToken: [16]byte{1}}, nil)
	})
	require.ErrorIs(t, err, minibus.ErrLockLost)
	require.Equal(t, []string{"boom", "next"}, eventIDs(other.all(), minibus.EventExpired))
	require.Equal(t, []string{"next"}, eventIDs(j.all(), minibus.EventExpired))
	require.Zero(t, q.RuntimeProperties().TotalMessageCount)
}

// lockedWriter writes to w under mu: a logger's output, read by the test.
type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func eventIDs(evs []minibus.Event, kind minibus.EventKind) []string {
	var out []string
	for _, ev := range evs {
		if ev.Kind == kind {
			out = append(out, ev.MessageID)
		}
	}
	return out
}

// Each WithObserver adds one; all are called with the same events; a nil
// one is ignored.
func TestEvents_SeveralObservers(t *testing.T) {
	second := &journal{}
	ns, _, first := observed(t, minibus.WithObserver(nil), minibus.WithObserver(second.record))
	q, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	require.NoError(t, q.SendMessage(context.Background(), &minibus.Message{MessageID: "a"}, nil))
	want := []string{"EntityCreated q at=+0s", "Sent q seq=1 id=a dc=0 at=+0s"}
	require.Equal(t, want, first.take())
	require.Equal(t, want, second.take())
}

// With a logger at Debug level, each event is a debug line, with or
// without an observer; at Info level there is none.
func TestEvents_DebugLog(t *testing.T) {
	ctx := context.Background()
	run := func(level slog.Level, opts ...minibus.Option) string {
		buf := &lockedBuffer{}
		logger := slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level}))
		mock := clock.NewMock()
		mock.Set(epoch)
		ns := minibus.NewNamespace(append([]minibus.Option{minibus.WithClock(mock), minibus.WithLogger(logger)}, opts...)...)
		defer ns.Close()
		q, err := ns.CreateQueue("q", nil)
		require.NoError(t, err)
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "a"}, nil))
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		defer r.Close(ctx)
		m := receiveOne(t, r)
		require.NoError(t, r.DeadLetterMessage(ctx, m, &minibus.DeadLetterOptions{Reason: "Bad"}))
		return buf.String()
	}
	eventLog := regexp.MustCompile(`(?m)^.*msg="minibus: event".*$`)
	j := &journal{}
	for _, out := range []string{run(slog.LevelDebug), run(slog.LevelDebug, minibus.WithObserver(j.record))} {
		lines := eventLog.FindAllString(out, -1)
		require.Len(t, lines, 4, out)
		for i, want := range []string{
			`level=DEBUG msg="minibus: event" kind=EntityCreated entity=q at=2026-01-01T00:00:00.000Z`,
			`kind=Sent entity=q at=2026-01-01T00:00:00.000Z seq=1 messageID=a deliveries=0`,
			`kind=Delivered entity=q at=2026-01-01T00:00:00.000Z seq=1 messageID=a deliveries=1`,
			`kind=DeadLettered entity=q at=2026-01-01T00:00:00.000Z seq=1 messageID=a deliveries=1 reason=Bad`,
		} {
			require.Contains(t, lines[i], want)
		}
	}
	require.Len(t, j.take(), 4, "the observer saw the same events")
	require.NotContains(t, run(slog.LevelInfo), "minibus: event")
	require.NotContains(t, run(slog.LevelInfo, minibus.WithObserver(func(minibus.Event) {})), "minibus: event")
}
