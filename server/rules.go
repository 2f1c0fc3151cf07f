package server

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
)

// The descriptors of the rule types on the wire (SEMANTICS W8,
// enumerate-rules and add-rule), as Service Bus and its SDKs define them.
// The filters' codes have one hex digit fewer than the rule description's
// and the actions'; that is how the service spells them, and the SDKs
// compare the codes exactly.
const (
	descRuleDescription   uint64 = 0x0000013700000004
	descEmptyRuleAction   uint64 = 0x0000013700000005
	descSQLRuleAction     uint64 = 0x0000013700000006
	descSQLFilter         uint64 = 0x0000001370000006
	descTrueFilter        uint64 = 0x0000001370000007
	descFalseFilter       uint64 = 0x0000001370000008
	descCorrelationFilter uint64 = 0x0000001370000009
)

// sqlCompatibilityLevel is the compatibility level Service Bus gives SQL
// filters and actions.
const sqlCompatibilityLevel int32 = 20

// The keys of a rule description map in an add-rule request.
const (
	keySQLFilter         = "sql-filter"
	keyCorrelationFilter = "correlation-filter"
	keySQLRuleAction     = "sql-rule-action"
	keyExpression        = "expression"
)

// correlationKeys are the correlation-filter map's keys, in the order of
// the fields of the described correlation filter.
var correlationKeys = [...]string{
	"correlation-id", "message-id", "to", "reply-to", "label",
	"session-id", "reply-to-session-id", "content-type",
}

// ruleToAMQP gives the rule description of r as enumerate-rules returns it:
// described 0x0000013700000004, a list of [filter, action, name,
// created-at] where the filter is a described true, false, SQL
// [expression, compatibility-level] or correlation [correlation-id,
// message-id, to, reply-to, label, session-id, reply-to-session-id,
// content-type, properties] filter, the action a described SQL rule action
// [expression, compatibility-level] or the empty rule action, and
// created-at null (minibus keeps no creation time for rules).
func ruleToAMQP(r minibus.Rule) (amqp.Described, error) {
	f, err := filterToAMQP(r.Filter)
	if err != nil {
		return amqp.Described{}, fmt.Errorf("rule %q: %w", r.Name, err)
	}
	a := amqp.Described{Descriptor: descEmptyRuleAction, Value: []any{}}
	switch act := r.Action.(type) {
	case nil:
	case minibus.SQLAction:
		a = sqlRuleAction(act.Expression)
	case *minibus.SQLAction:
		a = sqlRuleAction(act.Expression)
	default:
		return amqp.Described{}, fmt.Errorf("rule %q: action %T", r.Name, r.Action)
	}
	return amqp.Described{Descriptor: descRuleDescription, Value: []any{f, a, r.Name, nil}}, nil
}

// sqlRuleAction is the described SQL rule action of expr.
func sqlRuleAction(expr string) amqp.Described {
	return amqp.Described{Descriptor: descSQLRuleAction, Value: []any{expr, sqlCompatibilityLevel}}
}

// filterToAMQP gives the described filter of f.
func filterToAMQP(f minibus.RuleFilter) (amqp.Described, error) {
	switch f := f.(type) {
	case nil, minibus.TrueFilter, *minibus.TrueFilter:
		return amqp.Described{Descriptor: descTrueFilter, Value: []any{}}, nil
	case minibus.FalseFilter, *minibus.FalseFilter:
		return amqp.Described{Descriptor: descFalseFilter, Value: []any{}}, nil
	case minibus.SQLFilter:
		return amqp.Described{Descriptor: descSQLFilter, Value: []any{f.Expression, sqlCompatibilityLevel}}, nil
	case *minibus.SQLFilter:
		return filterToAMQP(*f)
	case minibus.CorrelationFilter:
		fields := []string{f.CorrelationID, f.MessageID, f.To, f.ReplyTo, f.Subject, f.SessionID, f.ReplyToSessionID, f.ContentType}
		list := make([]any, 0, len(fields)+1)
		for _, s := range fields {
			if s == "" {
				list = append(list, nil)
			} else {
				list = append(list, s)
			}
		}
		// Always a map, empty or not: the .NET SDK enumerates it unchecked.
		props := make(amqp.Map, 0, len(f.ApplicationProperties))
		for k, v := range f.ApplicationProperties {
			props = append(props, amqp.KV{Key: k, Value: propertyToAMQP(v)})
		}
		slices.SortFunc(props, func(a, b amqp.KV) int { return cmp.Compare(a.Key.(string), b.Key.(string)) })
		return amqp.Described{Descriptor: descCorrelationFilter, Value: append(list, props)}, nil
	case *minibus.CorrelationFilter:
		return filterToAMQP(*f)
	}
	return amqp.Described{}, fmt.Errorf("filter %T", f)
}

