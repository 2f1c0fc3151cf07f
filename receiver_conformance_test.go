package minibus_test

import (
	"context"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// One conformance suite for every receiver kind: each
// rule of SEMANTICS L, Q4 and V4 is written once, as a function of a
// fixture, and runs over every kind of receivable sub-queue: a queue, a
// subscription, their dead-letter queues, and one session of a
// session-enabled queue and of a session-enabled subscription, read by a
// SessionReceiver (msgReceiver covers both receivers). Where SEMANTICS SS
// makes a session differ (one receiver at a time, the session's lock over
// its messages' locks, Close releasing them), the fixture's session field
// selects the session's variant of the rule; rules of sessions alone run
// over the session kinds with forEachSessionKind (session_test.go).

// settings configures the entity a fixture builds.
type settings struct {
	lockDuration time.Duration // default 1m
	maxDelivery  int32         // default 10
}

// fixture is one receivable sub-queue under test.
type fixture struct {
	*env
	// put makes messages with these bodies arrive in the sub-queue, in order.
	put func(bodies ...string)
	// receiver returns a receiver of the sub-queue.
	receiver func(mode minibus.ReceiveMode) msgReceiver
	// otherReceiver returns a receiver of the same sub-queue of another
	// entity.
	otherReceiver func() msgReceiver
	// active counts the sub-queue's available, locked and deferred messages.
	active func() int64
	// deadLettered counts the messages in the entity's dead-letter queue
	// when the sub-queue under test is the main one.
	deadLettered func() int64
	// deadLetterReceiver reads the entity's dead-letter queue.
	deadLetterReceiver func() msgReceiver
	// prior is how many deliveries a message had before it arrived.
	prior uint32
	// isDLQ: MaxDeliveryCount and expiry do not apply (SEMANTICS D3).
	isDLQ bool
	// session: the sub-queue is session "s" of a session-enabled entity,
	// read by SessionReceivers. It admits one receiver at a time (SS2); its
	// message locks are the session's lock (SS7, SS8), so when they end with
	// time the receiver has lost the session (SS5); closing its receiver
	// releases its locks (SS5) instead of keeping them (L11). Other
	// sessions' messages sit between its own.
	session bool
	// Session kinds only: accept accepts session id of the entity,
	// acceptNext is its AcceptNextSession, and sendTo sends msgs to session
	// id (SessionID set here).
	accept     func(id string, mode minibus.ReceiveMode) (*minibus.SessionReceiver, error)
	acceptNext func(ctx context.Context) (*minibus.SessionReceiver, error)
	sendTo     func(id string, msgs ...*minibus.Message)
	// modes is the mode each session receiver of the fixture was accepted
	// with.
	modes map[*minibus.SessionReceiver]minibus.ReceiveMode
	// name and otherName are how errors name the sub-queue under test and
	// the other entity's; defaults are the queue kinds'.
	name, otherName string
}

// second returns a receiver of the sub-queue beside r, which stays open;
// for a session, which admits one receiver at a time (SEMANTICS SS2), r is
// closed first.
func (f *fixture) second(t *testing.T, r msgReceiver, mode minibus.ReceiveMode) msgReceiver {
	t.Helper()
	if f.session {
		require.NoError(t, r.Close(f.ctx))
	}
	return f.receiver(mode)
}

// renew renews the lock of m, which r holds, and returns the lock's new
// end: RenewMessageLock (SEMANTICS L5), or, in a session, RenewSessionLock,
// which renews the session's messages too (SS7, SS8).
func (f *fixture) renew(r msgReceiver, m *minibus.ReceivedMessage) (time.Time, error) {
	if sr, ok := r.(*minibus.SessionReceiver); ok {
		err := sr.RenewSessionLock(f.ctx, nil)
		return sr.LockedUntil(), err
	}
	err := r.RenewMessageLock(f.ctx, m, nil)
	return m.LockedUntil, err
}

// afterLockEnd is called when the clock has passed the end of the locks r
// took: it returns the receiver to go on with. That is r itself, except in
// a session, whose lock ended with them: then r has lost the session
// (SEMANTICS SS5) and a new receiver accepts it.
func (f *fixture) afterLockEnd(t *testing.T, r msgReceiver) msgReceiver {
	t.Helper()
	sr, ok := r.(*minibus.SessionReceiver)
	if !ok {
		return r
	}
	ctx, cancel := context.WithTimeout(f.ctx, resultTimeout)
	defer cancel()
	_, err := sr.ReceiveMessages(ctx, 1, nil)
	requireSentinel(t, err, minibus.ErrSessionLockLost, `session "s"`)
	return f.receiver(f.modes[sr])
}

type kind struct {
	name  string
	build func(t *testing.T, s settings) *fixture
	// session marks the session kinds (fixture.session).
	session bool
}

func queueKind(t *testing.T, s settings) *fixture {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{LockDuration: s.lockDuration, MaxDeliveryCount: s.maxDelivery})
	other := e.queue("other", nil)
	e.send(other, "other")
	return &fixture{
		env: e,
		put: func(bodies ...string) { e.send(q, bodies...) },
		receiver: func(mode minibus.ReceiveMode) msgReceiver {
			return e.receiver(q, &minibus.ReceiverOptions{ReceiveMode: mode})
		},
		otherReceiver: func() msgReceiver { return e.receiver(other, nil) },
		active:        func() int64 { return q.RuntimeProperties().ActiveMessageCount },
		deadLettered:  func() int64 { return q.RuntimeProperties().DeadLetterMessageCount },
		deadLetterReceiver: func() msgReceiver {
			return e.receiver(q, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
		},
	}
}

// queueDLQKind puts messages into a queue's dead-letter queue by sending,
// receiving and dead-lettering them.
func queueDLQKind(t *testing.T, s settings) *fixture {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{LockDuration: s.lockDuration, MaxDeliveryCount: s.maxDelivery})
	other := e.queue("other", nil)
	main := e.receiver(q, nil)
	otherMain := e.receiver(other, nil)
	e.send(other, "other")
	require.NoError(t, otherMain.DeadLetterMessage(e.ctx, e.receive(otherMain, 1)[0], nil))
	return &fixture{
		env: e,
		put: func(bodies ...string) {
			e.send(q, bodies...)
			for _, m := range e.receive(main, len(bodies)) {
				require.NoError(t, main.DeadLetterMessage(e.ctx, m, &minibus.DeadLetterOptions{Reason: "test"}))
			}
		},
		receiver: func(mode minibus.ReceiveMode) msgReceiver {
			return e.receiver(q, &minibus.ReceiverOptions{ReceiveMode: mode, SubQueue: minibus.SubQueueDeadLetter})
		},
		otherReceiver: func() msgReceiver {
			return e.receiver(other, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
		},
		active:       func() int64 { return q.RuntimeProperties().DeadLetterMessageCount },
		deadLettered: func() int64 { return 0 },
		prior:        1,
		isDLQ:        true,
	}
}

// subscriptionKind reads a subscription of a topic that has a second,
// filtered subscription too.
func subscriptionKind(t *testing.T, s settings) *fixture {
	e := newEnv(t)
	top := e.topic("t", nil)
	sub := e.subscription(top, "s", &minibus.SubscriptionProperties{LockDuration: s.lockDuration, MaxDeliveryCount: s.maxDelivery})
	e.subscription(top, "none", &minibus.SubscriptionProperties{DefaultRule: &minibus.RuleProperties{Filter: minibus.FalseFilter{}}})
	otherTopic := e.topic("other", nil)
	other := e.subscription(otherTopic, "s", nil)
	e.send(otherTopic, "other")
	return &fixture{
		env: e,
		put: func(bodies ...string) { e.send(top, bodies...) },
		receiver: func(mode minibus.ReceiveMode) msgReceiver {
			return e.receiver(sub, &minibus.ReceiverOptions{ReceiveMode: mode})
		},
		otherReceiver: func() msgReceiver { return e.receiver(other, nil) },
		active:        func() int64 { return sub.RuntimeProperties().ActiveMessageCount },
		deadLettered:  func() int64 { return sub.RuntimeProperties().DeadLetterMessageCount },
		deadLetterReceiver: func() msgReceiver {
			return e.receiver(sub, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
		},
		otherName: `subscription "other/Subscriptions/s"`,
		name:      `subscription "t/Subscriptions/s"`,
	}
}

// subscriptionDLQKind reads a subscription's dead-letter queue.
func subscriptionDLQKind(t *testing.T, s settings) *fixture {
	e := newEnv(t)
	top := e.topic("t", nil)
	sub := e.subscription(top, "s", &minibus.SubscriptionProperties{LockDuration: s.lockDuration, MaxDeliveryCount: s.maxDelivery})
	otherTopic := e.topic("other", nil)
	other := e.subscription(otherTopic, "s", nil)
	main := e.receiver(sub, nil)
	otherMain := e.receiver(other, nil)
	e.send(otherTopic, "other")
	require.NoError(t, otherMain.DeadLetterMessage(e.ctx, e.receive(otherMain, 1)[0], nil))
	return &fixture{
		env: e,
		put: func(bodies ...string) {
			e.send(top, bodies...)
			for _, m := range e.receive(main, len(bodies)) {
				require.NoError(t, main.DeadLetterMessage(e.ctx, m, &minibus.DeadLetterOptions{Reason: "test"}))
			}
		},
		receiver: func(mode minibus.ReceiveMode) msgReceiver {
			return e.receiver(sub, &minibus.ReceiverOptions{ReceiveMode: mode, SubQueue: minibus.SubQueueDeadLetter})
		},
		otherReceiver: func() msgReceiver {
			return e.receiver(other, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
		},
		active:       func() int64 { return sub.RuntimeProperties().DeadLetterMessageCount },
		deadLettered: func() int64 { return 0 },
		prior:        1,
		isDLQ:        true,
		otherName:    `subscription "other/Subscriptions/s"`,
		name:         `subscription "t/Subscriptions/s/$DeadLetterQueue"`,
	}
}

// acceptor is a session-enabled queue or subscription.
type acceptor interface {
	AcceptSession(context.Context, string, *minibus.SessionReceiverOptions) (*minibus.SessionReceiver, error)
	AcceptNextSession(context.Context, *minibus.SessionReceiverOptions) (*minibus.SessionReceiver, error)
}

// sessionFixture makes the fixture of session "s" of ent, whose messages
// are sent to to (ent, or its topic); count counts ent's active messages.
// Each put sends, after each of its messages, one to session "t", so that
// other sessions' messages sit between the session's own; when the test
// ends, session "t" must be as it was sent: never delivered, never changed
// (SEMANTICS SS4).
func sessionFixture(t *testing.T, e *env, ent acceptor, to sender, count func() int64) *fixture {
	var others int64 // messages of other sessions than "s"
	tBodies := []string{}
	f := &fixture{env: e, session: true, modes: make(map[*minibus.SessionReceiver]minibus.ReceiveMode)}
	f.accept = func(id string, mode minibus.ReceiveMode) (*minibus.SessionReceiver, error) {
		return ent.AcceptSession(e.ctx, id, &minibus.SessionReceiverOptions{ReceiveMode: mode})
	}
	f.acceptNext = func(ctx context.Context) (*minibus.SessionReceiver, error) {
		return ent.AcceptNextSession(ctx, nil)
	}
	f.sendTo = func(id string, msgs ...*minibus.Message) {
		t.Helper()
		for _, m := range msgs {
			m.SessionID = id
		}
		require.NoError(t, to.SendMessages(e.ctx, msgs, nil))
		if id != "s" {
			others += int64(len(msgs))
		}
	}
	f.put = func(bodies ...string) {
		t.Helper()
		msgs := make([]*minibus.Message, 0, 2*len(bodies))
		for _, b := range bodies {
			msgs = append(msgs, &minibus.Message{Body: []byte(b), SessionID: "s"}, &minibus.Message{Body: []byte("t-" + b), SessionID: "t"})
			tBodies = append(tBodies, "t-"+b)
		}
		require.NoError(t, to.SendMessages(e.ctx, msgs, nil))
		others += int64(len(bodies))
	}
	f.receiver = func(mode minibus.ReceiveMode) msgReceiver {
		t.Helper()
		sr, err := f.accept("s", mode)
		require.NoError(t, err)
		t.Cleanup(func() { _ = sr.Close(context.Background()) })
		f.modes[sr] = mode
		return sr
	}
	f.active = func() int64 { return count() - others }
	t.Cleanup(func() {
		tr, err := f.accept("t", minibus.ReceiveModePeekLock)
		require.NoError(t, err, "session t is free")
		defer func() { _ = tr.Close(context.Background()) }()
		peeked, err := tr.PeekMessages(e.ctx, 1000, &minibus.PeekMessagesOptions{FromSequenceNumber: 1})
		require.NoError(t, err)
		require.Equal(t, tBodies, bodies(peeked), "session t's messages are all there")
		for _, m := range peeked {
			require.Zero(t, m.DeliveryCount, "session t's messages were never delivered")
			require.Equal(t, minibus.MessageStateActive, m.State)
		}
	})
	return f
}

// sessionQueueKind reads session "s" of a session-enabled queue.
func sessionQueueKind(t *testing.T, s settings) *fixture {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{RequiresSession: true, LockDuration: s.lockDuration, MaxDeliveryCount: s.maxDelivery})
	other := e.queue("other", &minibus.QueueProperties{RequiresSession: true})
	e.sendSession(other, "s", "other")
	f := sessionFixture(t, e, q, q, func() int64 { return q.RuntimeProperties().ActiveMessageCount })
	f.otherReceiver = func() msgReceiver { return e.accept(other, "s") }
	f.deadLettered = func() int64 { return q.RuntimeProperties().DeadLetterMessageCount }
	f.deadLetterReceiver = func() msgReceiver {
		return e.receiver(q, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	}
	return f
}

// sessionSubscriptionKind reads session "s" of a session-enabled
// subscription of a topic that has a second, filtered subscription too.
func sessionSubscriptionKind(t *testing.T, s settings) *fixture {
	e := newEnv(t)
	top := e.topic("t", nil)
	sub := e.subscription(top, "s", &minibus.SubscriptionProperties{RequiresSession: true, LockDuration: s.lockDuration, MaxDeliveryCount: s.maxDelivery})
	e.subscription(top, "none", &minibus.SubscriptionProperties{DefaultRule: &minibus.RuleProperties{Filter: minibus.FalseFilter{}}})
	otherTopic := e.topic("other", nil)
	other := e.subscription(otherTopic, "s", &minibus.SubscriptionProperties{RequiresSession: true})
	e.sendSession(otherTopic, "s", "other")
	f := sessionFixture(t, e, sub, top, func() int64 { return sub.RuntimeProperties().ActiveMessageCount })
	f.otherReceiver = func() msgReceiver { return e.accept(other, "s") }
	f.deadLettered = func() int64 { return sub.RuntimeProperties().DeadLetterMessageCount }
	f.deadLetterReceiver = func() msgReceiver {
		return e.receiver(sub, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	}
	f.otherName = `subscription "other/Subscriptions/s"`
	f.name = `subscription "t/Subscriptions/s"`
	return f
}

var kinds = []kind{
	{"queue", queueKind, false},
	{"queue-deadletter", queueDLQKind, false},
	{"subscription", subscriptionKind, false},
	{"subscription-deadletter", subscriptionDLQKind, false},
	{"session-queue", sessionQueueKind, true},
	{"session-subscription", sessionSubscriptionKind, true},
}

func forEachKind(t *testing.T, s settings, test func(t *testing.T, f *fixture)) {
	forKinds(t, s, false, test)
}

// forEachSessionKind runs test over the session kinds only: for rules of
// sessions alone (SEMANTICS SS).
func forEachSessionKind(t *testing.T, s settings, test func(t *testing.T, f *fixture)) {
	forKinds(t, s, true, test)
}

func forKinds(t *testing.T, s settings, sessionsOnly bool, test func(t *testing.T, f *fixture)) {
	for _, k := range kinds {
		if sessionsOnly && !k.session {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			f := k.build(t, s)
			require.Equal(t, k.session, f.session)
			if f.otherName == "" {
				f.otherName = `queue "other"`
				f.name = `queue "q"`
				if f.isDLQ {
					f.name = `queue "q/$DeadLetterQueue"`
				}
			}
			test(t, f)
		})
	}
}

// L1: each received message is locked until now + LockDuration under a
// fresh token; DeliveryCount reads 1..N over N deliveries. In a session
// (SS2, SS5, SS8) the message's lock is the session's, accepted now, and
// its end loses the session: each lock expiry counts a delivery.
func TestL1_LockAndDeliveryCount(t *testing.T) {
	forEachKind(t, settings{lockDuration: 30 * time.Second}, func(t *testing.T, f *fixture) {
		f.put("a")
		r := f.receiver(minibus.ReceiveModePeekLock)
		var tokens [][16]byte
		for n := uint32(1); n <= 3; n++ {
			m := f.receive(r, 1)[0]
			require.Equal(t, f.prior+n, m.DeliveryCount)
			require.True(t, m.LockedUntil.Equal(f.mock.Now().Add(30*time.Second)), "LockedUntil %v", m.LockedUntil)
			if sr, ok := r.(*minibus.SessionReceiver); ok {
				require.True(t, m.LockedUntil.Equal(sr.LockedUntil()), "SS8: the session's lock end")
			}
			require.NotEqual(t, [16]byte{}, m.LockToken)
			require.NotContains(t, tokens, m.LockToken)
			tokens = append(tokens, m.LockToken)
			f.mock.Add(30 * time.Second) // the lock ends at LockedUntil: redelivered
			r = f.afterLockEnd(t, r)
		}
	})
}

// L1, T2: the lock holds while now < LockedUntil: one nanosecond before, the
// message is still locked; at LockedUntil it is receivable again. SS5: a
// session lock likewise, and the session is lost at that very instant.
func TestL1_LockEndsExactlyAtLockedUntil(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		f.put("a")
		r := f.receiver(minibus.ReceiveModePeekLock)
		m := f.receive(r, 1)[0]
		f.mock.Add(time.Minute - 1)
		f.requireNothing(r)
		_, err := f.renew(r, m)
		require.NoError(t, err, "lock still held 1ns before LockedUntil")
		f.mock.Add(time.Minute)
		r = f.afterLockEnd(t, r)
		again := f.receive(r, 1)[0]
		require.Equal(t, m.SequenceNumber, again.SequenceNumber)
	})
}

// L2: a locked message is invisible to every other receive. L10: any
// receiver of the same sub-queue can settle it by its lock token.
func TestL2_L10_LockedInvisibleSettleByAnyReceiver(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		if f.session {
			lockedInvisibleInSession(t, f)
			return
		}
		f.put("a", "b")
		r1 := f.receiver(minibus.ReceiveModePeekLock)
		r2 := f.receiver(minibus.ReceiveModePeekLock)
		a := f.receive(r1, 1)[0]
		require.Equal(t, "a", string(a.Body))
		got := f.receiveAll(r2, 10)
		require.Equal(t, []string{"b"}, bodies(got))
		f.requireNothing(r1)
		require.NoError(t, r2.CompleteMessage(f.ctx, a, nil))
		// By lock token alone (SEMANTICS L10).
		require.NoError(t, r1.CompleteMessage(f.ctx, &minibus.ReceivedMessage{LockToken: got[0].LockToken}, nil))
		require.Zero(t, f.active())
	})
}

