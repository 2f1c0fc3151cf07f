package minibus

import (
	"context"
	"strconv"
	"time"

	"github.com/minibus-go/minibus/internal/store"
)

// Topic is a handle to a topic: it numbers the messages sent to it and
// copies each to every subscription whose rules match (SEMANTICS R1). Get one
// from [Namespace.CreateTopic] or [Namespace.Topic]. Handles stay valid
// until the topic is deleted; then every call returns ErrNotFound. A Topic
// is safe for concurrent use.
type Topic struct {
	e *entity
}

// TopicRuntimeProperties are a topic's counts and times.
type TopicRuntimeProperties struct {
	// ScheduledMessageCount counts scheduled messages waiting in the topic
	// (SEMANTICS S5).
	ScheduledMessageCount int64
	// SizeInBytes is the size of the topic's scheduled messages and of every
	// subscription's messages.
	SizeInBytes int64
	// SubscriptionCount is the number of subscriptions.
	SubscriptionCount int32
	// CreatedAt is when the topic was created, UpdatedAt when its properties
	// last changed, AccessedAt when it last took a send.
	CreatedAt, UpdatedAt, AccessedAt time.Time
}

func topicCulprit(name string) string { return "topic " + strconv.Quote(name) }

// CreateTopic creates a topic. props may be nil. It returns
// ErrInvalidArgument for a bad name (SEMANTICS V1) or property (V2), and
// ErrAlreadyExists when a queue or topic has the name already.
func (ns *Namespace) CreateTopic(name string, props *TopicProperties) (*Topic, error) {
	if err := checkEntityName("topic", name); err != nil {
		return nil, err
	}
	var p TopicProperties
	if props != nil {
		p = *props
	}
	p, err := p.withDefaults(topicCulprit(name))
	if err != nil {
		return nil, err
	}
	e, err := ns.create(kindTopic, name, p.cfg(), p)
	if err != nil {
		return nil, err
	}
	return &Topic{e}, nil
}

// Topic returns a handle to the topic named name (case-insensitive), or
// ErrNotFound.
func (ns *Namespace) Topic(name string) (*Topic, error) {
	e, err := ns.find(kindTopic, name)
	if err != nil {
		return nil, err
	}
	return &Topic{e}, nil
}

// UpdateTopic replaces the properties of the topic named name with props,
// defaults filled in for zero fields. RequiresDuplicateDetection cannot
// change (ErrInvalidArgument). An update is activity (SEMANTICS A2).
func (ns *Namespace) UpdateTopic(name string, props TopicProperties) (*Topic, error) {
	e, err := ns.find(kindTopic, name)
	if err != nil {
		return nil, err
	}
	p, err := props.withDefaults(e.describe())
	if err != nil {
		return nil, err
	}
	now, err := ns.begin()
	if err != nil {
		return nil, err
	}
	if err := e.enter(now); err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	if p.RequiresDuplicateDetection != e.props.(TopicProperties).RequiresDuplicateDetection {
		return nil, errorf(ErrInvalidArgument, e.describe(), "RequiresDuplicateDetection cannot change after creation")
	}
	e.props = p
	e.updateLocked(p.cfg(), now)
	return &Topic{e}, nil
}

// DeleteTopic deletes the topic named name with its subscriptions and all
// their messages (SEMANTICS A5).
func (ns *Namespace) DeleteTopic(name string) error {
	return ns.deleteEntity(kindTopic, name)
}

// Topics returns the names of the namespace's topics, sorted, as they were
// created.
func (ns *Namespace) Topics() []string { return ns.names(kindTopic) }

func (t *Topic) entity() (*entity, error) {
	if t == nil || t.e == nil {
		return nil, errorf(ErrInvalidArgument, "topic", "nil *Topic")
	}
	return t.e, nil
}

// Name returns the topic's name as it was created.
func (t *Topic) Name() string {
	if t == nil || t.e == nil {
		return ""
	}
	return t.e.name
}

