package server_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/minibus-go/minibus/server"
)

// doc wraps queues and topics (JSON arrays) in a Config.json.
func doc(queues, topics string) string {
	return `{"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": ` + queues +
		`, "Topics": ` + topics + `}], "Logging": {"Type": "Console"}}}`
}

// state describes everything ApplyConfig may change in ns, to check that
// a refused file changed nothing.
func state(t *testing.T, ns *minibus.Namespace) string {
	t.Helper()
	var b strings.Builder
	for _, name := range ns.Queues() {
		q, err := ns.Queue(name)
		require.NoError(t, err)
		fmt.Fprintf(&b, "queue %s %+v\n", name, q.Properties())
	}
	for _, name := range ns.Topics() {
		tp, err := ns.Topic(name)
		require.NoError(t, err)
		fmt.Fprintf(&b, "topic %s %+v\n", name, tp.Properties())
		for _, sname := range tp.Subscriptions() {
			s, err := tp.Subscription(sname)
			require.NoError(t, err)
			fmt.Fprintf(&b, "  subscription %s %+v\n", sname, s.Properties())
			for _, r := range s.Rules() {
				fmt.Fprintf(&b, "    rule %s %#v %#v\n", r.Name, r.Filter, r.Action)
			}
		}
	}
	return b.String()
}

func receiveAll(t *testing.T, sub *minibus.Subscription) []*minibus.ReceivedMessage {
	t.Helper()
	r, err := sub.NewReceiver(&minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
	require.NoError(t, err)
	defer r.Close(context.Background())
	msgs, err := r.ReceiveMessages(context.Background(), 100, &minibus.ReceiveMessagesOptions{NoWait: true})
	require.NoError(t, err)
	return msgs
}

func ids(msgs []*minibus.ReceivedMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.MessageID
	}
	sort.Strings(out)
	return out
}

// The emulator's own sample, with // comments inside a CorrelationFilter,
// plus a subscription with a SQL filter and action: every entity, property
// and rule is created, and messages are routed by the rules (R1–R4).
func TestApplyConfigEmulatorSample(t *testing.T) {
	ns := minibustest.New(t).Namespace()
	config, err := os.ReadFile("testdata/emulator-config.json")
	require.NoError(t, err)
	require.NoError(t, server.ApplyConfig(ns, config))

	require.Equal(t, []string{"queue.1"}, ns.Queues())
	require.Equal(t, []string{"topic.1"}, ns.Topics())
	q, err := ns.Queue("queue.1")
	require.NoError(t, err)
	qp := q.Properties()
	require.Equal(t, time.Minute, qp.LockDuration)
	require.Equal(t, int32(3), qp.MaxDeliveryCount)
	require.Equal(t, time.Hour, qp.DefaultMessageTimeToLive)
	require.Equal(t, 20*time.Second, qp.DuplicateDetectionHistoryTimeWindow)
	require.False(t, qp.RequiresSession)
	require.Empty(t, qp.ForwardTo)

	topic, err := ns.Topic("topic.1")
	require.NoError(t, err)
	require.Equal(t, time.Hour, topic.Properties().DefaultMessageTimeToLive)
	require.Equal(t, []string{"subscription.1", "subscription.2", "subscription.3", "subscription.4"}, topic.Subscriptions())
	rules := map[string][]minibus.Rule{}
	for _, name := range topic.Subscriptions() {
		s, err := topic.Subscription(name)
		require.NoError(t, err)
		require.Equal(t, int32(3), s.Properties().MaxDeliveryCount, name)
		require.Equal(t, time.Hour, s.Properties().DefaultMessageTimeToLive, name)
		rules[name] = s.Rules()
	}
	require.Equal(t, []minibus.Rule{{Name: "app-prop-filter-1",
		Filter: minibus.CorrelationFilter{ContentType: "application/json"}}}, rules["subscription.1"])
	require.Equal(t, []minibus.Rule{{Name: "user-prop-filter-1",
		Filter: minibus.CorrelationFilter{ApplicationProperties: map[string]any{"prop1": "value1"}}}}, rules["subscription.2"])
	require.Equal(t, []minibus.Rule{{Name: "$Default", Filter: minibus.TrueFilter{}}}, rules["subscription.3"])
	require.Equal(t, []minibus.Rule{{Name: "sql-filter-1",
		Filter: minibus.SQLFilter{Expression: "sys.Label = 'urgent' AND priority > 2"},
		Action: minibus.SQLAction{Expression: "SET sys.To = 'oncall'; SET escalated = true"}}}, rules["subscription.4"])

	ctx := context.Background()
	for _, m := range []*minibus.Message{
		{MessageID: "json", ContentType: "application/json"},
		{MessageID: "prop", ApplicationProperties: map[string]any{"prop1": "value1"}},
		{MessageID: "urgent", Subject: "urgent", ApplicationProperties: map[string]any{"priority": int64(3)}},
		{MessageID: "calm", Subject: "urgent", ApplicationProperties: map[string]any{"priority": int64(1)}},
	} {
		require.NoError(t, topic.SendMessage(ctx, m, nil))
	}
	got := map[string][]*minibus.ReceivedMessage{}
	for _, name := range topic.Subscriptions() {
		s, err := topic.Subscription(name)
		require.NoError(t, err)
		got[name] = receiveAll(t, s)
	}
	require.Equal(t, []string{"json"}, ids(got["subscription.1"]))
	require.Equal(t, []string{"prop"}, ids(got["subscription.2"]))
	require.Equal(t, []string{"calm", "json", "prop", "urgent"}, ids(got["subscription.3"]))
	require.Equal(t, []string{"urgent"}, ids(got["subscription.4"]))
	action := got["subscription.4"][0]
	require.Equal(t, "oncall", action.To)
	require.Equal(t, true, action.ApplicationProperties["escalated"])
}

