package minibus_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// R1, Q2: every matching subscription gets its own copy carrying the topic's
// sequence number; copies are independent.
func TestR1_Q2_FanOut(t *testing.T) {
	e := newEnv(t)
	top := e.topic("orders", nil)
	all := e.subscription(top, "all", nil)
	eu := e.subscription(top, "eu", &minibus.SubscriptionProperties{DefaultRule: &minibus.RuleProperties{
		Filter: minibus.SQLFilter{Expression: "region = 'eu'"},
	}})
	require.NoError(t, top.SendMessages(e.ctx, []*minibus.Message{
		{Body: []byte("1"), ApplicationProperties: map[string]any{"region": "eu"}},
		{Body: []byte("2"), ApplicationProperties: map[string]any{"region": "us"}},
	}, nil))

	ra := e.receiver(all, nil)
	re := e.receiver(eu, nil)
	gotAll := e.receive(ra, 2)
	gotEU := e.receive(re, 1)
	require.Equal(t, []int64{1, 2}, seqs(gotAll))
	require.Equal(t, []int64{1}, seqs(gotEU), "the topic's number (Q2)")
	require.NoError(t, ra.CompleteMessage(e.ctx, gotAll[0], nil))
	require.NoError(t, re.AbandonMessage(e.ctx, gotEU[0], nil))
	again := e.receive(re, 1)[0]
	require.EqualValues(t, 2, again.DeliveryCount, "its own delivery count")
	require.EqualValues(t, 1, all.RuntimeProperties().ActiveMessageCount)
	require.EqualValues(t, 1, eu.RuntimeProperties().ActiveMessageCount)
	gotAll[1].Body[0] = 'X'
	require.Equal(t, "2", string(e.peekAll(ra)[0].Body), "copies share nothing with callers")
}

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

func ruleNames(rules []minibus.Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.Name
	}
	return out
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

// S5, S4, Q1: a scheduled message waits in the topic (counted there, not
// peekable in subscriptions) and fans out at activation with a new number,
// under the rules of that time.
func TestS5_ScheduledInTopic(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	s := e.subscription(top, "s", nil)
	scheduled, err := top.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("later")}}, at(time.Minute), nil)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, scheduled)
	require.EqualValues(t, 1, top.RuntimeProperties().ScheduledMessageCount)
	r := e.receiver(s, nil)
	require.Empty(t, e.peekAll(r), "scheduled messages stay in the topic")
	require.NoError(t, s.CreateRule("late", &minibus.RuleProperties{Action: minibus.SQLAction{Expression: "SET late = 1"}}))
	e.mock.Add(time.Minute)
	got := e.receive(r, 2)
	require.Equal(t, []int64{2, 2}, seqs(got))
	require.True(t, got[0].EnqueuedTime.Equal(at(time.Minute)))
	require.Equal(t, int64(1), got[1].ApplicationProperties["late"], "the rule added after scheduling applies")
	require.Zero(t, top.RuntimeProperties().ScheduledMessageCount)

	scheduled, err = top.ScheduleMessages(e.ctx, []*minibus.Message{{}}, at(2*time.Minute), nil)
	require.NoError(t, err)
	require.NoError(t, top.CancelScheduledMessages(e.ctx, scheduled, nil))
	requireSentinel(t, top.CancelScheduledMessages(e.ctx, scheduled, nil), minibus.ErrMessageNotFound, "sequence number 3")
}

// E1: the topic's DefaultMessageTimeToLive caps a subscription's.
func TestE1_TopicTTLCapsSubscription(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", &minibus.TopicProperties{DefaultMessageTimeToLive: time.Minute})
	long := e.subscription(top, "long", &minibus.SubscriptionProperties{DefaultMessageTimeToLive: time.Hour})
	short := e.subscription(top, "short", &minibus.SubscriptionProperties{DefaultMessageTimeToLive: 10 * time.Second})
	require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{TimeToLive: 2 * time.Hour}, nil))
	require.True(t, e.peekAll(e.receiver(long, nil))[0].ExpiresAt.Equal(at(time.Minute)))
	require.True(t, e.peekAll(e.receiver(short, nil))[0].ExpiresAt.Equal(at(10*time.Second)))
	e.mock.Add(time.Minute)
	require.Zero(t, long.RuntimeProperties().TotalMessageCount)
}

