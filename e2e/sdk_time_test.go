package e2e_test

// Time over the wire, on the namespace's mock clock (W9): lock renewal and
// loss (L4, L5, L6), TTL and expiry (E1–E5), MaxDeliveryCount (L6), a
// topic's scheduled messages (S5). The SDK keeps real time for its own
// waits; the broker's instants move only with the mock.

import (
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
)

// TestSDKTime_RenewMessageLock_L5 renews a lock through $management
// (renew-lock, W8): LockedUntil moves to now + LockDuration in the SDK's
// message, and the message can still be completed after its first lock
// would have ended.
func TestSDKTime_RenewMessageLock_L5(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", &minibus.QueueProperties{LockDuration: 30 * time.Second})
	e.send(e.sender("orders"), "a")
	r := e.receiver("orders", nil)
	ctx := e.ctx(sdkTimeout)
	m := e.receiveN(r, 1)[0]
	first := *m.LockedUntil
	require.True(t, e.now().Add(30*time.Second).Equal(first))
	for range 3 {
		e.advance(20 * time.Second)
		require.NoError(t, r.RenewMessageLock(ctx, m, nil))
		require.True(t, e.now().Add(30*time.Second).Equal(*m.LockedUntil), "L5: %v", *m.LockedUntil)
	}
	require.True(t, e.now().After(first), "the first lock would have ended by now")
	e.receiveNone(r) // L2: still locked
	require.NoError(t, r.CompleteMessage(ctx, m, nil))
	require.Zero(t, e.queueCounts("orders").TotalMessageCount)
}

// TestSDKTime_LockLost_L4_W6 lets a lock end on the mock clock: a
// millisecond before LockedUntil the lock holds (T2); at LockedUntil every
// settlement on the link is answered Rejected
// com.microsoft:message-lock-lost and renew-lock 410, both the SDK's
// CodeLockLost (W6, W8, L4); the message is delivered again with its
// delivery counted (L6).
func TestSDKTime_LockLost_L4_W6(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", &minibus.QueueProperties{LockDuration: 10 * time.Second})
	e.send(e.sender("orders"), "held", "complete", "abandon", "defer", "deadletter", "renew")
	r := e.receiver("orders", nil)
	ctx := e.ctx(sdkTimeout)
	got := e.receiveN(r, 6)

	e.advance(10*time.Second - time.Millisecond)
	require.NoError(t, r.CompleteMessage(ctx, got[0], nil), "T2: held while now < LockedUntil")
	e.advance(time.Millisecond)
	// One message per call: go-amqp takes a delivery as settled once the
	// server has answered its disposition, whatever the outcome, and a
	// second disposition of it is a no-op on the client.
	require.Equal(t, azservicebus.CodeLockLost, sdkCode(r.CompleteMessage(ctx, got[1], nil)))
	require.Equal(t, azservicebus.CodeLockLost, sdkCode(r.AbandonMessage(ctx, got[2], nil)))
	require.Equal(t, azservicebus.CodeLockLost, sdkCode(r.DeferMessage(ctx, got[3], nil)))
	require.Equal(t, azservicebus.CodeLockLost, sdkCode(r.DeadLetterMessage(ctx, got[4], nil)))
	require.Equal(t, azservicebus.CodeLockLost, sdkCode(r.RenewMessageLock(ctx, got[5], nil)))
	c := e.queueCounts("orders")
	require.Equal(t, int64(5), c.ActiveMessageCount, "L4: nothing changed")
	require.Zero(t, c.DeadLetterMessageCount)

	again := e.receiveN(r, 5)
	require.Equal(t, []string{"complete", "abandon", "defer", "deadletter", "renew"}, bodies(again))
	for _, m := range again {
		require.Equal(t, uint32(2), m.DeliveryCount, "L6")
		require.NoError(t, r.CompleteMessage(ctx, m, nil))
	}
}

