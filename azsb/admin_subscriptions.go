package azsb

import (
	"context"
	"errors"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus/admin"
	"github.com/minibus-go/minibus"
)

// Subscriptions.

func subscriptionProps(p *admin.SubscriptionProperties) (minibus.SubscriptionProperties, entityExtras, error) {
	if p == nil {
		p = &admin.SubscriptionProperties{}
	}
	out := minibus.SubscriptionProperties{
		MaxDeliveryCount:                 deref(p.MaxDeliveryCount),
		DeadLetteringOnMessageExpiration: deref(p.DeadLetteringOnMessageExpiration),
		// The service's default is true.
		DeadLetteringOnFilterEvaluationExceptions: p.EnableDeadLetteringOnFilterEvaluationExceptions == nil || *p.EnableDeadLetteringOnFilterEvaluationExceptions,
		RequiresSession:               deref(p.RequiresSession),
		ForwardTo:                     deref(p.ForwardTo),
		ForwardDeadLetteredMessagesTo: deref(p.ForwardDeadLetteredMessagesTo),
	}
	x := entityExtras{batched: p.EnableBatchedOperations, userMetadata: p.UserMetadata}
	err := durations(
		"LockDuration", p.LockDuration, &out.LockDuration,
		"DefaultMessageTimeToLive", p.DefaultMessageTimeToLive, &out.DefaultMessageTimeToLive,
		"AutoDeleteOnIdle", p.AutoDeleteOnIdle, &out.AutoDeleteOnIdle)
	if err != nil {
		return out, x, err
	}
	if out.Status, err = status("Status", p.Status); err != nil {
		return out, x, err
	}
	if p.DefaultRule != nil {
		f, act, err := ruleToMinibus(p.DefaultRule.Filter, p.DefaultRule.Action)
		if err != nil {
			return out, x, err
		}
		out.DefaultRule = &minibus.RuleProperties{Name: p.DefaultRule.Name, Filter: f, Action: act}
	}
	return out, x, nil
}

func adminSubscriptionProps(p minibus.SubscriptionProperties, x entityExtras) admin.SubscriptionProperties {
	return admin.SubscriptionProperties{
		LockDuration:                                    to.Ptr(formatDuration(p.LockDuration)),
		RequiresSession:                                 to.Ptr(p.RequiresSession),
		DefaultMessageTimeToLive:                        to.Ptr(formatDuration(p.DefaultMessageTimeToLive)),
		DeadLetteringOnMessageExpiration:                to.Ptr(p.DeadLetteringOnMessageExpiration),
		EnableDeadLetteringOnFilterEvaluationExceptions: to.Ptr(p.DeadLetteringOnFilterEvaluationExceptions),
		MaxDeliveryCount:                                to.Ptr(p.MaxDeliveryCount),
		Status:                                          adminStatus(p.Status),
		AutoDeleteOnIdle:                                to.Ptr(formatDuration(p.AutoDeleteOnIdle)),
		ForwardTo:                                       orNil(p.ForwardTo),
		ForwardDeadLetteredMessagesTo:                   orNil(p.ForwardDeadLetteredMessagesTo),
		EnableBatchedOperations:                         orTrue(x.batched),
		UserMetadata:                                    x.userMetadata,
	}
}

func subPath(topic, sub string) string { return topic + "/Subscriptions/" + sub }

// CreateSubscription creates a subscription of the topic with its
// DefaultRule, or "$Default" with a TrueFilter. The response does not
// include the rule, as the service's does not. A missing topic is a 404
// *azcore.ResponseError; otherwise as CreateQueue.
func (a *AdminClient) CreateSubscription(ctx context.Context, topicName string, subscriptionName string, options *admin.CreateSubscriptionOptions) (admin.CreateSubscriptionResponse, error) {
	var p *admin.SubscriptionProperties
	if options != nil {
		p = options.Properties
	}
	props, err := a.putSubscription(ctx, topicName, subscriptionName, p, true)
	if err != nil {
		return admin.CreateSubscriptionResponse{}, err
	}
	return admin.CreateSubscriptionResponse{SubscriptionName: subscriptionName, TopicName: topicName, SubscriptionProperties: props}, nil
}

