package minibus

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/minibus-go/minibus/internal/deadline"
	"github.com/minibus-go/minibus/internal/store"
)

// entityKind says what an entity is.
type entityKind uint8

const (
	kindQueue entityKind = iota
	kindTopic
	kindSubscription
)

func (k entityKind) String() string {
	switch k {
	case kindQueue:
		return "queue"
	case kindTopic:
		return "topic"
	}
	return "subscription"
}

// entity is the state behind a Queue, Topic or Subscription handle. One
// mutex guards all of it (STYLE.md practice 6); the lock order is written
// down on Namespace.
//
// A queue and a subscription are receivable: they hold messages in a main
// queue, a dead-letter queue and a transfer dead-letter queue. A queue and a
// topic number the messages sent to them; a topic holds only its scheduled
// messages (SEMANTICS S5) and copies the others to its subscriptions.
type entity struct {
	ns    *Namespace
	kind  entityKind
	id    uint64  // unique in the namespace; orders equal deadlines
	name  string  // as created (SEMANTICS V1)
	topic *entity // a subscription's topic

	// schedDue is this entity's bound in the namespace scheduler, or
	// store.Never; written under ns.sched.mu (catchup.go).
	schedDue atomic.Int64
	// lastActivity is the instant of the last activity (SEMANTICS A2). It is
	// atomic because a subscription's activity is also its topic's.
	lastActivity atomic.Int64
	// watchers counts the receivers blocked on the entity (for a topic, on
	// its subscriptions); inWatchSet says the scheduler knows it (catchup.go).
	watchers   atomic.Int32
	inWatchSet atomic.Bool
	// gone is set, under mu, when the entity is deleted.
	gone atomic.Bool

	mu sync.Mutex
	// Guarded by mu:
	cfg cfg
	// props are the entity's public properties, defaults filled in:
	// QueueProperties, TopicProperties or SubscriptionProperties.
	props any
	// inCatchUp is set while the namespace catch-up processes the entity: it
	// re-registers the entity when done, so register skips it meanwhile.
	inCatchUp bool
	deleted   bool
	created   int64
	updated   int64
	accessed  int64
	// seq is the last sequence number assigned (queues and topics, Q1).
	seq int64
	// lastActivation is the instant the last scheduled message activated:
	// idle time counts from it too (SEMANTICS A2).
	lastActivation int64
	// localNext is a lower bound of the earliest deadline, idle included.
	localNext int64
	// arena holds every message of the entity, so that the indexes refer to
	// them by slot (internal/store). A lock token carries its message's slot
	// masked with tokenMask (lock.go).
	arena     *store.Arena
	tokenMask uint32
	// deadlines holds the pending expiries and activations, locks the locked
	// messages in the order their locks end: together, every pending message
	// deadline (SEMANTICS T3).
	deadlines *deadline.Index
	locks     lockList
	// sub holds the main, dead-letter and transfer dead-letter queues,
	// indexed by SubQueue. A topic uses only the main one, for its scheduled
	// messages.
	sub [3]*subQueue
	// subs are a topic's subscriptions, sorted by lower-case name. Deleted
	// ones linger until the topic next locks them (pruneSubsLocked).
	subs []*entity
	// rules are a subscription's rules, sorted by name.
	rules []*rule
}

// cfg is an entity's settings in the broker's units, defaults filled in.
type cfg struct {
	lockDuration    int64
	maxDelivery     uint32
	ttl             int64 // DefaultMessageTimeToLive, or store.Never
	dlOnExpiry      bool
	dlOnFilterError bool
	autoDelete      int64 // AutoDeleteOnIdle, or store.Never
	maxSize         int64 // bytes
	maxMessageSize  int64 // bytes
	status          EntityStatus
}

func newEntity(ns *Namespace, kind entityKind, name string, c cfg, now int64) *entity {
	e := &entity{
		ns:             ns,
		kind:           kind,
		id:             ns.ids.Add(1),
		name:           name,
		cfg:            c,
		created:        now,
		updated:        now,
		accessed:       now,
		lastActivation: store.Unset,
		localNext:      store.Never,
		arena:          store.NewArena(),
		tokenMask:      rand.Uint32(),
		deadlines:      deadline.New(),
	}
	e.schedDue.Store(store.Never)
	e.lastActivity.Store(now)
	n := 1
	if kind != kindTopic {
		n = 3
	}
	for i := range n {
		e.sub[i] = newSubQueue(e, SubQueue(i))
	}
	e.rescheduleLocked()
	return e
}

// describe names the entity for error texts: queue "orders".
func (e *entity) describe() string {
	return e.kind.String() + " " + strconv.Quote(e.path())
}

// path is the entity's Service Bus path: "orders", or "topic/Subscriptions/sub".
func (e *entity) path() string {
	if e.kind == kindSubscription {
		return e.topic.name + "/Subscriptions/" + e.name
	}
	return e.name
}

