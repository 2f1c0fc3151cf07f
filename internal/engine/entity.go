package engine

import (
	"sync"
	"sync/atomic"

	"github.com/google/btree"
	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/sqlfilter"
	"github.com/minibus-go/minibus/internal/store"
)

// Entity is a queue, a topic or a subscription. One mutex guards its state
// and its store; the package documentation gives the mutex order.
//
// A queue and a subscription are receivable: they hold messages in their
// store's main, dead-letter and transfer dead-letter queues. A queue and a
// topic number the messages sent to them; a topic holds only its scheduled
// messages (SEMANTICS S5) and copies the others to its subscriptions.
type Entity struct {
	b     *Broker
	kind  Kind
	id    uint64  // unique in the broker; orders equal deadlines
	name  string  // as created (SEMANTICS V1)
	path  string  // "orders", or "topic/Subscriptions/sub"
	topic *Entity // a subscription's topic
	lane  *lane   // orders its events (events.go)

	// schedDue is this entity's bound in the scheduler, or store.Never;
	// written under b.sched.mu (catchup.go).
	schedDue atomic.Int64
	// lastActivity is the instant of the last activity (SEMANTICS A2). It is
	// atomic because a subscription's activity is also its topic's.
	lastActivity atomic.Int64
	// idleWatched (cfg.AutoDeleteOnIdle is set, SEMANTICS A1) and ttlCap
	// (cfg.TTL) are copies of cfg that a subscription reads of its topic's
	// under its own lock, not the topic's; setConfigLocked keeps them.
	idleWatched atomic.Bool
	ttlCap      atomic.Int64
	// watchers counts the receivers blocked on the entity (for a topic, on
	// its subscriptions); inWatchSet says the scheduler knows it.
	watchers   atomic.Int32
	inWatchSet atomic.Bool
	// forwards says that the entity forwards its messages or its dead
	// letters: its deadlines may make a message available anywhere.
	forwards atomic.Bool
	// deleted is set, under mu, when the entity is deleted: explicitly, on
	// idle, or with its topic. It is atomic so that lookups need not lock.
	deleted atomic.Bool

	// publishers counts the topic publishes parked on mu, a subscription's
	// mutex (enterSubsLocked); see call.leave.
	publishers atomic.Int32

	mu  sync.Mutex
	cfg Config
	// jenc encodes the entity's journal records (journal.go).
	jenc encoder
	// landing is the forward whose arrival the entity's next record
	// tells: it leaves the outbox's flying set as that record is
	// appended, not after (forward.go, commit).
	landing *forward
	// inCatchUp is set while the namespace catch-up processes the entity: it
	// re-registers the entity when done, so register skips it meanwhile.
	inCatchUp bool
	// arrived is the instant a message was last enqueued: whether anything
	// sends to the entity while its receivers drain it (takeLocked).
	arrived int64

	created, updated, accessed int64
	// seq is the last sequence number assigned (queues and topics, Q1).
	seq int64
	// lastActivation is the instant the last scheduled message activated:
	// idle time counts from it too (SEMANTICS A2).
	lastActivation int64
	// localNext is a lower bound of the earliest deadline, idle included.
	localNext int64
	// instant is the latest instant e acted at: a call, or a deadline. A
	// call reads the clock before it waits for mu, so one that read it
	// earlier may come after one that read it later; its entry
	// (call.enter) moves it up to this instant, and an entity's times
	// (EnqueuedTime in sequence order, SEMANTICS Q3; its events) never go
	// back.
	instant int64
	st      *store.Store
	quota   *store.Quota // a subscription shares its topic's
	// waiters are the blocked receives by queue; for a session-enabled
	// entity, waiters[Main] are the blocked AcceptNextSession calls.
	waiters [3]waitList
	// sessions is the session bookkeeping of a session-enabled entity
	// (session.go), nil for others. The pointer is set at creation and never
	// replaced, so whether it is nil (whether the entity requires sessions)
	// may be read without mu; what it points to is guarded by mu.
	sessions *sessionsOf
	// dups is the duplicate-detection history of a queue or topic with
	// RequiresDuplicateDetection (dedup.go), nil for others.
	dups *dupHistory
	// subs are a topic's subscriptions, sorted by lower-case name. Deleted
	// ones linger until the topic next enters them (enterSubsLocked). The
	// slice is replaced, never changed in place.
	subs []*Entity
	// rules are a subscription's rules, sorted by name; replaced, never
	// changed in place.
	rules []*Rule
	// view is a topic's filter view of the message it is fanning out
	// (planLocked), guarded by mu; nil until its first.
	view *sqlfilter.Message
}

// Name returns the entity's name as created.
func (e *Entity) Name() string { return e.name }

// Kind returns what the entity is.
func (e *Entity) Kind() Kind { return e.kind }

// Topic returns a subscription's topic; nil for queues and topics.
func (e *Entity) Topic() *Entity { return e.topic }

