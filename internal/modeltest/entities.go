package modeltest

// The model's entities: names (V1), properties (V2), queues, topics,
// subscriptions and their rules, forwarding targets (F1).

import (
	"slices"
	"strings"
	"time"

	"github.com/minibus-go/minibus"
)

// ---------------------------------------------------------------- names (V1)

// ValidName is SEMANTICS V1, written independently of the broker: queue and
// topic names are 1–260 letters, digits, '.', '-', '_' and '/', starting and
// ending with a letter or digit; subscription and rule names are 1–50 such
// characters without '/', and a rule name may start with '$'. kind is
// "queue", "topic", "subscription" or "rule".
func ValidName(kind string, name string) bool {
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
	for i := 0; i < len(name); i++ {
		if !nameChar(name[i], i, slash, dollar) {
			return false
		}
	}
	first := letterOrDigit(name[0]) || (dollar && name[0] == '$')
	return first && letterOrDigit(name[len(name)-1])
}

func letterOrDigit(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// nameChar reports whether c may stand at byte i of a name (V1).
func nameChar(c byte, i int, slash, dollar bool) bool {
	switch {
	case letterOrDigit(c), c == '.', c == '-', c == '_':
		return true
	case c == '/':
		return slash
	case c == '$':
		return dollar && i == 0
	}
	return false
}

// ---------------------------------------------------------------- properties (V2)

func queueCfg(p minibus.QueueProperties) (mCfg, bool) {
	c := mCfg{lock: int64(time.Minute), maxDelivery: 10, autoDelete: mNever, maxSize: 1024 << 20,
		maxMsgSize: 256 << 10, dupWindow: int64(10 * time.Minute), dlOnExpiry: p.DeadLetteringOnMessageExpiration,
		status: p.Status, session: p.RequiresSession, dupDetect: p.RequiresDuplicateDetection,
		forwardTo: p.ForwardTo, forwardDLTo: p.ForwardDeadLetteredMessagesTo}
	ok := cfgLock(&c, p.LockDuration, p.MaxDeliveryCount)
	ok = cfgTimes(&c, p.DefaultMessageTimeToLive, p.AutoDeleteOnIdle) && ok
	ok = cfgLimits(&c, p.DuplicateDetectionHistoryTimeWindow, p.MaxSizeInMegabytes, p.MaxMessageSizeInKilobytes) && ok
	ok = ok && p.Status >= minibus.EntityStatusActive && p.Status <= minibus.EntityStatusReceiveDisabled
	// F1: a session-enabled entity cannot forward (its dead letters it may).
	return c, ok && !(p.RequiresSession && p.ForwardTo != "")
}

// cfgLock sets LockDuration (5s–5m) and MaxDeliveryCount (>= 1).
func cfgLock(c *mCfg, lock time.Duration, maxDelivery int32) bool {
	ok := lock == 0 || (lock >= 5*time.Second && lock <= 5*time.Minute)
	if lock != 0 {
		c.lock = int64(lock)
	}
	if maxDelivery > 0 {
		c.maxDelivery = uint32(maxDelivery)
	}
	return ok && maxDelivery >= 0
}

// cfgTimes sets DefaultMessageTimeToLive (> 0) and AutoDeleteOnIdle (A1).
func cfgTimes(c *mCfg, ttl, idle time.Duration) bool {
	if ttl > 0 {
		c.ttl = int64(ttl)
	}
	if idle != 0 {
		c.autoDelete = int64(idle)
	}
	return ttl >= 0 && (idle == 0 || idle >= 5*time.Minute)
}

// cfgLimits sets the duplicate detection window (20s–7d) and the size
// limits (V2, V3).
func cfgLimits(c *mCfg, window time.Duration, maxMB int32, maxKB int64) bool {
	ok := window == 0 || (window >= 20*time.Second && window <= 7*24*time.Hour)
	if window != 0 {
		c.dupWindow = int64(window)
	}
	ok = ok && maxMB >= 0 && maxMB <= 81920
	if maxMB > 0 {
		c.maxSize = int64(maxMB) << 20
	}
	ok = ok && maxKB >= 0 && maxKB <= 102400
	if maxKB > 0 {
		c.maxMsgSize = maxKB << 10
	}
	return ok
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
	c.dupWindow = 0                          // a subscription has no duplicate detection
	return c, ok
}

// checkForward is F1 for an entity named self ("" for a subscription,
// which no forward can name): ForwardTo and ForwardDeadLetteredMessagesTo,
// in that order, must name an existing queue or topic other than itself.
func (m *refModel) checkForward(self string, c mCfg) error {
	for _, to := range []string{c.forwardTo, c.forwardDLTo} {
		switch {
		case to == "":
		case self != "" && strings.EqualFold(to, self):
			return minibus.ErrInvalidArgument
		case m.names[strings.ToLower(to)] == nil:
			return minibus.ErrNotFound
		}
	}
	return nil
}

// ---------------------------------------------------------------- entities

func (m *refModel) newEntity(kind mKind, name string, c mCfg) *mEntity {
	e := &mEntity{id: len(m.all), kind: kind, name: name, cfg: c, lastActivity: m.now,
		lastActivation: mUnset, created: m.now, updated: m.now, accessed: m.now,
		held: map[string]*mHold{}, state: map[string][]byte{}, dups: map[string]int64{}}
	m.all = append(m.all, e)
	return e
}

func (m *refModel) createQueue(name string, p *minibus.QueueProperties) (*mEntity, error) {
	var qp minibus.QueueProperties
	if p != nil {
		qp = *p
	}
	c, ok := queueCfg(qp)
	return m.createQT(mQueue, name, c, ok)
}

func (m *refModel) createTopic(name string, p *minibus.TopicProperties) (*mEntity, error) {
	var tp minibus.TopicProperties
	if p != nil {
		tp = *p
	}
	c, ok := topicCfg(tp)
	return m.createQT(mTopic, name, c, ok)
}

func (m *refModel) createQT(kind mKind, name string, c mCfg, ok bool) (*mEntity, error) {
	m.begin()
	if !ValidName("queue", name) || !ok {
		return nil, minibus.ErrInvalidArgument
	}
	if m.names[strings.ToLower(name)] != nil {
		return nil, minibus.ErrAlreadyExists
	}
	if err := m.checkForward(name, c); err != nil {
		return nil, err
	}
	e := m.newEntity(kind, name, c)
	m.names[strings.ToLower(name)] = e
	return e, nil
}

// lookup is Namespace.Queue and Namespace.Topic.
func (m *refModel) lookup(kind mKind, name string) (*mEntity, error) {
	m.begin()
	e := m.names[strings.ToLower(name)]
	if e == nil || e.kind != kind {
		return nil, minibus.ErrNotFound
	}
	return e, nil
}

func (m *refModel) lookupSub(t *mEntity, name string) (*mEntity, error) {
	m.begin()
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
	m.begin()
	if !ValidName("subscription", name) {
		return nil, minibus.ErrInvalidArgument
	}
	var sp minibus.SubscriptionProperties
	if p != nil {
		sp = *p
	}
	c, ok := subCfg(sp)
	if !ok || def.invalid || !ValidName("rule", def.name) {
		return nil, minibus.ErrInvalidArgument
	}
	if err := m.checkForward("", c); err != nil {
		return nil, err
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

// deleteEntity deletes e with its messages, sessions and, for a topic, its
// subscriptions (SEMANTICS A3, A5).
func (m *refModel) deleteEntity(e *mEntity) {
	e.deleted = true
	for _, l := range e.lists() {
		for _, x := range l {
			m.terminate(x.item, termEntityGone)
		}
	}
	e.main, e.dlq, e.tdlq = nil, nil, nil
	e.held, e.state = map[string]*mHold{}, map[string][]byte{}
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

// update is UpdateQueue, UpdateTopic and UpdateSubscription on a live
// entity with the settings c (ok: valid). RequiresSession and
// RequiresDuplicateDetection cannot change (V2); forward targets are
// checked (F1). Setting ForwardTo forwards the messages available now
// (F2). An update is activity (A2).
func (m *refModel) update(e *mEntity, c mCfg, ok bool) error {
	m.begin()
	if !ok || c.session != e.cfg.session || c.dupDetect != e.cfg.dupDetect {
		return minibus.ErrInvalidArgument
	}
	self := e.name
	if e.kind == mSub {
		self = ""
	}
	if err := m.checkForward(self, c); err != nil {
		return err
	}
	forwardNow := e.kind != mTopic && e.cfg.forwardTo == "" && c.forwardTo != ""
	e.cfg = c
	e.updated = m.now
	m.touch(e)
	if forwardNow {
		m.forwardAll(e, m.now)
	}
	m.flush()
	return nil
}

// touch records an activity (SEMANTICS A2); a subscription's is its topic's
// too.
func (m *refModel) touch(e *mEntity) { m.touchAt(e, m.now) }

// touchAt records an activity at instant at, which may be before now in a
// catch-up: activity never moves back.
func (m *refModel) touchAt(e *mEntity, at int64) {
	e.lastActivity = max(e.lastActivity, at)
	if e.topic != nil {
		e.topic.lastActivity = max(e.topic.lastActivity, at)
	}
}

func (m *refModel) createRule(s *mEntity, r *mRule) error {
	m.begin()
	if !ValidName("rule", r.name) || r.invalid {
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
	m.begin()
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
