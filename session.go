package minibus

import (
	"context"
	"time"
)

// SessionReceiver receives the messages of one session of a session-enabled
// queue or subscription.
//
// Sessions are not built yet: no entity can be created with
// RequiresSession, AcceptSession and AcceptNextSession return
// ErrInvalidArgument, so no SessionReceiver can be obtained. The type and its
// methods exist so that code written against the full API compiles; every
// method returns ErrInvalidArgument.
type SessionReceiver struct{}

// AcceptSession is for session-enabled queues, which minibus does not
// support yet: it returns ErrInvalidArgument (SEMANTICS SS1).
func (q *Queue) AcceptSession(ctx context.Context, sessionID string, opts *SessionReceiverOptions) (*SessionReceiver, error) {
	e, err := q.entity()
	if err != nil {
		return nil, err
	}
	return nil, errorf(ErrInvalidArgument, culprit(e.Kind(), e.Path()), "the queue does not require sessions")
}

// AcceptNextSession is for session-enabled queues, which minibus does not
// support yet: it returns ErrInvalidArgument (SEMANTICS SS1).
func (q *Queue) AcceptNextSession(ctx context.Context, opts *SessionReceiverOptions) (*SessionReceiver, error) {
	return q.AcceptSession(ctx, "", opts)
}

// AcceptSession is for session-enabled subscriptions, which minibus does
// not support yet: it returns ErrInvalidArgument (SEMANTICS SS1).
func (s *Subscription) AcceptSession(ctx context.Context, sessionID string, opts *SessionReceiverOptions) (*SessionReceiver, error) {
	e, err := s.entity()
	if err != nil {
		return nil, err
	}
	return nil, errorf(ErrInvalidArgument, culprit(e.Kind(), e.Path()), "the subscription does not require sessions")
}

// AcceptNextSession is for session-enabled subscriptions, which minibus
// does not support yet: it returns ErrInvalidArgument (SEMANTICS SS1).
func (s *Subscription) AcceptNextSession(ctx context.Context, opts *SessionReceiverOptions) (*SessionReceiver, error) {
	return s.AcceptSession(ctx, "", opts)
}

func errNoSessions() error {
	return errorf(ErrInvalidArgument, "session receiver", "sessions are not supported yet")
}

// SessionID returns the session's id; "" as sessions are not built yet.
func (s *SessionReceiver) SessionID() string { return "" }

// LockedUntil returns when the session lock ends; zero as sessions are not
// built yet.
func (s *SessionReceiver) LockedUntil() time.Time { return time.Time{} }

// GetSessionState returns ErrInvalidArgument: sessions are not built yet.
func (s *SessionReceiver) GetSessionState(ctx context.Context, opts *GetSessionStateOptions) ([]byte, error) {
	return nil, errNoSessions()
}

// SetSessionState returns ErrInvalidArgument: sessions are not built yet.
func (s *SessionReceiver) SetSessionState(ctx context.Context, state []byte, opts *SetSessionStateOptions) error {
	return errNoSessions()
}

// RenewSessionLock returns ErrInvalidArgument: sessions are not built yet.
func (s *SessionReceiver) RenewSessionLock(ctx context.Context, opts *RenewSessionLockOptions) error {
	return errNoSessions()
}

// ReceiveMessages returns ErrInvalidArgument: sessions are not built yet.
func (s *SessionReceiver) ReceiveMessages(ctx context.Context, maxMessages int, opts *ReceiveMessagesOptions) ([]*ReceivedMessage, error) {
	return nil, errNoSessions()
}

// PeekMessages returns ErrInvalidArgument: sessions are not built yet.
func (s *SessionReceiver) PeekMessages(ctx context.Context, maxMessages int, opts *PeekMessagesOptions) ([]*ReceivedMessage, error) {
	return nil, errNoSessions()
}

// ReceiveDeferredMessages returns ErrInvalidArgument: sessions are not built
// yet.
func (s *SessionReceiver) ReceiveDeferredMessages(ctx context.Context, seqs []int64, opts *ReceiveDeferredMessagesOptions) ([]*ReceivedMessage, error) {
	return nil, errNoSessions()
}

// CompleteMessage returns ErrInvalidArgument: sessions are not built yet.
func (s *SessionReceiver) CompleteMessage(ctx context.Context, msg *ReceivedMessage, opts *CompleteMessageOptions) error {
	return errNoSessions()
}

// AbandonMessage returns ErrInvalidArgument: sessions are not built yet.
func (s *SessionReceiver) AbandonMessage(ctx context.Context, msg *ReceivedMessage, opts *AbandonMessageOptions) error {
	return errNoSessions()
}

// DeadLetterMessage returns ErrInvalidArgument: sessions are not built yet.
func (s *SessionReceiver) DeadLetterMessage(ctx context.Context, msg *ReceivedMessage, opts *DeadLetterOptions) error {
	return errNoSessions()
}

// DeferMessage returns ErrInvalidArgument: sessions are not built yet.
func (s *SessionReceiver) DeferMessage(ctx context.Context, msg *ReceivedMessage, opts *DeferMessageOptions) error {
	return errNoSessions()
}

// RenewMessageLock returns ErrInvalidArgument: in a session, renew the
// session lock instead (SEMANTICS SS7); and sessions are not built yet.
func (s *SessionReceiver) RenewMessageLock(ctx context.Context, msg *ReceivedMessage, opts *RenewMessageLockOptions) error {
	return errNoSessions()
}

// Close closes the session receiver; it returns nil.
func (s *SessionReceiver) Close(ctx context.Context) error { return nil }
