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

// SS2, SS1: an empty session id is ErrInvalidArgument, on a queue and a
// subscription, and holds nothing: no message can carry an empty
// SessionID, so such a session could never have a message (issue 42).
func TestSS2_AcceptEmptySessionID(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("s", nil)
	_, err := q.AcceptSession(e.ctx, "", nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, `queue "s": session id is empty`)
	top := e.topic("t", nil)
	sub := e.subscription(top, "sub", &minibus.SubscriptionProperties{RequiresSession: true})
	_, err = sub.AcceptSession(e.ctx, "", nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, `subscription "t/Subscriptions/sub": session id is empty`)
	ids, err := q.ListSessions(e.ctx)
	require.NoError(t, err)
	require.Empty(t, ids)
	e.sendSession(q, "a", "a1")
	s, err := q.AcceptNextSession(e.ctx, nil)
	require.NoError(t, err, "nothing was held")
	require.Equal(t, "a", s.SessionID())
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

// Session rules over both session kinds of the receiver conformance suite:
// session "s" of a session-enabled queue and of a session-enabled
// subscription (receiver_conformance_test.go).

// SS4, SS8, L12: a session receiver peeks its session's available, locked
// and deferred messages, not its scheduled ones nor other sessions';
// ReceiveDeferredMessages finds only its session's deferred messages; a
// scheduled message of the session joins it when it activates.
func TestSS4_SessionPeekAndDeferredEachKind(t *testing.T) {
	forEachSessionKind(t, settings{}, func(t *testing.T, f *fixture) {
		f.put("a", "b", "c")
		f.sendTo("s", &minibus.Message{Body: []byte("later"), ScheduledEnqueueTime: at(time.Hour)})
		f.sendTo("u", &minibus.Message{Body: []byte("u")})
		u, err := f.accept("u", minibus.ReceiveModePeekLock)
		require.NoError(t, err)
		um := f.receive(u, 1)[0]
		require.NoError(t, u.DeferMessage(f.ctx, um, nil))
		require.NoError(t, u.Close(f.ctx))

		r := f.receiver(minibus.ReceiveModePeekLock)
		ms := f.receive(r, 2)
		require.Equal(t, []string{"a", "b"}, bodies(ms))
		require.NoError(t, r.DeferMessage(f.ctx, ms[1], nil))
		peeked := f.peekAll(r)
		require.Equal(t, []string{"a", "b", "c"}, bodies(peeked), "available, locked and deferred; not scheduled, not other sessions'")
		require.Equal(t, []minibus.MessageState{minibus.MessageStateActive, minibus.MessageStateDeferred, minibus.MessageStateActive},
			[]minibus.MessageState{peeked[0].State, peeked[1].State, peeked[2].State})
		_, err = r.ReceiveDeferredMessages(f.ctx, []int64{um.SequenceNumber}, nil)
		requireSentinel(t, err, minibus.ErrMessageNotFound, "is not a deferred message")
		_, err = r.ReceiveDeferredMessages(f.ctx, []int64{ms[1].SequenceNumber, um.SequenceNumber}, nil)
		requireSentinel(t, err, minibus.ErrMessageNotFound, "is not a deferred message")
		require.NoError(t, r.CompleteMessage(f.ctx, ms[0], nil))

		f.advanceTo(time.Hour) // the session lock ended long ago; "later" activates
		r = f.afterLockEnd(t, r)
		peeked = f.peekAll(r)
		require.Equal(t, []string{"b", "c", "later"}, bodies(peeked))
		got := f.receiveAll(r, 10)
		require.Equal(t, []string{"c", "later"}, bodies(got))
		require.True(t, got[1].EnqueuedTime.Equal(at(time.Hour)))
		d, err := r.ReceiveDeferredMessages(f.ctx, []int64{ms[1].SequenceNumber}, nil)
		require.NoError(t, err, "still deferred after the session lock expired (SS5)")
		require.Equal(t, "b", string(d[0].Body))
	})
}

// SS5, L6: at the session lock's end its locked messages are released as
// in L6, each a failed delivery: past MaxDeliveryCount to the dead-letter
// queue, fetched from deferral back to Deferred, past ExpiresAt expired
// (E4: not before), else back to its position; deferred messages stay.
func TestSS5_LockExpiryReleasesAsL6EachKind(t *testing.T) {
	forEachSessionKind(t, settings{maxDelivery: 3}, func(t *testing.T, f *fixture) {
		f.sendTo("s",
			&minibus.Message{Body: []byte("dl")},
			&minibus.Message{Body: []byte("def")},
			&minibus.Message{Body: []byte("ttl"), TimeToLive: 30 * time.Second},
			&minibus.Message{Body: []byte("plain")},
			&minibus.Message{Body: []byte("kept")})
		r := f.receiver(minibus.ReceiveModePeekLock)
		for range 2 {
			m := f.receive(r, 1)[0]
			require.Equal(t, "dl", string(m.Body))
			require.NoError(t, r.AbandonMessage(f.ctx, m, nil))
		}
		ms := f.receive(r, 5)
		require.Equal(t, []string{"dl", "def", "ttl", "plain", "kept"}, bodies(ms))
		require.EqualValues(t, 3, ms[0].DeliveryCount)
		require.NoError(t, r.DeferMessage(f.ctx, ms[1], nil))
		require.NoError(t, r.DeferMessage(f.ctx, ms[4], nil))
		fetched, err := r.ReceiveDeferredMessages(f.ctx, []int64{ms[1].SequenceNumber}, nil)
		require.NoError(t, err)
		require.EqualValues(t, 2, fetched[0].DeliveryCount)

		f.mock.Add(time.Minute - 1)
		require.EqualValues(t, 5, f.active(), "ttl is past ExpiresAt but locked (E4)")
		require.Zero(t, f.deadLettered())
		f.mock.Add(1) // the session lock ends
		require.EqualValues(t, 3, f.active(), "ttl expired; dl dead-lettered")
		require.EqualValues(t, 1, f.deadLettered())
		r = f.afterLockEnd(t, r)
		got := f.receiveAll(r, 10)
		require.Equal(t, []string{"plain"}, bodies(got))
		require.EqualValues(t, 2, got[0].DeliveryCount, "the expiry counted a delivery")
		d, err := r.ReceiveDeferredMessages(f.ctx, []int64{ms[1].SequenceNumber, ms[4].SequenceNumber}, nil)
		require.NoError(t, err, "def returned to Deferred, kept stayed there")
		require.Equal(t, []string{"def", "kept"}, bodies(d))
		require.Equal(t, []uint32{3, 2}, []uint32{d[0].DeliveryCount, d[1].DeliveryCount})
		dl := f.receive(f.deadLetterReceiver(), 1)[0]
		require.Equal(t, "dl", string(dl.Body))
		require.Equal(t, "MaxDeliveryCountExceeded", dl.DeadLetterReason)
		require.Equal(t, "Message could not be consumed after 3 delivery attempts.", dl.DeadLetterErrorDescription)
	})
}

// SS5: closing a session receiver releases its locked messages without
// counting a delivery (a message fetched from deferral returns to Deferred
// with its fetch not counted); the session's deferred messages stay; the
// session is free at once.
func TestSS5_CloseReleasesWithoutCountingEachKind(t *testing.T) {
	forEachSessionKind(t, settings{maxDelivery: 2}, func(t *testing.T, f *fixture) {
		f.put("a", "b", "c")
		r := f.receiver(minibus.ReceiveModePeekLock)
		ms := f.receive(r, 3)
		require.NoError(t, r.DeferMessage(f.ctx, ms[1], nil))
		require.NoError(t, r.DeferMessage(f.ctx, ms[2], nil))
		fetched, err := r.ReceiveDeferredMessages(f.ctx, []int64{ms[1].SequenceNumber}, nil)
		require.NoError(t, err)
		require.EqualValues(t, 2, fetched[0].DeliveryCount)
		require.NoError(t, r.Close(f.ctx))
		require.Zero(t, f.deadLettered())
		r = f.receiver(minibus.ReceiveModePeekLock)
		peeked := f.peekAll(r)
		require.Equal(t, []string{"a", "b", "c"}, bodies(peeked))
		require.Equal(t, []minibus.MessageState{minibus.MessageStateActive, minibus.MessageStateDeferred, minibus.MessageStateDeferred},
			[]minibus.MessageState{peeked[0].State, peeked[1].State, peeked[2].State})
		require.Equal(t, []uint32{0, 1, 1}, []uint32{peeked[0].DeliveryCount, peeked[1].DeliveryCount, peeked[2].DeliveryCount},
			"the deliveries the close ended are not counted")
		a := f.receive(r, 1)[0]
		require.Equal(t, "a", string(a.Body))
		require.EqualValues(t, 1, a.DeliveryCount)
	})
}

// SS5, T2: a call blocked on the session returns ErrSessionLockLost at the
// instant the session lock ends, not before, and a message for another
// session does not wake it.
func TestSS5_BlockedCallEndsAtTheInstantEachKind(t *testing.T) {
	forEachSessionKind(t, settings{lockDuration: 10 * time.Second}, func(t *testing.T, f *fixture) {
		r := f.receiver(minibus.ReceiveModePeekLock)
		done := make(chan error, 1)
		go func() {
			msgs, err := r.ReceiveMessages(context.Background(), 1, nil)
			if msgs != nil {
				t.Errorf("received %v", bodies(msgs))
			}
			done <- err
		}()
		f.sendTo("u", &minibus.Message{Body: []byte("u")})
		f.mock.Add(10*time.Second - 1)
		select {
		case err := <-done:
			t.Fatalf("the blocked receive returned before the session lock's end: %v", err)
		case <-time.After(absenceWait): // not a wait for the broker: it must not return
		}
		f.mock.Add(1)
		select {
		case err := <-done:
			requireSentinel(t, err, minibus.ErrSessionLockLost, `session "s"`)
		case <-time.After(resultTimeout): // a safety net
			t.Fatal("the blocked receive did not return at the session lock's end")
		}
	})
}

// SS2, L7: a receive-and-delete session receiver holds its session as a
// peek-lock one does, until now + LockDuration, and loses it then; its
// messages have no lock and are gone.
func TestSS2_ReceiveAndDeleteHoldsTheSessionEachKind(t *testing.T) {
	forEachSessionKind(t, settings{lockDuration: 10 * time.Second}, func(t *testing.T, f *fixture) {
		f.put("a", "b")
		f.mock.Add(time.Second)
		r := f.receiver(minibus.ReceiveModeReceiveAndDelete)
		require.True(t, r.(*minibus.SessionReceiver).LockedUntil().Equal(at(11*time.Second)))
		_, err := f.accept("s", minibus.ReceiveModePeekLock)
		requireSentinel(t, err, minibus.ErrSessionCannotBeLocked, `session "s"`)
		m := f.receive(r, 1)[0]
		require.Equal(t, "a", string(m.Body))
		require.True(t, m.LockedUntil.IsZero())
		require.EqualValues(t, 1, m.DeliveryCount)
		f.mock.Add(10*time.Second - 1)
		_, err = f.accept("s", minibus.ReceiveModePeekLock)
		requireSentinel(t, err, minibus.ErrSessionCannotBeLocked, `session "s"`)
		f.mock.Add(1)
		r = f.afterLockEnd(t, r) // a new receive-and-delete receiver
		got := f.receiveAll(r, 10)
		require.Equal(t, []string{"b"}, bodies(got))
		require.EqualValues(t, 1, got[0].DeliveryCount)
		require.Zero(t, f.active())
	})
}

// SS6: session state outlives the receiver's session lock, and a lost
// receiver can neither read nor write it.
func TestSS6_SessionStateEachKind(t *testing.T) {
	forEachSessionKind(t, settings{lockDuration: 10 * time.Second}, func(t *testing.T, f *fixture) {
		r := f.receiver(minibus.ReceiveModePeekLock).(*minibus.SessionReceiver)
		got, err := r.GetSessionState(f.ctx, nil)
		require.NoError(t, err)
		require.Nil(t, got)
		require.NoError(t, r.SetSessionState(f.ctx, []byte("x"), nil))
		f.mock.Add(10 * time.Second)
		requireSentinel(t, r.SetSessionState(f.ctx, []byte("y"), nil), minibus.ErrSessionLockLost, `session "s"`)
		_, err = r.GetSessionState(f.ctx, nil)
		requireSentinel(t, err, minibus.ErrSessionLockLost, `session "s"`)
		r = f.afterLockEnd(t, r).(*minibus.SessionReceiver)
		got, err = r.GetSessionState(f.ctx, nil)
		require.NoError(t, err)
		require.Equal(t, "x", string(got))
		require.NoError(t, r.SetSessionState(f.ctx, nil, nil))
		got, err = r.GetSessionState(f.ctx, nil)
		require.NoError(t, err)
		require.Nil(t, got)
	})
}

// SS3: AcceptNextSession takes the unheld session whose first available
// message is oldest by sequence number (all were sent at one instant, and
// the order is neither the ids' nor their reverse); a deferred first
// message does not count; a session with only state, only deferred or only
// scheduled messages is never offered; with none left it returns nil and
// ctx.Err(); it wakes when a held session's lock expires (T5), at that
// instant.
func TestSS3_AcceptNextSessionEachKind(t *testing.T) {
	forEachSessionKind(t, settings{}, func(t *testing.T, f *fixture) {
		// Not offered: each older than every offered message.
		f.sendTo("df", &minibus.Message{Body: []byte("df1")})
		df, err := f.accept("df", minibus.ReceiveModePeekLock)
		require.NoError(t, err)
		require.NoError(t, df.DeferMessage(f.ctx, f.receive(df, 1)[0], nil))
		require.NoError(t, df.Close(f.ctx))
		st, err := f.accept("st", minibus.ReceiveModePeekLock)
		require.NoError(t, err)
		require.NoError(t, st.SetSessionState(f.ctx, []byte("state"), nil))
		require.NoError(t, st.Close(f.ctx))
		f.sendTo("sc", &minibus.Message{Body: []byte("sc1"), ScheduledEnqueueTime: at(time.Hour)})

		f.sendTo("m", &minibus.Message{Body: []byte("m1")})
		f.sendTo("z", &minibus.Message{Body: []byte("z1")})
		f.sendTo("a", &minibus.Message{Body: []byte("a1")})
		f.sendTo("m", &minibus.Message{Body: []byte("m2")})
		held := map[string]*minibus.SessionReceiver{}
		next := func() string {
			t.Helper()
			ctx, cancel := context.WithTimeout(f.ctx, resultTimeout)
			defer cancel()
			sr, err := f.acceptNext(ctx)
			require.NoError(t, err)
			t.Cleanup(func() { _ = sr.Close(context.Background()) })
			held[sr.SessionID()] = sr
			return sr.SessionID()
		}
		none := func() {
			t.Helper()
			ctx, cancel := context.WithTimeout(f.ctx, absenceWait)
			defer cancel()
			sr, err := f.acceptNext(ctx)
			id := ""
			if sr != nil {
				id = sr.SessionID()
				_ = sr.Close(f.ctx)
			}
			require.ErrorIs(t, err, context.DeadlineExceeded, "offered %q", id)
			require.Nil(t, sr)
		}
		require.Equal(t, []string{"m", "z", "a"}, []string{next(), next(), next()})
		none()

		// m's first message deferred: its first available one is m2, newer
		// than z1.
		m := held["m"]
		require.NoError(t, m.DeferMessage(f.ctx, f.receive(m, 1)[0], nil))
		for _, id := range []string{"m", "z", "a"} {
			require.NoError(t, held[id].Close(f.ctx))
		}
		require.Equal(t, []string{"z", "a", "m"}, []string{next(), next(), next()})
		none()

		// A held session whose lock expires with a locked message is offered
		// at that instant.
		for _, id := range []string{"z", "a"} {
			require.NoError(t, held[id].CompleteMessage(f.ctx, f.receive(held[id], 1)[0], nil))
		}
		m = held["m"]
		f.receive(m, 1)
		got := make(chan string, 1)
		go func() {
			sr, err := f.acceptNext(context.Background())
			if err != nil {
				got <- err.Error()
				return
			}
			got <- sr.SessionID()
			_ = sr.Close(context.Background())
		}()
		f.mock.Add(time.Minute - 1)
		select {
		case id := <-got:
			t.Fatalf("AcceptNextSession returned %q before the lock's end", id)
		case <-time.After(absenceWait): // not a wait for the broker: it must not return
		}
		f.mock.Add(1)
		select {
		case id := <-got:
			require.Equal(t, "m", id)
		case <-time.After(resultTimeout): // a safety net
			t.Fatal("AcceptNextSession did not wake at the session lock's end")
		}
	})
}

// SS1 on subscriptions: a session-enabled subscription's main queue is read
// through sessions only, its dead-letter queue with a plain receiver; a
// subscription without sessions accepts none; a topic message without
// SessionID that the rules do not select is not dead-lettered.
func TestSS1_SessionSubscriptions(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	sess := e.subscription(top, "sess", &minibus.SubscriptionProperties{RequiresSession: true,
		DefaultRule: &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "pick = 1"}}})
	plain := e.subscription(top, "plain", nil)
	_, err := sess.NewReceiver(nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "requires sessions")
	_, err = sess.NewReceiver(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	require.NoError(t, err)
	_, err = plain.AcceptSession(e.ctx, "a", nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "does not require sessions")
	_, err = plain.AcceptNextSession(e.ctx, nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "does not require sessions")

	require.NoError(t, top.SendMessages(e.ctx, []*minibus.Message{
		{Body: []byte("skipped"), ApplicationProperties: map[string]any{"pick": 0}},
		{Body: []byte("picked"), ApplicationProperties: map[string]any{"pick": 1}},
	}, nil))
	rp := sess.RuntimeProperties()
	require.EqualValues(t, 1, rp.DeadLetterMessageCount, "only the selected message")
	require.Zero(t, rp.ActiveMessageCount)
	require.EqualValues(t, 2, plain.RuntimeProperties().ActiveMessageCount)
	d := e.receive(e.receiver(sess, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
	require.Equal(t, "picked", string(d.Body))
	require.Equal(t, "Session id is null.", d.DeadLetterReason)
}

// SS8: a message received in a session is locked until the session's lock
// end, not for LockDuration from its receipt, also when fetched from
// deferral and after RenewSessionLock; renewing moves the lock of a message
// fetched from deferral too; a renewal after the lock's end is
// ErrSessionLockLost.
func TestSS8_RenewSessionLock(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("q", &minibus.QueueProperties{LockDuration: 10 * time.Second})
	e.sendSession(q, "a", "a0", "a1", "a2")
	s := e.accept(q, "a")
	e.mock.Add(3 * time.Second)
	m := e.receiveSession(s, 1)[0]
	require.True(t, m.LockedUntil.Equal(at(10*time.Second)), "the session's end, not receipt + LockDuration: %v", m.LockedUntil)
	require.NoError(t, s.DeferMessage(e.ctx, m, nil))
	e.mock.Add(time.Second)
	d, err := s.ReceiveDeferredMessages(e.ctx, []int64{m.SequenceNumber}, nil)
	require.NoError(t, err)
	require.True(t, d[0].LockedUntil.Equal(at(10*time.Second)), "a fetch from deferral is locked until the session's end")
	require.NoError(t, s.RenewSessionLock(e.ctx, nil))
	require.True(t, s.LockedUntil().Equal(at(14*time.Second)))
	e.mock.Add(2 * time.Second)
	m1 := e.receiveSession(s, 1)[0]
	require.True(t, m1.LockedUntil.Equal(at(14*time.Second)), "received after the renewal: %v", m1.LockedUntil)
	e.mock.Add(8*time.Second - 1) // past the first end, 1ns before the renewed one
	require.True(t, e.mock.Now().Equal(at(14*time.Second-1)))
	require.NoError(t, s.CompleteMessage(e.ctx, d[0], nil), "the fetched message's lock moved with the session's")
	require.NoError(t, s.CompleteMessage(e.ctx, m1, nil))
	e.mock.Add(1)
	requireSentinel(t, s.RenewSessionLock(e.ctx, nil), minibus.ErrSessionLockLost, `session "a"`)
}

// SS5: closing a session receiver releases its locked messages without
// counting a delivery, as in Azure, where a close does not increment the
// delivery count and so cannot dead-letter: a message fetched from deferral
// whose first delivery already reached MaxDeliveryCount returns to Deferred
// with its DeliveryCount as before the fetch (L6's deferral rule).
func TestSS5_CloseReturnsAFetchedDeferredMessageToDeferred(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("q", &minibus.QueueProperties{MaxDeliveryCount: 1})
	e.sendSession(q, "a", "a0")
	s := e.accept(q, "a")
	m := e.receiveSession(s, 1)[0]
	require.NoError(t, s.DeferMessage(e.ctx, m, nil))
	d, err := s.ReceiveDeferredMessages(e.ctx, []int64{m.SequenceNumber}, nil)
	require.NoError(t, err)
	require.EqualValues(t, 2, d[0].DeliveryCount)
	require.NoError(t, s.Close(e.ctx))
	rp := q.RuntimeProperties()
	require.Zero(t, rp.DeadLetterMessageCount, "a close counts no delivery: no MaxDeliveryCount dead-lettering")
	require.EqualValues(t, 1, rp.ActiveMessageCount)
	s = e.accept(q, "a")
	p, err := s.PeekMessages(e.ctx, 10, nil)
	require.NoError(t, err)
	require.Len(t, p, 1)
	require.Equal(t, minibus.MessageStateDeferred, p[0].State)
	require.EqualValues(t, 1, p[0].DeliveryCount)
}
