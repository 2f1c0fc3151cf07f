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
		// they must be on disk before the snapshot is (I11), or a crash could
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
		leaveAll(subs)
		e.mu.Unlock()
		return
	}
}

// snapshotLocked writes e's state (entityState).
func (e *Entity) snapshotLocked(w *snapWriter) {
	st := e.stateLocked()
	st.encode(w)
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
	var st entityState
	st.decode(d)
	if d.err != nil {
		return nil, d.err
	}
	return st.apply(b, topic, fwd)
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

// entityState is what a snapshot holds of one entity: what it is, its
// configuration, times and numbers, its duplicate-detection history, its
// sessions, its messages with their queue, key, state and deadlines, the
// messages on their way elsewhere that left it, and a subscription's rules.
// Its encode writes the format snapshotLocked always wrote, decode reads
// it and apply makes the entity, side by side. A snapshot writes the
// messages and forwards of src, the entity it reads under its lock, as it
// goes, rather than a copy of them all (stateLocked); a restore reads them
// into msgs and forwards.
type entityState struct {
	live                                                          bool
	kind                                                          Kind
	name                                                          string
	cfg                                                           Config
	created, updated, accessed, lastActivity, lastActivation, seq int64
	dups                                                          []dupEntry
	sessions                                                      []sessionState
	msgs                                                          []messageState
	forwards                                                      []*forward // from is not set
	rules                                                         []RuleSpec
	src                                                           *Entity
}

// sessionState is a session in a snapshot: its state and, when it was
// held, its holder's mode and its lock.
type sessionState struct {
	id                      string
	state                   []byte
	held                    bool
	mode                    Mode
	acceptedAt, lockedUntil int64
}

// messageState is a message in a snapshot, with where and how it is in
// its entity's store.
type messageState struct {
	q          store.Queue
	key        store.Key
	state      store.State
	due, until int64
	m          *store.Message
}

// stateLocked returns e's state to encode, its messages and forwards read
// from e as they are written; e's lock is held.
func (e *Entity) stateLocked() entityState {
	st := entityState{live: !e.deleted.Load(), kind: e.kind, name: e.name, cfg: e.cfg,
		created: e.created, updated: e.updated, accessed: e.accessed, lastActivity: e.lastActivity.Load(),
		lastActivation: e.lastActivation, seq: e.seq, src: e}
	if h := e.dups; h != nil {
		for _, x := range h.order[h.head:] {
			if h.until[x.id] == x.until {
				st.dups = append(st.dups, x)
			}
		}
	}
	if e.sessions != nil {
		for _, s := range e.sessions.byID {
			ss := sessionState{id: s.id, state: s.state, held: s.holder != nil}
			if ss.held {
				ss.mode, ss.acceptedAt, ss.lockedUntil = s.holder.mode, s.acceptedAt, s.lockedUntil
			}
			st.sessions = append(st.sessions, ss)
		}
	}
	if e.kind == KindSubscription {
		st.rules = make([]RuleSpec, len(e.rules))
		for i, r := range e.rules {
			st.rules[i] = r.Spec
		}
	}
	return st
}

func (st *entityState) encode(w *snapWriter) {
	w.boolean(st.live)
	w.u8(uint8(st.kind))
	w.str(st.name)
	w.config(st.cfg)
	for _, v := range [...]int64{st.created, st.updated, st.accessed, st.lastActivity, st.lastActivation, st.seq} {
		w.svar(v)
	}
	for _, x := range st.dups {
		w.u8(1)
		w.str(x.id)
		w.svar(x.until)
	}
	w.u8(0)
	for _, s := range st.sessions {
		w.u8(1)
		w.str(s.id)
		w.bytes(s.state)
		w.boolean(s.held)
		if s.held {
			w.u8(uint8(s.mode))
			w.svar(s.acceptedAt)
			w.svar(s.lockedUntil)
		}
	}
	w.u8(0)
	if e := st.src; e != nil {
		e.st.Each(func(m *store.Message) {
			ms := messageState{q: m.Queue(), key: m.Key(), state: m.State(), due: m.Due(), until: m.LockedUntil(), m: m}
			ms.encode(w)
		})
	} else {
		for i := range st.msgs {
			st.msgs[i].encode(w)
		}
	}
	w.u8(0)
	if e := st.src; e != nil {
		// Under the outbox's lock, which keeps each as it is (forward.go).
		o := &e.b.outbox
		o.mu.Lock()
		o.eachLocked(func(f *forward) { e.snapshotForward(w, f) })
		o.mu.Unlock()
	} else {
		for _, f := range st.forwards {
			w.u8(1)
			w.forward(f)
		}
	}
	w.u8(0)
	if st.kind == KindSubscription {
		w.uvar(uint64(len(st.rules)))
		for _, r := range st.rules {
			w.rule(r)
		}
	}
}

func (ms *messageState) encode(w *snapWriter) {
	w.u8(1)
	w.u8(uint8(ms.q))
	w.key(ms.key)
	w.u8(uint8(ms.state))
	w.svar(ms.due)
	w.svar(ms.until)
	w.message(ms.m)
	w.flush(snapChunk)
}

func (st *entityState) decode(d *decoder) {
	st.live, st.kind, st.name, st.cfg = d.boolean(), Kind(d.u8()), d.str(), d.config()
	for _, v := range [...]*int64{&st.created, &st.updated, &st.accessed, &st.lastActivity, &st.lastActivation, &st.seq} {
		*v = d.svar()
	}
	for d.u8() == 1 && d.err == nil {
		st.dups = append(st.dups, dupEntry{id: d.str(), until: d.svar()})
	}
	for d.u8() == 1 && d.err == nil {
		s := sessionState{id: d.str(), state: d.bytes()}
		if s.held = d.boolean(); s.held {
			s.mode, s.acceptedAt, s.lockedUntil = Mode(d.u8()), d.svar(), d.svar()
		}
		st.sessions = append(st.sessions, s)
	}
	for d.u8() == 1 && d.err == nil {
		ms := messageState{q: store.Queue(d.u8()), key: d.key(), state: store.State(d.u8()), due: d.svar(), until: d.svar()}
		ms.m = d.message()
		st.msgs = append(st.msgs, ms)
	}
	for d.u8() == 1 && d.err == nil {
		st.forwards = append(st.forwards, d.forward(nil))
	}
	if st.kind == KindSubscription {
		st.rules = make([]RuleSpec, d.count())
		for i := range st.rules {
			st.rules[i] = d.rule()
		}
	}
}

// apply makes the entity st is, a subscription of topic (nil: none), with
// its messages and sessions, and adds the messages on their way that left
// it to fwd.
func (st *entityState) apply(b *Broker, topic *Entity, fwd *[]*forward) (*Entity, error) {
	if (topic != nil) != (st.kind == KindSubscription) {
		return nil, errDiverged
	}
	e := newEntity(b, st.kind, st.name, topic, st.cfg, st.created)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.updated, e.accessed, e.lastActivation, e.seq = st.updated, st.accessed, st.lastActivation, st.seq
	e.lastActivity.Store(st.lastActivity)
	e.deleted.Store(!st.live)
	for _, x := range st.dups {
		if e.dups == nil {
			return nil, errDiverged
		}
		e.dups.add(x.id, x.until)
	}
	for _, ss := range st.sessions {
		if e.sessions == nil {
			return nil, errDiverged
		}
		s := &session{id: ss.id, state: ss.state}
		e.sessions.byID[s.id] = s
		e.sessions.bytes += int64(len(s.state)) // in the size and quota (SEMANTICS SS9)
		e.quota.Add(int64(len(s.state)))
		if ss.held {
			s.holder = &Receiver{e: e, q: store.Main, mode: ss.mode, sess: s}
			s.acceptedAt, s.lockedUntil = ss.acceptedAt, ss.lockedUntil
			e.sessions.locks.ReplaceOrInsert(sessLock{s.lockedUntil, s.id})
			e.st.Hold(s.id)
		}
	}
	for _, ms := range st.msgs {
		if e.st.Find(ms.q, ms.key, ms.m.SessionID) != nil {
			return nil, fmt.Errorf("%w: message %d twice", errDiverged, ms.key.Seq)
		}
		e.st.Restore(ms.m, ms.key, ms.q, ms.state, ms.due, ms.until)
		if ms.state == store.Locked {
			e.noteLockReplay(ms.m)
		}
	}
	for _, f := range st.forwards {
		f.from = e
		*fwd = append(*fwd, f)
	}
	for _, spec := range st.rules {
		r, err := CompileRule(spec)
		if err != nil {
			return nil, err
		}
		e.rules = append(e.rules, r)
	}
	e.rescheduleLocked()
	return e, nil
}
