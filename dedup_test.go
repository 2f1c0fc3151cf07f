package minibus_test

import (
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// DD1: a message whose MessageID was accepted within the window is accepted
// without error and dropped, taking no sequence number; at the window's
// end a resend is new.
func TestDD1_DuplicatesDropped(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{RequiresDuplicateDetection: true, DuplicateDetectionHistoryTimeWindow: time.Minute})
	send := func(id string) {
		require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{MessageID: id, Body: []byte(id)}, nil))
	}
	send("a")
	e.mock.Add(time.Minute - 1)
	send("a") // a duplicate: dropped
	require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount)
	e.mock.Add(1)
	send("a") // the window ended: new
	send("b")
	r := e.receiver(q, nil)
	ms := e.receive(r, 3)
	require.Equal(t, []int64{1, 2, 3}, seqs(ms), "a dropped duplicate takes no number")
	require.Equal(t, []string{"a", "a", "b"}, bodies(ms))
}

// DD1: inside one call a MessageID repeated later in the batch is dropped;
// a batch refused as a whole records no id; scheduled messages count when
// scheduled, and ScheduleMessages gives a dropped one the number 0.
func TestDD1_BatchesAndSchedules(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{RequiresDuplicateDetection: true, MaxMessageSizeInKilobytes: 1})
	require.NoError(t, q.SendMessages(e.ctx, []*minibus.Message{{MessageID: "x"}, {MessageID: "y"}, {MessageID: "x"}}, nil))
	require.EqualValues(t, 2, q.RuntimeProperties().ActiveMessageCount)
	err := q.SendMessages(e.ctx, []*minibus.Message{{MessageID: "z"}, {MessageID: "big", Body: make([]byte, 2048)}}, nil)
	require.ErrorIs(t, err, minibus.ErrMessageTooLarge)
	require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{MessageID: "z"}, nil), "the refused batch recorded no id")
	require.EqualValues(t, 3, q.RuntimeProperties().ActiveMessageCount)

	nums, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{MessageID: "s"}, {MessageID: "x"}, {MessageID: "s"}}, at(time.Hour), nil)
	require.NoError(t, err)
	require.Equal(t, []int64{4, 0, 0}, nums)
	require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{MessageID: "s"}, nil))
	require.EqualValues(t, 1, q.RuntimeProperties().ScheduledMessageCount)
	require.EqualValues(t, 3, q.RuntimeProperties().ActiveMessageCount, "s counted when scheduled")
}

// DD1 on a topic: the duplicate is dropped before any subscription sees it.
func TestDD1_Topic(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", &minibus.TopicProperties{RequiresDuplicateDetection: true})
	s := e.subscription(top, "s", nil)
	for range 3 {
		require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{MessageID: "m"}, nil))
	}
	require.EqualValues(t, 1, s.RuntimeProperties().ActiveMessageCount)
}

// DD1: the history forgets ids as time moves, so it holds about one window
// of them however long the queue lives.
func TestDD1_HistoryBounded(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{RequiresDuplicateDetection: true, DuplicateDetectionHistoryTimeWindow: time.Minute})
	for i := range 600 {
		require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{MessageID: string(rune('a'+i%26)) + time.Duration(i).String()}, nil))
		e.mock.Add(time.Second)
	}
	require.LessOrEqual(t, minibus.DuplicateHistory(q), 61, "about one window: 60 ids a minute")
	e.mock.Add(time.Minute)
	q.RuntimeProperties() // any call catches up
	require.Zero(t, minibus.DuplicateHistory(q))
}

// DD2: a message sent without MessageID gets a random one.
func TestDD2_BrokerMadeIDs(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{RequiresDuplicateDetection: true})
	e.send(q, "a", "b")
	ms := e.receive(e.receiver(q, nil), 2)
	require.Len(t, ms[0].MessageID, 32)
	require.NotEqual(t, ms[0].MessageID, ms[1].MessageID, "never duplicates of each other")
}

