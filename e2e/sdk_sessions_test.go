package e2e_test

// Sessions through azservicebus: AcceptSessionFor…, AcceptNextSessionFor…,
// session state, session locks, settlement in a session, and
// NewListSessionsFor…Pager (SEMANTICS W7, W8, SS1–SS9).

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
)

// sendSession sends one message per body to a session.
func (e *sdkEnv) sendSession(s *azservicebus.Sender, session string, bodies ...string) {
	e.t.Helper()
	for _, b := range bodies {
		require.NoError(e.t, s.SendMessage(e.ctx(sdkTimeout), &azservicebus.Message{Body: []byte(b), SessionID: sdkPtr(session)}, nil))
	}
}

// acceptSession accepts a named session of a queue, closed at cleanup.
func (e *sdkEnv) acceptSession(c *azservicebus.Client, queue, id string) *azservicebus.SessionReceiver {
	e.t.Helper()
	sr, err := c.AcceptSessionForQueue(e.ctx(sdkTimeout), queue, id, nil)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = sr.Close(context.Background()) })
	return sr
}

// deadlineOnly is a context whose Deadline is earlier than when it ends:
// the SDK derives com.microsoft:timeout from the deadline, so the server's
// timeout comes first and is what the test observes, not the context's.
type deadlineOnly struct {
	context.Context
	d time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.d, true }

// TestSDKSession_AcceptSessionForQueue_W7_SS2_SS4_SS8 accepts a named
// session (the session filter, described, echoed, W7): the receiver sees
// only its session's messages, in order, each locked until the session's
// LockedUntil (com.microsoft:locked-until-utc, .NET ticks); the session is
// held against a second accept (session-cannot-be-locked); a session
// without messages can be accepted (SS2).
func TestSDKSession_AcceptSessionForQueue_W7_SS2_SS4_SS8(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", &minibus.QueueProperties{RequiresSession: true, LockDuration: 30 * time.Second})
	s := e.sender("orders")
	e.sendSession(s, "a", "a1")
	e.sendSession(s, "b", "b1")
	e.sendSession(s, "a", "a2")

	sr := e.acceptSession(e.client, "orders", "a")
	require.Equal(t, "a", sr.SessionID())
	require.True(t, e.now().Add(30*time.Second).Equal(sr.LockedUntil()), "W7: locked-until-utc %v", sr.LockedUntil())
	got := e.receiveN(sr, 2)
	require.Equal(t, []string{"a1", "a2"}, bodies(got))
	for _, m := range got {
		require.Equal(t, "a", *m.SessionID)
		require.True(t, sr.LockedUntil().Equal(*m.LockedUntil), "SS8: a message's lock is the session's")
		require.Equal(t, uint32(1), m.DeliveryCount)
	}
	require.Equal(t, []int64{1, 3}, []int64{*got[0].SequenceNumber, *got[1].SequenceNumber})
	peeked, err := sr.PeekMessages(e.ctx(sdkTimeout), 10, &azservicebus.PeekMessagesOptions{FromSequenceNumber: sdkPtr(int64(1))})
	require.NoError(t, err)
	require.Equal(t, []string{"a1", "a2"}, bodies(peeked), "W8: peek-message with the session-id sees the session's messages only")

	other := e.newClient()
	_, err = other.AcceptSessionForQueue(e.ctx(sdkTimeout), "orders", "a", nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), "com.microsoft:session-cannot-be-locked", "SS2")

	empty := e.acceptSession(other, "orders", "nobody")
	require.Equal(t, "nobody", empty.SessionID())
	e.receiveNone(empty)

	ctx := e.ctx(sdkTimeout)
	for _, m := range got {
		require.NoError(t, sr.CompleteMessage(ctx, m, nil))
	}
	e.receiveNone(sr) // b1 is not this session's (SS4)
	c := e.queueCounts("orders")
	require.Equal(t, int64(1), c.ActiveMessageCount)
}

