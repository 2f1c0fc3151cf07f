package minibus_test

import (
	"strings"
	"testing"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// R1: a message no subscription matches is accepted and dropped, as is one
// sent to a topic without subscriptions; a subscription with no rules
// matches nothing.
func TestR1_NoMatchIsDropped(t *testing.T) {
	e := newEnv(t)
	empty := e.topic("empty", nil)
	e.send(empty, "lost")
	top := e.topic("t", nil)
	s := e.subscription(top, "s", nil)
	require.NoError(t, s.DeleteRule("$Default"))
	require.Empty(t, s.Rules())
	e.send(top, "a")
	require.Zero(t, s.RuntimeProperties().TotalMessageCount)
	require.Zero(t, top.RuntimeProperties().SizeInBytes)
	require.NoError(t, s.CreateRule("all", nil))
	e.send(top, "b")
	require.Equal(t, []string{"b"}, bodies(e.receiveAll(e.receiver(s, nil), 10)))
}

// R2: matching rules without an action give one copy together; each
// matching rule with an action gives its own, changed copy. Five matching
// rules, two with actions: three copies.
func TestR2_RuleActionCopies(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	s := e.subscription(top, "s", nil) // $Default: TrueFilter
	require.NoError(t, s.CreateRule("big", &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "qty > 10"}}))
	require.NoError(t, s.CreateRule("corr", &minibus.RuleProperties{Filter: minibus.CorrelationFilter{Subject: "order"}}))
	require.NoError(t, s.CreateRule("halve", &minibus.RuleProperties{
		Filter: minibus.SQLFilter{Expression: "qty > 10"},
		Action: minibus.SQLAction{Expression: "SET qty = qty / 2; SET sys.Label = 'half'; REMOVE note"},
	}))
	require.NoError(t, s.CreateRule("tag", &minibus.RuleProperties{
		Filter: minibus.TrueFilter{},
		Action: minibus.SQLAction{Expression: "SET tagged = @v", Parameters: map[string]any{"@v": true}},
	}))
	require.NoError(t, s.CreateRule("never", &minibus.RuleProperties{
		Filter: minibus.FalseFilter{},
		Action: minibus.SQLAction{Expression: "SET never = 1"},
	}))
	require.Equal(t, []string{"$Default", "big", "corr", "halve", "never", "tag"}, ruleNames(s.Rules()))

	require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{
		Subject: "order", ApplicationProperties: map[string]any{"qty": 20, "note": "x"},
	}, nil))
	got := e.receive(e.receiver(s, nil), 3)
	for _, m := range got {
		require.EqualValues(t, 1, m.SequenceNumber, "every copy has the topic's number")
	}
	require.Equal(t, "order", got[0].Subject)
	require.Equal(t, map[string]any{"qty": 20, "note": "x"}, got[0].ApplicationProperties)
	require.Equal(t, "half", got[1].Subject)
	// SET keeps the property's Go type (int), and the copy names its rule.
	require.Equal(t, map[string]any{"qty": 10, "RuleName": "halve"}, got[1].ApplicationProperties)
	require.Equal(t, "order", got[2].Subject)
	require.Equal(t, map[string]any{"qty": 20, "note": "x", "tagged": true, "RuleName": "tag"}, got[2].ApplicationProperties)
	require.EqualValues(t, 3, s.RuntimeProperties().ActiveMessageCount)
}

