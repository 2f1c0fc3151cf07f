package minibus_test

import (
	"testing"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// D1: a dead-letter queue supports receive, peek, complete, abandon, defer
// and renew (the conformance suite runs them all on it), but a message in
// it cannot be dead-lettered again: ErrInvalidArgument, and nothing
// changes.
func TestD1_NoDeadLetteringFromDeadLetterQueue(t *testing.T) {
	for _, sub := range []bool{false, true} {
		e := newEnv(t)
		var main, dlq *minibus.Receiver
		var send func()
		if sub {
			top := e.topic("t", nil)
			s := e.subscription(top, "s", nil)
			main, dlq = e.receiver(s, nil), e.receiver(s, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
			send = func() { e.send(top, "a") }
		} else {
			q := e.queue("q", nil)
			main, dlq = e.receiver(q, nil), e.receiver(q, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
			send = func() { e.send(q, "a") }
		}
		send()
		require.NoError(t, main.DeadLetterMessage(e.ctx, e.receive(main, 1)[0], &minibus.DeadLetterOptions{Reason: "first"}))
		d := e.receive(dlq, 1)[0]
		err := dlq.DeadLetterMessage(e.ctx, d, &minibus.DeadLetterOptions{Reason: "again"})
		requireSentinel(t, err, minibus.ErrInvalidArgument, "cannot be dead-lettered")
		require.NoError(t, dlq.RenewMessageLock(e.ctx, d, nil), "still locked")
		require.NoError(t, dlq.AbandonMessage(e.ctx, d, nil))
		again := e.receive(dlq, 1)[0]
		require.Equal(t, "first", again.DeadLetterReason, "unchanged")
		require.NoError(t, dlq.CompleteMessage(e.ctx, again, nil))
	}
}
