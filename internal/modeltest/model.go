package modeltest

// The reference model of the root's TestModel: SEMANTICS.md in executable
// form. It is deliberately plain: maps and slices, O(n) scans, no timers,
// no indexes. Every time rule is computed from now by scanning every
// message for its next deadline (refModel.advance, time.go). It knows
// nothing of the broker but the public types it returns, and it never
// calls it. This file holds its types and its ledger; entities.go,
// send.go, forward.go, receive.go, sessions.go, settle.go, time.go and
// invariants.go its rules.

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"time"

	"github.com/minibus-go/minibus"
)

const (
	mNever int64 = math.MaxInt64 // an instant that never comes
	mUnset int64 = math.MinInt64 // an optional instant not given
)

// mAddSat is t+d for a duration d >= 0, clamped to the last instant int64
// nanoseconds hold (mNever-1): a finite deadline stays finite (SEMANTICS
// E2).
func mAddSat(t, d int64) int64 {
	if t > mNever-1-d {
		return mNever - 1
	}
	return t + d
}

// mExpiry is ExpiresAt for a message enqueued at with the effective TTL eff
// (0: none, never expires) (SEMANTICS E2).
func mExpiry(at, eff int64) int64 {
	if eff == 0 {
		return mNever
	}
	return mAddSat(at, eff)
}

// mInstant converts a time to the model's nanoseconds, clamped as any
// int64-nanosecond clock must.
func mInstant(t time.Time) int64 {
	lo, hi := time.Unix(0, math.MinInt64+1), time.Unix(0, math.MaxInt64-1)
	switch {
	case t.Before(lo):
		return math.MinInt64 + 1
	case t.After(hi):
		return math.MaxInt64 - 1
	}
	return t.UnixNano()
}

type mState int

const (
	mAvail mState = iota
	mLocked
	mDeferred
	mScheduled
)

func (s mState) String() string {
	return [...]string{"available", "locked", "deferred", "scheduled"}[s]
}

// subQ is one of an entity's three queues: its own, its dead-letter queue
// (D1) and its transfer dead-letter queue (F3).
type subQ uint8

const (
	sqMain subQ = iota
	sqDLQ
	sqTransfer
)

func (q subQ) String() string { return [...]string{"main", "dead-letter", "transfer"}[q] }

func (q subQ) public() minibus.SubQueue {
	return [...]minibus.SubQueue{minibus.SubQueueNone, minibus.SubQueueDeadLetter, minibus.SubQueueTransfer}[q]
}

// mKey orders the messages of an entity: a subscription may hold several
// copies of one topic message under one sequence number (SEMANTICS R2).
type mKey struct {
	seq  int64
	copy uint32
}

func (a mKey) less(b mKey) bool { return a.seq < b.seq || (a.seq == b.seq && a.copy < b.copy) }

func (a mKey) next() mKey {
	if a.copy == math.MaxUint32 {
		return mKey{seq: a.seq + 1}
	}
	return mKey{a.seq, a.copy + 1}
}

// mHeaders are the string properties of a message as sent, SessionID
// included.
type mHeaders struct {
	ContentType, CorrelationID, Subject, To, ReplyTo, ReplyToSessionID, PartitionKey, SessionID string
}

// mMsg is one message where it is now: in a queue, a subscription, one of
// their dead-letter queues, or waiting in a topic.
type mMsg struct {
	item   int // its ledger entry
	origin int // the ledger entry of the message as sent (copies share it)
	key    mKey
	state  mState
	q      subQ // the queue of its entity that holds it

	body    []byte
	msgID   string // "" when the broker picks a random one (learned by origin)
	headers mHeaders
	props   map[string]any
	sentTTL int64 // TimeToLive as sent, 0 when not set
	ttl     int64 // the effective TTL, what TimeToLive reads (0: never expires)
	sched   int64 // ScheduledEnqueueTime as sent, or mUnset
	// stamped says an enqueue set ttl (E1): from then on the message
	// carries that TTL, not the one it was sent with, when it is forwarded.
	stamped bool
	// home is the entity whose enqueue last stamped it (nil: none yet).
	home *mEntity

	enqueued, expires int64
	lockedUntil       int64
	token             [16]byte // learned from the broker's answer
	deliveries        uint32
	fromDeferral      bool

	dlReason, dlDesc string
	dlDescPrefix     bool   // dlDesc is a prefix (filter failure text)
	dlSource         string // DeadLetterSource: where it was dead-lettered before a forward (D4)
	hops             uint8  // ForwardTo moves so far (F3)
	enqSeq           int64  // EnqueuedSequenceNumber, set when it is forwarded (F2)
	size             int64
}

