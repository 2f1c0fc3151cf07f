package azsb_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/go-amqp"
	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/azsb"
	"github.com/stretchr/testify/require"
)

// Session tests: azsb's SessionReceiver and the Accept and list-sessions
// methods of Client, against what the SDK and the service do.

func sendSession(t *testing.T, e *env, entity string, sessionID string, bodies ...string) {
	t.Helper()
	s := e.sender(entity)
	for _, b := range bodies {
		require.NoError(t, s.SendMessage(e.ctx, &azservicebus.Message{SessionID: &sessionID, Body: []byte(b)}, nil))
	}
}

func TestSessionAcceptAndReceive(t *testing.T) {
	e := newEnv(t)
	e.queue("sq", &minibus.QueueProperties{RequiresSession: true, LockDuration: 30 * time.Second})
	sendSession(t, e, "sq", "a", "a1", "a2")
	sendSession(t, e, "sq", "b", "b1")

	sr, err := e.c.AcceptSessionForQueue(e.ctx, "sq", "a", nil)
	require.NoError(t, err)
	defer sr.Close(e.ctx)
	require.Equal(t, "a", sr.SessionID())
	require.True(t, epoch.Add(30*time.Second).Equal(sr.LockedUntil()))

	msgs := e.receive(sr, 2)
	require.Equal(t, "a1", string(msgs[0].Body))
	require.Equal(t, "a2", string(msgs[1].Body))
	require.Equal(t, "a", *msgs[0].SessionID)
	require.True(t, sr.LockedUntil().Equal(*msgs[0].LockedUntil), "message locks follow the session lock")

	state, err := sr.GetSessionState(e.ctx, nil)
	require.NoError(t, err)
	require.Nil(t, state)
	require.NoError(t, sr.SetSessionState(e.ctx, []byte("step 1"), nil))
	state, err = sr.GetSessionState(e.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []byte("step 1"), state)

	e.mock.Add(20 * time.Second)
	require.NoError(t, sr.RenewSessionLock(e.ctx, nil))
	require.True(t, epoch.Add(50*time.Second).Equal(sr.LockedUntil()))

	require.NoError(t, sr.CompleteMessage(e.ctx, msgs[0], nil))
	require.NoError(t, sr.DeferMessage(e.ctx, msgs[1], nil))
	deferred, err := sr.ReceiveDeferredMessages(e.ctx, []int64{*msgs[1].SequenceNumber}, nil)
	require.NoError(t, err)
	require.NoError(t, sr.DeadLetterMessage(e.ctx, deferred[0], &azservicebus.DeadLetterOptions{Reason: ptr("done")}))

	peeked, err := sr.PeekMessages(e.ctx, 10, nil)
	require.NoError(t, err)
	require.Empty(t, peeked, "a session receiver sees only its session")

	// The dead-letter queue of a session queue is read with a plain receiver.
	dlq := e.receiver("sq", &azservicebus.ReceiverOptions{SubQueue: azservicebus.SubQueueDeadLetter})
	dead := e.receive(dlq, 1)
	require.Equal(t, "done", *dead[0].DeadLetterReason)

	require.NoError(t, sr.Close(e.ctx))
	_, err = sr.ReceiveMessages(e.ctx, 1, nil)
	requireCode(t, err, azservicebus.CodeClosed, minibus.ErrClosed)
}

func TestSessionAcceptNext(t *testing.T) {
	e := newEnv(t)
	e.queue("sq", &minibus.QueueProperties{RequiresSession: true})
	sendSession(t, e, "sq", "x", "x1")

	sr, err := e.c.AcceptNextSessionForQueue(e.ctx, "sq", nil)
	require.NoError(t, err)
	require.Equal(t, "x", sr.SessionID())
	require.NoError(t, sr.Close(e.ctx))

	// No session with a message before the ctx deadline: CodeTimeout.
	sr, err = e.c.AcceptNextSessionForQueue(e.ctx, "sq", nil)
	require.NoError(t, err)
	msgs := e.receive(sr, 1)
	require.NoError(t, sr.CompleteMessage(e.ctx, msgs[0], nil))
	require.NoError(t, sr.Close(e.ctx))
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Millisecond)
	defer cancel()
	_, err = e.c.AcceptNextSessionForQueue(ctx, "sq", nil)
	var sbErr *azservicebus.Error
	require.ErrorAs(t, err, &sbErr)
	require.Equal(t, azservicebus.CodeTimeout, sbErr.Code)
	// The SDK's *Error hides the service's answer; it is no ctx error.
	require.False(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	require.True(t, strings.HasPrefix(err.Error(), "(timeout): "), err.Error())

	// Without a deadline the service's wait applies, on the namespace
	// clock: TestSessionAcceptNextWaitsOnTheNamespaceClock.

	// A ctx already past its deadline: the SDK asks the service for no
	// wait, and the ctx ends the call with its own error.
	_, err = e.c.AcceptNextSessionForQueue(ctx, "sq", nil)
	require.Equal(t, context.DeadlineExceeded, err)

	// A cancelled ctx is context.Canceled.
	cctx, ccancel := context.WithCancel(e.ctx)
	ccancel()
	_, err = e.c.AcceptNextSessionForQueue(cctx, "sq", nil)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.As(err, &sbErr))
}