// Properties returns the topic's properties with defaults filled in.
func (t *Topic) Properties() TopicProperties {
	if t == nil || t.e == nil {
		return TopicProperties{}
	}
	t.e.mu.Lock()
	defer t.e.mu.Unlock()
	return t.e.props.(TopicProperties)
}

// RuntimeProperties returns the topic's counts as of now (SEMANTICS T3). A
// deleted topic reads zero counts.
func (t *Topic) RuntimeProperties() TopicRuntimeProperties {
	if t == nil || t.e == nil {
		return TopicRuntimeProperties{}
	}
	e := t.e
	now, err := e.lock()
	if err != nil {
		return TopicRuntimeProperties{}
	}
	defer e.mu.Unlock()
	subs := e.lockSubsLocked(now)
	defer unlockAll(subs)
	return TopicRuntimeProperties{
		ScheduledMessageCount: e.sub[SubQueueNone].count[store.Scheduled],
		SizeInBytes:           e.topicSizeLocked(subs),
		SubscriptionCount:     int32(len(subs)),
		CreatedAt:             e.ns.toTime(e.created),
		UpdatedAt:             e.ns.toTime(e.updated),
		AccessedAt:            e.ns.toTime(e.accessed),
	}
}

// SendMessage sends one message to the topic: every subscription whose rules
// match gets its own copy (SEMANTICS R1, R2); with none, the message is
// accepted and dropped. A message with ScheduledEnqueueTime after now waits
// in the topic (S5). Errors as Queue.SendMessage.
func (t *Topic) SendMessage(ctx context.Context, msg *Message, opts *SendMessageOptions) error {
	e, err := t.entity()
	if err != nil {
		return err
	}
	one := [1]*Message{msg}
	_, err = e.send(ctx, one[:], store.Unset, false)
	return err
}

// SendMessages sends msgs in order, all or none. An empty slice is
// ErrInvalidArgument.
func (t *Topic) SendMessages(ctx context.Context, msgs []*Message, opts *SendMessageOptions) error {
	e, err := t.entity()
	if err != nil {
		return err
	}
	_, err = e.send(ctx, msgs, store.Unset, false)
	return err
}

// ScheduleMessages schedules msgs for at in the topic, all or none, and
// returns their sequence numbers (SEMANTICS S1, S5). They are copied to the
// subscriptions when they activate, with the rules of that time.
func (t *Topic) ScheduleMessages(ctx context.Context, msgs []*Message, at time.Time, opts *ScheduleMessagesOptions) ([]int64, error) {
	e, err := t.entity()
	if err != nil {
		return nil, err
	}
	return e.send(ctx, msgs, nanos(at), true)
}

// CancelScheduledMessages deletes pending scheduled messages of the topic,
// all or none (SEMANTICS S3).
func (t *Topic) CancelScheduledMessages(ctx context.Context, seqs []int64, opts *CancelScheduledMessagesOptions) error {
	e, err := t.entity()
	if err != nil {
		return err
	}
	return e.cancelScheduled(ctx, seqs)
}

// lockSubsLocked locks the topic's live subscriptions in order, each brought
// to now, and drops deleted ones from the topic. Called with the topic's
// lock held; the caller unlocks them with unlockAll.
func (t *entity) lockSubsLocked(now int64) []*entity {
	pruned := false
	for _, s := range t.subs {
		s.mu.Lock()
		if now >= s.localNext {
			s.advanceLocked(now, false)
		}
		pruned = pruned || s.deleted
	}
	if pruned {
		live := make([]*entity, 0, len(t.subs))
		for _, s := range t.subs {
			if s.deleted {
				s.mu.Unlock()
			} else {
				live = append(live, s)
			}
		}
		t.subs = live // a new array: callers may hold the old one
	}
	return t.subs
}

func unlockAll(es []*entity) {
	for _, e := range es {
		e.mu.Unlock()
	}
}

