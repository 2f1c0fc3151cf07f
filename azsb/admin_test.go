package azsb_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus/admin"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/azsb"
	"github.com/stretchr/testify/require"
)

// maxTimeSpan is how the service writes "never".
const maxTimeSpan = "P10675199DT2H48M5.4775807S"

func requireStatus(t *testing.T, err error, status int, sentinel error) {
	t.Helper()
	var re *azcore.ResponseError
	require.ErrorAs(t, err, &re)
	require.Equal(t, status, re.StatusCode)
	require.Contains(t, err.Error(), http.StatusText(status))
	require.ErrorIs(t, err, sentinel)
}

// TestAdminQueueDefaults: a queue created with nothing set reads back with
// every field the service fills.
func TestAdminQueueDefaults(t *testing.T) {
	e := newEnv(t)
	resp, err := e.admin.CreateQueue(e.ctx, "q", nil)
	require.NoError(t, err)
	require.Equal(t, "q", resp.QueueName)
	require.Equal(t, admin.QueueProperties{
		LockDuration:                        to.Ptr("PT1M"),
		MaxSizeInMegabytes:                  to.Ptr(int32(1024)),
		RequiresDuplicateDetection:          to.Ptr(false),
		RequiresSession:                     to.Ptr(false),
		DefaultMessageTimeToLive:            to.Ptr(maxTimeSpan),
		DeadLetteringOnMessageExpiration:    to.Ptr(false),
		DuplicateDetectionHistoryTimeWindow: to.Ptr("PT10M"),
		MaxDeliveryCount:                    to.Ptr(int32(10)),
		EnableBatchedOperations:             to.Ptr(true),
		Status:                              to.Ptr(admin.EntityStatusActive),
		AutoDeleteOnIdle:                    to.Ptr(maxTimeSpan),
		EnablePartitioning:                  to.Ptr(false),
		MaxMessageSizeInKilobytes:           to.Ptr(int64(256)),
	}, resp.QueueProperties)
	got, err := e.admin.GetQueue(e.ctx, "q", nil)
	require.NoError(t, err)
	require.Equal(t, resp.QueueProperties, got.QueueProperties)
}

// TestAdminQueueRoundTrip follows the SDK's own admin test: create with
// properties, read them back, update with what was read.
func TestAdminQueueRoundTrip(t *testing.T) {
	e := newEnv(t)
	es := admin.EntityStatusReceiveDisabled
	rules := []admin.AuthorizationRule{{AccessRights: []admin.AccessRight{admin.AccessRightSend}, KeyName: to.Ptr("k")}}
	props := admin.QueueProperties{
		LockDuration:                        to.Ptr("PT45S"),
		DefaultMessageTimeToLive:            to.Ptr("PT6H"),
		DeadLetteringOnMessageExpiration:    to.Ptr(true),
		DuplicateDetectionHistoryTimeWindow: to.Ptr("PT4H"),
		MaxDeliveryCount:                    to.Ptr(int32(100)),
		EnableBatchedOperations:             to.Ptr(false),
		Status:                              &es,
		AutoDeleteOnIdle:                    to.Ptr("PT10M"),
		UserMetadata:                        to.Ptr("some metadata"),
		AuthorizationRules:                  rules,
		MaxSizeInMegabytes:                  to.Ptr(int32(2048)),
	}
	created, err := e.admin.CreateQueue(e.ctx, "q", &admin.CreateQueueOptions{Properties: &props})
	require.NoError(t, err)
	want := props
	want.RequiresDuplicateDetection, want.RequiresSession = to.Ptr(false), to.Ptr(false)
	want.EnablePartitioning, want.MaxMessageSizeInKilobytes = to.Ptr(false), to.Ptr(int64(256))
	require.Equal(t, want, created.QueueProperties)

	q, err := e.ns.Queue("q")
	require.NoError(t, err)
	require.Equal(t, minibus.QueueProperties{
		LockDuration: 45 * time.Second, MaxDeliveryCount: 100, DefaultMessageTimeToLive: 6 * time.Hour,
		DeadLetteringOnMessageExpiration: true, AutoDeleteOnIdle: 10 * time.Minute, DuplicateDetectionHistoryTimeWindow: 4 * time.Hour,
		MaxSizeInMegabytes: 2048, MaxMessageSizeInKilobytes: 256, Status: minibus.EntityStatusReceiveDisabled,
	}, q.Properties(), "the properties reach minibus")

	created.MaxDeliveryCount = to.Ptr(int32(101))
	updated, err := e.admin.UpdateQueue(e.ctx, "q", created.QueueProperties, nil)
	require.NoError(t, err)
	require.Equal(t, int32(101), *updated.MaxDeliveryCount)
	require.Equal(t, rules, updated.AuthorizationRules)

	updated.RequiresSession = to.Ptr(true)
	_, err = e.admin.UpdateQueue(e.ctx, "q", updated.QueueProperties, nil)
	requireStatus(t, err, http.StatusBadRequest, minibus.ErrInvalidArgument)
	_, err = e.admin.UpdateQueue(e.ctx, "non-existent-queue", created.QueueProperties, nil)
	require.ErrorContains(t, err, "404 Not Found")
	requireStatus(t, err, http.StatusNotFound, minibus.ErrNotFound)
	_, err = e.admin.CreateQueue(e.ctx, "Q", nil)
	requireStatus(t, err, http.StatusConflict, minibus.ErrAlreadyExists)
	_, err = e.admin.CreateQueue(e.ctx, "bad", &admin.CreateQueueOptions{Properties: &admin.QueueProperties{LockDuration: to.Ptr("1 minute")}})
	requireStatus(t, err, http.StatusBadRequest, minibus.ErrInvalidArgument)

	// Extras belong to the entity: one deleted and created anew through
	// minibus does not inherit them.
	require.NoError(t, e.ns.DeleteQueue("q"))
	e.queue("q", nil)
	got, err := e.admin.GetQueue(e.ctx, "q", nil)
	require.NoError(t, err)
	require.Nil(t, got.UserMetadata)
	require.True(t, *got.EnableBatchedOperations)
}

