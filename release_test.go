package minibus_test

import (
	"context"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// ReleaseMessage (SEMANTICS L15) over every receiver kind, its events and
// fault injection, and its replay in a durable namespace.

// L15: a release ends the lock at once without counting the delivery: the
// message is next again (Q4) with the DeliveryCount it had before, and
// however often it is released it is never dead-lettered for
// MaxDeliveryCount (L6 does not apply).
func TestL15_ReleaseDoesNotCountTheDelivery(t *testing.T) {
	forEachKind(t, settings{maxDelivery: 1}, func(t *testing.T, f *fixture) {
		f.put("a", "b")
		r := f.receiver(minibus.ReceiveModePeekLock)
		for range 5 {
			a := f.receive(r, 1)[0]
			require.Equal(t, "a", string(a.Body))
			require.Equal(t, f.prior+1, a.DeliveryCount, "the releases before did not count")
			require.NoError(t, r.ReleaseMessage(f.ctx, a, nil))
			p := f.peekAll(r)
			require.Equal(t, []string{"a", "b"}, bodies(p))
			require.Equal(t, f.prior, p[0].DeliveryCount, "back to the count before this delivery")
			require.Equal(t, minibus.MessageStateActive, p[0].State)
		}
		require.Zero(t, f.deadLettered(), "never dead-lettered for MaxDeliveryCount 1 (L6 does not apply)")
		require.EqualValues(t, 2, f.active())
		got := f.receive(r, 2)
		require.Equal(t, []string{"a", "b"}, bodies(got), "a is next again at its own position (Q4)")
		require.Equal(t, []uint32{f.prior + 1, f.prior + 1}, []uint32{got[0].DeliveryCount, got[1].DeliveryCount})
	})
}

// L15, L9: a message fetched from deferral and released returns to
// Deferred, with the DeliveryCount it had before the fetch; only
// ReceiveDeferredMessages returns it.
func TestL15_ReleasedDeferredMessageReturnsToDeferred(t *testing.T) {
	forEachKind(t, settings{maxDelivery: 1}, func(t *testing.T, f *fixture) {
		f.put("a")
		r := f.receiver(minibus.ReceiveModePeekLock)
		m := f.receive(r, 1)[0]
		require.NoError(t, r.DeferMessage(f.ctx, m, nil))
		fetched, err := r.ReceiveDeferredMessages(f.ctx, []int64{m.SequenceNumber}, nil)
		require.NoError(t, err)
		require.Equal(t, f.prior+2, fetched[0].DeliveryCount)
		require.NoError(t, r.ReleaseMessage(f.ctx, fetched[0], nil))
		p := f.peekAll(r)
		require.Len(t, p, 1)
		require.Equal(t, minibus.MessageStateDeferred, p[0].State)
		require.Equal(t, f.prior+1, p[0].DeliveryCount)
		require.Zero(t, f.deadLettered())
		f.requireNothing(r)
		again, err := r.ReceiveDeferredMessages(f.ctx, []int64{m.SequenceNumber}, nil)
		require.NoError(t, err)
		require.Equal(t, f.prior+2, again[0].DeliveryCount)
	})
}

// L15, L4: once released, settling, renewing or releasing the message
// again is ErrLockLost and changes nothing.
func TestL15_SettleAfterReleaseIsLockLost(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		f.put("a")
		r := f.receiver(minibus.ReceiveModePeekLock)
		m := f.receive(r, 1)[0]
		require.NoError(t, r.ReleaseMessage(f.ctx, m, nil))
		requireSentinel(t, r.ReleaseMessage(f.ctx, m, nil), minibus.ErrLockLost, "lock token")
		requireSentinel(t, r.CompleteMessage(f.ctx, m, nil), minibus.ErrLockLost, "lock token")
		requireSentinel(t, r.AbandonMessage(f.ctx, m, nil), minibus.ErrLockLost, "lock token")
		requireSentinel(t, r.DeferMessage(f.ctx, m, nil), minibus.ErrLockLost, "lock token")
		if !f.session {
			requireSentinel(t, r.RenewMessageLock(f.ctx, m, nil), minibus.ErrLockLost, "lock token")
		}
		p := f.peekAll(r)
		require.Len(t, p, 1)
		require.Equal(t, f.prior, p[0].DeliveryCount)
		require.Equal(t, minibus.MessageStateActive, p[0].State)
		require.EqualValues(t, 1, f.active())
	})
}

// L15, L7, L12: a message received in receive-and-delete mode, a peeked
// one and a nil one cannot be released: ErrInvalidArgument.
func TestL15_NoLockNoRelease(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		f.put("a", "b")
		pl := f.receiver(minibus.ReceiveModePeekLock)
		peeked := f.peekAll(pl)[0]
		requireSentinel(t, pl.ReleaseMessage(f.ctx, peeked, nil), minibus.ErrInvalidArgument, "peeked")
		requireSentinel(t, pl.ReleaseMessage(f.ctx, nil, nil), minibus.ErrInvalidArgument, "nil")
		rad := f.second(t, pl, minibus.ReceiveModeReceiveAndDelete)
		m := f.receive(rad, 1)[0]
		requireSentinel(t, rad.ReleaseMessage(f.ctx, m, nil), minibus.ErrInvalidArgument, "receive-and-delete")
		pl = f.second(t, rad, minibus.ReceiveModePeekLock)
		requireSentinel(t, pl.ReleaseMessage(f.ctx, m, nil), minibus.ErrInvalidArgument, "receive-and-delete")
		require.EqualValues(t, 1, f.active(), "nothing changed")
	})
}

