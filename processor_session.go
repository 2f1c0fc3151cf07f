package minibus

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/minibus-go/minibus/internal/engine"
	"github.com/minibus-go/minibus/internal/store"
)

// The session processor: each session's messages in order, one call at a
// time, up to MaxConcurrentSessions sessions at once (processor.go has what
// both kinds share).

// NewSessionProcessor returns a processor of a session-enabled queue that
// handles each session's messages in order, one call at a time, up to
// MaxConcurrentSessions sessions at once; the handler gets its session with
// SessionFromContext. It releases a session as soon as it has nothing
// available. A queue without sessions is ErrInvalidArgument.
func (q *Queue) NewSessionProcessor(h Handler, opts *SessionProcessorOptions) (*Processor, error) {
	e, err := q.entity()
	if err != nil {
		return nil, err
	}
	return newSessionProcessor(e, h, opts)
}

// NewSessionProcessor is Queue.NewSessionProcessor for a subscription.
func (s *Subscription) NewSessionProcessor(h Handler, opts *SessionProcessorOptions) (*Processor, error) {
	e, err := s.entity()
	if err != nil {
		return nil, err
	}
	return newSessionProcessor(e, h, opts)
}

func newSessionProcessor(e *engine.Entity, h Handler, opts *SessionProcessorOptions) (*Processor, error) {
	var o SessionProcessorOptions
	if opts != nil {
		o = *opts
	}
	who := culprit(e.Kind(), e.Path())
	switch {
	case h == nil:
		return nil, errorf(ErrInvalidArgument, who, "nil Handler")
	case o.MaxConcurrentSessions < 0:
		return nil, errorf(ErrInvalidArgument, who, "MaxConcurrentSessions %d is negative", o.MaxConcurrentSessions)
	case e.Kind() == engine.KindTopic || !e.Config().RequiresSession:
		return nil, errorf(ErrInvalidArgument, who, "the %s does not require sessions: use NewProcessor", e.Kind())
	}
	if err := o.ReceiveMode.check(who); err != nil {
		return nil, err
	}
	return &Processor{e: e, handler: h, mode: o.ReceiveMode, session: true,
		calls: orDefault(o.MaxConcurrentSessions, defaultMaxSessions), renew: renewal(o.MaxAutoLockRenewalDuration),
		retry: o.RetryDelay, started: make(chan struct{})}, nil
}

// runSessions runs up to calls sessions at once, each in a goroutine of its
// own that takes the next session, handles its messages one at a time and
// releases it when it has nothing available.
func (p *Processor) runSessions(ctx context.Context, handlers *sync.WaitGroup) error {
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	for range p.calls {
		wg.Go(func() {
			err := p.sessionLoop(stop, handlers) // returns only when Run ends
			once.Do(func() { firstErr = err })
			cancel()
		})
	}
	wg.Wait()
	if firstErr != nil && ctx.Err() == nil {
		return firstErr
	}
	return ctx.Err()
}

// sessionLoop takes sessions one after the other until ctx ends or Run must
// end (goOn), and returns that error.
func (p *Processor) sessionLoop(ctx context.Context, handlers *sync.WaitGroup) error {
	hold := func(r *engine.Receiver) {
		p.mu.Lock()
		p.held[r] = struct{}{}
		p.mu.Unlock()
	}
	failures := 0
	for {
		r, err := p.e.AcceptNextSession(ctx, p.mode.engine(), hold)
		if err == nil {
			r.AutoRenew(p.renew)
			r.OnTake(func(n int) { p.inflight.Add(int64(n)) })
			err = p.drainSession(ctx, &SessionReceiver{Receiver{r}}, handlers)
			p.mu.Lock()
			delete(p.held, r)
			p.mu.Unlock()
			p.e.Broker().WorkChanged()
			if err == nil || errors.Is(err, ErrSessionLockLost) {
				failures = 0
				continue
			}
		}
		failures++
		if err := p.goOn(ctx, store.Main, err, failures); err != nil {
			return err
		}
	}
}

// drainSession handles s's messages one at a time until it has nothing
// available, then releases s. When ctx ends while a handler runs, it stops
// renewing the session's lock and returns at once; the handler's goroutine
// settles and releases the session when the handler returns.
func (p *Processor) drainSession(ctx context.Context, s *SessionReceiver, handlers *sync.WaitGroup) error {
	sctx := context.WithValue(ctx, sessionKey{}, s)
	for ctx.Err() == nil {
		msgs, err := s.ReceiveMessages(ctx, 1, &ReceiveMessagesOptions{NoWait: true})
		if err != nil || len(msgs) == 0 {
			s.r.r.Close()
			return err
		}
		var left atomic.Bool // the loop left while the handler ran
		var settled atomic.Bool
		done := make(chan struct{})
		handlers.Add(1)
		go func() {
			defer handlers.Done()
			settled.Store(p.handle(sctx, &s.r, s, msgs[0]))
			close(done)
			if left.Load() {
				s.r.r.Close()
			}
		}()
		select {
		case <-done:
			if !settled.Load() {
				s.r.r.Close() // its message comes back first, to the next holder
				return nil
			}
		case <-ctx.Done():
			s.r.r.StopRenewing()
			if left.Store(true); isClosed(done) {
				s.r.r.Close()
			}
			return ctx.Err()
		}
	}
	s.r.r.Close()
	return ctx.Err()
}

type sessionKey struct{}

// SessionFromContext gives a session processor's handler its session: its
// id, its state, its lock. ok is false in other contexts.
func SessionFromContext(ctx context.Context) (s *SessionReceiver, ok bool) {
	s, ok = ctx.Value(sessionKey{}).(*SessionReceiver)
	return s, ok
}