// L2, L10 in a session, which admits one receiver at a time (SS2): a
// second AcceptSession is refused while the first holds it; a locked
// message is invisible to the holder's next receive; the holder settles by
// lock token alone, a receiver of another session cannot (SS4); closed, the
// session can be accepted again.
func lockedInvisibleInSession(t *testing.T, f *fixture) {
	f.put("a", "b")
	r1 := f.receiver(minibus.ReceiveModePeekLock)
	a := f.receive(r1, 1)[0]
	require.Equal(t, "a", string(a.Body))
	_, err := f.accept("s", minibus.ReceiveModePeekLock)
	requireSentinel(t, err, minibus.ErrSessionCannotBeLocked, `session "s"`)
	got := f.receiveAll(r1, 10)
	require.Equal(t, []string{"b"}, bodies(got))
	f.requireNothing(r1)
	u, err := f.accept("u", minibus.ReceiveModePeekLock)
	require.NoError(t, err)
	defer func() { _ = u.Close(f.ctx) }()
	requireSentinel(t, u.CompleteMessage(f.ctx, a, nil), minibus.ErrLockLost, "lock token")
	require.NoError(t, r1.CompleteMessage(f.ctx, a, nil))
	// By lock token alone (SEMANTICS L10).
	require.NoError(t, r1.CompleteMessage(f.ctx, &minibus.ReceivedMessage{LockToken: got[0].LockToken}, nil))
	require.Zero(t, f.active())
	require.NoError(t, r1.Close(f.ctx))
	f.requireNothing(f.receiver(minibus.ReceiveModePeekLock))
}

