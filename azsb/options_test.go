package azsb_test

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/minibus-go/minibus/azsb"
	"github.com/stretchr/testify/require"
)

// TestIgnoredOptions: options minibus cannot honour are accepted, never
// used, and change nothing.
func TestIgnoredOptions(t *testing.T) {
	e := newEnv(t)
	e.queue("q", nil)
	called := false
	c := azsb.NewClient(e.ns, nil, &azservicebus.ClientOptions{
		TLSConfig:      &tls.Config{MinVersion: tls.VersionTLS13},
		ApplicationID:  "app",
		CustomEndpoint: "proxy.example:5671",
		NewWebSocketConn: func(context.Context, azservicebus.NewWebSocketConnArgs) (net.Conn, error) {
			called = true
			return nil, nil
		},
		RetryOptions: azservicebus.RetryOptions{MaxRetries: -1, RetryDelay: -1, MaxRetryDelay: -1},
	})
	defer c.Close(e.ctx)
	s, err := c.NewSender("q", &azservicebus.NewSenderOptions{})
	require.NoError(t, err)
	require.NoError(t, s.SendMessage(e.ctx, &azservicebus.Message{Body: []byte("x")}, &azservicebus.SendMessageOptions{}))
	r, err := c.NewReceiverForQueue("q", nil)
	require.NoError(t, err)

	// TimeAfterFirstMessage: minibus hands over what is available at once.
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	msgs, err := r.ReceiveMessages(ctx, 10, &azservicebus.ReceiveMessagesOptions{TimeAfterFirstMessage: time.Hour})
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.NoError(t, r.CompleteMessage(e.ctx, msgs[0], &azservicebus.CompleteMessageOptions{}))
	require.False(t, called, "the web socket function is never called")
}