// TestAdminNotFound: Get of a missing entity is nil and no error; Delete
// is a 404.
func TestAdminNotFound(t *testing.T) {
	e := newEnv(t)
	q, err := e.admin.GetQueue(e.ctx, "non-existent-queue", nil)
	require.NoError(t, err)
	require.Nil(t, q)
	qrt, err := e.admin.GetQueueRuntimeProperties(e.ctx, "non-existent-queue", nil)
	require.NoError(t, err)
	require.Nil(t, qrt)
	top, err := e.admin.GetTopic(e.ctx, "non-existent-topic", nil)
	require.NoError(t, err)
	require.Nil(t, top)
	trt, err := e.admin.GetTopicRuntimeProperties(e.ctx, "non-existent-topic", nil)
	require.NoError(t, err)
	require.Nil(t, trt)
	sub, err := e.admin.GetSubscription(e.ctx, "non-existent-topic", "sub1", nil)
	require.NoError(t, err)
	require.Nil(t, sub)
	srt, err := e.admin.GetSubscriptionRuntimeProperties(e.ctx, "non-existent-topic", "sub1", nil)
	require.NoError(t, err)
	require.Nil(t, srt)
	rule, err := e.admin.GetRule(e.ctx, "non-existent-topic", "sub1", "r", nil)
	require.NoError(t, err)
	require.Nil(t, rule)

	_, err = e.admin.DeleteQueue(e.ctx, "non-existent-queue", nil)
	requireStatus(t, err, http.StatusNotFound, minibus.ErrNotFound)
	_, err = e.admin.DeleteTopic(e.ctx, "non-existent-topic", nil)
	requireStatus(t, err, http.StatusNotFound, minibus.ErrNotFound)
	_, err = e.admin.DeleteSubscription(e.ctx, "non-existent-topic", "s", nil)
	requireStatus(t, err, http.StatusNotFound, minibus.ErrNotFound)
	_, err = e.admin.CreateSubscription(e.ctx, "non-existent-topic", "s", nil)
	requireStatus(t, err, http.StatusNotFound, minibus.ErrNotFound)
	_, err = e.admin.DeleteRule(e.ctx, "non-existent-topic", "s", "r", nil)
	requireStatus(t, err, http.StatusNotFound, minibus.ErrNotFound)
}