// Path returns the entity's Service Bus path: "orders", or
// "topic/Subscriptions/sub".
func (e *Entity) Path() string { return e.path }

// describe names the entity for error texts: queue "orders".
func (e *Entity) describe() string { return describe(e.kind, e.Path()) }

// Describe names one of the entity's queues for error texts: queue
// "orders", or queue "orders/$DeadLetterQueue". It reads only what never
// changes, so it needs no lock.
func (e *Entity) Describe(q store.Queue) string {
	switch q {
	case store.DeadLetterQueue:
		return describe(e.kind, e.Path()+"/$DeadLetterQueue")
	case store.TransferQueue:
		return describe(e.kind, e.Path()+"/$Transfer/$DeadLetterQueue")
	}
	return e.describe()
}

func (e *Entity) errNotFound() error { return errs.Errorf(errs.ErrNotFound, e.describe(), "") }

// Config returns the entity's configuration.
func (e *Entity) Config() Config {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cfg
}

// touchLocked records an activity at now (SEMANTICS A2); for a subscription
// it is its topic's activity too.
func (e *Entity) touchLocked(now int64) {
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

// Broker returns the broker the entity belongs to.
func (e *Entity) Broker() *Broker { return e.b }

// Receiver receives, peeks and settles the messages of one queue of a queue
// or subscription, or, for a session receiver, of one session of its main
// queue. Safe for concurrent use.
type Receiver struct {
	e    *Entity
	q    store.Queue
	mode Mode
	// sess is a session receiver's session, nil for a plain receiver.
	sess *session
	// renewFor is how long after a delivery its lock is renewed
	// automatically (a processor's MaxAutoLockRenewalDuration); 0: never.
	// Guarded by e.mu.
	renewFor int64
	// taken, when set, is told under e.mu how many messages a receive took,
	// before anyone else can see them gone (a processor's count for WaitQuiet).
	taken func(n int)

	// isClosed is set by Close: the one record that the receiver is closed.
	isClosed atomic.Bool

	// spare is a waiter kept for the next blocking receive.
	spare atomic.Pointer[waiter]

	// cursor is where the next Peek without a start begins (SEMANTICS L12).
	// Guarded by e.mu.
	cursor store.Key
}

// session is the engine's record of one session: it exists while the
// session is held or has state.
type session struct {
	id    string
	state []byte
	// holder is the receiver that accepted the session, nil when none.
	holder      *Receiver
	acceptedAt  int64
	lockedUntil int64
	// renewUntil is until when the session lock renews itself at its end
	// (a session processor's); 0: never.
	renewUntil int64
	// waiters are the holder's blocked receives.
	waiters waitList
}

// sessLock is a held session's lock end, ordered by (until, id).
type sessLock struct {
	until int64
	id    string
}

// sessionsOf is the session bookkeeping of a session-enabled entity,
// guarded by its mutex.
type sessionsOf struct {
	byID  map[string]*session
	locks *btree.BTreeG[sessLock] // held sessions by lock end
	// bytes is the sum of the sessions' state lengths: part of the entity's
	// size and of its quota (SEMANTICS SS9).
	bytes int64
}

// waiter is one blocked receive. Its channel has room for one wake-up, so
// waking never blocks, and a waiter is woken at most once per wait: no
// broker lock is ever held across a blocking channel operation.
type waiter struct {
	ch    chan struct{}
	owner *Receiver // whose call waits, so that closing it wakes the call
}

// waitList is a FIFO of blocked receives on one queue of an entity, guarded
// by the entity's mutex.
type waitList struct {
	ws []*waiter
}

// Rule is a subscription's compiled rule (SEMANTICS R1, R2): immutable once
// made.
type Rule struct {
	Spec RuleSpec
	// match reports whether the filter selects a message; an error is a
	// failed evaluation (R5).
	match func(*sqlfilter.Message) (bool, error)
	// action changes the subscription's copy; nil for none.
	action *sqlfilter.Action
}

// Entity returns the receiver's entity.
func (r *Receiver) Entity() *Entity { return r.e }

// Queue returns the queue the receiver reads.
func (r *Receiver) Queue() store.Queue { return r.q }

// Mode returns the receiver's mode.
func (r *Receiver) Mode() Mode { return r.mode }

// Describe names what the receiver reads, for error texts.
func (r *Receiver) Describe() string {
	if r.sess != nil {
		return "session receiver of " + r.e.Describe(r.q)
	}
	return "receiver of " + r.e.Describe(r.q)
}

// Closed reports whether Close was called.
func (r *Receiver) Closed() bool { return r.isClosed.Load() }

// ErrClosed is the error of calls on the closed receiver.
func (r *Receiver) ErrClosed() error { return errs.Errorf(errs.ErrClosed, r.Describe(), "") }

// waitList is where the receiver's blocked receives wait: its session's, or
// its queue's.
func (r *Receiver) waitList() *waitList {
	if r.sess != nil {
		return &r.sess.waiters
	}
	return &r.e.waiters[r.q]
}

// available returns how many messages the receiver could take now.
func (r *Receiver) available() int {
	if r.sess != nil {
		return r.e.st.AvailableIn(r.sess.id)
	}
	return r.e.st.Available(r.q)
}

func lessSessLock(a, b sessLock) bool {
	return a.until < b.until || (a.until == b.until && a.id < b.id)
}

func newSessionsOf() *sessionsOf {
	return &sessionsOf{byID: make(map[string]*session), locks: btree.NewG(8, lessSessLock)}
}

// clear forgets every session: the entity was deleted. Their states'
// bytes leave quota.
func (x *sessionsOf) clear(quota *store.Quota) {
	quota.Add(-x.bytes)
	x.bytes = 0
	x.byID = make(map[string]*session)
	x.locks.Clear(false)
}

// next returns the earliest session lock end, store.Never when none is held.
func (x *sessionsOf) next() (sessLock, bool) {
	if x == nil {
		return sessLock{until: store.Never}, false
	}
	l, ok := x.locks.Min()
	if !ok {
		return sessLock{until: store.Never}, false
	}
	return l, true
}

// forget drops s when nothing keeps it: not held, no state (SS6).
func (x *sessionsOf) forget(s *session) {
	if s.holder == nil && s.state == nil {
		delete(x.byID, s.id)
	}
}

func (e *Entity) errNoSessions() error {
	return errs.Errorf(errs.ErrInvalidArgument, e.describe(), "the %s does not require sessions", e.kind)
}

// sessionLost reports whether r has lost its session's lock.
func (r *Receiver) sessionLost() bool { return r.sess != nil && r.sess.holder != r }

func (r *Receiver) errSessionLost() error {
	return errs.Errorf(errs.ErrSessionLockLost, r.Describe(), "session %q", r.sess.id)
}

// SessionID returns the id of the receiver's session; "" for a plain
// receiver.
func (r *Receiver) SessionID() string {
	if r.sess == nil {
		return ""
	}
	return r.sess.id
}

// stateBytesLocked is the size of the entity's session states (SEMANTICS
// SS9).
func (e *Entity) stateBytesLocked() int64 {
	if e.sessions == nil {
		return 0
	}
	return e.sessions.bytes
}

// renewUntil is until when a lock r takes at now is renewed automatically:
// its session's limit, or now + renewFor; 0 for never.
func (r *Receiver) renewUntil(now int64) int64 {
	if r.sess != nil {
		return r.sess.renewUntil
	}
	if r.renewFor <= 0 {
		return 0
	}
	return after(now, r.renewFor)
}

func newEntity(b *Broker, kind Kind, name string, topic *Entity, c Config, now int64) *Entity {
	e := &Entity{
		b:              b,
		kind:           kind,
		id:             b.ids.Add(1),
		name:           name,
		path:           name,
		topic:          topic,
		created:        now,
		updated:        now,
		accessed:       now,
		lastActivation: store.Unset,
		localNext:      store.Never,
		instant:        now, // a call that read the clock before it was created acts later
	}
	e.setConfigLocked(c)
	if topic != nil {
		e.path = topic.name + "/Subscriptions/" + name
		e.quota = topic.quota
	} else {
		e.quota = store.NewQuota(c.maxSize())
	}
	e.lane = b.events.laneOf(e.path)
	bySession := c.RequiresSession && kind != KindTopic
	if bySession {
		e.sessions = newSessionsOf()
	}
	if c.RequiresDuplicateDetection && kind != KindSubscription {
		e.dups = newDupHistory()
	}
	e.st = store.New(e.quota, bySession)
	e.schedDue.Store(store.Never)
	b.noteForwarding(e, c)
	e.lastActivity.Store(now)
	e.rescheduleLocked()
	return e
}

// dupHistory remembers the MessageIDs a queue or topic with
// RequiresDuplicateDetection accepted, each until its acceptance plus the
// history window (SEMANTICS DD1). It is pruned whenever the entity is
// entered or caught up, so it holds about one window of ids: the catch-up
// forgets, not a timer. Guarded by the entity's mutex.
type dupHistory struct {
	until map[string]int64 // id -> the instant it is forgotten
	// order lists the ids by acceptance, oldest first from head.
	order []dupEntry
	head  int
}

type dupEntry struct {
	id    string
	until int64
}

// setConfigLocked sets e's configuration and the copies of it that its
// subscriptions read.
func (e *Entity) setConfigLocked(c Config) {
	e.cfg = c
	e.idleWatched.Store(c.AutoDeleteOnIdle != 0)
	e.ttlCap.Store(int64(c.TTL))
}

func newDupHistory() *dupHistory { return &dupHistory{until: make(map[string]int64)} }
