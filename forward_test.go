package minibus_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// F1: ForwardTo and ForwardDeadLetteredMessagesTo name an existing queue or
// topic other than the entity itself; a session-enabled entity cannot
// forward, but may forward its dead letters.
func TestF1_ForwardTargets(t *testing.T) {
	e := newEnv(t)
	e.queue("dest", nil)
	_, err := e.ns.CreateQueue("src", &minibus.QueueProperties{ForwardTo: "nope"})
	requireSentinel(t, err, minibus.ErrNotFound, `ForwardTo "nope"`)
	_, err = e.ns.CreateQueue("src", &minibus.QueueProperties{ForwardTo: "SRC"})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "names the entity itself")
	_, err = e.ns.CreateQueue("src", &minibus.QueueProperties{ForwardDeadLetteredMessagesTo: "nope"})
	requireSentinel(t, err, minibus.ErrNotFound, `ForwardDeadLetteredMessagesTo "nope"`)
	_, err = e.ns.CreateQueue("src", &minibus.QueueProperties{RequiresSession: true, ForwardTo: "dest"})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "cannot forward")
	_, err = e.ns.CreateQueue("src", &minibus.QueueProperties{RequiresSession: true, ForwardDeadLetteredMessagesTo: "dest"})
	require.NoError(t, err)
	top := e.topic("t", nil)
	_, err = top.CreateSubscription("s", &minibus.SubscriptionProperties{ForwardTo: "nope"})
	requireSentinel(t, err, minibus.ErrNotFound, `ForwardTo "nope"`)
	_, err = top.CreateSubscription("s", &minibus.SubscriptionProperties{ForwardTo: "t"})
	require.NoError(t, err, "a subscription may forward to its own topic")
	_, err = e.ns.UpdateQueue("dest", minibus.QueueProperties{ForwardTo: "dest"})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "names the entity itself")
}

// F2: a message active in the source moves straight on: never receivable
// or counted there; the destination numbers it, EnqueuedSequenceNumber
// keeps the first number, EnqueuedTime and ExpiresAt are computed there and
// DeliveryCount starts again.
func TestF2_Forwarding(t *testing.T) {
	e := newEnv(t)
	dest := e.queue("dest", &minibus.QueueProperties{DefaultMessageTimeToLive: time.Hour})
	src := e.queue("src", &minibus.QueueProperties{ForwardTo: "dest"})
	_, err := src.NewReceiver(nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "forwards its messages")
	e.receiver(src, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	e.receiver(src, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueTransfer})

	e.send(dest, "direct")
	e.mock.Add(time.Minute)
	e.send(src, "fwd")
	require.Zero(t, src.RuntimeProperties().TotalMessageCount)
	dr := e.receiver(dest, nil)
	ms := e.receive(dr, 2)
	for _, m := range ms {
		require.NoError(t, dr.CompleteMessage(e.ctx, m, nil))
	}
	m := ms[1]
	require.Equal(t, "fwd", string(m.Body))
	require.EqualValues(t, 2, m.SequenceNumber, "numbered by the destination")
	require.EqualValues(t, 1, m.EnqueuedSequenceNumber, "its number in the source")
	require.Zero(t, ms[0].EnqueuedSequenceNumber, "set on forwarded messages only")
	require.True(t, m.EnqueuedTime.Equal(at(time.Minute)))
	require.True(t, m.ExpiresAt.Equal(at(time.Hour+time.Minute)), "the destination's TTL")
	require.EqualValues(t, 1, m.DeliveryCount)

	// A scheduled message activates in the source, then moves on; its
	// EnqueuedSequenceNumber is the number it got at activation.
	_, err = src.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("later")}}, at(2*time.Minute), nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, src.RuntimeProperties().ScheduledMessageCount)
	e.advanceTo(2 * time.Minute)
	m = e.receive(e.receiver(dest, nil), 1)[0]
	require.Equal(t, "later", string(m.Body))
	require.EqualValues(t, 3, m.EnqueuedSequenceNumber, "scheduled as 2, activated as 3")
	require.True(t, m.EnqueuedTime.Equal(at(2*time.Minute)))
}

