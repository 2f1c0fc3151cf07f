package engine

import (
	"errors"
	"fmt"

	"github.com/minibus-go/minibus/internal/store"
)

// Recovery: a durable broker is rebuilt from its newest snapshot
// (snapshot.go) and the records appended after it, each applied through the
// methods the live call used (journal.go). While it replays, the broker
// reads no clock, processes no deadline (the log holds the ones that came),
// emits no event and appends nothing. Then every lock still open ends
// (SEMANTICS L6), the catch-up runs at the clock's now, and what was on its
// way to another entity is delivered.

// errDiverged is a record that does not fit the state it is applied to.
var errDiverged = errors.New("the record does not fit the state")

// Recovery is what Recover rebuilds a broker from.
type Recovery struct {
	// Journal is where the broker appends from now on.
	Journal Journal
	// Snapshot is the newest snapshot's contents, nil for none.
	Snapshot []byte
	// Replay calls fn with every record after the snapshot, in order, and
	// stops at fn's first error.
	Replay func(fn func(lsn uint64, rec []byte) error) error
	// CompactAfter is the least the log grows between two snapshots.
	CompactAfter int64
	// MaxRecord is the largest record Journal takes; 0: no limit. A call
	// whose record would be larger is refused (journal.go).
	MaxRecord int
}

// Recover rebuilds the broker, new and unused, from r, then makes it
// durable: every change from now on is appended to r.Journal. An error that
// comes from the snapshot or a record wraps ErrCorrupt's cause as the
// caller finds it (the engine says which record); the broker is then
// unusable and must be closed.
func (b *Broker) Recover(r Recovery) error {
	c := b.call(endDurable) // exited once the broker is durable, not on errors before
	b.replay = &replayState{covered: map[string]uint64{}, locks: map[lockRef]*store.Message{}}
	on := b.events.on
	b.events.on = false
	if r.Snapshot != nil {
		if err := b.restore(r.Snapshot); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
	}
	var replayed int64 // the log's growth since the snapshot, which the next one cuts
	err := r.Replay(func(lsn uint64, rec []byte) error {
		replayed += int64(len(rec))
		return b.apply(lsn, rec)
	})
	if err != nil {
		return err
	}
	b.replay = nil
	b.events.on = on
	b.dur.j = r.Journal
	b.dur.setMaxRecord(r.MaxRecord)
	b.dur.kick = make(chan struct{}, 1)
	b.dur.compactAfter = r.CompactAfter
	b.dur.lastSize = int64(len(r.Snapshot))
	b.dur.compactAt.Store(max(b.dur.lastSize, r.CompactAfter))
	// A process that never lives long enough to grow the log by compactAt
	// still gets it cut, by the next Open: the growth counts from the
	// snapshot, not from this process's start.
	b.dur.since.Store(replayed)
	b.outbox.track = true
	b.outbox.flying = make(map[*forward]struct{})
	b.endLocks()
	b.startSnapshots()
	if b.dur.since.Load() >= b.dur.compactAt.Load() {
		select {
		case b.dur.kick <- struct{}{}:
		default: // endLocks's records kicked it
		}
	}
	c.exit(&err)
	return err
}

// endLocks ends what the process that stopped held: automatic renewals,
// then, after the catch-up to now, every lock and session lock still open
// (SEMANTICS L6, SS5).
func (b *Broker) endLocks() {
	each := func(fn func(e *Entity)) {
		for _, t := range b.all() {
			t.mu.Lock()
			fn(t)
			subs := t.subs
			t.mu.Unlock()
			for _, s := range subs {
				s.mu.Lock()
				fn(s)
				s.mu.Unlock()
			}
		}
	}
	each(func(e *Entity) {
		e.st.Each(func(m *store.Message) { m.RenewUntil = 0 })
		if e.sessions != nil {
			for _, s := range e.sessions.byID {
				s.renewUntil = 0
			}
		}
		e.rescheduleLocked()
	})
	now := b.now()
	each(func(e *Entity) {
		if e.deleted.Load() {
			return
		}
		if e.sessions != nil {
			for _, s := range e.sessions.byID {
				if s.holder != nil {
					e.releaseSessionLocked(s, now, true)
				}
			}
		}
		var locked []*store.Message
		e.st.Each(func(m *store.Message) {
			if m.State() == store.Locked {
				locked = append(locked, m)
			}
		})
		for _, m := range locked {
			e.lockLostLocked(m, now)
		}
		e.rescheduleLocked()
	})
}

