package minibus

import (
	"context"

	"github.com/minibus-go/minibus/internal/engine"
	"github.com/minibus-go/minibus/internal/store"
)

// SendMessage sends one message (SEMANTICS Q1, S1). It returns once the
// message is in the queue, or an error and the queue is unchanged:
// ErrInvalidArgument for a bad message, ErrMessageTooLarge, ErrQuotaExceeded,
// ErrEntityDisabled, ErrNotFound, ErrClosed, or ctx's error if ctx is done
// before the call starts. A message with ScheduledEnqueueTime after now is
// scheduled.
func (q *Queue) SendMessage(ctx context.Context, msg *Message, opts *SendMessageOptions) error {
	e, err := q.entity()
	if err != nil {
		return err
	}
	_, err = send(ctx, e, []*Message{msg}, store.Unset, false)
	return err
}

// SendMessages sends msgs in order, all or none (SEMANTICS V3): on any error
// nothing was enqueued. An empty slice is ErrInvalidArgument.
func (q *Queue) SendMessages(ctx context.Context, msgs []*Message, opts *SendMessageOptions) error {
	e, err := q.entity()
	if err != nil {
		return err
	}
	_, err = send(ctx, e, msgs, store.Unset, false)
	return err
}

// SendMessage sends one message to the topic: every subscription whose rules
// match gets its own copy (SEMANTICS R1, R2); with none, the message is
// accepted and dropped. A message with ScheduledEnqueueTime after now waits
// in the topic (S5). Errors as Queue.SendMessage; the quota is checked
// against the copies the send makes (V3).
func (t *Topic) SendMessage(ctx context.Context, msg *Message, opts *SendMessageOptions) error {
	e, err := t.entity()
	if err != nil {
		return err
	}
	_, err = send(ctx, e, []*Message{msg}, store.Unset, false)
	return err
}

// SendMessages sends msgs to the topic in order, all or none. An empty slice
// is ErrInvalidArgument.
func (t *Topic) SendMessages(ctx context.Context, msgs []*Message, opts *SendMessageOptions) error {
	e, err := t.entity()
	if err != nil {
		return err
	}
	_, err = send(ctx, e, msgs, store.Unset, false)
	return err
}

// send copies and checks msgs and sends them to e, a queue or topic, all or
// none: the one send of Queue and Topic. at is the ScheduleMessages time, or
// store.Unset; with seqs it returns the sequence numbers.
func send(ctx context.Context, e *engine.Entity, msgs []*Message, at int64, seqs bool) ([]int64, error) {
	if len(msgs) == 0 {
		return nil, errorf(ErrInvalidArgument, culprit(e.Kind(), e.Name()), "no messages")
	}
	var one [1]*store.Message
	recs := one[:]
	if len(msgs) > 1 {
		recs = make([]*store.Message, len(msgs))
	}
	for i, msg := range msgs {
		m, err := toRecord(msg, i)
		if err != nil {
			return nil, errorf(ErrInvalidArgument, culprit(e.Kind(), e.Name()), "%v", err)
		}
		recs[i] = m
	}
	return e.Send(ctx, recs, at, seqs)
}
