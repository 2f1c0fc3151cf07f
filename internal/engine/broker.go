package engine

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus/internal/errs"
)

// Broker is the engine of one namespace: its entities, its clock and its
// catch-up. Safe for concurrent use.
type Broker struct {
	clock clock.Clock
	log   *slog.Logger
	// discard: log's handler is slog.DiscardHandler, so no level is ever
	// enabled; saves asking it on every batch of events.
	discard bool
	loc     *time.Location
	// epoch is the clock's time at New; instants are measured from it
	// (clockNow).
	epoch      time.Time
	epochNanos int64

	life   lifecycle
	sched  scheduler
	outbox outbox     // messages being forwarded (forward.go)
	events events     // events on their way to the observer (events.go)
	quiet  quiescence // the processors and blocked receives WaitQuiet waits for (quiet.go)
	faults []func(Operation, string) error
	ids    atomic.Uint64
	dur    durability // a durable broker's journal (journal.go)
	// replay is set while a journal is replayed (replay.go).
	replay *replayState

	mu sync.Mutex
	// entities holds the queues and topics by lower-case name: they share one
	// name space (SEMANTICS V1). Deleted entities may linger until the next
	// lookup removes them.
	entities map[string]*Entity
}

// Options configure a Broker.
type Options struct {
	Clock  clock.Clock  // required
	Logger *slog.Logger // required
	// Observer, when set, is given every event, in order per entity,
	// outside every lock; events of different entities may be given at once
	// from different goroutines. The event is the broker's: the observer
	// reads it during the call and keeps no pointer to it.
	Observer func(*Event)
	// Faults are asked, in order, before each operation whether it fails
	// (inject): all of them, the first error winning.
	Faults []func(op Operation, entity string) error
}

// New returns a broker with no entities.
func New(o Options) *Broker {
	epoch := o.Clock.Now()
	b := &Broker{
		clock:      o.Clock,
		log:        o.Logger,
		discard:    o.Logger.Handler() == slog.DiscardHandler,
		loc:        epoch.Location(),
		epoch:      epoch,
		epochNanos: Instant(epoch),
		entities:   make(map[string]*Entity),
		faults:     o.Faults,
	}
	b.events.init(o.Observer != nil || o.Logger.Enabled(context.Background(), slog.LevelDebug), o.Observer)
	b.sched.init()
	return b
}

// Close closes the broker: blocked calls return ErrClosed, later calls
// return ErrClosed, and when Close returns no goroutine of the broker is
// left and no call changes its state any more. It reports whether this call
// closed it.
func (b *Broker) Close() bool {
	if !b.life.close() {
		return false
	}
	b.sched.stopTimer()
	b.life.wg.Wait()
	b.stopSnapshots()
	// Wake every blocked receive, which then sees the closed state; locking
	// every entity is also a barrier: a call that passed its closed check
	// under an entity's lock has left it before Close returns.
	for _, e := range b.all() {
		e.mu.Lock()
		e.wakeAllLocked()
		subs := e.subs
		e.mu.Unlock()
		for _, s := range subs {
			s.mu.Lock()
			s.wakeAllLocked()
			s.mu.Unlock()
		}
	}
	return true
}

func (b *Broker) all() []*Entity {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*Entity, 0, len(b.entities))
	for _, e := range b.entities {
		out = append(out, e)
	}
	return out
}

var errClosed = errs.Errorf(errs.ErrClosed, "namespace", "")

// lookupLocked returns the live entity named name (any kind), removing a
// deleted one from the map. Called with b.mu held.
func (b *Broker) lookupLocked(name string) *Entity {
	key := nameKey(name)
	e := b.entities[key]
	if e != nil && e.deleted.Load() {
		delete(b.entities, key)
		return nil
	}
	return e
}

// nameKey is the case-insensitive key of a name (SEMANTICS V1).
func nameKey(name string) string { return strings.ToLower(name) }

func describe(kind Kind, name string) string { return kind.String() + " " + strconv.Quote(name) }