// What editors and hand-written files add to JSON: trailing commas in
// objects and arrays, /* */ comments, a byte order mark, keys in another
// case, nulls, and keys minibus does not know.
func TestApplyConfigLenientJSON(t *testing.T) {
	ns := minibustest.New(t).Namespace()
	config := "\xEF\xBB\xBF" + `{
  /* written by hand */
  "userConfig": {
    "namespaces": [{
      "name": "anything",
      "queues": [
        {"name": "orders", "properties": {"lockDuration": "PT30S", "MaxDeliveryCount": 5, "ForwardTo": null, "RequiresPreprocessing": true,},},
        {"Name": "audit",},
      ],
      // no Topics at all
    },],
    "Logging": {"Type": "Console"},
  },
}`
	require.NoError(t, server.ApplyConfig(ns, []byte(config)))
	require.Equal(t, []string{"audit", "orders"}, ns.Queues())
	q, err := ns.Queue("orders")
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, q.Properties().LockDuration)
	require.Equal(t, int32(5), q.Properties().MaxDeliveryCount)
}

// Beyond the emulator's schema: the properties minibus has and the
// emulator does not, and Azure's "never" duration.
func TestApplyConfigMinibusProperties(t *testing.T) {
	ns := minibustest.New(t).Namespace()
	config := doc(`[
		{"Name": "q", "Properties": {"AutoDeleteOnIdle": "PT10M", "MaxSizeInMegabytes": 2048,
			"MaxMessageSizeInKilobytes": 1024, "Status": "sendDisabled",
			"DefaultMessageTimeToLive": "P10675199DT2H48M5.4775807S"}}]`,
		`[{"Name": "t", "Properties": {"Status": "Disabled", "AutoDeleteOnIdle": "P1D", "RequiresSession": true},
			"Subscriptions": [{"Name": "s", "Properties": {"DeadLetteringOnFilterEvaluationExceptions": true,
				"DuplicateDetectionHistoryTimeWindow": "PT1M", "Status": "ReceiveDisabled"}}]}]`)
	require.NoError(t, server.ApplyConfig(ns, []byte(config)))
	q, err := ns.Queue("q")
	require.NoError(t, err)
	qp := q.Properties()
	require.Equal(t, 10*time.Minute, qp.AutoDeleteOnIdle)
	require.Equal(t, int32(2048), qp.MaxSizeInMegabytes)
	require.Equal(t, int64(1024), qp.MaxMessageSizeInKilobytes)
	require.Equal(t, minibus.EntityStatusSendDisabled, qp.Status)
	require.Zero(t, qp.DefaultMessageTimeToLive, "Azure's TimeSpan.MaxValue is never")
	topic, err := ns.Topic("t")
	require.NoError(t, err)
	require.Equal(t, minibus.EntityStatusDisabled, topic.Properties().Status)
	require.Equal(t, 24*time.Hour, topic.Properties().AutoDeleteOnIdle)
	s, err := topic.Subscription("s")
	require.NoError(t, err)
	require.True(t, s.Properties().DeadLetteringOnFilterEvaluationExceptions)
	require.Equal(t, minibus.EntityStatusReceiveDisabled, s.Properties().Status)
}

