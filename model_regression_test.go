package minibus_test

// The smallest tests for broker bugs the model-based tests found, each
// citing its SEMANTICS rule: first those fixed, which failed before the
// fixes and guard them, then those still open, which fail until fixed and
// run only with -model.open.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// V1: "Names are matched case-insensitively and keep the spelling they were
// created with", rule names included. The broker used to match rule names
// exactly: CreateRule("R1") succeeded next to "r1", and DeleteRule("$DEFAULT")
// did not find "$Default".
func TestRegressionV1_RuleNamesCaseInsensitive(t *testing.T) {
	e := newEnv(t)
	s := e.subscription(e.topic("t", nil), "s", nil)
	require.NoError(t, s.CreateRule("r1", nil))
	requireSentinel(t, s.CreateRule("R1", nil), minibus.ErrAlreadyExists, `rule "r1"`)
	require.NoError(t, s.DeleteRule("$DEFAULT"))
	require.Equal(t, []string{"r1"}, ruleNamesOf(s.Rules()))
}

func ruleNamesOf(rules []minibus.Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.Name
	}
	return out
}

// E1, R5: the dead-letter copy a failing rule makes used to read the
// TimeToLive the message was sent with, not its effective TTL, while its
// ExpiresAt used the effective one: TimeToLive 0, which ReceivedMessage
// documents as "never expires".
func TestRegressionE1_FilterDeadLetterCopyTTL(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	s := e.subscription(top, "s", &minibus.SubscriptionProperties{
		DefaultMessageTimeToLive:                  10 * time.Second,
		DeadLetteringOnFilterEvaluationExceptions: true,
		DefaultRule: &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "n > 1"}},
	})
	require.NoError(t, top.SendMessage(context.Background(), &minibus.Message{
		ApplicationProperties: map[string]any{"n": "not a number"}}, nil))
	dlq := e.peekAll(e.receiver(s, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}))
	require.Len(t, dlq, 1)
	require.Equal(t, "FilterEvaluationException", dlq[0].DeadLetterReason)
	require.True(t, dlq[0].ExpiresAt.Equal(at(10*time.Second)), "ExpiresAt %v", dlq[0].ExpiresAt)
	require.Equal(t, 10*time.Second, dlq[0].TimeToLive)
}

// E1, E2, S2: a scheduled message, peeked before it activates, used to read
// the TimeToLive it was sent with (0) while its ExpiresAt already counted the
// queue's DefaultMessageTimeToLive: ReceivedMessage documents TimeToLive as
// the effective time to live, 0 only when the message never expires.
func TestRegressionE1_ScheduledPeekTTL(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{DefaultMessageTimeToLive: 10 * time.Second})
	_, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("later")}}, at(time.Minute), nil)
	require.NoError(t, err)
	r := e.receiver(q, nil)
	peeked := e.peekAll(r)
	require.Len(t, peeked, 1)
	require.Equal(t, minibus.MessageStateScheduled, peeked[0].State)
	require.True(t, peeked[0].ExpiresAt.Equal(at(time.Minute+10*time.Second)), "ExpiresAt %v", peeked[0].ExpiresAt)
	e.advanceTo(time.Minute)
	active := e.peekAll(r)
	require.Len(t, active, 1)
	require.Equal(t, 10*time.Second, active[0].TimeToLive)
	require.Equal(t, 10*time.Second, peeked[0].TimeToLive)
}

// The regression tests below pin broker bugs the model found in
// auto-forwarding, each failing before its fix.

// F2, Q3: a message its source cannot forward goes to the source's transfer
// dead-letter queue (F3). The source accepted it at the instant it left,
// and it keeps that EnqueuedTime as any dead-lettered message keeps its own
// (D2). The broker used not to stamp it: EnqueuedTime read 1970-01-01
// (Unix 0), ExpiresAt zero and TimeToLive the one it was sent with.
func TestRegressionF2_TransferDeadLetterEnqueuedTime(t *testing.T) {
	e := newEnv(t)
	e.mock.Add(time.Minute)
	e.queue("dest", &minibus.QueueProperties{Status: minibus.EntityStatusDisabled})
	src := e.queue("src", &minibus.QueueProperties{ForwardTo: "dest", DefaultMessageTimeToLive: time.Hour})
	require.NoError(t, src.SendMessage(e.ctx, &minibus.Message{MessageID: "m"}, nil))
	d := e.peekAll(e.receiver(src, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueTransfer}))
	require.Len(t, d, 1)
	require.Equal(t, "TransferFailed", d[0].DeadLetterReason)
	require.True(t, d[0].EnqueuedTime.Equal(at(time.Minute)), "EnqueuedTime %v", d[0].EnqueuedTime)
}

