package server

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// newTestNamespace returns a namespace on a mock clock, closed at the end
// of the test.
func newTestNamespace(t *testing.T) (*minibus.Namespace, *clock.Mock) {
	t.Helper()
	clk := clock.NewMock()
	clk.Set(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	ns := minibus.NewNamespace(minibus.WithClock(clk))
	t.Cleanup(func() { _ = ns.Close() })
	return ns, clk
}

// mustAddress parses raw or fails the test.
func mustAddress(t *testing.T, raw string) address {
	t.Helper()
	a, err := parseAddress(raw)
	require.NoError(t, err)
	return a
}

// TestResolve looks up queues, topics and subscriptions case-insensitively
// (V1, W2); a missing one is ErrNotFound naming it.
func TestResolve(t *testing.T) {
	ns, _ := newTestNamespace(t)
	_, err := ns.CreateQueue("Orders", &minibus.QueueProperties{MaxMessageSizeInKilobytes: 100})
	require.NoError(t, err)
	_, err = ns.CreateQueue("sessions", &minibus.QueueProperties{RequiresSession: true})
	require.NoError(t, err)
	tp, err := ns.CreateTopic("events", &minibus.TopicProperties{MaxMessageSizeInKilobytes: 300})
	require.NoError(t, err)
	_, err = tp.CreateSubscription("audit", nil)
	require.NoError(t, err)
	_, err = tp.CreateSubscription("ssub", &minibus.SubscriptionProperties{RequiresSession: true})
	require.NoError(t, err)

	q, err := mustAddress(t, "orders/$DeadLetterQueue/$management").resolve(ns)
	require.NoError(t, err)
	require.Equal(t, `queue "Orders"`, q.String())
	require.True(t, q.canSend())
	require.True(t, q.canReceive())
	require.False(t, q.requiresSession())
	require.Equal(t, uint64(100*1024), q.maxMessageSize())

	top, err := mustAddress(t, "amqp://h/EVENTS").resolve(ns)
	require.NoError(t, err)
	require.Equal(t, `topic "events"`, top.String())
	require.True(t, top.canSend())
	require.False(t, top.canReceive())
	require.False(t, top.requiresSession())
	require.Equal(t, uint64(300*1024), top.maxMessageSize())

	sub, err := mustAddress(t, "events/subscriptions/AUDIT").resolve(ns)
	require.NoError(t, err)
	require.Equal(t, `subscription "events/Subscriptions/audit"`, sub.String())
	require.False(t, sub.canSend())
	require.True(t, sub.canReceive())
	require.Equal(t, uint64(300*1024), sub.maxMessageSize(), "a subscription's size is its topic's")

	s, err := mustAddress(t, "sessions").resolve(ns)
	require.NoError(t, err)
	require.True(t, s.requiresSession())
	ss, err := mustAddress(t, "events/Subscriptions/ssub").resolve(ns)
	require.NoError(t, err)
	require.True(t, ss.requiresSession())

	for raw, culprit := range map[string]string{
		"nope":                       `queue or topic "nope"`,
		"nope/Subscriptions/audit":   `topic "nope"`,
		"events/Subscriptions/nope":  `subscription "events/Subscriptions/nope"`,
		"orders/Subscriptions/audit": `topic "orders"`,
	} {
		_, err := mustAddress(t, raw).resolve(ns)
		require.ErrorIs(t, err, minibus.ErrNotFound, raw)
		require.Contains(t, err.Error(), culprit, raw)
	}
	_, err = mustAddress(t, "$cbs").resolve(ns)
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
	require.Equal(t, "no entity", entity{}.String())
	require.Equal(t, uint64(0), entity{}.maxMessageSize())

	require.NoError(t, ns.Close())
	_, err = mustAddress(t, "orders").resolve(ns)
	require.ErrorIs(t, err, minibus.ErrClosed, "a closed namespace is not a missing entity")
}

// TestEntityCalls sends, schedules, receives and accepts sessions through
// entity, and refuses what the entity kind cannot do.
func TestEntityCalls(t *testing.T) {
	ns, clk := newTestNamespace(t)
	ctx := context.Background()
	_, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	_, err = ns.CreateQueue("sq", &minibus.QueueProperties{RequiresSession: true})
	require.NoError(t, err)
	tp, err := ns.CreateTopic("t", nil)
	require.NoError(t, err)
	_, err = tp.CreateSubscription("s", nil)
	require.NoError(t, err)
	_, err = tp.CreateSubscription("ss", &minibus.SubscriptionProperties{RequiresSession: true})
	require.NoError(t, err)
	resolve := func(raw string) entity {
		e, err := mustAddress(t, raw).resolve(ns)
		require.NoError(t, err)
		return e
	}
	q, sq, top, sub, ssub := resolve("q"), resolve("sq"), resolve("t"), resolve("t/Subscriptions/s"), resolve("t/Subscriptions/ss")

	require.NoError(t, q.sendMessages(ctx, []*minibus.Message{{Body: []byte("1")}}))
	require.NoError(t, q.sendMessages(ctx, []*minibus.Message{{Body: []byte("2")}, {Body: []byte("3")}}))
	require.NoError(t, top.sendMessages(ctx, []*minibus.Message{{Body: []byte("a"), SessionID: "x"}}))
	require.NoError(t, top.sendMessages(ctx, []*minibus.Message{{Body: []byte("b"), SessionID: "x"}, {Body: []byte("c"), SessionID: "y"}}))
	require.ErrorIs(t, sub.sendMessages(ctx, []*minibus.Message{{}}), minibus.ErrInvalidArgument)

	r, err := q.newReceiver(minibus.ReceiveModeReceiveAndDelete, minibus.SubQueueNone)
	require.NoError(t, err)
	got, err := r.ReceiveMessages(ctx, 10, &minibus.ReceiveMessagesOptions{NoWait: true})
	require.NoError(t, err)
	require.Len(t, got, 3)
	r, err = sub.newReceiver(minibus.ReceiveModePeekLock, minibus.SubQueueDeadLetter)
	require.NoError(t, err)
	require.NoError(t, r.Close(ctx))
	_, err = top.newReceiver(minibus.ReceiveModePeekLock, minibus.SubQueueNone)
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)

	seqs, err := q.scheduleMessages(ctx, []*minibus.Message{{Body: []byte("later")}}, clk.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Len(t, seqs, 1)
	require.NoError(t, q.cancelScheduled(ctx, seqs))
	seqs, err = top.scheduleMessages(ctx, []*minibus.Message{{Body: []byte("later")}}, clk.Now().Add(time.Hour))
	require.NoError(t, err)
	require.NoError(t, top.cancelScheduled(ctx, seqs))
	_, err = sub.scheduleMessages(ctx, []*minibus.Message{{}}, clk.Now())
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
	require.ErrorIs(t, sub.cancelScheduled(ctx, []int64{1}), minibus.ErrInvalidArgument)

	require.NoError(t, sq.sendMessages(ctx, []*minibus.Message{{SessionID: "k"}}))
	ids, err := sq.listSessions(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"k"}, ids)
	ids, err = ssub.listSessions(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"x", "y"}, ids)
	_, err = top.listSessions(ctx)
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)

	sr, err := sq.acceptSession(ctx, "k", minibus.ReceiveModePeekLock)
	require.NoError(t, err)
	require.Equal(t, "k", sr.SessionID())
	require.NoError(t, sr.Close(ctx))
	sr, err = ssub.acceptNextSession(ctx, minibus.ReceiveModePeekLock)
	require.NoError(t, err)
	require.Equal(t, "x", sr.SessionID())
	require.NoError(t, sr.Close(ctx))
	sr, err = ssub.acceptSession(ctx, "y", minibus.ReceiveModeReceiveAndDelete)
	require.NoError(t, err)
	require.NoError(t, sr.Close(ctx))
	sr, err = sq.acceptNextSession(ctx, minibus.ReceiveModePeekLock)
	require.NoError(t, err)
	require.NoError(t, sr.Close(ctx))
	_, err = top.acceptSession(ctx, "k", minibus.ReceiveModePeekLock)
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
	_, err = top.acceptNextSession(ctx, minibus.ReceiveModePeekLock)
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
}
