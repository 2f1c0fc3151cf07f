package azsb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus/admin"
	"github.com/stretchr/testify/require"
)

// Scenario tests, written only against the SDK's types and the interfaces
// of api_test.go: each scenario would run unchanged against Azure Service
// Bus with the SDK's clients (and real waiting in advance). Here the harness
// gives it azsb's clients over a namespace on a mock clock.

// world is what a scenario is given: a client, an admin client, and a way
// to let time pass (mock.Add here; a sleep against the service).
type world[S senderAPI, R receiverAPI, SR sessionReceiverAPI] struct {
	ctx     context.Context
	client  clientAPI[S, R, SR]
	admin   adminAPI
	advance func(time.Duration)
}

// scenarioOrderRetries: a worker abandons an order that fails twice; at
// MaxDeliveryCount the broker dead-letters it; an operator reads the reason,
// fixes and resends it from the dead-letter queue with Message().
func scenarioOrderRetries[S senderAPI, R receiverAPI, SR sessionReceiverAPI](t *testing.T, w world[S, R, SR]) {
	_, err := w.admin.CreateQueue(w.ctx, "orders", &admin.CreateQueueOptions{Properties: &admin.QueueProperties{MaxDeliveryCount: to.Ptr(int32(2))}})
	require.NoError(t, err)
	s, err := w.client.NewSender("orders", nil)
	require.NoError(t, err)
	defer s.Close(w.ctx)
	require.NoError(t, s.SendMessage(w.ctx, &azservicebus.Message{MessageID: to.Ptr("order-1"), Body: []byte(`{"qty":0}`)}, nil))

	r, err := w.client.NewReceiverForQueue("orders", nil)
	require.NoError(t, err)
	defer r.Close(w.ctx)
	for attempt := uint32(1); attempt <= 2; attempt++ {
		msgs, err := r.ReceiveMessages(w.ctx, 10, nil)
		require.NoError(t, err)
		require.Len(t, msgs, 1)
		require.Equal(t, attempt, msgs[0].DeliveryCount)
		require.NoError(t, r.AbandonMessage(w.ctx, msgs[0], &azservicebus.AbandonMessageOptions{PropertiesToModify: map[string]any{"lastError": fmt.Sprint("attempt ", attempt)}}))
	}
	rt, err := w.admin.GetQueueRuntimeProperties(w.ctx, "orders", nil)
	require.NoError(t, err)
	require.Equal(t, int32(0), rt.ActiveMessageCount)
	require.Equal(t, int32(1), rt.DeadLetterMessageCount)

	dlq, err := w.client.NewReceiverForQueue("orders", &azservicebus.ReceiverOptions{SubQueue: azservicebus.SubQueueDeadLetter})
	require.NoError(t, err)
	defer dlq.Close(w.ctx)
	dead, err := dlq.ReceiveMessages(w.ctx, 1, nil)
	require.NoError(t, err)
	require.Equal(t, "MaxDeliveryCountExceeded", *dead[0].DeadLetterReason)
	require.Equal(t, "attempt 2", dead[0].ApplicationProperties["lastError"])
	fixed := dead[0].Message()
	fixed.Body = []byte(`{"qty":1}`)
	require.NoError(t, s.SendMessage(w.ctx, fixed, nil))
	require.NoError(t, dlq.CompleteMessage(w.ctx, dead[0], nil))

	msgs, err := r.ReceiveMessages(w.ctx, 1, nil)
	require.NoError(t, err)
	require.Equal(t, "order-1", msgs[0].MessageID)
	require.Equal(t, uint32(1), msgs[0].DeliveryCount, "a new message")
	require.NoError(t, r.CompleteMessage(w.ctx, msgs[0], nil))
}

