package modeltest

// The reference model of the root's TestModel: SEMANTICS.md in executable
// form. It is deliberately plain: maps and slices, O(n) scans, no timers,
// no indexes. Every time rule is computed from now by scanning every
// message for its next deadline (refModel.advance, time.go). It knows
// nothing of the broker but the public types it returns, and it never
// calls it. This file holds its types and its ledger; entities.go,
// send.go, receive.go, settle.go, time.go and invariants.go its rules.

import (
	"fmt"
	"math"
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

type mHeaders struct {
	ContentType, CorrelationID, Subject, To, ReplyTo, ReplyToSessionID, PartitionKey string
}

// mMsg is one message where it is now: in a queue, a subscription, a
// dead-letter queue, or waiting in a topic.
type mMsg struct {
	item   int // its ledger entry
	origin int // the ledger entry of the message as sent (copies share it)
	key    mKey
	state  mState
	dlq    bool // in the dead-letter queue

	body    []byte
	msgID   string // "" when the broker picks a random one (learned by origin)
	headers mHeaders
	props   map[string]any
	sentTTL int64 // TimeToLive as sent, 0 when not set
	ttl     int64 // the effective TTL, what TimeToLive reads (0: never expires)
	sched   int64 // ScheduledEnqueueTime as sent, or mUnset

	enqueued, expires int64
	lockedUntil       int64
	token             [16]byte // learned from the broker's answer
	deliveries        uint32
	fromDeferral      bool

	dlReason, dlDesc string
	dlDescPrefix     bool // dlDesc is a prefix (filter failure text)
	size             int64
}

// mCfg is an entity's settings, defaults filled in.
type mCfg struct {
	lock        int64
	maxDelivery uint32
	ttl         int64 // mNever: none
	dlOnExpiry  bool
	dlOnFilter  bool
	autoDelete  int64 // mNever: never
	maxSize     int64 // bytes, mNever: none
	maxMsgSize  int64
	status      minibus.EntityStatus
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
	subs  []*mEntity // a topic's live subscriptions
	rules []*mRule   // a subscription's rules, sorted by name
}

func (e *mEntity) String() string {
	if e.kind == mSub {
		return fmt.Sprintf("subscription %s/%s#%d", e.topic.name, e.name, e.id)
	}
	return fmt.Sprintf("%v %s#%d", e.kind, e.name, e.id)
}

func (e *mEntity) list(dlq bool) *[]*mMsg {
	if dlq {
		return &e.dlq
	}
	return &e.main
}

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
// cursor (SEMANTICS L12).
type mReceiver struct {
	e      *mEntity
	rad    bool
	dlq    bool
	closed bool
	cursor mKey
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
)

// sometimes counts the rare paths a run must hit at least once.
type sometimes struct {
	LockExpiry, MaxDeliveryDL, TTLToDLQ, TTLDrop, Activation, Cancel,
	IdleDeletion, StaleTokenRejected, FilterNoMatchDrop, ActionCopy,
	FilterErrorDLQ, QuotaExceeded, TooLarge, Renew, DeferredFetch int
}

func (s *sometimes) add(o sometimes) {
	s.LockExpiry += o.LockExpiry
	s.MaxDeliveryDL += o.MaxDeliveryDL
	s.TTLToDLQ += o.TTLToDLQ
	s.TTLDrop += o.TTLDrop
	s.Activation += o.Activation
	s.Cancel += o.Cancel
	s.IdleDeletion += o.IdleDeletion
	s.StaleTokenRejected += o.StaleTokenRejected
	s.FilterNoMatchDrop += o.FilterNoMatchDrop
	s.ActionCopy += o.ActionCopy
	s.FilterErrorDLQ += o.FilterErrorDLQ
	s.QuotaExceeded += o.QuotaExceeded
	s.TooLarge += o.TooLarge
	s.Renew += o.Renew
	s.DeferredFetch += o.DeferredFetch
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
}

func newRefModel(now int64) *refModel {
	return &refModel{
		now:     now,
		names:   map[string]*mEntity{},
		items:   map[int]string{},
		term:    map[int]string{},
		learned: map[int]string{},
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