// ForwardTo may name an entity that comes later in the file (F1).
func TestApplyConfigForwardToLaterEntity(t *testing.T) {
	env := minibustest.New(t)
	ns := env.Namespace()
	config := doc(`[{"Name": "in", "Properties": {"ForwardTo": "out", "ForwardDeadLetteredMessagesTo": "dead"}},
		{"Name": "out"}, {"Name": "dead"}]`,
		`[{"Name": "t", "Subscriptions": [{"Name": "s", "Properties": {"ForwardTo": "out"}}]}]`)
	require.NoError(t, server.ApplyConfig(ns, []byte(config)))
	in, err := ns.Queue("in")
	require.NoError(t, err)
	require.Equal(t, "out", in.Properties().ForwardTo)
	require.Equal(t, "dead", in.Properties().ForwardDeadLetteredMessagesTo)
	ctx := context.Background()
	require.NoError(t, in.SendMessage(ctx, &minibus.Message{MessageID: "m"}, nil))
	topic, err := ns.Topic("t")
	require.NoError(t, err)
	require.NoError(t, topic.SendMessage(ctx, &minibus.Message{MessageID: "n"}, nil))
	env.WaitIdle()
	out, err := ns.Queue("out")
	require.NoError(t, err)
	require.Equal(t, int64(2), out.RuntimeProperties().ActiveMessageCount)
}

// An entity that exists is updated: the properties the file gives replace
// its own, the others keep their values; a subscription's rules become
// those listed, $Default included (R1).
func TestApplyConfigUpdatesExisting(t *testing.T) {
	ns := minibustest.New(t).Namespace()
	_, err := ns.CreateQueue("orders", &minibus.QueueProperties{LockDuration: 30 * time.Second, MaxDeliveryCount: 5,
		RequiresSession: true, MaxSizeInMegabytes: 2048})
	require.NoError(t, err)
	topic, err := ns.CreateTopic("events", &minibus.TopicProperties{DefaultMessageTimeToLive: time.Hour})
	require.NoError(t, err)
	keep, err := topic.CreateSubscription("keep", &minibus.SubscriptionProperties{MaxDeliveryCount: 4})
	require.NoError(t, err)
	require.NoError(t, keep.CreateRule("extra", &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "a = 1"}}))
	replace, err := topic.CreateSubscription("replace", nil)
	require.NoError(t, err)
	require.NoError(t, replace.CreateRule("old", &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "a = 1"}}))
	require.NoError(t, replace.CreateRule("changed", &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "a = 1"}}))

	config := doc(`[{"Name": "ORDERS", "Properties": {"MaxDeliveryCount": 7}}]`,
		`[{"Name": "events", "Properties": {"DefaultMessageTimeToLive": "PT2H"}, "Subscriptions": [
			{"Name": "keep", "Properties": {"LockDuration": "PT2M"}},
			{"Name": "replace", "Rules": [
				{"Name": "changed", "Properties": {"FilterType": "Sql", "SqlFilter": {"SqlExpression": "a = 2"}}},
				{"Name": "new", "Properties": {"CorrelationFilter": {"Label": "x"}}}]},
			{"Name": "own-default", "Rules": [
				{"Name": "$Default", "Properties": {"SqlFilter": {"SqlExpression": "a = 3"}}}]},
			{"Name": "fresh", "Rules": [
				{"Name": "one", "Properties": {"SqlFilter": {"SqlExpression": "a = 1"}}},
				{"Name": "two", "Properties": {"SqlFilter": {"SqlExpression": "a = 2"}, "Action": {"SqlExpression": "SET b = 1"}}}]}]}]`)
	for range 2 { // applying the same file twice changes nothing more
		require.NoError(t, server.ApplyConfig(ns, []byte(config)))
		require.Equal(t, []string{"orders"}, ns.Queues(), "names keep their first spelling")
		q, err := ns.Queue("orders")
		require.NoError(t, err)
		require.Equal(t, minibus.QueueProperties{LockDuration: 30 * time.Second, MaxDeliveryCount: 7,
			RequiresSession: true, DuplicateDetectionHistoryTimeWindow: 10 * time.Minute, MaxSizeInMegabytes: 2048,
			MaxMessageSizeInKilobytes: 256}, q.Properties())
		require.Equal(t, 2*time.Hour, topic.Properties().DefaultMessageTimeToLive)
		require.Equal(t, 2*time.Minute, keep.Properties().LockDuration)
		require.Equal(t, int32(4), keep.Properties().MaxDeliveryCount)
		require.Equal(t, []minibus.Rule{{Name: "$Default", Filter: minibus.TrueFilter{}}}, keep.Rules(),
			"no Rules listed: $Default alone")
		require.Equal(t, []minibus.Rule{
			{Name: "changed", Filter: minibus.SQLFilter{Expression: "a = 2"}},
			{Name: "new", Filter: minibus.CorrelationFilter{Subject: "x"}},
		}, replace.Rules())
		fresh, err := topic.Subscription("fresh")
		require.NoError(t, err)
		require.Equal(t, []minibus.Rule{
			{Name: "one", Filter: minibus.SQLFilter{Expression: "a = 1"}},
			{Name: "two", Filter: minibus.SQLFilter{Expression: "a = 2"}, Action: minibus.SQLAction{Expression: "SET b = 1"}},
		}, fresh.Rules(), "listed rules replace $Default")
		own, err := topic.Subscription("own-default")
		require.NoError(t, err)
		require.Equal(t, []minibus.Rule{{Name: "$Default", Filter: minibus.SQLFilter{Expression: "a = 3"}}}, own.Rules())
	}
}

