package minibus

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/minibus-go/minibus/internal/sqlfilter"
	"github.com/minibus-go/minibus/internal/store"
)

// Rule is one rule of a subscription: a filter that selects messages and an
// optional action that changes the subscription's copy (SEMANTICS R1, R2).
type Rule struct {
	Name   string
	Filter RuleFilter
	Action RuleAction // nil: no action
}

// RuleProperties describes a rule to create. Name is used by
// SubscriptionProperties.DefaultRule (default "$Default"); CreateRule takes
// the name as its argument and ignores this one. A nil Filter is a
// TrueFilter; a nil Action is no action.
type RuleProperties struct {
	Name   string
	Filter RuleFilter
	Action RuleAction
}

// RuleFilter is a rule's filter: [TrueFilter], [FalseFilter], [SQLFilter]
// or [CorrelationFilter].
type RuleFilter interface{ isRuleFilter() }

// RuleAction is a rule's action: [SQLAction].
type RuleAction interface{ isRuleAction() }

// TrueFilter matches every message (SQL "1=1").
type TrueFilter struct{}

// FalseFilter matches no message (SQL "1=0").
type FalseFilter struct{}

// SQLFilter matches the messages for which Expression is TRUE (SEMANTICS
// R3). Expression is the Service Bus SQL-92 subset over sys. and user.
// properties; Parameters supplies its @parameters, keyed "@name" (or
// "name"). A bad expression is ErrInvalidArgument when the rule is created;
// a type error when a message is evaluated follows SEMANTICS R5.
type SQLFilter struct {
	Expression string
	Parameters map[string]any
}

// CorrelationFilter matches a message when every field it sets equals the
// message's: strings exactly (case-sensitive), ApplicationProperties by
// value, numbers of any Go type comparing by numeric value, property names
// case-insensitive as in SQL filters (SEMANTICS R4). A filter that sets no
// field is ErrInvalidArgument; use TrueFilter.
type CorrelationFilter struct {
	CorrelationID, MessageID, To, ReplyTo, Subject, SessionID, ReplyToSessionID, ContentType string
	ApplicationProperties                                                                    map[string]any
}

// SQLAction changes a subscription's copy of a message with SET and REMOVE
// statements, separated by ';' (SEMANTICS R2): for example
// "SET quantity = quantity / 2; REMOVE priority; SET sys.Label = 'low'".
// Parameters supplies its @parameters.
type SQLAction struct {
	Expression string
	Parameters map[string]any
}

func (TrueFilter) isRuleFilter()        {}
func (FalseFilter) isRuleFilter()       {}
func (SQLFilter) isRuleFilter()         {}
func (CorrelationFilter) isRuleFilter() {}
func (SQLAction) isRuleAction()         {}

var (
	_ RuleFilter = TrueFilter{}
	_ RuleFilter = FalseFilter{}
	_ RuleFilter = SQLFilter{}
	_ RuleFilter = CorrelationFilter{}
	_ RuleAction = SQLAction{}
)

// defaultRuleName is the name of the rule every new subscription gets.
const defaultRuleName = "$Default"

// rule is a compiled rule. Its filter and action are immutable once built.
type rule struct {
	name   string
	public Rule // as given, with copies of the caller's maps
	match  func(m *sqlfilter.Message) (bool, error)
	action *sqlfilter.Action
}

