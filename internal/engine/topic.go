package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/sqlfilter"
)

// CompileRule compiles spec, which it keeps (the caller copies its maps).
// Its errors say what is wrong, for the caller to wrap.
func CompileRule(spec RuleSpec) (*Rule, error) {
	r := &Rule{Spec: spec}
	switch spec.Filter {
	case FilterTrue:
		r.match = func(*sqlfilter.Message) (bool, error) { return true, nil }
	case FilterFalse:
		r.match = func(*sqlfilter.Message) (bool, error) { return false, nil }
	case FilterSQL:
		f, err := sqlfilter.ParseFilter(spec.SQL, spec.Params)
		if err != nil {
			return nil, fmt.Errorf("SQL filter: %w", err)
		}
		r.match = f.Match
	case FilterCorrelation:
		c, err := sqlfilter.NewCorrelation(spec.Correlation, spec.CorrelationProps)
		if err != nil {
			return nil, fmt.Errorf("correlation filter: %w", err)
		}
		r.match = func(m *sqlfilter.Message) (bool, error) { return c.Match(m), nil }
	default:
		return nil, fmt.Errorf("unknown filter kind %d", spec.Filter)
	}
	if spec.HasAction {
		a, err := sqlfilter.ParseAction(spec.ActionSQL, spec.ActionParams)
		if err != nil {
			return nil, fmt.Errorf("SQL action: %w", err)
		}
		r.action = a
	}
	return r, nil
}

// enterSubsLocked takes the mutexes of the topic's live subscriptions in
// order, each brought to now, and drops deleted ones from the topic. Called
// with the topic's mutex held; the caller lets go of them with leaveAll.
func (e *Entity) enterSubsLocked(now int64) []*Entity {
	pruned := false
	for _, s := range e.subs {
		if !s.mu.TryLock() {
			s.publishers.Add(1) // see call.leave
			s.mu.Lock()
			s.publishers.Add(-1)
		}
		s.instant = max(s.instant, now)
		if now >= s.localNext {
			s.advanceLocked(now, false)
		}
		pruned = pruned || s.deleted.Load()
	}
	if pruned {
		live := make([]*Entity, 0, len(e.subs))
		for _, s := range e.subs {
			if s.deleted.Load() {
				s.mu.Unlock()
			} else {
				live = append(live, s)
			}
		}
		e.subs = live
	}
	return e.subs
}

func leaveAll(es []*Entity) {
	for _, e := range es {
		e.mu.Unlock()
	}
}

// liveSubs returns the topic's live subscriptions as of now, unlocked.
func (e *Entity) liveSubs() ([]*Entity, error) {
	c := e.call(noFault)
	c.end = endLeave
	defer c.exit(nil)
	now, err := c.enter(noContext)
	if err != nil {
		return nil, err
	}
	subs := e.enterSubsLocked(now)
	leaveAll(subs)
	return subs, nil
}

func (e *Entity) describeSub(name string) string {
	return describe(KindSubscription, e.name+"/Subscriptions/"+name)
}

// CreateSubscription adds a subscription with rules to the topic; the
// caller has checked its name and configuration. ErrAlreadyExists when the
// topic has one of that name (case-insensitive, SEMANTICS V1).
func (e *Entity) CreateSubscription(name string, cfg Config, rules []*Rule) (_ *Entity, err error) {
	c := e.call(noFault)
	defer c.exit(&err)
	if err := e.b.checkForwardTargets("", cfg, e.describeSub(name)); err != nil {
		return nil, err
	}
	now, err := c.enter(noContext)
	if err != nil {
		return nil, err
	}
	leaveAll(e.enterSubsLocked(now))
	if i, found := e.findSubLocked(name); found {
		return nil, errs.Errorf(errs.ErrAlreadyExists, e.subs[i].describe(), "")
	}
	if e.b.dur.j != nil {
		// The rules are the part of the record that grows with the
		// caller's data: with a kilobyte for the rest (names and a
		// configuration, under their limits), within the journal's (V3).
		var enc encoder
		for _, r := range rules {
			enc.rule(r.Spec)
		}
		if n := len(enc.b) + 1024; n > e.b.dur.maxRecord {
			return nil, errs.Errorf(errs.ErrInvalidArgument, e.describeSub(name), "its %d rules would make a log record of about %d bytes, more than the %d bytes a durable namespace stores for one call (the log's record limit)",
				len(rules), n, e.b.dur.maxRecord)
		}
	}
	s := e.createSubLocked(name, cfg, rules, now)
	if s.journaled() {
		specs := make([]RuleSpec, len(rules))
		for i, r := range rules {
			specs[i] = r.Spec
		}
		r := createRecord{entityKind: KindSubscription, cfg: cfg, at: now, rules: specs}
		s.log(r.kind(), r.encode)
	}
	return s, nil
}

// findSubLocked finds the subscription named name (case-insensitive): its
// index in t.subs, or where it goes.
func (e *Entity) findSubLocked(name string) (int, bool) {
	key := nameKey(name)
	return slices.BinarySearchFunc(e.subs, key, func(s *Entity, k string) int { return strings.Compare(nameKey(s.name), k) })
}

