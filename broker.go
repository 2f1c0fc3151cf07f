package minibus

import (
	"github.com/minibus-go/minibus/internal/engine"
)

// Namespace is an in-process Service Bus namespace: a set of queues and
// topics sharing one clock. Create one with [NewNamespace] and [Namespace.Close]
// it when done. A Namespace is safe for concurrent use by any number of
// goroutines.
type Namespace struct {
	b *engine.Broker
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
		Observer: o.observer(), Fault: o.injector()})}
}

// Close closes the namespace. Calls blocked in it return ErrClosed, later
// calls return ErrClosed, and when Close returns no goroutine of the
// namespace is left and no call changes its state any more. Close is
// idempotent and always returns nil.
func (ns *Namespace) Close() error {
	if ns != nil && ns.b != nil {
		ns.b.Close()
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
