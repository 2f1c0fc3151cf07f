package azsb_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus/admin"
	"github.com/minibus-go/minibus/azsb"
	"github.com/stretchr/testify/require"
)

// The interfaces below list every exported method of the SDK's Sender,
// Receiver, SessionReceiver, Client and admin.Client, copied from the SDK.
// Each is checked at compile time against the SDK's type and azsb's, so an
// application interface over the SDK's types is satisfied by azsb's.

// senderAPI is every method of *azservicebus.Sender.
type senderAPI interface {
	CancelScheduledMessages(ctx context.Context, sequenceNumbers []int64, options *azservicebus.CancelScheduledMessagesOptions) error
	Close(ctx context.Context) error
	NewMessageBatch(ctx context.Context, options *azservicebus.MessageBatchOptions) (*azservicebus.MessageBatch, error)
	ScheduleAMQPAnnotatedMessages(ctx context.Context, messages []*azservicebus.AMQPAnnotatedMessage, scheduledEnqueueTime time.Time, options *azservicebus.ScheduleAMQPAnnotatedMessagesOptions) ([]int64, error)
	ScheduleMessages(ctx context.Context, messages []*azservicebus.Message, scheduledEnqueueTime time.Time, options *azservicebus.ScheduleMessagesOptions) ([]int64, error)
	SendAMQPAnnotatedMessage(ctx context.Context, message *azservicebus.AMQPAnnotatedMessage, options *azservicebus.SendAMQPAnnotatedMessageOptions) error
	SendMessage(ctx context.Context, message *azservicebus.Message, options *azservicebus.SendMessageOptions) error
	SendMessageBatch(ctx context.Context, batch *azservicebus.MessageBatch, options *azservicebus.SendMessageBatchOptions) error
}

// settlerAPI is what Receiver and SessionReceiver share.
type settlerAPI interface {
	AbandonMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.AbandonMessageOptions) error
	Close(ctx context.Context) error
	CompleteMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.CompleteMessageOptions) error
	DeadLetterMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.DeadLetterOptions) error
	DeferMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.DeferMessageOptions) error
	PeekMessages(ctx context.Context, maxMessageCount int, options *azservicebus.PeekMessagesOptions) ([]*azservicebus.ReceivedMessage, error)
	ReceiveDeferredMessages(ctx context.Context, sequenceNumbers []int64, options *azservicebus.ReceiveDeferredMessagesOptions) ([]*azservicebus.ReceivedMessage, error)
	ReceiveMessages(ctx context.Context, maxMessages int, options *azservicebus.ReceiveMessagesOptions) ([]*azservicebus.ReceivedMessage, error)
}

// receiverAPI is every method of *azservicebus.Receiver.
type receiverAPI interface {
	settlerAPI
	RenewMessageLock(ctx context.Context, msg *azservicebus.ReceivedMessage, options *azservicebus.RenewMessageLockOptions) error
}

// sessionReceiverAPI is every method of *azservicebus.SessionReceiver.
type sessionReceiverAPI interface {
	settlerAPI
	GetSessionState(ctx context.Context, options *azservicebus.GetSessionStateOptions) ([]byte, error)
	LockedUntil() time.Time
	RenewSessionLock(ctx context.Context, options *azservicebus.RenewSessionLockOptions) error
	SessionID() string
	SetSessionState(ctx context.Context, state []byte, options *azservicebus.SetSessionStateOptions) error
}

// clientAPI is every method of *azservicebus.Client, with the sender and
// receiver types as parameters: the SDK's client returns the SDK's, azsb's
// returns azsb's.
type clientAPI[S senderAPI, R receiverAPI, SR sessionReceiverAPI] interface {
	AcceptNextSessionForQueue(ctx context.Context, queueName string, options *azservicebus.SessionReceiverOptions) (SR, error)
	AcceptNextSessionForSubscription(ctx context.Context, topicName string, subscriptionName string, options *azservicebus.SessionReceiverOptions) (SR, error)
	AcceptSessionForQueue(ctx context.Context, queueName string, sessionID string, options *azservicebus.SessionReceiverOptions) (SR, error)
	AcceptSessionForSubscription(ctx context.Context, topicName string, subscriptionName string, sessionID string, options *azservicebus.SessionReceiverOptions) (SR, error)
	Close(ctx context.Context) error
	NewListSessionsForQueuePager(queueName string, options *azservicebus.ListSessionsOptions) *runtime.Pager[azservicebus.ListSessionsResponse]
	NewListSessionsForSubscriptionPager(topicName string, subscriptionName string, options *azservicebus.ListSessionsOptions) *runtime.Pager[azservicebus.ListSessionsResponse]
	NewReceiverForQueue(queueName string, options *azservicebus.ReceiverOptions) (R, error)
	NewReceiverForSubscription(topicName string, subscriptionName string, options *azservicebus.ReceiverOptions) (R, error)
	NewSender(queueOrTopic string, options *azservicebus.NewSenderOptions) (S, error)
}

