package minibus_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A1: AutoDeleteOnIdle is zero (never) or at least 5 minutes; zero keeps a
// queue forever.
func TestA1_NeverIdle(t *testing.T) {
	e := newEnv(t)
	e.queue("q", nil)
	e.mock.Add(100 * 24 * time.Hour)
	require.Equal(t, []string{"q"}, e.ns.Queues())
	_, err := e.ns.CreateQueue("short", &minibus.QueueProperties{AutoDeleteOnIdle: time.Minute})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "AutoDeleteOnIdle 1m0s is less than 5m0s")
}

// A2: each activity of the list restarts the idle time; reading properties
// and renewing a lock do not.
func TestA2_QueueActivities(t *testing.T) {
	type activity struct {
		name string
		do   func(e *env, q *minibus.Queue, r *minibus.Receiver, locked *minibus.ReceivedMessage)
	}
	activities := []activity{
		{"send", func(e *env, q *minibus.Queue, _ *minibus.Receiver, _ *minibus.ReceivedMessage) { e.send(q, "x") }},
		{"schedule", func(e *env, q *minibus.Queue, _ *minibus.Receiver, _ *minibus.ReceivedMessage) {
			s, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{}}, at(time.Hour), nil)
			require.NoError(e.t, err)
			require.NoError(e.t, q.CancelScheduledMessages(e.ctx, s, nil)) // cancel is activity too
		}},
		{"receive", func(e *env, _ *minibus.Queue, r *minibus.Receiver, _ *minibus.ReceivedMessage) { e.receive(r, 1) }},
		{"peek", func(e *env, _ *minibus.Queue, r *minibus.Receiver, _ *minibus.ReceivedMessage) {
			_, err := r.PeekMessages(e.ctx, 1, nil)
			require.NoError(e.t, err)
		}},
		{"complete", func(e *env, _ *minibus.Queue, r *minibus.Receiver, m *minibus.ReceivedMessage) {
			require.NoError(e.t, r.CompleteMessage(e.ctx, m, nil))
		}},
		{"update", func(e *env, _ *minibus.Queue, _ *minibus.Receiver, _ *minibus.ReceivedMessage) {
			_, err := e.ns.UpdateQueue("q", minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute, LockDuration: 5 * time.Minute})
			require.NoError(e.t, err)
		}},
	}
	nonActivities := []activity{
		{"runtime properties", func(_ *env, q *minibus.Queue, _ *minibus.Receiver, _ *minibus.ReceivedMessage) { q.RuntimeProperties() }},
		{"renew", func(e *env, _ *minibus.Queue, r *minibus.Receiver, m *minibus.ReceivedMessage) {
			require.NoError(e.t, r.RenewMessageLock(e.ctx, m, nil))
		}},
		{"lookup", func(e *env, _ *minibus.Queue, _ *minibus.Receiver, _ *minibus.ReceivedMessage) {
			_, err := e.ns.Queue("q")
			require.NoError(e.t, err)
		}},
	}
	setup := func(t *testing.T) (*env, *minibus.Queue, *minibus.Receiver, *minibus.ReceivedMessage) {
		e := newEnv(t)
		q := e.queue("q", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute, LockDuration: 5 * time.Minute})
		e.send(q, "locked", "free")
		r := e.receiver(q, nil)
		locked := e.receive(r, 1)[0]
		e.mock.Add(4 * time.Minute)
		return e, q, r, locked
	}
	for _, a := range activities {
		t.Run(a.name, func(t *testing.T) {
			e, q, r, locked := setup(t)
			a.do(e, q, r, locked)
			e.mock.Add(5*time.Minute - 1)
			require.Equal(t, []string{"q"}, e.ns.Queues())
			e.mock.Add(1)
			require.Empty(t, e.ns.Queues())
		})
	}
	for _, a := range nonActivities {
		t.Run("not "+a.name, func(t *testing.T) {
			e, q, r, locked := setup(t)
			a.do(e, q, r, locked)
			e.mock.Add(time.Minute)
			require.Empty(t, e.ns.Queues())
		})
	}
}