// F2: a topic copying to its subscriptions is not a hop; a subscription
// that forwards sends its copy on with the topic's number kept.
func TestF2_SubscriptionForwards(t *testing.T) {
	e := newEnv(t)
	dest := e.queue("dest", nil)
	top := e.topic("t", nil)
	e.subscription(top, "s", &minibus.SubscriptionProperties{ForwardTo: "dest"})
	e.send(top, "a", "b")
	ms := e.receive(e.receiver(dest, nil), 2)
	require.Equal(t, []string{"a", "b"}, bodies(ms))
	require.EqualValues(t, 2, ms[1].EnqueuedSequenceNumber, "the topic's number")
}

// F3: a chain of four hops delivers; a fifth hop goes to the dead-letter
// queue of the entity where it stopped with MaxTransferHopCountExceeded; a
// loop ends there too instead of spinning.
func TestF3_HopLimit(t *testing.T) {
	e := newEnv(t)
	chain := func(prefix string, n int) []*minibus.Queue {
		qs := make([]*minibus.Queue, n)
		for i := n - 1; i >= 0; i-- {
			var p minibus.QueueProperties
			if i < n-1 {
				p.ForwardTo = fmt.Sprint(prefix, i+1)
			}
			qs[i] = e.queue(fmt.Sprint(prefix, i), &p)
		}
		return qs
	}
	ok := chain("ok", 5) // ok0 -> ok1 -> ok2 -> ok3 -> ok4: four hops
	e.send(ok[0], "m")
	require.EqualValues(t, 1, ok[4].RuntimeProperties().ActiveMessageCount)

	long := chain("long", 6) // five hops: stops in long4
	e.send(long[0], "m")
	require.Zero(t, long[5].RuntimeProperties().TotalMessageCount)
	d := e.receive(e.receiver(long[4], &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
	require.Equal(t, "MaxTransferHopCountExceeded", d.DeadLetterReason)

	a := e.queue("a", nil)
	b := e.queue("b", &minibus.QueueProperties{ForwardTo: "a"})
	_, err := e.ns.UpdateQueue("a", minibus.QueueProperties{ForwardTo: "b", ForwardDeadLetteredMessagesTo: "b"})
	require.NoError(t, err)
	e.send(a, "loop")
	// a->b (1) b->a (2) a->b (3) b->a (4): the fifth would leave a.
	require.EqualValues(t, 1, a.RuntimeProperties().DeadLetterMessageCount, "kept, not forwarded as a dead letter")
	require.Zero(t, b.RuntimeProperties().TotalMessageCount)
}

// F3: a destination that no longer exists, is disabled or send-disabled,
// is full, or needs a SessionID the message lacks sends the message to the
// source's transfer dead-letter queue; nothing is lost.
func TestF3_TransferDeadLetter(t *testing.T) {
	for _, c := range []struct {
		name  string
		dest  minibus.QueueProperties
		msg   minibus.Message
		after func(e *env)
		why   string
	}{
		{name: "gone", after: func(e *env) { require.NoError(t, e.ns.DeleteQueue("dest")) }, why: "does not exist"},
		{name: "disabled", dest: minibus.QueueProperties{Status: minibus.EntityStatusDisabled}, why: "Disabled"},
		{name: "send-disabled", dest: minibus.QueueProperties{Status: minibus.EntityStatusSendDisabled}, why: "SendDisabled"},
		{name: "full", dest: minibus.QueueProperties{MaxSizeInMegabytes: 1, MaxMessageSizeInKilobytes: 1024},
			msg: minibus.Message{Body: make([]byte, 600<<10)}, after: func(e *env) {
				q, err := e.ns.Queue("dest")
				require.NoError(t, err)
				require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{Body: make([]byte, 600<<10)}, nil))
			}, why: "full"},
		{name: "session", dest: minibus.QueueProperties{RequiresSession: true}, why: "requires a SessionID"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.queue("dest", &c.dest)
			src := e.queue("src", &minibus.QueueProperties{ForwardTo: "dest", MaxMessageSizeInKilobytes: 1024})
			if c.after != nil {
				c.after(e)
			}
			msg := c.msg
			msg.MessageID = "m"
			require.NoError(t, src.SendMessage(e.ctx, &msg, nil))
			rp := src.RuntimeProperties()
			require.EqualValues(t, 1, rp.TransferDeadLetterMessageCount)
			require.EqualValues(t, 1, rp.TotalMessageCount)
			d := e.receive(e.receiver(src, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueTransfer}), 1)[0]
			require.Equal(t, "m", d.MessageID)
			require.Equal(t, "TransferFailed", d.DeadLetterReason)
			require.Contains(t, d.DeadLetterErrorDescription, c.why)
		})
	}
}

