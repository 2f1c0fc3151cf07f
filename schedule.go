package minibus

import (
	"context"
	"time"

	"github.com/minibus-go/minibus/internal/engine"
)

// ScheduleMessages schedules msgs for at, all or none, and returns their
// sequence numbers, valid for CancelScheduledMessages while the messages are
// scheduled (SEMANTICS S1, Q1). A time at or before now enqueues them at
// once; a zero time or an empty slice is ErrInvalidArgument.
func (q *Queue) ScheduleMessages(ctx context.Context, msgs []*Message, at time.Time, opts *ScheduleMessagesOptions) ([]int64, error) {
	e, err := q.entity()
	if err != nil {
		return nil, err
	}
	return schedule(ctx, e, msgs, at)
}

// CancelScheduledMessages deletes pending scheduled messages (SEMANTICS S3).
// If any number is not a pending scheduled message of this queue it returns
// ErrMessageNotFound and cancels nothing. An empty slice is
// ErrInvalidArgument.
func (q *Queue) CancelScheduledMessages(ctx context.Context, seqs []int64, opts *CancelScheduledMessagesOptions) error {
	e, err := q.entity()
	if err != nil {
		return err
	}
	return cancel(ctx, e, seqs)
}

// ScheduleMessages schedules msgs for at in the topic, all or none, and
// returns their sequence numbers (SEMANTICS S1, S5). They are copied to the
// subscriptions when they activate, with the rules of that time; the quota
// is checked now against the copies the rules would make now (V3).
func (t *Topic) ScheduleMessages(ctx context.Context, msgs []*Message, at time.Time, opts *ScheduleMessagesOptions) ([]int64, error) {
	e, err := t.entity()
	if err != nil {
		return nil, err
	}
	return schedule(ctx, e, msgs, at)
}

// CancelScheduledMessages deletes pending scheduled messages of the topic,
// all or none (SEMANTICS S3).
func (t *Topic) CancelScheduledMessages(ctx context.Context, seqs []int64, opts *CancelScheduledMessagesOptions) error {
	e, err := t.entity()
	if err != nil {
		return err
	}
	return cancel(ctx, e, seqs)
}

func schedule(ctx context.Context, e *engine.Entity, msgs []*Message, at time.Time) ([]int64, error) {
	if at.IsZero() {
		return nil, errorf(ErrInvalidArgument, culprit(e.Kind(), e.Name()), "the scheduled enqueue time is zero")
	}
	return send(ctx, e, msgs, engine.Instant(at), true)
}

func cancel(ctx context.Context, e *engine.Entity, seqs []int64) error {
	if err := checkSeqs(seqs, culprit(e.Kind(), e.Name())); err != nil {
		return err
	}
	return e.Cancel(ctx, seqs)
}

// checkSeqs checks a list of sequence numbers: not empty, each >= 1, none
// twice.
func checkSeqs(seqs []int64, culprit string) error {
	if len(seqs) == 0 {
		return errorf(ErrInvalidArgument, culprit, "no sequence numbers")
	}
	seen := make(map[int64]struct{}, len(seqs))
	for _, s := range seqs {
		if s < 1 {
			return errorf(ErrInvalidArgument, culprit, "sequence number %d is less than 1", s)
		}
		if _, dup := seen[s]; dup {
			return errorf(ErrInvalidArgument, culprit, "sequence number %d is given twice", s)
		}
		seen[s] = struct{}{}
	}
	return nil
}
