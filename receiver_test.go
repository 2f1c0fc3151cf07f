package minibus_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// V4 under concurrency: the broker recycles the records and bodies of
// messages that are gone. While receivers complete, peekers peek, a
// receive-and-delete receiver drains and the clock makes unsettled locks
// expire, every message any of them gets must carry its own body, never
// another's.
func TestV4_RecycledBodiesNeverLeak(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{LockDuration: 5 * time.Second, MaxDeliveryCount: 100})
	const n = 2000
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	check := func(ms []*minibus.ReceivedMessage) {
		for _, m := range ms {
			if string(m.Body) != m.MessageID {
				t.Errorf("message %s has body %q", m.MessageID, m.Body)
			}
		}
	}
	sent := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(sent)
		for i := range n {
			id := strconv.Itoa(i)
			if err := q.SendMessage(ctx, &minibus.Message{MessageID: id, Body: []byte(id)}, nil); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for c := range 3 {
		mode := minibus.ReceiveModePeekLock
		if c == 2 {
			mode = minibus.ReceiveModeReceiveAndDelete
		}
		r := e.receiver(q, &minibus.ReceiverOptions{ReceiveMode: mode})
		wg.Go(func() {
			for {
				ms, err := r.ReceiveMessages(ctx, 16, nil)
				if err != nil {
					return // cancelled at the end
				}
				check(ms)
				for i, m := range ms {
					if mode == minibus.ReceiveModeReceiveAndDelete || i%7 == 3 {
						continue // gone already, or left for its lock to expire
					}
					_ = r.CompleteMessage(ctx, m, nil) // its lock may have expired: fine
				}
			}
		})
	}
	for range 2 {
		p := e.receiver(q, nil)
		wg.Go(func() {
			for ctx.Err() == nil {
				ms, err := p.PeekMessages(ctx, 50, &minibus.PeekMessagesOptions{FromSequenceNumber: 1})
				if err != nil {
					return
				}
				check(ms)
			}
		})
	}
	// This goroutine alone moves the clock, until everything is settled.
	drained := false
	for range 100000 {
		e.mock.Add(time.Second)
		select {
		case <-sent:
			drained = q.RuntimeProperties().ActiveMessageCount == 0
		default:
		}
		if drained {
			break
		}
	}
	cancel()
	wg.Wait()
	require.True(t, drained, "the queue was not drained")
	require.Zero(t, q.RuntimeProperties().TotalMessageCount, "nothing was dead-lettered")
}

// V4, R1: the copies a topic makes share one stored body; completing a copy
// in one subscription, which recycles what it can, leaves the others'
// bodies intact.
func TestV4_TopicCopiesKeepTheirBodies(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	a := e.receiver(e.subscription(top, "a", nil), nil)
	b := e.receiver(e.subscription(top, "b", nil), nil)
	for round := range 20 {
		bodies := make([]string, 20)
		for i := range bodies {
			bodies[i] = strconv.Itoa(round*100 + i)
			require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{Body: []byte(bodies[i])}, nil))
		}
		for _, m := range e.receive(a, 20) {
			require.NoError(t, a.CompleteMessage(e.ctx, m, nil))
		}
		// New sends would reuse any recycled body.
		require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{Body: []byte("overwrite!")}, nil))
		got := e.receive(b, 21)
		for i, want := range bodies {
			require.Equal(t, want, string(got[i].Body))
		}
		for _, m := range got {
			require.NoError(t, b.CompleteMessage(e.ctx, m, nil))
		}
		for _, m := range e.receive(a, 1) {
			require.NoError(t, a.CompleteMessage(e.ctx, m, nil))
		}
	}
}
