package engine

import (
	"context"
	"log/slog"
	"slices"

	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
)

// A namespace's life and its entities': the calls that make, find, change,
// count and delete them, above everything they use.

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
	c := b.call(endLeave)
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
	c := b.call(endLeave)
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

// Update replaces the entity's configuration, keeping its messages and
// locks: a new LockDuration or TTL applies to later locks and messages. An
// update is activity (SEMANTICS A2); receivers blocked on the entity wake to
// see a new status. A topic's new size limits apply to its subscriptions.
func (e *Entity) Update(cfg Config) (err error) {
	c := e.call(noFault)
	defer c.exit(&err)
	self := e.name
	if e.kind == KindSubscription {
		self = "" // a subscription is no destination
	}
	if err := e.b.checkForwardTargets(self, cfg, e.describe()); err != nil {
		return err
	}
	now, err := c.enter(noContext)
	if err != nil {
		return err
	}
	e.updateLocked(cfg, now)
	e.b.log.Info("minibus: updated", "entity", e.describe())
	return nil
}

// updateLocked gives e the configuration c at now, and records it. A
// topic's subscriptions stay locked from before they see its new limits,
// TTL and idleness until its record is appended: a call on one records
// under its lock alone, and a record of it between the two would replay
// under the old ones.
func (e *Entity) updateLocked(c Config, now int64) {
	var subs []*Entity
	if e.kind == KindTopic {
		subs = e.enterSubsLocked(now)
		defer leaveAll(subs)
	}
	forwardNow := e.kind != KindTopic && e.cfg.ForwardTo == "" && c.ForwardTo != ""
	if e.kind == KindSubscription {
		c.MaxSizeMB, c.MaxMessageKB = e.cfg.MaxSizeMB, e.cfg.MaxMessageKB
	} else {
		e.quota.SetLimit(c.maxSize())
	}
	e.setConfigLocked(c)
	e.b.noteForwarding(e, c)
	e.updated = now
	e.touchLocked(now)
	e.wakeAllLocked()
	if forwardNow {
		e.forwardAllLocked(now)
	}
	for _, s := range subs {
		s.cfg.MaxSizeMB, s.cfg.MaxMessageKB = c.MaxSizeMB, c.MaxMessageKB
	}
	e.rescheduleLocked()
	r := updateRecord{cfg: c, at: now}
	e.log(r.kind(), r.encode)
}

// Counts returns the entity's counts as of now (SEMANTICS T3).
func (e *Entity) Counts() (_ Counts, err error) {
	c := e.call(noFault)
	defer c.exit(&err)
	now, err := c.enter(noContext)
	if err != nil {
		return Counts{}, err
	}
	st := e.st
	n := Counts{
		Active: st.Count(store.Main, store.Available) + st.Count(store.Main, store.Locked) +
			st.Count(store.Main, store.Deferred) + st.Count(store.Main, store.Delayed),
		Scheduled:          st.Count(store.Main, store.Scheduled),
		DeadLetter:         st.Len(store.DeadLetterQueue),
		TransferDeadLetter: st.Len(store.TransferQueue),
		Size:               st.Bytes() + e.stateBytesLocked(), // session state too (SEMANTICS SS9)
		Created:            e.b.Time(e.created),
		Updated:            e.b.Time(e.updated),
		Accessed:           e.b.Time(e.accessed),
	}
	if e.kind == KindTopic {
		subs := e.enterSubsLocked(now)
		n.Subscriptions = len(subs)
		n.Size = e.quota.Used()
		leaveAll(subs)
	}
	return n, nil
}
