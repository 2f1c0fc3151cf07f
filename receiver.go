package minibus

import (
	"context"
	"time"

	"github.com/minibus-go/minibus/internal/engine"
	"github.com/minibus-go/minibus/internal/store"
)

// Receiver receives, peeks and settles the messages of one queue or
// subscription, or of its dead-letter or transfer dead-letter queue. Get one
// from NewReceiver. A Receiver is safe for concurrent use; any receiver of
// the same entity and sub-queue can settle a message by its lock token
// (SEMANTICS L10).
type Receiver struct {
	r *engine.Receiver
}

// NewReceiver returns a receiver for the queue, or for its dead-letter or
// transfer dead-letter queue (opts.SubQueue). opts may be nil: a peek-lock
// receiver on the queue itself.
func (q *Queue) NewReceiver(opts *ReceiverOptions) (*Receiver, error) {
	e, err := q.entity()
	if err != nil {
		return nil, err
	}
	return newReceiver(e, opts)
}

// NewReceiver returns a receiver for the subscription, or for its
// dead-letter or transfer dead-letter queue (opts.SubQueue). opts may be
// nil.
func (s *Subscription) NewReceiver(opts *ReceiverOptions) (*Receiver, error) {
	e, err := s.entity()
	if err != nil {
		return nil, err
	}
	return newReceiver(e, opts)
}

func newReceiver(e *engine.Entity, opts *ReceiverOptions) (*Receiver, error) {
	var o ReceiverOptions
	if opts != nil {
		o = *opts
	}
	who := culprit(e.Kind(), e.Path())
	if err := o.ReceiveMode.check(who); err != nil {
		return nil, err
	}
	if err := o.SubQueue.check(who); err != nil {
		return nil, err
	}
	r, err := e.NewReceiver(o.SubQueue.queue(), o.ReceiveMode.engine())
	if err != nil {
		return nil, err
	}
	return &Receiver{r: r}, nil
}

// check returns the receiver's engine, or an error for a nil or closed one.
func (r *Receiver) check() (*engine.Receiver, error) {
	if r == nil || r.r == nil {
		return nil, errorf(ErrInvalidArgument, "receiver", "nil *Receiver")
	}
	if r.r.Closed() {
		return nil, r.r.ErrClosed()
	}
	return r.r, nil
}

// how is how the receiver's deliveries are obtained.
func how(r *engine.Receiver) obtained {
	if r.Mode() == engine.ReceiveAndDelete {
		return obtainedDeleted
	}
	return obtainedLocked
}

// ReceiveMessages waits until at least one message is available, then
// returns at once with up to maxMessages of them, in sequence order
// (SEMANTICS L8). In peek-lock mode each is locked for LockDuration (L1); in
// receive-and-delete mode each is removed (L7). If ctx ends first it returns
// nil and ctx.Err(), having taken nothing. With opts.NoWait it returns what
// is available now, possibly nothing (nil, nil); with opts.MaxWaitTime it
// returns nil, nil when nothing arrives within that time of the namespace
// clock. It returns ErrClosed if the receiver or namespace is closed while
// it waits, ErrNotFound if the entity is deleted, and ErrEntityDisabled if
// its status refuses receives. maxMessages < 1 or a negative MaxWaitTime is
// ErrInvalidArgument.
func (r *Receiver) ReceiveMessages(ctx context.Context, maxMessages int, opts *ReceiveMessagesOptions) ([]*ReceivedMessage, error) {
	er, err := r.check()
	if err != nil {
		return nil, err
	}
	if maxMessages < 1 {
		return nil, errorf(ErrInvalidArgument, er.Describe(), "maxMessages %d is less than 1", maxMessages)
	}
	wait, err := opts.maxWait(er)
	if err != nil {
		return nil, err
	}
	var room [32]store.View
	views, err := er.Receive(ctx, maxMessages, room[:0], wait)
	if err != nil || len(views) == 0 {
		return nil, err
	}
	return build(er.Entity().Broker(), views, how(er), er), nil
}