// L3: CompleteMessage removes the message for good.
func TestL3_Complete(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		f.put("a")
		r := f.receiver(minibus.ReceiveModePeekLock)
		m := f.receive(r, 1)[0]
		require.EqualValues(t, 1, f.active(), "a locked message is active (L13)")
		require.NoError(t, r.CompleteMessage(f.ctx, m, nil))
		require.Zero(t, f.active())
		f.mock.Add(time.Hour)
		r = f.afterLockEnd(t, r)
		f.requireNothing(r)
		require.Empty(t, f.peekAll(r))
	})
}

// L3, Q4: AbandonMessage releases the lock at once, merges
// PropertiesToModify, and the message is next again at its own position.
func TestL3_Q4_AbandonReturnsToPosition(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		f.put("a", "b")
		r := f.receiver(minibus.ReceiveModePeekLock)
		a := f.receive(r, 1)[0]
		require.NoError(t, r.AbandonMessage(f.ctx, a, &minibus.AbandonMessageOptions{
			PropertiesToModify: map[string]any{"tries": 1},
		}))
		got := f.receive(r, 2)
		require.Equal(t, []string{"a", "b"}, bodies(got))
		require.Equal(t, f.prior+2, got[0].DeliveryCount)
		require.Equal(t, map[string]any{"tries": 1}, got[0].ApplicationProperties)
		require.Equal(t, f.prior+1, got[1].DeliveryCount)
	})
}