// ruleFromAMQP reads the rule-description of an add-rule request
// (SEMANTICS W8): the map the SDKs send, holding "sql-filter"
// {expression} or "correlation-filter" {correlation-id, message-id, to,
// reply-to, label, session-id, reply-to-session-id, content-type,
// properties}, and optionally "sql-rule-action" {expression}; or a
// described rule description as enumerate-rules gives it. A missing or
// mistyped field is an error naming it, under the key path of what.
func ruleFromAMQP(v any, what string) (minibus.RuleProperties, error) {
	switch d := v.(type) {
	case amqp.Map:
		return ruleFromMap(d, what)
	case amqp.Described:
		return ruleFromDescribed(d, what)
	case *amqp.Described:
		if d != nil {
			return ruleFromDescribed(*d, what)
		}
	}
	return minibus.RuleProperties{}, fmt.Errorf("%s: %s (want a map)", what, amqpTypeName(v))
}

// ruleFromMap reads the map form of a rule description.
func ruleFromMap(m amqp.Map, what string) (minibus.RuleProperties, error) {
	var rp minibus.RuleProperties
	sqlv, hasSQL := m.GetString(keySQLFilter)
	corrv, hasCorr := m.GetString(keyCorrelationFilter)
	hasSQL, hasCorr = hasSQL && sqlv != nil, hasCorr && corrv != nil
	switch {
	case hasSQL && hasCorr:
		return rp, fmt.Errorf("%s: both %s and %s", what, keySQLFilter, keyCorrelationFilter)
	case hasSQL:
		w := what + "." + keySQLFilter
		fm, ok := sqlv.(amqp.Map)
		if !ok {
			return rp, fmt.Errorf("%s: %s (want a map)", w, amqpTypeName(sqlv))
		}
		expr, err := mapString(fm, keyExpression, w, true)
		if err != nil {
			return rp, err
		}
		rp.Filter = minibus.SQLFilter{Expression: expr}
	case hasCorr:
		w := what + "." + keyCorrelationFilter
		fm, ok := corrv.(amqp.Map)
		if !ok {
			return rp, fmt.Errorf("%s: %s (want a map)", w, amqpTypeName(corrv))
		}
		var vals [len(correlationKeys)]string
		for i, k := range correlationKeys {
			s, err := mapString(fm, k, w, false)
			if err != nil {
				return rp, err
			}
			vals[i] = s
		}
		cf := minibus.CorrelationFilter{
			CorrelationID: vals[0], MessageID: vals[1], To: vals[2], ReplyTo: vals[3],
			Subject: vals[4], SessionID: vals[5], ReplyToSessionID: vals[6], ContentType: vals[7],
		}
		if pv, ok := fm.GetString("properties"); ok && pv != nil {
			pm, ok := pv.(amqp.Map)
			if !ok {
				return rp, fmt.Errorf("%s.properties: %s (want a map)", w, amqpTypeName(pv))
			}
			props, err := propertiesFromAMQP(pm, w+".properties")
			if err != nil {
				return rp, err
			}
			cf.ApplicationProperties = props
		}
		rp.Filter = cf
	default:
		return rp, fmt.Errorf("%s: missing %s or %s", what, keySQLFilter, keyCorrelationFilter)
	}
	if av, ok := m.GetString(keySQLRuleAction); ok && av != nil {
		w := what + "." + keySQLRuleAction
		am, ok := av.(amqp.Map)
		if !ok {
			return rp, fmt.Errorf("%s: %s (want a map)", w, amqpTypeName(av))
		}
		expr, err := mapString(am, keyExpression, w, true)
		if err != nil {
			return rp, err
		}
		rp.Action = minibus.SQLAction{Expression: expr}
	}
	return rp, nil
}

