package modeltest

// The model's entities: names (V1), properties (V2), queues, topics,
// subscriptions and their rules.

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
	c := mCfg{lock: int64(time.Minute), maxDelivery: 10, autoDelete: mNever,
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
	if !ValidName("queue", name) {
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
