package azsb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/go-amqp"
	"github.com/minibus-go/minibus"
)

// Receiver is azsb's *azservicebus.Receiver: exactly its methods, with the
// SDK's types in every signature. Get one from [Client.NewReceiverForQueue]
// or [Client.NewReceiverForSubscription]. It reads a minibus queue or
// subscription (or its dead-letter or transfer dead-letter queue), found by
// name at the first call and found again if it was deleted and created
// anew. A Receiver is safe for concurrent use, except that ReceiveMessages
// refuses to run twice at once, as the SDK's does.
type Receiver struct {
	c        *Client
	id       uint64
	e        entityRef
	mode     azservicebus.ReceiveMode
	subQueue azservicebus.SubQueue

	mu        sync.Mutex
	r         *minibus.Receiver
	closed    atomic.Bool
	receiving atomic.Bool
}

// get returns the minibus receiver, opening it at the first call, and
// whether it was open before this call (a handle that may have gone stale).
func (r *Receiver) get() (*minibus.Receiver, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return nil, false, closedError("receiver")
	}
	if r.r != nil {
		return r.r, true, nil
	}
	ent, sessions, err := r.c.resolve(r.e)
	if err != nil {
		return nil, false, err
	}
	mr, err := ent.NewReceiver(&minibus.ReceiverOptions{ReceiveMode: minibusMode(r.mode), SubQueue: minibus.SubQueue(r.subQueue)})
	if err != nil {
		if sessions && r.subQueue == 0 && errors.Is(err, minibus.ErrInvalidArgument) {
			return nil, false, withCondition(amqp.ErrCondNotAllowed, textSessionReceiver, err)
		}
		return nil, false, err
	}
	r.r = mr
	return mr, false, nil
}

// do runs fn on the minibus receiver. If a receiver opened by an earlier
// call answers ErrNotFound (its entity was deleted), it opens a new one and
// runs fn once more; a call that failed changed nothing. Errors are mapped
// to the SDK's.
func (r *Receiver) do(fn func(*minibus.Receiver) error) error {
	mr, cached, err := r.get()
	if err != nil {
		return mapError(err)
	}
	err = fn(mr)
	if cached && errors.Is(err, minibus.ErrNotFound) {
		r.mu.Lock()
		if r.r == mr {
			r.r = nil
		}
		r.mu.Unlock()
		_ = mr.Close(context.Background())
		if mr, _, err = r.get(); err != nil {
			return mapError(err)
		}
		err = fn(mr)
	}
	return mapError(err)
}

func (r *Receiver) dlq() bool { return r.subQueue == azservicebus.SubQueueDeadLetter }