// adminAPI is every method of *admin.Client.
type adminAPI interface {
	CreateQueue(ctx context.Context, queueName string, options *admin.CreateQueueOptions) (admin.CreateQueueResponse, error)
	CreateRule(ctx context.Context, topicName string, subscriptionName string, options *admin.CreateRuleOptions) (admin.CreateRuleResponse, error)
	CreateSubscription(ctx context.Context, topicName string, subscriptionName string, options *admin.CreateSubscriptionOptions) (admin.CreateSubscriptionResponse, error)
	CreateTopic(ctx context.Context, topicName string, options *admin.CreateTopicOptions) (admin.CreateTopicResponse, error)
	DeleteQueue(ctx context.Context, queueName string, options *admin.DeleteQueueOptions) (admin.DeleteQueueResponse, error)
	DeleteRule(ctx context.Context, topicName string, subscriptionName string, ruleName string, options *admin.DeleteRuleOptions) (admin.DeleteRuleResponse, error)
	DeleteSubscription(ctx context.Context, topicName string, subscriptionName string, options *admin.DeleteSubscriptionOptions) (admin.DeleteSubscriptionResponse, error)
	DeleteTopic(ctx context.Context, topicName string, options *admin.DeleteTopicOptions) (admin.DeleteTopicResponse, error)
	GetNamespaceProperties(ctx context.Context, options *admin.GetNamespacePropertiesOptions) (admin.GetNamespacePropertiesResponse, error)
	GetQueue(ctx context.Context, queueName string, options *admin.GetQueueOptions) (*admin.GetQueueResponse, error)
	GetQueueRuntimeProperties(ctx context.Context, queueName string, options *admin.GetQueueRuntimePropertiesOptions) (*admin.GetQueueRuntimePropertiesResponse, error)
	GetRule(ctx context.Context, topicName string, subscriptionName string, ruleName string, options *admin.GetRuleOptions) (*admin.GetRuleResponse, error)
	GetSubscription(ctx context.Context, topicName string, subscriptionName string, options *admin.GetSubscriptionOptions) (*admin.GetSubscriptionResponse, error)
	GetSubscriptionRuntimeProperties(ctx context.Context, topicName string, subscriptionName string, options *admin.GetSubscriptionRuntimePropertiesOptions) (*admin.GetSubscriptionRuntimePropertiesResponse, error)
	GetTopic(ctx context.Context, topicName string, options *admin.GetTopicOptions) (*admin.GetTopicResponse, error)
	GetTopicRuntimeProperties(ctx context.Context, topicName string, options *admin.GetTopicRuntimePropertiesOptions) (*admin.GetTopicRuntimePropertiesResponse, error)
	NewListQueuesPager(options *admin.ListQueuesOptions) *runtime.Pager[admin.ListQueuesResponse]
	NewListQueuesRuntimePropertiesPager(options *admin.ListQueuesRuntimePropertiesOptions) *runtime.Pager[admin.ListQueuesRuntimePropertiesResponse]
	NewListRulesPager(topicName string, subscriptionName string, options *admin.ListRulesOptions) *runtime.Pager[admin.ListRulesResponse]
	NewListSubscriptionsPager(topicName string, options *admin.ListSubscriptionsOptions) *runtime.Pager[admin.ListSubscriptionsResponse]
	NewListSubscriptionsRuntimePropertiesPager(topicName string, options *admin.ListSubscriptionsRuntimePropertiesOptions) *runtime.Pager[admin.ListSubscriptionsRuntimePropertiesResponse]
	NewListTopicsPager(options *admin.ListTopicsOptions) *runtime.Pager[admin.ListTopicsResponse]
	NewListTopicsRuntimePropertiesPager(options *admin.ListTopicsRuntimePropertiesOptions) *runtime.Pager[admin.ListTopicsRuntimePropertiesResponse]
	UpdateQueue(ctx context.Context, queueName string, properties admin.QueueProperties, options *admin.UpdateQueueOptions) (admin.UpdateQueueResponse, error)
	UpdateRule(ctx context.Context, topicName string, subscriptionName string, properties admin.RuleProperties) (admin.UpdateRuleResponse, error)
	UpdateSubscription(ctx context.Context, topicName string, subscriptionName string, properties admin.SubscriptionProperties, options *admin.UpdateSubscriptionOptions) (admin.UpdateSubscriptionResponse, error)
	UpdateTopic(ctx context.Context, topicName string, properties admin.TopicProperties, options *admin.UpdateTopicOptions) (admin.UpdateTopicResponse, error)
}

