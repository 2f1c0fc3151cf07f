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
// WaitIdle, and Advance after it moves the clock, wait for running
// processors and for receives blocked in ReceiveMessages or
// AcceptNextSession with something there to take, until they took it
// (SEMANTICS P1, P2). What a hand-written receive loop then does with a
// message is the loop's own (P3): wait for its outcome with WaitFor, say
// the message's EventCompleted. EventsOf, EventsFor, Peek and DeadLetters
// read what happened and what is left.
//
// Time: the Env's clock is a mock that starts at Epoch, 2026-01-01, behind
// the wall clock. The code under test must take its time from the
// namespace (Namespace().Now(), or Clock()), never from time.Now: a
// message scheduled for time.Now().Add(time.Hour) is due months after the
// mock's now, so Advance(time.Hour) leaves it scheduled, and nothing says
// so.
//
// It imports testing and the mock clock; minibus never imports it.
package minibustest

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
	// grew is closed at the next event recorded; nil when nobody waits.
	grew chan struct{}

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
	return NewWithClock(t, nil, opts...)
}

// NewWithClock is New with the namespace's clock wrapped: wrap is given the
// Env's mock, set to Epoch, and returns the clock the namespace runs on,
// one that counts or logs the timers the namespace asks the mock for, say.
// Clock, Advance and WaitIdle work on the mock as with New. A nil wrap is
// New.
func NewWithClock(t testing.TB, wrap func(*clock.Mock) clock.Clock, opts ...minibus.Option) *Env {
	t.Helper()
	e := &Env{t: t, clock: clock.NewMock()}
	e.clock.Set(Epoch)
	var c clock.Clock = e.clock
	if wrap != nil {
		c = wrap(e.clock)
	}
	all := append([]minibus.Option{
		minibus.WithClock(c),
		minibus.WithObserver(e.record),
		minibus.WithFaultInjector(e.inject),
	}, opts...)
	e.ns = minibus.NewNamespace(all...)
	t.Cleanup(func() { _ = e.ns.Close() })
	return e
}

// Receiver is what a *minibus.Receiver and a *minibus.SessionReceiver have
// in common: receiving, peeking and settling the messages of one sub-queue,
// or of one session. A test helper that takes a Receiver serves both.
type Receiver interface {
	ReceiveMessages(ctx context.Context, maxMessages int, opts *minibus.ReceiveMessagesOptions) ([]*minibus.ReceivedMessage, error)
	PeekMessages(ctx context.Context, maxMessages int, opts *minibus.PeekMessagesOptions) ([]*minibus.ReceivedMessage, error)
	ReceiveDeferredMessages(ctx context.Context, seqs []int64, opts *minibus.ReceiveDeferredMessagesOptions) ([]*minibus.ReceivedMessage, error)
	CompleteMessage(ctx context.Context, m *minibus.ReceivedMessage, opts *minibus.CompleteMessageOptions) error
	AbandonMessage(ctx context.Context, m *minibus.ReceivedMessage, opts *minibus.AbandonMessageOptions) error
	DeadLetterMessage(ctx context.Context, m *minibus.ReceivedMessage, opts *minibus.DeadLetterOptions) error
	DeferMessage(ctx context.Context, m *minibus.ReceivedMessage, opts *minibus.DeferMessageOptions) error
	RenewMessageLock(ctx context.Context, m *minibus.ReceivedMessage, opts *minibus.RenewMessageLockOptions) error
	ReleaseMessage(ctx context.Context, m *minibus.ReceivedMessage, opts *minibus.ReleaseMessageOptions) error
	Close(ctx context.Context) error
}

var (
	_ Receiver = (*minibus.Receiver)(nil)
	_ Receiver = (*minibus.SessionReceiver)(nil)
)

// Namespace returns the Env's namespace.
func (e *Env) Namespace() *minibus.Namespace { return e.ns }

// Clock returns the Env's mock clock.
func (e *Env) Clock() *clock.Mock { return e.clock }

// Advance moves the clock by d, then waits until the namespace is idle
// (see WaitIdle): a message due within the move is handled by a running
// processor, or taken by a receive waiting for it, when Advance returns. A
// test that holds a handler on purpose moves the clock with Clock().Add
// instead, as Advance would wait for that handler.
func (e *Env) Advance(d time.Duration) {
	e.t.Helper()
	e.clock.Add(d)
	e.WaitIdle()
}

// WaitIdle is Namespace().WaitIdle, failing the test if the namespace is
// not idle within 10 s of real time: no running processor has a handler
// running or a message available, and no receive or accept blocked with
// something to take has not yet taken it (SEMANTICS P1, P2). A message a
// receive returned is its caller's and not waited for (P3), so a test that
// holds one does not hang here; a hand-written loop's outcome is waited
// for with WaitFor.
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

// EventsOf returns the journal's events of the given kinds, in order; with
// no kind, every event.
func (e *Env) EventsOf(kinds ...minibus.EventKind) []minibus.Event {
	return e.filter("", kinds)
}

// EventsFor returns the journal's events of entity ("queue", or
// "topic/Subscriptions/sub", matched case-insensitively as names are), in
// order; with kinds, only those kinds. A topic's events are its own
// (sent, scheduled, activated); its subscriptions' copies are theirs.
func (e *Env) EventsFor(entity string, kinds ...minibus.EventKind) []minibus.Event {
	if entity == "" {
		return nil
	}
	return e.filter(entity, kinds)
}

