package e2e_test

// Many azservicebus clients at once against one server (SEMANTICS W1: no
// limit on connections, sessions or links but memory; L2: a locked
// message is invisible to every other receive).

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
)

// TestSDKConcurrency_ManyClients_ExactlyOnce runs 20 clients, each with
// its own connection, a sender and a peek-lock receiver on one queue:
// every client sends 25 messages (singly and in a batch) while every
// receiver receives and completes concurrently. Each of the 500 messages
// is completed exactly once (L2), by whichever receiver got it, and the
// queue ends empty.
func TestSDKConcurrency_ManyClients_ExactlyOnce(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("shared", nil)
	const clients, each = 20, 25
	const total = clients * each
	type client struct {
		s *azservicebus.Sender
		r *azservicebus.Receiver
	}
	cs := make([]client, clients)
	for i := range cs {
		c := e.newClient()
		cs[i] = client{s: sdkSender(t, c, "shared"), r: sdkReceiver(t, c, "shared", nil)}
	}

	ctx := e.ctx(sdkTimeout)
	done, stop := context.WithCancel(ctx)
	defer stop()
	var (
		mu        sync.Mutex
		completed = map[string]int{}
		count     atomic.Int64
		errs      = make(chan error, 2*clients)
		wg        sync.WaitGroup
	)
	for i, c := range cs {
		wg.Add(2)
		go func() { // sender: 10 singly, then a batch of 15
			defer wg.Done()
			for j := range 10 {
				if err := c.s.SendMessage(ctx, &azservicebus.Message{MessageID: sdkPtr(fmt.Sprintf("%d-%d", i, j))}, nil); err != nil {
					errs <- err
					return
				}
			}
			batch, err := c.s.NewMessageBatch(ctx, nil)
			if err != nil {
				errs <- err
				return
			}
			for j := 10; j < each; j++ {
				if err := batch.AddMessage(&azservicebus.Message{MessageID: sdkPtr(fmt.Sprintf("%d-%d", i, j)), Body: []byte("b")}, nil); err != nil {
					errs <- err
					return
				}
			}
			if err := c.s.SendMessageBatch(ctx, batch, nil); err != nil {
				errs <- err
			}
		}()
		go func() { // receiver: until all are completed by someone
			defer wg.Done()
			for done.Err() == nil {
				msgs, err := c.r.ReceiveMessages(done, 10, nil)
				if err != nil {
					if done.Err() == nil {
						errs <- err
					}
					return
				}
				for _, m := range msgs {
					if err := c.r.CompleteMessage(ctx, m, nil); err != nil {
						errs <- fmt.Errorf("complete %s: %w", m.MessageID, err)
						return
					}
					if m.DeliveryCount != 1 {
						errs <- fmt.Errorf("message %s delivered %d times", m.MessageID, m.DeliveryCount)
						return
					}
					mu.Lock()
					completed[m.MessageID]++
					mu.Unlock()
					if count.Add(1) == total {
						stop()
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, ctx.Err(), "every message arrived in time")
	require.Len(t, completed, total)
	for id, n := range completed {
		require.Equal(t, 1, n, "message %s completed once", id)
	}
	c := e.queueCounts("shared")
	require.Zero(t, c.TotalMessageCount)
}

// TestSDKConcurrency_ManyEntities runs 20 clients each on its own queue and
// on one shared topic subscription pair, sending and receiving at once:
// nothing crosses between entities, each queue's messages are completed
// once each, and every subscription gets every topic message (R1). The
// namespace runs on the real clock here.
func TestSDKConcurrency_ManyEntities(t *testing.T) {
	e := newSDKEnv(t, withRealClock())
	const clients, each = 20, 10
	for i := range clients {
		e.queue(fmt.Sprintf("q%d", i), &minibus.QueueProperties{LockDuration: 5 * time.Minute})
	}
	e.topic("fan", "a", "b")
	ctx := e.ctx(sdkTimeout)
	errs := make(chan error, clients)
	parallel(clients, func(i int) {
		c := e.newClient()
		name := fmt.Sprintf("q%d", i)
		s, err := c.NewSender(name, nil)
		if err != nil {
			errs <- err
			return
		}
		defer s.Close(ctx)
		ts, err := c.NewSender("fan", nil)
		if err != nil {
			errs <- err
			return
		}
		defer ts.Close(ctx)
		r, err := c.NewReceiverForQueue(name, nil)
		if err != nil {
			errs <- err
			return
		}
		defer r.Close(ctx)
		for j := range each {
			body := []byte(fmt.Sprintf("%s/%d", name, j))
			if err := s.SendMessage(ctx, &azservicebus.Message{Body: body}, nil); err != nil {
				errs <- err
				return
			}
			if err := ts.SendMessage(ctx, &azservicebus.Message{Body: body}, nil); err != nil {
				errs <- err
				return
			}
		}
		// Not necessarily in order: what arrives after a ReceiveMessages
		// call returned is released by the SDK and comes back behind
		// messages already sent on the link's remaining credit.
		seen := map[string]bool{}
		for len(seen) < each {
			msgs, err := r.ReceiveMessages(ctx, each-len(seen), nil)
			if err != nil {
				errs <- err
				return
			}
			for _, m := range msgs {
				b := string(m.Body)
				var j int
				if _, err := fmt.Sscanf(b, name+"/%d", &j); err != nil || seen[b] {
					errs <- fmt.Errorf("%s: unexpected or repeated %q", name, b)
					return
				}
				seen[b] = true
				if err := r.CompleteMessage(ctx, m, nil); err != nil {
					errs <- err
					return
				}
			}
		}
	})
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for i := range clients {
		require.Zero(t, e.queueCounts(fmt.Sprintf("q%d", i)).TotalMessageCount)
	}
	require.Equal(t, int64(clients*each), e.subCounts("fan", "a").ActiveMessageCount)
	require.Equal(t, int64(clients*each), e.subCounts("fan", "b").ActiveMessageCount)
}