// TestAdminNilNamespace: over a nil namespace every Get, GetRuntimeProperties
// and list is a 400 that wraps minibus.ErrInvalidArgument, as the other
// calls are (issue 42: GetQueue returned nil and no error, which reads as
// "no such queue").
func TestAdminNilNamespace(t *testing.T) {
	ctx := context.Background()
	a := azsb.NewAdminClient(nil)
	check := func(name string, got any, err error) {
		t.Helper()
		requireStatus(t, err, http.StatusBadRequest, minibus.ErrInvalidArgument)
		require.Contains(t, err.Error(), "nil *minibus.Namespace", name)
		require.Nil(t, got, name)
	}
	q, err := a.GetQueue(ctx, "q", nil)
	check("GetQueue", q, err)
	qrt, err := a.GetQueueRuntimeProperties(ctx, "q", nil)
	check("GetQueueRuntimeProperties", qrt, err)
	top, err := a.GetTopic(ctx, "t", nil)
	check("GetTopic", top, err)
	trt, err := a.GetTopicRuntimeProperties(ctx, "t", nil)
	check("GetTopicRuntimeProperties", trt, err)
	sub, err := a.GetSubscription(ctx, "t", "s", nil)
	check("GetSubscription", sub, err)
	srt, err := a.GetSubscriptionRuntimeProperties(ctx, "t", "s", nil)
	check("GetSubscriptionRuntimeProperties", srt, err)
	rule, err := a.GetRule(ctx, "t", "s", "r", nil)
	check("GetRule", rule, err)
	_, err = a.GetNamespaceProperties(ctx, nil)
	check("GetNamespaceProperties", nil, err)

	_, err = a.NewListQueuesPager(nil).NextPage(ctx)
	check("NewListQueuesPager", nil, err)
	_, err = a.NewListQueuesRuntimePropertiesPager(nil).NextPage(ctx)
	check("NewListQueuesRuntimePropertiesPager", nil, err)
	_, err = a.NewListTopicsPager(nil).NextPage(ctx)
	check("NewListTopicsPager", nil, err)
	_, err = a.NewListTopicsRuntimePropertiesPager(nil).NextPage(ctx)
	check("NewListTopicsRuntimePropertiesPager", nil, err)
	_, err = a.NewListSubscriptionsPager("t", nil).NextPage(ctx)
	check("NewListSubscriptionsPager", nil, err)
	_, err = a.NewListSubscriptionsRuntimePropertiesPager("t", nil).NextPage(ctx)
	check("NewListSubscriptionsRuntimePropertiesPager", nil, err)
	_, err = a.NewListRulesPager("t", "s", nil).NextPage(ctx)
	check("NewListRulesPager", nil, err)

	// As the calls that minibus answers.
	_, err = a.DeleteQueue(ctx, "q", nil)
	requireStatus(t, err, http.StatusBadRequest, minibus.ErrInvalidArgument)
	_, err = a.CreateQueue(ctx, "q", nil)
	requireStatus(t, err, http.StatusBadRequest, minibus.ErrInvalidArgument)
}