// R3: SQL filters over system and user properties, with parameters; a bad
// expression is ErrInvalidArgument when the rule is created, saying where.
func TestR3_SQLFilterRules(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	s := e.subscription(top, "s", &minibus.SubscriptionProperties{DefaultRule: &minibus.RuleProperties{
		Name: "typical",
		Filter: minibus.SQLFilter{
			Expression: "amount > @min AND region IN ('eu','us') AND sys.Label LIKE 'order%' AND [my prop] IS NULL",
			Parameters: map[string]any{"@min": 100},
		},
	}})
	require.Equal(t, "typical", s.Rules()[0].Name)
	send := func(subject string, props map[string]any) {
		require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{Body: []byte(subject), Subject: subject, ApplicationProperties: props}, nil))
	}
	send("order-1", map[string]any{"amount": 150, "region": "eu"})
	send("order-2", map[string]any{"amount": 99.5, "region": "eu"})
	send("order-3", map[string]any{"AMOUNT": 101.5, "Region": "us"}) // names are case-insensitive
	send("invoice", map[string]any{"amount": 150, "region": "eu"})
	send("order-4", map[string]any{"region": "eu"}) // amount missing: unknown
	send("order-5", map[string]any{"amount": 150, "region": "EU"})
	send("order-6", map[string]any{"amount": 150, "region": "eu", "my prop": 1})
	require.Equal(t, []string{"order-1", "order-3"}, bodies(e.receiveAll(e.receiver(s, nil), 10)))

	for expr, where := range map[string]string{
		"amount >":             "offset 8",
		"amount > 1 AND":       "offset 14",
		"sys.Nope = 1":         `"Nope"`,
		"nofunc(1) = 1":        "nofunc",
		"region = 'unclosed":   "offset 9",
		"x = @missing":         "@missing",
		strings.Repeat("(", 5): "offset",
	} {
		err := s.CreateRule("bad", &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: expr}})
		requireSentinel(t, err, minibus.ErrInvalidArgument, where)
		require.Contains(t, err.Error(), `rule "bad"`)
	}
	err := s.CreateRule("bad", &minibus.RuleProperties{Action: minibus.SQLAction{Expression: "SET sys.SequenceNumber = 1"}})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "SequenceNumber")
	require.Len(t, s.Rules(), 1, "no bad rule was added")
}

// R3: a missing SQL parameter is ErrInvalidArgument naming the parameter,
// not a syntax error.
func TestR3_MissingParameterIsNotASyntaxError(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	s := e.subscription(top, "s", nil)
	filter := minibus.SQLFilter{Expression: "a = @p"}
	errRule := s.CreateRule("r", &minibus.RuleProperties{Filter: filter})
	_, errSub := top.CreateSubscription("s2", &minibus.SubscriptionProperties{DefaultRule: &minibus.RuleProperties{Filter: filter}})
	for _, err := range []error{errRule, errSub} {
		requireSentinel(t, err, minibus.ErrInvalidArgument, "@p")
		require.False(t, strings.Contains(strings.ToLower(err.Error()), "syntax"), "a missing parameter is not a syntax error: %v", err)
	}
	require.Len(t, s.Rules(), 1, "nothing created")
	require.Equal(t, []string{"s"}, top.Subscriptions())
}