// A2: a queue with pending scheduled messages is never idle; its idle time
// counts from the last activation.
func TestA2_ScheduledMessagesKeepQueueAlive(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute})
	_, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{}}, at(time.Hour), nil)
	require.NoError(t, err)
	e.mock.Add(time.Hour + 5*time.Minute - 1)
	require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount)
	e.mock.Add(1)
	require.Empty(t, e.ns.Queues())
}

// A2, A3, A5: activity on a subscription is its topic's activity too; an
// idle subscription is deleted alone; an idle or deleted topic takes its
// subscriptions with it.
func TestA2_A5_TopicAndSubscriptionIdle(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", &minibus.TopicProperties{AutoDeleteOnIdle: 10 * time.Minute})
	busy := e.subscription(top, "busy", nil)
	idle := e.subscription(top, "idle", &minibus.SubscriptionProperties{AutoDeleteOnIdle: 5 * time.Minute})
	rb := e.receiver(busy, nil)
	e.mock.Add(4 * time.Minute)
	e.send(top, "x") // topic activity, not the subscriptions'
	e.mock.Add(time.Minute)
	require.Equal(t, []string{"busy"}, top.Subscriptions(), "the idle subscription went at +5m")
	_, err := idle.NewReceiver(nil)
	requireSentinel(t, err, minibus.ErrNotFound, `subscription "t/Subscriptions/idle"`)
	_, err = rb.PeekMessages(e.ctx, 1, nil)
	require.NoError(t, err)
	for range 3 {
		e.mock.Add(9 * time.Minute)
		_, err := rb.PeekMessages(e.ctx, 1, nil) // subscription activity keeps the topic alive
		require.NoError(t, err)
	}
	require.Equal(t, []string{"t"}, e.ns.Topics())
	e.mock.Add(10 * time.Minute)
	require.Empty(t, e.ns.Topics())
	_, err = rb.PeekMessages(e.ctx, 1, nil)
	requireSentinel(t, err, minibus.ErrNotFound, `subscription "t/Subscriptions/busy"`)

	again := e.topic("t", nil)
	s := e.subscription(again, "s", nil)
	require.NoError(t, e.ns.DeleteTopic("T"))
	requireSentinel(t, s.CreateRule("r", nil), minibus.ErrNotFound, `subscription "t/Subscriptions/s"`)
	requireSentinel(t, again.SendMessage(e.ctx, &minibus.Message{}, nil), minibus.ErrNotFound, `topic "t"`)
	_, err = again.CreateSubscription("new", nil)
	requireSentinel(t, err, minibus.ErrNotFound, `topic "t"`)
	require.Nil(t, again.Subscriptions())
}

// A3, T2: a queue idle for AutoDeleteOnIdle is deleted at exactly that
// instant with its messages: its name is free, old handles and receivers
// return ErrNotFound.
func TestA3_IdleQueueIsDeleted(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute})
	e.send(q, "a")
	r := e.receiver(q, nil)
	e.mock.Add(5*time.Minute - 1)
	require.Equal(t, []string{"q"}, e.ns.Queues())
	e.mock.Add(1)
	require.Empty(t, e.ns.Queues())
	_, err := e.ns.Queue("q")
	requireSentinel(t, err, minibus.ErrNotFound, `queue "q"`)
	requireSentinel(t, q.SendMessage(e.ctx, &minibus.Message{}, nil), minibus.ErrNotFound, `queue "q"`)
	_, err = r.PeekMessages(e.ctx, 1, nil)
	requireSentinel(t, err, minibus.ErrNotFound, `queue "q"`)
	fresh := e.queue("q", nil)
	require.Zero(t, fresh.RuntimeProperties().TotalMessageCount)
}

// A2, V2: peeks on a subscription, beside updates that switch its topic's
// AutoDeleteOnIdle on and off, read the topic's setting without the
// topic's lock (a data race under -race before it was kept apart); the last
// update's setting holds.
func TestA2_TopicUpdatesBesideSubscriptionPeeks(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	r := e.receiver(e.subscription(top, "s", nil), nil)
	together(100, func(i int) {
		_, err := e.ns.UpdateTopic("t", minibus.TopicProperties{AutoDeleteOnIdle: time.Duration(i%2) * time.Hour})
		assert.NoError(t, err)
	}, func(int) {
		_, err := r.PeekMessages(e.ctx, 1, nil)
		assert.NoError(t, err)
	})
	e.mock.Add(time.Hour - time.Nanosecond)
	require.Equal(t, []string{"t"}, e.ns.Topics())
	e.mock.Add(time.Nanosecond)
	require.Empty(t, e.ns.Topics(), "the last update (1h) holds")
}

