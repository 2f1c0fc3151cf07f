package minibus

import (
	"bytes"
	"context"
	"time"

	"github.com/minibus-go/minibus/internal/engine"
)

// SessionReceiver receives the messages of one session of a session-enabled
// queue or subscription (SEMANTICS SS1–SS8): get one from AcceptSession or
// AcceptNextSession. It holds the session's lock until it is closed or the
// lock expires; meanwhile no other receiver gets the session's messages,
// which it receives strictly in sequence order, also after an abandon or a
// lock expiry. A message it receives is locked until the session's
// LockedUntil: renew the session, not the message (SS7, SS8). When the
// session lock expires every further call returns ErrSessionLockLost and
// its locked messages are released, each a failed delivery (SS5); Close
// releases them without counting a delivery. A SessionReceiver is safe for
// concurrent use.
type SessionReceiver struct {
	r Receiver
}

// AcceptSession locks session sessionID of the queue for LockDuration,
// whether or not it has messages (SEMANTICS SS2), and returns its receiver.
// It returns ErrSessionCannotBeLocked when another receiver holds the
// session, and ErrInvalidArgument when the queue does not require
// sessions or sessionID is empty (no message can carry an empty SessionID,
// SS1) or longer than 128 characters. ctx is checked when the call starts.
func (q *Queue) AcceptSession(ctx context.Context, sessionID string, opts *SessionReceiverOptions) (*SessionReceiver, error) {
	e, err := q.entity()
	if err != nil {
		return nil, err
	}
	return acceptSession(ctx, e, sessionID, opts)
}

// AcceptNextSession waits until a session of the queue that no receiver
// holds has an available message, then locks the one whose first available
// message is oldest (SEMANTICS SS3). A session with only state, or only
// deferred or scheduled messages, is not offered. If ctx ends first it
// returns nil and ctx.Err(). It wakes on a send, on time (an activation, a
// lock expiry) and on another receiver's release of a session.
func (q *Queue) AcceptNextSession(ctx context.Context, opts *SessionReceiverOptions) (*SessionReceiver, error) {
	e, err := q.entity()
	if err != nil {
		return nil, err
	}
	return acceptNextSession(ctx, e, opts)
}

// AcceptSession is Queue.AcceptSession for a session-enabled subscription.
func (s *Subscription) AcceptSession(ctx context.Context, sessionID string, opts *SessionReceiverOptions) (*SessionReceiver, error) {
	e, err := s.entity()
	if err != nil {
		return nil, err
	}
	return acceptSession(ctx, e, sessionID, opts)
}

// AcceptNextSession is Queue.AcceptNextSession for a session-enabled
// subscription.
func (s *Subscription) AcceptNextSession(ctx context.Context, opts *SessionReceiverOptions) (*SessionReceiver, error) {
	e, err := s.entity()
	if err != nil {
		return nil, err
	}
	return acceptNextSession(ctx, e, opts)
}

// ListSessions returns the ids of the queue's sessions that have messages
// or state, sorted. ErrInvalidArgument when the queue does not require
// sessions.
func (q *Queue) ListSessions(ctx context.Context) ([]string, error) {
	e, err := q.entity()
	if err != nil {
		return nil, err
	}
	return e.SessionIDs(ctx)
}

// ListSessions is Queue.ListSessions for a session-enabled subscription.
func (s *Subscription) ListSessions(ctx context.Context) ([]string, error) {
	e, err := s.entity()
	if err != nil {
		return nil, err
	}
	return e.SessionIDs(ctx)
}

func sessionMode(e *engine.Entity, opts *SessionReceiverOptions) (engine.Mode, error) {
	var o SessionReceiverOptions
	if opts != nil {
		o = *opts
	}
	if err := o.ReceiveMode.check(culprit(e.Kind(), e.Path())); err != nil {
		return 0, err
	}
	return o.ReceiveMode.engine(), nil
}

func acceptSession(ctx context.Context, e *engine.Entity, id string, opts *SessionReceiverOptions) (*SessionReceiver, error) {
	mode, err := sessionMode(e, opts)
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, errorf(ErrInvalidArgument, culprit(e.Kind(), e.Path()), "session id is empty: no message can carry an empty SessionID")
	}
	if len(id) > maxIDLength {
		return nil, errorf(ErrInvalidArgument, culprit(e.Kind(), e.Path()), "session id is %d characters, more than %d", len(id), maxIDLength)
	}
	r, err := e.AcceptSession(ctx, id, mode)
	if err != nil {
		return nil, err
	}
	return &SessionReceiver{Receiver{r}}, nil
}

func acceptNextSession(ctx context.Context, e *engine.Entity, opts *SessionReceiverOptions) (*SessionReceiver, error) {
	mode, err := sessionMode(e, opts)
	if err != nil {
		return nil, err
	}
	r, err := e.AcceptNextSession(ctx, mode, nil)
	if err != nil {
		return nil, err
	}
	return &SessionReceiver{Receiver{r}}, nil
}

// receiver returns the session's engine receiver, or an error for a nil,
// closed or lost one.
func (s *SessionReceiver) receiver() (*engine.Receiver, error) {
	if s == nil {
		return nil, errorf(ErrInvalidArgument, "session receiver", "nil *SessionReceiver")
	}
	return s.r.check()
}

// SessionID returns the id of the receiver's session.
func (s *SessionReceiver) SessionID() string {
	if s == nil || s.r.r == nil {
		return ""
	}
	return s.r.r.SessionID()
}

// LockedUntil returns when the session lock ends, unless renewed (SEMANTICS
// SS8); every message the receiver holds is locked until then.
func (s *SessionReceiver) LockedUntil() time.Time {
	if s == nil || s.r.r == nil {
		return time.Time{}
	}
	return s.r.r.Entity().Broker().Time(s.r.r.LockedUntil())
}

