package azsb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus/admin"
	"github.com/minibus-go/minibus"
)

// Conversions between the admin package's properties and minibus's. On the
// way in a nil field is minibus's zero, "the default"; on the way out every
// field the service fills is filled (durations as ISO 8601, "never" as
// TimeSpan.MaxValue), and ForwardTo, ForwardDeadLetteredMessagesTo and
// UserMetadata stay nil unless set.

func status(field string, s *admin.EntityStatus) (minibus.EntityStatus, error) {
	if s == nil {
		return minibus.EntityStatusActive, nil
	}
	switch *s {
	case admin.EntityStatusActive:
		return minibus.EntityStatusActive, nil
	case admin.EntityStatusDisabled:
		return minibus.EntityStatusDisabled, nil
	case admin.EntityStatusSendDisabled:
		return minibus.EntityStatusSendDisabled, nil
	case admin.EntityStatusReceiveDisabled:
		return minibus.EntityStatusReceiveDisabled, nil
	}
	return 0, fmt.Errorf("azsb: %s: %q is not an entity status: %w", field, *s, minibus.ErrInvalidArgument)
}

func adminStatus(s minibus.EntityStatus) *admin.EntityStatus {
	v := admin.EntityStatusActive
	switch s {
	case minibus.EntityStatusDisabled:
		v = admin.EntityStatusDisabled
	case minibus.EntityStatusSendDisabled:
		v = admin.EntityStatusSendDisabled
	case minibus.EntityStatusReceiveDisabled:
		v = admin.EntityStatusReceiveDisabled
	}
	return &v
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func orNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// durations parses the duration fields named in order into the pointers.
func durations(pairs ...any) error {
	for i := 0; i < len(pairs); i += 3 {
		d, err := parseDuration(pairs[i].(string), pairs[i+1].(*string))
		if err != nil {
			return err
		}
		*pairs[i+2].(*time.Duration) = d
	}
	return nil
}

func clamp32(n int64) int32 { return int32(min(n, math.MaxInt32)) }

// Queues.

func queueProps(p *admin.QueueProperties) (minibus.QueueProperties, entityExtras, error) {
	if p == nil {
		p = &admin.QueueProperties{}
	}
	out := minibus.QueueProperties{
		MaxSizeInMegabytes:               deref(p.MaxSizeInMegabytes),
		RequiresDuplicateDetection:       deref(p.RequiresDuplicateDetection),
		RequiresSession:                  deref(p.RequiresSession),
		DeadLetteringOnMessageExpiration: deref(p.DeadLetteringOnMessageExpiration),
		MaxDeliveryCount:                 deref(p.MaxDeliveryCount),
		ForwardTo:                        deref(p.ForwardTo),
		ForwardDeadLetteredMessagesTo:    deref(p.ForwardDeadLetteredMessagesTo),
		MaxMessageSizeInKilobytes:        deref(p.MaxMessageSizeInKilobytes),
	}
	x := entityExtras{batched: p.EnableBatchedOperations, partitioning: p.EnablePartitioning, userMetadata: p.UserMetadata,
		authorizationRules: slices.Clone(p.AuthorizationRules)}
	err := durations(
		"LockDuration", p.LockDuration, &out.LockDuration,
		"DefaultMessageTimeToLive", p.DefaultMessageTimeToLive, &out.DefaultMessageTimeToLive,
		"DuplicateDetectionHistoryTimeWindow", p.DuplicateDetectionHistoryTimeWindow, &out.DuplicateDetectionHistoryTimeWindow,
		"AutoDeleteOnIdle", p.AutoDeleteOnIdle, &out.AutoDeleteOnIdle)
	if err != nil {
		return out, x, err
	}
	out.Status, err = status("Status", p.Status)
	return out, x, err
}

func adminQueueProps(p minibus.QueueProperties, x entityExtras) admin.QueueProperties {
	return admin.QueueProperties{
		LockDuration:                        to.Ptr(formatDuration(p.LockDuration)),
		MaxSizeInMegabytes:                  to.Ptr(p.MaxSizeInMegabytes),
		RequiresDuplicateDetection:          to.Ptr(p.RequiresDuplicateDetection),
		RequiresSession:                     to.Ptr(p.RequiresSession),
		DefaultMessageTimeToLive:            to.Ptr(formatDuration(p.DefaultMessageTimeToLive)),
		DeadLetteringOnMessageExpiration:    to.Ptr(p.DeadLetteringOnMessageExpiration),
		DuplicateDetectionHistoryTimeWindow: to.Ptr(formatDuration(p.DuplicateDetectionHistoryTimeWindow)),
		MaxDeliveryCount:                    to.Ptr(p.MaxDeliveryCount),
		EnableBatchedOperations:             orTrue(x.batched),
		Status:                              adminStatus(p.Status),
		AutoDeleteOnIdle:                    to.Ptr(formatDuration(p.AutoDeleteOnIdle)),
		EnablePartitioning:                  to.Ptr(deref(x.partitioning)),
		ForwardTo:                           orNil(p.ForwardTo),
		ForwardDeadLetteredMessagesTo:       orNil(p.ForwardDeadLetteredMessagesTo),
		UserMetadata:                        x.userMetadata,
		AuthorizationRules:                  slices.Clone(x.authorizationRules),
		MaxMessageSizeInKilobytes:           to.Ptr(p.MaxMessageSizeInKilobytes),
	}
}

func orTrue(b *bool) *bool {
	if b == nil {
		return to.Ptr(true)
	}
	return to.Ptr(*b)
}

// CreateQueue creates a queue with options.Properties (nil fields: the
// service's defaults) and returns its properties as the service reports
// them. A name taken is a 409 *azcore.ResponseError, a property minibus
// refuses a 400.
func (a *AdminClient) CreateQueue(ctx context.Context, queueName string, options *admin.CreateQueueOptions) (admin.CreateQueueResponse, error) {
	var p *admin.QueueProperties
	if options != nil {
		p = options.Properties
	}
	props, err := a.putQueue(ctx, queueName, p, true)
	if err != nil {
		return admin.CreateQueueResponse{}, err
	}
	return admin.CreateQueueResponse{QueueName: queueName, QueueProperties: props}, nil
}

// UpdateQueue replaces the queue's properties with properties, as the
// service's PUT does (nil fields: the defaults). A missing queue is a 404
// *azcore.ResponseError; a change minibus refuses (RequiresSession, say) a
// 400.
func (a *AdminClient) UpdateQueue(ctx context.Context, queueName string, properties admin.QueueProperties, options *admin.UpdateQueueOptions) (admin.UpdateQueueResponse, error) {
	props, err := a.putQueue(ctx, queueName, &properties, false)
	if err != nil {
		return admin.UpdateQueueResponse{}, err
	}
	return admin.UpdateQueueResponse{QueueName: queueName, QueueProperties: props}, nil
}

func (a *AdminClient) putQueue(ctx context.Context, name string, p *admin.QueueProperties, creating bool) (admin.QueueProperties, error) {
	if err := ctx.Err(); err != nil {
		return admin.QueueProperties{}, err
	}
	props, x, err := queueProps(p)
	if err != nil {
		return admin.QueueProperties{}, responseError(http.StatusBadRequest, http.MethodPut, "/"+name, err)
	}
	var q *minibus.Queue
	if creating {
		q, err = a.ns.CreateQueue(name, &props)
	} else {
		q, err = a.ns.UpdateQueue(name, props)
	}
	if err != nil {
		return admin.QueueProperties{}, adminError(err, http.MethodPut, "/"+name)
	}
	x.id = *q
	a.x.set(q.Name(), x)
	return adminQueueProps(q.Properties(), x), nil
}

// GetQueue returns the queue's properties, or nil and no error if there is
// no such queue.
func (a *AdminClient) GetQueue(ctx context.Context, queueName string, options *admin.GetQueueOptions) (*admin.GetQueueResponse, error) {
	q, err := a.findQueue(ctx, queueName)
	if q == nil || err != nil {
		return nil, err
	}
	return &admin.GetQueueResponse{QueueName: queueName, QueueProperties: a.queueProperties(q)}, nil
}

func (a *AdminClient) queueProperties(q *minibus.Queue) admin.QueueProperties {
	return adminQueueProps(q.Properties(), a.x.get(q.Name(), *q))
}

// findQueue returns the queue, nil if there is none.
func (a *AdminClient) findQueue(ctx context.Context, name string) (*minibus.Queue, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q, err := a.ns.Queue(name)
	if errors.Is(err, minibus.ErrNotFound) || errors.Is(err, minibus.ErrInvalidArgument) {
		return nil, nil
	}
	return q, err
}

// GetQueueRuntimeProperties returns the queue's counts and times, or nil
// and no error if there is no such queue. Counts are exact (minibus's
// SEMANTICS T3), and int32 as in the admin package.
func (a *AdminClient) GetQueueRuntimeProperties(ctx context.Context, queueName string, options *admin.GetQueueRuntimePropertiesOptions) (*admin.GetQueueRuntimePropertiesResponse, error) {
	q, err := a.findQueue(ctx, queueName)
	if q == nil || err != nil {
		return nil, err
	}
	return &admin.GetQueueRuntimePropertiesResponse{QueueName: queueName, QueueRuntimeProperties: queueRuntime(q.RuntimeProperties())}, nil
}

func queueRuntime(r minibus.QueueRuntimeProperties) admin.QueueRuntimeProperties {
	return admin.QueueRuntimeProperties{
		SizeInBytes: r.SizeInBytes, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, AccessedAt: r.AccessedAt,
		TotalMessageCount:              r.TotalMessageCount,
		ActiveMessageCount:             clamp32(r.ActiveMessageCount),
		DeadLetterMessageCount:         clamp32(r.DeadLetterMessageCount),
		ScheduledMessageCount:          clamp32(r.ScheduledMessageCount),
		TransferDeadLetterMessageCount: clamp32(r.TransferDeadLetterMessageCount),
		TransferMessageCount:           clamp32(r.TransferMessageCount),
	}
}

// DeleteQueue deletes the queue and its messages. A missing queue is a 404
// *azcore.ResponseError.
func (a *AdminClient) DeleteQueue(ctx context.Context, queueName string, options *admin.DeleteQueueOptions) (admin.DeleteQueueResponse, error) {
	if err := ctx.Err(); err != nil {
		return admin.DeleteQueueResponse{}, err
	}
	if err := a.ns.DeleteQueue(queueName); err != nil {
		return admin.DeleteQueueResponse{}, adminError(err, http.MethodDelete, "/"+queueName)
	}
	a.x.drop(queueName)
	return admin.DeleteQueueResponse{}, nil
}

// NewListQueuesPager lists the queues, by name, in pages of
// options.MaxPageSize (default: the service's 100).
func (a *AdminClient) NewListQueuesPager(options *admin.ListQueuesOptions) *runtime.Pager[admin.ListQueuesResponse] {
	var size int32
	if options != nil {
		size = options.MaxPageSize
	}
	return newPager(size, a.queueNames, func(n string) (admin.QueueItem, bool) {
		q, err := a.ns.Queue(n)
		if err != nil {
			return admin.QueueItem{}, false
		}
		return admin.QueueItem{QueueName: q.Name(), QueueProperties: a.queueProperties(q)}, true
	}, func(items []admin.QueueItem) admin.ListQueuesResponse { return admin.ListQueuesResponse{Queues: items} })
}

// NewListQueuesRuntimePropertiesPager lists the queues' counts and times.
func (a *AdminClient) NewListQueuesRuntimePropertiesPager(options *admin.ListQueuesRuntimePropertiesOptions) *runtime.Pager[admin.ListQueuesRuntimePropertiesResponse] {
	var size int32
	if options != nil {
		size = options.MaxPageSize
	}
	return newPager(size, a.queueNames, func(n string) (admin.QueueRuntimePropertiesItem, bool) {
		q, err := a.ns.Queue(n)
		if err != nil {
			return admin.QueueRuntimePropertiesItem{}, false
		}
		return admin.QueueRuntimePropertiesItem{QueueName: q.Name(), QueueRuntimeProperties: queueRuntime(q.RuntimeProperties())}, true
	}, func(items []admin.QueueRuntimePropertiesItem) admin.ListQueuesRuntimePropertiesResponse {
		return admin.ListQueuesRuntimePropertiesResponse{QueueRuntimeProperties: items}
	})
}

func (a *AdminClient) queueNames() ([]string, error) { return a.ns.Queues(), nil }

// Topics.

func topicProps(p *admin.TopicProperties) (minibus.TopicProperties, entityExtras, error) {
	if p == nil {
		p = &admin.TopicProperties{}
	}
	out := minibus.TopicProperties{
		MaxSizeInMegabytes:         deref(p.MaxSizeInMegabytes),
		RequiresDuplicateDetection: deref(p.RequiresDuplicateDetection),
		MaxMessageSizeInKilobytes:  deref(p.MaxMessageSizeInKilobytes),
	}
	x := entityExtras{batched: p.EnableBatchedOperations, partitioning: p.EnablePartitioning, supportOrdering: p.SupportOrdering,
		userMetadata: p.UserMetadata, authorizationRules: slices.Clone(p.AuthorizationRules)}
	err := durations(
		"DefaultMessageTimeToLive", p.DefaultMessageTimeToLive, &out.DefaultMessageTimeToLive,
		"DuplicateDetectionHistoryTimeWindow", p.DuplicateDetectionHistoryTimeWindow, &out.DuplicateDetectionHistoryTimeWindow,
		"AutoDeleteOnIdle", p.AutoDeleteOnIdle, &out.AutoDeleteOnIdle)
	if err != nil {
		return out, x, err
	}
	out.Status, err = status("Status", p.Status)
	return out, x, err
}

func adminTopicProps(p minibus.TopicProperties, x entityExtras) admin.TopicProperties {
	return admin.TopicProperties{
		MaxSizeInMegabytes:                  to.Ptr(p.MaxSizeInMegabytes),
		RequiresDuplicateDetection:          to.Ptr(p.RequiresDuplicateDetection),
		DefaultMessageTimeToLive:            to.Ptr(formatDuration(p.DefaultMessageTimeToLive)),
		DuplicateDetectionHistoryTimeWindow: to.Ptr(formatDuration(p.DuplicateDetectionHistoryTimeWindow)),
		EnableBatchedOperations:             orTrue(x.batched),
		Status:                              adminStatus(p.Status),
		AutoDeleteOnIdle:                    to.Ptr(formatDuration(p.AutoDeleteOnIdle)),
		EnablePartitioning:                  to.Ptr(deref(x.partitioning)),
		SupportOrdering:                     to.Ptr(deref(x.supportOrdering)),
		UserMetadata:                        x.userMetadata,
		AuthorizationRules:                  slices.Clone(x.authorizationRules),
		MaxMessageSizeInKilobytes:           to.Ptr(p.MaxMessageSizeInKilobytes),
	}
}

// CreateTopic creates a topic. As CreateQueue.
func (a *AdminClient) CreateTopic(ctx context.Context, topicName string, options *admin.CreateTopicOptions) (admin.CreateTopicResponse, error) {
	var p *admin.TopicProperties
	if options != nil {
		p = options.Properties
	}
	props, err := a.putTopic(ctx, topicName, p, true)
	if err != nil {
		return admin.CreateTopicResponse{}, err
	}
	return admin.CreateTopicResponse{TopicName: topicName, TopicProperties: props}, nil
}

// UpdateTopic replaces the topic's properties. As UpdateQueue.
func (a *AdminClient) UpdateTopic(ctx context.Context, topicName string, properties admin.TopicProperties, options *admin.UpdateTopicOptions) (admin.UpdateTopicResponse, error) {
	props, err := a.putTopic(ctx, topicName, &properties, false)
	if err != nil {
		return admin.UpdateTopicResponse{}, err
	}
	return admin.UpdateTopicResponse{TopicName: topicName, TopicProperties: props}, nil
}

func (a *AdminClient) putTopic(ctx context.Context, name string, p *admin.TopicProperties, creating bool) (admin.TopicProperties, error) {
	if err := ctx.Err(); err != nil {
		return admin.TopicProperties{}, err
	}
	props, x, err := topicProps(p)
	if err != nil {
		return admin.TopicProperties{}, responseError(http.StatusBadRequest, http.MethodPut, "/"+name, err)
	}
	var t *minibus.Topic
	if creating {
		t, err = a.ns.CreateTopic(name, &props)
	} else {
		t, err = a.ns.UpdateTopic(name, props)
	}
	if err != nil {
		return admin.TopicProperties{}, adminError(err, http.MethodPut, "/"+name)
	}
	x.id = *t
	a.x.set(t.Name(), x)
	return adminTopicProps(t.Properties(), x), nil
}

func (a *AdminClient) findTopic(ctx context.Context, name string) (*minibus.Topic, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, err := a.ns.Topic(name)
	if errors.Is(err, minibus.ErrNotFound) || errors.Is(err, minibus.ErrInvalidArgument) {
		return nil, nil
	}
	return t, err
}

func (a *AdminClient) topicProperties(t *minibus.Topic) admin.TopicProperties {
	return adminTopicProps(t.Properties(), a.x.get(t.Name(), *t))
}

// GetTopic returns the topic's properties, or nil and no error if there is
// no such topic.
func (a *AdminClient) GetTopic(ctx context.Context, topicName string, options *admin.GetTopicOptions) (*admin.GetTopicResponse, error) {
	t, err := a.findTopic(ctx, topicName)
	if t == nil || err != nil {
		return nil, err
	}
	return &admin.GetTopicResponse{TopicName: topicName, TopicProperties: a.topicProperties(t)}, nil
}

// GetTopicRuntimeProperties returns the topic's counts and times, or nil
// and no error if there is no such topic. SQLFilterCount counts the SQL,
// true and false filters of all its subscriptions' rules ($Default
// included), CorrelationFilterCount their correlation filters.
func (a *AdminClient) GetTopicRuntimeProperties(ctx context.Context, topicName string, options *admin.GetTopicRuntimePropertiesOptions) (*admin.GetTopicRuntimePropertiesResponse, error) {
	t, err := a.findTopic(ctx, topicName)
	if t == nil || err != nil {
		return nil, err
	}
	return &admin.GetTopicRuntimePropertiesResponse{TopicName: topicName, TopicRuntimeProperties: topicRuntime(t)}, nil
}

func topicRuntime(t *minibus.Topic) admin.TopicRuntimeProperties {
	r := t.RuntimeProperties()
	out := admin.TopicRuntimeProperties{
		SizeInBytes: r.SizeInBytes, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, AccessedAt: r.AccessedAt,
		SubscriptionCount: r.SubscriptionCount, ScheduledMessageCount: clamp32(r.ScheduledMessageCount),
	}
	for _, name := range t.Subscriptions() {
		s, err := t.Subscription(name)
		if err != nil {
			continue
		}
		for _, rule := range s.Rules() {
			if _, ok := rule.Filter.(minibus.CorrelationFilter); ok {
				out.CorrelationFilterCount++
			} else {
				out.SQLFilterCount++
			}
		}
	}
	return out
}

// DeleteTopic deletes the topic with its subscriptions. A missing topic is
// a 404 *azcore.ResponseError.
func (a *AdminClient) DeleteTopic(ctx context.Context, topicName string, options *admin.DeleteTopicOptions) (admin.DeleteTopicResponse, error) {
	if err := ctx.Err(); err != nil {
		return admin.DeleteTopicResponse{}, err
	}
	if err := a.ns.DeleteTopic(topicName); err != nil {
		return admin.DeleteTopicResponse{}, adminError(err, http.MethodDelete, "/"+topicName)
	}
	a.x.drop(topicName)
	return admin.DeleteTopicResponse{}, nil
}

// NewListTopicsPager lists the topics, by name.
func (a *AdminClient) NewListTopicsPager(options *admin.ListTopicsOptions) *runtime.Pager[admin.ListTopicsResponse] {
	var size int32
	if options != nil {
		size = options.MaxPageSize
	}
	return newPager(size, a.topicNames, func(n string) (admin.TopicItem, bool) {
		t, err := a.ns.Topic(n)
		if err != nil {
			return admin.TopicItem{}, false
		}
		return admin.TopicItem{TopicName: t.Name(), TopicProperties: a.topicProperties(t)}, true
	}, func(items []admin.TopicItem) admin.ListTopicsResponse { return admin.ListTopicsResponse{Topics: items} })
}

// NewListTopicsRuntimePropertiesPager lists the topics' counts and times.
func (a *AdminClient) NewListTopicsRuntimePropertiesPager(options *admin.ListTopicsRuntimePropertiesOptions) *runtime.Pager[admin.ListTopicsRuntimePropertiesResponse] {
	var size int32
	if options != nil {
		size = options.MaxPageSize
	}
	return newPager(size, a.topicNames, func(n string) (admin.TopicRuntimePropertiesItem, bool) {
		t, err := a.ns.Topic(n)
		if err != nil {
			return admin.TopicRuntimePropertiesItem{}, false
		}
		return admin.TopicRuntimePropertiesItem{TopicName: t.Name(), TopicRuntimeProperties: topicRuntime(t)}, true
	}, func(items []admin.TopicRuntimePropertiesItem) admin.ListTopicsRuntimePropertiesResponse {
		return admin.ListTopicsRuntimePropertiesResponse{TopicRuntimeProperties: items}
	})
}

func (a *AdminClient) topicNames() ([]string, error) { return a.ns.Topics(), nil }

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
