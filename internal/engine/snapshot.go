package engine

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/minibus-go/minibus/internal/store"
)

// Snapshots let a durable broker's log be cut: a snapshot holds the state as
// of a record L0, written unit by unit (a queue, or a topic with its
// subscriptions), each under its locks, so that calls go on meanwhile. Each
// unit also records the last record appended when it was read: the replay
// skips that unit's records up to there, which its state has already, and
// applies the rest (replay.go). The messages on their way from an entity to
// another are saved with their source; those whose source has been deleted
// since they left (for idleness at that instant, say) with the unit of its
// name, by that name, so that a crash before they land does not lose them:
// the records that sent them are cut from the log.
//
// The snapshotter takes one when the log has grown past the larger of the
// last snapshot and Recovery.CompactAfter since the last one, so that the
// directory holds about twice the live data plus a segment; the growth
// counts from the snapshot, whatever the processes in between (Recover
// counts the records it replays, and kicks the snapshotter when they are
// enough, so that a process that crashes early every time still gets the
// log cut and Open does not replay more each time); Close takes one
// when the log has grown past the last snapshot or past what a snapshot
// of the state now would hold (a store drained since its last snapshot),
// so that the next Open reads the shorter of the two.

// snapVersion is the version snapshots are written in. Version 1 had no
// messages on their way from deleted sources; restore reads it still.
const snapVersion = 2

// startSnapshots starts the snapshotter.
func (b *Broker) startSnapshots() {
	b.dur.stop = make(chan struct{})
	b.dur.stopped = make(chan struct{})
	go func() {
		defer close(b.dur.stopped)
		for {
			select {
			case <-b.dur.stop:
				return
			case <-b.dur.kick:
				b.snapshotIfDue()
			}
		}
	}()
}

// stopSnapshots stops the snapshotter and, when the log has grown past the
// last snapshot or past the state's size, takes a last one. The broker is
// closed: nothing changes.
func (b *Broker) stopSnapshots() {
	if b.dur.j == nil || b.dur.stop == nil {
		return
	}
	close(b.dur.stop)
	<-b.dur.stopped
	if since := b.dur.since.Load(); b.errFailed() == nil && since > 0 && (since > b.dur.lastSize || since > b.stateSize()) {
		if err := b.Snapshot(); err != nil {
			b.log.Error("minibus: snapshot failed", "err", err)
		}
	}
}

// snapMessageSize estimates what a snapshot holds for a message besides
// its body and properties.
const snapMessageSize = 128

// stateSize estimates the size of a snapshot of the broker now: its
// messages, and a little for each entity.
func (b *Broker) stateSize() int64 {
	b.mu.Lock()
	var es []*Entity
	for _, e := range b.entities {
		es = append(es, e)
	}
	b.mu.Unlock()
	var n int64
	for _, e := range es {
		e.mu.Lock()
		n += 1024 + e.st.Bytes() + e.stateBytesLocked() + snapMessageSize*e.st.Messages()
		for _, s := range e.subs {
			s.mu.Lock()
			n += 1024 + s.st.Bytes() + s.stateBytesLocked() + snapMessageSize*s.st.Messages()
			s.mu.Unlock()
		}
		e.mu.Unlock()
	}
	return n
}

// CatchUpSnapshots takes the snapshot the log's growth calls for, if any,
// at once, after one under way: then the snapshotter has nothing left to
// do until the log grows again.
func (b *Broker) CatchUpSnapshots() {
	if b.dur.j != nil {
		b.snapshotIfDue()
	}
}

// snapshotIfDue takes a snapshot if the log has grown enough since the
// last one, looking under snapMu: a wake-up that another snapshot has
// answered meanwhile finds nothing to do.
func (b *Broker) snapshotIfDue() {
	b.dur.snapMu.Lock()
	defer b.dur.snapMu.Unlock()
	if b.dur.since.Load() < b.dur.compactAt.Load() {
		return
	}
	if err := b.snapshotLocked(); err != nil {
		b.log.Error("minibus: snapshot failed", "err", err)
	}
}

// Snapshot writes a snapshot of a durable broker, so that its log can be
// cut. A failure to write it fails the broker.
func (b *Broker) Snapshot() error {
	b.dur.snapMu.Lock()
	defer b.dur.snapMu.Unlock()
	return b.snapshotLocked()
}

