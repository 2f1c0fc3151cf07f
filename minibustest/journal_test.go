package minibustest_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/stretchr/testify/require"
)

// EventsOf and EventsFor filter the journal by kind and by entity (its
// name matched case-insensitively, SEMANTICS V1), in order.
func TestEventsOfAndFor(t *testing.T) {
	ctx := context.Background()
	env := minibustest.New(t)
	ns := env.Namespace()
	q, err := ns.CreateQueue("Orders", nil)
	require.NoError(t, err)
	topic, err := ns.CreateTopic("t", nil)
	require.NoError(t, err)
	_, err = topic.CreateSubscription("s", nil)
	require.NoError(t, err)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "a"}, nil))
	require.NoError(t, topic.SendMessage(ctx, &minibus.Message{MessageID: "b"}, nil))

	kinds := func(evs []minibus.Event) (out []string) {
		for _, ev := range evs {
			out = append(out, fmt.Sprintf("%v %s %s", ev.Kind, ev.Entity, ev.MessageID))
		}
		return out
	}
	require.Equal(t, []string{"Sent Orders a", "Sent t b", "Sent t/Subscriptions/s b"}, kinds(env.EventsOf(minibus.EventSent)))
	require.Len(t, env.EventsOf(minibus.EventSent, minibus.EventEntityCreated), 6)
	require.Equal(t, env.Events(), env.EventsOf(), "no kind: every event")
	require.Empty(t, env.EventsOf(minibus.EventCompleted))

	require.Equal(t, []string{"EntityCreated Orders ", "Sent Orders a"}, kinds(env.EventsFor("orders")))
	require.Equal(t, []string{"Sent Orders a"}, kinds(env.EventsFor("ORDERS", minibus.EventSent)))
	require.Equal(t, []string{"Sent t/Subscriptions/s b"}, kinds(env.EventsFor("t/subscriptions/S", minibus.EventSent)))
	require.Equal(t, []string{"EntityCreated t ", "Sent t b"}, kinds(env.EventsFor("t")), "a topic's own events")
	require.Empty(t, env.EventsFor(""))
	require.Empty(t, env.EventsFor("nothing"))
}

// WaitFor returns the earliest matching event, one already in the journal
// included, and otherwise waits for it without polling: here a hand-written
// receive loop's completion (SEMANTICS P3).
func TestWaitFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		env := minibustest.New(t)
		q, err := env.Namespace().CreateQueue("q", nil)
		require.NoError(t, err)
		require.NoError(t, q.SendMessages(ctx, []*minibus.Message{{MessageID: "a"}, {MessageID: "b"}}, nil))
		got := env.WaitFor(func(ev minibus.Event) bool { return ev.Kind == minibus.EventSent })
		require.Equal(t, "a", got.MessageID, "the earliest, already in the journal")

		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		loopCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				msgs, err := r.ReceiveMessages(loopCtx, 1, nil)
				if err != nil {
					return
				}
				_ = r.CompleteMessage(ctx, msgs[0], nil)
			}
		}()
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "c"}, nil))
		got = env.WaitFor(func(ev minibus.Event) bool {
			return ev.Kind == minibus.EventCompleted && ev.MessageID == "c"
		})
		require.Equal(t, "q", got.Entity)
		require.Len(t, env.EventsOf(minibus.EventCompleted), 3, "a and b went first (Q4)")
		cancel()
		<-done
	})
}

// WaitFor fails the test after 10 s (synctest's fake time here) when no
// event matches, naming the journal's last events, and at once for a nil
// predicate.
func TestWaitFor_Fails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &fakeTB{TB: t}
		defer fake.cleanup()
		env := minibustest.New(fake)
		_, err := env.Namespace().CreateQueue("q", nil)
		require.NoError(t, err)
		start := time.Now()
		inGoroutine(func() {
			env.WaitFor(func(ev minibus.Event) bool { return ev.Kind == minibus.EventCompleted })
		})
		require.Equal(t, 10*time.Second, time.Since(start))
		require.Len(t, fake.failures(), 1)
		require.Contains(t, fake.failures()[0], "no event matched within 10s")
		require.Contains(t, fake.failures()[0], "EntityCreated q")
		inGoroutine(func() { env.WaitFor(nil) })
		require.Len(t, fake.failures(), 2)
		require.Contains(t, fake.failures()[1], "nil predicate")
	})
}