// D4: with ForwardDeadLetteredMessagesTo, dead-lettered messages go there
// instead, with DeadLetterSource naming where they were dead-lettered.
func TestD4_ForwardDeadLetters(t *testing.T) {
	e := newEnv(t)
	dlq := e.queue("dead", nil)
	q := e.queue("q", &minibus.QueueProperties{ForwardDeadLetteredMessagesTo: "dead", MaxDeliveryCount: 1})
	top := e.topic("t", nil)
	s := e.subscription(top, "s", &minibus.SubscriptionProperties{ForwardDeadLetteredMessagesTo: "dead", DefaultMessageTimeToLive: time.Minute, DeadLetteringOnMessageExpiration: true})
	e.send(q, "explicit", "abandoned")
	r := e.receiver(q, nil)
	ms := e.receive(r, 2)
	require.NoError(t, r.DeadLetterMessage(e.ctx, ms[0], &minibus.DeadLetterOptions{Reason: "bad"}))
	require.NoError(t, r.AbandonMessage(e.ctx, ms[1], nil))
	e.send(top, "expired")
	e.mock.Add(time.Minute)
	require.Zero(t, q.RuntimeProperties().DeadLetterMessageCount)
	require.Zero(t, s.RuntimeProperties().DeadLetterMessageCount)
	got := e.receive(e.receiver(dlq, nil), 3)
	require.Equal(t, []string{"explicit", "abandoned", "expired"}, bodies(got))
	require.Equal(t, []string{"q", "q", "t/Subscriptions/s"}, []string{got[0].DeadLetterSource, got[1].DeadLetterSource, got[2].DeadLetterSource})
	require.Equal(t, []string{"bad", "MaxDeliveryCountExceeded", "TTLExpiredException"},
		[]string{got[0].DeadLetterReason, got[1].DeadLetterReason, got[2].DeadLetterReason})
}

// F2: setting ForwardTo on a queue moves the messages already available.
func TestF2_UpdateStartsForwarding(t *testing.T) {
	e := newEnv(t)
	dest := e.queue("dest", nil)
	q := e.queue("q", nil)
	e.send(q, "a", "b")
	_, err := e.ns.UpdateQueue("q", minibus.QueueProperties{ForwardTo: "dest"})
	require.NoError(t, err)
	require.Zero(t, q.RuntimeProperties().ActiveMessageCount)
	require.Equal(t, []string{"a", "b"}, bodies(e.receive(e.receiver(dest, nil), 2)))
	require.True(t, strings.HasPrefix(q.Properties().ForwardTo, "dest"))
}

// F1 for subscriptions and updates: a session-enabled subscription cannot
// forward but may forward its dead letters; ForwardDeadLetteredMessagesTo
// may not name the entity itself; an update naming a missing entity is
// ErrNotFound, one making a session-enabled queue forward
// ErrInvalidArgument.
func TestF1_ForwardTargetsMore(t *testing.T) {
	e := newEnv(t)
	e.queue("dest", nil)
	top := e.topic("t", nil)
	_, err := top.CreateSubscription("s", &minibus.SubscriptionProperties{RequiresSession: true, ForwardTo: "dest"})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "cannot forward")
	_, err = top.CreateSubscription("s", &minibus.SubscriptionProperties{RequiresSession: true, ForwardDeadLetteredMessagesTo: "dest"})
	require.NoError(t, err)
	_, err = top.CreateSubscription("s2", &minibus.SubscriptionProperties{ForwardDeadLetteredMessagesTo: "nope"})
	requireSentinel(t, err, minibus.ErrNotFound, `ForwardDeadLetteredMessagesTo "nope"`)
	_, err = top.UpdateSubscription("s", minibus.SubscriptionProperties{RequiresSession: true, ForwardTo: "dest"})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "cannot forward")
	_, err = e.ns.CreateQueue("q", &minibus.QueueProperties{ForwardDeadLetteredMessagesTo: "Q"})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "names the entity itself")
	_, err = e.ns.UpdateQueue("dest", minibus.QueueProperties{ForwardTo: "nope"})
	requireSentinel(t, err, minibus.ErrNotFound, `ForwardTo "nope"`)
	e.queue("sq", &minibus.QueueProperties{RequiresSession: true})
	_, err = e.ns.UpdateQueue("sq", minibus.QueueProperties{RequiresSession: true, ForwardTo: "dest"})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "cannot forward")
	_, err = e.ns.CreateQueue("tq", &minibus.QueueProperties{ForwardTo: "t"})
	require.NoError(t, err, "a topic is a destination")
}