// F2, F3: each destination is a new enqueue (EnqueuedTime computed there);
// a message that would make a fifth hop stops in the dead-letter queue of
// the entity it entered last. The broker used not to stamp it there
// either: EnqueuedTime read 1970-01-01.
func TestRegressionF3_HopLimitEnqueuedTime(t *testing.T) {
	e := newEnv(t)
	e.queue("b", nil)
	a := e.queue("a", &minibus.QueueProperties{ForwardTo: "b"})
	_, err := e.ns.UpdateQueue("b", minibus.QueueProperties{ForwardTo: "a"})
	require.NoError(t, err)
	e.mock.Add(time.Minute)
	require.NoError(t, a.SendMessage(e.ctx, &minibus.Message{MessageID: "loop"}, nil))
	// a->b, b->a, a->b, b->a: four hops, and a fifth would leave a.
	d := e.peekAll(e.receiver(a, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}))
	require.Len(t, d, 1)
	require.Equal(t, "MaxTransferHopCountExceeded", d[0].DeadLetterReason)
	require.EqualValues(t, 3, d[0].SequenceNumber, "sent as 1, back as 2 and 3")
	require.True(t, d[0].EnqueuedTime.Equal(at(time.Minute)), "EnqueuedTime %v", d[0].EnqueuedTime)
}

// D2, F3: a message that cannot be forwarded keeps its DeliveryCount in the
// transfer dead-letter queue, as a dead-lettered message does, whatever
// stopped it. When the destination was full the broker used to reset it to
// 0; when the destination was disabled it kept it.
func TestRegressionD2_TransferDeadLetterKeepsDeliveryCount(t *testing.T) {
	for _, full := range []bool{false, true} {
		t.Run(fmt.Sprintf("full=%v", full), func(t *testing.T) {
			e := newEnv(t)
			dp := &minibus.QueueProperties{MaxSizeInMegabytes: 1, MaxMessageSizeInKilobytes: 1024, Status: minibus.EntityStatusDisabled}
			if full {
				dp.Status = minibus.EntityStatusActive
			}
			d := e.queue("dest", dp)
			if full {
				require.NoError(t, d.SendMessage(e.ctx, &minibus.Message{Body: make([]byte, 1000<<10)}, nil))
			}
			q := e.queue("q", &minibus.QueueProperties{ForwardDeadLetteredMessagesTo: "dest", MaxDeliveryCount: 1, MaxMessageSizeInKilobytes: 1024})
			require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{Body: make([]byte, 100<<10)}, nil))
			r := e.receiver(q, nil)
			require.NoError(t, r.AbandonMessage(e.ctx, e.receive(r, 1)[0], nil)) // MaxDeliveryCountExceeded
			tr := e.peekAll(e.receiver(q, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueTransfer}))
			require.Len(t, tr, 1)
			require.Equal(t, "TransferFailed", tr[0].DeadLetterReason)
			require.EqualValues(t, 1, tr[0].DeliveryCount, "%s", tr[0].DeadLetterErrorDescription)
		})
	}
}

// DD1, T3: a message forwarded to an entity with duplicate detection is
// checked there at the instant it arrives. Here "x" was accepted by d at 0
// with a 10-minute window and comes back through src at +1m: a duplicate,
// dropped. The broker forgets "x" in a catch-up that runs past +10m before
// it delivers the forward of +1m, so whether the copy is dropped depends on
// how far the clock jumps: a jump of 2 minutes drops it, one of an hour
// keeps it (here it then expires into d's dead-letter queue as a second
// message).
func TestRegressionDD1_ForwardDuringCatchUp(t *testing.T) {
	e := newEnv(t)
	d := e.queue("d", &minibus.QueueProperties{RequiresDuplicateDetection: true, DuplicateDetectionHistoryTimeWindow: 10 * time.Minute,
		DefaultMessageTimeToLive: 30 * time.Second, DeadLetteringOnMessageExpiration: true})
	src := e.queue("src", &minibus.QueueProperties{ForwardTo: "d"})
	require.NoError(t, d.SendMessage(e.ctx, &minibus.Message{MessageID: "x"}, nil))
	_, err := src.ScheduleMessages(e.ctx, []*minibus.Message{{MessageID: "x"}}, at(time.Minute), nil)
	require.NoError(t, err)
	e.mock.Add(time.Hour) // d expires "x" at +30s; src forwards "x" at +1m
	require.EqualValues(t, 1, d.RuntimeProperties().DeadLetterMessageCount, "the forward at +1m was a duplicate")
}