// Without a ctx deadline, AcceptNextSessionFor… waits the service's minute
// on the namespace clock (issue 42: it waited on the real clock, so a test
// on a mock clock was blocked a real minute): moving the mock a minute ends
// the wait with the SDK's timeout error, and not a moment before. In a
// synctest bubble, where a real-clock timer would make time jump: none
// does.
func TestSessionAcceptNextWaitsOnTheNamespaceClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.queue("sq", &minibus.QueueProperties{RequiresSession: true})
		top, err := e.ns.CreateTopic("t", nil)
		require.NoError(t, err)
		_, err = top.CreateSubscription("ss", &minibus.SubscriptionProperties{RequiresSession: true})
		require.NoError(t, err)
		for name, accept := range map[string]func() error{
			"queue": func() error {
				_, err := e.c.AcceptNextSessionForQueue(e.ctx, "sq", nil)
				return err
			},
			"subscription": func() error {
				_, err := e.c.AcceptNextSessionForSubscription(e.ctx, "t", "ss", nil)
				return err
			},
		} {
			start := time.Now()
			done := make(chan error, 1)
			go func() { done <- accept() }()
			synctest.Wait()
			e.mock.Add(time.Minute - time.Nanosecond)
			synctest.Wait()
			select {
			case err := <-done:
				t.Fatalf("%s: the wait ended before the namespace's minute: %v", name, err)
			default:
			}
			e.mock.Add(time.Nanosecond)
			synctest.Wait()
			select {
			case err := <-done:
				var sbErr *azservicebus.Error
				require.ErrorAs(t, err, &sbErr, name)
				require.Equal(t, azservicebus.CodeTimeout, sbErr.Code, name)
				require.False(t, errors.Is(err, context.Canceled), "%s: %v", name, err)
			default:
				t.Fatalf("%s: still waiting after the namespace's minute", name)
			}
			require.Less(t, time.Since(start), time.Second, "%s: no real waiting", name)
		}
	})
}

func TestSessionErrors(t *testing.T) {
	e := newEnv(t)
	e.queue("sq", &minibus.QueueProperties{RequiresSession: true, LockDuration: 10 * time.Second})

	// A message without a SessionID: the service's amqp:not-allowed.
	err := e.sender("sq").SendMessage(e.ctx, &azservicebus.Message{}, nil)
	requireCondition(t, err, amqp.ErrCondNotAllowed, minibus.ErrInvalidArgument)
	require.True(t, strings.Contains(err.Error(), "SessionId"), err.Error())

	// A plain receiver on a session queue.
	_, err = e.receiver("sq", nil).ReceiveMessages(e.ctx, 1, nil)
	requireCondition(t, err, amqp.ErrCondNotAllowed, minibus.ErrInvalidArgument)

	// A session held by another receiver.
	sr, err := e.c.AcceptSessionForQueue(e.ctx, "sq", "s", nil)
	require.NoError(t, err)
	defer sr.Close(e.ctx)
	_, err = e.c.AcceptSessionForQueue(e.ctx, "sq", "s", nil)
	requireCondition(t, err, "com.microsoft:session-cannot-be-locked", minibus.ErrSessionCannotBeLocked)

	// A session lock that expired.
	e.mock.Add(10 * time.Second)
	requireCode(t, sr.RenewSessionLock(e.ctx, nil), azservicebus.CodeLockLost, minibus.ErrSessionLockLost)
	_, err = sr.GetSessionState(e.ctx, nil)
	requireCode(t, err, azservicebus.CodeLockLost, minibus.ErrSessionLockLost)
}