// L3, D2: DeadLetterMessage moves the message to the dead-letter queue with
// Reason and ErrorDescription; it keeps body, properties, SequenceNumber,
// EnqueuedTime and DeliveryCount.
func TestL3_D2_DeadLetter(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		if f.isDLQ {
			t.Skip("a dead-letter queue's messages cannot be dead-lettered (TestD1_NoDeadLetteringFromDeadLetterQueue)")
		}
		f.put("a")
		r := f.receiver(minibus.ReceiveModePeekLock)
		m := f.receive(r, 1)[0]
		require.NoError(t, r.DeadLetterMessage(f.ctx, m, &minibus.DeadLetterOptions{
			Reason: "bad", ErrorDescription: "really bad", PropertiesToModify: map[string]any{"k": "v"},
		}))
		require.Zero(t, f.active())
		require.EqualValues(t, 1, f.deadLettered())
		dlq := f.deadLetterReceiver()
		d := f.receive(dlq, 1)[0]
		require.Equal(t, "a", string(d.Body))
		require.Equal(t, m.SequenceNumber, d.SequenceNumber)
		require.True(t, m.EnqueuedTime.Equal(d.EnqueuedTime))
		require.Equal(t, "bad", d.DeadLetterReason)
		require.Equal(t, "really bad", d.DeadLetterErrorDescription)
		require.Equal(t, map[string]any{"k": "v"}, d.ApplicationProperties)
		require.Equal(t, m.DeliveryCount+1, d.DeliveryCount, "deliveries from a DLQ count too (L14)")
		require.Equal(t, minibus.MessageStateActive, d.State)
	})
}

