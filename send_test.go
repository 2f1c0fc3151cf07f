package minibus_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Q1: sequence numbers 1, 2, 3 … per queue, no gaps, no reuse. Q3:
// EnqueuedTime is the clock's now at enqueue. Q4: receive order is sequence
// order.
func TestQ1_Q3_SequenceNumbersAndEnqueuedTime(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	other := e.queue("other", nil)
	e.send(q, "a", "b")
	e.send(other, "x")
	e.mock.Add(time.Second)
	e.send(q, "c")
	r := e.receiver(q, &minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
	got := e.receive(r, 3)
	require.Equal(t, []int64{1, 2, 3}, seqs(got))
	require.True(t, got[0].EnqueuedTime.Equal(epoch))
	require.True(t, got[2].EnqueuedTime.Equal(at(time.Second)))
	e.send(q, "d")
	require.Equal(t, []int64{4}, seqs(e.receive(r, 1)), "numbers are not reused after removal")
	ro := e.receiver(other, nil)
	require.Equal(t, []int64{1}, seqs(e.receive(ro, 1)), "numbering is per queue")
}

// Bad messages are ErrInvalidArgument naming the message and field, and a
// batch with one bad message enqueues nothing.
func TestSendBadInput(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	long := strings.Repeat("x", 129)
	for _, c := range []struct {
		msgs []*minibus.Message
		why  string
	}{
		{nil, "no messages"},
		{[]*minibus.Message{{}, nil}, "message 1 is nil"},
		{[]*minibus.Message{{MessageID: long}}, "message 0: MessageID is 129 characters"},
		{[]*minibus.Message{{SessionID: long}}, "SessionID"},
		{[]*minibus.Message{{PartitionKey: long}}, "PartitionKey"},
		{[]*minibus.Message{{TimeToLive: -time.Second}}, "TimeToLive -1s is negative"},
		{[]*minibus.Message{{}, {ApplicationProperties: map[string]any{"m": map[string]int{}}}}, `message 1: application property "m" has unsupported type map[string]int`},
		{[]*minibus.Message{{ApplicationProperties: map[string]any{"s": struct{}{}}}}, "unsupported type struct {}"},
	} {
		requireSentinel(t, q.SendMessages(e.ctx, c.msgs, nil), minibus.ErrInvalidArgument, c.why)
		_, err := q.ScheduleMessages(e.ctx, c.msgs, at(time.Hour), nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, c.why)
	}
	requireSentinel(t, q.SendMessage(e.ctx, nil, nil), minibus.ErrInvalidArgument, "message 0 is nil")
	require.Zero(t, q.RuntimeProperties().TotalMessageCount)
}

// R1, Q2: every matching subscription gets its own copy carrying the topic's
// sequence number; copies are independent.
func TestR1_Q2_FanOut(t *testing.T) {
	e := newEnv(t)
	top := e.topic("orders", nil)
	all := e.subscription(top, "all", nil)
	eu := e.subscription(top, "eu", &minibus.SubscriptionProperties{DefaultRule: &minibus.RuleProperties{
		Filter: minibus.SQLFilter{Expression: "region = 'eu'"},
	}})
	require.NoError(t, top.SendMessages(e.ctx, []*minibus.Message{
		{Body: []byte("1"), ApplicationProperties: map[string]any{"region": "eu"}},
		{Body: []byte("2"), ApplicationProperties: map[string]any{"region": "us"}},
	}, nil))

	ra := e.receiver(all, nil)
	re := e.receiver(eu, nil)
	gotAll := e.receive(ra, 2)
	gotEU := e.receive(re, 1)
	require.Equal(t, []int64{1, 2}, seqs(gotAll))
	require.Equal(t, []int64{1}, seqs(gotEU), "the topic's number (Q2)")
	require.NoError(t, ra.CompleteMessage(e.ctx, gotAll[0], nil))
	require.NoError(t, re.AbandonMessage(e.ctx, gotEU[0], nil))
	again := e.receive(re, 1)[0]
	require.EqualValues(t, 2, again.DeliveryCount, "its own delivery count")
	require.EqualValues(t, 1, all.RuntimeProperties().ActiveMessageCount)
	require.EqualValues(t, 1, eu.RuntimeProperties().ActiveMessageCount)
	gotAll[1].Body[0] = 'X'
	require.Equal(t, "2", string(e.peekAll(ra)[0].Body), "copies share nothing with callers")
}

// Q3, F2: senders beside a moving clock. Each call reads the clock before
// it takes the entity's lock, so one that read it earlier may enqueue
// later; yet in a queue that takes sends and the forwards of two others,
// every message's EnqueuedTime is at or after that of the message numbered
// one less, and the queue's events come with instants that never go back.
func TestQ3_EnqueuedTimeFollowsSequenceBesideAMovingClock(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(epoch)
	var mu sync.Mutex
	var last time.Time
	back := 0
	ns := minibus.NewNamespace(minibus.WithClock(mock), minibus.WithObserver(func(ev minibus.Event) {
		if ev.Entity != "dest" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ev.At.Before(last) {
			back++
		}
		last = ev.At
	}))
	defer func() { require.NoError(t, ns.Close()) }()
	ctx := context.Background()
	dest, err := ns.CreateQueue("dest", nil)
	require.NoError(t, err)
	targets := []*minibus.Queue{dest}
	for _, name := range []string{"a", "b"} {
		q, err := ns.CreateQueue(name, &minibus.QueueProperties{ForwardTo: "dest"})
		require.NoError(t, err)
		targets = append(targets, q)
	}
	const senders, each = 4, 500
	stop := make(chan struct{})
	moved := make(chan struct{})
	go func() {
		defer close(moved)
		for {
			select {
			case <-stop:
				return
			default:
				mock.Add(time.Microsecond)
			}
		}
	}()
	var wg sync.WaitGroup
	for i := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				assert.NoError(t, targets[(i+j)%len(targets)].SendMessage(ctx, &minibus.Message{}, nil))
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-moved
	r, err := dest.NewReceiver(nil)
	require.NoError(t, err)
	var prev *minibus.ReceivedMessage
	n := 0
	for {
		ms, err := r.PeekMessages(ctx, 100, nil)
		require.NoError(t, err)
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			if prev != nil {
				require.False(t, m.EnqueuedTime.Before(prev.EnqueuedTime), "#%d enqueued at %v, #%d at %v", prev.SequenceNumber, prev.EnqueuedTime, m.SequenceNumber, m.EnqueuedTime)
			}
			prev = m
			n++
		}
	}
	require.Equal(t, senders*each, n)
	mu.Lock()
	defer mu.Unlock()
	require.Zero(t, back, "events of dest whose instant went back")
}
