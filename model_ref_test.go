package minibus_test

// The reference model of TestModel (model_test.go): SEMANTICS.md in
// executable form. It is deliberately plain: maps and slices, O(n) scans,
// no timers, no indexes. Every time rule is computed from now by scanning
// every message for its next deadline (refModel.advance). It knows nothing
// of the broker but the public types it returns, and it never calls it.

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/minibus-go/minibus"
)

const (
	mNever int64 = math.MaxInt64 // an instant that never comes
	mUnset int64 = math.MinInt64 // an optional instant not given
)

// mAddSat is t+d, or mNever past what int64 holds (SEMANTICS E2).
func mAddSat(t, d int64) int64 {
	if d == mNever || (d > 0 && t > mNever-d) {
		return mNever
	}
	return t + d
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

// ---------------------------------------------------------------- names (V1)

// validName is SEMANTICS V1, written independently of the broker: queue and
// topic names are 1–260 letters, digits, '.', '-', '_' and '/', starting and
// ending with a letter or digit; subscription and rule names are 1–50 such
// characters without '/', and a rule name may start with '$'.
func validName(kind string, name string) bool {
	maxLen, slash, dollar := 260, true, false
	switch kind {
	case "subscription":
		maxLen, slash = 50, false
	case "rule":
		maxLen, slash, dollar = 50, false, true
	}
	if len(name) < 1 || len(name) > maxLen {
		return false
	}
	letterOrDigit := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := letterOrDigit(c) || c == '.' || c == '-' || c == '_' ||
			(c == '/' && slash) || (c == '$' && dollar && i == 0)
		if !ok {
			return false
		}
	}
	first := letterOrDigit(name[0]) || (dollar && name[0] == '$')
	return first && letterOrDigit(name[len(name)-1])
}

// ---------------------------------------------------------------- properties (V2)

func queueCfg(p minibus.QueueProperties) (mCfg, bool) {
	c := mCfg{lock: int64(time.Minute), maxDelivery: 10, ttl: mNever, autoDelete: mNever,
		maxSize: 1024 << 20, maxMsgSize: 256 << 10, dlOnExpiry: p.DeadLetteringOnMessageExpiration, status: p.Status}
	ok := p.LockDuration == 0 || (p.LockDuration >= 5*time.Second && p.LockDuration <= 5*time.Minute)
	if p.LockDuration != 0 {
		c.lock = int64(p.LockDuration)
	}
	ok = ok && p.MaxDeliveryCount >= 0
	if p.MaxDeliveryCount > 0 {
		c.maxDelivery = uint32(p.MaxDeliveryCount)
	}
	ok = ok && p.DefaultMessageTimeToLive >= 0
	if p.DefaultMessageTimeToLive > 0 {
		c.ttl = int64(p.DefaultMessageTimeToLive)
	}
	ok = ok && (p.AutoDeleteOnIdle == 0 || p.AutoDeleteOnIdle >= 5*time.Minute)
	if p.AutoDeleteOnIdle != 0 {
		c.autoDelete = int64(p.AutoDeleteOnIdle)
	}
	w := p.DuplicateDetectionHistoryTimeWindow
	ok = ok && (w == 0 || (w >= 20*time.Second && w <= 7*24*time.Hour))
	ok = ok && p.MaxSizeInMegabytes >= 0 && p.MaxSizeInMegabytes <= 81920
	if p.MaxSizeInMegabytes > 0 {
		c.maxSize = int64(p.MaxSizeInMegabytes) << 20
	}
	ok = ok && p.MaxMessageSizeInKilobytes >= 0 && p.MaxMessageSizeInKilobytes <= 102400
	if p.MaxMessageSizeInKilobytes > 0 {
		c.maxMsgSize = p.MaxMessageSizeInKilobytes << 10
	}
	ok = ok && p.Status >= minibus.EntityStatusActive && p.Status <= minibus.EntityStatusReceiveDisabled
	// Not built: sessions, duplicate detection, forwarding are refused.
	ok = ok && !p.RequiresSession && !p.RequiresDuplicateDetection && p.ForwardTo == "" && p.ForwardDeadLetteredMessagesTo == ""
	return c, ok
}

