package minibus

import (
	"strconv"
	"time"

	"github.com/minibus-go/minibus/internal/engine"
)

// Queue is a handle to a queue. Get one from [Namespace.CreateQueue] or
// [Namespace.Queue]. Handles stay valid until the queue is deleted (by
// DeleteQueue or on idle, SEMANTICS A3); then every call returns ErrNotFound,
// even if a new queue of the same name is created. A Queue is safe for
// concurrent use.
type Queue struct {
	e *engine.Entity
}

// Topic is a handle to a topic: it numbers the messages sent to it and
// copies each to every subscription whose rules match (SEMANTICS R1). Get one
// from [Namespace.CreateTopic] or [Namespace.Topic]. Handles stay valid
// until the topic is deleted; then every call returns ErrNotFound. A Topic
// is safe for concurrent use.
type Topic struct {
	e *engine.Entity
}

// Subscription is a handle to a topic's subscription: a receivable entity
// like a queue, holding its own copy of every topic message its rules
// select. Get one from [Topic.CreateSubscription] or [Topic.Subscription].
// A Subscription is safe for concurrent use.
type Subscription struct {
	e *engine.Entity
}

// QueueRuntimeProperties are a queue's counts and times (SEMANTICS L13).
// Counts are exact at the instant they are read (SEMANTICS T3).
type QueueRuntimeProperties struct {
	// ActiveMessageCount counts available, locked and deferred messages.
	ActiveMessageCount int64
	// ScheduledMessageCount counts scheduled messages not yet active.
	ScheduledMessageCount int64
	// DeadLetterMessageCount counts the dead-letter queue's messages.
	DeadLetterMessageCount int64
	// TransferMessageCount counts messages waiting to be forwarded: always 0,
	// as minibus forwards at once.
	TransferMessageCount int64
	// TransferDeadLetterMessageCount counts the transfer dead-letter queue's
	// messages.
	TransferDeadLetterMessageCount int64
	// TotalMessageCount is the sum of the counts above.
	TotalMessageCount int64
	// SizeInBytes is the total size of the queue's messages (SEMANTICS V3)
	// and session states (SS9).
	SizeInBytes int64
	// CreatedAt is when the queue was created, UpdatedAt when its properties
	// last changed, AccessedAt when it last took a send or a receive.
	CreatedAt, UpdatedAt, AccessedAt time.Time
}

// TopicRuntimeProperties are a topic's counts and times.
type TopicRuntimeProperties struct {
	// ScheduledMessageCount counts scheduled messages waiting in the topic
	// (SEMANTICS S5).
	ScheduledMessageCount int64
	// SizeInBytes is the size of the topic's scheduled messages and of every
	// subscription's messages and session states (SEMANTICS SS9).
	SizeInBytes int64
	// SubscriptionCount is the number of subscriptions.
	SubscriptionCount int32
	// CreatedAt is when the topic was created, UpdatedAt when its properties
	// last changed, AccessedAt when it last took a send.
	CreatedAt, UpdatedAt, AccessedAt time.Time
}

// SubscriptionRuntimeProperties are a subscription's counts and times
// (SEMANTICS L13).
type SubscriptionRuntimeProperties struct {
	// ActiveMessageCount counts available, locked and deferred messages.
	ActiveMessageCount int64
	// DeadLetterMessageCount counts the dead-letter queue's messages.
	DeadLetterMessageCount int64
	// TotalMessageCount is the sum of the counts.
	TotalMessageCount int64
	// TransferMessageCount is always 0: minibus forwards at once.
	TransferMessageCount int64
	// TransferDeadLetterMessageCount counts the transfer dead-letter queue's
	// messages.
	TransferDeadLetterMessageCount int64
	// CreatedAt is when the subscription was created, UpdatedAt when its
	// properties or rules last changed, AccessedAt when it last took a
	// receive.
	CreatedAt, UpdatedAt, AccessedAt time.Time
}

func culprit(kind engine.Kind, name string) string { return kind.String() + " " + strconv.Quote(name) }