// UpdateSubscription replaces the subscription's properties; DefaultRule is
// ignored, as by the service (change rules with the rule calls). As
// UpdateQueue.
func (a *AdminClient) UpdateSubscription(ctx context.Context, topicName string, subscriptionName string, properties admin.SubscriptionProperties, options *admin.UpdateSubscriptionOptions) (admin.UpdateSubscriptionResponse, error) {
	properties.DefaultRule = nil
	props, err := a.putSubscription(ctx, topicName, subscriptionName, &properties, false)
	if err != nil {
		return admin.UpdateSubscriptionResponse{}, err
	}
	return admin.UpdateSubscriptionResponse{SubscriptionName: subscriptionName, TopicName: topicName, SubscriptionProperties: props}, nil
}

func (a *AdminClient) putSubscription(ctx context.Context, topic, name string, p *admin.SubscriptionProperties, creating bool) (admin.SubscriptionProperties, error) {
	path := "/" + subPath(topic, name)
	if err := ctx.Err(); err != nil {
		return admin.SubscriptionProperties{}, err
	}
	props, x, err := subscriptionProps(p)
	if err != nil {
		var plain *sdkError
		if errors.As(err, &plain) { // the SDK's own client-side refusal
			return admin.SubscriptionProperties{}, err
		}
		return admin.SubscriptionProperties{}, responseError(http.StatusBadRequest, http.MethodPut, path, err)
	}
	t, err := a.ns.Topic(topic)
	if err != nil {
		return admin.SubscriptionProperties{}, adminError(err, http.MethodPut, path)
	}
	var s *minibus.Subscription
	if creating {
		s, err = t.CreateSubscription(name, &props)
	} else {
		s, err = t.UpdateSubscription(name, props)
	}
	if err != nil {
		return admin.SubscriptionProperties{}, adminError(err, http.MethodPut, path)
	}
	x.id = *s
	a.x.set(subPath(t.Name(), s.Name()), x)
	return adminSubscriptionProps(s.Properties(), x), nil
}

func (a *AdminClient) findSubscription(ctx context.Context, topic, name string) (*minibus.Subscription, error) {
	t, err := a.findTopic(ctx, topic)
	if t == nil || err != nil {
		return nil, err
	}
	s, err := t.Subscription(name)
	if errors.Is(err, minibus.ErrNotFound) || errors.Is(err, minibus.ErrInvalidArgument) {
		return nil, nil
	}
	return s, err
}

func (a *AdminClient) subscriptionProperties(s *minibus.Subscription) admin.SubscriptionProperties {
	return adminSubscriptionProps(s.Properties(), a.x.get(subPath(s.Topic(), s.Name()), *s))
}

// GetSubscription returns the subscription's properties, or nil and no
// error if there is no such topic or subscription.
func (a *AdminClient) GetSubscription(ctx context.Context, topicName string, subscriptionName string, options *admin.GetSubscriptionOptions) (*admin.GetSubscriptionResponse, error) {
	s, err := a.findSubscription(ctx, topicName, subscriptionName)
	if s == nil || err != nil {
		return nil, err
	}
	return &admin.GetSubscriptionResponse{SubscriptionName: subscriptionName, TopicName: topicName, SubscriptionProperties: a.subscriptionProperties(s)}, nil
}

// GetSubscriptionRuntimeProperties returns the subscription's counts and
// times, or nil and no error if there is no such topic or subscription.
func (a *AdminClient) GetSubscriptionRuntimeProperties(ctx context.Context, topicName string, subscriptionName string, options *admin.GetSubscriptionRuntimePropertiesOptions) (*admin.GetSubscriptionRuntimePropertiesResponse, error) {
	s, err := a.findSubscription(ctx, topicName, subscriptionName)
	if s == nil || err != nil {
		return nil, err
	}
	return &admin.GetSubscriptionRuntimePropertiesResponse{TopicName: topicName, SubscriptionName: subscriptionName,
		SubscriptionRuntimeProperties: subscriptionRuntime(s.RuntimeProperties())}, nil
}