// snapshotLocked is Snapshot with snapMu held.
func (b *Broker) snapshotLocked() error {
	if err := b.errFailed(); err != nil {
		return err // the state may hold a change the log does not (appendRec)
	}
	j := b.dur.j
	grown := b.dur.since.Load()
	// The snapshot is of record l0 and has a unit for every queue or
	// topic that exists then: b.mu orders both with every Create and
	// Delete, which append their records under it. One deleted between
	// the two would have no unit, and the replay would find its delete
	// record but not the entity, whose create record the snapshot cuts.
	var names []string
	b.mu.Lock()
	l0 := j.Last()
	for k := range b.entities {
		names = append(names, k)
	}
	names = append(names, b.outbox.orphanNames()...)
	b.mu.Unlock()
	slices.Sort(names)
	names = slices.Compact(names)
	var size int64
	err := j.Snapshot(l0, func(w io.Writer) error {
		sw := &snapWriter{w: w}
		sw.u8(snapVersion)
		for _, name := range names {
			b.snapshotUnit(sw, name)
			sw.flush(0)
		}
		sw.u8(0)
		sw.flush(0)
		size = sw.n
		if sw.err != nil {
			return sw.err
		}
		// Each unit reflects the records up to the one it names, past l0:
		// they must be on disk before the snapshot is, or a crash could
		// lose them and the next records would reuse their numbers.
		return j.Sync(j.Last())
	})
	if err != nil {
		return err
	}
	b.dur.since.Add(-grown)
	b.dur.lastSize = size
	b.dur.compactAt.Store(max(size, b.dur.compactAfter))
	return nil
}

// snapWriter is an encoder that writes itself out whenever it holds more
// than a chunk, remembering the first error.
type snapWriter struct {
	encoder
	w   io.Writer
	n   int64
	err error
}

func (w *snapWriter) flush(over int) {
	if len(w.b) <= over {
		return
	}
	if w.err == nil {
		_, w.err = w.w.Write(w.b)
	}
	w.n += int64(len(w.b))
	w.b = w.b[:0]
}

const snapChunk = 1 << 20

// snapshotUnit writes the unit of the queue or topic named name (its lower
// case): its state and the last record it covers.
func (b *Broker) snapshotUnit(w *snapWriter, name string) {
	for {
		b.mu.Lock()
		e := b.lookupLocked(name)
		if e == nil {
			w.u8(1)
			w.str(name)
			w.uvar(b.dur.j.Last()) // b.mu orders it with every Create
			w.boolean(false)
			b.snapshotOrphans(w, name, nil, nil)
			b.mu.Unlock()
			return
		}
		e.mu.Lock()
		b.mu.Unlock()
		if e.deleted.Load() {
			e.mu.Unlock()
			continue // deleted meanwhile: look again
		}
		subs := e.subs
		for _, s := range subs {
			s.mu.Lock()
		}
		w.u8(1)
		w.str(name)
		w.uvar(b.dur.j.Last())
		w.boolean(true)
		e.snapshotLocked(w)
		w.uvar(uint64(len(subs)))
		for _, s := range subs {
			s.snapshotLocked(w)
		}
		b.snapshotOrphans(w, name, e, subs)
		unlockAll(subs)
		e.mu.Unlock()
		return
	}
}

// snapshotLocked writes e: what it is, its times and numbers, its
// duplicate-detection history, sessions, messages, messages on their way
// elsewhere, and a subscription's rules.
func (e *Entity) snapshotLocked(w *snapWriter) {
	w.boolean(!e.deleted.Load())
	w.u8(uint8(e.kind))
	w.str(e.name)
	w.config(e.cfg)
	for _, v := range [...]int64{e.created, e.updated, e.accessed, e.lastActivity.Load(), e.lastActivation, e.seq} {
		w.svar(v)
	}
	if h := e.dups; h != nil {
		for _, x := range h.order[h.head:] {
			if h.until[x.id] == x.until {
				w.u8(1)
				w.str(x.id)
				w.svar(x.until)
			}
		}
	}
	w.u8(0)
	if e.sessions != nil {
		for _, s := range e.sessions.byID {
			w.u8(1)
			w.str(s.id)
			w.bytes(s.state)
			w.boolean(s.holder != nil)
			if s.holder != nil {
				w.u8(uint8(s.holder.mode))
				w.svar(s.acceptedAt)
				w.svar(s.lockedUntil)
			}
		}
	}
	w.u8(0)
	e.st.Each(func(m *store.Message) {
		w.u8(1)
		w.u8(uint8(m.Queue()))
		w.key(m.Key())
		w.u8(uint8(m.State()))
		w.svar(m.Due())
		w.svar(m.LockedUntil())
		w.message(m)
		w.flush(snapChunk)
	})
	w.u8(0)
	o := &e.b.outbox
	o.mu.Lock()
	o.eachLocked(func(f *forward) { e.snapshotForward(w, f) })
	o.mu.Unlock()
	w.u8(0)
	if e.kind == KindSubscription {
		w.uvar(uint64(len(e.rules)))
		for _, r := range e.rules {
			w.rule(r.Spec)
		}
	}
}

