package minibus

import (
	"errors"
	"log/slog"

	"github.com/minibus-go/minibus/internal/engine"
	"github.com/minibus-go/minibus/internal/wal"
)

// Namespace is an in-process Service Bus namespace: a set of queues and
// topics sharing one clock. Create one with [NewNamespace] and [Namespace.Close]
// it when done. A Namespace is safe for concurrent use by any number of
// goroutines.
type Namespace struct {
	b   *engine.Broker
	log *wal.Log // a durable namespace's log (open.go); nil for NewNamespace
}

// NewNamespace returns a new, empty namespace. By default it runs on the
// real clock and logs nothing; see [WithClock] and [WithLogger].
func NewNamespace(opts ...Option) *Namespace {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return &Namespace{b: engine.New(engine.Options{Clock: o.clock, Logger: o.logger,
		Observer: o.observer(), Faults: o.faults()})}
}

// Close closes the namespace. Calls blocked in it return ErrClosed, later
// calls return ErrClosed, and when Close returns no goroutine of the
// namespace is left and no call changes its state any more. Close is
// idempotent. It returns nil but for a durable namespace ([Open]) whose last
// writes failed: then ErrStoreFailed, and the directory is free to open
// again either way.
func (ns *Namespace) Close() error {
	if ns == nil || ns.b == nil {
		return nil
	}
	if !ns.b.Close() || ns.log == nil {
		return nil
	}
	if err := ns.log.Close(); err != nil && !errors.Is(err, wal.ErrClosed) {
		return errorf(ErrStoreFailed, "namespace", "closing its log: %v", err)
	}
	return nil
}

// broker returns the namespace's engine, or an error for a nil namespace.
func (ns *Namespace) broker() (*engine.Broker, error) {
	if ns == nil || ns.b == nil {
		return nil, errorf(ErrInvalidArgument, "namespace", "nil *Namespace")
	}
	return ns.b, nil
}

// Logger returns the namespace's logger ([WithLogger]; by default one that
// discards everything), for layers built on the namespace, such as the
// AMQP server, that log beside it. A nil namespace gives a discarding
// logger.
func (ns *Namespace) Logger() *slog.Logger {
	if ns == nil || ns.b == nil {
		return slog.New(slog.DiscardHandler)
	}
	return ns.b.Logger()
}