// Create adds a queue or topic whose name and configuration the caller has
// checked. ErrAlreadyExists when a queue or topic has the name.
func (b *Broker) Create(kind Kind, name string, cfg Config) (_ *Entity, err error) {
	c := b.call(endDurable)
	defer c.exit(&err)
	now, err := c.enter(noContext)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.life.closed() {
		return nil, errClosed
	}
	if old := b.lookupLocked(name); old != nil {
		return nil, errs.Errorf(errs.ErrAlreadyExists, describe(kind, name), "the name is taken by %s", old.describe())
	}
	if err := b.checkForwardTargetsLocked(name, cfg, describe(kind, name)); err != nil {
		return nil, err
	}
	e := b.createLocked(kind, name, cfg, now)
	r := createRecord{entityKind: kind, cfg: cfg, at: now}
	e.log(r.kind(), r.encode)
	return e, nil
}

// createLocked adds a queue or topic at instant at; b.mu is held.
func (b *Broker) createLocked(kind Kind, name string, c Config, at int64) *Entity {
	e := newEntity(b, kind, name, nil, c, at)
	b.entities[nameKey(name)] = e
	b.log.Info("minibus: created", "entity", e.describe())
	e.emitEntity(EventEntityCreated, at)
	return e
}

// Find returns the live queue or topic of kind named name, or ErrNotFound.
func (b *Broker) Find(kind Kind, name string) (*Entity, error) {
	c := b.call(endUnlock)
	defer c.exit(nil)
	if _, err := c.enter(noContext); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.lookupLocked(name)
	if e == nil || e.kind != kind {
		return nil, errs.Errorf(errs.ErrNotFound, describe(kind, name), "")
	}
	return e, nil
}

// Delete deletes the queue or topic of kind named name with everything in
// it (SEMANTICS A5), or returns ErrNotFound.
func (b *Broker) Delete(kind Kind, name string) (err error) {
	c := b.call(endDurable)
	defer c.exit(&err)
	now, err := c.enter(noContext)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.lookupLocked(name)
	if e == nil || e.kind != kind {
		return errs.Errorf(errs.ErrNotFound, describe(kind, name), "")
	}
	delete(b.entities, nameKey(name))
	return e.deleteFound(now)
}

// deleteFound deletes e, which a Delete found, at now, unless a catch-up
// has deleted it on idle since (SEMANTICS A3), under e's lock alone: then
// it is ErrNotFound, and not recorded deleted twice (the replay would not
// find it the second time).
func (e *Entity) deleteFound(now int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.deleted.Load() {
		return e.errNotFound()
	}
	e.deleteRecLocked(max(now, e.instant)) // its times never go back (Entity.instant)
	e.b.log.Info("minibus: deleted", "entity", e.describe())
	return nil
}

// Names returns the sorted names of the live entities of kind, as created;
// nil when the broker is closed.
func (b *Broker) Names(kind Kind) []string {
	c := b.call(endUnlock)
	defer c.exit(nil)
	if _, err := c.enter(noContext); err != nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for key, e := range b.entities {
		if e.kind == kind && b.lookupLocked(key) != nil {
			out = append(out, e.name)
		}
	}
	slices.Sort(out)
	return out
}

// lifecycle is the broker's open or closed state, and the goroutines it owns
// (timer callbacks), so that Close can wait for them.
type lifecycle struct {
	// isClosed is set by Close, once: the one record that the broker is
	// closed.
	isClosed atomic.Bool
	mu       sync.Mutex // orders close against add
	wg       sync.WaitGroup
}

func (l *lifecycle) closed() bool { return l.isClosed.Load() }

// add registers a goroutine of the broker's; false once closed.
func (l *lifecycle) add() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed() {
		return false
	}
	l.wg.Add(1)
	return true
}

// done ends add.
func (l *lifecycle) done() { l.wg.Done() }

// close marks the broker closed and reports whether it was open.
func (l *lifecycle) close() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.isClosed.CompareAndSwap(false, true)
}

// Logger returns the broker's logger.
func (b *Broker) Logger() *slog.Logger { return b.log }

// debugging reports whether the logger writes Debug lines now.
func (b *Broker) debugging() bool {
	return !b.discard && b.log.Enabled(context.Background(), slog.LevelDebug)
}

// Clock returns the broker's clock.
func (b *Broker) Clock() clock.Clock { return b.clock }

// Now returns the clock's now as the broker reads it (clockNow), in the
// clock's location.
func (b *Broker) Now() time.Time { return b.Time(b.clockNow()) }