// TestSDKSession_AcceptNextSession_SS3_W7 accepts the next session: the
// one whose first available message is oldest, skipping held sessions and
// sessions with only state or only deferred messages; a blocked accept is
// woken by a send (T5); with none available the server detaches with
// com.microsoft:timeout after the link's com.microsoft:timeout, which the
// SDK reports as CodeTimeout.
func TestSDKSession_AcceptNextSession_SS3_W7(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", &minibus.QueueProperties{RequiresSession: true})
	s := e.sender("orders")
	ctx := e.ctx(sdkTimeout)
	e.sendSession(s, "deferred-only", "d")
	dr := e.acceptSession(e.client, "orders", "deferred-only")
	require.NoError(t, dr.SetSessionState(ctx, []byte("x"), nil))
	require.NoError(t, dr.DeferMessage(ctx, e.receiveN(dr, 1)[0], nil))
	require.NoError(t, dr.Close(ctx))
	e.sendSession(s, "y", "y1")
	e.sendSession(s, "x", "x1")

	first, err := e.client.AcceptNextSessionForQueue(ctx, "orders", nil)
	require.NoError(t, err)
	defer first.Close(ctx)
	require.Equal(t, "y", first.SessionID(), "SS3: the oldest available message first")
	second, err := e.client.AcceptNextSessionForQueue(ctx, "orders", nil)
	require.NoError(t, err)
	defer second.Close(ctx)
	require.Equal(t, "x", second.SessionID())
	require.Equal(t, []string{"x1"}, bodies(e.receiveN(second, 1)))

	// None left: com.microsoft:timeout from the server, at the link's
	// com.microsoft:timeout (real time, W9). The context only claims a
	// deadline: were the server not to answer, the call would last
	// sdkTimeout. The SDK reports the server's detach as CodeTimeout, or,
	// when the detach arrives within its jitter of the deadline, as the
	// deadline (go-amqp's reply detach is bounded by it).
	start := time.Now()
	tctx := deadlineOnly{Context: e.ctx(sdkTimeout), d: time.Now().Add(300 * time.Millisecond)}
	_, err = e.client.AcceptNextSessionForQueue(tctx, "orders", nil)
	took := time.Since(start)
	if sdkCode(err) != azservicebus.CodeTimeout {
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	require.GreaterOrEqual(t, took, 250*time.Millisecond)
	require.Less(t, took, sdkTimeout/2, "the server answered at the link's com.microsoft:timeout")

	// A blocked accept is woken by a send to a new session (T5).
	done := make(chan *azservicebus.SessionReceiver, 1)
	go func() {
		sr, err := e.client.AcceptNextSessionForQueue(ctx, "orders", nil)
		if err != nil {
			done <- nil
			return
		}
		done <- sr
	}()
	e.sendSession(s, "z", "z1")
	select {
	case sr := <-done:
		require.NotNil(t, sr)
		defer sr.Close(ctx)
		require.Equal(t, "z", sr.SessionID())
		require.Equal(t, []string{"z1"}, bodies(e.receiveN(sr, 1)))
	case <-ctx.Done():
		t.Fatal("AcceptNextSession was not woken")
	}
}

// TestSDKSession_State_SS6 gets and sets session state through
// $management (get-session-state, set-session-state, W8): never set reads
// nil, a set value reads back, nil clears it; state counts in SizeInBytes
// (SS9).
func TestSDKSession_State_SS6_SS9(t *testing.T) {
	e := newSDKEnv(t)
	q := e.queue("orders", &minibus.QueueProperties{RequiresSession: true})
	sr := e.acceptSession(e.client, "orders", "s")
	ctx := e.ctx(sdkTimeout)
	st, err := sr.GetSessionState(ctx, nil)
	require.NoError(t, err)
	require.Nil(t, st, "SS6: never set reads nil")
	before := q.RuntimeProperties().SizeInBytes
	require.NoError(t, sr.SetSessionState(ctx, []byte("step-3"), nil))
	st, err = sr.GetSessionState(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []byte("step-3"), st)
	require.Equal(t, before+6, q.RuntimeProperties().SizeInBytes, "SS9")
	require.NoError(t, sr.SetSessionState(ctx, nil, nil))
	st, err = sr.GetSessionState(ctx, nil)
	require.NoError(t, err)
	require.Nil(t, st, "SS6: nil clears")
	require.Equal(t, before, q.RuntimeProperties().SizeInBytes)

	// Kept for the life of the entity, messages or not: a new receiver of
	// the session reads it.
	require.NoError(t, sr.SetSessionState(ctx, []byte{0, 1, 2}, nil))
	require.NoError(t, sr.Close(ctx))
	sr2 := e.acceptSession(e.newClient(), "orders", "s")
	st, err = sr2.GetSessionState(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []byte{0, 1, 2}, st)
}

// TestSDKSession_Locks_SS5_SS8 renews a session lock through
// $management (renew-session-lock) on the mock clock, then lets it end
// while a receive is blocked on the session: the server detaches the link
// with com.microsoft:session-lock-lost at that instant (SS5), and the
// session's locked message is released with its delivery counted.
// Closing a session receiver releases its
// messages without counting a delivery.
func TestSDKSession_Locks_SS5_SS8(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", &minibus.QueueProperties{RequiresSession: true, LockDuration: 30 * time.Second})
	s := e.sender("orders")
	e.sendSession(s, "s", "m1", "m2")
	ctx := e.ctx(sdkTimeout)

	sr := e.acceptSession(e.client, "orders", "s")
	got := e.receiveN(sr, 2)
	e.advance(20 * time.Second)
	require.NoError(t, sr.RenewSessionLock(ctx, nil))
	require.True(t, e.now().Add(30*time.Second).Equal(sr.LockedUntil()), "SS8")
	e.advance(20 * time.Second) // past the first lock's end
	require.NoError(t, sr.CompleteMessage(ctx, got[0], nil), "the renewed session holds its messages")

	// A receive blocked on the session returns when the session lock ends
	// (the SDK takes the detach as a link to recover: no messages, no
	// error).
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		msgs, err := sr.ReceiveMessages(ctx, 1, nil)
		if err == nil && len(msgs) > 0 {
			err = fmt.Errorf("received %d messages", len(msgs))
		}
		done <- err
	}()
	e.advance(10 * time.Second) // the session lock ends
	select {
	case err := <-done:
		require.NoError(t, err)
		require.Less(t, time.Since(start), sdkTimeout/2)
	case <-ctx.Done():
		t.Fatal("a receive blocked on a session whose lock ended did not return (SS5)")
	}
	// Settling m2 now would be lock-lost (410), but the SDK retries a lost
	// lock on a session receiver (it recovers the link and accepts the
	// session again) with its fixed settlement retry policy, some 30 s:
	// the lock's end is checked where m2 comes back instead.
	require.NoError(t, sr.Close(ctx))

	sr2 := e.acceptSession(e.newClient(), "orders", "s")
	again := e.receiveN(sr2, 1)[0]
	require.Equal(t, "m2", string(again.Body))
	require.Equal(t, uint32(2), again.DeliveryCount, "SS5: a lock lost with the session counts a delivery")
	require.NoError(t, sr2.Close(ctx))

	// Closing released it without counting (SS5).
	sr3 := e.acceptSession(e.client, "orders", "s")
	again = e.receiveN(sr3, 1)[0]
	require.Equal(t, uint32(2), again.DeliveryCount, "the close did not count")
	require.NoError(t, sr3.CompleteMessage(ctx, again, nil))
	require.Zero(t, e.queueCounts("orders").ActiveMessageCount)
}