// carriedTTL is the TimeToLive the message brings to its next enqueue: as
// sent until an enqueue stamped it, then its effective one (E1).
func (x *mMsg) carriedTTL() int64 {
	if x.stamped {
		return x.ttl
	}
	return x.sentTTL
}

// mCfg is an entity's settings, defaults filled in.
type mCfg struct {
	lock        int64
	maxDelivery uint32
	ttl         int64 // 0: none
	dlOnExpiry  bool
	dlOnFilter  bool
	autoDelete  int64 // mNever: never
	maxSize     int64 // bytes, mNever: none
	maxMsgSize  int64
	status      minibus.EntityStatus
	session     bool   // RequiresSession (SS1)
	dupDetect   bool   // RequiresDuplicateDetection (DD1)
	dupWindow   int64  // DuplicateDetectionHistoryTimeWindow; 0 for subscriptions
	forwardTo   string // ForwardTo as given (F1)
	forwardDLTo string // ForwardDeadLetteredMessagesTo as given (D4)
}

func canSend(s minibus.EntityStatus) bool {
	return s == minibus.EntityStatusActive || s == minibus.EntityStatusReceiveDisabled
}

func canReceive(s minibus.EntityStatus) bool {
	return s == minibus.EntityStatusActive || s == minibus.EntityStatusSendDisabled
}

type mKind int

const (
	mQueue mKind = iota
	mTopic
	mSub
)

func (k mKind) String() string { return [...]string{"queue", "topic", "subscription"}[k] }

// mHold is a held session: its receiver and its lock's end (SS2).
type mHold struct {
	r     *mReceiver
	until int64
}

// mEntity is one queue, topic or subscription instance. Instances are never
// reused: a re-created name is a new instance, and handles of the old one
// return ErrNotFound (SEMANTICS A3).
type mEntity struct {
	id      int
	kind    mKind
	name    string
	topic   *mEntity
	cfg     mCfg
	deleted bool

	seq            int64 // last sequence number (queues and topics, Q1)
	seqLog         []int // seqLog[n-1] is the ledger item numbered n (I5)
	lastActivity   int64
	lastActivation int64
	created        int64
	updated        int64
	accessed       int64

	main  []*mMsg // a queue's or subscription's messages, a topic's scheduled ones
	dlq   []*mMsg
	tdlq  []*mMsg    // the transfer dead-letter queue (F3)
	subs  []*mEntity // a topic's live subscriptions, in creation order
	rules []*mRule   // a subscription's rules, sorted by name

	// lastFired is the instant of the entity's last event; lastDelivery
	// the instant of the last forward it took, and the entity whose event
	// made it (ties, forward.go).
	lastFired, lastDelivery int64
	lastDeliveryBy          *mEntity

	held  map[string]*mHold // held sessions by id (SS2)
	state map[string][]byte // session state by id (SS6)
	dups  map[string]int64  // duplicate detection: id -> the instant it is forgotten (DD1)
}

func (e *mEntity) String() string {
	if e.kind == mSub {
		return fmt.Sprintf("subscription %s/%s#%d", e.topic.name, e.name, e.id)
	}
	return fmt.Sprintf("%v %s#%d", e.kind, e.name, e.id)
}

// path is the entity's Service Bus path, what DeadLetterSource reads (D4).
func (e *mEntity) path() string {
	if e.kind == mSub {
		return e.topic.name + "/Subscriptions/" + e.name
	}
	return e.name
}

func (e *mEntity) list(q subQ) *[]*mMsg {
	switch q {
	case sqDLQ:
		return &e.dlq
	case sqTransfer:
		return &e.tdlq
	}
	return &e.main
}