// L15, E4: a message released after its ExpiresAt, which its lock kept
// from expiring, expires at that instant.
func TestL15_ReleasedAfterExpiresAtExpires(t *testing.T) {
	ns, mock, j := observed(t)
	ctx := context.Background()
	q, err := ns.CreateQueue("q", &minibus.QueueProperties{DefaultMessageTimeToLive: 10 * time.Second, LockDuration: time.Minute})
	require.NoError(t, err)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "a"}, nil))
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(ctx)
	m := receiveOne(t, r)
	mock.Add(20 * time.Second)
	j.take()
	require.NoError(t, r.ReleaseMessage(ctx, m, nil))
	require.Equal(t, []string{"Released q seq=1 id=a dc=1 at=+20s", "Expired q seq=1 id=a dc=0 at=+20s"}, j.take())
	require.Zero(t, q.RuntimeProperties().TotalMessageCount)
}

// L15: a release gives EventReleased, with the DeliveryCount of the
// delivery released, and nothing else; the redelivery's count is the
// same. It goes through the fault injector as OpRelease.
func TestL15_ReleaseEventAndFault(t *testing.T) {
	ctx := context.Background()
	plan := &faultPlan{}
	ns, _, j := observed(t, minibus.WithFaultInjector(plan.inject))
	q, err := ns.CreateQueue("q", &minibus.QueueProperties{MaxDeliveryCount: 1})
	require.NoError(t, err)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "a"}, nil))
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(ctx)
	m := receiveOne(t, r)
	j.take()
	plan.calls()

	boom := context.DeadlineExceeded // any error: returned as it is
	plan.failing(minibus.OpRelease, "q", boom)
	require.Equal(t, boom, r.ReleaseMessage(ctx, m, nil))
	require.Equal(t, []string{"Release q"}, plan.calls())
	require.Empty(t, j.take(), "an injected failure produces no event")
	require.NoError(t, r.CompleteMessage(ctx, m, nil), "the failed release left the lock held")

	require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "b"}, nil))
	plan.failing(minibus.OpRelease, "q", nil)
	m = receiveOne(t, r)
	j.take()
	require.NoError(t, r.ReleaseMessage(ctx, m, nil))
	require.Equal(t, []string{"Released q seq=2 id=b dc=1 at=+0s"}, j.take())
	receiveOne(t, r)
	require.Equal(t, []string{"Delivered q seq=2 id=b dc=1 at=+0s"}, j.take())
}

// L15 in a durable namespace: the release is in the log, and after a
// crash (which replays the log) or a clean close the released messages
// are as the release left them: available with the DeliveryCount they had
// before the delivery, deferred again, never dead-lettered.
func TestL15_ReleaseIsReplayed(t *testing.T) {
	for _, how := range []string{"crash", "close"} {
		t.Run(how, func(t *testing.T) {
			d := newDurableEnv(t)
			q := d.queue("q", &minibus.QueueProperties{MaxDeliveryCount: 1, LockDuration: 5 * time.Minute})
			d.send(q, "a", "b")
			r := d.receiver(q, nil)
			for range 3 {
				a := d.receive(r, 1)[0]
				require.EqualValues(t, 1, a.DeliveryCount)
				require.NoError(t, r.ReleaseMessage(d.ctx, a, nil))
			}
			got := d.receive(r, 2)
			require.NoError(t, r.ReleaseMessage(d.ctx, got[0], nil))
			require.NoError(t, r.DeferMessage(d.ctx, got[1], nil))
			b, err := r.ReceiveDeferredMessages(d.ctx, []int64{got[1].SequenceNumber}, nil)
			require.NoError(t, err)
			require.EqualValues(t, 2, b[0].DeliveryCount)
			require.NoError(t, r.ReleaseMessage(d.ctx, b[0], nil))
			if how == "crash" {
				d.crash()
			} else {
				d.reopen()
			}

			q = d.q("q")
			require.Zero(t, q.RuntimeProperties().DeadLetterMessageCount)
			r = d.receiver(q, nil)
			p := d.peekAll(r)
			require.Equal(t, []string{"a", "b"}, bodies(p))
			require.Equal(t, []uint32{0, 1}, []uint32{p[0].DeliveryCount, p[1].DeliveryCount})
			require.Equal(t, []minibus.MessageState{minibus.MessageStateActive, minibus.MessageStateDeferred}, []minibus.MessageState{p[0].State, p[1].State})
			a := d.receive(r, 1)[0]
			require.Equal(t, "a", string(a.Body))
			require.EqualValues(t, 1, a.DeliveryCount)
			d.requireNothing(r)
			b, err = r.ReceiveDeferredMessages(d.ctx, []int64{p[1].SequenceNumber}, nil)
			require.NoError(t, err)
			require.EqualValues(t, 2, b[0].DeliveryCount)
		})
	}
}