func topicCfg(p minibus.TopicProperties) (mCfg, bool) {
	c, ok := queueCfg(minibus.QueueProperties{
		DefaultMessageTimeToLive:            p.DefaultMessageTimeToLive,
		AutoDeleteOnIdle:                    p.AutoDeleteOnIdle,
		RequiresDuplicateDetection:          p.RequiresDuplicateDetection,
		DuplicateDetectionHistoryTimeWindow: p.DuplicateDetectionHistoryTimeWindow,
		MaxSizeInMegabytes:                  p.MaxSizeInMegabytes,
		MaxMessageSizeInKilobytes:           p.MaxMessageSizeInKilobytes,
		Status:                              p.Status,
	})
	c.lock, c.maxDelivery = 0, 0
	return c, ok
}

func subCfg(p minibus.SubscriptionProperties) (mCfg, bool) {
	c, ok := queueCfg(minibus.QueueProperties{
		LockDuration:                     p.LockDuration,
		MaxDeliveryCount:                 p.MaxDeliveryCount,
		DefaultMessageTimeToLive:         p.DefaultMessageTimeToLive,
		DeadLetteringOnMessageExpiration: p.DeadLetteringOnMessageExpiration,
		AutoDeleteOnIdle:                 p.AutoDeleteOnIdle,
		RequiresSession:                  p.RequiresSession,
		ForwardTo:                        p.ForwardTo,
		ForwardDeadLetteredMessagesTo:    p.ForwardDeadLetteredMessagesTo,
		Status:                           p.Status,
	})
	c.dlOnFilter = p.DeadLetteringOnFilterEvaluationExceptions
	c.maxSize, c.maxMsgSize = mNever, mNever // the topic's limits apply
	return c, ok
}

// ---------------------------------------------------------------- entities

func (m *refModel) newEntity(kind mKind, name string, c mCfg) *mEntity {
	e := &mEntity{id: len(m.all), kind: kind, name: name, cfg: c, lastActivity: m.now,
		lastActivation: mUnset, created: m.now, updated: m.now, accessed: m.now}
	m.all = append(m.all, e)
	return e
}

func (m *refModel) createQueue(name string, p *minibus.QueueProperties) (*mEntity, error) {
	return m.createQT(mQueue, name, func() (mCfg, bool) {
		var qp minibus.QueueProperties
		if p != nil {
			qp = *p
		}
		return queueCfg(qp)
	})
}

func (m *refModel) createTopic(name string, p *minibus.TopicProperties) (*mEntity, error) {
	return m.createQT(mTopic, name, func() (mCfg, bool) {
		var tp minibus.TopicProperties
		if p != nil {
			tp = *p
		}
		return topicCfg(tp)
	})
}

func (m *refModel) createQT(kind mKind, name string, cfg func() (mCfg, bool)) (*mEntity, error) {
	if !validName("queue", name) {
		return nil, minibus.ErrInvalidArgument
	}
	c, ok := cfg()
	if !ok {
		return nil, minibus.ErrInvalidArgument
	}
	if m.names[strings.ToLower(name)] != nil {
		return nil, minibus.ErrAlreadyExists
	}
	e := m.newEntity(kind, name, c)
	m.names[strings.ToLower(name)] = e
	return e, nil
}

// lookup is Namespace.Queue and Namespace.Topic.
func (m *refModel) lookup(kind mKind, name string) (*mEntity, error) {
	e := m.names[strings.ToLower(name)]
	if e == nil || e.kind != kind {
		return nil, minibus.ErrNotFound
	}
	return e, nil
}