func TestSessionSubscription(t *testing.T) {
	e := newEnv(t)
	top, err := e.ns.CreateTopic("t", nil)
	require.NoError(t, err)
	_, err = top.CreateSubscription("s", &minibus.SubscriptionProperties{RequiresSession: true})
	require.NoError(t, err)
	sendSession(t, e, "t", "k", "k1")
	sr, err := e.c.AcceptSessionForSubscription(e.ctx, "t", "s", "k", nil)
	require.NoError(t, err)
	require.Equal(t, "k1", string(e.receive(sr, 1)[0].Body))
	require.NoError(t, sr.Close(e.ctx))
	sendSession(t, e, "t", "k", "k2")
	sr, err = e.c.AcceptNextSessionForSubscription(e.ctx, "t", "s", &azservicebus.SessionReceiverOptions{ReceiveMode: azservicebus.ReceiveModeReceiveAndDelete})
	require.NoError(t, err)
	defer sr.Close(e.ctx)
	m := e.receive(sr, 1)[0]
	require.EqualError(t, sr.CompleteMessage(e.ctx, m, nil), "messages that are received in `ReceiveModeReceiveAndDelete` mode are not settleable")
}

// TestSDKExamplesSession runs the SDK's session examples that end.
// (ExampleClient_AcceptNextSessionForQueue and
// ExampleClient_AcceptNextSessionForSubscription loop for ever, by design.)
func TestSDKExamplesSession(t *testing.T) {
	ctx := context.Background()
	t.Run("ExampleClient_AcceptSessionForQueue", func(t *testing.T) {
		exampleNamespace(t)
		q, err := ns.CreateQueue("exampleSessionQueue", &minibus.QueueProperties{RequiresSession: true})
		require.NoError(t, err)
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{SessionID: "exampleSessionId", Body: []byte("s")}, nil))
		printed := runExample(t, ExampleClient_AcceptSessionForQueue)
		require.Equal(t, `Received message from session ID "exampleSessionId" and completed it`, printed)
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
	t.Run("ExampleClient_AcceptSessionForSubscription", func(t *testing.T) {
		exampleNamespace(t)
		top, err := ns.CreateTopic("exampleTopic", nil)
		require.NoError(t, err)
		_, err = top.CreateSubscription("exampleSubscription", &minibus.SubscriptionProperties{RequiresSession: true})
		require.NoError(t, err)
		runExample(t, ExampleClient_AcceptSessionForSubscription)
	})
	// sessions gives the example entity q sessions "b" and "a" with a
	// message each and "c" with state only.
	sessions := func(t *testing.T, q interface {
		AcceptSession(context.Context, string, *minibus.SessionReceiverOptions) (*minibus.SessionReceiver, error)
	}, send func(*minibus.Message) error) {
		t.Helper()
		for _, id := range []string{"b", "a"} {
			require.NoError(t, send(&minibus.Message{SessionID: id}))
		}
		sr, err := q.AcceptSession(ctx, "c", nil)
		require.NoError(t, err)
		require.NoError(t, sr.SetSessionState(ctx, []byte("state"), nil))
		require.NoError(t, sr.Close(ctx))
	}
	t.Run("ExampleClient_NewListSessionsForQueuePager", func(t *testing.T) {
		exampleNamespace(t)
		q, err := ns.CreateQueue("exampleSessionQueue", &minibus.QueueProperties{RequiresSession: true})
		require.NoError(t, err)
		sessions(t, q, func(m *minibus.Message) error { return q.SendMessage(ctx, m, nil) })
		printed := runExample(t, ExampleClient_NewListSessionsForQueuePager)
		require.Equal(t, "Session ID: a\nSession ID: b\nSession ID: c\n", printed)
	})
	t.Run("ExampleClient_NewListSessionsForSubscriptionPager", func(t *testing.T) {
		exampleNamespace(t)
		top, err := ns.CreateTopic("exampleTopic", nil)
		require.NoError(t, err)
		sub, err := top.CreateSubscription("exampleSubscription", &minibus.SubscriptionProperties{RequiresSession: true})
		require.NoError(t, err)
		sessions(t, sub, func(m *minibus.Message) error { return top.SendMessage(ctx, m, nil) })
		printed := runExample(t, ExampleClient_NewListSessionsForSubscriptionPager)
		require.Equal(t, "Session ID: a\nSession ID: b\nSession ID: c\n", printed)
	})
	t.Run("ExampleClient_NewListSessionsForQueuePager_filteringBySessionStateUpdateTime", func(t *testing.T) {
		exampleNamespace(t)
		q, err := ns.CreateQueue("exampleSessionQueue", &minibus.QueueProperties{RequiresSession: true})
		require.NoError(t, err)
		sessions(t, q, func(m *minibus.Message) error { return q.SendMessage(ctx, m, nil) })
		printed := runExample(t, ExampleClient_NewListSessionsForQueuePager_filteringBySessionStateUpdateTime)
		// The filter is ignored (minibus keeps no update time): every
		// session is listed, not only "c", whose state is recent.
		require.Equal(t, "Recently updated session ID: a\nRecently updated session ID: b\nRecently updated session ID: c\n", printed)
	})
	t.Run("ExampleClient_AcceptNextSessionForQueue_roundrobin", func(t *testing.T) {
		// The example ends when the service's wait for a session is over:
		// a wait on the namespace clock, here the real one, shortened.
		exampleNamespaceOn(t, clock.New())
		azsb.SetAcceptTimeout(client, 50*time.Millisecond)
		q, err := ns.CreateQueue("exampleSessionQueue", &minibus.QueueProperties{RequiresSession: true})
		require.NoError(t, err)
		for _, id := range []string{"a", "b"} {
			require.NoError(t, q.SendMessage(ctx, &minibus.Message{SessionID: id}, nil))
		}
		printed := runExample(t, ExampleClient_AcceptNextSessionForQueue_roundrobin)
		require.Contains(t, printed, "No sessions available")
		// The example's goroutines complete the messages after it returns.
		deadline := time.Now().Add(10 * time.Second)
		for q.RuntimeProperties().TotalMessageCount > 0 {
			require.True(t, time.Now().Before(deadline), "the sessions were never consumed")
		}
	})
}

