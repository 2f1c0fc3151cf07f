package e2e_test

// The fixture of the Go SDK end-to-end tests (sdk_*_test.go): a minibus
// namespace (on a mock clock unless a test asks for the real one), a
// server.Listen on loopback in the same process, and unmodified
// azservicebus clients connected to it with the emulator's connection
// string. Everything is closed by t.Cleanup, in reverse order, and every
// wait is bounded by a context deadline: no test sleeps.

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/minibus-go/minibus/server"
)

// sdkTimeout bounds every network wait of a test that expects something to
// happen: far above what a loaded 2-core machine needs, so that only a hang
// reaches it.
const sdkTimeout = 30 * time.Second

// sdkQuiet is how long a test waits, in real time, to see that nothing
// arrives (a receive expected to find no message). The server delivers in
// well under a millisecond on loopback; this only has to be long enough
// for a delivery that should not happen to show up.
const sdkQuiet = 250 * time.Millisecond

// sdkEnv is one test's namespace, server and client.
type sdkEnv struct {
	t      *testing.T
	ns     *minibus.Namespace
	mock   *clock.Mock      // nil on the real clock
	env    *minibustest.Env // nil on the real clock
	srv    *server.Server
	client *azservicebus.Client
}

// sdkOption configures newSDKEnv.
type sdkOption func(*sdkConfig)

type sdkConfig struct {
	realClock bool
	logger    bool
}

// withRealClock runs the namespace on the real clock instead of a mock.
func withRealClock() sdkOption { return func(c *sdkConfig) { c.realClock = true } }

// withDebugLog logs the server's debug output to stderr (for debugging a
// test; not used by committed tests).
func withDebugLog() sdkOption { return func(c *sdkConfig) { c.logger = true } }

// newSDKEnv starts a namespace (by default on minibustest's mock clock, at
// minibustest.Epoch), serves it on 127.0.0.1:0 and connects one
// azservicebus client. The client does not retry (MaxRetries -1): a
// server error reaches the test as it is, not hidden by a retry.
func newSDKEnv(t *testing.T, opts ...sdkOption) *sdkEnv {
	t.Helper()
	var cfg sdkConfig
	for _, o := range opts {
		o(&cfg)
	}
	e := &sdkEnv{t: t}
	if cfg.realClock {
		e.ns = minibus.NewNamespace()
		t.Cleanup(func() { _ = e.ns.Close() })
	} else {
		e.env = minibustest.New(t)
		e.ns = e.env.Namespace()
		e.mock = e.env.Clock()
	}
	var so *server.Options
	if cfg.logger {
		so = &server.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	}
	srv, err := server.Listen(e.ns, "127.0.0.1:0", so)
	require.NoError(t, err)
	e.srv = srv
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	e.client = e.newClient()
	return e
}

// newClient connects one more azservicebus client to the server, closed
// at cleanup (before the server).
func (e *sdkEnv) newClient() *azservicebus.Client {
	e.t.Helper()
	c, err := azservicebus.NewClientFromConnectionString(e.srv.ConnectionString(), &azservicebus.ClientOptions{
		RetryOptions: azservicebus.RetryOptions{MaxRetries: -1},
	})
	require.NoError(e.t, err)
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// ctx is a context that ends after d (real time) or at cleanup.
func (e *sdkEnv) ctx(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	e.t.Cleanup(cancel)
	return ctx
}

// now is the namespace's clock's now.
func (e *sdkEnv) now() time.Time { return e.ns.Now() }

// advance moves the mock clock by d and returns once the namespace is
// idle (SEMANTICS T3, W9): every lock end, expiry and activation due by
// then has happened.
func (e *sdkEnv) advance(d time.Duration) {
	e.t.Helper()
	require.NotNil(e.t, e.mock, "advance needs the mock clock")
	e.env.Advance(d)
}

// waitIdle waits until the namespace is idle, bounded.
func (e *sdkEnv) waitIdle() {
	e.t.Helper()
	require.NoError(e.t, e.ns.WaitIdle(e.ctx(sdkTimeout)))
}

// queue creates a queue.
func (e *sdkEnv) queue(name string, p *minibus.QueueProperties) *minibus.Queue {
	e.t.Helper()
	q, err := e.ns.CreateQueue(name, p)
	require.NoError(e.t, err)
	return q
}

// topic creates a topic with the named subscriptions (each with its
// $Default rule).
func (e *sdkEnv) topic(name string, subs ...string) *minibus.Topic {
	e.t.Helper()
	tp, err := e.ns.CreateTopic(name, nil)
	require.NoError(e.t, err)
	for _, s := range subs {
		_, err := tp.CreateSubscription(s, nil)
		require.NoError(e.t, err)
	}
	return tp
}

// sender opens an SDK sender on the main client, closed at cleanup.
func (e *sdkEnv) sender(queueOrTopic string) *azservicebus.Sender {
	e.t.Helper()
	return sdkSender(e.t, e.client, queueOrTopic)
}

func sdkSender(t *testing.T, c *azservicebus.Client, queueOrTopic string) *azservicebus.Sender {
	t.Helper()
	s, err := c.NewSender(queueOrTopic, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

// receiver opens an SDK receiver on a queue, closed at cleanup.
func (e *sdkEnv) receiver(queue string, o *azservicebus.ReceiverOptions) *azservicebus.Receiver {
	e.t.Helper()
	return sdkReceiver(e.t, e.client, queue, o)
}

func sdkReceiver(t *testing.T, c *azservicebus.Client, queue string, o *azservicebus.ReceiverOptions) *azservicebus.Receiver {
	t.Helper()
	r, err := c.NewReceiverForQueue(queue, o)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
		defer cancel()
		_ = r.Close(ctx)
	})
	return r
}

// subReceiver opens an SDK receiver on a subscription, closed at cleanup.
func (e *sdkEnv) subReceiver(topic, sub string, o *azservicebus.ReceiverOptions) *azservicebus.Receiver {
	e.t.Helper()
	r, err := e.client.NewReceiverForSubscription(topic, sub, o)
	require.NoError(e.t, err)
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
		defer cancel()
		_ = r.Close(ctx)
	})
	return r
}

