package minibus

import (
	"fmt"
	"maps"

	"github.com/minibus-go/minibus/internal/engine"
	"github.com/minibus-go/minibus/internal/sqlfilter"
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

// compileRule checks and compiles a rule for the engine from its public
// description, keeping copies of the caller's maps (SEMANTICS V4); errors
// wrap ErrInvalidArgument.
func compileRule(name string, f RuleFilter, a RuleAction, culprit string) (*engine.Rule, error) {
	if err := checkChildName("rule", name, true); err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) error {
		return errorf(ErrInvalidArgument, culprit, "rule %q: "+format, append([]any{name}, args...)...)
	}
	f, a, err := derefRule(f, a)
	if err != nil {
		return nil, bad("%v", err)
	}
	spec := engine.RuleSpec{Name: name}
	switch f := f.(type) {
	case TrueFilter:
		spec.Filter = engine.FilterTrue
	case FalseFilter:
		spec.Filter = engine.FilterFalse
	case SQLFilter:
		spec.Filter, spec.SQL, spec.Params = engine.FilterSQL, f.Expression, maps.Clone(f.Parameters)
	case CorrelationFilter:
		spec.Filter = engine.FilterCorrelation
		spec.Correlation = sqlfilter.CorrelationFields{
			CorrelationID: f.CorrelationID, MessageID: f.MessageID, To: f.To, ReplyTo: f.ReplyTo, Subject: f.Subject,
			SessionID: f.SessionID, ReplyToSessionID: f.ReplyToSessionID, ContentType: f.ContentType,
		}
		spec.CorrelationProps = maps.Clone(f.ApplicationProperties)
	default:
		return nil, bad("unknown filter type %T", f)
	}
	switch a := a.(type) {
	case nil:
	case SQLAction:
		spec.HasAction, spec.ActionSQL, spec.ActionParams = true, a.Expression, maps.Clone(a.Parameters)
	default:
		return nil, bad("unknown action type %T", a)
	}
	r, err := engine.CompileRule(spec)
	if err != nil {
		return nil, bad("%v", err)
	}
	return r, nil
}

// publicRule describes spec with the public types, copying its maps.
func publicRule(spec engine.RuleSpec) Rule {
	r := Rule{Name: spec.Name}
	switch spec.Filter {
	case engine.FilterTrue:
		r.Filter = TrueFilter{}
	case engine.FilterFalse:
		r.Filter = FalseFilter{}
	case engine.FilterSQL:
		r.Filter = SQLFilter{Expression: spec.SQL, Parameters: maps.Clone(spec.Params)}
	case engine.FilterCorrelation:
		c := spec.Correlation
		r.Filter = CorrelationFilter{
			CorrelationID: c.CorrelationID, MessageID: c.MessageID, To: c.To, ReplyTo: c.ReplyTo, Subject: c.Subject,
			SessionID: c.SessionID, ReplyToSessionID: c.ReplyToSessionID, ContentType: c.ContentType,
			ApplicationProperties: maps.Clone(spec.CorrelationProps),
		}
	}
	if spec.HasAction {
		r.Action = SQLAction{Expression: spec.ActionSQL, Parameters: maps.Clone(spec.ActionParams)}
	}
	return r
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

// CreateRule adds a rule to the subscription. props may be nil: a
// TrueFilter without action. A nil props.Filter is a TrueFilter. It returns
// ErrInvalidArgument for a bad name (1–50 characters, may start with '$') or
// a bad filter or action (an SQL syntax error says where), and
// ErrAlreadyExists for a name the subscription has, in any case (SEMANTICS
// V1). A rule change is activity (SEMANTICS A2); it applies to messages sent
// afterwards.
func (s *Subscription) CreateRule(name string, props *RuleProperties) error {
	e, err := s.entity()
	if err != nil {
		return err
	}
	var p RuleProperties
	if props != nil {
		p = *props
	}
	r, err := compileRule(name, p.Filter, p.Action, culprit(e.Kind(), e.Path()))
	if err != nil {
		return err
	}
	return e.CreateRule(r)
}

// DeleteRule removes the named rule (matched case-insensitively), or returns
// ErrNotFound. Deleting the last rule is allowed: a subscription with no
// rules matches nothing (SEMANTICS R1).
func (s *Subscription) DeleteRule(name string) error {
	e, err := s.entity()
	if err != nil {
		return err
	}
	return e.DeleteRule(name)
}

// Rules returns the subscription's rules sorted by name as created; nil
// when the subscription is gone. The filters and actions are copies.
func (s *Subscription) Rules() []Rule {
	e, err := s.entity()
	if err != nil {
		return nil
	}
	specs, err := e.Rules()
	if err != nil {
		return nil
	}
	out := make([]Rule, len(specs))
	for i, spec := range specs {
		out[i] = publicRule(spec)
	}
	return out
}
