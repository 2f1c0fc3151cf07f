package e2e_test

// Every Sender method of azservicebus, over the wire against server.Listen
// (SEMANTICS W4, S1–S4, V3).

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
)

// TestSDKSender_SendMessage_W4_EveryField sends one message with every
// field the SDK's Message has and reads it in process: what minibus keeps
// is what the SDK sent (W4), application properties in the Go types their
// AMQP encodings decode to.
func TestSDKSender_SendMessage_W4_EveryField(t *testing.T) {
	e := newSDKEnv(t)
	q := e.queue("orders", nil)
	s := e.sender("orders")
	stamp := time.Date(2025, 6, 1, 12, 30, 0, 123_000_000, time.UTC)
	require.NoError(t, s.SendMessage(e.ctx(sdkTimeout), &azservicebus.Message{
		MessageID:        sdkPtr("m-1"),
		Body:             []byte("hello"),
		ContentType:      sdkPtr("text/plain"),
		CorrelationID:    sdkPtr("c-1"),
		Subject:          sdkPtr("greeting"),
		To:               sdkPtr("someone"),
		ReplyTo:          sdkPtr("replies"),
		ReplyToSessionID: sdkPtr("rs-1"),
		PartitionKey:     sdkPtr("pk"),
		TimeToLive:       sdkPtr(90 * time.Second),
		ApplicationProperties: map[string]any{
			"str": "x", "int": 7, "int32": int32(-3), "int64": int64(1) << 40,
			"uint8": uint8(200), "float64": 1.5, "bool": true, "time": stamp,
			"bin": []byte{1, 2, 3},
		},
	}, nil))

	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	got, err := r.PeekMessages(e.ctx(sdkTimeout), 10, nil)
	require.NoError(t, err)
	require.Len(t, got, 1)
	m := got[0]
	require.Equal(t, "m-1", m.MessageID)
	require.Equal(t, "hello", string(m.Body))
	require.Equal(t, "text/plain", m.ContentType)
	require.Equal(t, "c-1", m.CorrelationID)
	require.Equal(t, "greeting", m.Subject)
	require.Equal(t, "someone", m.To)
	require.Equal(t, "replies", m.ReplyTo)
	require.Equal(t, "rs-1", m.ReplyToSessionID)
	require.Equal(t, "pk", m.PartitionKey)
	require.Equal(t, 90*time.Second, m.TimeToLive)
	require.Equal(t, int64(1), m.SequenceNumber)
	require.True(t, m.EnqueuedTime.Equal(e.now()), "EnqueuedTime %v is the clock's now (Q3)", m.EnqueuedTime)
	require.True(t, m.ExpiresAt.Equal(e.now().Add(90*time.Second)), "E2")
	p := m.ApplicationProperties
	require.Equal(t, "x", p["str"])
	require.Equal(t, int64(7), p["int"], "a Go int goes out as an AMQP long")
	require.Equal(t, int32(-3), p["int32"])
	require.Equal(t, int64(1)<<40, p["int64"])
	require.Equal(t, uint8(200), p["uint8"])
	require.Equal(t, 1.5, p["float64"])
	require.Equal(t, true, p["bool"])
	require.IsType(t, time.Time{}, p["time"])
	require.True(t, stamp.Equal(p["time"].(time.Time)))
	require.Equal(t, []byte{1, 2, 3}, p["bin"])
	require.Len(t, p, 9)
	require.NoError(t, r.Close(e.ctx(sdkTimeout)))
}

