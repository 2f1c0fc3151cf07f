package e2e_test

import (
	"context"
	"net"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"
	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/minibus-go/minibus/server"
)

// The proto_*_test.go files drive minibus's server with go-amqp as a raw
// AMQP 1.0 client (no Service Bus SDK on top): credit, drain, settlement,
// keep-alives, frame sizes, missing nodes, session filters and clients
// that vanish (SEMANTICS group W). Every wait is bounded by protoTimeout;
// the broker's time is a mock clock moved by the tests.

// protoTimeout bounds every test's waits.
const protoTimeout = 15 * time.Second

// protoEnv is a namespace on a mock clock served on a loopback port.
type protoEnv struct {
	t   *testing.T
	env *minibustest.Env
	ns  *minibus.Namespace
	srv *server.Server
	ctx context.Context
}

func newProtoEnv(t *testing.T) *protoEnv {
	t.Helper()
	env := minibustest.New(t)
	srv, err := server.Listen(env.Namespace(), "127.0.0.1:0", nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	ctx, cancel := context.WithTimeout(context.Background(), protoTimeout)
	t.Cleanup(cancel)
	return &protoEnv{t: t, env: env, ns: env.Namespace(), srv: srv, ctx: ctx}
}

// queue creates a queue.
func (e *protoEnv) queue(name string, props *minibus.QueueProperties) *minibus.Queue {
	e.t.Helper()
	q, err := e.ns.CreateQueue(name, props)
	require.NoError(e.t, err)
	return q
}

// send enqueues messages with the given bodies through the API.
func (e *protoEnv) send(q *minibus.Queue, bodies ...string) {
	e.t.Helper()
	msgs := make([]*minibus.Message, len(bodies))
	for i, b := range bodies {
		msgs[i] = &minibus.Message{Body: []byte(b)}
	}
	require.NoError(e.t, q.SendMessages(e.ctx, msgs, nil))
}

// dial opens a go-amqp connection (SASL ANONYMOUS) closed with the test.
func (e *protoEnv) dial(opts *amqp.ConnOptions) *amqp.Conn {
	e.t.Helper()
	if opts == nil {
		opts = &amqp.ConnOptions{}
	}
	opts.SASLType = amqp.SASLTypeAnonymous()
	c, err := amqp.Dial(e.ctx, "amqp://"+e.srv.Addr().String(), opts)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { c.Close() })
	return c
}

// dialOver opens a go-amqp connection over a socket the test holds, so
// that it can make the client vanish (close the socket without a close
// frame).
func (e *protoEnv) dialOver() (*amqp.Conn, net.Conn) {
	e.t.Helper()
	nc, err := net.DialTimeout("tcp", e.srv.Addr().String(), protoTimeout)
	require.NoError(e.t, err)
	c, err := amqp.NewConn(e.ctx, nc, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})
	require.NoError(e.t, err)
	e.t.Cleanup(func() { c.Close() })
	return c, nc
}

// session begins a session on a new connection.
func (e *protoEnv) session(opts *amqp.ConnOptions) *amqp.Session {
	e.t.Helper()
	s, err := e.dial(opts).NewSession(e.ctx, nil)
	require.NoError(e.t, err)
	return s
}

// protoPeekLock is a receiver under peek-lock: rcv-settle-mode second (W5).
func protoPeekLock(credit int32) *amqp.ReceiverOptions {
	second := amqp.ReceiverSettleModeSecond
	return &amqp.ReceiverOptions{Credit: credit, SettlementMode: &second}
}

// protoReceiveAndDelete is a receiver under receive-and-delete: snd-settle-mode
// settled (W5).
func protoReceiveAndDelete(credit int32) *amqp.ReceiverOptions {
	settled := amqp.SenderSettleModeSettled
	return &amqp.ReceiverOptions{Credit: credit, RequestedSenderSettleMode: &settled}
}

// receiver attaches a receiver.
func (e *protoEnv) receiver(s *amqp.Session, source string, opts *amqp.ReceiverOptions) *amqp.Receiver {
	e.t.Helper()
	r, err := s.NewReceiver(e.ctx, source, opts)
	require.NoError(e.t, err)
	return r
}

// sender attaches a sender.
func (e *protoEnv) sender(s *amqp.Session, target string) *amqp.Sender {
	e.t.Helper()
	snd, err := s.NewSender(e.ctx, target, nil)
	require.NoError(e.t, err)
	return snd
}

// receive receives one message within protoTimeout.
func (e *protoEnv) receive(r *amqp.Receiver) *amqp.Message {
	e.t.Helper()
	m, err := r.Receive(e.ctx, nil)
	require.NoError(e.t, err)
	return m
}

// protoReceiveNothing shows that nothing comes within a short while: the one
// kind of wait these tests make on real time to see an absence.
func protoReceiveNothing(t *testing.T, r *amqp.Receiver) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	m, err := r.Receive(ctx, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded, "want nothing, got %v", m)
}

// protoBody is a received message's body.
func protoBody(m *amqp.Message) string { return string(m.GetData()) }

// protoDeliveries is the DeliveryCount a received message carries: the header's
// delivery-count is DeliveryCount − 1 (W5).
func protoDeliveries(t *testing.T, m *amqp.Message) uint32 {
	t.Helper()
	require.NotNil(t, m.Header, "every delivered message has a header (W5)")
	return m.Header.DeliveryCount + 1
}
