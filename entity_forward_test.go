package minibus_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
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

// T3 across entities: a forwarded message's deadline in its destination
// comes before the source's next event when it is earlier. Here the first
// message fills the destination until it expires at +2m30s; the second
// arrives at +2m45s and fits only if the expiry happened first, although
// the source's two activations could be processed in one visit.
func TestT3_TimeOrderAcrossEntities(t *testing.T) {
	e := newEnv(t)
	dest := e.queue("dest", &minibus.QueueProperties{MaxSizeInMegabytes: 1, MaxMessageSizeInKilobytes: 1024})
	src := e.queue("src", &minibus.QueueProperties{ForwardTo: "dest", MaxMessageSizeInKilobytes: 1024})
	big := func(ttl time.Duration) *minibus.Message {
		return &minibus.Message{Body: make([]byte, 700<<10), TimeToLive: ttl}
	}
	_, err := src.ScheduleMessages(e.ctx, []*minibus.Message{big(30 * time.Second)}, at(2*time.Minute), nil)
	require.NoError(t, err)
	_, err = src.ScheduleMessages(e.ctx, []*minibus.Message{big(0)}, at(2*time.Minute+45*time.Second), nil)
	require.NoError(t, err)
	e.mock.Add(5 * time.Minute) // one jump over all four events
	require.Zero(t, src.RuntimeProperties().TransferDeadLetterMessageCount, "the second fit: the first had expired")
	require.EqualValues(t, 1, dest.RuntimeProperties().ActiveMessageCount)
	m := e.receive(e.receiver(dest, nil), 1)[0]
	require.True(t, m.EnqueuedTime.Equal(at(2*time.Minute+45*time.Second)))
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