// TestSDKSender_SendMessageBatch_W4_MaxMessageSize fills a batch sized by
// the sender link's max-message-size (the entity's
// MaxMessageSizeInKilobytes × 1024, W4) until the SDK refuses a message,
// sends it as one transfer of format 0x80013700 and finds every message
// enqueued, in order, under consecutive sequence numbers (Q1).
func TestSDKSender_SendMessageBatch_W4_MaxMessageSize(t *testing.T) {
	e := newSDKEnv(t)
	for _, tc := range []struct {
		queue string
		kib   int64
	}{{"small", 64}, {"default", 0}, {"big", 1024}} {
		t.Run(tc.queue, func(t *testing.T) {
			q := e.queue(tc.queue, &minibus.QueueProperties{MaxMessageSizeInKilobytes: tc.kib})
			limit := int(q.Properties().MaxMessageSizeInKilobytes) * 1024
			s := e.sender(tc.queue)
			batch, err := s.NewMessageBatch(e.ctx(sdkTimeout), nil)
			require.NoError(t, err)
			body := make([]byte, 1024)
			n := 0
			for {
				err := batch.AddMessage(&azservicebus.Message{MessageID: sdkPtr(fmt.Sprint(n)), Body: body}, nil)
				if errors.Is(err, azservicebus.ErrMessageTooLarge) {
					break
				}
				require.NoError(t, err)
				n++
			}
			require.Equal(t, int32(n), batch.NumMessages())
			require.LessOrEqual(t, int(batch.NumBytes()), limit)
			require.Greater(t, n, limit/1024*9/10, "the batch is sized by the entity's limit, %d bytes", limit)
			require.NoError(t, s.SendMessageBatch(e.ctx(sdkTimeout), batch, nil))

			c := q.RuntimeProperties()
			require.Equal(t, int64(n), c.ActiveMessageCount)
			r, err := q.NewReceiver(&minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
			require.NoError(t, err)
			defer r.Close(e.ctx(sdkTimeout))
			got, err := r.ReceiveMessages(e.ctx(sdkTimeout), n, nil)
			require.NoError(t, err)
			require.Len(t, got, n)
			for i, m := range got {
				require.Equal(t, fmt.Sprint(i), m.MessageID)
				require.Equal(t, int64(i+1), m.SequenceNumber)
				require.Len(t, m.Body, 1024)
			}
		})
	}
}

// TestSDKSender_ScheduleAndCancel_S1_S2_S3_S4 schedules two messages
// through $management (schedule-message, W8), cancels one
// (cancel-scheduled-message), and moves the mock clock: the other is not
// received a second before its time and is received at it, under a new
// sequence number, enqueued at its scheduled time.
func TestSDKSender_ScheduleAndCancel_S1_S2_S3_S4(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", nil)
	s := e.sender("orders")
	r := e.receiver("orders", nil)
	at := e.now().Add(time.Hour)
	seqs, err := s.ScheduleMessages(e.ctx(sdkTimeout), []*azservicebus.Message{
		{Body: []byte("a")}, {Body: []byte("b"), ApplicationProperties: map[string]any{"k": "v"}},
	}, at, nil)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, seqs, "S1: a sequence number each")
	c := e.queueCounts("orders")
	require.Equal(t, int64(2), c.ScheduledMessageCount)
	require.Zero(t, c.ActiveMessageCount)

	peeked, err := r.PeekMessages(e.ctx(sdkTimeout), 10, nil)
	require.NoError(t, err)
	require.Len(t, peeked, 2, "S2: peek shows scheduled messages")
	for i, m := range peeked {
		require.Equal(t, azservicebus.MessageStateScheduled, m.State)
		require.Equal(t, seqs[i], *m.SequenceNumber)
		require.True(t, at.Equal(*m.ScheduledEnqueueTime))
	}

	require.NoError(t, s.CancelScheduledMessages(e.ctx(sdkTimeout), seqs[:1], nil))
	require.Equal(t, int64(1), e.queueCounts("orders").ScheduledMessageCount, "S3")
	err = s.CancelScheduledMessages(e.ctx(sdkTimeout), seqs[:1], nil)
	require.Equal(t, azservicebus.CodeNotFound, sdkCode(err), "S3: cancelling it again is message-not-found (404): %v", err)
	require.Equal(t, int64(1), e.queueCounts("orders").ScheduledMessageCount, "nothing cancelled")

	// ScheduleAMQPAnnotatedMessages: the same operation with raw messages.
	rawSeqs, err := s.ScheduleAMQPAnnotatedMessages(e.ctx(sdkTimeout), []*azservicebus.AMQPAnnotatedMessage{
		{Body: azservicebus.AMQPAnnotatedMessageBody{Data: [][]byte{[]byte("raw")}}},
	}, at, nil)
	require.NoError(t, err)
	require.Equal(t, []int64{3}, rawSeqs)
	require.NoError(t, s.CancelScheduledMessages(e.ctx(sdkTimeout), rawSeqs, nil))
	require.Equal(t, int64(1), e.queueCounts("orders").ScheduledMessageCount)

	e.advance(time.Hour - time.Second)
	e.receiveNone(r)
	e.advance(time.Second)
	got := e.receiveN(r, 1)
	m := got[0]
	require.Equal(t, "b", string(m.Body))
	require.Equal(t, map[string]any{"k": "v"}, m.ApplicationProperties)
	require.Equal(t, int64(4), *m.SequenceNumber, "S4: a new sequence number at activation")
	require.True(t, at.Equal(*m.EnqueuedTime), "S4: EnqueuedTime is the scheduled time")
	require.Equal(t, uint32(1), m.DeliveryCount)
	require.NoError(t, r.CompleteMessage(e.ctx(sdkTimeout), m, nil))
	require.Zero(t, e.queueCounts("orders").TotalMessageCount)
}

