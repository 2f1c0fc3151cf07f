package azsb

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus/admin"
	"github.com/minibus-go/minibus"
)

// defaultRuleName is the name of a rule created without one.
const defaultRuleName = "$Default"

// sqlParameters checks and converts SQL parameters (and correlation
// filter properties) as the admin client and the service do: the client
// takes string, bool, int, int32, int64, float32, float64 and time.Time and
// refuses anything else; the service keeps integers as int64, floats as
// the float64 of the client's "%f" text, and times in UTC. An empty map is
// nil.
func sqlParameters(p map[string]any) (map[string]any, error) {
	if len(p) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(p))
	for k, v := range p {
		switch x := v.(type) {
		case string, bool:
			out[k] = x
		case int:
			out[k] = int64(x)
		case int32:
			out[k] = int64(x)
		case int64:
			out[k] = x
		case float32, float64:
			f, _ := strconv.ParseFloat(fmt.Sprintf("%f", x), 64)
			out[k] = f
		case time.Time:
			out[k] = x.UTC()
		default:
			return nil, clientError(minibus.ErrInvalidArgument, fmt.Sprintf("type %T of parameter %s is not a handled type for SQL parameters", v, k))
		}
	}
	return out, nil
}

// ruleToMinibus converts an admin filter and action. A nil filter is a
// TrueFilter; a filter or action minibus cannot evaluate (UnknownRuleFilter,
// UnknownRuleAction) is refused with minibus.ErrInvalidArgument.
func ruleToMinibus(f admin.RuleFilter, a admin.RuleAction) (minibus.RuleFilter, minibus.RuleAction, error) {
	var mf minibus.RuleFilter
	switch f := f.(type) {
	case nil, *admin.TrueFilter:
		mf = minibus.TrueFilter{}
	case *admin.FalseFilter:
		mf = minibus.FalseFilter{}
	case *admin.SQLFilter:
		params, err := sqlParameters(f.Parameters)
		if err != nil {
			return nil, nil, err
		}
		mf = minibus.SQLFilter{Expression: f.Expression, Parameters: params}
	case *admin.CorrelationFilter:
		props, err := sqlParameters(f.ApplicationProperties)
		if err != nil {
			return nil, nil, err
		}
		mf = minibus.CorrelationFilter{
			CorrelationID: str(f.CorrelationID), MessageID: str(f.MessageID), To: str(f.To), ReplyTo: str(f.ReplyTo),
			Subject: str(f.Subject), SessionID: str(f.SessionID), ReplyToSessionID: str(f.ReplyToSessionID),
			ContentType: str(f.ContentType), ApplicationProperties: props,
		}
	default:
		return nil, nil, fmt.Errorf("azsb: rule filter %T: minibus cannot evaluate it: %w", f, minibus.ErrInvalidArgument)
	}
	var ma minibus.RuleAction
	switch a := a.(type) {
	case nil:
	case *admin.SQLAction:
		params, err := sqlParameters(a.Parameters)
		if err != nil {
			return nil, nil, err
		}
		ma = minibus.SQLAction{Expression: a.Expression, Parameters: params}
	default:
		return nil, nil, fmt.Errorf("azsb: rule action %T: minibus cannot apply it: %w", a, minibus.ErrInvalidArgument)
	}
	return mf, ma, nil
}

// adminRule converts a minibus rule to the admin package's properties.
func adminRule(r minibus.Rule) admin.RuleProperties {
	out := admin.RuleProperties{Name: r.Name}
	switch f := r.Filter.(type) {
	case minibus.FalseFilter:
		out.Filter = &admin.FalseFilter{}
	case minibus.SQLFilter:
		out.Filter = &admin.SQLFilter{Expression: f.Expression, Parameters: nilIfEmpty(f.Parameters)}
	case minibus.CorrelationFilter:
		out.Filter = &admin.CorrelationFilter{
			ApplicationProperties: nilIfEmpty(f.ApplicationProperties),
			ContentType:           orNil(f.ContentType), CorrelationID: orNil(f.CorrelationID), MessageID: orNil(f.MessageID),
			ReplyTo: orNil(f.ReplyTo), ReplyToSessionID: orNil(f.ReplyToSessionID), SessionID: orNil(f.SessionID),
			Subject: orNil(f.Subject), To: orNil(f.To),
		}
	default:
		out.Filter = &admin.TrueFilter{}
	}
	if a, ok := r.Action.(minibus.SQLAction); ok {
		out.Action = &admin.SQLAction{Expression: a.Expression, Parameters: nilIfEmpty(a.Parameters)}
	}
	return out
}

func nilIfEmpty(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}

func rulePath(topic, sub, rule string) string { return "/" + subPath(topic, sub) + "/Rules/" + rule }

// CreateRule adds a rule to the subscription: options.Name (nil:
// "$Default"), options.Filter (nil: a TrueFilter), options.Action. nil
// options is a "$Default" TrueFilter rule (the SDK panics on it). A name
// taken is a 409 *azcore.ResponseError, a missing subscription a 404, bad
// SQL a 400; a parameter of a type the SDK does not send is the SDK's own
// error.
func (a *AdminClient) CreateRule(ctx context.Context, topicName string, subscriptionName string, options *admin.CreateRuleOptions) (admin.CreateRuleResponse, error) {
	var p admin.RuleProperties
	if options != nil {
		p = admin.RuleProperties{Name: deref(options.Name), Filter: options.Filter, Action: options.Action}
	}
	r, err := a.putRule(ctx, topicName, subscriptionName, p, true)
	if err != nil {
		return admin.CreateRuleResponse{}, err
	}
	return admin.CreateRuleResponse{RuleProperties: r}, nil
}