// A2, A3, A5: activity on a subscription is its topic's activity too; an
// idle subscription is deleted alone; an idle or deleted topic takes its
// subscriptions with it.
func TestA2_A5_TopicAndSubscriptionIdle(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", &minibus.TopicProperties{AutoDeleteOnIdle: 10 * time.Minute})
	busy := e.subscription(top, "busy", nil)
	idle := e.subscription(top, "idle", &minibus.SubscriptionProperties{AutoDeleteOnIdle: 5 * time.Minute})
	rb := e.receiver(busy, nil)
	e.mock.Add(4 * time.Minute)
	e.send(top, "x") // topic activity, not the subscriptions'
	e.mock.Add(time.Minute)
	require.Equal(t, []string{"busy"}, top.Subscriptions(), "the idle subscription went at +5m")
	_, err := idle.NewReceiver(nil)
	requireSentinel(t, err, minibus.ErrNotFound, `subscription "t/Subscriptions/idle"`)
	_, err = rb.PeekMessages(e.ctx, 1, nil)
	require.NoError(t, err)
	for range 3 {
		e.mock.Add(9 * time.Minute)
		_, err := rb.PeekMessages(e.ctx, 1, nil) // subscription activity keeps the topic alive
		require.NoError(t, err)
	}
	require.Equal(t, []string{"t"}, e.ns.Topics())
	e.mock.Add(10 * time.Minute)
	require.Empty(t, e.ns.Topics())
	_, err = rb.PeekMessages(e.ctx, 1, nil)
	requireSentinel(t, err, minibus.ErrNotFound, `subscription "t/Subscriptions/busy"`)

	again := e.topic("t", nil)
	s := e.subscription(again, "s", nil)
	require.NoError(t, e.ns.DeleteTopic("T"))
	requireSentinel(t, s.CreateRule("r", nil), minibus.ErrNotFound, `subscription "t/Subscriptions/s"`)
	requireSentinel(t, again.SendMessage(e.ctx, &minibus.Message{}, nil), minibus.ErrNotFound, `topic "t"`)
	_, err = again.CreateSubscription("new", nil)
	requireSentinel(t, err, minibus.ErrNotFound, `topic "t"`)
	require.Nil(t, again.Subscriptions())
}

// V1, V2: topic and subscription management.
func TestTopicManagement(t *testing.T) {
	e := newEnv(t)
	top := e.topic("Events", nil)
	require.Equal(t, minibus.TopicProperties{
		DuplicateDetectionHistoryTimeWindow: 10 * time.Minute, MaxSizeInMegabytes: 1024, MaxMessageSizeInKilobytes: 256,
	}, top.Properties())
	_, err := e.ns.CreateQueue("events", nil)
	requireSentinel(t, err, minibus.ErrAlreadyExists, `topic "Events"`)
	_, err = e.ns.Queue("events")
	requireSentinel(t, err, minibus.ErrNotFound, `queue "events"`)
	got, err := e.ns.Topic("EVENTS")
	require.NoError(t, err)
	require.Equal(t, "Events", got.Name())
	_, err = e.ns.CreateTopic("bad name", nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "character ' '")
	_, err = e.ns.CreateTopic("t2", &minibus.TopicProperties{AutoDeleteOnIdle: time.Minute})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "AutoDeleteOnIdle")
	_, err = e.ns.UpdateTopic("events", minibus.TopicProperties{DefaultMessageTimeToLive: time.Hour})
	require.NoError(t, err)
	require.Equal(t, time.Hour, top.Properties().DefaultMessageTimeToLive)
	require.Equal(t, []string{"Events"}, e.ns.Topics())
	require.Empty(t, e.ns.Queues())

	b := e.subscription(top, "b", nil)
	e.subscription(top, "A", nil)
	require.Equal(t, []string{"A", "b"}, top.Subscriptions())
	require.EqualValues(t, 2, top.RuntimeProperties().SubscriptionCount)
	_, err = top.CreateSubscription("a", nil)
	requireSentinel(t, err, minibus.ErrAlreadyExists, `subscription "Events/Subscriptions/A"`)
	for name, why := range map[string]string{"": "empty", "a/b": "character '/'", strings.Repeat("s", 51): "longer than 50", "$s": "character '$'"} {
		_, err = top.CreateSubscription(name, nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, why)
	}
	_, err = top.CreateSubscription("s", &minibus.SubscriptionProperties{LockDuration: time.Hour})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "LockDuration")
	_, err = top.CreateSubscription("s", &minibus.SubscriptionProperties{DefaultRule: &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "("}}})
	requireSentinel(t, err, minibus.ErrInvalidArgument, `rule "$Default"`)
	got2, err := top.Subscription("B")
	require.NoError(t, err)
	require.Equal(t, "b", got2.Name())
	require.Equal(t, "Events", got2.Topic())
	_, err = top.UpdateSubscription("b", minibus.SubscriptionProperties{MaxDeliveryCount: 3})
	require.NoError(t, err)
	require.EqualValues(t, 3, b.Properties().MaxDeliveryCount)
	require.NoError(t, top.DeleteSubscription("B"))
	requireSentinel(t, top.DeleteSubscription("b"), minibus.ErrNotFound, `subscription "Events/Subscriptions/b"`)
	_, err = top.Subscription("b")
	requireSentinel(t, err, minibus.ErrNotFound, "b")
	require.Equal(t, []string{"A"}, top.Subscriptions())

	a, err := top.Subscription("a")
	require.NoError(t, err)
	requireSentinel(t, a.CreateRule("$Default", nil), minibus.ErrAlreadyExists, `rule "$Default"`)
	requireSentinel(t, a.CreateRule("a/b", nil), minibus.ErrInvalidArgument, "character '/'")
	requireSentinel(t, a.DeleteRule("nope"), minibus.ErrNotFound, `rule "nope"`)
	require.NoError(t, a.CreateRule("$user", &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "x = @p", Parameters: map[string]any{"@p": 1}}}))
	rules := a.Rules()
	require.Equal(t, []string{"$Default", "$user"}, ruleNames(rules))
	require.Equal(t, minibus.TrueFilter{}, rules[0].Filter)
	rules[1].Filter.(minibus.SQLFilter).Parameters["@p"] = 2
	require.Equal(t, 1, a.Rules()[1].Filter.(minibus.SQLFilter).Parameters["@p"], "Rules returns copies")

	sess, err := top.CreateSubscription("sess", &minibus.SubscriptionProperties{RequiresSession: true})
	require.NoError(t, err)
	_, err = sess.NewReceiver(nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "requires sessions") // SS1
	_, err = a.AcceptSession(e.ctx, "x", nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "does not require sessions")
}