// TestSDKSender_ScheduledEnqueueTime_W4 sends a message whose
// ScheduledEnqueueTime is in the future: the annotation
// x-opt-scheduled-enqueue-time schedules it (W4, S1) and it activates when
// the mock clock reaches it.
func TestSDKSender_ScheduledEnqueueTime_W4(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", nil)
	s := e.sender("orders")
	r := e.receiver("orders", nil)
	at := e.now().Add(30 * time.Minute)
	require.NoError(t, s.SendMessage(e.ctx(sdkTimeout), &azservicebus.Message{Body: []byte("later"), ScheduledEnqueueTime: &at}, nil))
	// A scheduled time in the past enqueues at once (S1).
	past := e.now().Add(-time.Minute)
	require.NoError(t, s.SendMessage(e.ctx(sdkTimeout), &azservicebus.Message{Body: []byte("now"), ScheduledEnqueueTime: &past}, nil))
	c := e.queueCounts("orders")
	require.Equal(t, int64(1), c.ScheduledMessageCount)
	require.Equal(t, int64(1), c.ActiveMessageCount)

	got := e.receiveN(r, 1)
	require.Equal(t, "now", string(got[0].Body))
	require.True(t, e.now().Equal(*got[0].EnqueuedTime))
	require.NoError(t, r.CompleteMessage(e.ctx(sdkTimeout), got[0], nil))

	e.advance(30*time.Minute - time.Millisecond)
	e.receiveNone(r)
	e.advance(time.Millisecond)
	got = e.receiveN(r, 1)
	require.Equal(t, "later", string(got[0].Body))
	require.True(t, at.Equal(*got[0].EnqueuedTime))
	require.Equal(t, azservicebus.MessageStateActive, got[0].State)
	require.NoError(t, r.CompleteMessage(e.ctx(sdkTimeout), got[0], nil))
}

// TestSDKSender_SendAMQPAnnotatedMessage_W4 sends raw AMQP messages: an
// amqp-value string body and several data sections become the message's
// body bytes, the properties section its fields, the header's TTL its
// TimeToLive (W4); an amqp-sequence body is refused with
// amqp:not-allowed (W4) and nothing is enqueued.
func TestSDKSender_SendAMQPAnnotatedMessage_W4(t *testing.T) {
	e := newSDKEnv(t)
	q := e.queue("orders", nil)
	s := e.sender("orders")
	ctx := e.ctx(sdkTimeout)
	require.NoError(t, s.SendAMQPAnnotatedMessage(ctx, &azservicebus.AMQPAnnotatedMessage{
		Body: azservicebus.AMQPAnnotatedMessageBody{Value: "hello"},
		Properties: &azservicebus.AMQPAnnotatedMessageProperties{
			MessageID: "amqp-1", Subject: sdkPtr("raw"), GroupID: nil, CorrelationID: uint64(42),
		},
		Header:                &azservicebus.AMQPAnnotatedMessageHeader{TTL: time.Minute},
		ApplicationProperties: map[string]any{"k": "v"},
		MessageAnnotations:    map[any]any{"x-opt-message-test": "test-annotation-value"},
		DeliveryAnnotations:   map[any]any{"x-opt-delivery-test": "test-annotation-value"},
	}, nil))
	require.NoError(t, s.SendAMQPAnnotatedMessage(ctx, &azservicebus.AMQPAnnotatedMessage{
		Body: azservicebus.AMQPAnnotatedMessageBody{Data: [][]byte{[]byte("ab"), []byte("cd")}},
	}, nil))
	err := s.SendAMQPAnnotatedMessage(ctx, &azservicebus.AMQPAnnotatedMessage{
		Body: azservicebus.AMQPAnnotatedMessageBody{Sequence: [][]any{{"x", int64(1)}}},
	}, nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), "amqp:not-allowed")
	require.Contains(t, err.Error(), "amqp-sequence", "the refusal names the culprit")

	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(ctx)
	got, err := r.PeekMessages(ctx, 10, nil)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "hello", string(got[0].Body))
	require.Equal(t, "amqp-1", got[0].MessageID)
	require.Equal(t, "raw", got[0].Subject)
	require.Equal(t, "42", got[0].CorrelationID, "a ulong id is kept in decimal")
	require.Equal(t, time.Minute, got[0].TimeToLive)
	require.Equal(t, map[string]any{"k": "v"}, got[0].ApplicationProperties)
	require.Equal(t, "abcd", string(got[1].Body))
	require.NotEmpty(t, got[1].MessageID, "DD2: a message without MessageID gets one")
}