// CreateQueue creates a queue. props may be nil: every property then has its
// default. It returns ErrInvalidArgument for a bad name (SEMANTICS V1) or
// property (V2), and ErrAlreadyExists when a queue or topic has the name
// already (names are case-insensitive and shared by queues and topics).
func (ns *Namespace) CreateQueue(name string, props *QueueProperties) (*Queue, error) {
	var p QueueProperties
	if props != nil {
		p = *props
	}
	e, err := ns.create(engine.KindQueue, name, p.config())
	if err != nil {
		return nil, err
	}
	return &Queue{e}, nil
}

// CreateTopic creates a topic. props may be nil. It returns
// ErrInvalidArgument for a bad name (SEMANTICS V1) or property (V2), and
// ErrAlreadyExists when a queue or topic has the name already.
func (ns *Namespace) CreateTopic(name string, props *TopicProperties) (*Topic, error) {
	var p TopicProperties
	if props != nil {
		p = *props
	}
	e, err := ns.create(engine.KindTopic, name, p.config())
	if err != nil {
		return nil, err
	}
	return &Topic{e}, nil
}

// create checks a queue's or topic's name and configuration and creates it.
func (ns *Namespace) create(kind engine.Kind, name string, c engine.Config) (*engine.Entity, error) {
	b, err := ns.broker()
	if err != nil {
		return nil, err
	}
	if err := checkEntityName(kind.String(), name); err != nil {
		return nil, err
	}
	if c, err = withDefaults(kind, c, culprit(kind, name)); err != nil {
		return nil, err
	}
	return b.Create(kind, name, c)
}

// Queue returns a handle to the queue named name (case-insensitive), or
// ErrNotFound.
func (ns *Namespace) Queue(name string) (*Queue, error) {
	e, err := ns.find(engine.KindQueue, name)
	if err != nil {
		return nil, err
	}
	return &Queue{e}, nil
}

// Topic returns a handle to the topic named name (case-insensitive), or
// ErrNotFound.
func (ns *Namespace) Topic(name string) (*Topic, error) {
	e, err := ns.find(engine.KindTopic, name)
	if err != nil {
		return nil, err
	}
	return &Topic{e}, nil
}

func (ns *Namespace) find(kind engine.Kind, name string) (*engine.Entity, error) {
	b, err := ns.broker()
	if err != nil {
		return nil, err
	}
	return b.Find(kind, name)
}

// UpdateQueue replaces the properties of the queue named name with props,
// defaults filled in for zero fields, and returns its handle. Messages and
// locks are kept; a new LockDuration or DefaultMessageTimeToLive applies to
// later locks and messages. An update is activity (SEMANTICS A2). Receivers
// blocked on the queue wake and see a new Status.
func (ns *Namespace) UpdateQueue(name string, props QueueProperties) (*Queue, error) {
	e, err := ns.update(engine.KindQueue, name, props.config())
	if err != nil {
		return nil, err
	}
	return &Queue{e}, nil
}

// UpdateTopic replaces the properties of the topic named name with props,
// defaults filled in for zero fields. An update is activity (SEMANTICS A2).
func (ns *Namespace) UpdateTopic(name string, props TopicProperties) (*Topic, error) {
	e, err := ns.update(engine.KindTopic, name, props.config())
	if err != nil {
		return nil, err
	}
	return &Topic{e}, nil
}

func (ns *Namespace) update(kind engine.Kind, name string, c engine.Config) (*engine.Entity, error) {
	e, err := ns.find(kind, name)
	if err != nil {
		return nil, err
	}
	return e, updateEntity(e, c)
}

// updateEntity checks c and applies it to e. RequiresSession and
// RequiresDuplicateDetection cannot change (SEMANTICS V2).
func updateEntity(e *engine.Entity, c engine.Config) error {
	who := culprit(e.Kind(), e.Path())
	c, err := withDefaults(e.Kind(), c, who)
	if err != nil {
		return err
	}
	old := e.Config()
	switch {
	case c.RequiresSession != old.RequiresSession:
		return errorf(ErrInvalidArgument, who, "RequiresSession cannot change after creation")
	case c.RequiresDuplicateDetection != old.RequiresDuplicateDetection:
		return errorf(ErrInvalidArgument, who, "RequiresDuplicateDetection cannot change after creation")
	}
	return e.Update(c)
}

