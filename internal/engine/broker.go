package engine

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/btree"
	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
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

// events is the broker's queue of events on their way to the observer;
// events.go says how they flow.
type events struct {
	// Read by every call without mu, and seldom written: apart from mu's
	// cache line, which every call writes.
	on      bool // an observer or a debug logger wants events
	observe func(*Event)
	// waiters counts the calls that wait, in deliverEvents, for a batch to
	// end.
	waiters atomic.Int32
	_       [64]byte

	mu sync.Mutex
	// last is the ticket of the last event pushed, written under mu;
	// tickets count from 1.
	last atomic.Uint64
	// open counts the events pushed whose batch has not been finished.
	open int
	// all holds every lane, by its number; ready the free lanes with
	// waiting events, a heap by the ticket of the first; busy the numbers of
	// the lanes whose batch is being observed or has not been finished, and
	// slots the index in busy of each busy lane, by number; stalled those
	// of the busy lanes that have events waiting after their batch, which
	// become ready when it is finished.
	all     []*lane
	ready   []readyLane
	busy    []int32
	slots   []int32
	stalled []int32
	// ended is broadcast, on mu, when a batch ends while a call waits.
	ended sync.Cond
	// lanes are the entities' lanes by lower-case path; nil when events are
	// not wanted. A lane whose entity is deleted leaves it once its last
	// event is observed (releaseLocked), and waits in free, by number, to
	// serve another path: a namespace that makes and deletes entities
	// without end keeps as many lanes as it has entities.
	lanes  map[string]*lane
	free   []int32
	shared *lane
}

// lane orders the events of one entity path: its batches are observed one
// at a time, in order. Its events are in the ring q, at positions that
// count up without end (a position's slot is q[pos&(len(q)-1)]): the batch
// at [head, mid), the events waiting after it at [mid, tail). A slot keeps
// its strings until it is written again; a ring longer than 64 goes once
// empty. Guarded by events.mu, except at.
type lane struct {
	// The first cache line holds all that another goroutine's settledLocked
	// reads of the lane.
	head, mid, tail uint64
	// next is the ticket of the first waiting event, at mid, when there is
	// one; first and second those of the batch's first two events (second
	// is 0 for a batch of one): what settledLocked reads of another
	// goroutine's lane, without its ring.
	next, first, second uint64
	// at is the position of the event being observed while busy (at or
	// after head), and mid once the batch is over: written by the goroutine
	// that observes the batch.
	at atomic.Uint64

	q       []queued
	busy    bool
	stalled bool // in events.stalled
	// gone says the lane's entity is deleted (EventEntityDeleted pushed)
	// and no entity has taken the lane since: once its events are
	// observed, it is released.
	gone bool
	id   int32
	key  string // the path's, in events.lanes
	// Lanes are made one after the other: 128 bytes, a lane shares no
	// cache line with another, which another goroutine may be writing.
	_ [16]byte
}

// readyLane is a ready lane in the heap: its number, and the ticket of its
// first waiting event.
type readyLane struct {
	first uint64
	id    int32
}

// queued is an event with its ticket.
type queued struct {
	Event
	ticket uint64
}

type schedItem struct {
	due int64
	id  uint64
	e   *Entity
}

// scheduler is the broker's view of every entity's earliest deadline, and
// its one timer.
type scheduler struct {
	// next is the earliest registered instant, or store.Never.
	next atomic.Int64

	// catchMu serializes catch-ups. It is taken with no other lock held.
	// running is set while a catch-up runs: a call that starts meanwhile
	// waits for it, so that it never sees one instant half processed (T3).
	catchMu sync.Mutex
	running atomic.Bool

	// mu guards tree and watched. It is a leaf lock: nothing is locked under
	// it.
	mu   sync.Mutex
	tree *btree.BTreeG[schedItem]
	// watched holds every entity a receiver has ever blocked on (deleted ones
	// are dropped by watchedNext). The timer is armed only for the deadlines
	// of those whose watchers count is not zero.
	watched map[*Entity]struct{}
	// forwarders holds every entity that forwards (deleted ones are
	// dropped by watchedNext): while any receiver blocks, the timer is
	// armed for their deadlines too, and for those of a forwarding
	// subscription's topic, whose activations it forwards, since what they
	// forward may arrive where a receiver waits (SEMANTICS T5). blocked
	// counts the blocked receivers.
	forwarders map[*Entity]struct{}
	blocked    atomic.Int32

	// armedAt is the instant the timer is armed for, or a later one when
	// the clock moved while it was set (arm); store.Never when none.
	armedAt atomic.Int64

	// timerMu guards timer and orders arming; sched.mu may be taken under
	// it, and the clock's own lock.
	timerMu sync.Mutex
	timer   *clock.Timer
}

// quiescence holds the registered work, and a broadcast of its changes for
// WaitQuiet.
type quiescence struct {
	mu      sync.Mutex
	works   map[Work]struct{}
	changed chan struct{} // closed at the next change; nil when nobody waits
}

