package minibus

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minibus-go/minibus/internal/sqlfilter"
	"github.com/minibus-go/minibus/internal/store"
)

// Subscription is a handle to a topic's subscription: a receivable entity
// like a queue, holding its own copy of every topic message its rules
// select. Get one from [Topic.CreateSubscription] or [Topic.Subscription].
// A Subscription is safe for concurrent use.
type Subscription struct {
	e *entity
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

// Dead-letter reason of a copy whose rule failed to evaluate (SEMANTICS R5).
const reasonFilterError = "FilterEvaluationException"

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
	culprit := "subscription " + strconv.Quote(te.name+"/Subscriptions/"+name)
	var p SubscriptionProperties
	if props != nil {
		p = *props
	}
	if p, err = p.withDefaults(culprit); err != nil {
		return nil, err
	}
	def := RuleProperties{Name: defaultRuleName}
	if p.DefaultRule != nil {
		def = *p.DefaultRule
		if def.Name == "" {
			def.Name = defaultRuleName
		}
		if err := checkChildName("rule", def.Name, true); err != nil {
			return nil, err
		}
	}
	r, err := compileRule(def.Name, def.Filter, def.Action, culprit)
	if err != nil {
		return nil, err
	}
	p.DefaultRule = nil
	now, err := te.lock()
	if err != nil {
		return nil, err
	}
	defer te.mu.Unlock()
	subs := te.lockSubsLocked(now)
	unlockAll(subs)
	key := nameKey(name)
	i, found := slices.BinarySearchFunc(te.subs, key, func(s *entity, k string) int { return strings.Compare(nameKey(s.name), k) })
	if found {
		return nil, errorf(ErrAlreadyExists, te.subs[i].describe(), "")
	}
	s := newEntity(te.ns, kindSubscription, name, p.cfg(), now)
	s.topic = te
	s.props = p
	s.rules = []*rule{r}
	te.subs = slices.Insert(slices.Clone(te.subs), i, s)
	te.touchLocked(now)
	te.ns.log.Info("minibus: created", "entity", s.describe())
	return &Subscription{s}, nil
}

// findSub returns the topic's live subscription named name, or ErrNotFound.
func (t *Topic) findSub(name string) (*entity, error) {
	te, err := t.entity()
	if err != nil {
		return nil, err
	}
	now, err := te.lock()
	if err != nil {
		return nil, err
	}
	defer te.mu.Unlock()
	subs := te.lockSubsLocked(now)
	unlockAll(subs)
	key := nameKey(name)
	for _, s := range subs {
		if nameKey(s.name) == key {
			return s, nil
		}
	}
	return nil, errorf(ErrNotFound, "subscription "+strconv.Quote(te.name+"/Subscriptions/"+name), "")
}

// Subscription returns a handle to the subscription named name
// (case-insensitive), or ErrNotFound.
func (t *Topic) Subscription(name string) (*Subscription, error) {
	s, err := t.findSub(name)
	if err != nil {
		return nil, err
	}
	return &Subscription{s}, nil
}

// UpdateSubscription replaces the subscription's properties with props,
// defaults filled in. RequiresSession cannot change; DefaultRule is ignored.
// An update is activity (SEMANTICS A2).
func (t *Topic) UpdateSubscription(name string, props SubscriptionProperties) (*Subscription, error) {
	s, err := t.findSub(name)
	if err != nil {
		return nil, err
	}
	p, err := props.withDefaults(s.describe())
	if err != nil {
		return nil, err
	}
	p.DefaultRule = nil
	now, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	s.props = p
	s.updateLocked(p.cfg(), now)
	return &Subscription{s}, nil
}

// DeleteSubscription deletes the subscription and its messages.
func (t *Topic) DeleteSubscription(name string) error {
	s, err := t.findSub(name)
	if err != nil {
		return err
	}
	te := s.topic
	if _, err := te.begin(context.Background()); err != nil {
		return err
	}
	te.mu.Lock()
	defer te.mu.Unlock()
	s.mu.Lock()
	s.deleteLocked()
	s.mu.Unlock()
	te.subs = slices.DeleteFunc(slices.Clone(te.subs), func(x *entity) bool { return x == s })
	te.ns.log.Info("minibus: deleted", "entity", s.describe())
	return nil
}