func TestAdminTopicAndSubscription(t *testing.T) {
	e := newEnv(t)
	status := admin.EntityStatusActive
	topic, err := e.admin.CreateTopic(e.ctx, "t", &admin.CreateTopicOptions{Properties: &admin.TopicProperties{
		DefaultMessageTimeToLive: to.Ptr("PT3M"), AutoDeleteOnIdle: to.Ptr("PT7M"), SupportOrdering: to.Ptr(true),
		UserMetadata: to.Ptr("user metadata"), Status: &status,
	}})
	require.NoError(t, err)
	require.Equal(t, admin.TopicProperties{
		MaxSizeInMegabytes: to.Ptr(int32(1024)), RequiresDuplicateDetection: to.Ptr(false), DefaultMessageTimeToLive: to.Ptr("PT3M"),
		DuplicateDetectionHistoryTimeWindow: to.Ptr("PT10M"), EnableBatchedOperations: to.Ptr(true), Status: &status,
		AutoDeleteOnIdle: to.Ptr("PT7M"), EnablePartitioning: to.Ptr(false), SupportOrdering: to.Ptr(true),
		UserMetadata: to.Ptr("user metadata"), MaxMessageSizeInKilobytes: to.Ptr(int64(256)),
	}, topic.TopicProperties)

	sub, err := e.admin.CreateSubscription(e.ctx, "t", "s", &admin.CreateSubscriptionOptions{Properties: &admin.SubscriptionProperties{
		LockDuration: to.Ptr("PT3M"), RequiresSession: to.Ptr(false), DefaultMessageTimeToLive: to.Ptr("PT7M"),
		DeadLetteringOnMessageExpiration: to.Ptr(true), EnableDeadLetteringOnFilterEvaluationExceptions: to.Ptr(false),
		MaxDeliveryCount: to.Ptr(int32(11)), Status: &status, EnableBatchedOperations: to.Ptr(false),
		AutoDeleteOnIdle: to.Ptr("PT11M"), UserMetadata: to.Ptr("user metadata"),
	}})
	require.NoError(t, err)
	require.Equal(t, admin.CreateSubscriptionResponse{SubscriptionName: "s", TopicName: "t", SubscriptionProperties: admin.SubscriptionProperties{
		LockDuration: to.Ptr("PT3M"), RequiresSession: to.Ptr(false), DefaultMessageTimeToLive: to.Ptr("PT7M"),
		DeadLetteringOnMessageExpiration: to.Ptr(true), EnableDeadLetteringOnFilterEvaluationExceptions: to.Ptr(false),
		MaxDeliveryCount: to.Ptr(int32(11)), Status: &status, EnableBatchedOperations: to.Ptr(false),
		AutoDeleteOnIdle: to.Ptr("PT11M"), UserMetadata: to.Ptr("user metadata"),
	}}, sub)

	plain, err := e.admin.CreateSubscription(e.ctx, "t", "plain", nil)
	require.NoError(t, err)
	require.True(t, *plain.EnableDeadLetteringOnFilterEvaluationExceptions, "the service's default")

	sub.LockDuration = to.Ptr("PT4M")
	upd, err := e.admin.UpdateSubscription(e.ctx, "t", "s", sub.SubscriptionProperties, nil)
	require.NoError(t, err)
	require.Equal(t, "PT4M", *upd.LockDuration)
	_, err = e.admin.UpdateSubscription(e.ctx, "t", "non-existent-subscription", sub.SubscriptionProperties, nil)
	requireStatus(t, err, http.StatusNotFound, minibus.ErrNotFound)

	// Counts: a message to the topic reaches both subscriptions.
	require.NoError(t, e.sender("t").SendMessage(e.ctx, &azservicebus.Message{Body: []byte("x")}, nil))
	srt, err := e.admin.GetSubscriptionRuntimeProperties(e.ctx, "t", "s", nil)
	require.NoError(t, err)
	require.Equal(t, int32(1), srt.ActiveMessageCount)
	require.Equal(t, int64(1), srt.TotalMessageCount)
	trt, err := e.admin.GetTopicRuntimeProperties(e.ctx, "t", nil)
	require.NoError(t, err)
	require.Equal(t, int32(2), trt.SubscriptionCount)
	require.Equal(t, int32(2), trt.SQLFilterCount, "each $Default TrueFilter counts")
	require.Zero(t, trt.CorrelationFilterCount)
	require.True(t, epoch.Equal(trt.CreatedAt))

	_, err = e.admin.DeleteTopic(e.ctx, "t", nil)
	require.NoError(t, err)
	gone, err := e.admin.GetSubscription(e.ctx, "t", "s", nil)
	require.NoError(t, err)
	require.Nil(t, gone)
}