// F2: DeliveryCount starts again in the destination. A message delivered
// twice in its source, then dead-lettered there and sent on by
// ForwardDeadLetteredMessagesTo, or abandoned after ForwardTo was set while
// it was locked, reads DeliveryCount 1 at its first delivery there.
func TestF2_DeliveryCountStartsAgain(t *testing.T) {
	e := newEnv(t)
	dest := e.queue("dest", nil)
	q := e.queue("q", &minibus.QueueProperties{ForwardDeadLetteredMessagesTo: "dest", MaxDeliveryCount: 2})
	e.send(q, "dl", "moved")
	r := e.receiver(q, nil)
	for range 2 {
		for _, m := range e.receive(r, 2) {
			require.NoError(t, r.AbandonMessage(e.ctx, m, nil))
		}
	}
	// Both were delivered twice and abandoned: dead-lettered, forwarded.
	dr := e.receiver(dest, nil)
	got := e.receive(dr, 2)
	require.Equal(t, []string{"dl", "moved"}, bodies(got))
	for _, m := range got {
		require.EqualValues(t, 1, m.DeliveryCount, "%s: a new enqueue in the destination", m.Body)
		require.Equal(t, "MaxDeliveryCountExceeded", m.DeadLetterReason)
		require.NoError(t, dr.CompleteMessage(e.ctx, m, nil))
	}

	q2 := e.queue("q2", nil)
	e.send(q2, "late")
	r2 := e.receiver(q2, nil)
	m := e.receive(r2, 1)[0]
	require.NoError(t, r2.AbandonMessage(e.ctx, m, nil))
	m = e.receive(r2, 1)[0]
	require.EqualValues(t, 2, m.DeliveryCount)
	_, err := e.ns.UpdateQueue("q2", minibus.QueueProperties{ForwardTo: "dest"})
	require.NoError(t, err)
	require.NoError(t, r2.AbandonMessage(e.ctx, m, nil))
	got = e.receive(dr, 1)
	require.Equal(t, "late", string(got[0].Body))
	require.EqualValues(t, 1, got[0].DeliveryCount)
	require.EqualValues(t, 1, got[0].EnqueuedSequenceNumber)
}

// F2: EnqueuedSequenceNumber keeps the number the message got where it
// entered, across hops whose entities number it differently, and across a
// topic and its forwarding subscription.
func TestF2_EnqueuedSequenceNumberAcrossHops(t *testing.T) {
	e := newEnv(t)
	q2 := e.queue("q2", nil)
	q1 := e.queue("q1", &minibus.QueueProperties{ForwardTo: "q2"})
	q0 := e.queue("q0", &minibus.QueueProperties{ForwardTo: "q1"})
	e.send(q2, "x", "x", "x", "x", "x", "x", "x", "x", "x")
	e.send(q1, "y", "y", "y", "y")
	e.send(q0, "z", "m")
	require.EqualValues(t, 15, q2.RuntimeProperties().ActiveMessageCount)
	ms := e.receiveAll(e.receiver(q2, nil), 100)
	require.Len(t, ms, 15)
	m := ms[14]
	require.Equal(t, "m", string(m.Body))
	require.EqualValues(t, 15, m.SequenceNumber, "q2's number")
	require.EqualValues(t, 2, m.EnqueuedSequenceNumber, "q0's number, not q1's (6)")
	require.EqualValues(t, 4, ms[12].EnqueuedSequenceNumber, "the last y: q1's own number")

	dest := e.queue("dest", nil)
	top := e.topic("t", nil)
	e.subscription(top, "s", &minibus.SubscriptionProperties{ForwardTo: "dest"})
	src := e.queue("src", &minibus.QueueProperties{ForwardTo: "t"})
	e.send(top, "direct", "direct")
	e.send(src, "a", "b", "c")
	got := e.receive(e.receiver(dest, nil), 5)
	require.Equal(t, []int64{1, 2, 1, 2, 3}, []int64{got[0].EnqueuedSequenceNumber, got[1].EnqueuedSequenceNumber,
		got[2].EnqueuedSequenceNumber, got[3].EnqueuedSequenceNumber, got[4].EnqueuedSequenceNumber},
		"the topic's numbers, then src's, not the topic's (3, 4, 5)")
}