// DeleteQueue deletes the queue named name and all its messages. Its handles
// and receivers return ErrNotFound from then on; blocked receives return
// ErrNotFound at once. The name is free again.
func (ns *Namespace) DeleteQueue(name string) error {
	return ns.delete(engine.KindQueue, name)
}

// DeleteTopic deletes the topic named name with its subscriptions and all
// their messages (SEMANTICS A5).
func (ns *Namespace) DeleteTopic(name string) error {
	return ns.delete(engine.KindTopic, name)
}

func (ns *Namespace) delete(kind engine.Kind, name string) error {
	b, err := ns.broker()
	if err != nil {
		return err
	}
	return b.Delete(kind, name)
}

// Queues returns the names of the namespace's queues, sorted, as they were
// created.
func (ns *Namespace) Queues() []string { return ns.names(engine.KindQueue) }

// Topics returns the names of the namespace's topics, sorted, as they were
// created.
func (ns *Namespace) Topics() []string { return ns.names(engine.KindTopic) }

func (ns *Namespace) names(kind engine.Kind) []string {
	b, err := ns.broker()
	if err != nil {
		return nil
	}
	return b.Names(kind)
}

// CreateSubscription creates a subscription with one rule: props.DefaultRule,
// or "$Default" with a TrueFilter. props may be nil. It returns
// ErrInvalidArgument for a bad name (SEMANTICS V1), property or default
// rule, ErrAlreadyExists when the topic has a subscription of that name, and
// ErrNotFound when the topic is gone.
func (t *Topic) CreateSubscription(name string, props *SubscriptionProperties) (*Subscription, error) {
	te, err := t.entity()
	if err != nil {
		return nil, err
	}
	if err := checkChildName("subscription", name, false); err != nil {
		return nil, err
	}
	var p SubscriptionProperties
	if props != nil {
		p = *props
	}
	who := culprit(engine.KindSubscription, te.Name()+"/Subscriptions/"+name)
	c, err := withDefaults(engine.KindSubscription, p.config(), who)
	if err != nil {
		return nil, err
	}
	def := RuleProperties{Name: defaultRuleName}
	if p.DefaultRule != nil {
		def = *p.DefaultRule
		if def.Name == "" {
			def.Name = defaultRuleName
		}
	}
	r, err := compileRule(def.Name, def.Filter, def.Action, who)
	if err != nil {
		return nil, err
	}
	s, err := te.CreateSubscription(name, c, []*engine.Rule{r})
	if err != nil {
		return nil, err
	}
	return &Subscription{s}, nil
}

// Subscription returns a handle to the subscription named name
// (case-insensitive), or ErrNotFound.
func (t *Topic) Subscription(name string) (*Subscription, error) {
	te, err := t.entity()
	if err != nil {
		return nil, err
	}
	s, err := te.Subscription(name)
	if err != nil {
		return nil, err
	}
	return &Subscription{s}, nil
}

// UpdateSubscription replaces the subscription's properties with props,
// defaults filled in. DefaultRule is ignored. An update is activity
// (SEMANTICS A2).
func (t *Topic) UpdateSubscription(name string, props SubscriptionProperties) (*Subscription, error) {
	te, err := t.entity()
	if err != nil {
		return nil, err
	}
	s, err := te.Subscription(name)
	if err != nil {
		return nil, err
	}
	if err := updateEntity(s, props.config()); err != nil {
		return nil, err
	}
	return &Subscription{s}, nil
}

// DeleteSubscription deletes the subscription and its messages.
func (t *Topic) DeleteSubscription(name string) error {
	te, err := t.entity()
	if err != nil {
		return err
	}
	return te.DeleteSubscription(name)
}

// Subscriptions returns the names of the topic's subscriptions, sorted, as
// they were created; nil when the topic is gone.
func (t *Topic) Subscriptions() []string {
	te, err := t.entity()
	if err != nil {
		return nil
	}
	names, _ := te.SubscriptionNames()
	return names
}

func (q *Queue) entity() (*engine.Entity, error) {
	if q == nil || q.e == nil {
		return nil, errorf(ErrInvalidArgument, "queue", "nil *Queue")
	}
	return q.e, nil
}

func (t *Topic) entity() (*engine.Entity, error) {
	if t == nil || t.e == nil {
		return nil, errorf(ErrInvalidArgument, "topic", "nil *Topic")
	}
	return t.e, nil
}