// begin starts an operation: it checks ctx and the namespace and catches up,
// returning now (SEMANTICS T3).
func (e *entity) begin(ctx context.Context) (int64, error) {
	if ctx == nil {
		return 0, errorf(ErrInvalidArgument, e.describe(), "nil context")
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if e.ns.closed.Load() {
		return 0, errClosed
	}
	return e.ns.now(), nil
}

// errClosed is returned by calls on a closed namespace.
var errClosed = errorf(ErrClosed, "namespace", "")

// enter locks e, processes what is due at now, and checks that e still
// exists. On error, e is unlocked again.
func (e *entity) enter(now int64) error {
	e.mu.Lock()
	if e.ns.closed.Load() {
		e.mu.Unlock()
		return errClosed
	}
	if now >= e.localNext {
		e.advanceLocked(now, false)
	}
	if e.deleted {
		e.mu.Unlock()
		return e.errNotFound()
	}
	return nil
}

// lock starts a call that takes no context: it catches up and locks e,
// returning now; on error e is not locked.
func (e *entity) lock() (int64, error) {
	now, err := e.begin(context.Background())
	if err != nil {
		return 0, err
	}
	return now, e.enter(now)
}

func (e *entity) errNotFound() error {
	return errorf(ErrNotFound, e.describe(), "")
}

// touchLocked records an activity at now (SEMANTICS A2); for a subscription
// it is its topic's activity too.
func (e *entity) touchLocked(now int64) {
	touch(&e.lastActivity, now)
	if e.topic != nil {
		touch(&e.topic.lastActivity, now)
	}
}

func touch(a *atomic.Int64, now int64) {
	for {
		old := a.Load()
		if old >= now || a.CompareAndSwap(old, now) {
			return
		}
	}
}

// idleDueLocked is the instant e is deleted for idleness (SEMANTICS A3), or
// store.Never. A queue or topic with pending scheduled messages is never
// idle (A2); its idle time counts from its last scheduled activation too.
func (e *entity) idleDueLocked() int64 {
	if e.cfg.autoDelete == store.Never || e.deleted {
		return store.Never
	}
	if e.kind != kindSubscription && e.sub[SubQueueNone].count[store.Scheduled] > 0 {
		return store.Never
	}
	last := max(e.lastActivity.Load(), e.lastActivation)
	return addSat(last, e.cfg.autoDelete)
}

// nextDueLocked is e's earliest pending event, or store.Never.
func (e *entity) nextDueLocked() int64 {
	if e.deleted {
		return store.Never
	}
	return min(e.deadlines.Next(), e.nextLockEndLocked(), e.idleDueLocked())
}

// nextLockEndLocked is the instant the first lock ends, or store.Never.
func (e *entity) nextLockEndLocked() int64 {
	if m := e.locks.first(e.arena); m != nil {
		return m.LockedUntil
	}
	return store.Never
}

// rescheduleLocked refreshes localNext and the scheduler's bound after e's
// deadlines or idle settings changed.
func (e *entity) rescheduleLocked() {
	e.localNext = e.nextDueLocked()
	if e.localNext != store.Never {
		e.ns.register(e, e.localNext)
	}
}

// setDueLocked gives m the pending deadline due (store.Never: none).
func (e *entity) setDueLocked(m *store.Message, due int64) {
	if m.Due != store.Never {
		e.deadlines.Remove(m.Due, m.Key)
	}
	m.Due = due
	if due != store.Never {
		e.deadlines.Add(due, m.Key, m.Slot)
		e.noteDueLocked(due)
	}
}

// noteDueLocked makes sure e is caught up at due: a new deadline.
func (e *entity) noteDueLocked(due int64) {
	if due < e.localNext {
		e.localNext = due
	}
	e.ns.register(e, due)
}

// catchUp is the namespace catch-up's visit (catchup.go): process what is due
// at or before now while no other entity has an earlier deadline, then
// register the next one.
func (e *entity) catchUp(now int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.deleted {
		return
	}
	e.inCatchUp = true
	e.advanceLocked(now, true)
	e.inCatchUp = false
	e.rescheduleLocked() // advanceLocked's registration was skipped
}

// advanceLocked processes e's deadlines due at or before now in (instant,
// key) order, and deletes e at its idle deadline (SEMANTICS T3, A3). With
// global set it stops at the namespace's next deadline elsewhere, so that
// events across entities happen in time order.
func (e *entity) advanceLocked(now int64, global bool) {
	for !e.deleted {
		it, ok := e.deadlines.Min()
		due := store.Never
		if ok {
			due = it.Due
		}
		locked := e.locks.first(e.arena)
		lockEnd := store.Never
		if locked != nil {
			lockEnd = locked.LockedUntil
		}
		idle := e.idleDueLocked()
		at := min(due, lockEnd, idle)
		if at > now || (global && at > e.ns.sched.next.Load()) {
			break
		}
		switch {
		case lockEnd == at && (due != at || locked.Key.Less(it.Key())):
			e.lockEndedLocked(e.sub[locked.Sub], locked, at) // SEMANTICS L6
		case due == at:
			e.deadlines.Remove(it.Due, it.Key())
			m := e.arena.At(it.Slot)
			m.Due = store.Never
			e.fireLocked(m, at)
		default:
			e.ns.log.Info("minibus: deleted on idle", "entity", e.describe())
			e.deleteLocked()
		}
	}
	e.rescheduleLocked()
}

// fireLocked applies m's deadline, due at instant at.
func (e *entity) fireLocked(m *store.Message, at int64) {
	q := e.sub[m.Sub]
	switch m.State {
	case store.Available:
		e.expireLocked(q, m, at) // SEMANTICS E3, E5
	case store.Scheduled:
		e.activateLocked(m, at) // SEMANTICS S4
	}
}

// deleteLocked deletes e and everything in it: explicitly, on idle, or with
// its topic (SEMANTICS A3, A5). Blocked receivers wake and return
// ErrNotFound.
func (e *entity) deleteLocked() {
	if e.deleted {
		return
	}
	e.deleted = true
	e.gone.Store(true)
	for _, q := range e.sub {
		if q != nil {
			q.waiters.wakeAll()
		}
	}
	for _, s := range e.subs {
		s.mu.Lock()
		s.deleteLocked()
		s.mu.Unlock()
	}
	// Drop the indexes; the messages go with them.
	e.arena = store.NewArena()
	e.deadlines = deadline.New()
	e.locks = lockList{}
	for i, q := range e.sub {
		if q != nil {
			e.sub[i] = newSubQueue(e, q.kind)
		}
	}
	e.subs = nil
}

// subQueue is one of an entity's message queues: the main queue, the
// dead-letter queue or the transfer dead-letter queue. Its fields are
// guarded by the entity's mutex.
type subQueue struct {
	e      *entity
	kind   SubQueue
	stream store.Stream
	// count is the number of messages by state; bytes their total size.
	count   [store.NumStates]int64
	bytes   int64
	waiters waitList
}

func newSubQueue(e *entity, kind SubQueue) *subQueue {
	return &subQueue{
		e:      e,
		kind:   kind,
		stream: store.NewStream(e.arena),
	}
}

// describe names the sub-queue for error texts: queue "orders/$DeadLetterQueue".
func (q *subQueue) describe() string { return q.e.describeSub(q.kind) }

// describeSub names one of e's sub-queues. It reads only what never changes,
// so it needs no lock.
func (e *entity) describeSub(k SubQueue) string {
	switch k {
	case SubQueueDeadLetter:
		return e.kind.String() + " " + strconv.Quote(e.path()+"/$DeadLetterQueue")
	case SubQueueTransfer:
		return e.kind.String() + " " + strconv.Quote(e.path()+"/$Transfer/$DeadLetterQueue")
	}
	return e.describe()
}

// add puts m into q in m.State, and into the entity's arena.
func (q *subQueue) add(m *store.Message) {
	m.Sub = uint8(q.kind)
	q.stream.Add(m)
	q.count[m.State]++
	q.bytes += m.Size
}

// remove takes m out of q and out of the entity's arena. m's deadline must
// be gone already, or go before any other message enters the arena: the
// deadline names m by its slot. A locked message must be unlocked first
// (it is in the entity's list of locks, not in the stream).
func (q *subQueue) remove(m *store.Message) {
	if m.State != store.Locked {
		q.stream.Remove(m)
	}
	q.e.arena.Free(m)
	q.count[m.State]--
	q.bytes -= m.Size
}

// hold moves m from q's stream to State Locked: out of the stream, still in
// the arena and counted in q.
func (q *subQueue) hold(m *store.Message) {
	q.stream.Remove(m)
	q.count[m.State]--
	q.count[store.Locked]++
	m.State = store.Locked
}

// takeHeld takes q's first available message into State Locked, or returns
// nil: hold without a second search.
func (q *subQueue) takeHeld() *store.Message {
	m := q.stream.Take()
	if m != nil {
		q.count[store.Available]--
		q.count[store.Locked]++
		m.State = store.Locked
	}
	return m
}

// release puts m, locked in q, back into q's stream in state s.
func (q *subQueue) release(m *store.Message, s store.State) {
	q.count[store.Locked]--
	q.count[s]++
	m.State = s
	q.stream.Add(m)
}

// take removes q's first available message from q and from the arena, and
// returns it, or nil. As with remove, its deadline must go at once.
func (q *subQueue) take() *store.Message {
	m := q.stream.Take()
	if m != nil {
		q.e.arena.Free(m)
		q.count[store.Available]--
		q.bytes -= m.Size
	}
	return m
}

// sizeLocked is the entity's SizeInBytes (SEMANTICS L13).
func (e *entity) sizeLocked() int64 {
	var n int64
	for _, q := range e.sub {
		if q != nil {
			n += q.bytes
		}
	}
	return n
}
