package minibus_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/stretchr/testify/require"
)

// Helpers of the processor, WaitIdle, events and fault injection tests.

// hcall is one call of a held handler: the test answers it on reply.
type hcall struct {
	ctx   context.Context
	msg   *minibus.ReceivedMessage
	reply chan error
}

// holder is a Handler whose calls wait for the test's answer. It counts the
// calls running at once, in all and per session. When the test ends, calls
// still waiting return an error, so that a failed test does not leave a
// processor waiting for them.
type holder struct {
	t     *testing.T
	calls chan hcall
	once  sync.Once
	quit  chan struct{}

	running atomic.Int64
	max     atomic.Int64

	mu        sync.Mutex
	inSession map[string]int // calls running per session
	twice     []string       // sessions that had two calls at once
}

func newHolder(t *testing.T) *holder {
	return &holder{t: t, calls: make(chan hcall, 1000), quit: make(chan struct{}), inSession: make(map[string]int)}
}

var errTestOver = errors.New("the test is over")

func (h *holder) handle(ctx context.Context, m *minibus.ReceivedMessage) error {
	n := h.running.Add(1)
	defer h.running.Add(-1)
	for {
		old := h.max.Load()
		if n <= old || h.max.CompareAndSwap(old, n) {
			break
		}
	}
	if m.SessionID != "" {
		h.mu.Lock()
		if h.inSession[m.SessionID]++; h.inSession[m.SessionID] > 1 {
			h.twice = append(h.twice, m.SessionID)
		}
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			h.inSession[m.SessionID]--
			h.mu.Unlock()
		}()
	}
	// Registered at the first call, after the processor started, this
	// cleanup runs before the one that stops the processor.
	h.once.Do(func() { h.t.Cleanup(func() { close(h.quit) }) })
	c := hcall{ctx: ctx, msg: m, reply: make(chan error, 1)}
	h.calls <- c
	select {
	case err := <-c.reply:
		return err
	case <-h.quit:
		return errTestOver
	}
}

// next returns the next call, failing the test if none comes (in a synctest
// bubble, as soon as everything is blocked).
func (h *holder) next(t *testing.T) hcall {
	t.Helper()
	select {
	case c := <-h.calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not called")
		return hcall{}
	}
}

// pending returns the calls made and not yet taken by next.
func (h *holder) pending() []hcall {
	var out []hcall
	for {
		select {
		case c := <-h.calls:
			out = append(out, c)
		default:
			return out
		}
	}
}

// requireNoCall asserts that no call is waiting; after synctest.Wait, that
// the processor started none.
func (h *holder) requireNoCall(t *testing.T) {
	t.Helper()
	if cs := h.pending(); len(cs) > 0 {
		t.Fatalf("unexpected handler calls: %v", callBodies(cs))
	}
}

func callBodies(cs []hcall) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c.msg.Body)
	}
	return out
}

// lockedBuffer is a bytes.Buffer safe for a logger and a test at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// debugLogger logs everything, Debug included, to a buffer.
func debugLogger() (*slog.Logger, *lockedBuffer) {
	buf := &lockedBuffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// mkQueue creates a queue in env's namespace.
func mkQueue(t *testing.T, env *minibustest.Env, name string, p *minibus.QueueProperties) *minibus.Queue {
	t.Helper()
	q, err := env.Namespace().CreateQueue(name, p)
	require.NoError(t, err)
	return q
}

// sendBodies sends one message per body, with the body as MessageID too.
func sendBodies(t *testing.T, s sender, bodies ...string) {
	t.Helper()
	msgs := make([]*minibus.Message, len(bodies))
	for i, b := range bodies {
		msgs[i] = &minibus.Message{Body: []byte(b), MessageID: b}
	}
	require.NoError(t, s.SendMessages(context.Background(), msgs, nil))
}

// sendToSession sends one message per body to session id.
func sendToSession(t *testing.T, s sender, id string, bodies ...string) {
	t.Helper()
	msgs := make([]*minibus.Message, len(bodies))
	for i, b := range bodies {
		msgs[i] = &minibus.Message{Body: []byte(b), MessageID: b, SessionID: id}
	}
	require.NoError(t, s.SendMessages(context.Background(), msgs, nil))
}

// runAsync runs p.Run(ctx) in a goroutine and returns once p is running,
// with the channel that gets Run's error.
func runAsync(t *testing.T, p *minibus.Processor, ctx context.Context) <-chan error {
	t.Helper()
	started := p.Started()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("Run returned at once: %v", err)
	}
	return done
}

// runResult waits for Run's error, failing the test if it does not come
// within 10 s (in a synctest bubble, of fake time: as soon as everything is
// blocked).
func runResult(t *testing.T, done <-chan error) error {
	t.Helper()
	return runResultWithin(t, done, 10*time.Second)
}

func runResultWithin(t *testing.T, done <-chan error, limit time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatal("Run did not return")
		return nil
	}
}

// requireRunning asserts that Run has not returned.
func requireRunning(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("Run returned %v", err)
	default:
	}
}

// eventLine is an event in one line, its instant relative to the epoch.
func eventLine(ev minibus.Event) string {
	s := fmt.Sprintf("%v %s", ev.Kind, ev.Entity)
	if ev.SubQueue != minibus.SubQueueNone {
		s += " sq=" + ev.SubQueue.String()
	}
	if ev.SequenceNumber != 0 {
		s += fmt.Sprintf(" seq=%d id=%s dc=%d", ev.SequenceNumber, ev.MessageID, ev.DeliveryCount)
	}
	if ev.Reason != "" {
		s += " reason=" + ev.Reason
	}
	return s + " at=+" + ev.At.Sub(epoch).String()
}

// eventLines are the events of entity ("" for all) with one of kinds (none:
// every kind), one line each.
func eventLines(evs []minibus.Event, entity string, kinds ...minibus.EventKind) []string {
	var out []string
	for _, ev := range evs {
		if (entity == "" || ev.Entity == entity) && (len(kinds) == 0 || slices.Contains(kinds, ev.Kind)) {
			out = append(out, eventLine(ev))
		}
	}
	return out
}

func sortedLines(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