// TestAdminRules: create, get, update, list and delete rules, with the
// admin package's filter and action types.
func TestAdminRules(t *testing.T) {
	e := newEnv(t)
	_, err := e.admin.CreateTopic(e.ctx, "t", nil)
	require.NoError(t, err)
	_, err = e.admin.CreateSubscription(e.ctx, "t", "s", &admin.CreateSubscriptionOptions{Properties: &admin.SubscriptionProperties{
		DefaultRule: &admin.RuleProperties{Filter: &admin.FalseFilter{}},
	}})
	require.NoError(t, err)
	def, err := e.admin.GetRule(e.ctx, "t", "s", "$Default", nil)
	require.NoError(t, err)
	require.Equal(t, "$Default", def.Name)
	require.IsType(t, &admin.FalseFilter{}, def.Filter)
	require.Nil(t, def.Action)

	sql, err := e.admin.CreateRule(e.ctx, "t", "s", &admin.CreateRuleOptions{
		Name:   to.Ptr("big"),
		Filter: &admin.SQLFilter{Expression: "amount > @min", Parameters: map[string]any{"@min": 100}},
		Action: &admin.SQLAction{Expression: "SET priority = 'high'"},
	})
	require.NoError(t, err)
	require.Equal(t, admin.RuleProperties{
		Name:   "big",
		Filter: &admin.SQLFilter{Expression: "amount > @min", Parameters: map[string]any{"@min": int64(100)}},
		Action: &admin.SQLAction{Expression: "SET priority = 'high'"},
	}, sql.RuleProperties, "integers read back as int64, as from the service")
	_, err = e.admin.CreateRule(e.ctx, "t", "s", &admin.CreateRuleOptions{
		Name:   to.Ptr("corr"),
		Filter: &admin.CorrelationFilter{Subject: to.Ptr("refund"), ApplicationProperties: map[string]any{"region": "eu"}},
	})
	require.NoError(t, err)
	_, err = e.admin.CreateRule(e.ctx, "t", "s", &admin.CreateRuleOptions{Name: to.Ptr("corr")})
	requireStatus(t, err, http.StatusConflict, minibus.ErrAlreadyExists)
	_, err = e.admin.CreateRule(e.ctx, "t", "s", &admin.CreateRuleOptions{Name: to.Ptr("bad"), Filter: &admin.SQLFilter{Expression: "a >"}})
	requireStatus(t, err, http.StatusBadRequest, minibus.ErrInvalidArgument)
	_, err = e.admin.CreateRule(e.ctx, "t", "s", &admin.CreateRuleOptions{Name: to.Ptr("p"), Filter: &admin.SQLFilter{Expression: "a = @d", Parameters: map[string]any{"@d": time.Second}}})
	require.EqualError(t, err, "type time.Duration of parameter @d is not a handled type for SQL parameters")

	// The rules work: a message matching both rules gives two copies (one
	// per action rule and one for the rules without action).
	s := e.sender("t")
	require.NoError(t, s.SendMessage(e.ctx, &azservicebus.Message{Subject: to.Ptr("refund"), ApplicationProperties: map[string]any{"amount": 150, "region": "eu"}}, nil))
	rs, err := e.c.NewReceiverForSubscription("t", "s", nil)
	require.NoError(t, err)
	defer rs.Close(e.ctx)
	copies := e.receive(rs, 2)
	var priorities []any
	for _, c := range copies {
		priorities = append(priorities, c.ApplicationProperties["priority"])
	}
	require.ElementsMatch(t, []any{"high", nil}, priorities)

	upd, err := e.admin.UpdateRule(e.ctx, "t", "s", admin.RuleProperties{Name: "big", Filter: &admin.TrueFilter{}})
	require.NoError(t, err)
	require.Equal(t, admin.RuleProperties{Name: "big", Filter: &admin.TrueFilter{}}, upd.RuleProperties)
	got, err := e.admin.GetRule(e.ctx, "t", "s", "big", nil)
	require.NoError(t, err)
	require.Equal(t, upd.RuleProperties, got.RuleProperties)
	_, err = e.admin.UpdateRule(e.ctx, "t", "s", admin.RuleProperties{Name: "nope"})
	requireStatus(t, err, http.StatusNotFound, minibus.ErrNotFound)
	_, err = e.admin.UpdateRule(e.ctx, "t", "s", admin.RuleProperties{Name: "big", Filter: &admin.SQLFilter{Expression: "a >"}})
	requireStatus(t, err, http.StatusBadRequest, minibus.ErrInvalidArgument)
	got, err = e.admin.GetRule(e.ctx, "t", "s", "big", nil)
	require.NoError(t, err)
	require.Equal(t, upd.RuleProperties, got.RuleProperties, "a refused update leaves the rule as it was")

	var names []string
	pager := e.admin.NewListRulesPager("t", "s", &admin.ListRulesOptions{MaxPageSize: 2})
	pages := 0
	for pager.More() {
		page, err := pager.NextPage(e.ctx)
		require.NoError(t, err)
		pages++
		for _, r := range page.Rules {
			names = append(names, r.Name)
		}
	}
	require.Equal(t, []string{"$Default", "big", "corr"}, names)
	require.Equal(t, 2, pages)

	_, err = e.admin.DeleteRule(e.ctx, "t", "s", "corr", nil)
	require.NoError(t, err)
	_, err = e.admin.DeleteRule(e.ctx, "t", "s", "corr", nil)
	requireStatus(t, err, http.StatusNotFound, minibus.ErrNotFound)

	// nil options, which the SDK dereferences, make a $Default rule.
	_, err = e.admin.CreateSubscription(e.ctx, "t", "empty", &admin.CreateSubscriptionOptions{Properties: &admin.SubscriptionProperties{
		DefaultRule: &admin.RuleProperties{Name: "only", Filter: &admin.TrueFilter{}},
	}})
	require.NoError(t, err)
	created, err := e.admin.CreateRule(e.ctx, "t", "empty", nil)
	require.NoError(t, err)
	require.Equal(t, "$Default", created.Name)
	require.Equal(t, &admin.TrueFilter{}, created.Filter)
}