// TestSDKTime_TTL_E1_E2_E5 expires messages on the mock clock: the
// effective TTL is the smaller of the message's and the entity's (E1), the
// header's ttl carries it (W5), and at ExpiresAt a message is
// dead-lettered with TTLExpiredException (E5) or, without
// DeadLetteringOnMessageExpiration, dropped; a locked message is not
// expired while its lock holds (E4).
func TestSDKTime_TTL_E1_E2_E5(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("dl", &minibus.QueueProperties{DefaultMessageTimeToLive: 10 * time.Minute, DeadLetteringOnMessageExpiration: true, LockDuration: 5 * time.Minute})
	e.queue("drop", &minibus.QueueProperties{DefaultMessageTimeToLive: 10 * time.Minute})
	ctx := e.ctx(sdkTimeout)
	for _, name := range []string{"dl", "drop"} {
		s := e.sender(name)
		for _, ttl := range []time.Duration{time.Minute, time.Hour, 0} {
			m := &azservicebus.Message{Body: []byte(ttl.String())}
			if ttl > 0 {
				m.TimeToLive = sdkPtr(ttl)
			}
			require.NoError(t, s.SendMessage(ctx, m, nil))
		}
	}
	enq := e.now()
	r := e.receiver("dl", nil)
	peeked, err := r.PeekMessages(ctx, 10, nil)
	require.NoError(t, err)
	require.Len(t, peeked, 3)
	for i, want := range []time.Duration{time.Minute, 10 * time.Minute, 10 * time.Minute} {
		require.Equal(t, want, *peeked[i].TimeToLive, "E1: the effective TTL (W5 header ttl)")
		require.True(t, enq.Add(want).Equal(*peeked[i].ExpiresAt), "E2")
	}

	e.advance(time.Minute - time.Millisecond)
	require.Equal(t, int64(3), e.queueCounts("dl").ActiveMessageCount)
	e.advance(time.Millisecond)
	require.Equal(t, int64(2), e.queueCounts("dl").ActiveMessageCount, "E3: expired at ExpiresAt")
	require.Equal(t, int64(1), e.queueCounts("dl").DeadLetterMessageCount, "E5")
	require.Equal(t, int64(2), e.queueCounts("drop").ActiveMessageCount)
	require.Zero(t, e.queueCounts("drop").DeadLetterMessageCount, "E5: dropped")

	// E4: a message locked before ExpiresAt outlives it while locked.
	locked := e.receiveN(r, 1)[0]
	require.Equal(t, "1h0m0s", string(locked.Body))
	e.advance(4 * time.Minute)
	require.NoError(t, r.RenewMessageLock(ctx, locked, nil))
	e.advance(4 * time.Minute)
	require.NoError(t, r.RenewMessageLock(ctx, locked, nil))
	e.advance(time.Minute) // ExpiresAt of the 10-minute messages
	require.True(t, locked.ExpiresAt.Equal(e.now()))
	require.Equal(t, int64(1), e.queueCounts("dl").ActiveMessageCount, "the locked one is still counted")
	require.Equal(t, int64(2), e.queueCounts("dl").DeadLetterMessageCount, "the unlocked one expired")
	require.NoError(t, r.CompleteMessage(ctx, locked, nil), "E4: completed, not dead-lettered")
	require.Zero(t, e.queueCounts("drop").TotalMessageCount)

	dlq := e.receiver("dl", &azservicebus.ReceiverOptions{SubQueue: azservicebus.SubQueueDeadLetter})
	dead := e.receiveN(dlq, 2)
	require.Equal(t, []string{"1m0s", "0s"}, bodies(dead))
	for _, m := range dead {
		require.Equal(t, "TTLExpiredException", *m.DeadLetterReason)
		require.Equal(t, "The message expired and was dead lettered.", *m.DeadLetterErrorDescription)
		require.NoError(t, dlq.CompleteMessage(ctx, m, nil))
	}
	require.Zero(t, e.queueCounts("dl").TotalMessageCount)
}

// TestSDKTime_MaxDeliveryCount_L6 reaches MaxDeliveryCount through the
// SDK's abandons and through lock expiries on the mock clock: the last
// unsettled end moves the message to the dead-letter queue with reason
// MaxDeliveryCountExceeded (L6).
func TestSDKTime_MaxDeliveryCount_L6(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", &minibus.QueueProperties{MaxDeliveryCount: 3, LockDuration: 10 * time.Second})
	e.send(e.sender("orders"), "abandoned", "expired")
	r := e.receiver("orders", nil)
	ctx := e.ctx(sdkTimeout)
	for i := range 3 {
		got := e.receiveN(r, 2)
		require.Equal(t, []string{"abandoned", "expired"}, bodies(got))
		require.Equal(t, uint32(i+1), got[0].DeliveryCount)
		require.Equal(t, uint32(i+1), got[1].DeliveryCount)
		require.NoError(t, r.AbandonMessage(ctx, got[0], nil))
		e.advance(10 * time.Second)
	}
	c := e.queueCounts("orders")
	require.Zero(t, c.ActiveMessageCount)
	require.Equal(t, int64(2), c.DeadLetterMessageCount)
	e.receiveNone(r)

	dlq := e.receiver("orders", &azservicebus.ReceiverOptions{SubQueue: azservicebus.SubQueueDeadLetter})
	dead := e.receiveN(dlq, 2)
	for _, m := range dead {
		require.Equal(t, "MaxDeliveryCountExceeded", *m.DeadLetterReason)
		require.Equal(t, "Message could not be consumed after 3 delivery attempts.", *m.DeadLetterErrorDescription)
		require.Equal(t, uint32(4), m.DeliveryCount, "D2: its 3 deliveries, then this one from the DLQ (L14)")
		require.NoError(t, dlq.CompleteMessage(ctx, m, nil))
	}
}

// TestSDKTime_TopicSchedule_S5 schedules on a topic through the SDK: the
// topic holds the message (S5) and fans it out to its subscriptions when
// the mock clock reaches its time, each copy carrying the topic's
// sequence number (Q2).
func TestSDKTime_TopicSchedule_S5(t *testing.T) {
	e := newSDKEnv(t)
	tp := e.topic("events", "a", "b")
	s := e.sender("events")
	ctx := e.ctx(sdkTimeout)
	at := e.now().Add(time.Hour)
	seqs, err := s.ScheduleMessages(ctx, []*azservicebus.Message{{Body: []byte("x")}}, at, nil)
	require.NoError(t, err)
	require.Len(t, seqs, 1)
	require.Equal(t, int64(1), tp.RuntimeProperties().ScheduledMessageCount)
	ra, rb := e.subReceiver("events", "a", nil), e.subReceiver("events", "b", nil)
	e.receiveNone(ra)
	e.advance(time.Hour)
	require.Zero(t, tp.RuntimeProperties().ScheduledMessageCount)
	ma, mb := e.receiveN(ra, 1)[0], e.receiveN(rb, 1)[0]
	require.Equal(t, *ma.SequenceNumber, *mb.SequenceNumber, "Q2")
	require.True(t, at.Equal(*ma.EnqueuedTime), "S4")
	require.NoError(t, ra.CompleteMessage(ctx, ma, nil))
	require.NoError(t, rb.CompleteMessage(ctx, mb, nil))
}