// scenarioPubSub: a topic with subscriptions filtered by SQL and
// correlation rules, set up through the admin client.
func scenarioPubSub[S senderAPI, R receiverAPI, SR sessionReceiverAPI](t *testing.T, w world[S, R, SR]) {
	_, err := w.admin.CreateTopic(w.ctx, "events", nil)
	require.NoError(t, err)
	_, err = w.admin.CreateSubscription(w.ctx, "events", "big-eu", &admin.CreateSubscriptionOptions{Properties: &admin.SubscriptionProperties{
		DefaultRule: &admin.RuleProperties{Name: "big", Filter: &admin.SQLFilter{Expression: "amount > @min AND region = 'eu'", Parameters: map[string]any{"@min": 100}}},
	}})
	require.NoError(t, err)
	_, err = w.admin.CreateSubscription(w.ctx, "events", "refunds", nil)
	require.NoError(t, err)
	_, err = w.admin.DeleteRule(w.ctx, "events", "refunds", "$Default", nil)
	require.NoError(t, err)
	_, err = w.admin.CreateRule(w.ctx, "events", "refunds", &admin.CreateRuleOptions{Name: to.Ptr("refund"), Filter: &admin.CorrelationFilter{Subject: to.Ptr("refund")}})
	require.NoError(t, err)
	_, err = w.admin.CreateSubscription(w.ctx, "events", "all", nil)
	require.NoError(t, err)

	s, err := w.client.NewSender("events", nil)
	require.NoError(t, err)
	defer s.Close(w.ctx)
	batch, err := s.NewMessageBatch(w.ctx, nil)
	require.NoError(t, err)
	for _, m := range []*azservicebus.Message{
		{Subject: to.Ptr("order"), ApplicationProperties: map[string]any{"amount": 250, "region": "eu"}},
		{Subject: to.Ptr("order"), ApplicationProperties: map[string]any{"amount": 50, "region": "eu"}},
		{Subject: to.Ptr("refund"), ApplicationProperties: map[string]any{"amount": 250, "region": "us"}},
	} {
		require.NoError(t, batch.AddMessage(m, nil))
	}
	require.NoError(t, s.SendMessageBatch(w.ctx, batch, nil))

	count := func(sub string) int32 {
		rt, err := w.admin.GetSubscriptionRuntimeProperties(w.ctx, "events", sub, nil)
		require.NoError(t, err)
		return rt.ActiveMessageCount
	}
	require.Equal(t, int32(1), count("big-eu"))
	require.Equal(t, int32(1), count("refunds"))
	require.Equal(t, int32(3), count("all"))
	trt, err := w.admin.GetTopicRuntimeProperties(w.ctx, "events", nil)
	require.NoError(t, err)
	require.Equal(t, int32(3), trt.SubscriptionCount)
	require.Equal(t, int32(2), trt.SQLFilterCount)
	require.Equal(t, int32(1), trt.CorrelationFilterCount)

	r, err := w.client.NewReceiverForSubscription("events", "big-eu", &azservicebus.ReceiverOptions{ReceiveMode: azservicebus.ReceiveModeReceiveAndDelete})
	require.NoError(t, err)
	defer r.Close(w.ctx)
	msgs, err := r.ReceiveMessages(w.ctx, 10, nil)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, int64(250), msgs[0].ApplicationProperties["amount"])
}