// ruleFromDescribed reads the described form of a rule description.
func ruleFromDescribed(d amqp.Described, what string) (minibus.RuleProperties, error) {
	var rp minibus.RuleProperties
	fields, ok := d.Value.([]any)
	if !isCode(d.Descriptor, descRuleDescription) || !ok || len(fields) < 2 {
		return rp, fmt.Errorf("%s: described %v (want a rule description)", what, d.Descriptor)
	}
	fd, ok := asDescribed(fields[0])
	if !ok {
		return rp, fmt.Errorf("%s.filter: %s (want a described filter)", what, amqpTypeName(fields[0]))
	}
	ff, _ := fd.Value.([]any)
	switch {
	case isCode(fd.Descriptor, descTrueFilter):
		rp.Filter = minibus.TrueFilter{}
	case isCode(fd.Descriptor, descFalseFilter):
		rp.Filter = minibus.FalseFilter{}
	case isCode(fd.Descriptor, descSQLFilter):
		s, ok := listString(ff, 0)
		if !ok || s == "" {
			return rp, fmt.Errorf("%s.filter.expression: missing or not a string", what)
		}
		rp.Filter = minibus.SQLFilter{Expression: s}
	case isCode(fd.Descriptor, descCorrelationFilter):
		var vals [len(correlationKeys)]string
		for i := range vals {
			s, ok := listString(ff, i)
			if !ok {
				return rp, fmt.Errorf("%s.filter.%s: not a string", what, correlationKeys[i])
			}
			vals[i] = s
		}
		cf := minibus.CorrelationFilter{
			CorrelationID: vals[0], MessageID: vals[1], To: vals[2], ReplyTo: vals[3],
			Subject: vals[4], SessionID: vals[5], ReplyToSessionID: vals[6], ContentType: vals[7],
		}
		if len(ff) > len(vals) && ff[len(vals)] != nil {
			pm, ok := ff[len(vals)].(amqp.Map)
			if !ok {
				return rp, fmt.Errorf("%s.filter.properties: %s (want a map)", what, amqpTypeName(ff[len(vals)]))
			}
			props, err := propertiesFromAMQP(pm, what+".filter.properties")
			if err != nil {
				return rp, err
			}
			cf.ApplicationProperties = props
		}
		rp.Filter = cf
	default:
		return rp, fmt.Errorf("%s.filter: described %v (want a true, false, sql or correlation filter)", what, fd.Descriptor)
	}
	if fields[1] != nil {
		ad, ok := asDescribed(fields[1])
		if !ok {
			return rp, fmt.Errorf("%s.action: %s (want a described action)", what, amqpTypeName(fields[1]))
		}
		switch {
		case isCode(ad.Descriptor, descEmptyRuleAction):
		case isCode(ad.Descriptor, descSQLRuleAction):
			af, _ := ad.Value.([]any)
			s, ok := listString(af, 0)
			if !ok || s == "" {
				return rp, fmt.Errorf("%s.action.expression: missing or not a string", what)
			}
			rp.Action = minibus.SQLAction{Expression: s}
		default:
			return rp, fmt.Errorf("%s.action: described %v (want a sql or empty rule action)", what, ad.Descriptor)
		}
	}
	if len(fields) > 2 {
		rp.Name, _ = fields[2].(string)
	}
	return rp, nil
}

// asDescribed gives v as a described value.
func asDescribed(v any) (amqp.Described, bool) {
	switch d := v.(type) {
	case amqp.Described:
		return d, true
	case *amqp.Described:
		if d != nil {
			return *d, true
		}
	}
	return amqp.Described{}, false
}

// isCode reports whether a descriptor is the numeric code want.
func isCode(desc any, want uint64) bool {
	c, ok := desc.(uint64)
	return ok && c == want
}

// listString is the string at list[i]: "" when the list is shorter or the
// element null; ok is false for another type.
func listString(list []any, i int) (string, bool) {
	if i >= len(list) || list[i] == nil {
		return "", true
	}
	s, ok := list[i].(string)
	return s, ok
}

// mapString reads the string at key of m (string or symbol, null as
// absent); required makes a missing or empty value an error. Errors name
// the key under what.
func mapString(m amqp.Map, key, what string, required bool) (string, error) {
	v, ok := m.GetString(key)
	if !ok || v == nil {
		if required {
			return "", fmt.Errorf("%s.%s: missing", what, key)
		}
		return "", nil
	}
	switch s := v.(type) {
	case string:
		if required && s == "" {
			return "", fmt.Errorf("%s.%s: empty", what, key)
		}
		return s, nil
	case amqp.Symbol:
		return string(s), nil
	}
	return "", fmt.Errorf("%s.%s: %s (want a string)", what, key, amqpTypeName(v))
}