func (m *refModel) lookupSub(t *mEntity, name string) (*mEntity, error) {
	if t.deleted {
		return nil, minibus.ErrNotFound
	}
	for _, s := range t.subs {
		if strings.EqualFold(s.name, name) {
			return s, nil
		}
	}
	return nil, minibus.ErrNotFound
}

func (m *refModel) createSub(t *mEntity, name string, p *minibus.SubscriptionProperties, def *mRule) (*mEntity, error) {
	if !validName("subscription", name) {
		return nil, minibus.ErrInvalidArgument
	}
	var sp minibus.SubscriptionProperties
	if p != nil {
		sp = *p
	}
	c, ok := subCfg(sp)
	if !ok || def.invalid || !validName("rule", def.name) {
		return nil, minibus.ErrInvalidArgument
	}
	if t.deleted {
		return nil, minibus.ErrNotFound
	}
	if _, err := m.lookupSub(t, name); err == nil {
		return nil, minibus.ErrAlreadyExists
	}
	s := m.newEntity(mSub, name, c)
	s.topic = t
	s.rules = []*mRule{def}
	t.subs = append(t.subs, s)
	m.touch(t) // creating a subscription is its topic's activity
	return s, nil
}

func (m *refModel) delete(kind mKind, name string) error {
	e, err := m.lookup(kind, name)
	if err != nil {
		return err
	}
	m.deleteEntity(e)
	return nil
}

func (m *refModel) deleteSub(t *mEntity, name string) error {
	s, err := m.lookupSub(t, name)
	if err != nil {
		return err
	}
	m.deleteEntity(s)
	return nil
}

// deleteEntity deletes e with its messages and, for a topic, its
// subscriptions (SEMANTICS A3, A5).
func (m *refModel) deleteEntity(e *mEntity) {
	e.deleted = true
	for _, l := range [][]*mMsg{e.main, e.dlq} {
		for _, x := range l {
			m.terminate(x.item, termEntityGone)
		}
	}
	e.main, e.dlq = nil, nil
	for _, s := range slices.Clone(e.subs) {
		m.deleteEntity(s)
	}
	e.subs = nil
	switch e.kind {
	case mSub:
		t := e.topic
		t.subs = slices.DeleteFunc(t.subs, func(x *mEntity) bool { return x == e })
	default:
		if m.names[strings.ToLower(e.name)] == e {
			delete(m.names, strings.ToLower(e.name))
		}
	}
}

func (m *refModel) update(e *mEntity, c mCfg) {
	e.cfg = c
	e.updated = m.now
	m.touch(e)
}

// touch records an activity (SEMANTICS A2); a subscription's is its topic's
// too.
func (m *refModel) touch(e *mEntity) {
	e.lastActivity = m.now
	if e.topic != nil {
		e.topic.lastActivity = m.now
	}
}

func (m *refModel) createRule(s *mEntity, r *mRule) error {
	if !validName("rule", r.name) || r.invalid {
		return minibus.ErrInvalidArgument
	}
	if s.deleted {
		return minibus.ErrNotFound
	}
	if slices.ContainsFunc(s.rules, func(x *mRule) bool { return sameRuleName(x.name, r.name) }) {
		return minibus.ErrAlreadyExists
	}
	s.rules = append(s.rules, r)
	slices.SortFunc(s.rules, func(a, b *mRule) int { return strings.Compare(a.name, b.name) })
	s.updated = m.now
	m.touch(s)
	return nil
}

func (m *refModel) deleteRule(s *mEntity, name string) error {
	if s.deleted {
		return minibus.ErrNotFound
	}
	i := slices.IndexFunc(s.rules, func(x *mRule) bool { return sameRuleName(x.name, name) })
	if i < 0 {
		return minibus.ErrNotFound
	}
	s.rules = slices.Delete(s.rules, i, i+1)
	s.updated = m.now
	m.touch(s)
	return nil
}

// sameRuleName: SEMANTICS V1 says names are matched case-insensitively,
// rule names included.
func sameRuleName(a, b string) bool { return strings.EqualFold(a, b) }