// TestSDKSender_BodiesBothWays_V4 sends an empty body, a nil body and a
// 200 KiB body (above one 64 KiB frame: multi-frame transfers both ways,
// W1) and reads each back through the SDK byte for byte.
func TestSDKSender_BodiesBothWays_V4_W1(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("big", &minibus.QueueProperties{MaxMessageSizeInKilobytes: 1024})
	s := e.sender("big")
	r := e.receiver("big", nil)
	large := []byte(strings.Repeat("0123456789abcdef", 200*1024/16))
	for i := range large {
		large[i] ^= byte(i / 16)
	}
	ctx := e.ctx(sdkTimeout)
	require.NoError(t, s.SendMessage(ctx, &azservicebus.Message{Body: large, ApplicationProperties: map[string]any{"n": 1}}, nil))
	require.NoError(t, s.SendMessage(ctx, &azservicebus.Message{Body: []byte{}}, nil))
	got := e.receiveN(r, 2)
	require.Equal(t, large, got[0].Body)
	require.Equal(t, int64(1), got[0].ApplicationProperties["n"])
	require.Empty(t, got[1].Body)
	for _, m := range got {
		require.NoError(t, r.CompleteMessage(ctx, m, nil))
	}

	// And several 200 KiB messages back to back, sent as one batch.
	batch, err := s.NewMessageBatch(ctx, nil)
	require.NoError(t, err)
	for range 4 {
		require.NoError(t, batch.AddMessage(&azservicebus.Message{Body: large}, nil))
	}
	require.NoError(t, s.SendMessageBatch(ctx, batch, nil))
	got = e.receiveN(r, 4)
	for _, m := range got {
		require.Equal(t, large, m.Body)
		require.NoError(t, r.CompleteMessage(ctx, m, nil))
	}
	require.Zero(t, e.queueCounts("big").TotalMessageCount)
}

// TestSDKSender_DuplicateDetection_DD1 sends the same MessageID twice to a
// queue with duplicate detection: both sends succeed and one message is
// kept (DD1); the id is forgotten when the window has passed on the mock
// clock.
func TestSDKSender_DuplicateDetection_DD1(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("dedup", &minibus.QueueProperties{RequiresDuplicateDetection: true, DuplicateDetectionHistoryTimeWindow: time.Minute})
	s := e.sender("dedup")
	ctx := e.ctx(sdkTimeout)
	for range 2 {
		require.NoError(t, s.SendMessage(ctx, &azservicebus.Message{MessageID: sdkPtr("once"), Body: []byte("x")}, nil))
	}
	require.Equal(t, int64(1), e.queueCounts("dedup").ActiveMessageCount)
	e.advance(time.Minute)
	require.NoError(t, s.SendMessage(ctx, &azservicebus.Message{MessageID: sdkPtr("once"), Body: []byte("y")}, nil))
	require.Equal(t, int64(2), e.queueCounts("dedup").ActiveMessageCount)
}