// snapshotForward writes f when it left e.
func (e *Entity) snapshotForward(w *snapWriter, f *forward) {
	if f.from != e {
		return
	}
	w.u8(1)
	w.forward(f)
}

// forward writes what f is besides its source; outbox.mu is held.
func (w *snapWriter) forward(f *forward) {
	w.key(f.key)
	w.str(f.to)
	w.svar(f.at)
	w.uvar(f.order)
	w.boolean(f.entered)
	if f.taken != nil {
		w.b = append(w.b, f.taken...) // its destination is changing f.m
	} else {
		w.message(f.m)
	}
}

// orphanNames returns the names (lower case) of the units that messages on
// their way from deleted entities belong to: a queue or topic deleted and
// not created again has no unit otherwise.
func (o *outbox) orphanNames() []string {
	var names []string
	o.mu.Lock()
	defer o.mu.Unlock()
	o.eachLocked(func(f *forward) {
		if f.from.deleted.Load() {
			names = append(names, nameKey(f.from.unitName()))
		}
	})
	return names
}

// eachLocked calls fn with every message on its way, waiting or flying;
// o.mu is held.
func (o *outbox) eachLocked(fn func(f *forward)) {
	for _, f := range o.waiting {
		fn(f)
	}
	for f := range o.flying {
		fn(f)
	}
}

// unitName is the name of the queue or topic whose snapshot unit holds e.
func (e *Entity) unitName() string {
	if e.topic != nil {
		return e.topic.name
	}
	return e.name
}

// snapshotOrphans writes the messages on their way from deleted entities of
// the unit named name (lower case), each with its source's kind and names,
// except those the unit has written with their source: from top, the live
// queue or topic of that name, or one of subs, its subscriptions, deleted
// ones among them. The caller holds what keeps the unit as it is: b.mu
// when no entity has the name, top's and subs' locks when one has. A
// deleted source sends nothing more, and its messages leave the outbox
// before the record of where they went is appended (Entity.commit,
// deliver): one the unit finds has that record after the unit's last
// one, which the replay applies.
func (b *Broker) snapshotOrphans(w *snapWriter, name string, top *Entity, subs []*Entity) {
	o := &b.outbox
	o.mu.Lock()
	o.eachLocked(func(f *forward) {
		from := f.from
		if !from.deleted.Load() || nameKey(from.unitName()) != name || from == top || slices.Contains(subs, from) {
			return
		}
		sub := ""
		if from.topic != nil {
			sub = from.name
		}
		w.u8(1)
		w.u8(uint8(from.kind))
		w.str(from.unitName())
		w.str(sub)
		w.forward(f)
	})
	o.mu.Unlock()
	w.u8(0)
}