// Subscriptions returns the names of the topic's subscriptions, sorted, as
// they were created; nil when the topic is gone.
func (t *Topic) Subscriptions() []string {
	te, err := t.entity()
	if err != nil {
		return nil
	}
	now, err := te.lock()
	if err != nil {
		return nil
	}
	defer te.mu.Unlock()
	subs := te.lockSubsLocked(now)
	unlockAll(subs)
	out := make([]string, len(subs))
	for i, s := range subs {
		out[i] = s.name
	}
	slices.Sort(out)
	return out
}

func (s *Subscription) entity() (*entity, error) {
	if s == nil || s.e == nil {
		return nil, errorf(ErrInvalidArgument, "subscription", "nil *Subscription")
	}
	return s.e, nil
}

// Name returns the subscription's name as it was created.
func (s *Subscription) Name() string {
	if s == nil || s.e == nil {
		return ""
	}
	return s.e.name
}

// Topic returns the name of the subscription's topic.
func (s *Subscription) Topic() string {
	if s == nil || s.e == nil {
		return ""
	}
	return s.e.topic.name
}

// Properties returns the subscription's properties with defaults filled
// in. DefaultRule is nil: see Rules.
func (s *Subscription) Properties() SubscriptionProperties {
	if s == nil || s.e == nil {
		return SubscriptionProperties{}
	}
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	return s.e.props.(SubscriptionProperties)
}

// RuntimeProperties returns the subscription's counts as of now (SEMANTICS
// L13, T3). A deleted subscription reads zero counts.
func (s *Subscription) RuntimeProperties() SubscriptionRuntimeProperties {
	if s == nil || s.e == nil {
		return SubscriptionRuntimeProperties{}
	}
	e := s.e
	if _, err := e.lock(); err != nil {
		return SubscriptionRuntimeProperties{}
	}
	defer e.mu.Unlock()
	main, dlq, tdlq := e.sub[SubQueueNone], e.sub[SubQueueDeadLetter], e.sub[SubQueueTransfer]
	rp := SubscriptionRuntimeProperties{
		ActiveMessageCount:             main.count[store.Available] + main.count[store.Locked] + main.count[store.Deferred],
		DeadLetterMessageCount:         dlq.total(),
		TransferDeadLetterMessageCount: tdlq.total(),
		CreatedAt:                      e.ns.toTime(e.created),
		UpdatedAt:                      e.ns.toTime(e.updated),
		AccessedAt:                     e.ns.toTime(e.accessed),
	}
	rp.TotalMessageCount = rp.ActiveMessageCount + rp.DeadLetterMessageCount + rp.TransferDeadLetterMessageCount
	return rp
}

// NewReceiver returns a receiver for the subscription, or for its
// dead-letter or transfer dead-letter queue (opts.SubQueue). opts may be
// nil.
func (s *Subscription) NewReceiver(opts *ReceiverOptions) (*Receiver, error) {
	e, err := s.entity()
	if err != nil {
		return nil, err
	}
	return e.newReceiver(opts)
}

// AcceptSession is for session-enabled subscriptions, which minibus does
// not support yet: it returns ErrInvalidArgument (SEMANTICS SS1).
func (s *Subscription) AcceptSession(ctx context.Context, sessionID string, opts *SessionReceiverOptions) (*SessionReceiver, error) {
	e, err := s.entity()
	if err != nil {
		return nil, err
	}
	return nil, errorf(ErrInvalidArgument, e.describe(), "the subscription does not require sessions")
}

// AcceptNextSession is for session-enabled subscriptions, which minibus
// does not support yet: it returns ErrInvalidArgument (SEMANTICS SS1).
func (s *Subscription) AcceptNextSession(ctx context.Context, opts *SessionReceiverOptions) (*SessionReceiver, error) {
	e, err := s.entity()
	if err != nil {
		return nil, err
	}
	return nil, errorf(ErrInvalidArgument, e.describe(), "the subscription does not require sessions")
}