// scenarioScheduleDeferTTL: a reminder is scheduled, cancelled and
// rescheduled; a deferred message is fetched by sequence number; a message
// with a time to live expires into the dead-letter queue.
func scenarioScheduleDeferTTL[S senderAPI, R receiverAPI, SR sessionReceiverAPI](t *testing.T, w world[S, R, SR], now time.Time) {
	_, err := w.admin.CreateQueue(w.ctx, "jobs", &admin.CreateQueueOptions{Properties: &admin.QueueProperties{
		DeadLetteringOnMessageExpiration: to.Ptr(true), LockDuration: to.Ptr("PT30S"),
	}})
	require.NoError(t, err)
	s, err := w.client.NewSender("jobs", nil)
	require.NoError(t, err)
	defer s.Close(w.ctx)
	r, err := w.client.NewReceiverForQueue("jobs", nil)
	require.NoError(t, err)
	defer r.Close(w.ctx)

	seqs, err := s.ScheduleMessages(w.ctx, []*azservicebus.Message{{Body: []byte("remind")}}, now.Add(time.Hour), nil)
	require.NoError(t, err)
	require.NoError(t, s.CancelScheduledMessages(w.ctx, seqs, nil))
	_, err = s.ScheduleMessages(w.ctx, []*azservicebus.Message{{Body: []byte("remind")}}, now.Add(2*time.Hour), nil)
	require.NoError(t, err)
	require.NoError(t, s.SendMessage(w.ctx, &azservicebus.Message{Body: []byte("later")}, nil))
	require.NoError(t, s.SendMessage(w.ctx, &azservicebus.Message{Body: []byte("short"), TimeToLive: to.Ptr(time.Minute)}, nil))

	msgs, err := r.ReceiveMessages(w.ctx, 1, nil)
	require.NoError(t, err)
	require.Equal(t, "later", string(msgs[0].Body))
	deferredSeq := *msgs[0].SequenceNumber
	require.NoError(t, r.DeferMessage(w.ctx, msgs[0], nil))

	w.advance(time.Minute) // "short" expires
	rt, err := w.admin.GetQueueRuntimeProperties(w.ctx, "jobs", nil)
	require.NoError(t, err)
	require.Equal(t, int32(1), rt.ScheduledMessageCount)
	require.Equal(t, int32(1), rt.ActiveMessageCount, "the deferred one")
	require.Equal(t, int32(1), rt.DeadLetterMessageCount)

	peeked, err := r.PeekMessages(w.ctx, 10, &azservicebus.PeekMessagesOptions{FromSequenceNumber: to.Ptr(int64(0))})
	require.NoError(t, err)
	require.Len(t, peeked, 2)
	require.Equal(t, azservicebus.MessageStateScheduled, peeked[0].State)
	require.Equal(t, azservicebus.MessageStateDeferred, peeked[1].State)

	deferred, err := r.ReceiveDeferredMessages(w.ctx, []int64{deferredSeq}, nil)
	require.NoError(t, err)
	require.Equal(t, azservicebus.MessageStateDeferred, deferred[0].State)
	require.NoError(t, r.CompleteMessage(w.ctx, deferred[0], nil))

	w.advance(2 * time.Hour)
	msgs, err = r.ReceiveMessages(w.ctx, 1, nil)
	require.NoError(t, err)
	require.Equal(t, "remind", string(msgs[0].Body))
	require.True(t, now.Add(2*time.Hour).Equal(*msgs[0].EnqueuedTime))

	// A lock kept alive by renewal outlives LockDuration.
	w.advance(20 * time.Second)
	require.NoError(t, r.RenewMessageLock(w.ctx, msgs[0], nil))
	w.advance(20 * time.Second)
	require.NoError(t, r.CompleteMessage(w.ctx, msgs[0], nil))
}

func TestScenarios(t *testing.T) {
	for name, run := range map[string]func(*testing.T, *env, world[*azsbSender, *azsbReceiver, *azsbSessionReceiver]){
		"order retries": func(t *testing.T, _ *env, w world[*azsbSender, *azsbReceiver, *azsbSessionReceiver]) {
			scenarioOrderRetries(t, w)
		},
		"pub/sub": func(t *testing.T, _ *env, w world[*azsbSender, *azsbReceiver, *azsbSessionReceiver]) {
			scenarioPubSub(t, w)
		},
		"schedule, defer, TTL": func(t *testing.T, e *env, w world[*azsbSender, *azsbReceiver, *azsbSessionReceiver]) {
			scenarioScheduleDeferTTL(t, w, e.mock.Now())
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			run(t, e, world[*azsbSender, *azsbReceiver, *azsbSessionReceiver]{ctx: e.ctx, client: e.c, admin: e.admin, advance: func(d time.Duration) { e.mock.Add(d) }})
		})
	}
}
