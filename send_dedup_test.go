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
