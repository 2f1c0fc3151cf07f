package azsb

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/minibus-go/minibus"
)

// SessionReceiver is azsb's *azservicebus.SessionReceiver: exactly its
// methods (there is no RenewMessageLock: in a session, renew the session
// lock), with the SDK's types in every signature. Get one from
// [Client.AcceptSessionForQueue] and the other Accept methods of [Client].
// It delegates to a *minibus.SessionReceiver.
//
// minibus does not build sessions yet: until it does, no entity requires
// sessions and every Accept method fails, so no SessionReceiver is made.
type SessionReceiver struct {
	c    *Client
	id   uint64
	r    *minibus.SessionReceiver
	mode azservicebus.ReceiveMode

	closed    atomic.Bool
	receiving atomic.Bool
}

func (s *SessionReceiver) check() error {
	if s.closed.Load() {
		return closedError("session receiver")
	}
	return nil
}

// SessionID returns the id of the session this receiver holds.
func (s *SessionReceiver) SessionID() string { return s.r.SessionID() }

// LockedUntil returns when the session lock ends; RenewSessionLock moves
// it.
func (s *SessionReceiver) LockedUntil() time.Time { return s.r.LockedUntil() }

// GetSessionState returns the session's state, nil if it was never set.
func (s *SessionReceiver) GetSessionState(ctx context.Context, options *azservicebus.GetSessionStateOptions) ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	st, err := s.r.GetSessionState(ctx, nil)
	return st, mapError(err)
}

// SetSessionState sets the session's state; nil clears it.
func (s *SessionReceiver) SetSessionState(ctx context.Context, state []byte, options *azservicebus.SetSessionStateOptions) error {
	if err := s.check(); err != nil {
		return err
	}
	return mapError(s.r.SetSessionState(ctx, state, nil))
}

// RenewSessionLock extends the session lock by the entity's LockDuration.
// A lost session lock is an *azservicebus.Error with CodeLockLost (and
// minibus.ErrSessionLockLost).
func (s *SessionReceiver) RenewSessionLock(ctx context.Context, options *azservicebus.RenewSessionLockOptions) error {
	if err := s.check(); err != nil {
		return err
	}
	return mapError(s.r.RenewSessionLock(ctx, nil))
}

// ReceiveMessages receives the session's messages, as Receiver.ReceiveMessages.
func (s *SessionReceiver) ReceiveMessages(ctx context.Context, maxMessages int, options *azservicebus.ReceiveMessagesOptions) ([]*azservicebus.ReceivedMessage, error) {
	if !s.receiving.CompareAndSwap(false, true) {
		return nil, clientError(minibus.ErrInvalidArgument, textAlreadyReceiving)
	}
	defer s.receiving.Store(false)
	if err := checkMaxMessages(maxMessages); err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	msgs, err := s.r.ReceiveMessages(ctx, maxMessages, nil)
	if err != nil {
		return nil, mapError(err)
	}
	return toReceived(msgs, false), nil
}

// ReceiveDeferredMessages fetches the session's deferred messages by
// sequence number, as Receiver.ReceiveDeferredMessages.
func (s *SessionReceiver) ReceiveDeferredMessages(ctx context.Context, sequenceNumbers []int64, options *azservicebus.ReceiveDeferredMessagesOptions) ([]*azservicebus.ReceivedMessage, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	msgs, err := s.r.ReceiveDeferredMessages(ctx, sequenceNumbers, nil)
	if err != nil {
		return nil, mapError(err)
	}
	return toReceived(msgs, false), nil
}

// PeekMessages peeks the session's messages, as Receiver.PeekMessages.
func (s *SessionReceiver) PeekMessages(ctx context.Context, maxMessageCount int, options *azservicebus.PeekMessagesOptions) ([]*azservicebus.ReceivedMessage, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	msgs, err := s.r.PeekMessages(ctx, maxMessageCount, peekOptions(options))
	if err != nil {
		return nil, mapError(err)
	}
	return toReceived(msgs, false), nil
}

// CompleteMessage removes a message of the session, as
// Receiver.CompleteMessage.
func (s *SessionReceiver) CompleteMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.CompleteMessageOptions) error {
	return s.settle(message, func(m *minibus.ReceivedMessage) error { return s.r.CompleteMessage(ctx, m, nil) })
}

// AbandonMessage releases a message of the session, as
// Receiver.AbandonMessage.
func (s *SessionReceiver) AbandonMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.AbandonMessageOptions) error {
	var o *minibus.AbandonMessageOptions
	if options != nil {
		props, _, err := normalizeProps(options.PropertiesToModify)
		if err != nil {
			return err
		}
		o = &minibus.AbandonMessageOptions{PropertiesToModify: props}
	}
	return s.settle(message, func(m *minibus.ReceivedMessage) error { return s.r.AbandonMessage(ctx, m, o) })
}

// DeferMessage defers a message of the session, as Receiver.DeferMessage.
func (s *SessionReceiver) DeferMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.DeferMessageOptions) error {
	var o *minibus.DeferMessageOptions
	if options != nil {
		props, _, err := normalizeProps(options.PropertiesToModify)
		if err != nil {
			return err
		}
		o = &minibus.DeferMessageOptions{PropertiesToModify: props}
	}
	return s.settle(message, func(m *minibus.ReceivedMessage) error { return s.r.DeferMessage(ctx, m, o) })
}

// DeadLetterMessage dead-letters a message of the session, as
// Receiver.DeadLetterMessage.
func (s *SessionReceiver) DeadLetterMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.DeadLetterOptions) error {
	o, err := deadLetterOptions(options)
	if err != nil {
		return err
	}
	return s.settle(message, func(m *minibus.ReceivedMessage) error { return s.r.DeadLetterMessage(ctx, m, o) })
}

func (s *SessionReceiver) settle(message *azservicebus.ReceivedMessage, fn func(*minibus.ReceivedMessage) error) error {
	if s.mode == azservicebus.ReceiveModeReceiveAndDelete {
		return clientError(minibus.ErrInvalidArgument, textNotSettleable)
	}
	if message == nil {
		return clientError(minibus.ErrInvalidArgument, "azsb: message is nil")
	}
	if err := s.check(); err != nil {
		return err
	}
	m := toSettle(message)
	defer putSettle(m)
	return mapError(fn(m))
}

// Close releases the session: its locked messages become available again
// and later calls fail with CodeClosed. It returns nil.
func (s *SessionReceiver) Close(ctx context.Context) error {
	s.closeLink()
	s.c.remove(s.id)
	return nil
}

func (s *SessionReceiver) closeLink() {
	if s.closed.CompareAndSwap(false, true) {
		_ = s.r.Close(context.Background())
	}
}
