package minibus

import (
	"context"

	"github.com/minibus-go/minibus/internal/engine"
)

// CompleteMessage removes a locked message (SEMANTICS L3). It returns
// ErrLockLost if the lock has expired, the message was already settled or
// the token is unknown (L4), and ErrInvalidArgument for a nil message, a
// peeked message, one received in receive-and-delete mode, one received
// from another entity or sub-queue, or any message on a receive-and-delete
// receiver (L7). On error nothing changed.
func (r *Receiver) CompleteMessage(ctx context.Context, msg *ReceivedMessage, opts *CompleteMessageOptions) error {
	return r.settle(ctx, msg, engine.Settlement{Op: engine.Complete}, nil)
}

// AbandonMessage releases a message's lock at once, merging
// opts.PropertiesToModify into its ApplicationProperties (SEMANTICS L3). The
// message is then dead-lettered, deferred again, expired or made available
// as SEMANTICS L6 says. Properties that would make the message larger than
// MaxMessageSizeInKilobytes, or the entity pass MaxSizeInMegabytes, are
// refused with ErrMessageTooLarge or ErrQuotaExceeded and the message stays
// locked and unchanged (V3). Other errors as CompleteMessage.
func (r *Receiver) AbandonMessage(ctx context.Context, msg *ReceivedMessage, opts *AbandonMessageOptions) error {
	var props map[string]any
	if opts != nil {
		props = opts.PropertiesToModify
	}
	return r.settle(ctx, msg, engine.Settlement{Op: engine.Abandon}, props)
}

// DeadLetterMessage moves a locked message to the dead-letter queue with
// opts.Reason and opts.ErrorDescription, merging opts.PropertiesToModify
// (SEMANTICS L3, D2). A message of a dead-letter queue cannot be
// dead-lettered again (ErrInvalidArgument, D1). Errors as AbandonMessage.
func (r *Receiver) DeadLetterMessage(ctx context.Context, msg *ReceivedMessage, opts *DeadLetterOptions) error {
	var o DeadLetterOptions
	if opts != nil {
		o = *opts
	}
	s := engine.Settlement{Op: engine.DeadLetter, Reason: o.Reason, Description: o.ErrorDescription}
	return r.settle(ctx, msg, s, o.PropertiesToModify)
}

// DeferMessage sets a locked message aside in State Deferred, merging
// opts.PropertiesToModify (SEMANTICS L3): only ReceiveDeferredMessages
// returns it. Deferring does not count as a failed delivery (L6) and a
// deferred message does not expire (E7). Errors as AbandonMessage.
func (r *Receiver) DeferMessage(ctx context.Context, msg *ReceivedMessage, opts *DeferMessageOptions) error {
	var props map[string]any
	if opts != nil {
		props = opts.PropertiesToModify
	}
	return r.settle(ctx, msg, engine.Settlement{Op: engine.Defer}, props)
}

// ReleaseMessage ends a message's lock at once without counting the
// delivery (SEMANTICS L15): its DeliveryCount is back to what it was before
// this delivery, so a release never dead-letters it for MaxDeliveryCount
// (L6 does not apply), and a message fetched with ReceiveDeferredMessages
// returns to Deferred. Any other message is available again at its own
// position (Q4), unless it is past its ExpiresAt (E4). It is what AMQP's
// released outcome does; Service Bus does not count a release. Settling or
// releasing it afterwards is ErrLockLost (L4). A message received in
// receive-and-delete mode has no lock to release (ErrInvalidArgument, L7).
// Other errors as CompleteMessage.
func (r *Receiver) ReleaseMessage(ctx context.Context, msg *ReceivedMessage, opts *ReleaseMessageOptions) error {
	return r.settle(ctx, msg, engine.Settlement{Op: engine.Release}, nil)
}

// RenewMessageLock extends a message's lock to now + LockDuration, in the
// broker and in msg.LockedUntil (SEMANTICS L5). Errors as CompleteMessage.
func (r *Receiver) RenewMessageLock(ctx context.Context, msg *ReceivedMessage, opts *RenewMessageLockOptions) error {
	er, err := r.check()
	if err != nil {
		return err
	}
	if err := checkSettle(er, msg, engine.Renew); err != nil {
		return err
	}
	until, err := er.Settle(ctx, engine.Settlement{Op: engine.Renew, Token: msg.LockToken, Seq: msg.SequenceNumber})
	if err != nil {
		return err
	}
	msg.LockedUntil = er.Entity().Broker().Time(until)
	return nil
}

// settle checks msg and mod and applies s to msg's lock.
func (r *Receiver) settle(ctx context.Context, msg *ReceivedMessage, s engine.Settlement, mod map[string]any) error {
	er, err := r.check()
	if err != nil {
		return err
	}
	if err := checkSettle(er, msg, s.Op); err != nil {
		return err
	}
	if s.Props, err = copyProps(mod); err != nil {
		return errorf(ErrInvalidArgument, er.Describe(), "PropertiesToModify: %v", err)
	}
	s.Token, s.Seq = msg.LockToken, msg.SequenceNumber
	_, err = er.Settle(ctx, s)
	return err
}

// checkSettle rejects what this receiver can never settle.
func checkSettle(r *engine.Receiver, msg *ReceivedMessage, op engine.Op) error {
	bad := func(format string, args ...any) error {
		return errorf(ErrInvalidArgument, r.Describe(), format, args...)
	}
	switch {
	case msg == nil:
		return bad("message is nil")
	case r.Mode() == engine.ReceiveAndDelete:
		return bad("a receive-and-delete receiver cannot settle messages")
	case msg.how == obtainedDeleted:
		return bad("message %d was received in receive-and-delete mode and has no lock", msg.SequenceNumber)
	case msg.how == obtainedPeeked:
		return bad("message %d was peeked and has no lock", msg.SequenceNumber)
	case msg.origin != nil && (msg.origin.Entity() != r.Entity() || msg.origin.Queue() != r.Queue()):
		return bad("message %d was received from %s", msg.SequenceNumber, msg.origin.Entity().Describe(msg.origin.Queue()))
	case msg.LockToken == [16]byte{}:
		return bad("message %d has no lock token", msg.SequenceNumber)
	case op == engine.DeadLetter && r.Queue() != SubQueueNone.queue():
		return bad("a message of a dead-letter queue cannot be dead-lettered")
	}
	return nil
}