// L3, L9, L14: a deferred message is only returned by
// ReceiveDeferredMessages, in the order named, with State Deferred; each
// fetch is a delivery; abandoning it leaves it deferred.
func TestL3_L9_DeferAndReceiveDeferred(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		f.put("a", "b", "c")
		r := f.receiver(minibus.ReceiveModePeekLock)
		msgs := f.receive(r, 3)
		for _, m := range msgs[:2] {
			require.NoError(t, r.DeferMessage(f.ctx, m, &minibus.DeferMessageOptions{PropertiesToModify: map[string]any{"deferred": true}}))
		}
		require.NoError(t, r.CompleteMessage(f.ctx, msgs[2], nil))
		require.EqualValues(t, 2, f.active(), "deferred messages are active (L13)")
		f.mock.Add(time.Hour)
		r = f.afterLockEnd(t, r) // a session's deferred messages stay deferred (SS5)
		f.requireNothing(r)

		peeked := f.peekAll(r)
		require.Len(t, peeked, 2)
		require.Equal(t, minibus.MessageStateDeferred, peeked[0].State)

		got, err := r.ReceiveDeferredMessages(f.ctx, []int64{msgs[1].SequenceNumber, msgs[0].SequenceNumber}, nil)
		require.NoError(t, err)
		require.Equal(t, []string{"b", "a"}, bodies(got))
		for _, m := range got {
			require.Equal(t, minibus.MessageStateDeferred, m.State)
			require.Equal(t, f.prior+2, m.DeliveryCount, "each fetch is a delivery")
			require.Equal(t, true, m.ApplicationProperties["deferred"])
		}
		// Locked right now: ErrMessageNotFound (L9).
		_, err = r.ReceiveDeferredMessages(f.ctx, []int64{got[0].SequenceNumber}, nil)
		requireSentinel(t, err, minibus.ErrMessageNotFound, "not a deferred message")

		require.NoError(t, r.AbandonMessage(f.ctx, got[0], nil))
		require.NoError(t, r.CompleteMessage(f.ctx, got[1], nil))
		f.requireNothing(r)
		again, err := r.ReceiveDeferredMessages(f.ctx, []int64{got[0].SequenceNumber}, nil)
		require.NoError(t, err, "an abandoned deferred message stays deferred")
		require.Equal(t, f.prior+3, again[0].DeliveryCount)
	})
}