// V3: a topic's quota counts its scheduled messages and every copy in its
// subscriptions; a batch is all or nothing.
func TestV3_TopicQuota(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", &minibus.TopicProperties{MaxSizeInMegabytes: 1, MaxMessageSizeInKilobytes: 1})
	e.subscription(top, "a", nil)
	e.subscription(top, "b", nil)
	big := func() *minibus.Message { return &minibus.Message{MessageID: "m", Body: make([]byte, 1023)} }
	batch := make([]*minibus.Message, 512)
	for i := range batch {
		batch[i] = big()
	}
	require.NoError(t, top.SendMessages(e.ctx, batch[:511], nil))
	_, err := top.ScheduleMessages(e.ctx, []*minibus.Message{big()}, at(time.Hour), nil)
	require.NoError(t, err)
	require.EqualValues(t, 1<<20-1024, top.RuntimeProperties().SizeInBytes)
	err = top.SendMessage(e.ctx, big(), nil)
	requireSentinel(t, err, minibus.ErrQuotaExceeded, "2048 bytes of messages and copies")
	require.EqualValues(t, 1<<20-1024, top.RuntimeProperties().SizeInBytes, "nothing was enqueued")
	err = top.SendMessage(e.ctx, &minibus.Message{MessageID: "m", Body: make([]byte, 1024)}, nil)
	requireSentinel(t, err, minibus.ErrMessageTooLarge, "1025 bytes")
}

// V5: a disabled subscription gets no copies; a receive-disabled one keeps
// getting them but cannot be read.
func TestV5_SubscriptionStatus(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	off := e.subscription(top, "off", &minibus.SubscriptionProperties{Status: minibus.EntityStatusDisabled})
	noRecv := e.subscription(top, "norecv", &minibus.SubscriptionProperties{Status: minibus.EntityStatusReceiveDisabled})
	e.send(top, "a")
	require.Zero(t, off.RuntimeProperties().TotalMessageCount)
	require.EqualValues(t, 1, noRecv.RuntimeProperties().ActiveMessageCount)
	r := e.receiver(noRecv, nil)
	_, err := r.ReceiveMessages(e.ctx, 1, nil)
	requireSentinel(t, err, minibus.ErrEntityDisabled, `subscription "t/Subscriptions/norecv"`)
	_, err = e.ns.UpdateTopic("t", minibus.TopicProperties{Status: minibus.EntityStatusSendDisabled})
	require.NoError(t, err)
	requireSentinel(t, top.SendMessage(e.ctx, &minibus.Message{}, nil), minibus.ErrEntityDisabled, `topic "t"`)
}

// T5, S5: a receiver blocked on a subscription wakes when a message
// scheduled in its topic activates.
func TestT5_SubscriptionReceiverWakesOnTopicActivation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mock := clock.NewMock()
		ns := minibus.NewNamespace(minibus.WithClock(mock))
		defer ns.Close()
		top, err := ns.CreateTopic("t", nil)
		require.NoError(t, err)
		s, err := top.CreateSubscription("s", nil)
		require.NoError(t, err)
		r, err := s.NewReceiver(nil)
		require.NoError(t, err)
		_, err = top.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte("x")}}, mock.Now().Add(time.Minute), nil)
		require.NoError(t, err)
		got := make(chan string, 1)
		go func() {
			msgs, err := r.ReceiveMessages(ctx, 1, nil)
			if err != nil {
				t.Error(err)
				return
			}
			got <- string(msgs[0].Body)
		}()
		synctest.Wait()
		mock.Add(time.Minute)
		synctest.Wait()
		require.Len(t, got, 1)
		require.Equal(t, "x", <-got)
	})
}

// T3: across entities, events happen in time order: a topic's activation at
// +1m reaches a subscription whose copy then expires at +1m30s, in one jump.
func TestT3_AcrossEntities(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	s := e.subscription(top, "s", &minibus.SubscriptionProperties{
		DefaultMessageTimeToLive: 30 * time.Second, DeadLetteringOnMessageExpiration: true,
	})
	_, err := top.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("x")}}, at(time.Minute), nil)
	require.NoError(t, err)
	e.mock.Add(time.Hour)
	d := e.receive(e.receiver(s, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
	require.True(t, d.EnqueuedTime.Equal(at(time.Minute)))
	require.True(t, d.ExpiresAt.Equal(at(90*time.Second)))
	require.Equal(t, "TTLExpiredException", d.DeadLetterReason)
}