// blocked is a Receive, or an AcceptNextSession (r nil), that has waited,
// as WaitQuiet sees it (SEMANTICS P2, P3): registered under the entity's
// lock before the call first waits, removed when the call returns. It is
// not idle while what the call waits for is there to take (the call was
// woken and is on its way to take it), nor from the instant it took until
// it returns; what it returned is its caller's, and not waited for.
type blocked struct {
	e *Entity
	r *Receiver // the receive's receiver; nil for an AcceptNextSession
	// took is set, under e.mu, when the call takes messages or a session.
	took bool
}

// Journal is the write-ahead log a durable broker appends to.
type Journal interface {
	// Append adds a record and returns its log sequence number, without
	// waiting for I/O; it copies rec.
	Append(rec []byte) uint64
	// Last returns the last log sequence number Append returned.
	Last() uint64
	// Wait returns once record lsn is as durable as the journal promises,
	// or the journal's sticky error.
	Wait(lsn uint64) error
	// Snapshot has write store the state as of record lsn, so that the
	// records up to lsn can go.
	Snapshot(lsn uint64, write func(io.Writer) error) error
	// Sync returns once record lsn and those before it are on disk,
	// whatever the journal's mode.
	Sync(lsn uint64) error
}

// durability is a durable broker's journal state.
type durability struct {
	j Journal
	// maxRecord is the largest record j takes (see recordTooLarge).
	maxRecord int
	// failed holds the first error of the journal: from then on every call
	// fails with ErrStoreFailed.
	failed atomic.Pointer[error]
	// since counts the bytes appended since the last snapshot; compactAt is
	// how many make the snapshotter take the next one (snapshot.go).
	since     atomic.Int64
	compactAt atomic.Int64
	// compactAfter is the least growth between snapshots; lastSize is the
	// last snapshot's size.
	compactAfter int64
	lastSize     int64
	// The snapshotter (snapshot.go): kick wakes it, stop stops it, stopped
	// is closed when it has; snapMu serializes snapshots.
	kick          chan struct{}
	stop, stopped chan struct{}
	snapMu        sync.Mutex
}

// forward is a message on its way from one entity to another.
type forward struct {
	from  *Entity
	key   store.Key // its key in from, for its transfer dead-letter queue
	to    string
	m     *store.Message
	at    int64  // the instant it left
	order uint64 // its place in the order of leaving
	// entered says that it was enqueued in from before it left, and reads
	// so: if it comes back to from's transfer dead-letter queue it keeps
	// that EnqueuedTime (SEMANTICS D2). One that only passed through is
	// enqueued there at the instant it left (F2).
	entered bool
	// taken is, while a durable broker's destination takes it, its message
	// encoded as it left, which a snapshot writes instead of m: the
	// destination changes m meanwhile, under its own lock. Set and read
	// under outbox.mu.
	taken []byte
}

// outbox holds the messages waiting to be forwarded. mu is a leaf lock,
// taken under entity locks; flushMu serializes deliveries and is taken with
// no entity lock held.
//
// A durable broker also keeps the messages a flush took and has not
// delivered yet (flying), so that a snapshot finds every message on its way
// (snapshot.go): one leaves flying under the lock of the entity whose
// record tells where it went, as that record is appended (Entity.commit).
type outbox struct {
	mu      sync.Mutex
	waiting []*forward
	n       atomic.Int32 // pushed and not yet landed (flushForwards)
	flushMu sync.Mutex
	track   bool
	flying  map[*forward]struct{}
	order   uint64 // numbers the messages in the order they left
}

// Time converts an instant back to a time in the clock's location;
// store.Never and store.Unset give the zero time.
func (b *Broker) Time(n int64) time.Time {
	if n == store.Never || n == store.Unset {
		return time.Time{}
	}
	return time.Unix(0, n).In(b.loc)
}

// clockNow reads the namespace clock as an instant: the clock's time at New
// plus clock.Since of it, clamped. That is exactly the clock's Now for a
// mock; for the real clock it reads only the monotonic clock, about half the
// cost of time.Now, and follows neither steps of the wall clock nor leap
// smearing, as a broker's own clock would not.
func (b *Broker) clockNow() int64 {
	d := int64(b.clock.Since(b.epoch))
	switch {
	case d > 0 && b.epochNanos > maxInstant-d:
		return maxInstant
	case d < 0 && b.epochNanos < minInstant-d:
		return minInstant
	}
	return b.epochNanos + d
}

// Work is what WaitQuiet waits for: a running processor, or a blocked
// receive (blocked).
type Work interface {
	// Quiet reports whether the work has nothing to do now: nothing
	// running, nothing available to it. It is called with no broker lock
	// held and may take entity locks.
	Quiet() bool
}

// replayState is what a replay needs beyond the broker's own state.
type replayState struct {
	// covered holds, per queue or topic (a topic with its subscriptions),
	// the last record its snapshot covers: the replay skips those.
	covered map[string]uint64
	// locks finds locked messages by key: a record names a message by its
	// key, and the store finds a locked one only by its token.
	locks map[lockRef]*store.Message
}

type lockRef struct {
	e *Entity
	q store.Queue
	k store.Key
}