// L9: if any number is not a deferred message, ReceiveDeferredMessages
// returns ErrMessageNotFound and changes nothing; bad lists are
// ErrInvalidArgument.
func TestL9_ReceiveDeferredAllOrNothing(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		f.put("a", "b")
		r := f.receiver(minibus.ReceiveModePeekLock)
		msgs := f.receive(r, 2)
		require.NoError(t, r.DeferMessage(f.ctx, msgs[0], nil))
		_, err := r.ReceiveDeferredMessages(f.ctx, []int64{msgs[0].SequenceNumber, msgs[1].SequenceNumber}, nil)
		requireSentinel(t, err, minibus.ErrMessageNotFound, "sequence number")
		_, err = r.ReceiveDeferredMessages(f.ctx, []int64{msgs[0].SequenceNumber, 999}, nil)
		requireSentinel(t, err, minibus.ErrMessageNotFound, "999")
		peeked := f.peekAll(r)
		require.Equal(t, minibus.MessageStateDeferred, peeked[0].State, "nothing changed")
		require.Equal(t, msgs[0].DeliveryCount, peeked[0].DeliveryCount, "nothing changed")

		_, err = r.ReceiveDeferredMessages(f.ctx, nil, nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, "no sequence numbers")
		_, err = r.ReceiveDeferredMessages(f.ctx, []int64{0}, nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, "less than 1")
		_, err = r.ReceiveDeferredMessages(f.ctx, []int64{msgs[0].SequenceNumber, msgs[0].SequenceNumber}, nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, "twice")
	})
}

// L9, L7: in receive-and-delete mode ReceiveDeferredMessages removes the
// messages.
func TestL9_ReceiveDeferredAndDelete(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		f.put("a")
		r := f.receiver(minibus.ReceiveModePeekLock)
		m := f.receive(r, 1)[0]
		require.NoError(t, r.DeferMessage(f.ctx, m, nil))
		rad := f.second(t, r, minibus.ReceiveModeReceiveAndDelete)
		got, err := rad.ReceiveDeferredMessages(f.ctx, []int64{m.SequenceNumber}, nil)
		require.NoError(t, err)
		require.Equal(t, "a", string(got[0].Body))
		require.True(t, got[0].LockedUntil.IsZero())
		require.Zero(t, f.active())
	})
}

// L4: settling or renewing with an expired lock, an already settled message,
// a stale token or an unknown token is ErrLockLost and changes nothing. In
// a session the expired lock is the session's: every call is then
// ErrSessionLockLost (SS5), and renewing means renewing the session (SS7).
func TestL4_LockLost(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		f.put("a", "b")
		r := f.receiver(minibus.ReceiveModePeekLock)
		a := f.receive(r, 1)[0]
		require.NoError(t, r.CompleteMessage(f.ctx, a, nil))
		requireSentinel(t, r.CompleteMessage(f.ctx, a, nil), minibus.ErrLockLost, "lock token")
		requireSentinel(t, r.AbandonMessage(f.ctx, a, nil), minibus.ErrLockLost, "lock token")

		b := f.receive(r, 1)[0]
		f.mock.Add(time.Minute) // lock expired
		lost, culprit := minibus.ErrLockLost, "lock token"
		if f.session {
			lost, culprit = minibus.ErrSessionLockLost, `session "s"`
		}
		for name, settle := range map[string]func() error{
			"complete":   func() error { return r.CompleteMessage(f.ctx, b, nil) },
			"abandon":    func() error { return r.AbandonMessage(f.ctx, b, nil) },
			"defer":      func() error { return r.DeferMessage(f.ctx, b, nil) },
			"renew":      func() error { _, err := f.renew(r, b); return err },
			"deadletter": func() error { return r.DeadLetterMessage(f.ctx, b, nil) },
		} {
			if name == "deadletter" && f.isDLQ {
				continue
			}
			requireSentinel(t, settle(), lost, culprit)
		}
		r = f.afterLockEnd(t, r)
		b2 := f.receive(r, 1)[0]
		require.Equal(t, b.SequenceNumber, b2.SequenceNumber)
		requireSentinel(t, r.CompleteMessage(f.ctx, b, nil), minibus.ErrLockLost, "lock token") // stale token
		unknown := &minibus.ReceivedMessage{LockToken: [16]byte{1, 2, 3}}
		requireSentinel(t, r.CompleteMessage(f.ctx, unknown, nil), minibus.ErrLockLost, "lock token 010203")
		require.NoError(t, r.CompleteMessage(f.ctx, b2, nil), "the current lock was untouched")
	})
}

// L5: RenewMessageLock sets LockedUntil to now + LockDuration in the broker
// and in the caller's message. In a session (SS7, SS8) RenewMessageLock is
// ErrInvalidArgument and RenewSessionLock does it for the session and its
// messages.
func TestL5_Renew(t *testing.T) {
	forEachKind(t, settings{lockDuration: 10 * time.Second}, func(t *testing.T, f *fixture) {
		f.put("a")
		r := f.receiver(minibus.ReceiveModePeekLock)
		m := f.receive(r, 1)[0]
		f.mock.Add(8 * time.Second)
		if f.session {
			requireSentinel(t, r.RenewMessageLock(f.ctx, m, nil), minibus.ErrInvalidArgument, "renew the session lock")
		}
		until, err := f.renew(r, m)
		require.NoError(t, err)
		require.True(t, until.Equal(f.mock.Now().Add(10*time.Second)), "LockedUntil %v", until)
		f.mock.Add(8 * time.Second) // past the first lock's end
		f.requireNothing(r)
		require.NoError(t, r.CompleteMessage(f.ctx, m, nil))
	})
}

