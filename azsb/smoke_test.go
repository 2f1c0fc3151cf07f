package azsb_test

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/stretchr/testify/require"
)

func TestSmoke(t *testing.T) {
	e := newEnv(t)
	e.queue("q", nil)
	s := e.sender("q")
	require.NoError(t, s.SendMessage(e.ctx, &azservicebus.Message{Body: []byte("hi"), Subject: ptr("s")}, nil))
	r := e.receiver("q", nil)
	msgs := e.receive(r, 1)
	require.Equal(t, "hi", string(msgs[0].Body))
	require.Equal(t, "s", *msgs[0].Subject)
	require.NoError(t, r.CompleteMessage(e.ctx, msgs[0], nil))
	b, err := s.NewMessageBatch(e.ctx, nil)
	require.NoError(t, err)
	require.NoError(t, b.AddMessage(&azservicebus.Message{Body: []byte("a")}, nil))
	require.NoError(t, b.AddMessage(&azservicebus.Message{Body: []byte("b")}, nil))
	require.NoError(t, s.SendMessageBatch(e.ctx, b, nil))
	msgs = e.receive(r, 2)
	require.Equal(t, "a", string(msgs[0].Body))
	require.Equal(t, "b", string(msgs[1].Body))
}
