package azsb

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/minibus-go/minibus"
)

// SessionReceiver is azsb's *azservicebus.SessionReceiver: exactly its
// methods (there is no RenewMessageLock: in a session, renew the session
// lock), with the SDK's types in every signature. Get one from
// [Client.AcceptSessionForQueue] and the other Accept methods of [Client].
// It delegates to a *minibus.SessionReceiver (SEMANTICS SS1–SS8 in the
// minibus repository): it receives its session's messages in order, each
// locked as long as the session is; RenewSessionLock renews them all; once
// the session lock has ended every call is an *azservicebus.Error with
// CodeLockLost. As in the SDK, a message received by another open session
// receiver, of any client, is settled through that receiver. A
// SessionReceiver is safe for concurrent use, except that ReceiveMessages
// refuses to run twice at once, as the SDK's does.
type SessionReceiver struct {
	c    *Client
	id   uint64
	r    *minibus.SessionReceiver
	mode azservicebus.ReceiveMode
	key  holderKey

	mu          sync.Mutex
	lockedUntil time.Time // as the SDK's: set at accept and by RenewSessionLock

	closed    atomic.Bool
	receiving atomic.Bool
}

// holderKey names a session of an entity: the entity by its minibus handle
// (two handles of one entity are equal; an entity deleted and created anew
// is another), the session by its id.
type holderKey struct {
	entity  any // minibus.Queue or minibus.Subscription
	session string
}

// Handles must be comparable to be keys.
var _ = map[minibus.Queue]bool{}
var _ = map[minibus.Subscription]bool{}

func entityKey(r receivable) any {
	switch v := r.(type) {
	case *minibus.Queue:
		return *v
	case *minibus.Subscription:
		return *v
	}
	return nil
}

// holders maps each session that an azsb SessionReceiver accepted, of any
// client, to that receiver, until it closes: the SDK settles a received
// message on the link that received it, whichever receiver is asked
// (go-amqp's Receiver.AcceptMessage uses the message's own link), so a
// session receiver settles another session's messages while their receiver
// is open. settle finds that receiver here.
var holders sync.Map // holderKey → *SessionReceiver

func (s *SessionReceiver) check() error {
	if s.closed.Load() {
		return closedError("session receiver")
	}
	return nil
}

// SessionID returns the id of the session this receiver holds.
func (s *SessionReceiver) SessionID() string { return s.r.SessionID() }

// LockedUntil returns when the session lock ends, as it was when the
// session was accepted or last renewed by RenewSessionLock: like the SDK's,
// it is the receiver's record, which nothing else changes (not a failed
// renewal, not the lock's loss, not another receiver's later accept of the
// session).
func (s *SessionReceiver) LockedUntil() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lockedUntil
}

// GetSessionState returns a copy of the session's state, nil if it was
// never set or was cleared. A lost session lock is an *azservicebus.Error
// with CodeLockLost (and minibus.ErrSessionLockLost).
func (s *SessionReceiver) GetSessionState(ctx context.Context, options *azservicebus.GetSessionStateOptions) ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	st, err := s.r.GetSessionState(ctx, nil)
	return st, mapError(err)
}

// SetSessionState sets the session's state to a copy of state; nil clears
// it. The state stays with the session after the receiver closes, for the
// life of the entity. A lost session lock is CodeLockLost.
func (s *SessionReceiver) SetSessionState(ctx context.Context, state []byte, options *azservicebus.SetSessionStateOptions) error {
	if err := s.check(); err != nil {
		return err
	}
	return mapError(s.r.SetSessionState(ctx, state, nil))
}

// RenewSessionLock extends the session lock, and the locks of the
// session's messages the receiver holds, to now + the entity's
// LockDuration, and moves LockedUntil there. A lost session lock is an
// *azservicebus.Error with CodeLockLost (and minibus.ErrSessionLockLost).
func (s *SessionReceiver) RenewSessionLock(ctx context.Context, options *azservicebus.RenewSessionLockOptions) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := s.r.RenewSessionLock(ctx, nil); err != nil {
		return mapError(err)
	}
	until := s.r.LockedUntil()
	s.mu.Lock()
	s.lockedUntil = until
	s.mu.Unlock()
	return nil
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
	return s.settle(message, func(r *minibus.SessionReceiver, m *minibus.ReceivedMessage) error {
		return r.CompleteMessage(ctx, m, nil)
	})
}

// AbandonMessage releases a message of the session, as
// Receiver.AbandonMessage.
func (s *SessionReceiver) AbandonMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.AbandonMessageOptions) error {
	o, err := abandonOptions(options)
	if err != nil {
		return err
	}
	return s.settle(message, func(r *minibus.SessionReceiver, m *minibus.ReceivedMessage) error {
		return r.AbandonMessage(ctx, m, o)
	})
}

// DeferMessage defers a message of the session, as Receiver.DeferMessage.
func (s *SessionReceiver) DeferMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.DeferMessageOptions) error {
	o, err := deferOptions(options)
	if err != nil {
		return err
	}
	return s.settle(message, func(r *minibus.SessionReceiver, m *minibus.ReceivedMessage) error {
		return r.DeferMessage(ctx, m, o)
	})
}

// DeadLetterMessage dead-letters a message of the session, as
// Receiver.DeadLetterMessage.
func (s *SessionReceiver) DeadLetterMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.DeadLetterOptions) error {
	o, err := deadLetterOptions(options)
	if err != nil {
		return err
	}
	return s.settle(message, func(r *minibus.SessionReceiver, m *minibus.ReceivedMessage) error {
		return r.DeadLetterMessage(ctx, m, o)
	})
}

// settle applies fn to message through this receiver or, for a received
// message of another session, through the open receiver that received it,
// as the SDK does. A message of another session whose receiver has closed
// or lost its lock, or one rebuilt from its lock token alone (which the SDK
// settles through this receiver's management link), is CodeLockLost.
func (s *SessionReceiver) settle(message *azservicebus.ReceivedMessage, fn func(*minibus.SessionReceiver, *minibus.ReceivedMessage) error) error {
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
	err := fn(s.r, m)
	if errors.Is(err, minibus.ErrLockLost) && message.RawAMQPMessage != nil &&
		message.SessionID != nil && *message.SessionID != s.key.session {
		if v, ok := holders.Load(holderKey{s.key.entity, *message.SessionID}); ok {
			if other := v.(*SessionReceiver); !other.closed.Load() && fn(other.r, m) == nil {
				return nil
			}
		}
	}
	return mapError(err)
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
		holders.CompareAndDelete(s.key, s)
		_ = s.r.Close(context.Background())
	}
}
