package minibus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// Q1: sequence numbers 1, 2, 3 … per queue, no gaps, no reuse. Q3:
// EnqueuedTime is the clock's now at enqueue. Q4: receive order is sequence
// order.
func TestQ1_Q3_SequenceNumbersAndEnqueuedTime(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	other := e.queue("other", nil)
	e.send(q, "a", "b")
	e.send(other, "x")
	e.mock.Add(time.Second)
	e.send(q, "c")
	r := e.receiver(q, &minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
	got := e.receive(r, 3)
	require.Equal(t, []int64{1, 2, 3}, seqs(got))
	require.True(t, got[0].EnqueuedTime.Equal(epoch))
	require.True(t, got[2].EnqueuedTime.Equal(at(time.Second)))
	e.send(q, "d")
	require.Equal(t, []int64{4}, seqs(e.receive(r, 1)), "numbers are not reused after removal")
	ro := e.receiver(other, nil)
	require.Equal(t, []int64{1}, seqs(e.receive(ro, 1)), "numbering is per queue")
}

// DD2, V4: a message sent without MessageID gets a random one; fields come
// back as sent; the broker copied the body and properties.
func TestMessageFieldsRoundTrip(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	body := []byte("body")
	props := map[string]any{"s": "x", "i": 1, "f": 1.5, "b": true, "t": epoch, "d": time.Second, "raw": []byte("r"), "nil": nil}
	sent := &minibus.Message{
		MessageID: "id-1", Body: body, ContentType: "text/plain", CorrelationID: "corr", Subject: "subj",
		To: "to", ReplyTo: "reply", ReplyToSessionID: "rs", PartitionKey: "pk",
		TimeToLive: time.Hour, ApplicationProperties: props,
	}
	require.NoError(t, q.SendMessage(e.ctx, sent, nil))
	body[0] = 'X'
	props["s"] = "changed"
	props["raw"].([]byte)[0] = 'X'
	require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{}, nil))

	r := e.receiver(q, nil)
	got := e.receive(r, 2)
	m := got[0]
	require.Equal(t, "body", string(m.Body))
	require.Equal(t, "id-1", m.MessageID)
	require.Equal(t, "text/plain", m.ContentType)
	require.Equal(t, "corr", m.CorrelationID)
	require.Equal(t, "subj", m.Subject)
	require.Equal(t, "to", m.To)
	require.Equal(t, "reply", m.ReplyTo)
	require.Equal(t, "rs", m.ReplyToSessionID)
	require.Equal(t, "pk", m.PartitionKey)
	require.Equal(t, time.Hour, m.TimeToLive)
	require.True(t, m.ExpiresAt.Equal(at(time.Hour)))
	require.Equal(t, "x", m.ApplicationProperties["s"])
	require.Equal(t, []byte("r"), m.ApplicationProperties["raw"])
	require.Len(t, m.ApplicationProperties, len(props))

	require.Len(t, got[1].MessageID, 32, "DD2: a random id")
	require.NotEqual(t, got[1].MessageID, e.receiveAllAfterSend(q, r).MessageID)
}

// receiveAllAfterSend sends an empty message and receives it.
func (e *env) receiveAllAfterSend(q *minibus.Queue, r *minibus.Receiver) *minibus.ReceivedMessage {
	e.t.Helper()
	require.NoError(e.t, q.SendMessage(e.ctx, &minibus.Message{}, nil))
	return e.receive(r, 1)[0]
}

// Bad messages are ErrInvalidArgument naming the message and field, and a
// batch with one bad message enqueues nothing.
func TestSendBadInput(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	long := strings.Repeat("x", 129)
	for _, c := range []struct {
		msgs []*minibus.Message
		why  string
	}{
		{nil, "no messages"},
		{[]*minibus.Message{{}, nil}, "message 1 is nil"},
		{[]*minibus.Message{{MessageID: long}}, "message 0: MessageID is 129 characters"},
		{[]*minibus.Message{{SessionID: long}}, "SessionID"},
		{[]*minibus.Message{{PartitionKey: long}}, "PartitionKey"},
		{[]*minibus.Message{{TimeToLive: -time.Second}}, "TimeToLive -1s is negative"},
		{[]*minibus.Message{{}, {ApplicationProperties: map[string]any{"m": map[string]int{}}}}, `message 1: application property "m" has unsupported type map[string]int`},
		{[]*minibus.Message{{ApplicationProperties: map[string]any{"s": struct{}{}}}}, "unsupported type struct {}"},
	} {
		requireSentinel(t, q.SendMessages(e.ctx, c.msgs, nil), minibus.ErrInvalidArgument, c.why)
		_, err := q.ScheduleMessages(e.ctx, c.msgs, at(time.Hour), nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, c.why)
	}
	requireSentinel(t, q.SendMessage(e.ctx, nil, nil), minibus.ErrInvalidArgument, "message 0 is nil")
	require.Zero(t, q.RuntimeProperties().TotalMessageCount)
}

// V3: a message larger than MaxMessageSizeInKilobytes is
// ErrMessageTooLarge; a send that would pass MaxSizeInMegabytes is
// ErrQuotaExceeded; a batch is all or nothing.
func TestV3_SizeLimits(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{MaxMessageSizeInKilobytes: 1, MaxSizeInMegabytes: 1})
	require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{MessageID: "m", Body: make([]byte, 1023)}, nil), "1 KiB exactly")
	err := q.SendMessage(e.ctx, &minibus.Message{MessageID: "m", Body: make([]byte, 1024)}, nil)
	requireSentinel(t, err, minibus.ErrMessageTooLarge, "message 0 is 1025 bytes")
	err = q.SendMessage(e.ctx, &minibus.Message{MessageID: "m", Body: make([]byte, 1000), ApplicationProperties: map[string]any{"p": strings.Repeat("x", 30)}}, nil)
	requireSentinel(t, err, minibus.ErrMessageTooLarge, "1032 bytes")
	require.EqualValues(t, 1024, q.RuntimeProperties().SizeInBytes)

	// Fill to exactly 1 MiB, in batches of 64 messages of 1 KiB.
	batch := make([]*minibus.Message, 64)
	for i := range batch {
		batch[i] = &minibus.Message{MessageID: "m", Body: make([]byte, 1023)}
	}
	for range 15 {
		require.NoError(t, q.SendMessages(e.ctx, batch, nil))
	}
	require.NoError(t, q.SendMessages(e.ctx, batch[:63], nil))
	require.EqualValues(t, 1<<20, q.RuntimeProperties().SizeInBytes)
	err = q.SendMessage(e.ctx, &minibus.Message{MessageID: "m"}, nil)
	requireSentinel(t, err, minibus.ErrQuotaExceeded, "MaxSizeInMegabytes")
	require.EqualValues(t, 1024, q.RuntimeProperties().ActiveMessageCount, "nothing was enqueued")

	r := e.receiver(q, &minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
	e.receive(r, 2)
	err = q.SendMessages(e.ctx, batch[:3], nil)
	requireSentinel(t, err, minibus.ErrQuotaExceeded, "plus 3072 bytes")
	require.NoError(t, q.SendMessages(e.ctx, batch[:2], nil))
}
