package minibus

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// Namespace is an in-process Service Bus namespace: a set of queues and
// topics sharing one clock. Create one with [NewNamespace] and [Namespace.Close]
// it when done. A Namespace is safe for concurrent use by any number of
// goroutines.
//
// Lock order, for everyone who changes this package: Namespace.mu, then a
// topic's entity mutex, then its subscriptions' entity mutexes (a queue's
// mutex stands alone), then the scheduler's leaf locks (catchup.go). A
// receiver has no lock of its own: its fields are guarded by its entity's
// mutex or are atomic. The catch-up mutex is taken with no lock held. No
// broker lock is held while calling user code or blocking on a channel.
type Namespace struct {
	clock clock.Clock
	log   *slog.Logger
	loc   *time.Location
	// epoch is the clock's time at NewNamespace; instants are measured from
	// it (catchup.go, clockNow).
	epoch      time.Time
	epochNanos int64

	// done is closed by Close: blocked calls select on it.
	done   chan struct{}
	closed atomic.Bool
	life   lifecycle

	sched scheduler
	ids   atomic.Uint64

	mu sync.Mutex
	// entities holds the queues and topics by lower-case name: they share one
	// name space (SEMANTICS V1). Guarded by mu; deleted entities may linger
	// until the next lookup removes them.
	entities map[string]*entity
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
	epoch := o.clock.Now()
	ns := &Namespace{
		clock:      o.clock,
		log:        o.logger,
		loc:        epoch.Location(),
		epoch:      epoch,
		epochNanos: nanos(epoch),
		done:       make(chan struct{}),
		entities:   make(map[string]*entity),
	}
	ns.sched.init()
	return ns
}

// Close closes the namespace. Calls blocked in it return ErrClosed, later
// calls return ErrClosed, and when Close returns no goroutine of the
// namespace is left and no call changes its state any more. Close is
// idempotent and always returns nil.
func (ns *Namespace) Close() error {
	if !ns.life.close() {
		return nil
	}
	ns.closed.Store(true)
	close(ns.done)
	ns.sched.stopTimer()
	ns.life.wg.Wait()
	// A barrier: every call that passed its closed check under an entity's
	// lock has left it before Close returns.
	for _, e := range ns.allEntities() {
		e.mu.Lock()
		subs := make([]*entity, 0, len(e.subs))
		for _, s := range e.subs {
			subs = append(subs, s)
		}
		e.mu.Unlock()
		for _, s := range subs {
			s.mu.Lock()
			s.mu.Unlock() //nolint:staticcheck // barrier
		}
	}
	return nil
}

func (ns *Namespace) allEntities() []*entity {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	out := make([]*entity, 0, len(ns.entities))
	for _, e := range ns.entities {
		out = append(out, e)
	}
	return out
}

// begin starts a namespace-level call: it checks the namespace and catches
// up (SEMANTICS T3).
func (ns *Namespace) begin() (int64, error) {
	if ns == nil {
		return 0, errorf(ErrInvalidArgument, "namespace", "nil *Namespace")
	}
	if ns.closed.Load() {
		return 0, errClosed
	}
	return ns.now(), nil
}

// lookupLocked returns the live entity named name (any kind), removing a
// deleted one from the map. Called with ns.mu held.
func (ns *Namespace) lookupLocked(name string) *entity {
	key := nameKey(name)
	e := ns.entities[key]
	if e == nil {
		return nil
	}
	e.mu.Lock()
	deleted := e.deleted
	e.mu.Unlock()
	if deleted {
		delete(ns.entities, key)
		return nil
	}
	return e
}

// names returns the sorted names of the live entities of kind.
func (ns *Namespace) names(kind entityKind) []string {
	if _, err := ns.begin(); err != nil {
		return nil
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	var out []string
	for key, e := range ns.entities {
		if e.kind != kind {
			continue
		}
		if ns.lookupLocked(key) != nil {
			out = append(out, e.name)
		}
	}
	slices.Sort(out)
	return out
}
