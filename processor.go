package minibus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minibus-go/minibus/internal/engine"
	"github.com/minibus-go/minibus/internal/store"
)

// Handler handles one message. Return nil to complete it (peek-lock); an
// error that wraps a *DeadLetterError to dead-letter it with that reason;
// any other error (or a panic, which is recovered and logged) to retry it.
// ctx ends when the processor's Run ctx ends.
type Handler func(ctx context.Context, msg *ReceivedMessage) error

// DeadLetterError, returned (or wrapped) by a Handler, makes the processor
// dead-letter the message with Reason and ErrorDescription.
type DeadLetterError struct {
	Reason, ErrorDescription string
	Err                      error // optional cause
}

// Error returns "dead-letter: <reason>: <description>[: <cause>]".
func (e *DeadLetterError) Error() string {
	s := "dead-letter: " + e.Reason
	if e.ErrorDescription != "" {
		s += ": " + e.ErrorDescription
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *DeadLetterError) Unwrap() error { return e.Err }

// ProcessorOptions configures NewProcessor; nil means every default.
type ProcessorOptions struct {
	// ReceiveMode is how messages are taken. Default ReceiveModePeekLock:
	// the processor settles each message after its handler returns.
	ReceiveMode ReceiveMode
	// SubQueue is what is read. Default SubQueueNone, the entity itself.
	SubQueue SubQueue
	// MaxConcurrentCalls is how many handlers run at once. Default 1.
	MaxConcurrentCalls int
	// MaxAutoLockRenewalDuration is how long after its delivery a message's
	// lock is renewed automatically while its handler runs. Default 5m; < 0
	// disables renewal.
	MaxAutoLockRenewalDuration time.Duration
	// RetryDelay gives how long after a failed call the message is delivered
	// again, on the namespace clock, from its DeliveryCount (1 on the first
	// failure). nil: at once.
	RetryDelay func(deliveryCount uint32) time.Duration
}

// SessionProcessorOptions configures NewSessionProcessor; nil means every
// default.
type SessionProcessorOptions struct {
	// ReceiveMode is how messages are taken. Default ReceiveModePeekLock.
	ReceiveMode ReceiveMode
	// MaxConcurrentSessions is how many sessions are handled at once, each in
	// order, one call at a time. Default 8.
	MaxConcurrentSessions int
	// MaxAutoLockRenewalDuration is how long after a session is accepted its
	// lock is renewed automatically. Default 5m; < 0 disables renewal.
	MaxAutoLockRenewalDuration time.Duration
	// RetryDelay is as ProcessorOptions.RetryDelay; the session's later
	// messages wait for the retried one.
	RetryDelay func(deliveryCount uint32) time.Duration
}

const (
	defaultAutoRenew      = 5 * time.Minute
	defaultMaxSessions    = 8
	defaultConcurrentCall = 1
)

// Processor runs a Handler over the messages of a queue or subscription:
// the receive, settle and shutdown loop a service would otherwise write.
// Get one from NewProcessor or NewSessionProcessor and call Run. It counts as
// running, for [Namespace.WaitIdle], from the call of Run until Run returns.
type Processor struct {
	e       *engine.Entity
	handler Handler
	mode    ReceiveMode
	sub     SubQueue
	calls   int // handlers at once, or sessions at once
	session bool
	renew   time.Duration
	retry   func(uint32) time.Duration

	running atomic.Bool
	// started is closed when Run has started; a new one is made when Run
	// returns. Guarded by mu.
	started chan struct{}
	// inflight counts the messages taken and not yet settled.
	inflight atomic.Int64
	mu       sync.Mutex
	// held are a session processor's sessions, taken and not yet released.
	held map[*engine.Receiver]struct{}

	// pool are a plain processor's workers, so that shutdown stops renewing
	// their locks. Set by runPlain, read by shutdown once runPlain returned,
	// both in Run's goroutine.
	pool *pool
}

// NewProcessor returns a processor of the queue (or of its dead-letter or
// transfer dead-letter queue) that calls h for each message. A nil handler,
// MaxConcurrentCalls < 0 or bad options, and a session-enabled queue (use
// NewSessionProcessor), are ErrInvalidArgument.
func (q *Queue) NewProcessor(h Handler, opts *ProcessorOptions) (*Processor, error) {
	e, err := q.entity()
	if err != nil {
		return nil, err
	}
	return newProcessor(e, h, opts)
}

// NewProcessor is Queue.NewProcessor for a subscription.
func (s *Subscription) NewProcessor(h Handler, opts *ProcessorOptions) (*Processor, error) {
	e, err := s.entity()
	if err != nil {
		return nil, err
	}
	return newProcessor(e, h, opts)
}

func newProcessor(e *engine.Entity, h Handler, opts *ProcessorOptions) (*Processor, error) {
	var o ProcessorOptions
	if opts != nil {
		o = *opts
	}
	who := culprit(e.Kind(), e.Path())
	switch {
	case h == nil:
		return nil, errorf(ErrInvalidArgument, who, "nil Handler")
	case o.MaxConcurrentCalls < 0:
		return nil, errorf(ErrInvalidArgument, who, "MaxConcurrentCalls %d is negative", o.MaxConcurrentCalls)
	case e.Kind() == engine.KindTopic:
		return nil, errorf(ErrInvalidArgument, who, "a topic has no processor: process a subscription")
	case o.SubQueue == SubQueueNone && e.Config().RequiresSession:
		return nil, errorf(ErrInvalidArgument, who, "the %s requires sessions: use NewSessionProcessor", e.Kind())
	}
	if err := o.ReceiveMode.check(who); err != nil {
		return nil, err
	}
	if err := o.SubQueue.check(who); err != nil {
		return nil, err
	}
	return &Processor{e: e, handler: h, mode: o.ReceiveMode, sub: o.SubQueue,
		calls: orDefault(o.MaxConcurrentCalls, defaultConcurrentCall), renew: renewal(o.MaxAutoLockRenewalDuration),
		retry: o.RetryDelay, started: make(chan struct{})}, nil
}

// renewal is the automatic renewal to ask for: 0 for none.
func renewal(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return defaultAutoRenew
	case d < 0:
		return 0
	}
	return d
}

