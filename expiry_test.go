package minibus_test

import (
	"math"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// E1, E2: the effective TTL is the smaller of the message's TimeToLive and
// the entity's DefaultMessageTimeToLive; ExpiresAt = EnqueuedTime + TTL; no
// TTL anywhere means ExpiresAt is zero.
func TestE1_E2_EffectiveTTL(t *testing.T) {
	e := newEnv(t)
	capped := e.queue("capped", &minibus.QueueProperties{DefaultMessageTimeToLive: time.Hour})
	free := e.queue("free", nil)
	e.mock.Add(time.Minute)
	for _, c := range []struct {
		q       *minibus.Queue
		ttl     time.Duration
		wantTTL time.Duration // 0: never expires
	}{
		{capped, 0, time.Hour},
		{capped, 2 * time.Hour, time.Hour}, // silently cut
		{capped, 10 * time.Minute, 10 * time.Minute},
		{free, 10 * time.Minute, 10 * time.Minute},
		{free, 0, 0},
		{free, time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)}, // no overflow
	} {
		require.NoError(t, c.q.SendMessage(e.ctx, &minibus.Message{TimeToLive: c.ttl}, nil))
		m := e.receive(e.receiver(c.q, &minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete}), 1)[0]
		require.True(t, m.EnqueuedTime.Equal(at(time.Minute)))
		switch {
		case c.wantTTL == 0:
			require.True(t, m.ExpiresAt.IsZero(), "never expires")
			require.Zero(t, m.TimeToLive)
		case c.wantTTL == time.Duration(math.MaxInt64):
			// A finite TTL stays finite: ExpiresAt stops at the last instant
			// int64 nanoseconds hold (SEMANTICS E2).
			require.Equal(t, c.wantTTL, m.TimeToLive)
			require.True(t, m.ExpiresAt.Equal(time.Unix(0, math.MaxInt64-1)), "ExpiresAt %v", m.ExpiresAt)
		default:
			require.Equal(t, c.wantTTL, m.TimeToLive)
			require.True(t, m.ExpiresAt.Equal(at(time.Minute+c.wantTTL)), "ExpiresAt %v", m.ExpiresAt)
		}
	}
}

// E1: the topic's DefaultMessageTimeToLive caps a subscription's.
func TestE1_TopicTTLCapsSubscription(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", &minibus.TopicProperties{DefaultMessageTimeToLive: time.Minute})
	long := e.subscription(top, "long", &minibus.SubscriptionProperties{DefaultMessageTimeToLive: time.Hour})
	short := e.subscription(top, "short", &minibus.SubscriptionProperties{DefaultMessageTimeToLive: 10 * time.Second})
	require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{TimeToLive: 2 * time.Hour}, nil))
	require.True(t, e.peekAll(e.receiver(long, nil))[0].ExpiresAt.Equal(at(time.Minute)))
	require.True(t, e.peekAll(e.receiver(short, nil))[0].ExpiresAt.Equal(at(10*time.Second)))
	e.mock.Add(time.Minute)
	require.Zero(t, long.RuntimeProperties().TotalMessageCount)
}

// E3, T2: a message is expired when now >= ExpiresAt: one nanosecond
// before it is received, counted and peeked; at ExpiresAt it is none of
// them.
func TestE3_ExpiredExactlyAtExpiresAt(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{Body: []byte("a"), TimeToLive: time.Minute}, nil))
	require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{Body: []byte("b"), TimeToLive: time.Minute}, nil))
	r := e.receiver(q, nil)
	e.mock.Add(time.Minute - 1)
	require.EqualValues(t, 2, q.RuntimeProperties().ActiveMessageCount)
	require.Len(t, e.peekAll(r), 2)
	a := e.receive(r, 1)[0]
	require.Equal(t, "a", string(a.Body))
	e.mock.Add(1)
	rp := q.RuntimeProperties()
	require.EqualValues(t, 1, rp.ActiveMessageCount, "only the locked one (E4)")
	require.EqualValues(t, 1, rp.TotalMessageCount)
	require.Equal(t, []string{"a"}, bodies(e.peekAll(r)))
	e.requireNothing(r)
}

