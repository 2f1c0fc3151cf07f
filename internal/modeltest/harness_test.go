package modeltest

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// brokerStacks, which a blocked call that did not wake prints (T5), shows
// where a receive blocked in the broker waits.
func TestBrokerStacksShowABlockedReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ns := minibus.NewNamespace()
		defer ns.Close()
		q, err := ns.CreateQueue("q", nil)
		require.NoError(t, err)
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := r.ReceiveMessages(ctx, 1, nil)
			done <- err
		}()
		synctest.Wait() // the receive has blocked
		require.Contains(t, brokerStacks(), "engine.(*Broker).wait(", "the blocked receive shows in the stacks")
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		require.NotContains(t, brokerStacks(), "engine.(*Broker).wait(", "once it returned, it does not")
	})
}