// Every kind of bad value is refused with ErrInvalidArgument naming its
// JSON path, and nothing changes: not the entities before it in the file,
// not those that existed.
func TestApplyConfigBadInput(t *testing.T) {
	const q0 = "UserConfig.Namespaces[0].Queues[0]"
	const q2 = "UserConfig.Namespaces[0].Queues[2]"
	const s0 = "UserConfig.Namespaces[0].Topics[0].Subscriptions[0]"
	const r1 = s0 + ".Rules[1]"
	two := `{"Name": "a"}, {"Name": "b"}, `
	queue := func(props string) string { return doc(`[`+two+`{"Name": "c", "Properties": {`+props+`}}]`, `[]`) }
	sub := func(props string) string {
		return doc(`[{"Name": "a"}]`, `[{"Name": "t", "Subscriptions": [{"Name": "s", "Properties": {`+props+`}}]}]`)
	}
	rule := func(props string) string {
		return doc(`[]`, `[{"Name": "t", "Subscriptions": [{"Name": "s", "Rules": [
			{"Name": "ok", "Properties": {"SqlFilter": {"SqlExpression": "1=1"}}},
			{"Name": "r", "Properties": {`+props+`}}]}]}]`)
	}
	cases := []struct {
		name, config, path, text string
	}{
		{"duration syntax", queue(`"LockDuration": "PT1X"`), q2 + ".Properties.LockDuration", `"PT1X" is not an ISO 8601 duration`},
		{"duration number", queue(`"LockDuration": 60`), q2 + ".Properties.LockDuration", `60 is not an ISO 8601 duration string`},
		{"duration zero", queue(`"DefaultMessageTimeToLive": "PT0S"`), q2 + ".Properties.DefaultMessageTimeToLive", `"PT0S" is zero`},
		{"duration too long", queue(`"LockDuration": "P300Y"`), q2 + ".Properties.LockDuration", `"P300Y" is longer than 292 years`},
		{"lock below minibus range", queue(`"LockDuration": "PT1S"`), q2 + ".Properties.LockDuration", `LockDuration 1s is outside 5s..5m`},
		{"duplicate window below range", queue(`"DuplicateDetectionHistoryTimeWindow": "PT4S"`), q2 + ".Properties.DuplicateDetectionHistoryTimeWindow", `DuplicateDetectionHistoryTimeWindow 4s is outside 20s..168h0m0s`},
		{"auto-delete below range", queue(`"AutoDeleteOnIdle": "PT1M"`), q2 + ".Properties.AutoDeleteOnIdle", `AutoDeleteOnIdle 1m0s is less than 5m0s`},
		{"count zero", queue(`"MaxDeliveryCount": 0`), q2 + ".Properties.MaxDeliveryCount", `0 is less than 1`},
		{"count negative", queue(`"MaxDeliveryCount": -3`), q2 + ".Properties.MaxDeliveryCount", `-3 is less than 1`},
		{"count fraction", queue(`"MaxDeliveryCount": 1.5`), q2 + ".Properties.MaxDeliveryCount", `1.5 is not a whole number of 32 bits`},
		{"count too big", queue(`"MaxDeliveryCount": 3000000000`), q2 + ".Properties.MaxDeliveryCount", `3000000000 is not a whole number of 32 bits`},
		{"count string", queue(`"MaxDeliveryCount": "3"`), q2 + ".Properties.MaxDeliveryCount", `"3" is not a number`},
		{"size out of range", queue(`"MaxSizeInMegabytes": 100000`), q2 + ".Properties.MaxSizeInMegabytes", `MaxSizeInMegabytes 100000 is outside 1..81920`},
		{"bool string", queue(`"RequiresSession": "true"`), q2 + ".Properties.RequiresSession", `"true" is not true or false`},
		{"bool number", queue(`"DeadLetteringOnMessageExpiration": 1`), q2 + ".Properties.DeadLetteringOnMessageExpiration", `1 is not true or false`},
		{"forward not a string", queue(`"ForwardTo": 5`), q2 + ".Properties.ForwardTo", `5 is not a string`},
		{"forward to nothing", queue(`"ForwardTo": "nowhere"`), q2 + ".Properties.ForwardTo", `queue "c": ForwardTo "nowhere": no queue or topic of that name`},
		{"forward to itself", queue(`"ForwardDeadLetteredMessagesTo": "C"`), q2 + ".Properties.ForwardDeadLetteredMessagesTo", `ForwardDeadLetteredMessagesTo names the entity itself`},
		{"session forwards", queue(`"RequiresSession": true, "ForwardTo": "a"`), q2 + ".Properties.ForwardTo", `an entity that requires sessions cannot forward`},
		{"status", queue(`"Status": "Paused"`), q2 + ".Properties.Status", `"Paused" is not Active, Disabled, SendDisabled or ReceiveDisabled`},
		{"properties not an object", doc(`[{"Name": "a", "Properties": []}]`, `[]`), q0 + ".Properties", `an array is not an object`},
		{"session change", doc(`[{"Name": "existing", "Properties": {"RequiresSession": false}}]`, `[]`), q0 + ".Properties.RequiresSession", `RequiresSession cannot change after creation`},
		{"subscription session change", doc(`[]`, `[{"Name": "existingtopic", "Subscriptions": [{"Name": "S", "Properties": {"RequiresSession": true}}]}]`),
			s0 + ".Properties.RequiresSession", `RequiresSession cannot change after creation`},
		{"subscription lock", sub(`"LockDuration": "PT10M"`), s0 + ".Properties.LockDuration", `LockDuration 10m0s is outside 5s..5m`},
		{"subscription forward", sub(`"ForwardTo": "b"`), s0 + ".Properties.ForwardTo", `ForwardTo "b": no queue or topic of that name`},

		{"name missing", doc(`[`+two+`{"Properties": {}}]`, `[]`), q2 + ".Name", `missing`},
		{"name not a string", doc(`[`+two+`{"Name": 3}]`, `[]`), q2 + ".Name", `3 is not a string`},
		{"name bad character", doc(`[`+two+`{"Name": "a b"}]`, `[]`), q2 + ".Name", `queue name "a b": character ' ' at 1 is not allowed`},
		{"name repeated", doc(`[`+two+`{"Name": "A"}]`, `[]`), q2 + ".Name", `"A" is also the name at UserConfig.Namespaces[0].Queues[0].Name`},
		{"queue and topic share names", doc(`[{"Name": "x"}]`, `[{"Name": "X"}]`), "UserConfig.Namespaces[0].Topics[0].Name", `"X" is also the name at ` + q0 + ".Name"},
		{"name of an existing topic", doc(`[{"Name": "existingTopic"}]`, `[]`), q0 + ".Name", `queue "existingTopic": the name is taken by topic "existingTopic"`},
		{"subscription name", doc(`[]`, `[{"Name": "t", "Subscriptions": [{"Name": "a/b"}]}]`), s0 + ".Name",
			`subscription name "a/b": character '/' at 1 is not allowed`},
		{"subscription repeated", doc(`[]`, `[{"Name": "t", "Subscriptions": [{"Name": "s"}, {"Name": "S"}]}]`),
			"UserConfig.Namespaces[0].Topics[0].Subscriptions[1].Name", `"S" is also the name at ` + s0 + ".Name"},
		{"subscriptions not an array", doc(`[]`, `[{"Name": "t", "Subscriptions": {}}]`), "UserConfig.Namespaces[0].Topics[0].Subscriptions", `an object is not an array`},
		{"queue not an object", doc(`[`+two+`"c"]`, `[]`), q2, `"c" is not an object`},

		{"filter type", rule(`"FilterType": "Regex"`), r1 + ".Properties.FilterType", `"Regex" is not Correlation or Sql`},
		{"filter type number", rule(`"FilterType": 1`), r1 + ".Properties.FilterType", `1 is not a string`},
		{"filter missing", rule(`"FilterType": "Sql"`), r1 + ".Properties.SqlFilter", `missing for FilterType Sql`},
		{"filter unclear", rule(``), r1 + ".Properties.FilterType", `missing, and the filter is not clear without it`},
		{"sql expression missing", rule(`"SqlFilter": {}`), r1 + ".Properties.SqlFilter.SqlExpression", `missing`},
		{"bad sql", rule(`"SqlFilter": {"SqlExpression": "a = = 1"}`), r1 + ".Properties.SqlFilter.SqlExpression", `subscription "t/Subscriptions/s": rule "r": SQL filter: syntax error at offset 4`},
		{"bad action", rule(`"SqlFilter": {"SqlExpression": "1=1"}, "Action": {"SqlExpression": "SET"}`), r1 + ".Properties.Action.SqlExpression", `rule "r": SQL action: syntax error at offset 3`},
		{"action not an object", rule(`"SqlFilter": {"SqlExpression": "1=1"}, "Action": "SET a = 1"`), r1 + ".Properties.Action", `"SET a = 1" is not an object`},
		{"empty correlation", rule(`"FilterType": "Correlation", "CorrelationFilter": {}`), r1 + ".Properties.CorrelationFilter", `rule "r": correlation filter: it sets no field`},
		{"correlation field", rule(`"CorrelationFilter": {"To": 5}`), r1 + ".Properties.CorrelationFilter.To", `5 is not a string`},
		{"correlation label and subject", rule(`"CorrelationFilter": {"Label": "a", "Subject": "b"}`), r1 + ".Properties.CorrelationFilter.Subject", `"b" differs from the Label given beside it, "a"`},
		{"correlation property", rule(`"CorrelationFilter": {"Properties": {"a": 1, "b c": [1]}}`), r1 + `.Properties.CorrelationFilter.Properties["b c"]`, `an array is not a string, number or boolean`},
		{"rule name", strings.Replace(rule(`"SqlFilter": {"SqlExpression": "1=1"}`), `"Name": "r"`, `"Name": "r/1"`, 1), r1 + ".Name",
			`rule name "r/1": character '/' at 1 is not allowed`},
		{"rule properties missing", doc(`[]`, `[{"Name": "t", "Subscriptions": [{"Name": "s", "Rules": [{"Name": "r"}]}]}]`), s0 + ".Rules[0].Properties", `missing`},
		{"rule repeated", doc(`[]`, `[{"Name": "t", "Subscriptions": [{"Name": "s", "Rules": [
			{"Name": "r", "Properties": {"SqlFilter": {"SqlExpression": "1=1"}}},
			{"Name": "R", "Properties": {"SqlFilter": {"SqlExpression": "1=1"}}}]}]}]`), r1 + ".Name", `"R" is also the name at ` + s0 + ".Rules[0].Name"},

		{"no namespace", `{"UserConfig": {"Namespaces": []}}`, "UserConfig.Namespaces", `holds 0 namespaces: minibus serves exactly one`},
		{"two namespaces", `{"UserConfig": {"Namespaces": [{}, {}]}}`, "UserConfig.Namespaces", `holds 2 namespaces: minibus serves exactly one`},
		{"namespaces missing", `{"UserConfig": {}}`, "UserConfig.Namespaces", `missing`},
		{"user config missing", `{"Namespaces": []}`, "UserConfig", `missing`},
		{"not an object", `[]`, "", `an array is not an object`},
		{"syntax", "{\"UserConfig\": {\n  \"Namespaces\": [}}", "line 2, column 18", `invalid character '}'`},
		{"truncated", `{"UserConfig": {`, "line 1, column 17", `the document ends too early`},
		{"trailing data", `{} {}`, "line 1, column 4", `more data after the top-level value`},
		{"open comment", `{} /* `, "line 1, column 4", `the /* comment is not closed`},
		{"empty", ``, "line 1, column 1", `the document ends too early`},
		{"nested too deep", `{"UserConfig": {"Logging": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}`,
			"UserConfig.Logging" + strings.Repeat("[0]", 63), `nested more than 64 deep`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := minibustest.New(t).Namespace()
			_, err := ns.CreateQueue("existing", &minibus.QueueProperties{RequiresSession: true})
			require.NoError(t, err)
			topic, err := ns.CreateTopic("existingTopic", nil)
			require.NoError(t, err)
			_, err = topic.CreateSubscription("s", nil)
			require.NoError(t, err)
			before := state(t, ns)

			err = server.ApplyConfig(ns, []byte(tc.config))
			require.ErrorIs(t, err, minibus.ErrInvalidArgument)
			prefix := "minibus: config: "
			if tc.path != "" {
				prefix += tc.path + ": "
			}
			require.True(t, strings.HasPrefix(err.Error(), prefix), "%q does not start with %q", err, prefix)
			require.Contains(t, err.Error(), tc.text)
			require.True(t, strings.HasSuffix(err.Error(), ": invalid argument"), err.Error())
			require.Equal(t, before, state(t, ns), "a refused file changes nothing")
		})
	}
}