// F2, F3: a topic copying to its subscriptions is not a hop: a message
// making four ForwardTo moves through a topic arrives; a fifth move would
// leave a subscription, which keeps it in its dead-letter queue.
func TestF2_F3_TopicCopyIsNotAHop(t *testing.T) {
	e := newEnv(t)
	end := e.queue("end", nil)
	e.queue("q3", &minibus.QueueProperties{ForwardTo: "end"})
	e.queue("q2", &minibus.QueueProperties{ForwardTo: "q3"})
	top := e.topic("t", nil)
	e.subscription(top, "s", &minibus.SubscriptionProperties{ForwardTo: "q2"})
	q0 := e.queue("q0", &minibus.QueueProperties{ForwardTo: "t"})
	// q0 -> t (1), t copies to s (no hop), s -> q2 (2), q2 -> q3 (3), q3 -> end (4).
	e.send(q0, "m")
	require.Equal(t, []string{"m"}, bodies(e.receive(e.receiver(end, nil), 1)))

	last := e.queue("last", nil)
	top2 := e.topic("t2", nil)
	sub := e.subscription(top2, "s", &minibus.SubscriptionProperties{ForwardTo: "last"})
	e.queue("p3", &minibus.QueueProperties{ForwardTo: "t2"})
	e.queue("p2", &minibus.QueueProperties{ForwardTo: "p3"})
	e.queue("p1", &minibus.QueueProperties{ForwardTo: "p2"})
	p0 := e.queue("p0", &minibus.QueueProperties{ForwardTo: "p1"})
	// p0 -> p1 -> p2 -> p3 -> t2: four hops; s -> last would be the fifth.
	e.send(p0, "m")
	require.Zero(t, last.RuntimeProperties().TotalMessageCount)
	rp := sub.RuntimeProperties()
	require.EqualValues(t, 1, rp.DeadLetterMessageCount)
	require.Zero(t, rp.ActiveMessageCount)
	d := e.receive(e.receiver(sub, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
	require.Equal(t, "MaxTransferHopCountExceeded", d.DeadLetterReason)
}

// F2: a forwarding subscription's main queue cannot be received from; its
// dead-letter and transfer dead-letter queues can; it counts nothing as
// active.
func TestF2_ForwardingSubscriptionNotReceivable(t *testing.T) {
	e := newEnv(t)
	e.queue("dest", nil)
	top := e.topic("t", nil)
	sub := e.subscription(top, "s", &minibus.SubscriptionProperties{ForwardTo: "dest"})
	_, err := sub.NewReceiver(nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "forwards its messages")
	e.receiver(sub, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	e.receiver(sub, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueTransfer})
	e.send(top, "a")
	require.Zero(t, sub.RuntimeProperties().TotalMessageCount)
}

// F3 with a subscription as the source: each cause of a transfer failure
// sends the copy to the subscription's transfer dead-letter queue.
func TestF3_TransferDeadLetterFromSubscription(t *testing.T) {
	for _, c := range []struct {
		name  string
		dest  minibus.QueueProperties
		msg   minibus.Message
		after func(e *env)
		why   string
	}{
		{name: "gone", after: func(e *env) { require.NoError(t, e.ns.DeleteQueue("dest")) }, why: "does not exist"},
		{name: "disabled", dest: minibus.QueueProperties{Status: minibus.EntityStatusDisabled}, why: "Disabled"},
		{name: "send-disabled", dest: minibus.QueueProperties{Status: minibus.EntityStatusSendDisabled}, why: "SendDisabled"},
		{name: "full", dest: minibus.QueueProperties{MaxSizeInMegabytes: 1, MaxMessageSizeInKilobytes: 1024},
			msg: minibus.Message{Body: make([]byte, 600<<10)}, after: func(e *env) {
				q, err := e.ns.Queue("dest")
				require.NoError(t, err)
				require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{Body: make([]byte, 600<<10)}, nil))
			}, why: "full"},
		{name: "session", dest: minibus.QueueProperties{RequiresSession: true}, why: "requires a SessionID"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.queue("dest", &c.dest)
			top := e.topic("t", &minibus.TopicProperties{MaxMessageSizeInKilobytes: 1024})
			sub := e.subscription(top, "s", &minibus.SubscriptionProperties{ForwardTo: "dest"})
			if c.after != nil {
				c.after(e)
			}
			msg := c.msg
			msg.MessageID = "m"
			require.NoError(t, top.SendMessage(e.ctx, &msg, nil))
			rp := sub.RuntimeProperties()
			require.EqualValues(t, 1, rp.TransferDeadLetterMessageCount)
			require.EqualValues(t, 1, rp.TotalMessageCount)
			d := e.receive(e.receiver(sub, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueTransfer}), 1)[0]
			require.Equal(t, "m", d.MessageID)
			require.Equal(t, "TransferFailed", d.DeadLetterReason)
			require.Contains(t, d.DeadLetterErrorDescription, c.why)
		})
	}
}

