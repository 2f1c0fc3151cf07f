// Package minibustest is a test helper for code that uses minibus, as
// net/http/httptest is for HTTP: a namespace on a mock clock that closes
// with the test, a journal of every broker event, a way to make chosen
// calls fail, and waits for the broker to finish its work instead of
// sleeps.
//
//	env := minibustest.New(t)
//	q, _ := env.Namespace().CreateQueue("orders", nil)
//	p, _ := q.NewProcessor(handle, nil)
//	stop := env.Start(p)
//	defer stop()
//	_ = q.SendMessage(ctx, &minibus.Message{Body: []byte("x")}, nil)
//	env.WaitIdle()             // the handler has run and the message is settled
//	env.Advance(time.Minute)   // move the clock, then wait until idle again
//	env.FailNext("orders", minibus.OpSend, 1, errBoom)
//
// It imports testing and the mock clock; minibus never imports it.
package minibustest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// Epoch is where an Env's clock starts: 2026-01-01T00:00:00Z.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// waitLimit is how long WaitIdle and Advance wait, in real time, before
// they fail the test: a safety net against a handler that never returns,
// not a wait for the broker.
const waitLimit = 10 * time.Second

// Env is a namespace for one test: on a clock.Mock set to Epoch, closed by
// t.Cleanup, with an event journal and a fault injector installed. Its
// methods are safe for concurrent use.
type Env struct {
	t     testing.TB
	clock *clock.Mock
	ns    *minibus.Namespace

	mu     sync.Mutex
	events []minibus.Event
	faults []fault

	// startMu makes Start calls one at a time, so that the Started channel a
	// Start looks at is its own Run's.
	startMu sync.Mutex
}

// fault is a planned failure: the next n calls of op on entity fail with
// err.
type fault struct {
	entity string
	op     minibus.Operation
	n      int
	err    error
}

// New returns an Env for t. opts are added to the Env's own (its mock
// clock, journal and fault injector); a WithClock among them replaces the
// mock, and Clock then returns the Env's mock all the same.
func New(t testing.TB, opts ...minibus.Option) *Env {
	t.Helper()
	e := &Env{t: t, clock: clock.NewMock()}
	e.clock.Set(Epoch)
	all := append([]minibus.Option{
		minibus.WithClock(e.clock),
		minibus.WithObserver(e.record),
		minibus.WithFaultInjector(e.inject),
	}, opts...)
	e.ns = minibus.NewNamespace(all...)
	t.Cleanup(func() { _ = e.ns.Close() })
	return e
}

// Namespace returns the Env's namespace.
func (e *Env) Namespace() *minibus.Namespace { return e.ns }

// Clock returns the Env's mock clock.
func (e *Env) Clock() *clock.Mock { return e.clock }

// Advance moves the clock by d, then waits until the namespace is idle
// (see WaitIdle). A test that holds a handler on purpose moves the clock
// with Clock().Add instead, as Advance would wait for that handler.
func (e *Env) Advance(d time.Duration) {
	e.t.Helper()
	e.clock.Add(d)
	e.WaitIdle()
}

// WaitIdle is Namespace().WaitIdle, failing the test if the namespace is
// not idle within 10 s of real time.
func (e *Env) WaitIdle() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := e.ns.WaitIdle(ctx); err != nil {
		e.t.Fatalf("minibustest: the namespace is not idle: %v", err)
	}
}

// Events returns the journal so far: every broker event, in order.
func (e *Env) Events() []minibus.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
}

// FailNext makes the next n calls of op on entity ("queue", or
// "topic/Subscriptions/sub") fail with err, changing nothing. Planned
// failures add up: each is used in the order it was planned.
func (e *Env) FailNext(entity string, op minibus.Operation, n int, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n > 0 {
		e.faults = append(e.faults, fault{entity: entity, op: op, n: n, err: err})
	}
}

// Start runs p.Run in a goroutine and returns once p is running (so that
// WaitIdle waits for it), with a function that stops p and returns Run's
// error. Stop is also done by t.Cleanup if the test does not call it. Start
// fails the test when Run returns at once, and when p is running already.
func (e *Env) Start(p *minibus.Processor) (stop func() error) {
	e.t.Helper()
	e.startMu.Lock()
	defer e.startMu.Unlock()
	started := p.Started()
	select {
	case <-started: // closed: another Run of p is running
		e.t.Fatalf("minibustest: the processor did not start: it is running already")
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	select {
	case <-started:
	case err := <-done: // Run returned at once: gone, closed or bad
		cancel()
		e.t.Fatalf("minibustest: the processor did not start: %v", err)
	}
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
		})
		return runErr
	}
	e.t.Cleanup(func() { _ = stop() })
	return stop
}

func (e *Env) record(ev minibus.Event) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

func (e *Env) inject(op minibus.Operation, entity string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.faults {
		f := &e.faults[i]
		if f.op == op && f.entity == entity {
			err := f.err
			if f.n--; f.n == 0 {
				e.faults = slices.Delete(e.faults, i, i+1)
			}
			return err
		}
	}
	return nil
}
