package server

import (
	"testing"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
	"github.com/stretchr/testify/require"
)

// TestRuleDescriptionRoundTrip encodes every filter and action kind as
// enumerate-rules does, through the codec, and reads it back as add-rule
// accepts it (R1–R4, W8). The codes are the ones the JavaScript SDK
// compares (core-amqp's descriptorCodes) and .NET declares.
func TestRuleDescriptionRoundTrip(t *testing.T) {
	corr := minibus.CorrelationFilter{
		CorrelationID: "c", MessageID: "m", To: "to", ReplyTo: "rt", Subject: "subj",
		SessionID: "s", ReplyToSessionID: "rs", ContentType: "ct",
		ApplicationProperties: map[string]any{"b": "x", "a": int64(1)},
	}
	for _, tt := range []struct {
		rule       minibus.Rule
		filterCode uint64
		actionCode uint64
		want       minibus.RuleProperties
	}{
		{minibus.Rule{Name: "t", Filter: minibus.TrueFilter{}}, 83483426823, 1335734829061,
			minibus.RuleProperties{Name: "t", Filter: minibus.TrueFilter{}}},
		{minibus.Rule{Name: "tp", Filter: &minibus.TrueFilter{}}, 0x1370000007, 0x13700000005,
			minibus.RuleProperties{Name: "tp", Filter: minibus.TrueFilter{}}},
		{minibus.Rule{Name: "nil", Filter: nil}, 0x1370000007, 0x13700000005,
			minibus.RuleProperties{Name: "nil", Filter: minibus.TrueFilter{}}},
		{minibus.Rule{Name: "f", Filter: minibus.FalseFilter{}}, 83483426824, 0x13700000005,
			minibus.RuleProperties{Name: "f", Filter: minibus.FalseFilter{}}},
		{minibus.Rule{Name: "fp", Filter: &minibus.FalseFilter{}}, 0x1370000008, 0x13700000005,
			minibus.RuleProperties{Name: "fp", Filter: minibus.FalseFilter{}}},
		{minibus.Rule{Name: "sql", Filter: minibus.SQLFilter{Expression: "a = 1"}, Action: minibus.SQLAction{Expression: "SET b = 2"}},
			83483426822, 1335734829062,
			minibus.RuleProperties{Name: "sql", Filter: minibus.SQLFilter{Expression: "a = 1"}, Action: minibus.SQLAction{Expression: "SET b = 2"}}},
		{minibus.Rule{Name: "sqlp", Filter: &minibus.SQLFilter{Expression: "a = 1"}, Action: &minibus.SQLAction{Expression: "REMOVE b"}},
			0x1370000006, 0x13700000006,
			minibus.RuleProperties{Name: "sqlp", Filter: minibus.SQLFilter{Expression: "a = 1"}, Action: minibus.SQLAction{Expression: "REMOVE b"}}},
		{minibus.Rule{Name: "corr", Filter: corr}, 83483426825, 0x13700000005,
			minibus.RuleProperties{Name: "corr", Filter: corr}},
		{minibus.Rule{Name: "corrp", Filter: &minibus.CorrelationFilter{Subject: "only"}}, 0x1370000009, 0x13700000005,
			minibus.RuleProperties{Name: "corrp", Filter: minibus.CorrelationFilter{Subject: "only"}}},
	} {
		t.Run(tt.rule.Name, func(t *testing.T) {
			d, err := ruleToAMQP(tt.rule)
			require.NoError(t, err)
			v, _, err := amqp.DecodeValue(mustAppend(t, d))
			require.NoError(t, err)
			dd, ok := v.(amqp.Described)
			require.True(t, ok)
			require.Equal(t, uint64(1335734829060), dd.Descriptor)
			fields := dd.Value.([]any)
			require.Equal(t, tt.filterCode, fields[0].(amqp.Described).Descriptor)
			require.Equal(t, tt.actionCode, fields[1].(amqp.Described).Descriptor)
			require.Equal(t, tt.rule.Name, fields[2])
			got, err := ruleFromAMQP(dd, "rule-description")
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	// Correlation properties come out sorted, always a map.
	d, err := ruleToAMQP(minibus.Rule{Name: "c", Filter: corr})
	require.NoError(t, err)
	cf := d.Value.([]any)[0].(amqp.Described).Value.([]any)
	require.Equal(t, amqp.Map{{Key: "a", Value: int64(1)}, {Key: "b", Value: "x"}}, cf[8])
	d, err = ruleToAMQP(minibus.Rule{Name: "c", Filter: minibus.CorrelationFilter{To: "x"}})
	require.NoError(t, err)
	require.Equal(t, amqp.Map{}, d.Value.([]any)[0].(amqp.Described).Value.([]any)[8])
}

// mustAppend encodes v or fails.
func mustAppend(t *testing.T, v any) []byte {
	t.Helper()
	b, err := amqp.AppendValue(nil, v)
	require.NoError(t, err)
	return b
}

// TestRuleFromAMQPErrors: every malformed rule description is an error
// naming the field.
func TestRuleFromAMQPErrors(t *testing.T) {
	desc := func(f, a any) amqp.Described {
		return amqp.Described{Descriptor: descRuleDescription, Value: []any{f, a, "n"}}
	}
	filter := func(code uint64, fields ...any) amqp.Described {
		return amqp.Described{Descriptor: code, Value: fields}
	}
	for name, tt := range map[string]struct {
		v    any
		want string
	}{
		"not a map":          {"x", "rule-description: string"},
		"nil described":      {(*amqp.Described)(nil), "rule-description"},
		"both filters":       {amqp.Map{{Key: "sql-filter", Value: amqp.Map{}}, {Key: "correlation-filter", Value: amqp.Map{}}}, "both"},
		"sql not map":        {amqp.Map{{Key: "sql-filter", Value: "x"}}, "rule-description.sql-filter: string"},
		"sql no expr":        {amqp.Map{{Key: "sql-filter", Value: amqp.Map{}}}, "sql-filter.expression: missing"},
		"sql empty expr":     {amqp.Map{{Key: "sql-filter", Value: amqp.Map{{Key: "expression", Value: ""}}}}, "sql-filter.expression: empty"},
		"corr not map":       {amqp.Map{{Key: "correlation-filter", Value: int32(1)}}, "correlation-filter: int32"},
		"corr field":         {amqp.Map{{Key: "correlation-filter", Value: amqp.Map{{Key: "label", Value: int32(1)}}}}, "correlation-filter.label"},
		"corr props":         {amqp.Map{{Key: "correlation-filter", Value: amqp.Map{{Key: "properties", Value: "x"}}}}, "correlation-filter.properties"},
		"corr prop value":    {amqp.Map{{Key: "correlation-filter", Value: amqp.Map{{Key: "properties", Value: amqp.Map{{Key: "k", Value: amqp.Map{}}}}}}}, `"k"`},
		"action not map":     {amqp.Map{{Key: "sql-filter", Value: amqp.Map{{Key: "expression", Value: "1=1"}}}, {Key: "sql-rule-action", Value: "x"}}, "sql-rule-action: string"},
		"action no expr":     {amqp.Map{{Key: "sql-filter", Value: amqp.Map{{Key: "expression", Value: "1=1"}}}, {Key: "sql-rule-action", Value: amqp.Map{}}}, "sql-rule-action.expression: missing"},
		"wrong descriptor":   {amqp.Described{Descriptor: uint64(1), Value: []any{}}, "want a rule description"},
		"short list":         {amqp.Described{Descriptor: descRuleDescription, Value: []any{nil}}, "want a rule description"},
		"filter not desc":    {desc("x", nil), "rule-description.filter"},
		"unknown filter":     {desc(filter(7), nil), "rule-description.filter: described 7"},
		"sql filter expr":    {desc(filter(descSQLFilter, int32(1)), nil), "filter.expression"},
		"corr filter field":  {desc(filter(descCorrelationFilter, nil, int32(1)), nil), "filter.message-id"},
		"corr filter props":  {desc(filter(descCorrelationFilter, nil, nil, nil, nil, nil, nil, nil, nil, "p"), nil), "filter.properties"},
		"corr filter pvalue": {desc(filter(descCorrelationFilter, nil, nil, nil, nil, nil, nil, nil, nil, amqp.Map{{Key: int32(1), Value: "v"}}), nil), "key"},
		"action not desc":    {desc(filter(descTrueFilter), "x"), "rule-description.action"},
		"unknown action":     {desc(filter(descTrueFilter), filter(9)), "rule-description.action: described 9"},
		"sql action expr":    {desc(filter(descTrueFilter), filter(descSQLRuleAction)), "action.expression"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ruleFromAMQP(tt.v, "rule-description")
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
	// Symbols are accepted for strings; a pointer to a described value
	// too.
	rp, err := ruleFromAMQP(amqp.Map{{Key: amqp.Symbol("sql-filter"), Value: amqp.Map{{Key: "expression", Value: amqp.Symbol("1=1")}}}}, "d")
	require.NoError(t, err)
	require.Equal(t, minibus.SQLFilter{Expression: "1=1"}, rp.Filter)
	d := desc(filter(descFalseFilter), filter(descEmptyRuleAction))
	rp, err = ruleFromAMQP(&d, "d")
	require.NoError(t, err)
	require.Equal(t, minibus.RuleProperties{Name: "n", Filter: minibus.FalseFilter{}}, rp)
}
