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
	if err := a.noNamespace(http.MethodGet, "/"+name); err != nil {
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

func (a *AdminClient) queueNames() ([]string, error) {
	if err := a.noNamespace(http.MethodGet, "/$Resources/queues"); err != nil {
		return nil, err
	}
	return a.ns.Queues(), nil
}
