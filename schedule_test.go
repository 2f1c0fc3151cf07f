package minibus_test

import (
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// S1, S2, S4, Q1, E2: a scheduled message takes a sequence number when
// scheduled; it is not receivable, peeks as Scheduled and is counted as
// scheduled; at its time it gets a new number, EnqueuedTime = its time, and
// its TTL counts from then (seed: +5m with TTL 10m expires at +15m).
func TestS1_S2_S4_ScheduledLifecycle(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	r := e.receiver(q, nil)
	seqs, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("s"), TimeToLive: 10 * time.Minute}}, at(5*time.Minute), nil)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, seqs)
	e.send(q, "now")

	rp := q.RuntimeProperties()
	require.EqualValues(t, 1, rp.ScheduledMessageCount)
	require.EqualValues(t, 1, rp.ActiveMessageCount)
	require.EqualValues(t, 2, rp.TotalMessageCount)
	p := e.peekAll(r)
	require.Equal(t, []string{"s", "now"}, bodies(p))
	require.Equal(t, minibus.MessageStateScheduled, p[0].State)
	require.True(t, p[0].ScheduledEnqueueTime.Equal(at(5*time.Minute)))
	now := e.receiveAll(r, 10)
	require.Equal(t, []string{"now"}, bodies(now))
	require.NoError(t, r.CompleteMessage(e.ctx, now[0], nil))

	e.mock.Add(5*time.Minute - 1)
	e.requireNothing(r)
	e.mock.Add(1)
	m := e.receive(r, 1)[0]
	require.Equal(t, "s", string(m.Body))
	require.EqualValues(t, 3, m.SequenceNumber, "a new sequence number at activation")
	require.True(t, m.EnqueuedTime.Equal(at(5*time.Minute)))
	require.True(t, m.ExpiresAt.Equal(at(15*time.Minute)), "ExpiresAt %v", m.ExpiresAt)
	require.True(t, m.ScheduledEnqueueTime.Equal(at(5*time.Minute)))
	require.Zero(t, q.RuntimeProperties().ScheduledMessageCount)
	requireSentinel(t, q.CancelScheduledMessages(e.ctx, seqs, nil), minibus.ErrMessageNotFound, "sequence number 1")
}

// S1: a message sent with ScheduledEnqueueTime after now is scheduled; at or
// before now it is enqueued at once under one sequence number, which
// ScheduleMessages returns.
func TestS1_ScheduledEnqueueTime(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	r := e.receiver(q, &minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
	require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{Body: []byte("later"), ScheduledEnqueueTime: at(time.Hour)}, nil))
	require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{Body: []byte("now"), ScheduledEnqueueTime: epoch}, nil))
	got, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("past")}, {Body: []byte("past2")}}, at(-time.Hour), nil)
	require.NoError(t, err)
	require.Equal(t, []int64{3, 4}, got)
	require.EqualValues(t, 1, q.RuntimeProperties().ScheduledMessageCount)
	now := e.receive(r, 3)
	require.Equal(t, []string{"now", "past", "past2"}, bodies(now))
	require.Equal(t, []int64{2, 3, 4}, seqs(now))
	require.True(t, now[1].EnqueuedTime.Equal(epoch), "EnqueuedTime = now")
	e.mock.Add(time.Hour)
	require.Equal(t, []int64{5}, seqs(e.receive(r, 1)))
}

// S1, Q1: ScheduleMessages with a zero time.Time is ErrInvalidArgument and
// schedules, enqueues and numbers nothing, on a queue and on a topic.
func TestS1_ScheduleAtZeroTimeIsInvalid(t *testing.T) {
	t.Run("queue", func(t *testing.T) {
		e := newEnv(t)
		q := e.queue("q", nil)
		got, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("zero")}}, time.Time{}, nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, `queue "q"`)
		require.Nil(t, got)
		require.Zero(t, q.RuntimeProperties().TotalMessageCount, "nothing scheduled or enqueued")
		e.send(q, "next")
		m := e.receive(e.receiver(q, nil), 1)[0]
		require.Equal(t, "next", string(m.Body))
		require.EqualValues(t, 1, m.SequenceNumber, "no number was taken")
	})
	t.Run("topic", func(t *testing.T) {
		e := newEnv(t)
		top := e.topic("t", nil)
		s := e.subscription(top, "s", nil)
		got, err := top.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("zero")}}, time.Time{}, nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, `topic "t"`)
		require.Nil(t, got)
		require.Zero(t, top.RuntimeProperties().ScheduledMessageCount, "nothing scheduled")
		require.Zero(t, s.RuntimeProperties().TotalMessageCount, "nothing enqueued")
		e.send(top, "next")
		m := e.receive(e.receiver(s, nil), 1)[0]
		require.Equal(t, "next", string(m.Body))
		require.EqualValues(t, 1, m.SequenceNumber, "no number was taken")
	})
}

