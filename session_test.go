package minibus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// sessionQueue creates a session-enabled queue.
func (e *env) sessionQueue(name string, p *minibus.QueueProperties) *minibus.Queue {
	e.t.Helper()
	var props minibus.QueueProperties
	if p != nil {
		props = *p
	}
	props.RequiresSession = true
	return e.queue(name, &props)
}

// sendSession sends one message per body to session id.
func (e *env) sendSession(s sender, id string, bodies ...string) {
	e.t.Helper()
	msgs := make([]*minibus.Message, len(bodies))
	for i, b := range bodies {
		msgs[i] = &minibus.Message{Body: []byte(b), SessionID: id}
	}
	require.NoError(e.t, s.SendMessages(e.ctx, msgs, nil))
}

// accept accepts session id, closed at the end of the test.
func (e *env) accept(q interface {
	AcceptSession(context.Context, string, *minibus.SessionReceiverOptions) (*minibus.SessionReceiver, error)
}, id string) *minibus.SessionReceiver {
	e.t.Helper()
	s, err := q.AcceptSession(e.ctx, id, nil)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func (e *env) receiveSession(s *minibus.SessionReceiver, n int) []*minibus.ReceivedMessage {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	msgs, err := s.ReceiveMessages(ctx, n, nil)
	require.NoError(e.t, err)
	require.Len(e.t, msgs, n, "received %v", bodies(msgs))
	return msgs
}

// SS1: on a session entity every message needs a SessionID; its main
// queue is read through sessions, its dead-letter queue with a plain
// receiver; a non-session entity accepts no session.
func TestSS1_SessionEntities(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("s", nil)
	requireSentinel(t, q.SendMessage(e.ctx, &minibus.Message{}, nil), minibus.ErrInvalidArgument, "SessionID")
	err := q.SendMessages(e.ctx, []*minibus.Message{{SessionID: "a"}, {}}, nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "message 1 has no SessionID")
	require.Zero(t, q.RuntimeProperties().TotalMessageCount, "all or nothing")
	_, err = q.NewReceiver(nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "requires sessions")
	_, err = q.NewReceiver(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	require.NoError(t, err)

	plain := e.queue("plain", nil)
	_, err = plain.AcceptSession(e.ctx, "a", nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "does not require sessions")
	_, err = plain.AcceptNextSession(e.ctx, nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "does not require sessions")
	_, err = plain.ListSessions(e.ctx)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "does not require sessions")
}

// SS1: a topic message without SessionID that a session-enabled
// subscription's rules select goes to that subscription's dead-letter
// queue, with the reason and description SEMANTICS gives.
func TestSS1_TopicMessageWithoutSessionID(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	sess := e.subscription(top, "sess", &minibus.SubscriptionProperties{RequiresSession: true})
	plain := e.subscription(top, "plain", nil)
	require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{Body: []byte("x")}, nil))
	e.receive(e.receiver(plain, nil), 1)
	d := e.receive(e.receiver(sess, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
	require.Equal(t, "Session id is null.", d.DeadLetterReason)
	require.Equal(t, "Session enabled entity doesn't allow a message whose session identifier is null.", d.DeadLetterErrorDescription)
	require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{Body: []byte("y"), SessionID: "a"}, nil))
	m := e.receiveSession(e.accept(sess, "a"), 1)[0]
	require.Equal(t, "y", string(m.Body))
}

// SS2: AcceptSession locks a session for LockDuration, with or without
// messages; a held session cannot be accepted again.
func TestSS2_AcceptSession(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("s", &minibus.QueueProperties{LockDuration: 30 * time.Second})
	s := e.accept(q, "empty")
	require.Equal(t, "empty", s.SessionID())
	require.True(t, s.LockedUntil().Equal(at(30*time.Second)))
	_, err := q.AcceptSession(e.ctx, "empty", nil)
	requireSentinel(t, err, minibus.ErrSessionCannotBeLocked, `session "empty"`)
	require.NoError(t, s.Close(e.ctx))
	e.accept(q, "empty") // free again
}

// SS3: AcceptNextSession takes the unheld session whose first available
// message is oldest; sessions with only state or only deferred or
// scheduled messages are not offered; it waits, and wakes on a send.
func TestSS3_AcceptNextSession(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("s", nil)
	e.sendSession(q, "b", "b1")
	e.sendSession(q, "a", "a1")
	e.sendSession(q, "b", "b2")
	s, err := q.AcceptNextSession(e.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, "b", s.SessionID(), "b's first message is oldest")
	s2, err := q.AcceptNextSession(e.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, "a", s2.SessionID(), "b is held")
	require.NoError(t, s2.SetSessionState(e.ctx, []byte("st"), nil))
	m := e.receiveSession(s2, 1)[0]
	require.NoError(t, s2.DeferMessage(e.ctx, m, nil))
	require.NoError(t, s2.Close(e.ctx))
	_, err = q.ScheduleMessages(e.ctx, []*minibus.Message{{SessionID: "c"}}, at(time.Hour), nil)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Millisecond)
	defer cancel()
	_, err = q.AcceptNextSession(ctx, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a has only state and a deferred message, c only a scheduled one")

	got := make(chan string, 1)
	go func() {
		s, err := q.AcceptNextSession(e.ctx, nil)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- s.SessionID()
		_ = s.Close(e.ctx)
	}()
	e.sendSession(q, "d", "d1")
	select {
	case id := <-got:
		require.Equal(t, "d", id)
	case <-time.After(10 * time.Second): // a safety net, not a wait for the broker
		t.Fatal("AcceptNextSession did not wake on a send")
	}
	require.NoError(t, s.Close(e.ctx))
}