// restore loads a snapshot into the broker, new and replaying.
func (b *Broker) restore(snap []byte) error {
	d := &decoder{b: snap}
	v := d.u8()
	if v != 1 && v != snapVersion {
		return fmt.Errorf("unknown snapshot version %d", v)
	}
	var fwd []*forward
	for d.u8() == 1 && d.err == nil {
		name, lsn := d.str(), d.uvar()
		b.replay.covered[name] = lsn
		if !d.boolean() {
			if v >= 2 {
				if err := b.restoreOrphans(d, &fwd); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
			continue
		}
		t, err := b.restoreEntity(d, nil, &fwd)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		b.entities[nameKey(t.name)] = t
		n := d.count()
		for range n {
			s, err := b.restoreEntity(d, t, &fwd)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if !s.deleted.Load() {
				t.subs = append(t.subs, s)
			}
		}
		sort.Slice(t.subs, func(i, j int) bool { return nameKey(t.subs[i].name) < nameKey(t.subs[j].name) })
		if v >= 2 {
			if err := b.restoreOrphans(d, &fwd); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return errors.New("bytes after the end")
	}
	sort.Slice(fwd, func(i, j int) bool { return fwd[i].order < fwd[j].order })
	for _, f := range fwd {
		b.outbox.push(*f)
	}
	return nil
}

// restoreEntity reads an entity that snapshotLocked wrote; topic is a
// subscription's topic, already restored.
func (b *Broker) restoreEntity(d *decoder, topic *Entity, fwd *[]*forward) (*Entity, error) {
	live, kind, name, c := d.boolean(), Kind(d.u8()), d.str(), d.config()
	var v [6]int64
	for i := range v {
		v[i] = d.svar()
	}
	if d.err != nil {
		return nil, d.err
	}
	if (topic != nil) != (kind == KindSubscription) {
		return nil, errDiverged
	}
	e := newEntity(b, kind, name, topic, c, v[0])
	e.mu.Lock()
	defer e.mu.Unlock()
	e.updated, e.accessed, e.lastActivation, e.seq = v[1], v[2], v[4], v[5]
	e.lastActivity.Store(v[3])
	e.deleted.Store(!live)
	if err := e.restoreDups(d); err != nil {
		return nil, err
	}
	if err := e.restoreSessions(d); err != nil {
		return nil, err
	}
	if err := e.restoreMessages(d); err != nil {
		return nil, err
	}
	for d.u8() == 1 && d.err == nil {
		*fwd = append(*fwd, d.forward(e))
	}
	if kind == KindSubscription {
		n := d.count()
		for range n {
			r, err := CompileRule(d.rule())
			if err != nil {
				return nil, err
			}
			e.rules = append(e.rules, r)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	e.rescheduleLocked()
	return e, nil
}

// forward reads a message on its way from e that snapWriter.forward wrote.
func (d *decoder) forward(e *Entity) *forward {
	f := &forward{from: e, key: d.key(), to: d.str(), at: d.svar(), order: d.uvar(), entered: d.boolean()}
	f.m = d.message()
	return f
}

// restoreOrphans reads the messages on their way from deleted entities that
// snapshotOrphans wrote, each from a deleted stand-in of its source: a
// delivery needs no more of it than its names, to find it gone.
func (b *Broker) restoreOrphans(d *decoder, fwd *[]*forward) error {
	gone := map[[3]string]*Entity{}
	for d.u8() == 1 && d.err == nil {
		kind, top, sub := Kind(d.u8()), d.str(), d.str()
		if (kind == KindSubscription) != (sub != "") || (kind != KindQueue && kind != KindTopic && kind != KindSubscription) {
			return errDiverged
		}
		id := [3]string{kind.String(), top, sub}
		from := gone[id]
		if from == nil {
			var topic *Entity
			name := top
			if sub != "" {
				topic = newEntity(b, KindTopic, top, nil, Config{}, 0)
				topic.deleted.Store(true)
				name = sub
			}
			from = newEntity(b, kind, name, topic, Config{}, 0)
			from.deleted.Store(true)
			gone[id] = from
		}
		*fwd = append(*fwd, d.forward(from))
	}
	return d.err
}

// restoreDups reads e's duplicate-detection history.
func (e *Entity) restoreDups(d *decoder) error {
	for d.u8() == 1 && d.err == nil {
		if e.dups == nil {
			return errDiverged
		}
		e.dups.add(d.str(), d.svar())
	}
	return d.err
}

// restoreSessions reads e's sessions: their state and, for a session held
// when the snapshot was taken, its holder and lock.
func (e *Entity) restoreSessions(d *decoder) error {
	for d.u8() == 1 && d.err == nil {
		if e.sessions == nil {
			return errDiverged
		}
		s := &session{id: d.str(), state: d.bytes()}
		e.sessions.byID[s.id] = s
		e.sessions.bytes += int64(len(s.state)) // in the size and quota (SEMANTICS SS9)
		e.quota.Add(int64(len(s.state)))
		if d.boolean() {
			s.holder = &Receiver{e: e, q: store.Main, mode: Mode(d.u8()), sess: s}
			s.acceptedAt, s.lockedUntil = d.svar(), d.svar()
			e.sessions.locks.ReplaceOrInsert(sessLock{s.lockedUntil, s.id})
			e.st.Hold(s.id)
		}
	}
	return d.err
}

// restoreMessages reads e's messages, each with its queue, key, state and
// deadlines.
func (e *Entity) restoreMessages(d *decoder) error {
	for d.u8() == 1 && d.err == nil {
		q, k, st, due, until := store.Queue(d.u8()), d.key(), store.State(d.u8()), d.svar(), d.svar()
		m := d.message()
		if d.err != nil {
			break
		}
		if e.st.Find(q, k, m.SessionID) != nil {
			return fmt.Errorf("%w: message %d twice", errDiverged, k.Seq)
		}
		e.st.Restore(m, k, q, st, due, until)
		if st == store.Locked {
			e.noteLockReplay(m)
		}
	}
	return d.err
}