// E4: expiry does not touch a locked message: it can be completed (and is
// gone, not dead-lettered), renewed, deferred or dead-lettered; when its lock
// ends after ExpiresAt, expiry applies at that instant.
func TestE4_LockedMessagesDoNotExpire(t *testing.T) {
	newQ := func(t *testing.T) (*env, *minibus.Queue, *minibus.Receiver, *minibus.ReceivedMessage) {
		e := newEnv(t)
		q := e.queue("q", &minibus.QueueProperties{DefaultMessageTimeToLive: 30 * time.Second, DeadLetteringOnMessageExpiration: true})
		e.send(q, "a")
		r := e.receiver(q, nil)
		m := e.receive(r, 1)[0]
		e.mock.Add(45 * time.Second) // past ExpiresAt, within the lock
		require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount, "counted while locked")
		require.Len(t, e.peekAll(r), 1, "peeked while locked")
		return e, q, r, m
	}
	t.Run("complete", func(t *testing.T) {
		e, q, r, m := newQ(t)
		require.NoError(t, r.CompleteMessage(e.ctx, m, nil))
		require.Zero(t, q.RuntimeProperties().TotalMessageCount, "gone, not dead-lettered")
	})
	t.Run("renew then lock expiry", func(t *testing.T) {
		e, q, r, m := newQ(t)
		require.NoError(t, r.RenewMessageLock(e.ctx, m, nil))
		e.mock.Add(time.Minute - 1)
		require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount)
		e.mock.Add(1) // the renewed lock ends: expiry applies now
		d := e.receive(e.receiver(q, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
		require.Equal(t, "TTLExpiredException", d.DeadLetterReason)
		require.Equal(t, "The message expired and was dead lettered.", d.DeadLetterErrorDescription)
		require.EqualValues(t, 2, d.DeliveryCount, "one delivery in the queue, this one from the DLQ")
	})
	t.Run("abandon", func(t *testing.T) {
		e, q, r, m := newQ(t)
		require.NoError(t, r.AbandonMessage(e.ctx, m, nil))
		rp := q.RuntimeProperties()
		require.Zero(t, rp.ActiveMessageCount)
		require.EqualValues(t, 1, rp.DeadLetterMessageCount)
	})
	t.Run("defer", func(t *testing.T) {
		e, q, r, m := newQ(t)
		require.NoError(t, r.DeferMessage(e.ctx, m, nil))
		e.mock.Add(24 * time.Hour)
		require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount, "deferred messages do not expire (E7)")
	})
	t.Run("dead-letter", func(t *testing.T) {
		e, q, r, m := newQ(t)
		require.NoError(t, r.DeadLetterMessage(e.ctx, m, &minibus.DeadLetterOptions{Reason: "mine"}))
		d := e.receive(e.receiver(q, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
		require.Equal(t, "mine", d.DeadLetterReason)
	})
}

// E4, L6: a lock that expires after ExpiresAt expires the message at the
// lock's end, unless MaxDeliveryCount comes first.
func TestE4_L6_OrderAtLockEnd(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{DefaultMessageTimeToLive: 30 * time.Second, MaxDeliveryCount: 1, DeadLetteringOnMessageExpiration: true})
	e.send(q, "a")
	r := e.receiver(q, nil)
	e.receive(r, 1)
	e.mock.Add(time.Minute)
	d := e.receive(e.receiver(q, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
	require.Equal(t, "MaxDeliveryCountExceeded", d.DeadLetterReason, "L6 checks MaxDeliveryCount before expiry")
}

// E5: without DeadLetteringOnMessageExpiration, expired messages are
// dropped; with it, they move to the dead-letter queue, in sequence order.
func TestE5_DropOrDeadLetter(t *testing.T) {
	e := newEnv(t)
	drop := e.queue("drop", &minibus.QueueProperties{DefaultMessageTimeToLive: time.Minute})
	keep := e.queue("keep", &minibus.QueueProperties{DefaultMessageTimeToLive: time.Minute, DeadLetteringOnMessageExpiration: true})
	e.send(drop, "a", "b")
	e.send(keep, "a", "b")
	e.mock.Add(time.Hour)
	require.Zero(t, drop.RuntimeProperties().TotalMessageCount)
	rp := keep.RuntimeProperties()
	require.Zero(t, rp.ActiveMessageCount)
	require.EqualValues(t, 2, rp.DeadLetterMessageCount)
	require.EqualValues(t, 2, rp.TotalMessageCount)
	d := e.receive(e.receiver(keep, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 2)
	require.Equal(t, []string{"a", "b"}, bodies(d))
	require.Equal(t, "TTLExpiredException", d[0].DeadLetterReason)
	require.EqualValues(t, 1, d[0].DeliveryCount, "never delivered before this")
}

// E6: messages in a dead-letter queue never expire, abandoned or not.
func TestE6_NoExpiryInDeadLetterQueue(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{DefaultMessageTimeToLive: time.Minute, DeadLetteringOnMessageExpiration: true})
	e.send(q, "a")
	e.mock.Add(time.Minute)
	dlq := e.receiver(q, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	m := e.receive(dlq, 1)[0]
	require.NoError(t, dlq.AbandonMessage(e.ctx, m, nil))
	e.mock.Add(24 * time.Hour)
	e.receive(dlq, 1)
	e.mock.Add(24 * time.Hour) // the lock expires far past ExpiresAt
	require.EqualValues(t, 1, q.RuntimeProperties().DeadLetterMessageCount)
	require.Len(t, e.peekAll(dlq), 1)
}

// E7: deferred messages do not expire, not even after being fetched and
// abandoned past ExpiresAt.
func TestE7_DeferredMessagesDoNotExpire(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{DefaultMessageTimeToLive: time.Minute, DeadLetteringOnMessageExpiration: true})
	e.send(q, "a")
	r := e.receiver(q, nil)
	m := e.receive(r, 1)[0]
	require.NoError(t, r.DeferMessage(e.ctx, m, nil))
	e.mock.Add(time.Hour)
	got, err := r.ReceiveDeferredMessages(e.ctx, []int64{m.SequenceNumber}, nil)
	require.NoError(t, err)
	require.NoError(t, r.AbandonMessage(e.ctx, got[0], nil))
	got, err = r.ReceiveDeferredMessages(e.ctx, []int64{m.SequenceNumber}, nil)
	require.NoError(t, err)
	require.Len(t, got, 1)
	e.mock.Add(time.Hour) // the lock expires, past ExpiresAt: back to Deferred (L6)
	rp := q.RuntimeProperties()
	require.EqualValues(t, 1, rp.ActiveMessageCount)
	require.Zero(t, rp.DeadLetterMessageCount)
	require.Equal(t, minibus.MessageStateDeferred, e.peekAll(r)[0].State)
}

// E1: a TTL of 1ns expires at the next instant; a TTL change applies to
// later messages only.
func TestE1_UpdateAppliesToLaterMessages(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{DefaultMessageTimeToLive: time.Hour})
	e.send(q, "old")
	_, err := e.ns.UpdateQueue("q", minibus.QueueProperties{DefaultMessageTimeToLive: time.Nanosecond})
	require.NoError(t, err)
	e.send(q, "new")
	e.mock.Add(time.Nanosecond)
	r := e.receiver(q, nil)
	require.Equal(t, []string{"old"}, bodies(e.receiveAll(r, 10)))
}