// TestSDKSession_Settlement_SS4_SS8_L9 settles in a session: abandon
// (redelivered in the same session), defer and ReceiveDeferredMessages
// (only the session's own deferred messages, SS8), dead-letter (the
// dead-letter queue of a session entity is read with a plain receiver,
// SS1), and receive-and-delete.
func TestSDKSession_Settlement_SS4_SS8_L9(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", &minibus.QueueProperties{RequiresSession: true})
	s := e.sender("orders")
	e.sendSession(s, "s", "abandon", "defer", "deadletter")
	e.sendSession(s, "t", "other")
	ctx := e.ctx(sdkTimeout)
	sr := e.acceptSession(e.client, "orders", "s")
	got := e.receiveN(sr, 3)
	require.NoError(t, sr.AbandonMessage(ctx, got[0], &azservicebus.AbandonMessageOptions{PropertiesToModify: map[string]any{"k": "v"}}))
	require.NoError(t, sr.DeferMessage(ctx, got[1], nil))
	require.NoError(t, sr.DeadLetterMessage(ctx, got[2], &azservicebus.DeadLetterOptions{Reason: sdkPtr("r")}))

	again := e.receiveN(sr, 1)[0]
	require.Equal(t, "abandon", string(again.Body))
	require.Equal(t, uint32(2), again.DeliveryCount)
	require.Equal(t, "v", again.ApplicationProperties["k"])
	require.NoError(t, sr.CompleteMessage(ctx, again, nil))

	tr := e.acceptSession(e.client, "orders", "t")
	other := e.receiveN(tr, 1)[0]
	require.NoError(t, tr.DeferMessage(ctx, other, nil))
	_, err := sr.ReceiveDeferredMessages(ctx, []int64{*other.SequenceNumber}, nil)
	require.Equal(t, azservicebus.CodeNotFound, sdkCode(err), "SS8: another session's deferred message: %v", err)
	d, err := sr.ReceiveDeferredMessages(ctx, []int64{*got[1].SequenceNumber}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"defer"}, bodies(d))
	require.Equal(t, azservicebus.MessageStateDeferred, d[0].State)
	require.NoError(t, sr.CompleteMessage(ctx, d[0], nil))

	dlq := e.receiver("orders", &azservicebus.ReceiverOptions{SubQueue: azservicebus.SubQueueDeadLetter})
	dl := e.receiveN(dlq, 1)[0]
	require.Equal(t, "deadletter", string(dl.Body))
	require.Equal(t, "s", *dl.SessionID)
	require.Equal(t, "r", *dl.DeadLetterReason)
	require.NoError(t, dlq.CompleteMessage(ctx, dl, nil))

	// Receive-and-delete in a session.
	e.sendSession(s, "u", "u1", "u2")
	ur, err := e.client.AcceptSessionForQueue(ctx, "orders", "u", &azservicebus.SessionReceiverOptions{ReceiveMode: azservicebus.ReceiveModeReceiveAndDelete})
	require.NoError(t, err)
	defer ur.Close(ctx)
	rd := sdkReceiveN(t, ur, 2, nil)
	require.Equal(t, []string{"u1", "u2"}, bodies(rd))
	require.Equal(t, int64(1), e.queueCounts("orders").ActiveMessageCount, "only t's deferred message is left")
}