// SS3, T5: a blocked AcceptNextSession wakes when a scheduled message
// activates and when another receiver releases a session.
func TestSS3_AcceptNextSessionWakesOnTimeAndRelease(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("s", &minibus.QueueProperties{LockDuration: 5 * time.Minute})
	_, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{SessionID: "later"}}, at(time.Minute), nil)
	require.NoError(t, err)
	held := e.accept(q, "held")
	e.sendSession(q, "held", "h1")

	next := func() <-chan string {
		got := make(chan string, 1)
		go func() {
			s, err := q.AcceptNextSession(e.ctx, nil)
			if err != nil {
				got <- err.Error()
				return
			}
			got <- s.SessionID()
		}()
		return got
	}
	wait := func(got <-chan string) string {
		select {
		case id := <-got:
			return id
		case <-time.After(10 * time.Second): // a safety net
			t.Fatal("AcceptNextSession did not wake")
			return ""
		}
	}
	got := next()
	e.mock.Add(time.Minute) // the timer wakes it at the activation
	require.Equal(t, "later", wait(got))
	got = next()
	require.NoError(t, held.Close(e.ctx))
	require.Equal(t, "held", wait(got))
}

// SS4, Q4: a session receiver sees only its session's messages, strictly
// in order, also after an abandon and after a lock expiry; peek shows its
// session's messages.
func TestSS4_OrderWithinSession(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("s", &minibus.QueueProperties{LockDuration: 10 * time.Second})
	for i := range 3 {
		e.sendSession(q, "a", fmt.Sprint("a", i))
		e.sendSession(q, "b", fmt.Sprint("b", i))
	}
	s := e.accept(q, "a")
	peek, err := s.PeekMessages(e.ctx, 10, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"a0", "a1", "a2"}, bodies(peek))
	m := e.receiveSession(s, 1)[0]
	require.Equal(t, "a0", string(m.Body))
	require.NoError(t, s.AbandonMessage(e.ctx, m, nil))
	m = e.receiveSession(s, 1)[0]
	require.Equal(t, "a0", string(m.Body), "abandoned: next again")
	require.EqualValues(t, 2, m.DeliveryCount)
	require.NoError(t, s.RenewSessionLock(e.ctx, nil))
	ms := e.receiveSession(s, 2)
	require.Equal(t, []string{"a1", "a2"}, bodies(ms))
	for _, m := range ms {
		require.NoError(t, s.CompleteMessage(e.ctx, m, nil))
	}
	require.NoError(t, s.CompleteMessage(e.ctx, m, nil))
	require.EqualValues(t, 3, q.RuntimeProperties().ActiveMessageCount, "b's three")
}

// SS5: when the session lock expires, its locked messages are released as
// in L6 (a failed delivery each), every further call returns
// ErrSessionLockLost, and a call blocked on it returns at that instant.
func TestSS5_SessionLockExpiry(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("s", &minibus.QueueProperties{LockDuration: 10 * time.Second, MaxDeliveryCount: 2})
	e.sendSession(q, "a", "a0", "a1")
	s := e.accept(q, "a")
	m := e.receiveSession(s, 1)[0]
	require.True(t, m.LockedUntil.Equal(s.LockedUntil()), "SS8: a message's lock is the session's")
	e.mock.Add(10*time.Second - 1)
	require.NoError(t, s.RenewSessionLock(e.ctx, nil))
	require.True(t, s.LockedUntil().Equal(at(20*time.Second-1)))
	e.mock.Add(10 * time.Second)
	_, err := s.ReceiveMessages(e.ctx, 1, nil)
	requireSentinel(t, err, minibus.ErrSessionLockLost, `session "a"`)
	requireSentinel(t, s.CompleteMessage(e.ctx, m, nil), minibus.ErrSessionLockLost, `session "a"`)
	_, err = s.GetSessionState(e.ctx, nil)
	require.ErrorIs(t, err, minibus.ErrSessionLockLost)

	s2 := e.accept(q, "a")
	m = e.receiveSession(s2, 1)[0]
	require.Equal(t, "a0", string(m.Body), "released to its position")
	require.EqualValues(t, 2, m.DeliveryCount, "the expiry counted a delivery")

	// A call blocked on the session returns ErrSessionLockLost at the
	// instant the lock ends.
	require.NoError(t, s2.CompleteMessage(e.ctx, m, nil))
	m = e.receiveSession(s2, 1)[0]
	require.NoError(t, s2.CompleteMessage(e.ctx, m, nil))
	done := make(chan error, 1)
	go func() {
		_, err := s2.ReceiveMessages(e.ctx, 1, nil)
		done <- err
	}()
	e.mock.Add(10 * time.Second)
	select {
	case err := <-done:
		require.ErrorIs(t, err, minibus.ErrSessionLockLost)
	case <-time.After(10 * time.Second): // a safety net
		t.Fatal("the blocked receive did not return at the session lock's end")
	}
}