// Run receives messages and calls the handler until ctx ends, then stops
// taking messages, waits for the running handlers and returns nil. A
// handler that does not return within the entity's LockDuration (on the
// namespace clock) after that is left behind: its lock is no longer
// renewed, so its message is delivered again. Run returns ErrClosed when
// the namespace closes and ErrNotFound when the entity is deleted, at once
// if that is so when it starts. Any other error of its own receives (and a
// session processor's accepts), such as ErrEntityDisabled or an injected
// fault, is logged on the namespace's logger and the receive tried again:
// once at once, then when a message arrives or the entity changes, or after
// a pause on the namespace clock that doubles from 100ms up to 10s. A
// second Run of the same processor while one runs is ErrInvalidArgument.
func (p *Processor) Run(ctx context.Context) error {
	if p == nil || p.e == nil {
		return errorf(ErrInvalidArgument, "processor", "nil *Processor")
	}
	if ctx == nil {
		return errorf(ErrInvalidArgument, culprit(p.e.Kind(), p.e.Path()), "nil context")
	}
	if !p.running.CompareAndSwap(false, true) {
		return errorf(ErrInvalidArgument, culprit(p.e.Kind(), p.e.Path()), "the processor is running already")
	}
	defer p.running.Store(false)
	if _, err := p.e.Counts(); err != nil { // gone or closed: at once
		return err
	}
	b := p.e.Broker()
	p.mu.Lock()
	p.held = make(map[*engine.Receiver]struct{})
	b.AddWork(work{p})
	close(p.started)
	p.mu.Unlock()
	defer func() {
		b.RemoveWork(work{p})
		p.mu.Lock()
		p.started = make(chan struct{})
		p.mu.Unlock()
	}()
	var handlers sync.WaitGroup
	var err error
	if p.session {
		err = p.runSessions(ctx, &handlers)
		p.shutdown(&handlers)
	} else {
		var r *engine.Receiver
		r, err = p.e.NewReceiver(p.sub.queue(), p.mode.engine())
		if err == nil {
			err = p.runPlain(ctx, r, &handlers)
			p.shutdown(&handlers)
			r.Close() // after the handlers: they settle through it
		}
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// Started returns a channel that is closed once Run has started and counts
// as running for WaitIdle: a test that starts Run in a goroutine waits on it
// before it moves the clock or waits for idle. Each Run has its own.
func (p *Processor) Started() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// runPlain runs the processor's workers (pool) until ctx ends or Run must
// end (goOn), and returns why. The workers handle what they took, then stop.
func (p *Processor) runPlain(ctx context.Context, r *engine.Receiver, handlers *sync.WaitGroup) error {
	r.AutoRenew(p.renew)
	r.OnTake(func(n int) { p.inflight.Add(int64(n)) })
	w := newPool(ctx, p, r)
	p.pool = w
	for i := range p.calls {
		handlers.Go(func() { w.work(i) })
	}
	defer context.AfterFunc(ctx, func() { w.stop(nil) })()
	<-w.done
	if w.err != nil {
		return w.err
	}
	return ctx.Err()
}

// Retrying after a failed receive or accept: at once the first time, then
// after a change of the entity or a pause on the namespace clock that
// doubles from retryPause up to retryPauseMax.
const (
	retryPause    = 100 * time.Millisecond
	retryPauseMax = 10 * time.Second
)

// goOn decides what the failures-th failed receive (or accept) in a row of
// queue q, err, does to Run: nil to try again, after a wait, when the
// entity is still there and the namespace open; otherwise the error Run
// returns (ErrNotFound, ErrClosed, or ctx.Err() when ctx ended). It logs
// the failures it goes on after.
func (p *Processor) goOn(ctx context.Context, q store.Queue, err error, failures int) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if _, gone := p.e.Counts(); gone != nil {
		return gone
	}
	p.log().Warn("minibus: processor: receiving failed; trying again", "entity", p.e.Path(), "failures", failures, "error", err)
	if failures == 1 {
		return nil
	}
	pause := retryPause << min(failures-2, 10)
	if err := p.e.WaitChange(ctx, q, min(pause, retryPauseMax)); err != nil {
		return err
	}
	return nil
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// settled counts a message out of flight (a receive counted it in, OnTake);
// WaitIdle hears when none is left.
func (p *Processor) settled() {
	if p.inflight.Add(-1) == 0 {
		p.e.Broker().WorkChanged()
	}
}

// handle runs the handler on m and settles it: complete on nil, dead-letter
// on a *DeadLetterError, abandon with the retry delay otherwise (SEMANTICS
// L6 dead-letters it after MaxDeliveryCount). A result returned after ctx
// ended is settled all the same.
func (p *Processor) handle(ctx context.Context, r *Receiver, s *SessionReceiver, m *ReceivedMessage) (settled bool) {
	defer p.settled()
	err := p.call(ctx, m)
	if p.mode == ReceiveModeReceiveAndDelete {
		if err != nil {
			p.log().Warn("minibus: handler failed (receive-and-delete: not retried)", "entity", p.e.Path(), "seq", m.SequenceNumber, "error", err)
		}
		return true
	}
	settle := context.Background()
	var dl *DeadLetterError
	switch {
	case err == nil:
		err = r.CompleteMessage(settle, m, nil)
	case errors.As(err, &dl):
		err = r.DeadLetterMessage(settle, m, &DeadLetterOptions{Reason: dl.Reason, ErrorDescription: dl.ErrorDescription})
	default:
		p.log().Warn("minibus: handler failed", "entity", p.e.Path(), "seq", m.SequenceNumber, "deliveryCount", m.DeliveryCount, "error", err)
		err = p.abandon(r, m)
	}
	if err != nil {
		// The message stays locked until its lock ends, then comes back; a
		// session processor releases the session instead, so that it comes
		// back first.
		p.log().Warn("minibus: settling failed", "entity", p.e.Path(), "seq", m.SequenceNumber, "error", err)
		if r.r != nil && s == nil {
			r.r.StopRenewing(m.LockToken)
		}
		return false
	}
	return true
}

// abandon releases m for a retry after RetryDelay.
func (p *Processor) abandon(r *Receiver, m *ReceivedMessage) error {
	var wait time.Duration
	if p.retry != nil {
		wait = max(p.retry(m.DeliveryCount), 0)
	}
	er, err := r.check()
	if err != nil {
		return err
	}
	if err := checkSettle(er, m, engine.Abandon); err != nil {
		return err
	}
	_, err = er.Settle(context.Background(), engine.Settlement{Op: engine.Abandon, Token: m.LockToken, Seq: m.SequenceNumber, RetryAfter: wait})
	return err
}

// call runs the handler, turning a panic into an error.
func (p *Processor) call(ctx context.Context, m *ReceivedMessage) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("handler panicked: %v", v)
		}
	}()
	return p.handler(ctx, m)
}