// compileRule checks and compiles a rule; errors wrap ErrInvalidArgument.
func compileRule(name string, f RuleFilter, a RuleAction, culprit string) (*rule, error) {
	r := &rule{name: name}
	bad := func(format string, args ...any) error {
		return errorf(ErrInvalidArgument, culprit, "rule %q: "+format, append([]any{name}, args...)...)
	}
	f, a, err := derefRule(f, a)
	if err != nil {
		return nil, bad("%v", err)
	}
	switch f := f.(type) {
	case TrueFilter:
		r.public.Filter = f
		r.match = func(*sqlfilter.Message) (bool, error) { return true, nil }
	case FalseFilter:
		r.public.Filter = f
		r.match = func(*sqlfilter.Message) (bool, error) { return false, nil }
	case SQLFilter:
		compiled, err := sqlfilter.ParseFilter(f.Expression, f.Parameters)
		if err != nil {
			return nil, bad("SQL filter: %v", err)
		}
		f.Parameters = maps.Clone(f.Parameters)
		r.public.Filter = f
		r.match = compiled.Match
	case CorrelationFilter:
		c, err := newCorrelation(f)
		if err != nil {
			return nil, bad("correlation filter: %v", err)
		}
		f.ApplicationProperties = maps.Clone(f.ApplicationProperties)
		r.public.Filter = f
		r.match = c.match
	default:
		return nil, bad("unknown filter type %T", f)
	}
	switch a := a.(type) {
	case nil:
	case SQLAction:
		compiled, err := sqlfilter.ParseAction(a.Expression, a.Parameters)
		if err != nil {
			return nil, bad("SQL action: %v", err)
		}
		a.Parameters = maps.Clone(a.Parameters)
		r.public.Action = a
		r.action = compiled
	default:
		return nil, bad("unknown action type %T", a)
	}
	r.public.Name = name
	return r, nil
}

// derefRule accepts filters and actions by pointer too, as the Azure SDK
// passes them; a nil filter is a TrueFilter.
func derefRule(f RuleFilter, a RuleAction) (RuleFilter, RuleAction, error) {
	switch p := f.(type) {
	case nil:
		f = TrueFilter{}
	case *TrueFilter:
		f = TrueFilter{}
	case *FalseFilter:
		f = FalseFilter{}
	case *SQLFilter:
		if p == nil {
			return nil, nil, fmt.Errorf("nil *SQLFilter")
		}
		f = *p
	case *CorrelationFilter:
		if p == nil {
			return nil, nil, fmt.Errorf("nil *CorrelationFilter")
		}
		f = *p
	}
	if p, ok := a.(*SQLAction); ok {
		if p == nil {
			return nil, nil, fmt.Errorf("nil *SQLAction")
		}
		a = *p
	}
	return f, a, nil
}

// correlation is a compiled CorrelationFilter.
type correlation struct {
	f     CorrelationFilter
	props []corrProp
}

type corrProp struct {
	key   string
	value any
}

func newCorrelation(f CorrelationFilter) (*correlation, error) {
	c := &correlation{f: f}
	for k, v := range f.ApplicationProperties {
		if !checkValue(v) {
			return nil, &propertyError{key: k, value: v}
		}
		c.props = append(c.props, corrProp{k, v})
	}
	slices.SortFunc(c.props, func(a, b corrProp) int { return strings.Compare(a.key, b.key) })
	if f.CorrelationID == "" && f.MessageID == "" && f.To == "" && f.ReplyTo == "" && f.Subject == "" &&
		f.SessionID == "" && f.ReplyToSessionID == "" && f.ContentType == "" && len(c.props) == 0 {
		return nil, fmt.Errorf("it sets no field; use TrueFilter to match everything")
	}
	return c, nil
}

// match implements SEMANTICS R4.
func (c *correlation) match(m *sqlfilter.Message) (bool, error) {
	f := &c.f
	if !eqSet(f.CorrelationID, m.CorrelationID) || !eqSet(f.MessageID, m.MessageID) || !eqSet(f.To, m.To) ||
		!eqSet(f.ReplyTo, m.ReplyTo) || !eqSet(f.Subject, m.Subject) || !eqSet(f.SessionID, m.SessionID) ||
		!eqSet(f.ReplyToSessionID, m.ReplyToSessionID) || !eqSet(f.ContentType, m.ContentType) {
		return false, nil
	}
	for _, p := range c.props {
		v, ok := lookupProp(m.Properties, p.key)
		if !ok || !sameValue(p.value, v) {
			return false, nil
		}
	}
	return true, nil
}