// TestSDKSession_Subscription_W7 accepts sessions of a session-enabled
// subscription, named and next, and lists them.
func TestSDKSession_Subscription_W7(t *testing.T) {
	e := newSDKEnv(t)
	tp := e.topic("events")
	_, err := tp.CreateSubscription("bysession", &minibus.SubscriptionProperties{RequiresSession: true})
	require.NoError(t, err)
	s := e.sender("events")
	e.sendSession(s, "k1", "a")
	e.sendSession(s, "k2", "b")
	ctx := e.ctx(sdkTimeout)

	sr, err := e.client.AcceptSessionForSubscription(ctx, "events", "bysession", "k2", nil)
	require.NoError(t, err)
	defer sr.Close(ctx)
	m := e.receiveN(sr, 1)[0]
	require.Equal(t, "b", string(m.Body))
	require.NoError(t, sr.CompleteMessage(ctx, m, nil))

	next, err := e.client.AcceptNextSessionForSubscription(ctx, "events", "bysession", nil)
	require.NoError(t, err)
	defer next.Close(ctx)
	require.Equal(t, "k1", next.SessionID())
	require.NoError(t, next.SetSessionState(ctx, []byte("st"), nil))

	var ids []string
	pager := e.client.NewListSessionsForSubscriptionPager("events", "bysession", nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		require.NoError(t, err)
		ids = append(ids, page.Sessions...)
	}
	require.Equal(t, []string{"k1"}, ids, "k2 has no message and no state")

	// SS1: a message without SessionID matching a session-enabled
	// subscription goes to its dead-letter queue.
	e.send(s, "no session")
	dl := e.receiveN(e.subReceiver("events", "bysession", &azservicebus.ReceiverOptions{SubQueue: azservicebus.SubQueueDeadLetter}), 1)[0]
	require.Equal(t, "Session id is null.", *dl.DeadLetterReason)
}

// TestSDKSession_ListSessionsPager_W8 lists a queue's sessions with
// NewListSessionsForQueuePager (get-message-sessions with skip and top,
// W8): sessions with messages or state, 150 of them over two pages of
// 100; an entity without sessions listed ends at once (204).
func TestSDKSession_ListSessionsPager_W8(t *testing.T) {
	e := newSDKEnv(t)
	q := e.queue("orders", &minibus.QueueProperties{RequiresSession: true})
	e.queue("empty", &minibus.QueueProperties{RequiresSession: true})
	ctx := e.ctx(sdkTimeout)
	msgs := make([]*minibus.Message, 150)
	want := make([]string, 150)
	for i := range msgs {
		want[i] = fmt.Sprintf("s%03d", i)
		msgs[i] = &minibus.Message{Body: []byte("x"), SessionID: want[i]}
	}
	require.NoError(t, q.SendMessages(ctx, msgs, nil))

	var ids []string
	pages := 0
	pager := e.client.NewListSessionsForQueuePager("orders", nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		require.NoError(t, err)
		ids = append(ids, page.Sessions...)
		pages++
	}
	require.Equal(t, want, ids)
	require.Equal(t, 2, pages)

	pager = e.client.NewListSessionsForQueuePager("empty", nil)
	page, err := pager.NextPage(ctx)
	require.NoError(t, err)
	require.Empty(t, page.Sessions)
	require.False(t, pager.More())
}
