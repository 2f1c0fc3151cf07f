package minibus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

func TestQueueLifecycle(t *testing.T) {
	e := newEnv(t)
	q := e.queue("b", nil)
	e.queue("a", nil)
	require.Equal(t, []string{"a", "b"}, e.ns.Queues())
	e.send(q, "x")
	r := e.receiver(q, nil)

	updated, err := e.ns.UpdateQueue("B", minibus.QueueProperties{MaxDeliveryCount: 3})
	require.NoError(t, err)
	require.EqualValues(t, 3, updated.Properties().MaxDeliveryCount)
	require.EqualValues(t, 3, q.Properties().MaxDeliveryCount, "handles share the queue")
	require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount, "update keeps messages")

	require.NoError(t, e.ns.DeleteQueue("b"))
	requireSentinel(t, e.ns.DeleteQueue("b"), minibus.ErrNotFound, `queue "b"`)
	_, err = e.ns.Queue("b")
	requireSentinel(t, err, minibus.ErrNotFound, `queue "b"`)
	_, err = e.ns.UpdateQueue("b", minibus.QueueProperties{})
	requireSentinel(t, err, minibus.ErrNotFound, `queue "b"`)
	requireSentinel(t, q.SendMessage(e.ctx, &minibus.Message{}, nil), minibus.ErrNotFound, `queue "b"`)
	_, err = r.ReceiveMessages(e.ctx, 1, nil)
	requireSentinel(t, err, minibus.ErrNotFound, `queue "b"`)
	_, err = q.NewReceiver(nil)
	requireSentinel(t, err, minibus.ErrNotFound, `queue "b"`)
	require.Equal(t, []string{"a"}, e.ns.Queues())

	again := e.queue("b", nil)
	require.Zero(t, again.RuntimeProperties().TotalMessageCount, "a new queue of the old name is empty")
	requireSentinel(t, q.SendMessage(e.ctx, &minibus.Message{}, nil), minibus.ErrNotFound, `queue "b"`)
}

// A receive blocked on a queue that is deleted returns ErrNotFound.
func TestDeleteWakesBlockedReceivers(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	r := e.receiver(q, nil)
	errc := make(chan error)
	go func() {
		_, err := r.ReceiveMessages(e.ctx, 1, nil)
		errc <- err
	}()
	require.NoError(t, e.ns.DeleteQueue("q"))
	requireSentinel(t, <-errc, minibus.ErrNotFound, `queue "q"`)
}

// V2: RuntimeProperties times.
func TestQueueRuntimeTimes(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	rp := q.RuntimeProperties()
	require.True(t, rp.CreatedAt.Equal(epoch))
	require.True(t, rp.UpdatedAt.Equal(epoch))
	e.mock.Add(time.Minute)
	e.send(q, "a")
	e.mock.Add(time.Minute)
	_, err := e.ns.UpdateQueue("q", minibus.QueueProperties{})
	require.NoError(t, err)
	rp = q.RuntimeProperties()
	require.True(t, rp.AccessedAt.Equal(at(time.Minute)), "AccessedAt %v", rp.AccessedAt)
	require.True(t, rp.UpdatedAt.Equal(at(2*time.Minute)), "UpdatedAt %v", rp.UpdatedAt)
	require.True(t, rp.CreatedAt.Equal(epoch))
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