// lists is the entity's three queues.
func (e *mEntity) lists() [][]*mMsg { return [][]*mMsg{e.main, e.dlq, e.tdlq} }

// insert puts m into l in key order.
func insert(l *[]*mMsg, m *mMsg) {
	i := sort.Search(len(*l), func(i int) bool { return !(*l)[i].key.less(m.key) })
	*l = slices.Insert(*l, i, m)
}

func remove(l *[]*mMsg, m *mMsg) {
	i := slices.Index(*l, m)
	if i < 0 {
		panic("model: removing a message that is not there")
	}
	*l = slices.Delete(*l, i, i+1)
}

// mReceiver is a receiver: its entity, mode and sub-queue, and its peek
// cursor (SEMANTICS L12); a session receiver also its session (SS4).
type mReceiver struct {
	e      *mEntity
	rad    bool
	q      subQ
	closed bool
	cursor mKey
	isSess bool
	sess   string
}

// Ledger terminals: the documented ends of an accepted message (I1).
const (
	termCompleted  = "completed"
	termRAD        = "received-and-deleted"
	termExpired    = "expired-dropped"
	termCancelled  = "cancelled"
	termNoMatch    = "no-matching-subscription"
	termFannedOut  = "fanned-out"
	termEntityGone = "entity-deleted"
	termDuplicate  = "duplicate-dropped"
)

// sometimes counts the rare paths a run must hit at least once.
type sometimes struct {
	LockExpiry, MaxDeliveryDL, TTLToDLQ, TTLDrop, Activation, Cancel,
	IdleDeletion, StaleTokenRejected, FilterNoMatchDrop, ActionCopy,
	FilterErrorDLQ, QuotaExceeded, TooLarge, Renew, DeferredFetch int
	// Sessions, duplicate detection and forwarding.
	SessionExpired, SessionClosedRelease, SessionNullDLQ, SessionStateKept,
	DuplicateDropped, DuplicateBatch, Forwarded, ForwardOnUpdate, HopLimit,
	TransferDeadLetter, DeadLetterForwarded int
}

// add adds o's counts to s, field by field.
func (s *sometimes) add(o sometimes) {
	sv, ov := reflect.ValueOf(s).Elem(), reflect.ValueOf(o)
	for i := range sv.NumField() {
		f := sv.Field(i)
		f.SetInt(f.Int() + ov.Field(i).Int())
	}
}

// refModel is the whole namespace.
type refModel struct {
	now   int64
	all   []*mEntity          // every instance ever created
	names map[string]*mEntity // live queues and topics by lower-case name

	items   map[int]string // ledger: item -> what was accepted
	term    map[int]string // ledger: item -> its terminal
	nextID  int
	learned map[int]string // origin item -> the random MessageID the broker chose
	hits    sometimes

	// outbox holds the forwards not yet delivered, in the order they left
	// (forward.go); flushing is set while they are delivered.
	outbox   []mForward
	flushing bool

	// While advance runs, firing is the entity whose event is being
	// applied; tieAt is the first instant at which the order of
	// simultaneous events in different entities showed (mNever: none);
	// idleGone is when each name was last deleted for idleness, and by
	// which entity.
	catchingUp bool
	firing     *mEntity
	tieAt      int64
	idleGone   map[string]gone
}

// gone is an idle deletion: the entity and the instant.
type gone struct {
	e  *mEntity
	at int64
}

func newRefModel(now int64) *refModel {
	return &refModel{
		now:      now,
		names:    map[string]*mEntity{},
		items:    map[int]string{},
		term:     map[int]string{},
		learned:  map[int]string{},
		tieAt:    mNever,
		idleGone: map[string]gone{},
	}
}

func (m *refModel) newItem(what string) int {
	m.nextID++
	m.items[m.nextID] = what
	return m.nextID
}

func (m *refModel) terminate(item int, why string) {
	if old, ok := m.term[item]; ok {
		panic(fmt.Sprintf("model: item %d ended twice: %s, then %s", item, old, why))
	}
	m.term[item] = why
}