// maxWait is how long a receive waits: -1 not at all, 0 as long as ctx
// allows.
func (o *ReceiveMessagesOptions) maxWait(er *engine.Receiver) (time.Duration, error) {
	switch {
	case o == nil:
		return 0, nil
	case o.MaxWaitTime < 0:
		return 0, errorf(ErrInvalidArgument, er.Describe(), "MaxWaitTime %v is negative", o.MaxWaitTime)
	case o.NoWait:
		return -1, nil
	}
	return o.MaxWaitTime, nil
}

// DeleteMessages removes up to maxMessages available or deferred messages
// (not locked, not scheduled) enqueued at or before
// opts.BeforeEnqueueTime (zero: no limit), oldest first, without delivering
// them, and returns how many: a cheap way to empty an entity between test
// cases. A delete is activity (SEMANTICS A2). maxMessages < 1 is
// ErrInvalidArgument.
func (r *Receiver) DeleteMessages(ctx context.Context, maxMessages int, opts *DeleteMessagesOptions) (int, error) {
	er, err := r.check()
	if err != nil {
		return 0, err
	}
	if maxMessages < 1 {
		return 0, errorf(ErrInvalidArgument, er.Describe(), "maxMessages %d is less than 1", maxMessages)
	}
	before := store.Never
	if opts != nil && !opts.BeforeEnqueueTime.IsZero() {
		before = engine.Instant(opts.BeforeEnqueueTime)
	}
	return er.Delete(ctx, maxMessages, before)
}

// PeekMessages returns up to maxMessages messages in sequence order without
// locking or changing anything (SEMANTICS L12): available, locked, deferred
// and (queues) scheduled messages, never expired ones (E3). It starts at
// opts.FromSequenceNumber, or, when that is 0, after the last message this
// receiver peeked without it. Peeked messages have no lock token. An empty
// result is an empty slice. maxMessages < 1 or a negative
// FromSequenceNumber is ErrInvalidArgument.
func (r *Receiver) PeekMessages(ctx context.Context, maxMessages int, opts *PeekMessagesOptions) ([]*ReceivedMessage, error) {
	er, err := r.check()
	if err != nil {
		return nil, err
	}
	var from int64
	if opts != nil {
		from = opts.FromSequenceNumber
	}
	if maxMessages < 1 {
		return nil, errorf(ErrInvalidArgument, er.Describe(), "maxMessages %d is less than 1", maxMessages)
	}
	if from < 0 {
		return nil, errorf(ErrInvalidArgument, er.Describe(), "FromSequenceNumber %d is negative", from)
	}
	views, err := er.Peek(ctx, maxMessages, from)
	if err != nil {
		return nil, err
	}
	return build(er.Entity().Broker(), views, obtainedPeeked, nil), nil
}

// ReceiveDeferredMessages fetches the deferred messages with the given
// sequence numbers, in the order given (SEMANTICS L9): locked in peek-lock
// mode, removed in receive-and-delete mode. Each fetch is a delivery. If any
// number is not a deferred message of this sub-queue, or is locked right
// now, it returns ErrMessageNotFound and fetches nothing. An empty slice, a
// number < 1 or a number given twice is ErrInvalidArgument.
func (r *Receiver) ReceiveDeferredMessages(ctx context.Context, seqs []int64, opts *ReceiveDeferredMessagesOptions) ([]*ReceivedMessage, error) {
	er, err := r.check()
	if err != nil {
		return nil, err
	}
	if err := checkSeqs(seqs, er.Describe()); err != nil {
		return nil, err
	}
	views, err := er.ReceiveDeferred(ctx, seqs)
	if err != nil {
		return nil, err
	}
	return build(er.Entity().Broker(), views, how(er), er), nil
}

// Close closes the receiver: its blocked calls return ErrClosed, and so do
// later calls. Its locks are kept and expire normally (SEMANTICS L11); other
// receivers of the entity can still settle them. Close is idempotent and
// returns nil; ctx is not used.
func (r *Receiver) Close(ctx context.Context) error {
	if r != nil && r.r != nil {
		r.r.Close()
	}
	return nil
}