// ReceiveMessages waits until at least one message is available and returns
// at once with up to maxMessages of them (minibus's SEMANTICS L8); in
// peek-lock mode each is locked, in receive-and-delete mode removed. If ctx
// ends first it returns nil and ctx's error, unwrapped, as the SDK does.
// options.TimeAfterFirstMessage is accepted and ignored: minibus hands over
// everything available at once, so there is nothing to wait for. As in the
// SDK, maxMessages must be 1 to 5000 and a second concurrent call on the
// same Receiver is an error.
func (r *Receiver) ReceiveMessages(ctx context.Context, maxMessages int, options *azservicebus.ReceiveMessagesOptions) ([]*azservicebus.ReceivedMessage, error) {
	if !r.receiving.CompareAndSwap(false, true) {
		return nil, clientError(minibus.ErrInvalidArgument, textAlreadyReceiving)
	}
	defer r.receiving.Store(false)
	if err := checkMaxMessages(maxMessages); err != nil {
		return nil, err
	}
	var msgs []*minibus.ReceivedMessage
	err := r.do(func(mr *minibus.Receiver) error {
		var err error
		msgs, err = mr.ReceiveMessages(ctx, maxMessages, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return toReceived(msgs, r.dlq()), nil
}

func checkMaxMessages(n int) error {
	switch {
	case n <= 0:
		return clientError(minibus.ErrInvalidArgument, textMaxMessagesLow)
	case n > maxReceiveMessages:
		return clientError(minibus.ErrInvalidArgument, fmt.Sprintf("maxMessages cannot exceed %d", maxReceiveMessages))
	}
	return nil
}

// ReceiveDeferredMessages fetches deferred messages by sequence number:
// locked in peek-lock mode, removed in receive-and-delete mode. A number
// that is not a deferred message is an *azservicebus.Error with
// CodeNotFound (and minibus.ErrMessageNotFound), and nothing is fetched.
func (r *Receiver) ReceiveDeferredMessages(ctx context.Context, sequenceNumbers []int64, options *azservicebus.ReceiveDeferredMessagesOptions) ([]*azservicebus.ReceivedMessage, error) {
	var msgs []*minibus.ReceivedMessage
	err := r.do(func(mr *minibus.Receiver) error {
		var err error
		msgs, err = mr.ReceiveDeferredMessages(ctx, sequenceNumbers, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return toReceived(msgs, r.dlq()), nil
}

// PeekMessages returns up to maxMessageCount messages without locking them.
// Without options.FromSequenceNumber it continues after the last message
// this receiver peeked; with it, it starts there and leaves that place
// alone, as the SDK does. An empty result is an empty slice.
func (r *Receiver) PeekMessages(ctx context.Context, maxMessageCount int, options *azservicebus.PeekMessagesOptions) ([]*azservicebus.ReceivedMessage, error) {
	var msgs []*minibus.ReceivedMessage
	err := r.do(func(mr *minibus.Receiver) error {
		var err error
		msgs, err = mr.PeekMessages(ctx, maxMessageCount, peekOptions(options))
		return err
	})
	if err != nil {
		return nil, err
	}
	return toReceived(msgs, r.dlq()), nil
}

// peekOptions maps the SDK's optional start to minibus's, where 0 means
// "after the last peek": an explicit 0 is the first message, 1.
func peekOptions(o *azservicebus.PeekMessagesOptions) *minibus.PeekMessagesOptions {
	if o == nil || o.FromSequenceNumber == nil {
		return nil
	}
	from := *o.FromSequenceNumber
	if from == 0 {
		from = 1
	}
	return &minibus.PeekMessagesOptions{FromSequenceNumber: from}
}

// CompleteMessage removes a locked message. With an expired lock, a settled
// message or an unknown token it is an *azservicebus.Error with
// CodeLockLost. A message made with only its LockToken settles too, as in
// the SDK; a receive-and-delete receiver cannot settle (the SDK's error).
func (r *Receiver) CompleteMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.CompleteMessageOptions) error {
	return r.settle(message, func(mr *minibus.Receiver, m *minibus.ReceivedMessage) error {
		return mr.CompleteMessage(ctx, m, nil)
	})
}

// AbandonMessage releases a message's lock at once, merging
// options.PropertiesToModify into its application properties; the message
// is delivered again (or dead-lettered after MaxDeliveryCount). Errors as
// CompleteMessage.
func (r *Receiver) AbandonMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.AbandonMessageOptions) error {
	o, err := abandonOptions(options)
	if err != nil {
		return err
	}
	return r.settle(message, func(mr *minibus.Receiver, m *minibus.ReceivedMessage) error {
		return mr.AbandonMessage(ctx, m, o)
	})
}

// DeferMessage sets a locked message aside; only ReceiveDeferredMessages
// fetches it again. Errors as CompleteMessage.
func (r *Receiver) DeferMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.DeferMessageOptions) error {
	o, err := deferOptions(options)
	if err != nil {
		return err
	}
	return r.settle(message, func(mr *minibus.Receiver, m *minibus.ReceivedMessage) error {
		return mr.DeferMessage(ctx, m, o)
	})
}

// DeadLetterMessage moves a locked message to the dead-letter queue with
// options' Reason and ErrorDescription ("" when nil, as the SDK sends). A
// receiver of the dead-letter queue then reads them in DeadLetterReason and
// DeadLetterErrorDescription, and in the application properties of those
// names. Errors as CompleteMessage.
func (r *Receiver) DeadLetterMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.DeadLetterOptions) error {
	o, err := deadLetterOptions(options)
	if err != nil {
		return err
	}
	return r.settle(message, func(mr *minibus.Receiver, m *minibus.ReceivedMessage) error {
		return mr.DeadLetterMessage(ctx, m, o)
	})
}

// abandonOptions converts the SDK's AbandonMessageOptions: nil stays nil.
func abandonOptions(options *azservicebus.AbandonMessageOptions) (*minibus.AbandonMessageOptions, error) {
	if options == nil {
		return nil, nil
	}
	props, _, err := normalizeProps(options.PropertiesToModify)
	if err != nil {
		return nil, err
	}
	return &minibus.AbandonMessageOptions{PropertiesToModify: props}, nil
}

// deferOptions converts the SDK's DeferMessageOptions: nil stays nil.
func deferOptions(options *azservicebus.DeferMessageOptions) (*minibus.DeferMessageOptions, error) {
	if options == nil {
		return nil, nil
	}
	props, _, err := normalizeProps(options.PropertiesToModify)
	if err != nil {
		return nil, err
	}
	return &minibus.DeferMessageOptions{PropertiesToModify: props}, nil
}

// deadLetterOptions converts the SDK's DeadLetterOptions: nil stays nil.
func deadLetterOptions(options *azservicebus.DeadLetterOptions) (*minibus.DeadLetterOptions, error) {
	if options == nil {
		return nil, nil
	}
	props, _, err := normalizeProps(options.PropertiesToModify)
	if err != nil {
		return nil, err
	}
	return &minibus.DeadLetterOptions{Reason: str(options.Reason), ErrorDescription: str(options.ErrorDescription), PropertiesToModify: props}, nil
}

// RenewMessageLock extends a message's lock by the entity's LockDuration and
// updates message.LockedUntil. Errors as CompleteMessage.
func (r *Receiver) RenewMessageLock(ctx context.Context, msg *azservicebus.ReceivedMessage, options *azservicebus.RenewMessageLockOptions) error {
	return r.settle(msg, func(mr *minibus.Receiver, m *minibus.ReceivedMessage) error {
		if err := mr.RenewMessageLock(ctx, m, nil); err != nil {
			return err
		}
		until := m.LockedUntil
		msg.LockedUntil = &until
		return nil
	})
}

func (r *Receiver) settle(message *azservicebus.ReceivedMessage, fn func(*minibus.Receiver, *minibus.ReceivedMessage) error) error {
	if r.mode == azservicebus.ReceiveModeReceiveAndDelete {
		return clientError(minibus.ErrInvalidArgument, textNotSettleable)
	}
	if message == nil {
		return clientError(minibus.ErrInvalidArgument, "azsb: message is nil")
	}
	m := toSettle(message)
	defer putSettle(m)
	return r.do(func(mr *minibus.Receiver) error { return fn(mr, m) })
}

// Close closes the receiver: a call blocked in it and every later call
// fails with CodeClosed. Locks it holds are kept and expire as usual. It
// returns nil.
func (r *Receiver) Close(ctx context.Context) error {
	r.closeLink()
	r.c.remove(r.id)
	return nil
}

func (r *Receiver) closeLink() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed.Store(true)
	if r.r != nil {
		_ = r.r.Close(context.Background())
	}
}