// R3, R5: an error in a filter or an action says which it was once ("SQL
// filter:", "SQL action:"), then where: no package name of minibus's
// internals stutters in the text.
func TestR3_FilterErrorTexts(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	s := e.subscription(top, "s", &minibus.SubscriptionProperties{DeadLetteringOnFilterEvaluationExceptions: true})
	err := s.CreateRule("r", &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "a = = 1"}})
	require.EqualError(t, err, `minibus: subscription "t/Subscriptions/s": rule "r": SQL filter: syntax error at offset 4 near "=": expected a value, found "=": invalid argument`)
	err = s.CreateRule("r", &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "a = @p"}})
	require.EqualError(t, err, `minibus: subscription "t/Subscriptions/s": rule "r": SQL filter: parameter @p at offset 4: not given: invalid argument`)
	err = s.CreateRule("r", &minibus.RuleProperties{Action: minibus.SQLAction{Expression: "SET"}})
	require.EqualError(t, err, `minibus: subscription "t/Subscriptions/s": rule "r": SQL action: syntax error at offset 3: expected a property name, found end of expression: invalid argument`)

	require.NoError(t, s.DeleteRule("$Default"))
	require.NoError(t, s.CreateRule("big", &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "amount > 100"}}))
	require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{ApplicationProperties: map[string]any{"amount": "lots"}}, nil))
	d := e.receive(e.receiver(s, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
	require.Equal(t, `rule "big": evaluation error at offset 7 near ">": cannot compare string with int64`, d.DeadLetterErrorDescription)
}

// R4: a correlation filter matches when every field it sets equals the
// message's: strings exactly, properties by value.
func TestR4_CorrelationFilter(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	s := e.subscription(top, "s", &minibus.SubscriptionProperties{DefaultRule: &minibus.RuleProperties{
		Filter: &minibus.CorrelationFilter{ // by pointer, as the Azure SDK passes it
			Subject: "order", ContentType: "application/json",
			ApplicationProperties: map[string]any{"priority": int64(1), "region": "eu"},
		},
	}})
	for i, m := range []*minibus.Message{
		{MessageID: "yes-int", Subject: "order", ContentType: "application/json", ApplicationProperties: map[string]any{"priority": 1, "region": "eu"}},
		{MessageID: "yes-float", Subject: "order", ContentType: "application/json", ApplicationProperties: map[string]any{"Priority": 1.0, "region": "eu", "x": 1}},
		{MessageID: "no-case", Subject: "Order", ContentType: "application/json", ApplicationProperties: map[string]any{"priority": 1, "region": "eu"}},
		{MessageID: "no-value", Subject: "order", ContentType: "application/json", ApplicationProperties: map[string]any{"priority": 2, "region": "eu"}},
		{MessageID: "no-type", Subject: "order", ContentType: "application/json", ApplicationProperties: map[string]any{"priority": "1", "region": "eu"}},
		{MessageID: "no-missing", Subject: "order", ContentType: "application/json", ApplicationProperties: map[string]any{"priority": 1}},
		{MessageID: "no-subject", ContentType: "application/json", ApplicationProperties: map[string]any{"priority": 1, "region": "eu"}},
	} {
		require.NoError(t, top.SendMessage(e.ctx, m, nil), i)
	}
	var ids []string
	for _, m := range e.receiveAll(e.receiver(s, nil), 10) {
		ids = append(ids, m.MessageID)
	}
	require.Equal(t, []string{"yes-int", "yes-float"}, ids)
	err := s.CreateRule("empty", &minibus.RuleProperties{Filter: minibus.CorrelationFilter{}})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "sets no field")
}

// R5: a filter that fails at evaluation (a type error) does not match; with
// DeadLetteringOnFilterEvaluationExceptions the copy goes to the
// dead-letter queue. No message is lost or duplicated.
func TestR5_FilterEvaluationErrors(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	rule := &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "amount > 100"}}
	quiet := e.subscription(top, "quiet", &minibus.SubscriptionProperties{DefaultRule: rule})
	loud := e.subscription(top, "loud", &minibus.SubscriptionProperties{DefaultRule: rule, DeadLetteringOnFilterEvaluationExceptions: true})
	require.NoError(t, top.SendMessages(e.ctx, []*minibus.Message{
		{Body: []byte("text"), ApplicationProperties: map[string]any{"amount": "lots"}},
		{Body: []byte("big"), ApplicationProperties: map[string]any{"amount": 500}},
	}, nil))
	require.EqualValues(t, 1, quiet.RuntimeProperties().TotalMessageCount)
	rp := loud.RuntimeProperties()
	require.EqualValues(t, 1, rp.ActiveMessageCount)
	require.EqualValues(t, 1, rp.DeadLetterMessageCount)
	d := e.receive(e.receiver(loud, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
	require.Equal(t, "text", string(d.Body))
	require.Equal(t, "FilterEvaluationException", d.DeadLetterReason)
	require.Contains(t, d.DeadLetterErrorDescription, `rule "$Default"`)
	require.EqualValues(t, 1, d.SequenceNumber)
}