// DD1, T2: a scheduled message's MessageID counts from when it is
// scheduled, not from its activation: a resend one nanosecond before
// scheduling + window is dropped, one at that instant is new; the
// scheduled message still activates. A schedule at or before now enqueues
// at once and records the id then.
func TestDD1_ScheduledIDsCountWhenScheduled(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{RequiresDuplicateDetection: true, DuplicateDetectionHistoryTimeWindow: time.Minute})
	e.advanceTo(10 * time.Second)
	nums, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{MessageID: "s", Body: []byte("scheduled")}}, at(time.Hour), nil)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, nums)
	e.advanceTo(10*time.Second + time.Minute - 1)
	require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{MessageID: "s", Body: []byte("early")}, nil))
	rp := q.RuntimeProperties()
	require.EqualValues(t, 1, rp.ScheduledMessageCount)
	require.Zero(t, rp.ActiveMessageCount, "a duplicate of the scheduled message")
	e.advanceTo(10*time.Second + time.Minute)
	require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{MessageID: "s", Body: []byte("late")}, nil))
	require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount, "the window ended at scheduling + window")
	e.advanceTo(time.Hour)
	r := e.receiver(q, nil)
	ms := e.receive(r, 2)
	require.Equal(t, []string{"late", "scheduled"}, bodies(ms), "activation is not a send: no duplicate check")
	require.Equal(t, []int64{2, 3}, seqs(ms))

	nums, err = q.ScheduleMessages(e.ctx, []*minibus.Message{{MessageID: "p"}}, at(time.Minute), nil)
	require.NoError(t, err)
	require.Equal(t, []int64{4}, nums, "a past time enqueues at once")
	require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{MessageID: "p"}, nil))
	require.EqualValues(t, 3, q.RuntimeProperties().ActiveMessageCount, "p recorded when enqueued")
}

// DD1 on a topic: a scheduled message's id counts when it is scheduled.
func TestDD1_TopicScheduled(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", &minibus.TopicProperties{RequiresDuplicateDetection: true, DuplicateDetectionHistoryTimeWindow: time.Minute})
	s := e.subscription(top, "s", nil)
	_, err := top.ScheduleMessages(e.ctx, []*minibus.Message{{MessageID: "x"}}, at(time.Hour), nil)
	require.NoError(t, err)
	e.advanceTo(time.Minute - 1)
	require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{MessageID: "x"}, nil))
	require.Zero(t, s.RuntimeProperties().ActiveMessageCount, "dropped before any subscription")
	e.advanceTo(time.Minute)
	require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{MessageID: "x"}, nil))
	require.EqualValues(t, 1, s.RuntimeProperties().ActiveMessageCount)
	e.advanceTo(time.Hour)
	require.EqualValues(t, 2, s.RuntimeProperties().ActiveMessageCount)
}

// DD1: in a large call (more than eight messages) a MessageID repeated
// later is dropped as in a small one, taking no sequence number.
func TestDD1_LargeBatch(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{RequiresDuplicateDetection: true})
	ids := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "3", "9", "9", "0"}
	msgs := make([]*minibus.Message, len(ids))
	for i, id := range ids {
		msgs[i] = &minibus.Message{MessageID: id, Body: []byte(id)}
	}
	require.NoError(t, q.SendMessages(e.ctx, msgs, nil))
	ms := e.receiveAll(e.receiver(q, nil), 100)
	require.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, bodies(ms))
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, seqs(ms))

	for i, id := range ids {
		msgs[i] = &minibus.Message{MessageID: "s" + id}
	}
	nums, err := q.ScheduleMessages(e.ctx, msgs, at(time.Hour), nil)
	require.NoError(t, err)
	require.Equal(t, []int64{11, 12, 13, 14, 15, 16, 17, 18, 19, 0, 20, 0, 0}, nums)
}

// DD1, V3: a batch the quota refuses as a whole records no id, on a queue
// and on a topic.
func TestDD1_QuotaRefusedBatchRecordsNothing(t *testing.T) {
	e := newEnv(t)
	big := func(id string) *minibus.Message {
		return &minibus.Message{MessageID: id, Body: make([]byte, 600<<10)}
	}
	q := e.queue("q", &minibus.QueueProperties{RequiresDuplicateDetection: true, MaxSizeInMegabytes: 1, MaxMessageSizeInKilobytes: 1024})
	err := q.SendMessages(e.ctx, []*minibus.Message{big("a"), big("b")}, nil)
	require.ErrorIs(t, err, minibus.ErrQuotaExceeded)
	require.NoError(t, q.SendMessages(e.ctx, []*minibus.Message{{MessageID: "a"}, {MessageID: "b"}}, nil))
	require.EqualValues(t, 2, q.RuntimeProperties().ActiveMessageCount)

	top := e.topic("t", &minibus.TopicProperties{RequiresDuplicateDetection: true, MaxSizeInMegabytes: 1, MaxMessageSizeInKilobytes: 1024})
	s := e.subscription(top, "s", nil)
	err = top.SendMessages(e.ctx, []*minibus.Message{big("a"), big("b")}, nil)
	require.ErrorIs(t, err, minibus.ErrQuotaExceeded)
	require.NoError(t, top.SendMessages(e.ctx, []*minibus.Message{{MessageID: "a"}, {MessageID: "b"}}, nil))
	require.EqualValues(t, 2, s.RuntimeProperties().ActiveMessageCount)
}