// GetSessionState returns a copy of the session's state: nil when it was
// never set or was cleared (SEMANTICS SS6).
func (s *SessionReceiver) GetSessionState(ctx context.Context, opts *GetSessionStateOptions) ([]byte, error) {
	r, err := s.receiver()
	if err != nil {
		return nil, err
	}
	state, err := r.SessionState(ctx)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(state), nil
}

// SetSessionState replaces the session's state with a copy of state; nil
// clears it (SEMANTICS SS6). The state is kept for the life of the entity,
// whether or not the session has messages. It counts in the entity's
// SizeInBytes and against its MaxSizeInMegabytes (a subscription's, its
// topic's) as messages do (SS9): a state that would pass the quota is
// ErrQuotaExceeded, one larger than MaxMessageSizeInKilobytes
// ErrMessageTooLarge, and then nothing changed.
func (s *SessionReceiver) SetSessionState(ctx context.Context, state []byte, opts *SetSessionStateOptions) error {
	r, err := s.receiver()
	if err != nil {
		return err
	}
	return r.SetSessionState(ctx, bytes.Clone(state))
}

// RenewSessionLock extends the session lock, and the locks of the messages
// the receiver holds, to now + LockDuration (SEMANTICS SS8).
func (s *SessionReceiver) RenewSessionLock(ctx context.Context, opts *RenewSessionLockOptions) error {
	r, err := s.receiver()
	if err != nil {
		return err
	}
	_, err = r.RenewSessionLock(ctx)
	return err
}

// ReceiveMessages is Receiver.ReceiveMessages for the session's messages. A
// call blocked when the session lock expires returns ErrSessionLockLost at
// that instant (SEMANTICS SS5).
func (s *SessionReceiver) ReceiveMessages(ctx context.Context, maxMessages int, opts *ReceiveMessagesOptions) ([]*ReceivedMessage, error) {
	if _, err := s.receiver(); err != nil {
		return nil, err
	}
	return s.r.ReceiveMessages(ctx, maxMessages, opts)
}

// PeekMessages is Receiver.PeekMessages for the session's available, locked
// and deferred messages.
func (s *SessionReceiver) PeekMessages(ctx context.Context, maxMessages int, opts *PeekMessagesOptions) ([]*ReceivedMessage, error) {
	if _, err := s.receiver(); err != nil {
		return nil, err
	}
	return s.r.PeekMessages(ctx, maxMessages, opts)
}

// ReceiveDeferredMessages is Receiver.ReceiveDeferredMessages for the
// session's deferred messages: another session's number is
// ErrMessageNotFound (SEMANTICS SS8).
func (s *SessionReceiver) ReceiveDeferredMessages(ctx context.Context, seqs []int64, opts *ReceiveDeferredMessagesOptions) ([]*ReceivedMessage, error) {
	if _, err := s.receiver(); err != nil {
		return nil, err
	}
	return s.r.ReceiveDeferredMessages(ctx, seqs, opts)
}

// CompleteMessage is Receiver.CompleteMessage for a message of the session.
func (s *SessionReceiver) CompleteMessage(ctx context.Context, msg *ReceivedMessage, opts *CompleteMessageOptions) error {
	if _, err := s.receiver(); err != nil {
		return err
	}
	return s.r.CompleteMessage(ctx, msg, opts)
}

// AbandonMessage is Receiver.AbandonMessage for a message of the session:
// the message is next again (SEMANTICS Q4).
func (s *SessionReceiver) AbandonMessage(ctx context.Context, msg *ReceivedMessage, opts *AbandonMessageOptions) error {
	if _, err := s.receiver(); err != nil {
		return err
	}
	return s.r.AbandonMessage(ctx, msg, opts)
}

// DeadLetterMessage is Receiver.DeadLetterMessage for a message of the
// session.
func (s *SessionReceiver) DeadLetterMessage(ctx context.Context, msg *ReceivedMessage, opts *DeadLetterOptions) error {
	if _, err := s.receiver(); err != nil {
		return err
	}
	return s.r.DeadLetterMessage(ctx, msg, opts)
}

// DeferMessage is Receiver.DeferMessage for a message of the session.
func (s *SessionReceiver) DeferMessage(ctx context.Context, msg *ReceivedMessage, opts *DeferMessageOptions) error {
	if _, err := s.receiver(); err != nil {
		return err
	}
	return s.r.DeferMessage(ctx, msg, opts)
}

// ReleaseMessage is Receiver.ReleaseMessage for a message of the session:
// the message is next again (SEMANTICS L15, Q4), its delivery not counted.
func (s *SessionReceiver) ReleaseMessage(ctx context.Context, msg *ReceivedMessage, opts *ReleaseMessageOptions) error {
	if _, err := s.receiver(); err != nil {
		return err
	}
	return s.r.ReleaseMessage(ctx, msg, opts)
}

// RenewMessageLock returns ErrInvalidArgument: a message received in a
// session is locked as long as the session is; renew the session lock
// instead (SEMANTICS SS7).
func (s *SessionReceiver) RenewMessageLock(ctx context.Context, msg *ReceivedMessage, opts *RenewMessageLockOptions) error {
	r, err := s.receiver()
	if err != nil {
		return err
	}
	return errorf(ErrInvalidArgument, r.Describe(), "renew the session lock, not a message's (SessionReceiver.RenewSessionLock)")
}

// Close releases the session and its locked messages, without counting a
// delivery (SEMANTICS SS5); further calls return ErrClosed. Idempotent; ctx
// is not used.
func (s *SessionReceiver) Close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	return s.r.Close(ctx)
}