// F3, D4: a dead letter that cannot be forwarded (its destination is gone)
// goes to the source's transfer dead-letter queue, keeping its
// DeadLetterSource.
func TestF3_DeadLetterForwardFails(t *testing.T) {
	e := newEnv(t)
	e.queue("dead", nil)
	q := e.queue("q", &minibus.QueueProperties{ForwardDeadLetteredMessagesTo: "dead"})
	require.NoError(t, e.ns.DeleteQueue("dead"))
	e.send(q, "a")
	r := e.receiver(q, nil)
	require.NoError(t, r.DeadLetterMessage(e.ctx, e.receive(r, 1)[0], &minibus.DeadLetterOptions{Reason: "bad"}))
	rp := q.RuntimeProperties()
	require.Zero(t, rp.DeadLetterMessageCount)
	require.EqualValues(t, 1, rp.TransferDeadLetterMessageCount)
	d := e.receive(e.receiver(q, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueTransfer}), 1)[0]
	require.Equal(t, "a", string(d.Body))
	require.Equal(t, "TransferFailed", d.DeadLetterReason)
	require.Contains(t, d.DeadLetterErrorDescription, "does not exist")
	require.Equal(t, "q", d.DeadLetterSource)
}

// D4 for session-enabled entities, whose dead-letter queues have no
// sessions: a session queue's explicit dead letters and those of a session
// lock's expiry past MaxDeliveryCount, and a session subscription's
// messages without SessionID (SS1), go to ForwardDeadLetteredMessagesTo with
// DeadLetterSource and their SessionID. To a session-enabled destination, a
// dead letter without SessionID goes to the transfer dead-letter queue
// (F3).
func TestD4_SessionEntityDeadLetters(t *testing.T) {
	e := newEnv(t)
	dead := e.queue("dead", nil)
	sq := e.queue("sq", &minibus.QueueProperties{RequiresSession: true, MaxDeliveryCount: 1, LockDuration: 10 * time.Second,
		ForwardDeadLetteredMessagesTo: "dead"})
	e.sendSession(sq, "a", "explicit", "expired")
	s := e.accept(sq, "a")
	ms := e.receiveSession(s, 2)
	require.NoError(t, s.DeadLetterMessage(e.ctx, ms[0], &minibus.DeadLetterOptions{Reason: "bad"}))
	e.mock.Add(10 * time.Second) // the session lock ends: "expired" had its one delivery

	top := e.topic("t", nil)
	sub := e.subscription(top, "s", &minibus.SubscriptionProperties{RequiresSession: true, ForwardDeadLetteredMessagesTo: "dead"})
	require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{Body: []byte("no session")}, nil))

	require.Zero(t, sq.RuntimeProperties().TotalMessageCount)
	require.Zero(t, sub.RuntimeProperties().TotalMessageCount)
	got := e.receive(e.receiver(dead, nil), 3)
	require.Equal(t, []string{"explicit", "expired", "no session"}, bodies(got))
	require.Equal(t, []string{"sq", "sq", "t/Subscriptions/s"}, []string{got[0].DeadLetterSource, got[1].DeadLetterSource, got[2].DeadLetterSource})
	require.Equal(t, []string{"bad", "MaxDeliveryCountExceeded", "Session id is null."},
		[]string{got[0].DeadLetterReason, got[1].DeadLetterReason, got[2].DeadLetterReason})
	require.Equal(t, []string{"a", "a", ""}, []string{got[0].SessionID, got[1].SessionID, got[2].SessionID})

	e.queue("sdead", &minibus.QueueProperties{RequiresSession: true})
	sub2 := e.subscription(top, "s2", &minibus.SubscriptionProperties{RequiresSession: true, ForwardDeadLetteredMessagesTo: "sdead"})
	require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{Body: []byte("lost?")}, nil))
	rp := sub2.RuntimeProperties()
	require.EqualValues(t, 1, rp.TransferDeadLetterMessageCount, "nothing is lost")
	d := e.receive(e.receiver(sub2, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueTransfer}), 1)[0]
	require.Equal(t, "TransferFailed", d.DeadLetterReason)
	require.Contains(t, d.DeadLetterErrorDescription, "requires a SessionID")
	require.Equal(t, "t/Subscriptions/s2", d.DeadLetterSource)
}