// createSubLocked adds a subscription, whose name is new, at instant at.
func (e *Entity) createSubLocked(name string, c Config, rules []*Rule, at int64) *Entity {
	i, _ := e.findSubLocked(name)
	c.MaxSizeMB, c.MaxMessageKB = e.cfg.MaxSizeMB, e.cfg.MaxMessageKB
	s := newEntity(e.b, KindSubscription, name, e, c, at)
	s.rules = rules
	e.subs = slices.Insert(slices.Clone(e.subs), i, s)
	e.touchLocked(at)
	e.b.log.Info("minibus: created", "entity", s.describe())
	s.emitEntity(EventEntityCreated, at)
	return s
}

// Subscription returns the topic's live subscription named name
// (case-insensitive), or ErrNotFound.
func (e *Entity) Subscription(name string) (*Entity, error) {
	subs, err := e.liveSubs()
	if err != nil {
		return nil, err
	}
	key := nameKey(name)
	for _, s := range subs {
		if nameKey(s.name) == key {
			return s, nil
		}
	}
	return nil, errs.Errorf(errs.ErrNotFound, e.describeSub(name), "")
}

// DeleteSubscription deletes the named subscription and its messages.
func (e *Entity) DeleteSubscription(name string) (err error) {
	c := e.call(noFault)
	defer c.exit(&err)
	s, err := e.Subscription(name)
	if err != nil {
		return err
	}
	now, err := c.enter(noContext)
	if err != nil {
		return err
	}
	e.subs = slices.DeleteFunc(slices.Clone(e.subs), func(x *Entity) bool { return x == s })
	return s.deleteFound(now)
}

// SubscriptionNames returns the names of the topic's subscriptions, sorted,
// as created.
func (e *Entity) SubscriptionNames() ([]string, error) {
	subs, err := e.liveSubs()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(subs))
	for i, s := range subs {
		out[i] = s.name
	}
	slices.Sort(out)
	return out, nil
}

// CreateRule adds a rule to the subscription. ErrAlreadyExists for a name
// it has, in any case (SEMANTICS V1). A rule change is activity (A2).
func (e *Entity) CreateRule(r *Rule) (err error) {
	c := e.call(noFault)
	defer c.exit(&err)
	now, err := c.enter(noContext)
	if err != nil {
		return err
	}
	if i, found := findRule(e.rules, r.Spec.Name); found {
		return errs.Errorf(errs.ErrAlreadyExists, e.describe(), "rule %q", e.rules[i].Spec.Name)
	}
	rec := ruleAddRecord{rule: r.Spec, at: now}
	enc := e.begin(rec.kind(), rec.encode)
	if enc != nil {
		if err := e.recordTooLarge(enc, errs.ErrInvalidArgument, "rule "+strconv.Quote(r.Spec.Name)); err != nil {
			return err
		}
	}
	e.addRuleLocked(r, now)
	e.commit(enc)
	return nil
}

// addRuleLocked adds r, whose name is new, at now.
func (e *Entity) addRuleLocked(r *Rule, now int64) {
	i, _ := findRule(e.rules, r.Spec.Name)
	e.rules = slices.Insert(slices.Clone(e.rules), i, r)
	e.updated = now
	e.touchLocked(now)
}

// DeleteRule removes the named rule (case-insensitive), or returns
// ErrNotFound.
func (e *Entity) DeleteRule(name string) (err error) {
	c := e.call(noFault)
	defer c.exit(&err)
	now, err := c.enter(noContext)
	if err != nil {
		return err
	}
	i, found := findRule(e.rules, name)
	if !found {
		return errs.Errorf(errs.ErrNotFound, e.describe(), "rule %q", name)
	}
	e.deleteRuleLocked(i, now)
	r := ruleDeleteRecord{name: name, at: now}
	e.log(r.kind(), r.encode)
	return nil
}

// deleteRuleLocked removes the rule at index i at now.
func (e *Entity) deleteRuleLocked(i int, now int64) {
	e.rules = slices.Delete(slices.Clone(e.rules), i, i+1)
	e.updated = now
	e.touchLocked(now)
}

// Rules returns the specs of the subscription's rules, sorted by name as
// created; the caller must not change their maps.
func (e *Entity) Rules() ([]RuleSpec, error) {
	c := e.call(noFault)
	c.end = endLeave
	defer c.exit(nil)
	if _, err := c.enter(noContext); err != nil {
		return nil, err
	}
	out := make([]RuleSpec, len(e.rules))
	for i, r := range e.rules {
		out[i] = r.Spec
	}
	return out, nil
}

// findRule finds a rule by name, case-insensitively (SEMANTICS V1): its
// index, or, when there is none, where a rule of that name goes in rules,
// which are sorted by name as created.
func findRule(rules []*Rule, name string) (int, bool) {
	if i := slices.IndexFunc(rules, func(r *Rule) bool { return strings.EqualFold(r.Spec.Name, name) }); i >= 0 {
		return i, true
	}
	i, _ := slices.BinarySearchFunc(rules, name, func(r *Rule, n string) int { return strings.Compare(r.Spec.Name, n) })
	return i, false
}