func subscriptionRuntime(r minibus.SubscriptionRuntimeProperties) admin.SubscriptionRuntimeProperties {
	return admin.SubscriptionRuntimeProperties{
		TotalMessageCount:              r.TotalMessageCount,
		ActiveMessageCount:             clamp32(r.ActiveMessageCount),
		DeadLetterMessageCount:         clamp32(r.DeadLetterMessageCount),
		TransferMessageCount:           clamp32(r.TransferMessageCount),
		TransferDeadLetterMessageCount: clamp32(r.TransferDeadLetterMessageCount),
		AccessedAt:                     r.AccessedAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// DeleteSubscription deletes the subscription and its messages. A missing
// topic or subscription is a 404 *azcore.ResponseError.
func (a *AdminClient) DeleteSubscription(ctx context.Context, topicName string, subscriptionName string, options *admin.DeleteSubscriptionOptions) (admin.DeleteSubscriptionResponse, error) {
	path := "/" + subPath(topicName, subscriptionName)
	if err := ctx.Err(); err != nil {
		return admin.DeleteSubscriptionResponse{}, err
	}
	t, err := a.ns.Topic(topicName)
	if err == nil {
		err = t.DeleteSubscription(subscriptionName)
	}
	if err != nil {
		return admin.DeleteSubscriptionResponse{}, adminError(err, http.MethodDelete, path)
	}
	a.x.drop(subPath(topicName, subscriptionName))
	return admin.DeleteSubscriptionResponse{}, nil
}

// subscriptionNames lists the topic's subscriptions; a missing topic lists
// none, as the service's empty feed does.
func (a *AdminClient) subscriptionNames(topic string) func() ([]string, error) {
	return func() ([]string, error) {
		if err := a.noNamespace(http.MethodGet, "/"+topic+"/Subscriptions"); err != nil {
			return nil, err
		}
		t, err := a.ns.Topic(topic)
		if err != nil {
			return nil, nil
		}
		return t.Subscriptions(), nil
	}
}

func (a *AdminClient) subscription(topic, name string) (*minibus.Subscription, bool) {
	t, err := a.ns.Topic(topic)
	if err != nil {
		return nil, false
	}
	s, err := t.Subscription(name)
	return s, err == nil
}

// NewListSubscriptionsPager lists the topic's subscriptions, by name.
func (a *AdminClient) NewListSubscriptionsPager(topicName string, options *admin.ListSubscriptionsOptions) *runtime.Pager[admin.ListSubscriptionsResponse] {
	var size int32
	if options != nil {
		size = options.MaxPageSize
	}
	return newPager(size, a.subscriptionNames(topicName), func(n string) (admin.SubscriptionPropertiesItem, bool) {
		s, ok := a.subscription(topicName, n)
		if !ok {
			return admin.SubscriptionPropertiesItem{}, false
		}
		return admin.SubscriptionPropertiesItem{TopicName: topicName, SubscriptionName: s.Name(), SubscriptionProperties: a.subscriptionProperties(s)}, true
	}, func(items []admin.SubscriptionPropertiesItem) admin.ListSubscriptionsResponse {
		return admin.ListSubscriptionsResponse{Subscriptions: items}
	})
}

// NewListSubscriptionsRuntimePropertiesPager lists the topic's
// subscriptions' counts and times.
func (a *AdminClient) NewListSubscriptionsRuntimePropertiesPager(topicName string, options *admin.ListSubscriptionsRuntimePropertiesOptions) *runtime.Pager[admin.ListSubscriptionsRuntimePropertiesResponse] {
	var size int32
	if options != nil {
		size = options.MaxPageSize
	}
	return newPager(size, a.subscriptionNames(topicName), func(n string) (admin.SubscriptionRuntimePropertiesItem, bool) {
		s, ok := a.subscription(topicName, n)
		if !ok {
			return admin.SubscriptionRuntimePropertiesItem{}, false
		}
		return admin.SubscriptionRuntimePropertiesItem{TopicName: topicName, SubscriptionName: s.Name(),
			SubscriptionRuntimeProperties: subscriptionRuntime(s.RuntimeProperties())}, true
	}, func(items []admin.SubscriptionRuntimePropertiesItem) admin.ListSubscriptionsRuntimePropertiesResponse {
		return admin.ListSubscriptionsRuntimePropertiesResponse{SubscriptionRuntimeProperties: items}
	})
}
