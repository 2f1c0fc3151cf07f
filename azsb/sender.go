package azsb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/go-amqp"
	"github.com/minibus-go/minibus"
)

// Sender is azsb's *azservicebus.Sender: exactly its methods, with the SDK's
// types in every signature. Get one from [Client.NewSender]. It sends to a
// minibus queue or topic, found by name at the first call (and found again
// if it was deleted and created anew). A Sender is safe for concurrent use.
type Sender struct {
	c    *Client
	id   uint64
	name string

	mu     sync.Mutex
	t      target
	closed atomic.Bool
}

// target is a minibus queue or topic.
type target interface {
	SendMessage(context.Context, *minibus.Message, *minibus.SendMessageOptions) error
	SendMessages(context.Context, []*minibus.Message, *minibus.SendMessageOptions) error
	ScheduleMessages(context.Context, []*minibus.Message, time.Time, *minibus.ScheduleMessagesOptions) ([]int64, error)
	CancelScheduledMessages(context.Context, []int64, *minibus.CancelScheduledMessagesOptions) error
}

// get returns the sender's queue or topic, and whether it was found before
// this call (a handle that may have gone stale).
func (s *Sender) get() (target, bool, error) {
	if s.closed.Load() {
		return nil, false, closedError("sender")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.t != nil {
		return s.t, true, nil
	}
	q, err := s.c.ns.Queue(s.name)
	if err == nil {
		s.t = q
		return q, false, nil
	}
	if !errors.Is(err, minibus.ErrNotFound) {
		return nil, false, err
	}
	t, err := s.c.ns.Topic(s.name)
	if errors.Is(err, minibus.ErrNotFound) {
		// Neither lookup found it: say so, not "topic not found".
		return nil, false, fmt.Errorf("azsb: sender for %q: no queue or topic of that name: %w", s.name, minibus.ErrNotFound)
	}
	if err != nil {
		return nil, false, err
	}
	s.t = t
	return t, false, nil
}

// do runs fn on the sender's entity. If a handle found by an earlier call
// answers ErrNotFound (the entity was deleted), it looks the name up again
// and runs fn once more: a call that failed changed nothing.
func (s *Sender) do(fn func(target) error) error {
	t, cached, err := s.get()
	if err != nil {
		return err
	}
	err = fn(t)
	if cached && errors.Is(err, minibus.ErrNotFound) {
		s.mu.Lock()
		if s.t == t {
			s.t = nil
		}
		s.mu.Unlock()
		if t, _, err = s.get(); err != nil {
			return err
		}
		err = fn(t)
	}
	return err
}

// sendError maps a send's error. The service refuses a message without a
// SessionID on a session-enabled queue with amqp:not-allowed.
func sendError(t target, msgs []*minibus.Message, err error) error {
	if errors.Is(err, minibus.ErrInvalidArgument) {
		if q, ok := t.(*minibus.Queue); ok && q.Properties().RequiresSession {
			for _, m := range msgs {
				if m.SessionID == "" {
					return withCondition(amqp.ErrCondNotAllowed, textSessionIDMissing, err)
				}
			}
		}
	}
	return mapError(err)
}

// SendMessage sends one message to the queue or topic. A message larger
// than the entity's MaxMessageSizeInKilobytes is azservicebus.
// ErrMessageTooLarge, as in the SDK; a missing entity is an
// *azservicebus.Error with CodeNotFound. Every error also wraps the minibus
// sentinel. options is unused, as it is empty in the SDK.
func (s *Sender) SendMessage(ctx context.Context, message *azservicebus.Message, options *azservicebus.SendMessageOptions) error {
	m, err := fromMessage(message, 0)
	if err != nil {
		return err
	}
	defer putMessage(m)
	return s.send(ctx, m)
}

// SendAMQPAnnotatedMessage sends an AMQP message. What minibus has no field
// for (a Value or Sequence body, several data sections, custom message
// annotations, non-string ids, the footer, durable and priority) is kept
// and comes back in the received message's RawAMQPMessage; delivery
// annotations and the delivery tag belong to one transfer and are dropped.
// Errors as SendMessage.
func (s *Sender) SendAMQPAnnotatedMessage(ctx context.Context, message *azservicebus.AMQPAnnotatedMessage, options *azservicebus.SendAMQPAnnotatedMessageOptions) error {
	if message == nil {
		return clientError(minibus.ErrInvalidArgument, "azsb: message 0 is nil")
	}
	m, err := fromAMQP(toAMQP(message), 0)
	if err != nil {
		return err
	}
	return s.send(ctx, m)
}

func (s *Sender) send(ctx context.Context, m *minibus.Message) error {
	var t target
	err := s.do(func(tt target) error {
		t = tt
		return tt.SendMessage(ctx, m, nil)
	})
	if err != nil && t != nil {
		return sendError(t, []*minibus.Message{m}, err)
	}
	return mapError(err)
}

// SendMessageBatch sends the messages of a batch made by NewMessageBatch,
// all or none (see the package documentation for how azsb reads a batch).
// A nil or empty batch is an error (the SDK panics on both).
func (s *Sender) SendMessageBatch(ctx context.Context, batch *azservicebus.MessageBatch, options *azservicebus.SendMessageBatchOptions) error {
	msgs, err := batchMessages(batch)
	if err != nil {
		return err
	}
	var t target
	err = s.do(func(tt target) error {
		t = tt
		return tt.SendMessages(ctx, msgs, nil)
	})
	if err != nil && t != nil {
		return sendError(t, msgs, err)
	}
	return mapError(err)
}

// ScheduleMessages schedules messages for scheduledEnqueueTime and returns
// their sequence numbers, for CancelScheduledMessages. Like the SDK it gives
// a random UUID MessageID to messages without one. An empty slice is the
// SDK's "expected one or more messages".
func (s *Sender) ScheduleMessages(ctx context.Context, messages []*azservicebus.Message, scheduledEnqueueTime time.Time, options *azservicebus.ScheduleMessagesOptions) ([]int64, error) {
	msgs := make([]*minibus.Message, len(messages))
	for i, m := range messages {
		mm, err := fromMessage(m, i)
		if err != nil {
			return nil, err
		}
		msgs[i] = mm
	}
	return s.schedule(ctx, msgs, scheduledEnqueueTime)
}

// ScheduleAMQPAnnotatedMessages schedules AMQP messages. As ScheduleMessages
// and SendAMQPAnnotatedMessage.
func (s *Sender) ScheduleAMQPAnnotatedMessages(ctx context.Context, messages []*azservicebus.AMQPAnnotatedMessage, scheduledEnqueueTime time.Time, options *azservicebus.ScheduleAMQPAnnotatedMessagesOptions) ([]int64, error) {
	msgs := make([]*minibus.Message, len(messages))
	for i, m := range messages {
		if m == nil {
			return nil, clientError(minibus.ErrInvalidArgument, "azsb: a message is nil")
		}
		mm, err := fromAMQP(toAMQP(m), i)
		if err != nil {
			return nil, err
		}
		msgs[i] = mm
	}
	return s.schedule(ctx, msgs, scheduledEnqueueTime)
}

func (s *Sender) schedule(ctx context.Context, msgs []*minibus.Message, at time.Time) ([]int64, error) {
	if len(msgs) == 0 {
		return nil, clientError(minibus.ErrInvalidArgument, textNoMessages)
	}
	for _, m := range msgs {
		if m.MessageID == "" {
			m.MessageID = newUUID()
		}
	}
	var seqs []int64
	var t target
	err := s.do(func(tt target) error {
		t = tt
		var err error
		seqs, err = tt.ScheduleMessages(ctx, msgs, at.UTC(), nil)
		return err
	})
	if err != nil {
		if t != nil {
			return nil, sendError(t, msgs, err)
		}
		return nil, mapError(err)
	}
	return seqs, nil
}

// CancelScheduledMessages cancels scheduled messages by sequence number. A
// number that is not a pending scheduled message is an
// *azservicebus.Error with CodeNotFound (and minibus.ErrMessageNotFound),
// and nothing is cancelled.
func (s *Sender) CancelScheduledMessages(ctx context.Context, sequenceNumbers []int64, options *azservicebus.CancelScheduledMessagesOptions) error {
	return mapError(s.do(func(t target) error {
		return t.CancelScheduledMessages(ctx, sequenceNumbers, nil)
	}))
}

// Close closes the sender: its later calls fail with CodeClosed. It
// returns nil.
func (s *Sender) Close(ctx context.Context) error {
	s.closeLink()
	s.c.remove(s.id)
	return nil
}

func (s *Sender) closeLink() { s.closed.Store(true) }