// The error reads as the documentation shows it.
func TestApplyConfigErrorText(t *testing.T) {
	ns := minibustest.New(t).Namespace()
	err := server.ApplyConfig(ns, []byte(doc(`[{"Name": "a"}, {"Name": "b"}, {"Name": "c", "Properties": {"LockDuration": "PT1X"}}]`, `[]`)))
	require.EqualError(t, err, `minibus: config: UserConfig.Namespaces[0].Queues[2].Properties.LockDuration: "PT1X" is not an ISO 8601 duration: invalid argument`)
	require.Empty(t, ns.Queues())

	require.ErrorIs(t, server.ApplyConfig(nil, []byte(`{}`)), minibus.ErrInvalidArgument)
}

// A namespace that closed is reported with ErrClosed, not as a bad file.
func TestApplyConfigClosedNamespace(t *testing.T) {
	ns := minibus.NewNamespace()
	require.NoError(t, ns.Close())
	err := server.ApplyConfig(ns, []byte(doc(`[{"Name": "a"}]`, `[]`)))
	require.ErrorIs(t, err, minibus.ErrClosed)
	require.NotErrorIs(t, err, minibus.ErrInvalidArgument)
	require.Contains(t, err.Error(), "UserConfig.Namespaces[0].Queues[0]")
}

// TestApplyConfigRaisesTheEmulatorsShortDuplicateWindow: the emulator
// allows a duplicate-detection window from PT5S, minibus from 20 s; an
// emulator's file loads with the window raised to 20 s.
func TestApplyConfigRaisesTheEmulatorsShortDuplicateWindow(t *testing.T) {
	ns := minibus.NewNamespace()
	defer ns.Close()
	require.NoError(t, server.ApplyConfig(ns, []byte(`{"UserConfig":{"Namespaces":[{"Name":"sbemulatorns","Queues":[
		{"Name":"q","Properties":{"RequiresDuplicateDetection":true,"DuplicateDetectionHistoryTimeWindow":"PT5S"}}],"Topics":[]}],"Logging":{"Type":"File"}}}`)))
	q, err := ns.Queue("q")
	require.NoError(t, err)
	require.Equal(t, 20*time.Second, q.Properties().DuplicateDetectionHistoryTimeWindow)
}