// Peek shows every message of a queue or subscription in sequence order,
// as PeekMessages does (SEMANTICS L12): available, locked, deferred,
// scheduled; it changes nothing. DeadLetters shows a dead-letter queue
// with its reasons (D2). Both page through any number of messages.
func TestPeekAndDeadLetters(t *testing.T) {
	ctx := context.Background()
	env := minibustest.New(t)
	ns := env.Namespace()
	q, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	require.Empty(t, env.Peek("q"))
	require.Empty(t, env.DeadLetters("q"))
	msgs := make([]*minibus.Message, 300)
	for i := range msgs {
		msgs[i] = &minibus.Message{MessageID: fmt.Sprint(i)}
	}
	require.NoError(t, q.SendMessages(ctx, msgs, nil))
	_, err = q.ScheduleMessages(ctx, []*minibus.Message{{MessageID: "later"}}, minibustest.Epoch.Add(time.Hour), nil)
	require.NoError(t, err)
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(ctx)
	got, err := r.ReceiveMessages(ctx, 3, nil)
	require.NoError(t, err)
	require.NoError(t, r.DeadLetterMessage(ctx, got[0], &minibus.DeadLetterOptions{Reason: "bad", ErrorDescription: "no price"}))
	require.NoError(t, r.DeferMessage(ctx, got[1], nil))
	// got[2] stays locked.

	peeked := env.Peek("q")
	require.Len(t, peeked, 300)
	require.Equal(t, "1", peeked[0].MessageID)
	require.Equal(t, minibus.MessageStateDeferred, peeked[0].State)
	require.Equal(t, "2", peeked[1].MessageID, "locked, shown")
	require.Equal(t, "later", peeked[299].MessageID)
	require.Equal(t, minibus.MessageStateScheduled, peeked[299].State)
	for i := 1; i < len(peeked); i++ {
		require.Less(t, peeked[i-1].SequenceNumber, peeked[i].SequenceNumber)
	}
	dl := env.DeadLetters("Q")
	require.Len(t, dl, 1)
	require.Equal(t, "0", dl[0].MessageID)
	require.Equal(t, "bad", dl[0].DeadLetterReason)
	require.Equal(t, "no price", dl[0].DeadLetterErrorDescription)
	require.Len(t, env.DeadLetters("q"), 1, "peeked, not received")
	props := q.RuntimeProperties()
	require.EqualValues(t, 299, props.ActiveMessageCount)
	require.EqualValues(t, 1, props.ScheduledMessageCount)
	require.EqualValues(t, 1, props.DeadLetterMessageCount)
	require.NoError(t, r.CompleteMessage(ctx, got[2], nil), "the lock is untouched")

	// A subscription, by its path; a session-enabled one's dead letters.
	topic, err := ns.CreateTopic("t", nil)
	require.NoError(t, err)
	sub, err := topic.CreateSubscription("s", &minibus.SubscriptionProperties{RequiresSession: true})
	require.NoError(t, err)
	require.NoError(t, topic.SendMessage(ctx, &minibus.Message{MessageID: "no session"}, nil)) // SS1: dead-lettered
	dl = env.DeadLetters("t/Subscriptions/s")
	require.Len(t, dl, 1)
	require.Equal(t, "Session id is null.", dl[0].DeadLetterReason)
	_ = sub
}

// Peek and DeadLetters fail the test for an entity that does not exist, a
// topic (no receiver), and the main queue of a session-enabled entity
// (read per session, SS1).
func TestPeek_Fails(t *testing.T) {
	fake := &fakeTB{TB: t}
	defer fake.cleanup()
	env := minibustest.New(fake)
	ns := env.Namespace()
	_, err := ns.CreateQueue("sq", &minibus.QueueProperties{RequiresSession: true})
	require.NoError(t, err)
	_, err = ns.CreateTopic("t", nil)
	require.NoError(t, err)
	for _, name := range []string{"missing", "t/Subscriptions/missing", "missing/Subscriptions/s", "t", "sq"} {
		inGoroutine(func() { env.Peek(name) })
	}
	inGoroutine(func() { env.DeadLetters("missing") })
	f := fake.failures()
	require.Len(t, f, 6)
	for i, want := range []string{`"missing"`, "not found", "not found", "topic", "sessions", "not found"} {
		require.Contains(t, f[i], "minibustest: cannot peek")
		require.Contains(t, f[i], want)
	}
}

// The clock trap: the Env's mock starts at the Epoch, behind the wall
// clock (from 2026 on), so a schedule for time.Now().Add(time.Hour) is
// months after the mock's now, and Advance(time.Hour) leaves it scheduled,
// silently; one for Namespace().Now().Add(time.Hour) activates (T1).
func TestClockTrap(t *testing.T) {
	ctx := context.Background()
	env := minibustest.New(t)
	q, err := env.Namespace().CreateQueue("q", nil)
	require.NoError(t, err)
	wall := time.Now().Add(time.Hour)
	_, err = q.ScheduleMessages(ctx, []*minibus.Message{{MessageID: "wall"}}, wall, nil)
	require.NoError(t, err)
	_, err = q.ScheduleMessages(ctx, []*minibus.Message{{MessageID: "namespace"}}, env.Namespace().Now().Add(time.Hour), nil)
	require.NoError(t, err)
	env.Advance(time.Hour)
	props := q.RuntimeProperties()
	if wall.After(env.Clock().Now()) { // the wall clock is ahead of the mock
		require.EqualValues(t, 1, props.ScheduledMessageCount, "S2: time.Now's schedule is still pending")
		require.EqualValues(t, 1, props.ActiveMessageCount, "the namespace's one activated")
	} else { // a machine clock before the Epoch: at or before now enqueues at once (S1)
		require.EqualValues(t, 2, props.ActiveMessageCount)
	}
}
