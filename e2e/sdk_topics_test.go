package e2e_test

// Topics and subscriptions through azservicebus, with rules created
// through minibus's API (the SDK's admin client needs HTTPS ATOM): SQL
// and correlation filters, SQL actions, fan-out (SEMANTICS R1–R4, Q2).

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
)

// subWithRules creates a subscription whose only rules are the given ones.
func (e *sdkEnv) subWithRules(tp *minibus.Topic, name string, rules ...minibus.RuleProperties) {
	e.t.Helper()
	first := rules[0]
	sub, err := tp.CreateSubscription(name, &minibus.SubscriptionProperties{DefaultRule: &first})
	require.NoError(e.t, err)
	for _, r := range rules[1:] {
		require.NoError(e.t, sub.CreateRule(r.Name, &r))
	}
}

// TestSDKTopic_Filters_R1_R3_R4 sends through the SDK to a topic whose
// subscriptions filter by SQL (on application properties of the SDK's
// types and on sys. properties) and by correlation: each subscription gets
// exactly the messages its rules match, each copy with the topic's
// sequence number (Q2); a message no rule matches is dropped (R1).
func TestSDKTopic_Filters_R1_R3_R4(t *testing.T) {
	e := newSDKEnv(t)
	tp := e.topic("orders", "all")
	e.subWithRules(tp, "big-eu", minibus.RuleProperties{Name: "big", Filter: minibus.SQLFilter{
		Expression: "amount >= @min AND region = 'eu' AND sys.Subject LIKE 'order%'",
		Parameters: map[string]any{"@min": int64(100)},
	}})
	e.subWithRules(tp, "corr", minibus.RuleProperties{Name: "c", Filter: minibus.CorrelationFilter{
		CorrelationID: "c-1", ApplicationProperties: map[string]any{"priority": "high"},
	}})
	e.subWithRules(tp, "none", minibus.RuleProperties{Name: "f", Filter: minibus.FalseFilter{}})
	s := e.sender("orders")
	ctx := e.ctx(sdkTimeout)
	send := func(subject string, corr string, props map[string]any) {
		m := &azservicebus.Message{Body: []byte(subject), Subject: sdkPtr(subject), ApplicationProperties: props}
		if corr != "" {
			m.CorrelationID = sdkPtr(corr)
		}
		require.NoError(t, s.SendMessage(ctx, m, nil))
	}
	send("order-1", "", map[string]any{"amount": 150, "region": "eu"})                               // big-eu (int -> long)
	send("order-2", "", map[string]any{"amount": 99.5, "region": "eu"})                              // numeric promotion: not >= 100
	send("order-3", "c-1", map[string]any{"amount": int32(500), "region": "us", "priority": "high"}) // corr
	send("refund-4", "", map[string]any{"amount": int64(1000), "region": "eu"})                      // subject does not match
	send("order-5", "c-1", map[string]any{"priority": "low"})                                        // nothing but all
	send("order-6", "", map[string]any{"region": "eu"})                                              // amount NULL: unknown (R3)

	all := e.receiveN(e.subReceiver("orders", "all", nil), 6)
	require.Equal(t, []string{"order-1", "order-2", "order-3", "refund-4", "order-5", "order-6"}, bodies(all))
	bigEU := e.receiveN(e.subReceiver("orders", "big-eu", nil), 1)
	require.Equal(t, []string{"order-1"}, bodies(bigEU))
	require.Equal(t, *all[0].SequenceNumber, *bigEU[0].SequenceNumber, "Q2")
	corr := e.receiveN(e.subReceiver("orders", "corr", nil), 1)
	require.Equal(t, []string{"order-3"}, bodies(corr))
	require.Equal(t, int64(1), e.subCounts("orders", "big-eu").ActiveMessageCount)
	require.Equal(t, int64(1), e.subCounts("orders", "corr").ActiveMessageCount)
	require.Zero(t, e.subCounts("orders", "none").TotalMessageCount)
	e.receiveNone(e.subReceiver("orders", "big-eu", nil))
}