// TestSessionLockedUntil: as the SDK's, LockedUntil is the receiver's
// record, set at accept and moved only by its own successful
// RenewSessionLock.
func TestSessionLockedUntil(t *testing.T) {
	e := newEnv(t)
	e.queue("sq", &minibus.QueueProperties{RequiresSession: true, LockDuration: 10 * time.Second})
	sendSession(t, e, "sq", "s", "s1")
	sr, err := e.c.AcceptSessionForQueue(e.ctx, "sq", "s", nil)
	require.NoError(t, err)
	defer sr.Close(e.ctx)
	require.True(t, epoch.Add(10*time.Second).Equal(sr.LockedUntil()))
	m := e.receive(sr, 1)[0]
	require.True(t, epoch.Add(10*time.Second).Equal(*m.LockedUntil))

	e.mock.Add(4 * time.Second)
	require.NoError(t, sr.RenewSessionLock(e.ctx, nil))
	require.True(t, epoch.Add(14*time.Second).Equal(sr.LockedUntil()))

	// The lock ends: every call is CodeLockLost, LockedUntil stays.
	e.mock.Add(10 * time.Second)
	requireCode(t, sr.RenewSessionLock(e.ctx, nil), azservicebus.CodeLockLost, minibus.ErrSessionLockLost)
	_, err = sr.ReceiveMessages(e.ctx, 1, nil)
	requireCode(t, err, azservicebus.CodeLockLost, minibus.ErrSessionLockLost)
	requireCode(t, sr.CompleteMessage(e.ctx, m, nil), azservicebus.CodeLockLost, minibus.ErrSessionLockLost)
	requireCode(t, sr.SetSessionState(e.ctx, []byte("x"), nil), azservicebus.CodeLockLost, minibus.ErrSessionLockLost)
	require.True(t, epoch.Add(14*time.Second).Equal(sr.LockedUntil()))

	// Another receiver takes the session: its lock is its own.
	e.mock.Add(time.Second)
	other, err := azsb_newClient(e).AcceptSessionForQueue(e.ctx, "sq", "s", nil)
	require.NoError(t, err)
	require.True(t, epoch.Add(25*time.Second).Equal(other.LockedUntil()))
	require.True(t, epoch.Add(14*time.Second).Equal(sr.LockedUntil()))
	again := e.receive(other, 1)[0]
	require.Equal(t, int64(2), int64(again.DeliveryCount), "the lost lock counted a delivery")
}