// CreateRule adds a rule to the subscription. props may be nil: a
// TrueFilter without action. A nil props.Filter is a TrueFilter. It returns
// ErrInvalidArgument for a bad name (1–50 characters, may start with '$') or
// a bad filter or action (an SQL syntax error says where), and
// ErrAlreadyExists for a name the subscription has, in any case (SEMANTICS
// V1). A rule change is
// activity (SEMANTICS A2); it applies to messages sent afterwards.
func (s *Subscription) CreateRule(name string, props *RuleProperties) error {
	e, err := s.entity()
	if err != nil {
		return err
	}
	if err := checkChildName("rule", name, true); err != nil {
		return err
	}
	var p RuleProperties
	if props != nil {
		p = *props
	}
	r, err := compileRule(name, p.Filter, p.Action, e.describe())
	if err != nil {
		return err
	}
	now, err := e.lock()
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	i, found := findRule(e.rules, name)
	if found {
		return errorf(ErrAlreadyExists, e.describe(), "rule %q", e.rules[i].name)
	}
	e.rules = slices.Insert(slices.Clone(e.rules), i, r)
	e.updated = now
	e.touchLocked(now)
	return nil
}

// DeleteRule removes the named rule (matched case-insensitively), or returns
// ErrNotFound. Deleting the last rule is allowed: a subscription with no rules matches nothing
// (SEMANTICS R1).
func (s *Subscription) DeleteRule(name string) error {
	e, err := s.entity()
	if err != nil {
		return err
	}
	now, err := e.lock()
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	i, found := findRule(e.rules, name)
	if !found {
		return errorf(ErrNotFound, e.describe(), "rule %q", name)
	}
	e.rules = slices.Delete(slices.Clone(e.rules), i, i+1)
	e.updated = now
	e.touchLocked(now)
	return nil
}

// findRule finds a rule by name, case-insensitively (SEMANTICS V1): its
// index, or, when there is none, where a rule of that name goes in rules,
// which are sorted by name as created.
func findRule(rules []*rule, name string) (int, bool) {
	if i := slices.IndexFunc(rules, func(r *rule) bool { return strings.EqualFold(r.name, name) }); i >= 0 {
		return i, true
	}
	i, _ := slices.BinarySearchFunc(rules, name, func(r *rule, n string) int { return strings.Compare(r.name, n) })
	return i, false
}

// Rules returns the subscription's rules sorted by name as created; nil
// when the subscription is gone. The filters and actions are copies.
func (s *Subscription) Rules() []Rule {
	e, err := s.entity()
	if err != nil {
		return nil
	}
	if _, err := e.lock(); err != nil {
		return nil
	}
	defer e.mu.Unlock()
	out := make([]Rule, len(e.rules))
	for i, r := range e.rules {
		out[i] = copyRule(r.public)
	}
	return out
}

func copyRule(r Rule) Rule {
	switch f := r.Filter.(type) {
	case SQLFilter:
		f.Parameters = maps.Clone(f.Parameters)
		r.Filter = f
	case CorrelationFilter:
		f.ApplicationProperties = maps.Clone(f.ApplicationProperties)
		r.Filter = f
	}
	if a, ok := r.Action.(SQLAction); ok {
		a.Parameters = maps.Clone(a.Parameters)
		r.Action = a
	}
	return r
}

// matchLocked appends the copies of m that s's rules make (SEMANTICS R1,
// R2): one for all matching rules without an action together, one per
// matching rule with an action, changed by it. A rule that fails to
// evaluate does not match; with DeadLetteringOnFilterEvaluationExceptions
// the message also goes, once, to the dead-letter queue (R5). The copies
// share the body, which is never changed.
func (s *entity) matchLocked(plan []copyPlan, m *store.Message, view *sqlfilter.Message) []copyPlan {
	plain := false
	var actions []*store.Message
	var failure error
	for _, r := range s.rules {
		ok, err := r.match(view)
		if err == nil && ok && r.action != nil {
			v := *view
			v.Properties = maps.Clone(view.Properties)
			if err = r.action.Apply(&v); err == nil {
				actions = append(actions, applyView(m, view, &v))
			}
		}
		if err != nil {
			if failure == nil {
				failure = fmt.Errorf("rule %q: %w", r.name, err)
			}
			continue
		}
		if ok && r.action == nil {
			plain = true
		}
	}
	copyNo := uint32(0)
	add := func(c *store.Message, dlq bool, desc string) {
		c.Key = store.Key{Seq: m.Key.Seq, Copy: copyNo}
		copyNo++
		plan = append(plan, copyPlan{sub: s, m: c, dlq: dlq, desc: desc})
	}
	if plain {
		add(m.Copy(), false, "")
	}
	for _, c := range actions {
		add(c, false, "")
	}
	if failure != nil && s.cfg.dlOnFilterError {
		add(m.Copy(), true, failure.Error())
	}
	return plan
}