// send sends messages with the given bodies, one SendMessage each.
func (e *sdkEnv) send(s *azservicebus.Sender, bodies ...string) {
	e.t.Helper()
	for _, b := range bodies {
		require.NoError(e.t, s.SendMessage(e.ctx(sdkTimeout), &azservicebus.Message{Body: []byte(b)}, nil))
	}
}

// sdkReceiving is what Receiver and SessionReceiver share for receiving.
type sdkReceiving interface {
	ReceiveMessages(ctx context.Context, maxMessages int, options *azservicebus.ReceiveMessagesOptions) ([]*azservicebus.ReceivedMessage, error)
}

// receiveN receives until it has exactly n messages (ReceiveMessages may
// return fewer than asked), bounded by sdkTimeout.
func (e *sdkEnv) receiveN(r sdkReceiving, n int) []*azservicebus.ReceivedMessage {
	e.t.Helper()
	return sdkReceiveN(e.t, r, n, nil)
}

// sdkReceiveN is receiveN for any test and options (nil: the default
// below). The SDK returns from ReceiveMessages 20 ms after its first message by
// default, leaving its remaining credit on the link; what arrives on it
// later is released and comes back behind messages already sent, out of
// order. receiveN waits up to 5 s after the first message instead (it
// returns as soon as it has all it asked for), so that n available
// messages arrive in one call, in order.
func sdkReceiveN(t testing.TB, r sdkReceiving, n int, o *azservicebus.ReceiveMessagesOptions) []*azservicebus.ReceivedMessage {
	t.Helper()
	if o == nil {
		o = &azservicebus.ReceiveMessagesOptions{TimeAfterFirstMessage: 5 * time.Second}
	}
	ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
	defer cancel()
	var got []*azservicebus.ReceivedMessage
	for len(got) < n {
		msgs, err := r.ReceiveMessages(ctx, n-len(got), o)
		require.NoError(t, err, "received %d of %d", len(got), n)
		got = append(got, msgs...)
	}
	require.Len(t, got, n)
	return got
}

// receiveNone checks that no message arrives within sdkQuiet: the SDK's
// ReceiveMessages waits for a first message until its ctx ends, so an
// empty result is the deadline.
func (e *sdkEnv) receiveNone(r sdkReceiving) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sdkQuiet)
	defer cancel()
	msgs, err := r.ReceiveMessages(ctx, 1, nil)
	require.Empty(e.t, msgs, "expected no message")
	require.ErrorIs(e.t, err, context.DeadlineExceeded)
}

// bodies returns the messages' bodies as strings.
func bodies(msgs []*azservicebus.ReceivedMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Body)
	}
	return out
}

// sdkCode is the azservicebus error code of err, or "" when err is not an
// *azservicebus.Error.
func sdkCode(err error) azservicebus.Code {
	var sbErr *azservicebus.Error
	if errors.As(err, &sbErr) {
		return sbErr.Code
	}
	return ""
}

// queueCounts reads a queue's runtime counts.
func (e *sdkEnv) queueCounts(name string) minibus.QueueRuntimeProperties {
	e.t.Helper()
	q, err := e.ns.Queue(name)
	require.NoError(e.t, err)
	return q.RuntimeProperties()
}

// subCounts reads a subscription's runtime counts.
func (e *sdkEnv) subCounts(topic, sub string) minibus.SubscriptionRuntimeProperties {
	e.t.Helper()
	tp, err := e.ns.Topic(topic)
	require.NoError(e.t, err)
	s, err := tp.Subscription(sub)
	require.NoError(e.t, err)
	return s.RuntimeProperties()
}

// ptr returns a pointer to v.
func sdkPtr[T any](v T) *T { return &v }

// parallel runs f(i) for i in [0, n) on n goroutines and waits for all.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i)
		}()
	}
	wg.Wait()
}

// utcProps returns props with every time.Time in UTC: go-amqp decodes an
// AMQP timestamp in the local zone; the instant is what is compared.
func utcProps(props map[string]any) map[string]any {
	out := make(map[string]any, len(props))
	for k, v := range props {
		if tm, ok := v.(time.Time); ok {
			v = tm.UTC()
		}
		out[k] = v
	}
	return out
}