// TestSessionStateCopies: Get and Set copy the bytes; nil clears; the
// state outlives the receiver.
func TestSessionStateCopies(t *testing.T) {
	e := newEnv(t)
	e.queue("sq", &minibus.QueueProperties{RequiresSession: true})
	sr, err := e.c.AcceptSessionForQueue(e.ctx, "sq", "s", nil)
	require.NoError(t, err)
	state := []byte("abc")
	require.NoError(t, sr.SetSessionState(e.ctx, state, nil))
	state[0] = 'X'
	got, err := sr.GetSessionState(e.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []byte("abc"), got)
	got[1] = 'X'
	got, err = sr.GetSessionState(e.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []byte("abc"), got)
	require.NoError(t, sr.Close(e.ctx))
	_, err = sr.GetSessionState(e.ctx, nil)
	requireCode(t, err, azservicebus.CodeClosed, minibus.ErrClosed)

	sr, err = e.c.AcceptSessionForQueue(e.ctx, "sq", "s", nil)
	require.NoError(t, err)
	defer sr.Close(e.ctx)
	got, err = sr.GetSessionState(e.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []byte("abc"), got, "kept after the receiver closed")
	require.NoError(t, sr.SetSessionState(e.ctx, nil, nil))
	got, err = sr.GetSessionState(e.ctx, nil)
	require.NoError(t, err)
	require.Nil(t, got)
}

// TestSessionSettleOtherSession: the SDK settles a received message on the
// link that received it, whichever receiver is asked; so does azsb while
// that receiver is open, whatever its client.
func TestSessionSettleOtherSession(t *testing.T) {
	e := newEnv(t)
	q := e.queue("sq", &minibus.QueueProperties{RequiresSession: true})
	sendSession(t, e, "sq", "a", "a1")
	sendSession(t, e, "sq", "b", "b1", "b2")
	a, err := e.c.AcceptSessionForQueue(e.ctx, "sq", "a", nil)
	require.NoError(t, err)
	defer a.Close(e.ctx)
	b, err := azsb_newClient(e).AcceptSessionForQueue(e.ctx, "sq", "b", nil)
	require.NoError(t, err)
	bm := e.receive(b, 2)

	require.NoError(t, a.CompleteMessage(e.ctx, bm[0], nil), "settled through b's receiver")
	requireCode(t, b.CompleteMessage(e.ctx, bm[0], nil), azservicebus.CodeLockLost, minibus.ErrLockLost)
	require.Equal(t, int64(2), q.RuntimeProperties().TotalMessageCount)

	// A message rebuilt from its lock token alone goes through a's own
	// (management) link in the SDK: another session's lock there is lost.
	rebuilt := &azservicebus.ReceivedMessage{LockToken: bm[1].LockToken, SessionID: bm[1].SessionID}
	requireCode(t, a.CompleteMessage(e.ctx, rebuilt, nil), azservicebus.CodeLockLost, minibus.ErrLockLost)

	// Once b has closed, its messages are released: lock lost.
	require.NoError(t, b.Close(e.ctx))
	requireCode(t, a.AbandonMessage(e.ctx, bm[1], nil), azservicebus.CodeLockLost, minibus.ErrLockLost)
	require.Equal(t, int64(2), q.RuntimeProperties().ActiveMessageCount)
}

// TestSessionEmptyID: the SDK takes "" as a session id; minibus refuses
// it (SEMANTICS SS2: no message can carry an empty SessionID, so the
// session could never have one), with an error that wraps
// minibus.ErrInvalidArgument, and holds nothing.
func TestSessionEmptyID(t *testing.T) {
	e := newEnv(t)
	e.queue("sq", &minibus.QueueProperties{RequiresSession: true})
	_, err := e.c.AcceptSessionForQueue(e.ctx, "sq", "", nil)
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
	require.Contains(t, err.Error(), "session id is empty")
	require.Equal(t, []string{}, listAll(t, e.c.NewListSessionsForQueuePager("sq", nil)))

	err = e.sender("sq").SendMessage(e.ctx, &azservicebus.Message{SessionID: ptr("")}, nil)
	requireCondition(t, err, amqp.ErrCondNotAllowed, minibus.ErrInvalidArgument)
}