func (s *Subscription) entity() (*engine.Entity, error) {
	if s == nil || s.e == nil {
		return nil, errorf(ErrInvalidArgument, "subscription", "nil *Subscription")
	}
	return s.e, nil
}

// Name returns the queue's name as it was created.
func (q *Queue) Name() string {
	if q == nil || q.e == nil {
		return ""
	}
	return q.e.Name()
}

// Name returns the topic's name as it was created.
func (t *Topic) Name() string {
	if t == nil || t.e == nil {
		return ""
	}
	return t.e.Name()
}

// Name returns the subscription's name as it was created.
func (s *Subscription) Name() string {
	if s == nil || s.e == nil {
		return ""
	}
	return s.e.Name()
}

// Topic returns the name of the subscription's topic.
func (s *Subscription) Topic() string {
	if s == nil || s.e == nil {
		return ""
	}
	return s.e.Topic().Name()
}

// Properties returns the queue's properties with defaults filled in.
func (q *Queue) Properties() QueueProperties {
	if q == nil || q.e == nil {
		return QueueProperties{}
	}
	return queueProperties(q.e.Config())
}

// Properties returns the topic's properties with defaults filled in.
func (t *Topic) Properties() TopicProperties {
	if t == nil || t.e == nil {
		return TopicProperties{}
	}
	return topicProperties(t.e.Config())
}

// Properties returns the subscription's properties with defaults filled
// in. DefaultRule is nil: see Rules.
func (s *Subscription) Properties() SubscriptionProperties {
	if s == nil || s.e == nil {
		return SubscriptionProperties{}
	}
	return subscriptionProperties(s.e.Config())
}

// RuntimeProperties returns the queue's counts as of now (SEMANTICS L13,
// T3). A deleted queue reads all zero counts.
func (q *Queue) RuntimeProperties() QueueRuntimeProperties {
	e, err := q.entity()
	if err != nil {
		return QueueRuntimeProperties{}
	}
	c, err := e.Counts()
	if err != nil {
		return QueueRuntimeProperties{}
	}
	return QueueRuntimeProperties{
		ActiveMessageCount:             c.Active,
		ScheduledMessageCount:          c.Scheduled,
		DeadLetterMessageCount:         c.DeadLetter,
		TransferDeadLetterMessageCount: c.TransferDeadLetter,
		TotalMessageCount:              c.Active + c.Scheduled + c.DeadLetter + c.TransferDeadLetter,
		SizeInBytes:                    c.Size,
		CreatedAt:                      c.Created,
		UpdatedAt:                      c.Updated,
		AccessedAt:                     c.Accessed,
	}
}

// RuntimeProperties returns the topic's counts as of now (SEMANTICS T3). A
// deleted topic reads zero counts.
func (t *Topic) RuntimeProperties() TopicRuntimeProperties {
	e, err := t.entity()
	if err != nil {
		return TopicRuntimeProperties{}
	}
	c, err := e.Counts()
	if err != nil {
		return TopicRuntimeProperties{}
	}
	return TopicRuntimeProperties{
		ScheduledMessageCount: c.Scheduled,
		SizeInBytes:           c.Size,
		SubscriptionCount:     int32(c.Subscriptions),
		CreatedAt:             c.Created,
		UpdatedAt:             c.Updated,
		AccessedAt:            c.Accessed,
	}
}

// RuntimeProperties returns the subscription's counts as of now (SEMANTICS
// L13, T3). A deleted subscription reads zero counts.
func (s *Subscription) RuntimeProperties() SubscriptionRuntimeProperties {
	e, err := s.entity()
	if err != nil {
		return SubscriptionRuntimeProperties{}
	}
	c, err := e.Counts()
	if err != nil {
		return SubscriptionRuntimeProperties{}
	}
	return SubscriptionRuntimeProperties{
		ActiveMessageCount:             c.Active,
		DeadLetterMessageCount:         c.DeadLetter,
		TransferDeadLetterMessageCount: c.TransferDeadLetter,
		TotalMessageCount:              c.Active + c.DeadLetter + c.TransferDeadLetter,
		CreatedAt:                      c.Created,
		UpdatedAt:                      c.Updated,
		AccessedAt:                     c.Accessed,
	}
}
