package server

import (
	"context"
	"errors"
	"time"

	"github.com/minibus-go/minibus"
)

// entity is what an entity address names: a queue, a topic, or a
// subscription with its topic. The handles stay valid until the entity is
// deleted; then their calls return ErrNotFound.
type entity struct {
	queue *minibus.Queue
	topic *minibus.Topic // a topic, or the parent of sub
	sub   *minibus.Subscription
}

// resolve looks up the entity the address names: a queue or topic by path,
// or a subscription by topic and name, case-insensitively (SEMANTICS V1).
// The sub-queue and node kind are not looked at: "orders/$management"
// resolves to the queue "orders". A missing entity is an error wrapping
// minibus.ErrNotFound that names it; $cbs names no entity
// (ErrInvalidArgument).
func (a address) resolve(ns *minibus.Namespace) (entity, error) {
	switch {
	case a.kind == nodeCBS:
		return entity{}, failf(minibus.ErrInvalidArgument, quoteAddress(a.String()), "names no entity")
	case a.sub != "":
		t, err := ns.Topic(a.topic)
		if err != nil {
			return entity{}, resolveFailed(err, "topic "+quoteName(a.topic))
		}
		s, err := t.Subscription(a.sub)
		if err != nil {
			return entity{}, resolveFailed(err, "subscription "+quoteName(a.path))
		}
		return entity{topic: t, sub: s}, nil
	}
	if q, err := ns.Queue(a.path); err == nil {
		return entity{queue: q}, nil
	} else if !isEntityNotFound(err) {
		return entity{}, err
	}
	t, err := ns.Topic(a.path)
	if err != nil {
		return entity{}, resolveFailed(err, "queue or topic "+quoteName(a.path))
	}
	return entity{topic: t}, nil
}

// resolveFailed names what was not found; other errors (a closed
// namespace) pass as they are.
func resolveFailed(err error, what string) error {
	if isEntityNotFound(err) {
		return failf(minibus.ErrNotFound, what, "no such entity")
	}
	return err
}

// String names the entity for errors and logs: `queue "orders"`,
// `topic "events"`, `subscription "events/Subscriptions/audit"`.
func (e entity) String() string {
	switch {
	case e.queue != nil:
		return "queue " + quoteName(e.queue.Name())
	case e.sub != nil:
		return "subscription " + quoteName(e.sub.Topic()+"/"+segSubscriptions+"/"+e.sub.Name())
	case e.topic != nil:
		return "topic " + quoteName(e.topic.Name())
	}
	return "no entity"
}

// canSend reports whether messages can be sent to the entity: a queue or a
// topic.
func (e entity) canSend() bool { return e.queue != nil || (e.topic != nil && e.sub == nil) }

// canReceive reports whether messages can be received from the entity: a
// queue or a subscription.
func (e entity) canReceive() bool { return e.queue != nil || e.sub != nil }

// requiresSession reports whether the queue or subscription requires
// sessions (SEMANTICS SS1); false for a topic.
func (e entity) requiresSession() bool {
	switch {
	case e.queue != nil:
		return e.queue.Properties().RequiresSession
	case e.sub != nil:
		return e.sub.Properties().RequiresSession
	}
	return false
}

// maxMessageSize is the largest message the entity takes, in bytes
// (SEMANTICS V3, W4): MaxMessageSizeInKilobytes × 1024 of the queue or
// topic, a subscription's being its topic's.
func (e entity) maxMessageSize() uint64 {
	var kb int64
	switch {
	case e.queue != nil:
		kb = e.queue.Properties().MaxMessageSizeInKilobytes
	case e.topic != nil:
		kb = e.topic.Properties().MaxMessageSizeInKilobytes
	}
	if kb <= 0 {
		return 0
	}
	return uint64(kb) * 1024
}

// sendMessages sends msgs, all or none (SEMANTICS V3): one message with
// SendMessage, several with SendMessages. Sending to a subscription is
// ErrInvalidArgument.
func (e entity) sendMessages(ctx context.Context, msgs []*minibus.Message) error {
	switch {
	case !e.canSend():
		return failf(minibus.ErrInvalidArgument, e.String(), "cannot be sent to")
	case e.queue != nil && len(msgs) == 1:
		return e.queue.SendMessage(ctx, msgs[0], nil)
	case e.queue != nil:
		return e.queue.SendMessages(ctx, msgs, nil)
	case len(msgs) == 1:
		return e.topic.SendMessage(ctx, msgs[0], nil)
	}
	return e.topic.SendMessages(ctx, msgs, nil)
}