// A3, T3: at the instant an entity becomes idle its own deadlines come
// before its deletion, whichever entity the broker's catch-up visits first
// at that instant. Here d's lock ends at MaxDeliveryCount at the instant d
// has been idle for AutoDeleteOnIdle, which dead-letters its message to q2
// (D4), while src forwards a message to d at that same instant (F2). When
// src was visited first (created first), the forward's arrival deleted d
// at once, and the locked message went with d instead of reaching q2.
func TestA3_T3_OwnDeadlinesBeforeIdleDeletionOnAForward(t *testing.T) {
	for _, srcFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("source created first=%v", srcFirst), func(t *testing.T) {
			e := newEnv(t)
			var src *minibus.Queue
			if srcFirst {
				src = e.queue("src", nil)
			}
			q2 := e.queue("q2", nil)
			d := e.queue("d", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute, LockDuration: 5 * time.Minute,
				MaxDeliveryCount: 1, ForwardDeadLetteredMessagesTo: "q2"})
			if !srcFirst {
				src = e.queue("src", nil)
			}
			_, err := e.ns.UpdateQueue("src", minibus.QueueProperties{ForwardTo: "d"})
			require.NoError(t, err)
			e.send(d, "locked")
			e.receive(e.receiver(d, nil), 1)
			_, err = src.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("forwarded")}}, at(5*time.Minute), nil)
			require.NoError(t, err)

			e.mock.Add(5 * time.Minute) // d's lock ends, d is idle, src forwards
			require.Equal(t, []string{"q2", "src"}, e.ns.Queues(), "d was idle for 5 minutes")
			dl := e.peekAll(e.receiver(q2, nil))
			require.Equal(t, []string{"locked"}, bodies(dl), "the lock ended before d went")
			require.Equal(t, "MaxDeliveryCountExceeded", dl[0].DeadLetterReason)
			require.EqualValues(t, 1, src.RuntimeProperties().TransferDeadLetterMessageCount, "the forward found d gone")
		})
	}
}

// A4: a queue or subscription that forwards is never idle.
func TestA4_ForwardingSourceNeverIdle(t *testing.T) {
	e := newEnv(t)
	e.queue("dest", nil)
	e.queue("src", &minibus.QueueProperties{ForwardTo: "dest", AutoDeleteOnIdle: 5 * time.Minute})
	idle := e.queue("idle", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute})
	e.mock.Add(time.Hour)
	require.Equal(t, []string{"dest", "src"}, e.ns.Queues())
	_ = idle
}

// A4 for subscriptions, and its end: a subscription that forwards is never
// idle, beside one that is deleted at its idle deadline; a queue whose
// ForwardTo is removed is idle AutoDeleteOnIdle after that update, not
// before.
func TestA4_ForwardingSubscriptionAndUpdate(t *testing.T) {
	e := newEnv(t)
	e.queue("dest", nil)
	top := e.topic("t", nil)
	e.subscription(top, "fwd", &minibus.SubscriptionProperties{ForwardTo: "dest", AutoDeleteOnIdle: 5 * time.Minute})
	e.subscription(top, "idle", &minibus.SubscriptionProperties{AutoDeleteOnIdle: 5 * time.Minute})
	e.queue("src", &minibus.QueueProperties{ForwardTo: "dest", AutoDeleteOnIdle: 5 * time.Minute})
	e.advanceTo(5 * time.Minute)
	require.Equal(t, []string{"fwd"}, top.Subscriptions())
	e.advanceTo(time.Hour)
	require.Equal(t, []string{"fwd"}, top.Subscriptions())
	require.Equal(t, []string{"dest", "src"}, e.ns.Queues())
	_, err := e.ns.UpdateQueue("src", minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute})
	require.NoError(t, err)
	e.advanceTo(time.Hour + 5*time.Minute - 1)
	require.Equal(t, []string{"dest", "src"}, e.ns.Queues())
	e.advanceTo(time.Hour + 5*time.Minute)
	require.Equal(t, []string{"dest"}, e.ns.Queues())
}