// L6: after MaxDeliveryCount deliveries, a lock that ends unsettled (abandon
// or expiry) dead-letters the message with MaxDeliveryCountExceeded; in a
// dead-letter queue MaxDeliveryCount does not apply (D3).
func TestL6_MaxDeliveryCount(t *testing.T) {
	forEachKind(t, settings{maxDelivery: 3}, func(t *testing.T, f *fixture) {
		f.put("a")
		r := f.receiver(minibus.ReceiveModePeekLock)
		m := f.receive(r, 1)[0]
		require.NoError(t, r.AbandonMessage(f.ctx, m, nil))
		f.receive(r, 1)
		f.mock.Add(time.Minute) // lock expiry counts like an abandon
		r = f.afterLockEnd(t, r)
		for m.DeliveryCount < 3 {
			m = f.receive(r, 1)[0]
			require.NoError(t, r.AbandonMessage(f.ctx, m, nil))
		}
		if f.isDLQ {
			next := f.receive(r, 1)[0]
			require.Equal(t, m.DeliveryCount+1, next.DeliveryCount, "MaxDeliveryCount does not apply in a DLQ (D3)")
			return
		}
		f.requireNothing(r)
		require.Zero(t, f.active())
		d := f.receive(f.deadLetterReceiver(), 1)[0]
		require.Equal(t, "MaxDeliveryCountExceeded", d.DeadLetterReason)
		require.Equal(t, "Message could not be consumed after 3 delivery attempts.", d.DeadLetterErrorDescription)
		require.EqualValues(t, 4, d.DeliveryCount, "3 deliveries, then this one from the DLQ")
	})
}

// L6: Defer neither triggers MaxDeliveryCount nor increments DeliveryCount.
func TestL6_DeferIsNotAFailedDelivery(t *testing.T) {
	forEachKind(t, settings{maxDelivery: 1}, func(t *testing.T, f *fixture) {
		f.put("a")
		r := f.receiver(minibus.ReceiveModePeekLock)
		m := f.receive(r, 1)[0]
		require.NoError(t, r.DeferMessage(f.ctx, m, nil))
		p := f.peekAll(r)
		require.Len(t, p, 1)
		require.Equal(t, minibus.MessageStateDeferred, p[0].State)
		require.Equal(t, f.prior+1, p[0].DeliveryCount)
	})
}

// L7: receive-and-delete removes the message as it is returned; it has no
// lock, its DeliveryCount counts this delivery, and settling it is
// ErrInvalidArgument.
func TestL7_ReceiveAndDelete(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		f.put("a")
		rad := f.receiver(minibus.ReceiveModeReceiveAndDelete)
		m := f.receive(rad, 1)[0]
		require.Equal(t, f.prior+1, m.DeliveryCount)
		require.True(t, m.LockedUntil.IsZero())
		require.Equal(t, [16]byte{}, m.LockToken)
		require.Zero(t, f.active())
		requireSentinel(t, rad.CompleteMessage(f.ctx, m, nil), minibus.ErrInvalidArgument, "receive-and-delete")
		pl := f.second(t, rad, minibus.ReceiveModePeekLock)
		requireSentinel(t, pl.CompleteMessage(f.ctx, m, nil), minibus.ErrInvalidArgument, "receive-and-delete")
		f.mock.Add(time.Hour)
		pl = f.afterLockEnd(t, pl)
		f.requireNothing(pl)
	})
}

// L8: a blocked ReceiveMessages returns when a message arrives; if ctx ends
// first it returns nil and ctx.Err() and takes nothing.
func TestL8_BlockingReceive(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		r := f.receiver(minibus.ReceiveModePeekLock)
		got := make(chan []*minibus.ReceivedMessage)
		go func() {
			msgs, err := r.ReceiveMessages(context.Background(), 5, nil)
			if err != nil {
				t.Error(err)
			}
			got <- msgs
		}()
		f.put("a")
		msgs := <-got
		require.Equal(t, []string{"a"}, bodies(msgs))

		ctx, cancel := context.WithCancel(f.ctx)
		errc := make(chan error)
		go func() {
			msgs, err := r.ReceiveMessages(ctx, 5, nil)
			if msgs != nil {
				t.Errorf("cancelled receive returned %v", bodies(msgs))
			}
			errc <- err
		}()
		cancel()
		require.ErrorIs(t, <-errc, context.Canceled)
		f.put("b")
		require.Equal(t, []string{"b"}, bodies(f.receive(r, 1)), "the cancelled receive took nothing")
	})
}

// L11: closing a Receiver keeps its locks; its blocked calls, and later
// calls, return ErrClosed.
func TestL11_CloseReceiver(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		if f.session {
			closeSessionReceiver(t, f)
			return
		}
		f.put("a")
		r := f.receiver(minibus.ReceiveModePeekLock)
		m := f.receive(r, 1)[0]
		errc := make(chan error)
		go func() {
			_, err := r.ReceiveMessages(context.Background(), 1, nil)
			errc <- err
		}()
		require.NoError(t, r.Close(f.ctx))
		requireSentinel(t, <-errc, minibus.ErrClosed, "receiver")
		_, err := r.ReceiveMessages(f.ctx, 1, nil)
		requireSentinel(t, err, minibus.ErrClosed, "receiver")
		require.NoError(t, r.Close(f.ctx), "Close is idempotent")
		other := f.receiver(minibus.ReceiveModePeekLock)
		f.requireNothing(other)
		require.NoError(t, other.CompleteMessage(f.ctx, m, nil), "the lock was kept")
	})
}