// SS5: closing a session receiver releases its locked messages without
// counting a delivery; further calls return ErrClosed; deferred messages
// stay deferred.
func TestSS5_CloseReleasesWithoutCounting(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("s", &minibus.QueueProperties{MaxDeliveryCount: 1})
	e.sendSession(q, "a", "a0", "a1")
	s := e.accept(q, "a")
	ms := e.receiveSession(s, 2)
	require.NoError(t, s.DeferMessage(e.ctx, ms[1], nil))
	require.NoError(t, s.Close(e.ctx))
	_, err := s.ReceiveMessages(e.ctx, 1, nil)
	requireSentinel(t, err, minibus.ErrClosed, "session receiver")
	s = e.accept(q, "a")
	m := e.receiveSession(s, 1)[0]
	require.Equal(t, "a0", string(m.Body))
	require.EqualValues(t, 1, m.DeliveryCount, "not counted: MaxDeliveryCount 1 did not dead-letter it")
	d, err := s.ReceiveDeferredMessages(e.ctx, []int64{ms[1].SequenceNumber}, nil)
	require.NoError(t, err)
	require.Equal(t, "a1", string(d[0].Body))
}

// SS6: session state is kept per session for the entity's life, with or
// without messages; nil clears it; never set reads nil; Set and Get copy.
func TestSS6_SessionState(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("s", nil)
	s := e.accept(q, "a")
	got, err := s.GetSessionState(e.ctx, nil)
	require.NoError(t, err)
	require.Nil(t, got)
	state := []byte("step-1")
	require.NoError(t, s.SetSessionState(e.ctx, state, nil))
	state[0] = 'X'
	got, err = s.GetSessionState(e.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, "step-1", string(got))
	got[0] = 'Y'
	require.NoError(t, s.Close(e.ctx))
	ids, err := q.ListSessions(e.ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids, "a session with state only is listed")
	s = e.accept(q, "a")
	got, err = s.GetSessionState(e.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, "step-1", string(got), "kept across receivers, copied out")
	require.NoError(t, s.SetSessionState(e.ctx, nil, nil))
	got, err = s.GetSessionState(e.ctx, nil)
	require.NoError(t, err)
	require.Nil(t, got)
}

// SS7, SS8: a session message's lock follows the session's; renewing a
// message is ErrInvalidArgument; ReceiveDeferredMessages finds only the
// session's own deferred messages.
func TestSS7_SS8_MessageLocksFollowTheSession(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("s", nil)
	e.sendSession(q, "a", "a0")
	e.sendSession(q, "b", "b0")
	sa, sb := e.accept(q, "a"), e.accept(q, "b")
	ma := e.receiveSession(sa, 1)[0]
	mb := e.receiveSession(sb, 1)[0]
	requireSentinel(t, sa.RenewMessageLock(e.ctx, ma, nil), minibus.ErrInvalidArgument, "renew the session lock")
	require.NoError(t, sb.DeferMessage(e.ctx, mb, nil))
	_, err := sa.ReceiveDeferredMessages(e.ctx, []int64{mb.SequenceNumber}, nil)
	requireSentinel(t, err, minibus.ErrMessageNotFound, "is not a deferred message")
	requireSentinel(t, sb.CompleteMessage(e.ctx, ma, nil), minibus.ErrLockLost, "message 1")
	e.mock.Add(30 * time.Second)
	require.NoError(t, sa.RenewSessionLock(e.ctx, nil))
	e.mock.Add(45 * time.Second) // past ma's first LockedUntil, within the renewed session lock
	require.NoError(t, sa.CompleteMessage(e.ctx, ma, nil), "renewing the session renewed its message")
}

// L13: runtime counts include session messages.
func TestL13_CountsIncludeSessions(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("s", nil)
	e.sendSession(q, "a", "a0", "a1")
	e.sendSession(q, "b", "b0")
	s := e.accept(q, "a")
	m := e.receiveSession(s, 1)[0]
	require.NoError(t, s.DeferMessage(e.ctx, m, nil))
	rp := q.RuntimeProperties()
	require.EqualValues(t, 3, rp.ActiveMessageCount)
	require.EqualValues(t, 3, rp.TotalMessageCount)
}
