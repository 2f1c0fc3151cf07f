package azsb

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus/admin"
	"github.com/minibus-go/minibus"
)

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
	if err := a.noNamespace(http.MethodGet, "/"+name); err != nil {
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

func (a *AdminClient) topicNames() ([]string, error) {
	if err := a.noNamespace(http.MethodGet, "/$Resources/topics"); err != nil {
		return nil, err
	}
	return a.ns.Topics(), nil
}
