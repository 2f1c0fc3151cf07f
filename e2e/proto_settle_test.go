package e2e_test

import (
	"errors"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"
	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
)

// Receive-and-delete is snd-settle-mode settled: messages arrive settled,
// leave the queue as they are delivered, and carry no lock token (W5).
func TestProto_ReceiveAndDelete(t *testing.T) {
	e := newProtoEnv(t)
	q := e.queue("orders", nil)
	s := e.session(nil)
	r := e.receiver(s, "orders", protoReceiveAndDelete(10))
	e.send(q, "one", "two")
	for _, want := range []string{"one", "two"} {
		m := e.receive(r)
		require.Equal(t, want, protoBody(m))
		require.Equal(t, uint32(1), protoDeliveries(t, m))
		require.NotContains(t, m.DeliveryAnnotations, "x-opt-lock-token")
		require.NotContains(t, m.Annotations, "x-opt-locked-until")
		require.NoError(t, r.AcceptMessage(e.ctx, m), "settling a settled message is a no-op")
	}
	require.Zero(t, q.RuntimeProperties().TotalMessageCount)
}

// Peek-lock is rcv-settle-mode second: each outcome takes effect and the
// server's settle echo completes the client's call (W6): accept
// completes, reject com.microsoft:dead-letter dead-letters with the reason
// from its info, release gives the message back without counting a
// delivery (L15), modify abandons (counted) or, undeliverable here,
// defers; once the lock has ended (L5) the settlement fails with
// com.microsoft:message-lock-lost and the message is delivered again.
func TestProto_PeekLockSettle(t *testing.T) {
	e := newProtoEnv(t)
	q := e.queue("orders", nil)
	s := e.session(nil)
	r := e.receiver(s, "orders", protoPeekLock(1))
	require.Equal(t, "orders", r.Address())

	e.send(q, "accept")
	m := e.receive(r)
	require.Len(t, m.DeliveryTag, 16, "the lock token is the delivery tag (W5)")
	require.Contains(t, m.Annotations, "x-opt-locked-until")
	require.NoError(t, r.AcceptMessage(e.ctx, m))
	require.Zero(t, q.RuntimeProperties().TotalMessageCount)

	e.send(q, "dead-letter")
	m = e.receive(r)
	require.NoError(t, r.RejectMessage(e.ctx, m, &amqp.Error{
		Condition: "com.microsoft:dead-letter",
		Info:      map[string]any{"DeadLetterReason": "bad", "DeadLetterErrorDescription": "very bad", "extra": "kept"},
	}))
	require.Equal(t, int64(1), q.RuntimeProperties().DeadLetterMessageCount)
	dlq := e.receiver(s, "orders/$DeadLetterQueue", protoReceiveAndDelete(1))
	m = e.receive(dlq)
	require.Equal(t, "dead-letter", protoBody(m))
	require.Equal(t, "bad", m.ApplicationProperties["DeadLetterReason"])
	require.Equal(t, "very bad", m.ApplicationProperties["DeadLetterErrorDescription"])
	require.Equal(t, "kept", m.ApplicationProperties["extra"])

	e.send(q, "again")
	m = e.receive(r)
	require.Equal(t, uint32(1), protoDeliveries(t, m))
	require.NoError(t, r.ReleaseMessage(e.ctx, m))
	m = e.receive(r)
	require.Equal(t, "again", protoBody(m))
	require.Equal(t, uint32(1), protoDeliveries(t, m), "a release does not count a delivery (L15)")
	require.NoError(t, r.ModifyMessage(e.ctx, m, &amqp.ModifyMessageOptions{DeliveryFailed: true}))
	m = e.receive(r)
	require.Equal(t, "again", protoBody(m))
	require.Equal(t, uint32(2), protoDeliveries(t, m), "an abandon counts it")
	require.NoError(t, r.ModifyMessage(e.ctx, m, &amqp.ModifyMessageOptions{UndeliverableHere: true}))
	protoReceiveNothing(t, r)
	peek, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer peek.Close(e.ctx)
	peeked, err := peek.PeekMessages(e.ctx, 10, nil)
	require.NoError(t, err)
	require.Len(t, peeked, 1)
	require.Equal(t, minibus.MessageStateDeferred, peeked[0].State)

	e.send(q, "late")
	m = e.receive(r)
	e.env.Advance(q.Properties().LockDuration + time.Second)
	err = r.AcceptMessage(e.ctx, m)
	var ae *amqp.Error
	require.True(t, errors.As(err, &ae), "want an *amqp.Error, got %v", err)
	require.Equal(t, amqp.ErrCond("com.microsoft:message-lock-lost"), ae.Condition)
	m = e.receive(r)
	require.Equal(t, "late", protoBody(m))
	require.Equal(t, uint32(2), protoDeliveries(t, m))
	require.NoError(t, r.AcceptMessage(e.ctx, m))
}