func (p *Processor) log() *slog.Logger { return p.e.Broker().Logger() }

// shutdown stops renewing the locks in flight and waits for the running
// handlers, at most the entity's LockDuration of the namespace clock.
func (p *Processor) shutdown(handlers *sync.WaitGroup) {
	done := make(chan struct{})
	go func() {
		handlers.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	default:
	}
	var tokens [][16]byte
	if p.pool != nil {
		tokens = p.pool.tokens()
	}
	if len(tokens) > 0 {
		if r, err := p.e.NewReceiver(p.sub.queue(), engine.PeekLock); err == nil {
			r.StopRenewing(tokens...)
			r.Close()
		}
	}
	timer := p.e.Broker().Clock().Timer(p.e.Config().LockDuration)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	}
}

// work is a running processor as WaitIdle sees it.
type work struct{ p *Processor }

// Quiet reports whether the processor has nothing to do now: no message in
// flight and none available to it, both read at one instant under the
// entity's lock. A receive counts what it takes in flight under that lock
// (OnTake), so a message is never seen neither available nor in flight.
func (x work) Quiet() bool {
	p := x.p
	busy := func() bool { return p.inflight.Load() > 0 }
	if !p.session {
		return p.e.Quiet(p.sub.queue(), busy, nil)
	}
	held := func() []*engine.Receiver { // under the entity's lock, as hold
		p.mu.Lock()
		defer p.mu.Unlock()
		rs := make([]*engine.Receiver, 0, len(p.held))
		for r := range p.held {
			rs = append(rs, r)
		}
		return rs
	}
	return p.e.Quiet(store.Main, busy, held)
}

// WaitIdle returns once, after catching up to the clock (SEMANTICS T3), the
// namespace is idle: no handler of any running Processor is running and no
// message is available to any of them (P1), and no call blocked in
// ReceiveMessages or AcceptNextSession, on any receiver (this package's,
// azsb's, the server's links), has a message or a session there to take:
// that call wakes and takes it, and WaitIdle returns once it has returned
// (P2). A test sends, moves the clock and waits, without sleeping.
//
// What a receive returned is its caller's from then on, settled or not
// (P3): WaitIdle does not wait for a hand-written receive loop to handle
// and settle it, so it never hangs on a message that a test, or a remote
// client of the server, holds. Wait for such a loop's outcome by its event
// (minibustest's WaitFor), or run the handler as a Processor. It returns
// ctx.Err() if ctx ends first and ErrClosed when the namespace is closed.
func (ns *Namespace) WaitIdle(ctx context.Context) error {
	b, err := ns.broker()
	if err != nil {
		return err
	}
	if ctx == nil {
		return errorf(ErrInvalidArgument, "namespace", "nil context")
	}
	return b.WaitQuiet(ctx)
}