// D4, F2, F3: forwarding a dead letter is a hop. A message that made three
// ForwardTo moves and is dead-lettered where it stopped goes on to
// ForwardDeadLetteredMessagesTo, its fourth hop; that entity's ForwardTo
// would be its fifth, and it stops there, in the dead-letter queue.
func TestD4_DeadLetterForwardIsAHop(t *testing.T) {
	e := newEnv(t)
	y := e.queue("y", nil)
	x := e.queue("x", &minibus.QueueProperties{ForwardTo: "y"})
	q3 := e.queue("q3", &minibus.QueueProperties{ForwardDeadLetteredMessagesTo: "x"})
	e.queue("q2", &minibus.QueueProperties{ForwardTo: "q3"})
	e.queue("q1", &minibus.QueueProperties{ForwardTo: "q2"})
	q0 := e.queue("q0", &minibus.QueueProperties{ForwardTo: "q1"})
	e.send(q0, "m")
	r := e.receiver(q3, nil)
	require.NoError(t, r.DeadLetterMessage(e.ctx, e.receive(r, 1)[0], &minibus.DeadLetterOptions{Reason: "bad"}))
	require.Zero(t, y.RuntimeProperties().TotalMessageCount)
	got := e.receive(e.receiver(x, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
	require.Equal(t, "m", string(got.Body))
	require.Equal(t, "MaxTransferHopCountExceeded", got.DeadLetterReason)
}

// D4, F3: a subscription that forwards its dead letters to its own topic,
// and dead-letters what its filter fails, passes such a message around
// four times, not for ever: the fifth time it stays in the subscription's
// dead-letter queue, with the reason it was dead-lettered for.
func TestD4_DeadLetterLoopEnds(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	sub := e.subscription(top, "s", &minibus.SubscriptionProperties{
		DeadLetteringOnFilterEvaluationExceptions: true, ForwardDeadLetteredMessagesTo: "t",
		DefaultRule: &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "n + 1 = 2"}},
	})
	require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{Body: []byte("bad"), ApplicationProperties: map[string]any{"n": "text"}}, nil))
	rp := sub.RuntimeProperties()
	require.EqualValues(t, 1, rp.DeadLetterMessageCount)
	require.Zero(t, rp.ActiveMessageCount)
	d := e.receive(e.receiver(sub, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
	require.Equal(t, "FilterEvaluationException", d.DeadLetterReason)
	require.Equal(t, "bad", string(d.Body))
}

// D4, R5: a copy dead-lettered because its filter failed goes to
// ForwardDeadLetteredMessagesTo too.
func TestD4_FilterFailureForwarded(t *testing.T) {
	e := newEnv(t)
	dead := e.queue("dead", nil)
	top := e.topic("t", nil)
	sub := e.subscription(top, "s", &minibus.SubscriptionProperties{
		DeadLetteringOnFilterEvaluationExceptions: true, ForwardDeadLetteredMessagesTo: "dead",
		DefaultRule: &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "n + 1 = 2"}},
	})
	require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{Body: []byte("bad"), ApplicationProperties: map[string]any{"n": "text"}}, nil))
	require.Zero(t, sub.RuntimeProperties().TotalMessageCount)
	d := e.receive(e.receiver(dead, nil), 1)[0]
	require.Equal(t, "FilterEvaluationException", d.DeadLetterReason)
	require.Equal(t, "t/Subscriptions/s", d.DeadLetterSource)
}