// UpdateRule replaces the filter and action of the rule properties.Name
// ("" is "$Default"). A missing rule is a 404 *azcore.ResponseError.
// minibus has no rule update of its own: azsb deletes the rule and creates
// it anew (putting the old one back if the new one is refused), so a
// message sent to the topic during the call may miss it.
func (a *AdminClient) UpdateRule(ctx context.Context, topicName string, subscriptionName string, properties admin.RuleProperties) (admin.UpdateRuleResponse, error) {
	r, err := a.putRule(ctx, topicName, subscriptionName, properties, false)
	if err != nil {
		return admin.UpdateRuleResponse{}, err
	}
	return admin.UpdateRuleResponse{RuleProperties: r}, nil
}

func (a *AdminClient) putRule(ctx context.Context, topic, sub string, p admin.RuleProperties, creating bool) (admin.RuleProperties, error) {
	if p.Name == "" {
		p.Name = defaultRuleName
	}
	path := rulePath(topic, sub, p.Name)
	if err := ctx.Err(); err != nil {
		return admin.RuleProperties{}, err
	}
	f, act, err := ruleToMinibus(p.Filter, p.Action)
	if err != nil {
		var plain *sdkError
		if errors.As(err, &plain) {
			return admin.RuleProperties{}, err
		}
		return admin.RuleProperties{}, responseError(http.StatusBadRequest, http.MethodPut, path, err)
	}
	s, err := a.ruleSubscription(topic, sub)
	if err != nil {
		return admin.RuleProperties{}, adminError(err, http.MethodPut, path)
	}
	props := &minibus.RuleProperties{Filter: f, Action: act}
	if creating {
		err = s.CreateRule(p.Name, props)
	} else {
		err = replaceRule(s, p.Name, props)
	}
	if err != nil {
		return admin.RuleProperties{}, adminError(err, http.MethodPut, path)
	}
	r, ok := findRule(s, p.Name)
	if !ok {
		return admin.RuleProperties{}, adminError(fmt.Errorf("azsb: rule %q: %w", p.Name, minibus.ErrNotFound), http.MethodPut, path)
	}
	return adminRule(r), nil
}

// replaceRule replaces the rule name of s, as described at UpdateRule.
func replaceRule(s *minibus.Subscription, name string, props *minibus.RuleProperties) error {
	old, ok := findRule(s, name)
	if !ok {
		return fmt.Errorf("azsb: subscription %q: rule %q: %w", s.Name(), name, minibus.ErrNotFound)
	}
	if err := s.DeleteRule(old.Name); err != nil {
		return err
	}
	if err := s.CreateRule(old.Name, props); err != nil {
		_ = s.CreateRule(old.Name, &minibus.RuleProperties{Filter: old.Filter, Action: old.Action})
		return err
	}
	return nil
}

func findRule(s *minibus.Subscription, name string) (minibus.Rule, bool) {
	for _, r := range s.Rules() {
		if strings.EqualFold(r.Name, name) {
			return r, true
		}
	}
	return minibus.Rule{}, false
}

func (a *AdminClient) ruleSubscription(topic, sub string) (*minibus.Subscription, error) {
	t, err := a.ns.Topic(topic)
	if err != nil {
		return nil, err
	}
	return t.Subscription(sub)
}

// GetRule returns the rule, or nil and no error if there is no such topic,
// subscription or rule.
func (a *AdminClient) GetRule(ctx context.Context, topicName string, subscriptionName string, ruleName string, options *admin.GetRuleOptions) (*admin.GetRuleResponse, error) {
	s, err := a.findSubscription(ctx, topicName, subscriptionName)
	if s == nil || err != nil {
		return nil, err
	}
	r, ok := findRule(s, ruleName)
	if !ok {
		return nil, nil
	}
	return &admin.GetRuleResponse{RuleProperties: adminRule(r)}, nil
}

// DeleteRule removes the rule. A missing topic, subscription or rule is a
// 404 *azcore.ResponseError.
func (a *AdminClient) DeleteRule(ctx context.Context, topicName string, subscriptionName string, ruleName string, options *admin.DeleteRuleOptions) (admin.DeleteRuleResponse, error) {
	path := rulePath(topicName, subscriptionName, ruleName)
	if err := ctx.Err(); err != nil {
		return admin.DeleteRuleResponse{}, err
	}
	s, err := a.ruleSubscription(topicName, subscriptionName)
	if err == nil {
		err = s.DeleteRule(ruleName)
	}
	if err != nil {
		return admin.DeleteRuleResponse{}, adminError(err, http.MethodDelete, path)
	}
	return admin.DeleteRuleResponse{}, nil
}

// NewListRulesPager lists the subscription's rules, by name; a missing
// topic or subscription lists none.
func (a *AdminClient) NewListRulesPager(topicName string, subscriptionName string, options *admin.ListRulesOptions) *runtime.Pager[admin.ListRulesResponse] {
	var size int32
	if options != nil {
		size = options.MaxPageSize
	}
	rules := map[string]minibus.Rule{}
	names := func() ([]string, error) {
		if err := a.noNamespace(http.MethodGet, "/"+subPath(topicName, subscriptionName)+"/Rules"); err != nil {
			return nil, err
		}
		s, err := a.ruleSubscription(topicName, subscriptionName)
		if err != nil {
			return nil, nil
		}
		clear(rules)
		var out []string
		for _, r := range s.Rules() {
			rules[r.Name] = r
			out = append(out, r.Name)
		}
		return out, nil
	}
	return newPager(size, names, func(n string) (admin.RuleProperties, bool) {
		r, ok := rules[n]
		return adminRule(r), ok
	}, func(items []admin.RuleProperties) admin.ListRulesResponse {
		return admin.ListRulesResponse{Rules: items}
	})
}