// DD1, F2: a forwarded message is a new enqueue in its destination, under
// the destination's duplicate detection: a MessageID it accepted within
// its window is dropped there, and that is not a transfer failure.
func TestDD1_ForwardedIntoDuplicateDetection(t *testing.T) {
	e := newEnv(t)
	dest := e.queue("dest", &minibus.QueueProperties{RequiresDuplicateDetection: true, DuplicateDetectionHistoryTimeWindow: time.Minute})
	src := e.queue("src", &minibus.QueueProperties{ForwardTo: "dest"})
	for range 2 {
		require.NoError(t, src.SendMessage(e.ctx, &minibus.Message{MessageID: "x"}, nil))
	}
	require.NoError(t, dest.SendMessage(e.ctx, &minibus.Message{MessageID: "x"}, nil))
	require.EqualValues(t, 1, dest.RuntimeProperties().ActiveMessageCount)
	require.Zero(t, src.RuntimeProperties().TotalMessageCount, "dropped, not transfer-dead-lettered")
	e.advanceTo(time.Minute)
	require.NoError(t, src.SendMessage(e.ctx, &minibus.Message{MessageID: "x"}, nil))
	require.EqualValues(t, 2, dest.RuntimeProperties().ActiveMessageCount, "the destination's window ended")
}

// DD2: without duplicate detection too, a message sent without MessageID
// gets a random one; one sent with a MessageID keeps it.
func TestDD2_BrokerMadeIDsWithoutDetection(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	require.NoError(t, q.SendMessages(e.ctx, []*minibus.Message{{}, {}, {MessageID: "mine"}}, nil))
	ms := e.receive(e.receiver(q, nil), 3)
	require.Len(t, ms[0].MessageID, 32)
	require.Len(t, ms[1].MessageID, 32)
	require.NotEqual(t, ms[0].MessageID, ms[1].MessageID)
	require.Equal(t, "mine", ms[2].MessageID)
}

// DD2: a broker-made id is the same wherever it shows: in the events, in a
// peek and in a receive, also when one call receives messages whose id an
// event or duplicate detection made already with others whose id it makes
// now.
func TestDD2_BrokerMadeIDsAgree(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx
	j := &journal{}
	ns := minibus.NewNamespace(minibus.WithObserver(j.record))
	defer ns.Close()
	q, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	require.NoError(t, q.SendMessages(ctx, []*minibus.Message{{}, {}, {MessageID: "mine"}}, nil))
	sent := eventIDs(j.all(), minibus.EventSent)
	require.Len(t, sent, 3)
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(ctx)
	peeked, err := r.PeekMessages(ctx, 3, nil)
	require.NoError(t, err)
	received, err := r.ReceiveMessages(ctx, 3, nil)
	require.NoError(t, err)
	for i, id := range sent {
		require.Equal(t, id, peeked[i].MessageID)
		require.Equal(t, id, received[i].MessageID)
	}

	// Without events: duplicate detection at src makes the id of what it
	// forwards; dst makes the other's when it is received.
	dst := e.queue("dst", nil)
	src := e.queue("src", &minibus.QueueProperties{RequiresDuplicateDetection: true, ForwardTo: "dst"})
	require.NoError(t, src.SendMessage(e.ctx, &minibus.Message{}, nil))
	require.NoError(t, dst.SendMessage(e.ctx, &minibus.Message{}, nil))
	rd := e.receiver(dst, nil)
	peeked, err = rd.PeekMessages(e.ctx, 2, nil)
	require.NoError(t, err)
	ms := e.receive(rd, 2)
	require.Len(t, ms[0].MessageID, 32)
	require.Len(t, ms[1].MessageID, 32)
	require.NotEqual(t, ms[0].MessageID, ms[1].MessageID)
	require.Equal(t, []string{peeked[0].MessageID, peeked[1].MessageID}, []string{ms[0].MessageID, ms[1].MessageID})
}