// DD1, T3: a topic's scheduled message "b" activates at +1ns and its
// subscription s1 forwards it back to the topic at that instant: a resend
// within the 20 s window, a duplicate. The namespace catch-up of a jump to
// +1h pruned the topic's history to +1h while that forward was still on
// its way, so it found "b" forgotten and was taken as new: s2 got a second
// copy. A durable namespace's log then held a transfer that its replay,
// which does not prune, dropped as the duplicate it was, and the records
// after it no longer fitted: Open failed with ErrCorrupt (found by
// TestModelDurable).
func TestRegressionDD1_ForwardBackAfterACatchUpPrunes(t *testing.T) {
	d := newDurableEnv(t)
	top := d.topic("t", &minibus.TopicProperties{RequiresDuplicateDetection: true, DuplicateDetectionHistoryTimeWindow: 20 * time.Second})
	s2 := d.subscription(top, "s2", nil)
	d.subscription(top, "s1", &minibus.SubscriptionProperties{ForwardTo: "t"})
	_, err := top.ScheduleMessages(d.ctx, []*minibus.Message{{MessageID: "b"}}, at(1), nil)
	require.NoError(t, err)

	d.mock.Add(time.Hour)
	require.EqualValues(t, 1, s2.RuntimeProperties().ActiveMessageCount, "the forward back was a duplicate")

	d.crash()
	top, err = d.ns.Topic("t")
	require.NoError(t, err)
	s2, err = top.Subscription("s2")
	require.NoError(t, err)
	require.EqualValues(t, 1, s2.RuntimeProperties().ActiveMessageCount, "the replay as it happened live")
}

// T5: a receive blocked on a queue wakes when a message becomes available
// there through time, also when it arrives by a forward: here a scheduled
// message activates in a forwarding source. The broker arms its timer only
// for the entity the receive waits on, so the receive sleeps until
// something else catches the namespace up.
func TestRegressionT5_ForwardWakesReceiver(t *testing.T) {
	e := newEnv(t)
	dest := e.queue("dest", nil)
	src := e.queue("src", &minibus.QueueProperties{ForwardTo: "dest"})
	_, err := src.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("later")}}, at(time.Minute), nil)
	require.NoError(t, err)
	// A deadline of dest's own, so that the blocked receive arms a timer: it
	// tells the test that the receive blocks.
	_, err = dest.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("much later")}}, at(time.Hour), nil)
	require.NoError(t, err)
	r := e.receiver(dest, nil)
	done := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		msgs, err := r.ReceiveMessages(ctx, 1, nil)
		if err != nil {
			done <- err.Error()
			return
		}
		done <- string(msgs[0].Body)
	}()
	require.Eventually(t, func() bool { return e.clock.timers.Load() > 0 }, 5*time.Second, time.Millisecond, "the receive never blocked")
	e.mock.Add(time.Minute)
	select {
	case got := <-done:
		require.Equal(t, "later", got)
	case <-time.After(2 * time.Second): // a safety net, not a wait for the broker
		t.Fatal("the blocked receive did not wake when the forwarded message arrived at +1m")
	}
}

// T5: as TestRegressionT5_ForwardWakesReceiver, with the message coming
// from a topic's scheduled message (S5) that a subscription forwards (F2):
// the broker armed its timer for the deadlines of the entities that forward
// but not for those of their topics, so the blocked receive slept through
// the activation. Not found by a model run: it came up while the model's
// blocked calls were taught to stop where a forward arrives, which makes
// them expect this wake-up.
func TestRegressionT5_TopicActivationForwardWakesReceiver(t *testing.T) {
	e := newEnv(t)
	dest := e.queue("dest", nil)
	top := e.topic("top", nil)
	e.subscription(top, "s", &minibus.SubscriptionProperties{ForwardTo: "dest"})
	_, err := top.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("later")}}, at(time.Minute), nil)
	require.NoError(t, err)
	done := blockedReceive(t, e, dest)
	e.mock.Add(time.Minute)
	requireWokenWith(t, done, "later", "the blocked receive did not wake when the topic's message arrived through s at +1m")
}

// T5: a receive blocks on dest; then src, which holds a scheduled message,
// is set to forward to dest. The broker noted the new forwarder but left
// its timer armed for dest's own deadline, so the receive slept through
// the activation at +1m.
func TestRegressionT5_ForwardSetWhileBlockedWakesReceiver(t *testing.T) {
	e := newEnv(t)
	dest := e.queue("dest", nil)
	src := e.queue("src", nil)
	_, err := src.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("later")}}, at(time.Minute), nil)
	require.NoError(t, err)
	done := blockedReceive(t, e, dest)
	_, err = e.ns.UpdateQueue("src", minibus.QueueProperties{ForwardTo: "dest"})
	require.NoError(t, err)
	e.mock.Add(time.Minute)
	requireWokenWith(t, done, "later", "the blocked receive did not wake when src forwarded its message at +1m")
}

