package azsb_test

import (
	"context"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/azsb"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// epoch is where every test's mock clock starts.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// env is a namespace on a mock clock with an azsb client and admin client
// over it, all closed when the test ends.
type env struct {
	t     *testing.T
	ctx   context.Context
	mock  *clock.Mock
	ns    *minibus.Namespace
	c     *azsb.Client
	admin *azsb.AdminClient
}

func newEnv(t *testing.T) *env {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(epoch)
	ns := minibus.NewNamespace(minibus.WithClock(mock))
	c := azsb.NewClient(ns)
	t.Cleanup(func() {
		require.NoError(t, c.Close(context.Background()))
		require.NoError(t, ns.Close())
	})
	return &env{t: t, ctx: context.Background(), mock: mock, ns: ns, c: c, admin: azsb.NewAdminClient(ns)}
}

func (e *env) queue(name string, p *minibus.QueueProperties) *minibus.Queue {
	e.t.Helper()
	q, err := e.ns.CreateQueue(name, p)
	require.NoError(e.t, err)
	return q
}

func (e *env) sender(name string) *azsb.Sender {
	e.t.Helper()
	s, err := e.c.NewSender(name, nil)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func (e *env) receiver(queue string, o *azservicebus.ReceiverOptions) *azsb.Receiver {
	e.t.Helper()
	r, err := e.c.NewReceiverForQueue(queue, o)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// receive receives exactly n messages, failing the test after a real-time
// safety limit.
func (e *env) receive(r interface {
	ReceiveMessages(context.Context, int, *azservicebus.ReceiveMessagesOptions) ([]*azservicebus.ReceivedMessage, error)
}, n int) []*azservicebus.ReceivedMessage {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	var out []*azservicebus.ReceivedMessage
	for len(out) < n {
		msgs, err := r.ReceiveMessages(ctx, n-len(out), nil)
		require.NoError(e.t, err)
		out = append(out, msgs...)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// azsb_newClient makes a second client over e's namespace, closed at the
// end of the test.
func azsb_newClient(e *env) *azsb.Client {
	c := azsb.NewClient(e.ns)
	e.t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// Short names of azsb's types for the scenarios' type parameters.
type (
	azsbSender          = azsb.Sender
	azsbReceiver        = azsb.Receiver
	azsbSessionReceiver = azsb.SessionReceiver
)