// listAll drains a list-sessions pager, failing t on an error.
func listAll(t *testing.T, p *runtime.Pager[azservicebus.ListSessionsResponse]) []string {
	t.Helper()
	ids := []string{}
	for p.More() {
		page, err := p.NextPage(context.Background())
		require.NoError(t, err)
		ids = append(ids, page.Sessions...)
	}
	return ids
}

// pageSizes drains a pager and returns the length of each page.
func pageSizes(t *testing.T, p *runtime.Pager[azservicebus.ListSessionsResponse]) []int {
	t.Helper()
	var sizes []int
	for p.More() {
		page, err := p.NextPage(context.Background())
		require.NoError(t, err)
		sizes = append(sizes, len(page.Sessions))
	}
	return sizes
}

func sendSessions(t *testing.T, e *env, q *minibus.Queue, n int) []string {
	t.Helper()
	ids := make([]string, n)
	msgs := make([]*minibus.Message, n)
	for i := range n {
		ids[i] = fmt.Sprintf("session-%03d", i)
		msgs[i] = &minibus.Message{SessionID: ids[i]}
	}
	require.NoError(t, q.SendMessages(e.ctx, msgs, nil))
	return ids
}

func TestListSessionsPager(t *testing.T) {
	e := newEnv(t)

	// 250 sessions: pages of 100, 100 and 50, sorted.
	q := e.queue("sq", &minibus.QueueProperties{RequiresSession: true})
	want := sendSessions(t, e, q, 250)
	require.Equal(t, []int{100, 100, 50}, pageSizes(t, e.c.NewListSessionsForQueuePager("sq", nil)))
	p := e.c.NewListSessionsForQueuePager("sq", nil)
	require.Equal(t, want, listAll(t, p))
	require.False(t, p.More())
	_, err := p.NextPage(e.ctx)
	require.EqualError(t, err, "no more pages")

	// A multiple of 100: the SDK's last request gets an empty page.
	q2 := e.queue("sq2", &minibus.QueueProperties{RequiresSession: true})
	sendSessions(t, e, q2, 200)
	require.Equal(t, []int{100, 100, 0}, pageSizes(t, e.c.NewListSessionsForQueuePager("sq2", nil)))

	// No sessions: one empty page.
	e.queue("sq3", &minibus.QueueProperties{RequiresSession: true})
	require.Equal(t, []int{0}, pageSizes(t, e.c.NewListSessionsForQueuePager("sq3", nil)))

	// Listed: sessions with messages (also locked or deferred ones) or
	// state. Not listed: a session whose messages are gone and that has no
	// state, one with only scheduled messages.
	sendSession(t, e, "sq3", "done", "d1")
	sendSession(t, e, "sq3", "locked", "l1")
	sendSession(t, e, "sq3", "deferred", "f1")
	_, err = e.sender("sq3").ScheduleMessages(e.ctx, []*azservicebus.Message{{SessionID: ptr("scheduled")}}, epoch.Add(time.Hour), nil)
	require.NoError(t, err)
	for id, settle := range map[string]func(*azsb.SessionReceiver, *azservicebus.ReceivedMessage) error{
		"done": func(sr *azsb.SessionReceiver, m *azservicebus.ReceivedMessage) error {
			return sr.CompleteMessage(e.ctx, m, nil)
		},
		"deferred": func(sr *azsb.SessionReceiver, m *azservicebus.ReceivedMessage) error {
			return sr.DeferMessage(e.ctx, m, nil)
		},
	} {
		sr, err := e.c.AcceptSessionForQueue(e.ctx, "sq3", id, nil)
		require.NoError(t, err)
		require.NoError(t, settle(sr, e.receive(sr, 1)[0]))
		require.NoError(t, sr.Close(e.ctx))
	}
	held, err := e.c.AcceptSessionForQueue(e.ctx, "sq3", "locked", nil)
	require.NoError(t, err)
	defer held.Close(e.ctx)
	e.receive(held, 1)
	st, err := e.c.AcceptSessionForQueue(e.ctx, "sq3", "state-only", nil)
	require.NoError(t, err)
	require.NoError(t, st.SetSessionState(e.ctx, []byte("s"), nil))
	require.NoError(t, st.Close(e.ctx))
	require.Equal(t, []string{"deferred", "locked", "state-only"}, listAll(t, e.c.NewListSessionsForQueuePager("sq3", nil)))

	// SessionStateUpdatedAfter is ignored: minibus keeps no update time.
	future := epoch.Add(24 * time.Hour)
	require.Equal(t, []string{"deferred", "locked", "state-only"},
		listAll(t, e.c.NewListSessionsForQueuePager("sq3", &azservicebus.ListSessionsOptions{SessionStateUpdatedAfter: &future})))

	// Each page is a request of its own that skips what earlier pages had.
	p = e.c.NewListSessionsForQueuePager("sq", nil)
	first, err := p.NextPage(e.ctx)
	require.NoError(t, err)
	require.Equal(t, want[:100], first.Sessions)
	sendSessionsWithPrefix(t, e, q, "a-", 10) // sorts before every session-NNN
	second, err := p.NextPage(e.ctx)
	require.NoError(t, err)
	require.Equal(t, want[90:190], second.Sessions)

	// A subscription, and a missing name checked per page as in the SDK.
	top, err := e.ns.CreateTopic("t", nil)
	require.NoError(t, err)
	_, err = top.CreateSubscription("s", &minibus.SubscriptionProperties{RequiresSession: true})
	require.NoError(t, err)
	sendSession(t, e, "t", "y", "y1")
	sendSession(t, e, "t", "x", "x1")
	require.Equal(t, []string{"x", "y"}, listAll(t, e.c.NewListSessionsForSubscriptionPager("t", "s", nil)))
}