// A send to a forwarding queue returns once its message is in the
// destination (F2), also when sends on other forwarding queues run at once
// and another call's flush took it on its way.
func TestF2_ForwardedBeforeConcurrentSendsReturn(t *testing.T) {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	defer ns.Close()
	var wg sync.WaitGroup
	for g := range 4 {
		name := "g" + strconv.Itoa(g)
		dst, err := ns.CreateQueue(name+"-dst", nil)
		require.NoError(t, err)
		// Two hops, so that a flush has more to do while others wait.
		mid, err := ns.CreateQueue(name+"-mid", &minibus.QueueProperties{ForwardTo: dst.Name()})
		require.NoError(t, err)
		src, err := ns.CreateQueue(name+"-src", &minibus.QueueProperties{ForwardTo: mid.Name()})
		require.NoError(t, err)
		wg.Go(func() {
			for i := int64(1); i <= 500; i++ {
				if err := src.SendMessage(ctx, &minibus.Message{}, nil); err != nil {
					t.Error(err)
					return
				}
				if n := dst.RuntimeProperties().ActiveMessageCount; n != i {
					t.Errorf("SendMessage %d to %s returned with %d messages in %s", i, src.Name(), n, dst.Name())
					return
				}
			}
		})
	}
	wg.Wait()
}

// E1, F3: copies that a subscription cannot forward go to its transfer
// dead-letter queue capped by the topic's DefaultMessageTimeToLive, read
// without the topic's lock while updates change it (a data race under
// -race before it was kept apart): each copy has one of the two TTLs.
func TestE1_F3_TopicUpdatesBesideTransferDeadLetters(t *testing.T) {
	e := newEnv(t)
	ttls := []time.Duration{time.Hour, 2 * time.Hour}
	top := e.topic("t", &minibus.TopicProperties{DefaultMessageTimeToLive: ttls[1]})
	e.queue("dest", &minibus.QueueProperties{Status: minibus.EntityStatusSendDisabled})
	sub := e.subscription(top, "s", &minibus.SubscriptionProperties{ForwardTo: "dest"})
	const n = 100
	together(n, func(i int) {
		_, err := e.ns.UpdateTopic("t", minibus.TopicProperties{DefaultMessageTimeToLive: ttls[i%2]})
		assert.NoError(t, err)
	}, func(int) {
		assert.NoError(t, top.SendMessage(e.ctx, &minibus.Message{}, nil))
	})
	got := e.receive(e.receiver(sub, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueTransfer}), n)
	require.Len(t, got, n)
	for _, m := range got {
		require.Equal(t, "TransferFailed", m.DeadLetterReason)
		require.Contains(t, ttls, m.TimeToLive)
	}
}

// F2: peeks beside updates that start a queue forwarding: the peeks show
// the messages as they were in the queue (no EnqueuedSequenceNumber), and
// the forward sets it on the messages it moves without touching what a
// peek is reading (a data race under -race before the number was part of
// what a read copies under the lock); each message arrives once, numbered
// where it entered.
func TestF2_UpdateStartsForwardingBesidePeeks(t *testing.T) {
	e := newEnv(t)
	dest := e.queue("dest", nil)
	q := e.queue("q", nil)
	r := e.receiver(q, nil)
	const rounds = 100
	stop, done := make(chan struct{}), make(chan struct{})
	var peeked []*minibus.ReceivedMessage
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			ms, err := r.PeekMessages(e.ctx, 10, &minibus.PeekMessagesOptions{FromSequenceNumber: 1})
			assert.NoError(t, err)
			peeked = append(peeked, ms...)
		}
	}()
	var seqs []int64
	for i := range rounds {
		// Scheduled for now: enqueued at once, its number returned (S1).
		s, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{MessageID: strconv.Itoa(i)}}, epoch, nil)
		require.NoError(t, err)
		seqs = append(seqs, s...)
		_, err = e.ns.UpdateQueue("q", minibus.QueueProperties{ForwardTo: "dest"})
		require.NoError(t, err)
		_, err = e.ns.UpdateQueue("q", minibus.QueueProperties{})
		require.NoError(t, err)
	}
	close(stop)
	<-done
	for _, m := range peeked {
		require.Zero(t, m.EnqueuedSequenceNumber, "peeked in q: %s", m.MessageID)
	}
	got := e.receive(e.receiver(dest, nil), rounds)
	for i, m := range got {
		require.Equal(t, strconv.Itoa(i), m.MessageID)
		require.Equal(t, seqs[i], m.EnqueuedSequenceNumber)
	}
	require.EqualValues(t, rounds, dest.RuntimeProperties().ActiveMessageCount)
	require.Zero(t, q.RuntimeProperties().ActiveMessageCount)
}