func eqSet(want, got string) bool { return want == "" || want == got }

// lookupProp finds a property by name, exactly first, then
// case-insensitively (SEMANTICS R3); of several keys equal but for case, the
// smallest wins, as in SQL filters.
func lookupProp(props map[string]any, key string) (any, bool) {
	if v, ok := props[key]; ok {
		return v, true
	}
	found, best := false, ""
	var value any
	for k, v := range props {
		if strings.EqualFold(k, key) && (!found || k < best) {
			found, best, value = true, k, v
		}
	}
	return value, found
}

// sameValue compares property values: integers of any Go type exactly by
// value, integers and floats by numeric value, []byte by content, times with
// Equal, everything else with ==.
func sameValue(a, b any) bool {
	if x, ok := integer(a); ok {
		if y, ok := integer(b); ok {
			return x == y
		}
	}
	if x, ok := float(a); ok {
		y, ok := float(b)
		return ok && x == y
	}
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && string(x) == string(y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	return a == b
}

// integer returns an integer property value as an int64; ok is false for
// non-integers and for uint64 values above MaxInt64.
func integer(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint:
		return int64(v), uint64(v) <= math.MaxInt64
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	case uint64:
		return int64(v), v <= math.MaxInt64
	}
	return 0, false
}

// float returns a numeric property value as a float64; ok is false for
// non-numbers.
func float(v any) (float64, bool) {
	switch v := v.(type) {
	case float32:
		return float64(v), true
	case float64:
		return v, true
	case uint:
		return float64(v), true
	case uint64:
		return float64(v), true
	}
	if i, ok := integer(v); ok {
		return float64(i), true
	}
	return 0, false
}

// filterView is the sqlfilter view of a stored message being fanned out at
// instant at; ttl is its effective TTL at the topic (store.Never: none).
func (ns *Namespace) filterView(m *store.Message, at, ttl int64) sqlfilter.Message {
	v := sqlfilter.Message{
		MessageID:              messageID(m),
		SessionID:              m.SessionID,
		SequenceNumber:         m.Key.Seq,
		EnqueuedSequenceNumber: m.EnqueuedSeq,
		DeliveryCount:          int64(m.Deliveries),
		Size:                   m.Size,
		EnqueuedTimeUtc:        ns.toTime(at),
		ExpiresAtUtc:           ns.toTime(addSat(at, ttl)),
		Properties:             m.Props,
	}
	if ttl != store.Never {
		v.TimeToLive = time.Duration(ttl)
	}
	if m.Scheduled != store.Unset {
		v.ScheduledEnqueueTimeUtc = ns.toTime(m.Scheduled)
	}
	if h := m.Headers; h != nil {
		v.ContentType = h.ContentType
		v.CorrelationID = h.CorrelationID
		v.Subject = h.Subject
		v.To = h.To
		v.ReplyTo = h.ReplyTo
		v.ReplyToSessionID = h.ReplyToSessionID
		v.PartitionKey = h.PartitionKey
	}
	return v
}

// applyView returns a copy of m changed as an action changed its view from
// orig to v.
func applyView(m *store.Message, orig, v *sqlfilter.Message) *store.Message {
	c := m.Copy()
	if v.MessageID != orig.MessageID {
		c.MessageID, c.IDSeed = v.MessageID, 0
	}
	c.SessionID = v.SessionID
	c.Props = v.Properties
	if len(c.Props) == 0 {
		c.Props = nil
	}
	h := store.Headers{
		ContentType: v.ContentType, CorrelationID: v.CorrelationID, Subject: v.Subject, To: v.To,
		ReplyTo: v.ReplyTo, ReplyToSessionID: v.ReplyToSessionID, PartitionKey: v.PartitionKey,
	}
	c.Headers = nil
	if h != (store.Headers{}) {
		c.Headers = &h
	}
	c.Size = messageSize(c)
	return c
}