// S3: CancelScheduledMessages deletes them; a number that is not a pending
// scheduled message returns ErrMessageNotFound and cancels nothing.
func TestS3_Cancel(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	sched, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("a")}, {Body: []byte("b")}, {Body: []byte("c")}}, at(time.Minute), nil)
	require.NoError(t, err)
	e.send(q, "active")

	requireSentinel(t, q.CancelScheduledMessages(e.ctx, []int64{sched[0], 4}, nil), minibus.ErrMessageNotFound, "sequence number 4 is not a pending scheduled message")
	requireSentinel(t, q.CancelScheduledMessages(e.ctx, []int64{sched[0], 99}, nil), minibus.ErrMessageNotFound, "99")
	require.EqualValues(t, 3, q.RuntimeProperties().ScheduledMessageCount, "nothing cancelled")

	require.NoError(t, q.CancelScheduledMessages(e.ctx, sched[:2], nil))
	require.EqualValues(t, 1, q.RuntimeProperties().ScheduledMessageCount)
	requireSentinel(t, q.CancelScheduledMessages(e.ctx, sched[:1], nil), minibus.ErrMessageNotFound, "sequence number 1 is not")
	requireSentinel(t, q.CancelScheduledMessages(e.ctx, nil, nil), minibus.ErrInvalidArgument, "no sequence numbers")
	requireSentinel(t, q.CancelScheduledMessages(e.ctx, []int64{-1}, nil), minibus.ErrInvalidArgument, "less than 1")

	e.mock.Add(time.Minute)
	r := e.receiver(q, nil)
	require.Equal(t, []string{"active", "c"}, bodies(e.receiveAll(r, 10)))
	requireSentinel(t, q.CancelScheduledMessages(e.ctx, sched[2:], nil), minibus.ErrMessageNotFound, "sequence number 3 is not")
	_, err = q.ScheduleMessages(e.ctx, nil, at(time.Hour), nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "no messages")
}

// S1, E1: the TTL of a scheduled message is capped by the entity's default
// at activation.
func TestS4_TTLAtActivation(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{DefaultMessageTimeToLive: time.Minute})
	_, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{TimeToLive: time.Hour}}, at(time.Hour), nil)
	require.NoError(t, err)
	e.mock.Add(time.Hour + time.Minute - 1)
	require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount)
	e.mock.Add(1)
	require.Zero(t, q.RuntimeProperties().TotalMessageCount)
}

// S5, S4, Q1: a scheduled message waits in the topic (counted there, not
// peekable in subscriptions) and fans out at activation with a new number,
// under the rules of that time.
func TestS5_ScheduledInTopic(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	s := e.subscription(top, "s", nil)
	scheduled, err := top.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("later")}}, at(time.Minute), nil)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, scheduled)
	require.EqualValues(t, 1, top.RuntimeProperties().ScheduledMessageCount)
	r := e.receiver(s, nil)
	require.Empty(t, e.peekAll(r), "scheduled messages stay in the topic")
	require.NoError(t, s.CreateRule("late", &minibus.RuleProperties{Action: minibus.SQLAction{Expression: "SET late = 1"}}))
	e.mock.Add(time.Minute)
	got := e.receive(r, 2)
	require.Equal(t, []int64{2, 2}, seqs(got))
	require.True(t, got[0].EnqueuedTime.Equal(at(time.Minute)))
	require.Equal(t, int64(1), got[1].ApplicationProperties["late"], "the rule added after scheduling applies")
	require.Zero(t, top.RuntimeProperties().ScheduledMessageCount)

	scheduled, err = top.ScheduleMessages(e.ctx, []*minibus.Message{{}}, at(2*time.Minute), nil)
	require.NoError(t, err)
	require.NoError(t, top.CancelScheduledMessages(e.ctx, scheduled, nil))
	requireSentinel(t, top.CancelScheduledMessages(e.ctx, scheduled, nil), minibus.ErrMessageNotFound, "sequence number 3")
}
