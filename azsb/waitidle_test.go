package azsb_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/azsb"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/stretchr/testify/require"
)

// The loop every azservicebus user writes, through azsb, is seen by
// WaitIdle while it waits in ReceiveMessages (SEMANTICS P2): a message sent
// is taken before WaitIdle returns; the loop's completion is waited for by
// its event (P3, minibustest's WaitFor). In a synctest bubble, where a
// WaitIdle that would hang fails at once.
func TestWaitIdleSeesAnSDKReceiveLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		_, err := env.Namespace().CreateQueue("orders", nil)
		require.NoError(t, err)
		c := azsb.NewClient(env.Namespace())
		defer c.Close(context.Background())
		s, err := c.NewSender("orders", nil)
		require.NoError(t, err)
		r, err := c.NewReceiverForQueue("orders", nil)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			for {
				msgs, err := r.ReceiveMessages(ctx, 10, nil)
				if err != nil {
					done <- err
					return
				}
				for _, m := range msgs {
					if err := r.CompleteMessage(context.Background(), m, nil); err != nil {
						done <- err
						return
					}
				}
			}
		}()
		for i := range 10 {
			synctest.Wait() // the loop waits in ReceiveMessages
			id := fmt.Sprint("order-", i)
			require.NoError(t, s.SendMessage(context.Background(), &azservicebus.Message{MessageID: &id}, nil))
			env.WaitIdle()
			require.Len(t, env.EventsFor("orders", minibus.EventDelivered), i+1, "P2: WaitIdle returned before the loop took %s", id)
			ev := env.WaitFor(func(ev minibus.Event) bool { return ev.Kind == minibus.EventCompleted && ev.MessageID == id })
			require.Equal(t, "orders", ev.Entity)
		}
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		require.NoError(t, r.Close(context.Background()))
		require.NoError(t, s.Close(context.Background()))
	})
}