// scheduleMessages schedules msgs for at, all or none (SEMANTICS S1), and
// returns their sequence numbers.
func (e entity) scheduleMessages(ctx context.Context, msgs []*minibus.Message, at time.Time) ([]int64, error) {
	switch {
	case !e.canSend():
		return nil, failf(minibus.ErrInvalidArgument, e.String(), "cannot be sent to")
	case e.queue != nil:
		return e.queue.ScheduleMessages(ctx, msgs, at, nil)
	}
	return e.topic.ScheduleMessages(ctx, msgs, at, nil)
}

// cancelScheduled cancels scheduled messages, all or none (SEMANTICS S3).
func (e entity) cancelScheduled(ctx context.Context, seqs []int64) error {
	switch {
	case !e.canSend():
		return failf(minibus.ErrInvalidArgument, e.String(), "has no scheduled messages")
	case e.queue != nil:
		return e.queue.CancelScheduledMessages(ctx, seqs, nil)
	}
	return e.topic.CancelScheduledMessages(ctx, seqs, nil)
}

// newReceiver returns a receiver of the queue or subscription, or of its
// sub-queue sq. A topic is ErrInvalidArgument.
func (e entity) newReceiver(mode minibus.ReceiveMode, sq minibus.SubQueue) (*minibus.Receiver, error) {
	opts := &minibus.ReceiverOptions{ReceiveMode: mode, SubQueue: sq}
	switch {
	case e.queue != nil:
		return e.queue.NewReceiver(opts)
	case e.sub != nil:
		return e.sub.NewReceiver(opts)
	}
	return nil, failf(minibus.ErrInvalidArgument, e.String(), "cannot be received from")
}

// acceptSession locks session id of the queue or subscription (SEMANTICS
// SS2).
func (e entity) acceptSession(ctx context.Context, id string, mode minibus.ReceiveMode) (*minibus.SessionReceiver, error) {
	opts := &minibus.SessionReceiverOptions{ReceiveMode: mode}
	switch {
	case e.queue != nil:
		return e.queue.AcceptSession(ctx, id, opts)
	case e.sub != nil:
		return e.sub.AcceptSession(ctx, id, opts)
	}
	return nil, failf(minibus.ErrInvalidArgument, e.String(), "has no sessions")
}

// acceptNextSession waits for the next available session of the queue or
// subscription (SEMANTICS SS3) until ctx ends.
func (e entity) acceptNextSession(ctx context.Context, mode minibus.ReceiveMode) (*minibus.SessionReceiver, error) {
	opts := &minibus.SessionReceiverOptions{ReceiveMode: mode}
	switch {
	case e.queue != nil:
		return e.queue.AcceptNextSession(ctx, opts)
	case e.sub != nil:
		return e.sub.AcceptNextSession(ctx, opts)
	}
	return nil, failf(minibus.ErrInvalidArgument, e.String(), "has no sessions")
}

// listSessions lists the sessions of the queue or subscription that have
// messages or state (SEMANTICS SS6).
func (e entity) listSessions(ctx context.Context) ([]string, error) {
	switch {
	case e.queue != nil:
		return e.queue.ListSessions(ctx)
	case e.sub != nil:
		return e.sub.ListSessions(ctx)
	}
	return nil, failf(minibus.ErrInvalidArgument, e.String(), "has no sessions")
}

// receiver is what a Receiver and a SessionReceiver share: the core keeps
// one per receiving link, and $management acts through it.
type receiver interface {
	ReceiveMessages(ctx context.Context, maxMessages int, opts *minibus.ReceiveMessagesOptions) ([]*minibus.ReceivedMessage, error)
	PeekMessages(ctx context.Context, maxMessages int, opts *minibus.PeekMessagesOptions) ([]*minibus.ReceivedMessage, error)
	ReceiveDeferredMessages(ctx context.Context, seqs []int64, opts *minibus.ReceiveDeferredMessagesOptions) ([]*minibus.ReceivedMessage, error)
	CompleteMessage(ctx context.Context, msg *minibus.ReceivedMessage, opts *minibus.CompleteMessageOptions) error
	AbandonMessage(ctx context.Context, msg *minibus.ReceivedMessage, opts *minibus.AbandonMessageOptions) error
	DeadLetterMessage(ctx context.Context, msg *minibus.ReceivedMessage, opts *minibus.DeadLetterOptions) error
	DeferMessage(ctx context.Context, msg *minibus.ReceivedMessage, opts *minibus.DeferMessageOptions) error
	RenewMessageLock(ctx context.Context, msg *minibus.ReceivedMessage, opts *minibus.RenewMessageLockOptions) error
	ReleaseMessage(ctx context.Context, msg *minibus.ReceivedMessage, opts *minibus.ReleaseMessageOptions) error
	Close(ctx context.Context) error
}

var (
	_ receiver = (*minibus.Receiver)(nil)
	_ receiver = (*minibus.SessionReceiver)(nil)
)

// isEntityNotFound reports whether err says an entity does not exist.
func isEntityNotFound(err error) bool { return errors.Is(err, minibus.ErrNotFound) }