// topicSizeLocked is the topic's SizeInBytes: its scheduled messages and its
// subscriptions' messages, whose locks the caller holds.
func (t *entity) topicSizeLocked(subs []*entity) int64 {
	n := t.sub[SubQueueNone].bytes
	for _, s := range subs {
		n += s.sizeLocked()
	}
	return n
}

// copyPlan is one message copy bound for a subscription.
type copyPlan struct {
	sub  *entity
	m    *store.Message
	dlq  bool   // a filter failed: to the dead-letter queue (SEMANTICS R5)
	desc string // the failure, for DeadLetterErrorDescription
}

// publishLocked accepts a batch sent to the topic, all or none: it numbers
// the messages (Q1), schedules the future ones (S5) and plans every
// subscription's copies of the others, checks the topic's quota against the
// plan (V3), then applies it.
func (t *entity) publishLocked(recs []*store.Message, now int64, wantSeqs bool) ([]int64, error) {
	subs := t.lockSubsLocked(now)
	defer unlockAll(subs)
	var plan []copyPlan
	var total int64
	for i, m := range recs {
		m.Key = store.Key{Seq: t.seq + int64(i) + 1}
		if m.Scheduled != store.Unset && m.Scheduled > now {
			total += m.Size
			continue
		}
		start := len(plan)
		plan = t.planLocked(plan, subs, m, now)
		for _, c := range plan[start:] {
			total += c.m.Size
		}
	}
	if size := t.topicSizeLocked(subs); size+total > t.cfg.maxSize {
		return nil, errorf(ErrQuotaExceeded, t.describe(), "size %d bytes plus %d bytes of messages and copies would pass MaxSizeInMegabytes (%d bytes)", size, total, t.cfg.maxSize)
	}
	var seqs []int64
	if wantSeqs {
		seqs = make([]int64, len(recs))
	}
	for i, m := range recs {
		t.seq++
		if wantSeqs {
			seqs[i] = t.seq
		}
		if m.Scheduled != store.Unset && m.Scheduled > now {
			t.scheduleLocked(m)
		}
	}
	t.applyLocked(plan, now)
	return seqs, nil
}

// planLocked appends to plan the copies of m, numbered, that each
// subscription's rules make at instant at (SEMANTICS R1, R2, R5). The
// subscriptions' locks are held.
func (t *entity) planLocked(plan []copyPlan, subs []*entity, m *store.Message, at int64) []copyPlan {
	view := t.ns.filterView(m, at, effectiveTTL(m.TTL, t.cfg.ttl))
	for _, s := range subs {
		if !s.cfg.status.canSend() {
			continue // a disabled subscription gets no copies
		}
		plan = s.matchLocked(plan, m, &view)
	}
	return plan
}

// applyLocked enqueues planned copies at instant at. The topic's and the
// subscriptions' locks are held.
func (t *entity) applyLocked(plan []copyPlan, at int64) {
	for _, c := range plan {
		s := c.sub
		if c.dlq {
			ttl := effectiveTTL(c.m.TTL, min(s.cfg.ttl, t.cfg.ttl))
			c.m.Enqueued = at
			c.m.Expires = addSat(at, ttl)
			c.m.TTL = 0
			if ttl != store.Never {
				c.m.TTL = ttl
			}
			c.m.State = store.Available
			c.m.DL = &store.DeadLetter{Reason: reasonFilterError, Description: c.desc}
			dlq := s.sub[SubQueueDeadLetter]
			dlq.add(c.m)
			dlq.waiters.wake(1)
			continue
		}
		s.enqueueLocked(s.sub[SubQueueNone], c.m, at, min(s.cfg.ttl, t.cfg.ttl))
	}
}

// fanOutLocked copies m, activating at instant at, to the subscriptions
// (SEMANTICS S5). Quota was checked when m was scheduled.
func (t *entity) fanOutLocked(m *store.Message, at int64) {
	subs := t.lockSubsLocked(at)
	t.applyLocked(t.planLocked(nil, subs, m, at), at)
	unlockAll(subs)
}