// apply applies one record of the log (record.go): those of a unit its
// snapshot covers are skipped, but for a forward's, which takes the message
// out of the outbox all the same.
func (b *Broker) apply(lsn uint64, rec []byte) error {
	d := &decoder{b: rec}
	k := recKind(d.u8())
	name, sub := d.str(), d.str()
	skip := lsn <= b.replay.covered[nameKey(name)]
	err := d.err
	if err == nil && (k == recTransfer || !skip) {
		err = b.applyRecord(k, d, name, sub, skip)
	}
	if err != nil {
		return fmt.Errorf("record %d (%v of %s): %w", lsn, k, pathOf(name, sub), err)
	}
	return nil
}

// applyRecord decodes the rest of a record of kind k about the entity
// (name, sub) and applies it.
func (b *Broker) applyRecord(k recKind, d *decoder, name, sub string, skip bool) error {
	r := newRecord(k)
	if r == nil {
		return fmt.Errorf("unknown record kind %d", uint8(k))
	}
	r.decode(d)
	if d.err != nil {
		return d.err
	}
	switch r := r.(type) {
	case brokerRecord:
		return r.apply(b, name, sub, skip)
	case entityRecord:
		e, err := b.replayEntity(name, sub)
		if err != nil {
			return err
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		return r.apply(e)
	}
	return fmt.Errorf("record kind %d applies to nothing", uint8(k))
}

func pathOf(name, sub string) string {
	if sub == "" {
		return name
	}
	return name + "/Subscriptions/" + sub
}

// replayEntity finds the live entity a record names.
func (b *Broker) replayEntity(name, sub string) (*Entity, error) {
	b.mu.Lock()
	e := b.lookupLocked(name)
	b.mu.Unlock()
	if e == nil {
		return nil, errors.New("no such entity")
	}
	if sub == "" {
		return e, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if i, ok := e.findSubLocked(sub); ok && !e.subs[i].deleted.Load() {
		return e.subs[i], nil
	}
	return nil, errors.New("no such subscription")
}

// find returns the message of q with key k, not locked, or nil.
func (e *Entity) find(q store.Queue, k store.Key, session string) *store.Message {
	return e.st.Find(q, k, session)
}

// lockedReplay returns e's message of q with key k, locked, or nil.
func (e *Entity) lockedReplay(q store.Queue, k store.Key) *store.Message {
	ref := lockRef{e, q, k}
	m := e.b.replay.locks[ref]
	if m == nil || !e.st.Holds(m) || m.State() != store.Locked || m.Queue() != q || m.Key() != k {
		return nil
	}
	delete(e.b.replay.locks, ref)
	return m
}

// noteLockReplay notes that m is locked, for the records that name it by
// its key.
func (e *Entity) noteLockReplay(m *store.Message) {
	e.b.replay.locks[lockRef{e, m.Queue(), m.Key()}] = m
}

// unsend takes the message of entity (name, sub) with key k out of the
// outbox; nil when it is not there. Two may match, from a deleted entity
// and a namesake created since: the first to have left is the one, as
// messages land in the order they left (flushForwards).
func (r *replayState) unsend(name, sub string, k store.Key, o *outbox) *forward {
	key, subKey := nameKey(name), nameKey(sub)
	for i, f := range o.waiting {
		from := f.from
		top, s := from, ""
		if from.topic != nil {
			top, s = from.topic, from.name
		}
		if f.key == k && nameKey(top.name) == key && nameKey(s) == subKey {
			o.waiting = append(o.waiting[:i], o.waiting[i+1:]...)
			o.n.Add(-1)
			return f
		}
	}
	return nil
}