func sendSessionsWithPrefix(t *testing.T, e *env, q *minibus.Queue, prefix string, n int) {
	t.Helper()
	for i := range n {
		require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{SessionID: fmt.Sprintf("%s%d", prefix, i)}, nil))
	}
}

func TestListSessionsErrors(t *testing.T) {
	e := newEnv(t)
	e.queue("plain", nil)
	top, err := e.ns.CreateTopic("t", nil)
	require.NoError(t, err)
	_, err = top.CreateSubscription("plain", nil)
	require.NoError(t, err)

	firstPage := func(p *runtime.Pager[azservicebus.ListSessionsResponse]) error {
		t.Helper()
		require.True(t, p.More())
		page, err := p.NextPage(e.ctx)
		require.Nil(t, page.Sessions)
		require.False(t, p.More(), "the pager stops at an error")
		return err
	}

	// An entity without sessions: the service refuses the request (a 400
	// management answer), which the SDK v1.11 retries as a connection
	// fault and reports as CodeConnectionLost.
	for _, p := range []*runtime.Pager[azservicebus.ListSessionsResponse]{
		e.c.NewListSessionsForQueuePager("plain", nil),
		e.c.NewListSessionsForSubscriptionPager("t", "plain", nil),
	} {
		err := firstPage(p)
		requireCode(t, err, azservicebus.CodeConnectionLost, minibus.ErrInvalidArgument)
		require.ErrorContains(t, err, "rpc: failed, status code 400 and description: A sessionful message receiver cannot be created on an entity that does not require sessions.")
	}

	// A missing entity: the service's 404, CodeNotFound.
	for _, p := range []*runtime.Pager[azservicebus.ListSessionsResponse]{
		e.c.NewListSessionsForQueuePager("missing", nil),
		e.c.NewListSessionsForSubscriptionPager("missing", "s", nil),
		e.c.NewListSessionsForSubscriptionPager("t", "missing", nil),
	} {
		err := firstPage(p)
		requireCode(t, err, azservicebus.CodeNotFound, minibus.ErrNotFound)
		require.ErrorContains(t, err, "rpc: failed, status code 404")
	}

	// No name: the SDK's own error, before any request.
	for _, p := range []*runtime.Pager[azservicebus.ListSessionsResponse]{
		e.c.NewListSessionsForQueuePager("", nil),
		e.c.NewListSessionsForSubscriptionPager("", "s", nil),
		e.c.NewListSessionsForSubscriptionPager("t", "", nil),
	} {
		require.EqualError(t, firstPage(p), "a queue or subscription was not specified")
	}

	// A cancelled ctx: its error, unchanged.
	e.queue("sq", &minibus.QueueProperties{RequiresSession: true})
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err = e.c.NewListSessionsForQueuePager("sq", nil).NextPage(ctx)
	require.Equal(t, context.Canceled, err)

	// A closed client.
	c := azsb_newClient(e)
	require.NoError(t, c.Close(e.ctx))
	require.EqualError(t, firstPage(c.NewListSessionsForQueuePager("sq", nil)), "client has been closed by user")
}