// SS5 in place of L11 for a session: closing the session receiver releases
// the session and its locked messages without counting a delivery; its
// blocked calls, and later calls, return ErrClosed.
func closeSessionReceiver(t *testing.T, f *fixture) {
	f.put("a")
	r := f.receiver(minibus.ReceiveModePeekLock)
	m := f.receive(r, 1)[0]
	errc := make(chan error)
	go func() {
		_, err := r.ReceiveMessages(context.Background(), 1, nil)
		errc <- err
	}()
	require.NoError(t, r.Close(f.ctx))
	requireSentinel(t, <-errc, minibus.ErrClosed, "session receiver")
	_, err := r.ReceiveMessages(f.ctx, 1, nil)
	requireSentinel(t, err, minibus.ErrClosed, "session receiver")
	requireSentinel(t, r.CompleteMessage(f.ctx, m, nil), minibus.ErrClosed, "session receiver")
	require.NoError(t, r.Close(f.ctx), "Close is idempotent")
	other := f.receiver(minibus.ReceiveModePeekLock) // the session is free
	again := f.receive(other, 1)[0]
	require.Equal(t, m.SequenceNumber, again.SequenceNumber, "the lock was released")
	require.Equal(t, m.DeliveryCount, again.DeliveryCount, "without counting a delivery")
	requireSentinel(t, other.CompleteMessage(f.ctx, m, nil), minibus.ErrLockLost, "lock token")
	require.NoError(t, other.CompleteMessage(f.ctx, again, nil))
}

// L12: PeekMessages returns messages in sequence order from
// FromSequenceNumber, or after this receiver's last peek without it; it
// includes locked and deferred messages, locks and changes nothing, and
// peeked messages have no lock token.
func TestL12_Peek(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		f.put("a", "b", "c", "d")
		r := f.receiver(minibus.ReceiveModePeekLock)
		locked := f.receive(r, 2)
		require.NoError(t, r.DeferMessage(f.ctx, locked[1], nil))

		var p msgReceiver
		if f.session {
			p = r // one receiver per session (SS2); r has not peeked yet
		} else {
			p = f.receiver(minibus.ReceiveModePeekLock)
		}
		first, err := p.PeekMessages(f.ctx, 3, nil)
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "c"}, bodies(first))
		for _, m := range first {
			require.Equal(t, [16]byte{}, m.LockToken)
			require.True(t, m.LockedUntil.IsZero())
		}
		require.Equal(t, []minibus.MessageState{minibus.MessageStateActive, minibus.MessageStateDeferred, minibus.MessageStateActive},
			[]minibus.MessageState{first[0].State, first[1].State, first[2].State})
		next, err := p.PeekMessages(f.ctx, 3, nil)
		require.NoError(t, err)
		require.Equal(t, []string{"d"}, bodies(next), "continues after the last peeked")
		from, err := p.PeekMessages(f.ctx, 2, &minibus.PeekMessagesOptions{FromSequenceNumber: first[1].SequenceNumber})
		require.NoError(t, err)
		require.Equal(t, []string{"b", "c"}, bodies(from))
		empty, err := p.PeekMessages(f.ctx, 3, nil)
		require.NoError(t, err)
		require.NotNil(t, empty)
		require.Empty(t, empty, "FromSequenceNumber does not move the cursor")

		requireSentinel(t, p.CompleteMessage(f.ctx, first[2], nil), minibus.ErrInvalidArgument, "peeked")
		got := f.receiveAll(r, 10)
		require.Equal(t, []string{"c", "d"}, bodies(got), "peek locked nothing")
		require.Equal(t, f.prior+1, got[0].DeliveryCount, "peek is not a delivery")

		_, err = p.PeekMessages(f.ctx, 0, nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, "maxMessages")
		_, err = p.PeekMessages(f.ctx, 1, &minibus.PeekMessagesOptions{FromSequenceNumber: -1})
		requireSentinel(t, err, minibus.ErrInvalidArgument, "FromSequenceNumber")
	})
}

// Bad input to settlement: each is ErrInvalidArgument naming the culprit and
// changes nothing.
func TestSettleBadInput(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		f.put("a")
		r := f.receiver(minibus.ReceiveModePeekLock)
		requireSentinel(t, r.CompleteMessage(f.ctx, nil, nil), minibus.ErrInvalidArgument, "nil")
		m := f.receive(r, 1)[0]
		other := f.otherReceiver()
		requireSentinel(t, other.CompleteMessage(f.ctx, m, nil), minibus.ErrInvalidArgument, "was received from "+f.name)
		requireSentinel(t, r.CompleteMessage(f.ctx, &minibus.ReceivedMessage{}, nil), minibus.ErrInvalidArgument, "no lock token")
		requireSentinel(t, r.AbandonMessage(f.ctx, m, &minibus.AbandonMessageOptions{
			PropertiesToModify: map[string]any{"ch": make(chan int)},
		}), minibus.ErrInvalidArgument, `"ch" has unsupported type chan int`)
		require.NoError(t, r.CompleteMessage(f.ctx, m, nil), "nothing changed")
	})
}
