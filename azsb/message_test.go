package azsb_test

import (
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// TestMessageFields: every field of a Message arrives in the
// ReceivedMessage, pointer for pointer, with the broker's fields set.
func TestMessageFields(t *testing.T) {
	e := newEnv(t)
	e.queue("q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
	s := e.sender("q")
	ttl := 10 * time.Minute
	sent := &azservicebus.Message{
		ApplicationProperties: map[string]any{"s": "x", "n": 7, "u": uint(3), "i32": int32(4), "f": 1.5, "b": true, "t": epoch, "raw": []byte{1}, "nil": nil},
		Body:                  []byte("body"),
		ContentType:           ptr("application/json"),
		CorrelationID:         ptr("corr"),
		MessageID:             ptr("id-1"),
		PartitionKey:          ptr("pk"),
		ReplyTo:               ptr("reply"),
		ReplyToSessionID:      ptr("rsid"),
		Subject:               ptr("subject"),
		TimeToLive:            &ttl,
		To:                    ptr("to"),
	}
	require.NoError(t, s.SendMessage(e.ctx, sent, nil))
	r := e.receiver("q", nil)
	m := e.receive(r, 1)[0]

	require.Equal(t, "id-1", m.MessageID)
	require.Equal(t, []byte("body"), m.Body)
	require.Equal(t, "application/json", *m.ContentType)
	require.Equal(t, "corr", *m.CorrelationID)
	require.Equal(t, "pk", *m.PartitionKey)
	require.Equal(t, "reply", *m.ReplyTo)
	require.Equal(t, "rsid", *m.ReplyToSessionID)
	require.Equal(t, "subject", *m.Subject)
	require.Equal(t, "to", *m.To)
	require.Nil(t, m.SessionID)
	require.Equal(t, ttl, *m.TimeToLive)
	require.Equal(t, int64(1), *m.SequenceNumber)
	require.True(t, epoch.Equal(*m.EnqueuedTime))
	require.True(t, epoch.Add(ttl).Equal(*m.ExpiresAt))
	require.True(t, epoch.Add(30*time.Second).Equal(*m.LockedUntil))
	require.NotZero(t, m.LockToken)
	require.Equal(t, uint32(1), m.DeliveryCount)
	require.Equal(t, azservicebus.MessageStateActive, m.State)
	require.Nil(t, m.ScheduledEnqueueTime)
	require.Nil(t, m.DeadLetterReason)
	require.Nil(t, m.DeadLetterErrorDescription)
	require.Nil(t, m.DeadLetterSource)
	require.Nil(t, m.EnqueuedSequenceNumber)
	require.Equal(t, map[string]any{
		"s": "x", "n": int64(7), "u": uint64(3), "i32": int32(4), "f": 1.5, "b": true, "t": epoch, "raw": []byte{1}, "nil": nil,
	}, m.ApplicationProperties, "int and uint come back as AMQP's int64 and uint64")

	raw := m.RawAMQPMessage
	require.NotNil(t, raw)
	require.Equal(t, [][]byte{[]byte("body")}, raw.Body.Data)
	require.Equal(t, "id-1", raw.Properties.MessageID)
	require.Equal(t, "corr", raw.Properties.CorrelationID)
	require.Equal(t, m.ContentType, raw.Properties.ContentType)
	require.Equal(t, int64(1), raw.MessageAnnotations["x-opt-sequence-number"])
	require.Equal(t, epoch, raw.MessageAnnotations["x-opt-enqueued-time"])
	require.Equal(t, "pk", raw.MessageAnnotations["x-opt-partition-key"])
	require.Equal(t, *m.LockedUntil, raw.MessageAnnotations["x-opt-locked-until"])
	require.Equal(t, ttl, raw.Header.TTL)
	require.Equal(t, uint32(0), raw.Header.DeliveryCount, "the AMQP header counts earlier deliveries")
	require.Len(t, raw.DeliveryTag, 16)
	require.Equal(t, m.ApplicationProperties, raw.ApplicationProperties)

	// RenewMessageLock moves LockedUntil, in the message too.
	e.mock.Add(10 * time.Second)
	require.NoError(t, r.RenewMessageLock(e.ctx, m, nil))
	require.True(t, epoch.Add(40*time.Second).Equal(*m.LockedUntil))

	// Message() forwards the received message with its sendable fields.
	fwd := m.Message()
	require.NoError(t, s.SendMessage(e.ctx, fwd, nil))
	require.NoError(t, r.CompleteMessage(e.ctx, m, nil))
	again := e.receive(r, 1)[0]
	require.Equal(t, "id-1", again.MessageID)
	require.Equal(t, m.Body, again.Body)
	require.Equal(t, *m.Subject, *again.Subject)
	require.Equal(t, m.ApplicationProperties, again.ApplicationProperties)
	require.Equal(t, int64(2), *again.SequenceNumber)
}

// TestMessageUnsetFields: a message with nothing set reads back with nil
// pointers, and a broker-made MessageID.
func TestMessageUnsetFields(t *testing.T) {
	e := newEnv(t)
	e.queue("q", nil)
	require.NoError(t, e.sender("q").SendMessage(e.ctx, &azservicebus.Message{}, nil))
	m := e.receive(e.receiver("q", nil), 1)[0]
	require.NotEmpty(t, m.MessageID)
	require.Nil(t, m.Body)
	require.Nil(t, m.ApplicationProperties)
	for name, p := range map[string]*string{"ContentType": m.ContentType, "CorrelationID": m.CorrelationID, "PartitionKey": m.PartitionKey,
		"ReplyTo": m.ReplyTo, "ReplyToSessionID": m.ReplyToSessionID, "SessionID": m.SessionID, "Subject": m.Subject, "To": m.To} {
		require.Nil(t, p, name)
	}
	require.Nil(t, m.TimeToLive, "a message that never expires has no TimeToLive")
	require.Nil(t, m.ExpiresAt)
}

// TestApplicationPropertyTypes: a value AMQP cannot carry is refused, as
// the SDK's encoder refuses it.
func TestApplicationPropertyTypes(t *testing.T) {
	e := newEnv(t)
	e.queue("q", nil)
	err := e.sender("q").SendMessage(e.ctx, &azservicebus.Message{ApplicationProperties: map[string]any{"d": time.Second}}, nil)
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
	require.ErrorContains(t, err, "marshal not implemented for time.Duration")
}

// TestScheduledMessageFields: a scheduled message peeks with State
// Scheduled and its ScheduledEnqueueTime, and activates with it.
func TestScheduledMessageFields(t *testing.T) {
	e := newEnv(t)
	e.queue("q", nil)
	s := e.sender("q")
	at := epoch.Add(time.Hour)
	seqs, err := s.ScheduleMessages(e.ctx, []*azservicebus.Message{{Body: []byte("later")}}, at, nil)
	require.NoError(t, err)
	require.Len(t, seqs, 1)
	r := e.receiver("q", nil)
	peeked, err := r.PeekMessages(e.ctx, 10, nil)
	require.NoError(t, err)
	require.Len(t, peeked, 1)
	require.Equal(t, azservicebus.MessageStateScheduled, peeked[0].State)
	require.True(t, at.Equal(*peeked[0].ScheduledEnqueueTime))
	require.Len(t, peeked[0].MessageID, 36, "ScheduleMessages gives a UUID, as the SDK does")
	require.Nil(t, peeked[0].LockedUntil)
	require.Zero(t, peeked[0].LockToken)
	require.Equal(t, int64(2), peeked[0].RawAMQPMessage.MessageAnnotations["x-opt-message-state"])

	e.mock.Add(time.Hour)
	m := e.receive(r, 1)[0]
	require.Equal(t, azservicebus.MessageStateActive, m.State)
	require.True(t, at.Equal(*m.EnqueuedTime))
	require.True(t, at.Equal(*m.ScheduledEnqueueTime))
}

// TestAMQPAnnotatedMessage: what minibus has no field for survives the
// trip and comes back in RawAMQPMessage; what it has a field for maps to it.
func TestAMQPAnnotatedMessage(t *testing.T) {
	e := newEnv(t)
	e.queue("q", nil)
	s := e.sender("q")
	created := epoch.Add(-time.Hour)
	require.NoError(t, s.SendAMQPAnnotatedMessage(e.ctx, &azservicebus.AMQPAnnotatedMessage{
		Body:                  azservicebus.AMQPAnnotatedMessageBody{Value: map[string]any{"k": int64(1)}},
		ApplicationProperties: map[string]any{"p": "v"},
		MessageAnnotations:    map[any]any{"x-opt-custom": "c", "x-opt-partition-key": "pk"},
		DeliveryAnnotations:   map[any]any{"x-opt-delivery": "dropped"},
		Footer:                map[any]any{"f": "foot"},
		Header:                &azservicebus.AMQPAnnotatedMessageHeader{TTL: time.Minute, Durable: true, Priority: 7},
		Properties: &azservicebus.AMQPAnnotatedMessageProperties{
			MessageID: uint64(42), CorrelationID: "corr", Subject: ptr("subj"), GroupSequence: ptr(uint32(3)),
			ContentEncoding: ptr("gzip"), CreationTime: &created, UserID: []byte("me"),
		},
	}, nil))
	require.NoError(t, s.SendAMQPAnnotatedMessage(e.ctx, &azservicebus.AMQPAnnotatedMessage{
		Body: azservicebus.AMQPAnnotatedMessageBody{Data: [][]byte{[]byte("a"), []byte("b")}},
	}, nil))
	require.NoError(t, s.SendAMQPAnnotatedMessage(e.ctx, &azservicebus.AMQPAnnotatedMessage{
		Body:       azservicebus.AMQPAnnotatedMessageBody{Data: [][]byte{[]byte("plain")}},
		Properties: &azservicebus.AMQPAnnotatedMessageProperties{MessageID: "m3"},
	}, nil))

	msgs := e.receive(e.receiver("q", nil), 3)
	m := msgs[0]
	raw := m.RawAMQPMessage
	require.Equal(t, map[string]any{"k": int64(1)}, raw.Body.Value)
	require.Nil(t, m.Body)
	require.Equal(t, map[string]any{"p": "v"}, m.ApplicationProperties, "azsb's own property is removed")
	require.Equal(t, "c", raw.MessageAnnotations["x-opt-custom"])
	require.Equal(t, "pk", *m.PartitionKey)
	require.Nil(t, raw.DeliveryAnnotations)
	require.Equal(t, map[any]any{"f": "foot"}, raw.Footer)
	require.Equal(t, time.Minute, *m.TimeToLive)
	require.True(t, raw.Header.Durable)
	require.Equal(t, uint8(7), raw.Header.Priority)
	require.Equal(t, uint64(42), raw.Properties.MessageID)
	require.Empty(t, m.MessageID, "the SDK surfaces string message ids only")
	require.Equal(t, "corr", *m.CorrelationID)
	require.Equal(t, "subj", *m.Subject)
	require.Equal(t, uint32(3), *raw.Properties.GroupSequence)
	require.Equal(t, "gzip", *raw.Properties.ContentEncoding)
	require.True(t, created.Equal(*raw.Properties.CreationTime))
	require.Equal(t, []byte("me"), raw.Properties.UserID)

	require.Nil(t, msgs[1].Body, "several data sections: no Body, as the SDK")
	require.Equal(t, [][]byte{[]byte("a"), []byte("b")}, msgs[1].RawAMQPMessage.Body.Data)

	require.Equal(t, []byte("plain"), msgs[2].Body)
	require.Equal(t, "m3", msgs[2].MessageID)
	require.Nil(t, msgs[2].ApplicationProperties)
}

// TestDeadLetterFields: a dead-lettered message carries its reason and
// description as the SDK shows them, as fields and as application
// properties, with the SDK's "" when none was given.
func TestDeadLetterFields(t *testing.T) {
	e := newEnv(t)
	e.queue("q", &minibus.QueueProperties{MaxDeliveryCount: 1})
	s := e.sender("q")
	require.NoError(t, s.SendMessage(e.ctx, &azservicebus.Message{Body: []byte("1")}, nil))
	require.NoError(t, s.SendMessage(e.ctx, &azservicebus.Message{Body: []byte("2")}, nil))
	require.NoError(t, s.SendMessage(e.ctx, &azservicebus.Message{Body: []byte("3")}, nil))
	r := e.receiver("q", nil)
	msgs := e.receive(r, 3)
	require.NoError(t, r.DeadLetterMessage(e.ctx, msgs[0], &azservicebus.DeadLetterOptions{
		Reason: ptr("bad"), ErrorDescription: ptr("very bad"), PropertiesToModify: map[string]any{"extra": 1},
	}))
	require.NoError(t, r.DeadLetterMessage(e.ctx, msgs[1], nil))
	require.NoError(t, r.AbandonMessage(e.ctx, msgs[2], nil)) // MaxDeliveryCount 1

	dlq := e.receiver("q", &azservicebus.ReceiverOptions{SubQueue: azservicebus.SubQueueDeadLetter})
	dead := e.receive(dlq, 3)
	require.Equal(t, "bad", *dead[0].DeadLetterReason)
	require.Equal(t, "very bad", *dead[0].DeadLetterErrorDescription)
	require.Equal(t, map[string]any{"DeadLetterReason": "bad", "DeadLetterErrorDescription": "very bad", "extra": int64(1)}, dead[0].ApplicationProperties)
	require.Equal(t, "", *dead[1].DeadLetterReason)
	require.Equal(t, "", *dead[1].DeadLetterErrorDescription)
	require.Equal(t, minibus.DeadLetterReasonMaxDeliveryCountExceeded, *dead[2].DeadLetterReason)
	require.Equal(t, uint32(2), dead[2].DeliveryCount, "the dead-letter queue's delivery counts too")
	require.NoError(t, dlq.CompleteMessage(e.ctx, dead[0], nil))
}