// TestSDKTopic_SQLAction_R2 gives a subscription two matching rules with
// actions and one without: three copies (R2), each action's SET and REMOVE
// visible in the copy the SDK receives, with the Go types the wire gives.
func TestSDKTopic_SQLAction_R2(t *testing.T) {
	e := newSDKEnv(t)
	tp := e.topic("events")
	e.subWithRules(tp, "s",
		minibus.RuleProperties{Name: "plain", Filter: minibus.SQLFilter{Expression: "kind = 'x'"}},
		minibus.RuleProperties{Name: "tag", Filter: minibus.SQLFilter{Expression: "kind = 'x'"},
			Action: minibus.SQLAction{Expression: "SET tagged = 'yes'; SET n = n + 1; REMOVE drop"}},
		minibus.RuleProperties{Name: "subj", Filter: minibus.TrueFilter{},
			Action: minibus.SQLAction{Expression: "SET sys.Subject = 'rewritten'"}},
	)
	s := e.sender("events")
	require.NoError(t, s.SendMessage(e.ctx(sdkTimeout), &azservicebus.Message{
		Body: []byte("b"), Subject: sdkPtr("orig"),
		ApplicationProperties: map[string]any{"kind": "x", "n": int64(41), "drop": true},
	}, nil))
	got := e.receiveN(e.subReceiver("events", "s", nil), 3)
	var plain, tagged, subj *azservicebus.ReceivedMessage
	for _, m := range got {
		switch {
		case m.ApplicationProperties["tagged"] == "yes":
			tagged = m
		case *m.Subject == "rewritten":
			subj = m
		default:
			plain = m
		}
	}
	require.NotNil(t, plain)
	require.NotNil(t, tagged)
	require.NotNil(t, subj)
	require.Equal(t, map[string]any{"kind": "x", "n": int64(41), "drop": true}, plain.ApplicationProperties)
	require.Equal(t, "orig", *plain.Subject)
	require.Equal(t, map[string]any{"kind": "x", "n": int64(42), "tagged": "yes", "RuleName": "tag"}, tagged.ApplicationProperties,
		"R2: a copy made by an action names its rule")
	require.Equal(t, "rewritten", *subj.Subject)
	require.Equal(t, "subj", subj.ApplicationProperties["RuleName"])
	require.Equal(t, int64(3), e.subCounts("events", "s").ActiveMessageCount)
}

// TestSDKTopic_FanOutBatch_R1 sends a batch to a topic: every
// subscription gets its own independent copy of each message (own lock,
// delivery count and dead-letter queue, R1).
func TestSDKTopic_FanOutBatch_R1(t *testing.T) {
	e := newSDKEnv(t)
	e.topic("events", "a", "b")
	s := e.sender("events")
	ctx := e.ctx(sdkTimeout)
	batch, err := s.NewMessageBatch(ctx, nil)
	require.NoError(t, err)
	for _, b := range []string{"1", "2", "3"} {
		require.NoError(t, batch.AddMessage(&azservicebus.Message{Body: []byte(b)}, nil))
	}
	require.NoError(t, s.SendMessageBatch(ctx, batch, nil))
	ra, rb := e.subReceiver("events", "a", nil), e.subReceiver("events", "b", nil)
	ga, gb := e.receiveN(ra, 3), e.receiveN(rb, 3)
	require.Equal(t, []string{"1", "2", "3"}, bodies(ga))
	require.Equal(t, []string{"1", "2", "3"}, bodies(gb))
	require.NoError(t, ra.DeadLetterMessage(ctx, ga[0], nil))
	require.NoError(t, ra.AbandonMessage(ctx, ga[1], nil))
	for _, m := range gb {
		require.NoError(t, rb.CompleteMessage(ctx, m, nil))
	}
	ca := e.subCounts("events", "a")
	require.Equal(t, int64(2), ca.ActiveMessageCount)
	require.Equal(t, int64(1), ca.DeadLetterMessageCount)
	require.Zero(t, e.subCounts("events", "b").TotalMessageCount, "b's copies were settled on their own")
	again := e.receiveN(ra, 1)[0]
	require.Equal(t, "2", string(again.Body))
	require.Equal(t, uint32(2), again.DeliveryCount)
}