// Compile-time checks: the SDK's types and azsb's satisfy the same
// interfaces.
var (
	_ senderAPI          = (*azservicebus.Sender)(nil)
	_ senderAPI          = (*azsb.Sender)(nil)
	_ receiverAPI        = (*azservicebus.Receiver)(nil)
	_ receiverAPI        = (*azsb.Receiver)(nil)
	_ sessionReceiverAPI = (*azservicebus.SessionReceiver)(nil)
	_ sessionReceiverAPI = (*azsb.SessionReceiver)(nil)

	_ clientAPI[*azservicebus.Sender, *azservicebus.Receiver, *azservicebus.SessionReceiver] = (*azservicebus.Client)(nil)
	_ clientAPI[*azsb.Sender, *azsb.Receiver, *azsb.SessionReceiver]                         = (*azsb.Client)(nil)

	_ adminAPI = (*admin.Client)(nil)
	_ adminAPI = (*azsb.AdminClient)(nil)
)

// knownMissing are the SDK methods azsb leaves out on purpose, with why
// ("Client.Method": "reason"). None: azsb has every method of the SDK's
// types.
var knownMissing = map[string]string{}

// TestMethodSets compares, by reflection, the method sets of the SDK's types
// and azsb's: it names every method the SDK has and azsb lacks (or has with
// another signature), and every exported method azsb adds, so that a new
// SDK version's additions show up here.
func TestMethodSets(t *testing.T) {
	// In Client's results, the SDK's sender and receiver types stand for
	// azsb's.
	subst := map[reflect.Type]reflect.Type{
		reflect.TypeFor[*azservicebus.Sender]():          reflect.TypeFor[*azsb.Sender](),
		reflect.TypeFor[*azservicebus.Receiver]():        reflect.TypeFor[*azsb.Receiver](),
		reflect.TypeFor[*azservicebus.SessionReceiver](): reflect.TypeFor[*azsb.SessionReceiver](),
	}
	pairs := []struct {
		name    string
		sdk, mb reflect.Type
	}{
		{"Client", reflect.TypeFor[*azservicebus.Client](), reflect.TypeFor[*azsb.Client]()},
		{"Sender", reflect.TypeFor[*azservicebus.Sender](), reflect.TypeFor[*azsb.Sender]()},
		{"Receiver", reflect.TypeFor[*azservicebus.Receiver](), reflect.TypeFor[*azsb.Receiver]()},
		{"SessionReceiver", reflect.TypeFor[*azservicebus.SessionReceiver](), reflect.TypeFor[*azsb.SessionReceiver]()},
		{"admin.Client", reflect.TypeFor[*admin.Client](), reflect.TypeFor[*azsb.AdminClient]()},
	}
	var problems []string
	for _, p := range pairs {
		for i := range p.sdk.NumMethod() {
			m := p.sdk.Method(i)
			key := p.name + "." + m.Name
			got, ok := p.mb.MethodByName(m.Name)
			if !ok {
				if _, known := knownMissing[key]; !known {
					problems = append(problems, "azsb lacks "+key+" "+m.Type.String())
				}
				continue
			}
			if want := signature(m.Type, subst); want != signature(got.Type, nil) {
				problems = append(problems, "azsb's "+key+" is "+signature(got.Type, nil)+", the SDK's "+want)
			}
		}
		for i := range p.mb.NumMethod() {
			m := p.mb.Method(i)
			if _, ok := p.sdk.MethodByName(m.Name); !ok {
				problems = append(problems, "azsb adds "+p.name+"."+m.Name+", which the SDK does not have")
			}
		}
	}
	require.Empty(t, problems, "method sets differ:\n%s", strings.Join(problems, "\n"))
	for key, why := range knownMissing {
		t.Logf("left out on purpose: %s (%s)", key, why)
	}
}

// signature writes a method type without its receiver, substituting types.
func signature(ft reflect.Type, subst map[reflect.Type]reflect.Type) string {
	name := func(t reflect.Type) string {
		if s, ok := subst[t]; ok {
			t = s
		}
		return t.String()
	}
	var in, out []string
	for i := 1; i < ft.NumIn(); i++ {
		in = append(in, name(ft.In(i)))
	}
	for i := range ft.NumOut() {
		out = append(out, name(ft.Out(i)))
	}
	return "func(" + strings.Join(in, ", ") + ") (" + strings.Join(out, ", ") + ")"
}