// blockedReceive starts a receive of one message on q, in a goroutine,
// once q has a deadline of its own an hour away, so that the blocked
// receive arms the broker's timer: that tells the test that it blocks. The
// channel gets the body received, or the error.
func blockedReceive(t *testing.T, e *env, q *minibus.Queue) <-chan string {
	t.Helper()
	_, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("much later")}}, at(time.Hour), nil)
	require.NoError(t, err)
	r := e.receiver(q, nil)
	timers := e.clock.timers.Load()
	done := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), resultTimeout)
		defer cancel()
		msgs, err := r.ReceiveMessages(ctx, 1, nil)
		if err != nil {
			done <- err.Error()
			return
		}
		done <- string(msgs[0].Body)
	}()
	require.Eventually(t, func() bool { return e.clock.timers.Load() > timers }, 5*time.Second, time.Millisecond, "the receive never blocked")
	return done
}

// requireWokenWith checks that the receive blockedReceive started has
// returned the message with body want.
func requireWokenWith(t *testing.T, done <-chan string, want, msg string) {
	t.Helper()
	select {
	case got := <-done:
		require.Equal(t, want, got)
	case <-time.After(2 * time.Second): // a safety net, not a wait for the broker
		t.Fatal(msg)
	}
}

// T2, T3: at the instant of its idle deadline an entity is deleted (T2:
// when now >= lastActivity + AutoDeleteOnIdle), so a message forwarded to
// it at that same instant finds it gone and goes to its source's transfer
// dead-letter queue (F3). The broker's catch-up used to visit the two
// entities in the order of its own bookkeeping, here the order they were
// created in: created before its source, the destination was deleted
// first; created after, it took the message and lived on.
func TestRegressionT3_ForwardAtDestinationDeadline(t *testing.T) {
	for _, destFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("destination created first=%v", destFirst), func(t *testing.T) {
			e := newEnv(t)
			if destFirst {
				e.queue("d", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute})
			}
			src := e.queue("src", nil)
			if !destFirst {
				e.queue("d", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute})
			}
			_, err := e.ns.UpdateQueue("src", minibus.QueueProperties{ForwardTo: "d"})
			require.NoError(t, err)
			_, err = src.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("m")}}, at(5*time.Minute), nil)
			require.NoError(t, err)
			e.mock.Add(5 * time.Minute)
			require.Equal(t, []string{"src"}, e.ns.Queues(), "d was idle for 5 minutes")
			require.EqualValues(t, 1, src.RuntimeProperties().TransferDeadLetterMessageCount)
		})
	}
}

// T3, A2: at one instant an entity's message deadlines come before its
// idle deletion, each followed by what it makes happen. Here d's locks end
// at the instant it has been idle for AutoDeleteOnIdle; each message,
// at MaxDeliveryCount, is dead-lettered, forwarded to q (D4) and by q back
// to d (F2): a send to d at that instant, activity (A2) that keeps d for
// another AutoDeleteOnIdle. The broker deleted d when the first message
// came back, as if its idle deletion came first: the message went to q's
// transfer dead-letter queue, and a second message, whose lock had not
// ended yet, went with d.
func TestRegressionT3_DeadLetterForwardedBackBeforeIdleDeletion(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d messages", n), func(t *testing.T) {
			e := newEnv(t)
			q := e.queue("q", nil)
			d := e.queue("d", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute, LockDuration: 5 * time.Minute,
				MaxDeliveryCount: 1, ForwardDeadLetteredMessagesTo: "q"})
			_, err := e.ns.UpdateQueue("q", minibus.QueueProperties{ForwardTo: "d"})
			require.NoError(t, err)
			for range n {
				require.NoError(t, d.SendMessage(e.ctx, &minibus.Message{Body: []byte("m")}, nil))
			}
			e.receive(e.receiver(d, nil), n)

			e.mock.Add(5 * time.Minute) // the locks end, and d's idle deadline
			require.Equal(t, []string{"d", "q"}, e.ns.Queues(), "the messages came back to d at +5m")
			require.EqualValues(t, 0, q.RuntimeProperties().TransferDeadLetterMessageCount)
			require.EqualValues(t, n, d.RuntimeProperties().ActiveMessageCount)

			e.mock.Add(5 * time.Minute)
			require.Equal(t, []string{"q"}, e.ns.Queues(), "d was idle from +5m")
		})
	}
}
