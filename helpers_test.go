package minibus_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/stretchr/testify/require"
)

// env is minibustest's Env (a namespace on a mock clock, closed when the
// test ends, with its event journal, fault injector and waits) with the
// shorthands of this folder's tests: ns, mock, a clock that counts its
// timers (SEMANTICS T4) and helpers that fail the test on error. A durable
// test's env (denv, open_test.go) has no Env: its namespace comes from
// Open, which minibustest does not make.
type env struct {
	*minibustest.Env
	t     *testing.T
	ctx   context.Context
	mock  *clock.Mock    // Env.Clock()
	clock *countingClock // the namespace's clock, over mock
	ns    *minibus.Namespace
}

// epoch is where every test's mock clock starts: a round instant, so that
// times in failures read well.
var epoch = minibustest.Epoch

func newEnv(t *testing.T, opts ...minibus.Option) *env {
	t.Helper()
	var cc *countingClock
	te := minibustest.NewWithClock(t, func(m *clock.Mock) clock.Clock {
		cc = &countingClock{Clock: m}
		return cc
	}, opts...)
	ns := te.Namespace()
	t.Cleanup(func() { require.NoError(t, ns.Close()) }) // before Env's own, which ignores the error
	return &env{Env: te, t: t, ctx: context.Background(), mock: te.Clock(), clock: cc, ns: ns}
}

// queue creates a queue, failing the test on error.
func (e *env) queue(name string, p *minibus.QueueProperties) *minibus.Queue {
	e.t.Helper()
	q, err := e.ns.CreateQueue(name, p)
	require.NoError(e.t, err)
	return q
}

// topic creates a topic, failing the test on error.
func (e *env) topic(name string, p *minibus.TopicProperties) *minibus.Topic {
	e.t.Helper()
	t, err := e.ns.CreateTopic(name, p)
	require.NoError(e.t, err)
	return t
}

// subscription creates a subscription, failing the test on error.
func (e *env) subscription(t *minibus.Topic, name string, p *minibus.SubscriptionProperties) *minibus.Subscription {
	e.t.Helper()
	s, err := t.CreateSubscription(name, p)
	require.NoError(e.t, err)
	return s
}

// receiver makes a receiver closed at the end of the test.
func (e *env) receiver(q interface {
	NewReceiver(*minibus.ReceiverOptions) (*minibus.Receiver, error)
}, opts *minibus.ReceiverOptions) *minibus.Receiver {
	e.t.Helper()
	r, err := q.NewReceiver(opts)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// msgReceiver is minibustest.Receiver, what a *minibus.Receiver and a
// *minibus.SessionReceiver have in common.
type msgReceiver = minibustest.Receiver

// sender is a queue or a topic.
type sender interface {
	SendMessages(context.Context, []*minibus.Message, *minibus.SendMessageOptions) error
}

// send sends one message per body.
func (e *env) send(s sender, bodies ...string) {
	e.t.Helper()
	msgs := make([]*minibus.Message, len(bodies))
	for i, b := range bodies {
		msgs[i] = &minibus.Message{Body: []byte(b)}
	}
	require.NoError(e.t, s.SendMessages(e.ctx, msgs, nil))
}

// receive receives exactly n messages, which must be available now.
func (e *env) receive(r msgReceiver, n int) []*minibus.ReceivedMessage {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	msgs, err := r.ReceiveMessages(ctx, n, nil)
	require.NoError(e.t, err)
	require.Len(e.t, msgs, n, "received %v", bodies(msgs))
	return msgs
}

// receiveAll receives up to max messages that are available now; it fails
// if none is.
func (e *env) receiveAll(r msgReceiver, max int) []*minibus.ReceivedMessage {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	msgs, err := r.ReceiveMessages(ctx, max, nil)
	require.NoError(e.t, err)
	return msgs
}

// absenceWait bounds how long requireNothing waits to conclude that no
// message is receivable. It is not a wait for the broker to act: a
// receivable message returns at once and fails the assertion.
const absenceWait = 20 * time.Millisecond

// requireNothing asserts that r has no receivable message now.
func (e *env) requireNothing(r msgReceiver) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, absenceWait)
	defer cancel()
	msgs, err := r.ReceiveMessages(ctx, 100, nil)
	require.ErrorIs(e.t, err, context.DeadlineExceeded, "received %v", bodies(msgs))
	require.Nil(e.t, msgs)
}

// peekAll peeks everything from sequence number 1.
func (e *env) peekAll(r msgReceiver) []*minibus.ReceivedMessage {
	e.t.Helper()
	msgs, err := r.PeekMessages(e.ctx, 1000, &minibus.PeekMessagesOptions{FromSequenceNumber: 1})
	require.NoError(e.t, err)
	return msgs
}

func bodies(msgs []*minibus.ReceivedMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Body)
	}
	return out
}

func seqs(msgs []*minibus.ReceivedMessage) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.SequenceNumber
	}
	return out
}

// at returns the instant d after the test epoch.
func at(d time.Duration) time.Time { return epoch.Add(d) }

// advanceTo moves the mock clock to epoch+d.
func (e *env) advanceTo(d time.Duration) {
	e.t.Helper()
	now := e.mock.Now()
	require.False(e.t, at(d).Before(now), "clock is already past +%v", d)
	e.mock.Add(at(d).Sub(now))
}

// requireSentinel asserts that err wraps want and no other sentinel, and that
// its text names the culprit.
func requireSentinel(t *testing.T, err, want error, culprit string) {
	t.Helper()
	require.ErrorIs(t, err, want)
	for _, s := range allSentinels {
		if s != want {
			require.False(t, errors.Is(err, s), "%v also wraps %v", err, s)
		}
	}
	require.Contains(t, err.Error(), culprit)
}

var allSentinels = []error{
	minibus.ErrNotFound, minibus.ErrAlreadyExists, minibus.ErrInvalidArgument,
	minibus.ErrLockLost, minibus.ErrSessionLockLost, minibus.ErrSessionCannotBeLocked,
	minibus.ErrMessageNotFound, minibus.ErrMessageTooLarge, minibus.ErrQuotaExceeded,
	minibus.ErrEntityDisabled, minibus.ErrClosed,
}

// countingClock counts the timers created through it, to check that a
// namespace keeps at most one (SEMANTICS T4).
type countingClock struct {
	clock.Clock
	timers atomic.Int64 // created
	fired  atomic.Int64 // AfterFunc callbacks run
}

func (c *countingClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	c.timers.Add(1)
	return c.Clock.AfterFunc(d, func() {
		c.fired.Add(1)
		f()
	})
}

func (c *countingClock) Timer(d time.Duration) *clock.Timer {
	c.timers.Add(1)
	return c.Clock.Timer(d)
}

func (c *countingClock) Ticker(d time.Duration) *clock.Ticker {
	c.timers.Add(1)
	return c.Clock.Ticker(d)
}

func (c *countingClock) After(d time.Duration) <-chan time.Time {
	c.timers.Add(1)
	return c.Clock.After(d)
}

func (c *countingClock) Tick(d time.Duration) <-chan time.Time {
	c.timers.Add(1)
	return c.Clock.Tick(d)
}

// resultTimeout bounds how long a test waits for a woken receiver: a hang
// detector, never a wait for the broker to act.
const resultTimeout = 10 * time.Second

func ruleNames(rules []minibus.Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.Name
	}
	return out
}

// together runs a and b at once, each n times (given 0 … n-1) in a
// goroutine of its own, and returns when both are done.
func together(n int, a, b func(i int)) {
	var wg sync.WaitGroup
	for _, f := range []func(int){a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				f(i)
			}
		}()
	}
	wg.Wait()
}
