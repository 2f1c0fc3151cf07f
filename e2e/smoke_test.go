package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/server"
)

func TestSmokeSendReceiveComplete(t *testing.T) {
	ns := minibus.NewNamespace()
	defer ns.Close()
	_, err := ns.CreateQueue("orders", nil)
	require.NoError(t, err)
	srv, err := server.Listen(ns, "127.0.0.1:0", nil)
	require.NoError(t, err)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client, err := azservicebus.NewClientFromConnectionString(srv.ConnectionString(), nil)
	require.NoError(t, err)
	defer client.Close(ctx)
	sender, err := client.NewSender("orders", nil)
	require.NoError(t, err)
	require.NoError(t, sender.SendMessage(ctx, &azservicebus.Message{Body: []byte("hello")}, nil))
	receiver, err := client.NewReceiverForQueue("orders", nil)
	require.NoError(t, err)
	msgs, err := receiver.ReceiveMessages(ctx, 10, nil)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, "hello", string(msgs[0].Body))
	require.NoError(t, receiver.CompleteMessage(ctx, msgs[0], nil))
	require.NoError(t, receiver.Close(ctx))
	require.NoError(t, sender.Close(ctx))
	q, _ := ns.Queue("orders")
	require.Zero(t, q.RuntimeProperties().ActiveMessageCount)
}