func (e *Env) filter(entity string, kinds []minibus.EventKind) []minibus.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []minibus.Event
	for _, ev := range e.events {
		if (entity == "" || strings.EqualFold(ev.Entity, entity)) && (len(kinds) == 0 || slices.Contains(kinds, ev.Kind)) {
			out = append(out, ev)
		}
	}
	return out
}

// WaitFor waits until an event for which pred returns true has been
// observed, and returns it: the journal's earliest such event, one
// recorded before the call included, so the order of the test's calls
// does not matter. It fails the test if none comes within 10 s of real
// time, listing the journal's last events. It is how a test waits for a
// hand-written receive loop's outcome (a completion, a dead-lettering),
// which WaitIdle does not wait for (SEMANTICS P3), without polling.
//
// pred is called on the test's goroutine, outside every lock. WaitFor
// does not move or catch up the clock: a deadline's event comes when a
// call (or Advance, or WaitIdle) finds the deadline passed.
func (e *Env) WaitFor(pred func(minibus.Event) bool) minibus.Event {
	e.t.Helper()
	if pred == nil {
		e.t.Fatalf("minibustest: WaitFor: nil predicate")
		return minibus.Event{}
	}
	limit, cancel := context.WithTimeout(context.Background(), waitLimit) // as WaitIdle's
	defer cancel()
	seen := 0
	for {
		e.mu.Lock()
		evs := e.events[seen:] // recorded events never change
		if e.grew == nil {
			e.grew = make(chan struct{})
		}
		grew := e.grew
		e.mu.Unlock()
		for _, ev := range evs {
			if pred(ev) {
				return ev
			}
		}
		seen += len(evs)
		select {
		case <-grew:
		case <-limit.Done():
			e.t.Fatalf("minibustest: no event matched within %v; the journal's last events:%s", waitLimit, e.tail(10))
			return minibus.Event{}
		}
	}
}

// tail lists the journal's last n events, one a line.
func (e *Env) tail(n int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	if len(e.events) == 0 {
		return " none"
	}
	for _, ev := range e.events[max(0, len(e.events)-n):] {
		fmt.Fprintf(&b, "\n\t%v %s seq=%d id=%q at %s", ev.Kind, ev.Entity, ev.SequenceNumber, ev.MessageID, ev.At.Format(time.RFC3339Nano))
	}
	return b.String()
}

// Peek returns every message of entity ("queue", or
// "topic/Subscriptions/sub") in sequence order, as PeekMessages shows them
// (SEMANTICS L12): available, locked, deferred and, in a queue, scheduled;
// it locks and changes nothing but the entity's idle time (a peek is
// activity, A2), and goes through the fault injector as OpPeek. It fails
// the test when entity does not exist or is read through sessions (SS1).
func (e *Env) Peek(entity string) []*minibus.ReceivedMessage {
	e.t.Helper()
	return e.peek(entity, minibus.SubQueueNone)
}

// DeadLetters returns every message in the dead-letter queue of entity
// ("queue", or "topic/Subscriptions/sub") in sequence order, with its
// DeadLetterReason and DeadLetterErrorDescription, peeking as Peek does:
// the messages stay where they are.
func (e *Env) DeadLetters(entity string) []*minibus.ReceivedMessage {
	e.t.Helper()
	return e.peek(entity, minibus.SubQueueDeadLetter)
}

func (e *Env) peek(entity string, sq minibus.SubQueue) []*minibus.ReceivedMessage {
	e.t.Helper()
	r, err := e.receiver(entity, sq)
	if err != nil {
		e.t.Fatalf("minibustest: cannot peek %q: %v", entity, err)
		return nil
	}
	defer func() { _ = r.Close(context.Background()) }()
	var all []*minibus.ReceivedMessage
	for {
		msgs, err := r.PeekMessages(context.Background(), 256, nil) // on from the last one
		if err != nil {
			e.t.Fatalf("minibustest: cannot peek %q: %v", entity, err)
			return nil
		}
		if len(msgs) == 0 {
			return all
		}
		all = append(all, msgs...)
	}
}

// receiver opens a receiver of sub-queue sq of entity: a queue, or a
// subscription named "topic/Subscriptions/sub".
func (e *Env) receiver(entity string, sq minibus.SubQueue) (*minibus.Receiver, error) {
	opts := &minibus.ReceiverOptions{SubQueue: sq}
	q, err := e.ns.Queue(entity)
	if i := strings.LastIndex(strings.ToLower(entity), subscriptions); err != nil && i >= 0 {
		t, terr := e.ns.Topic(entity[:i])
		if terr != nil {
			return nil, terr
		}
		s, serr := t.Subscription(entity[i+len(subscriptions):])
		if serr != nil {
			return nil, serr
		}
		return s.NewReceiver(opts)
	}
	if err != nil {
		if _, terr := e.ns.Topic(entity); terr == nil {
			return nil, fmt.Errorf("%q is a topic: name one of its subscriptions, %q", entity, entity+"/Subscriptions/<name>")
		}
		return nil, err
	}
	return q.NewReceiver(opts)
}

// subscriptions separates a topic's name from its subscription's in an
// entity's name, as in events.
const subscriptions = "/subscriptions/"

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
	if e.grew != nil {
		close(e.grew)
		e.grew = nil
	}
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