// TestAdminPagers: pages as the admin client pages the service's feeds.
func TestAdminPagers(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"c", "a", "b"} {
		_, err := e.admin.CreateQueue(e.ctx, n, nil)
		require.NoError(t, err)
	}
	_, err := e.admin.CreateTopic(e.ctx, "t", nil)
	require.NoError(t, err)
	collect := func(size int32) ([]string, int) {
		p := e.admin.NewListQueuesPager(&admin.ListQueuesOptions{MaxPageSize: size})
		var names []string
		pages := 0
		for p.More() {
			page, err := p.NextPage(e.ctx)
			require.NoError(t, err)
			pages++
			for _, q := range page.Queues {
				names = append(names, q.QueueName)
				require.Equal(t, "PT1M", *q.LockDuration)
			}
		}
		return names, pages
	}
	names, pages := collect(0)
	require.Equal(t, []string{"a", "b", "c"}, names)
	require.Equal(t, 2, pages, "without MaxPageSize the last page is an empty one")
	names, pages = collect(2)
	require.Equal(t, []string{"a", "b", "c"}, names)
	require.Equal(t, 2, pages)
	names, pages = collect(3)
	require.Equal(t, []string{"a", "b", "c"}, names)
	require.Equal(t, 2, pages, "a full page is followed by an empty one")

	require.NoError(t, e.sender("b").SendMessage(e.ctx, &azservicebus.Message{}, nil))
	rp := e.admin.NewListQueuesRuntimePropertiesPager(nil)
	page, err := rp.NextPage(e.ctx)
	require.NoError(t, err)
	require.Len(t, page.QueueRuntimeProperties, 3)
	require.Equal(t, "b", page.QueueRuntimeProperties[1].QueueName)
	require.Equal(t, int32(1), page.QueueRuntimeProperties[1].ActiveMessageCount)

	tp := e.admin.NewListTopicsPager(nil)
	tpage, err := tp.NextPage(e.ctx)
	require.NoError(t, err)
	require.Len(t, tpage.Topics, 1)
	trp := e.admin.NewListTopicsRuntimePropertiesPager(nil)
	trpage, err := trp.NextPage(e.ctx)
	require.NoError(t, err)
	require.Equal(t, "t", trpage.TopicRuntimeProperties[0].TopicName)

	_, err = e.admin.CreateSubscription(e.ctx, "t", "s1", nil)
	require.NoError(t, err)
	sp := e.admin.NewListSubscriptionsPager("t", nil)
	spage, err := sp.NextPage(e.ctx)
	require.NoError(t, err)
	require.Equal(t, "s1", spage.Subscriptions[0].SubscriptionName)
	require.Equal(t, "t", spage.Subscriptions[0].TopicName)
	srp := e.admin.NewListSubscriptionsRuntimePropertiesPager("t", nil)
	srpage, err := srp.NextPage(e.ctx)
	require.NoError(t, err)
	require.Len(t, srpage.SubscriptionRuntimeProperties, 1)

	missing := e.admin.NewListSubscriptionsPager("no-topic", nil)
	mpage, err := missing.NextPage(e.ctx)
	require.NoError(t, err)
	require.Empty(t, mpage.Subscriptions)
	require.False(t, missing.More())

	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err = e.admin.NewListQueuesPager(nil).NextPage(ctx)
	require.ErrorIs(t, err, context.Canceled)
}

// TestAdminNamespaceAndOptions: namespace properties, and admin options that
// are accepted and ignored.
func TestAdminNamespaceAndOptions(t *testing.T) {
	e := newEnv(t)
	a := azsb.NewAdminClient(e.ns, &admin.ClientOptions{ClientOptions: azcore.ClientOptions{APIVersion: "2017-04"}})
	p, err := a.GetNamespaceProperties(e.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, "minibus", p.Name)
	require.Equal(t, "Standard", p.SKU)
	require.Nil(t, p.MessagingUnits)
	require.False(t, p.CreatedTime.IsZero())
	require.False(t, p.ModifiedTime.IsZero())

	// Two admin clients of one namespace share what minibus does not keep.
	_, err = a.CreateQueue(e.ctx, "q", &admin.CreateQueueOptions{Properties: &admin.QueueProperties{UserMetadata: to.Ptr("m")}})
	require.NoError(t, err)
	got, err := e.admin.GetQueue(e.ctx, "q", nil)
	require.NoError(t, err)
	require.Equal(t, "m", *got.UserMetadata)
}
