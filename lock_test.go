package minibus_test

import (
	"context"
	"regexp"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// SEMANTICS L, locks and settlement, beyond the rules the conformance suite
// runs over every receiver kind (receiver_conformance_test.go): lock tokens
// and lock-lost errors, receive sizes (L8), closing (L11), counts (L13) and
// release (L15).

// L4: a lock-lost error names the message by its sequence number, for
// every delivery of it (a lock token's printed prefix is the same for every
// redelivery of a message and says nothing).
func TestL4_LockLostErrorNamesSequenceNumber(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	e.send(q, "a", "b", "c")
	r := e.receiver(q, nil)
	got := e.receive(r, 3)
	require.NoError(t, r.CompleteMessage(e.ctx, got[0], nil))
	require.NoError(t, r.CompleteMessage(e.ctx, got[1], nil))
	first := got[2]
	require.EqualValues(t, 3, first.SequenceNumber)
	names := regexp.MustCompile(`(message|sequence number) 3\b`)

	e.mock.Add(time.Minute) // the first delivery's lock expired
	err1 := r.CompleteMessage(e.ctx, first, nil)
	requireSentinel(t, err1, minibus.ErrLockLost, `queue "q"`)
	require.Regexp(t, names, err1.Error(), "the first delivery's lock-lost error names message 3")

	second := e.receive(r, 1)[0]
	require.Equal(t, first.SequenceNumber, second.SequenceNumber)
	require.NoError(t, r.AbandonMessage(e.ctx, second, nil))
	err2 := r.CompleteMessage(e.ctx, second, nil) // already settled
	requireSentinel(t, err2, minibus.ErrLockLost, `queue "q"`)
	require.Regexp(t, names, err2.Error(), "the second delivery's lock-lost error names message 3")
}

// sizedPlace is a queue or a subscription with MaxMessageSizeInKilobytes 64
// and MaxSizeInMegabytes 1 (a subscription's: its topic's).
type sizedPlace struct {
	e *env
	// send sends messages to the queue or the topic.
	send func(msgs ...*minibus.Message)
	r    *minibus.Receiver
	// counts reads the place's active and dead-letter counts and the size
	// counted against MaxSizeInMegabytes (for a subscription, its topic's
	// SizeInBytes).
	counts func() [3]int64
}

func newSizedPlace(t *testing.T, sub bool) *sizedPlace {
	e := newEnv(t)
	p := &sizedPlace{e: e}
	if sub {
		top := e.topic("t", &minibus.TopicProperties{MaxMessageSizeInKilobytes: 64, MaxSizeInMegabytes: 1})
		s := e.subscription(top, "s", nil)
		p.send = func(msgs ...*minibus.Message) { require.NoError(t, top.SendMessages(e.ctx, msgs, nil)) }
		p.r = e.receiver(s, nil)
		p.counts = func() [3]int64 {
			rp := s.RuntimeProperties()
			return [3]int64{rp.ActiveMessageCount, rp.DeadLetterMessageCount, top.RuntimeProperties().SizeInBytes}
		}
	} else {
		q := e.queue("q", &minibus.QueueProperties{MaxMessageSizeInKilobytes: 64, MaxSizeInMegabytes: 1})
		p.send = func(msgs ...*minibus.Message) { require.NoError(t, q.SendMessages(e.ctx, msgs, nil)) }
		p.r = e.receiver(q, nil)
		p.counts = func() [3]int64 {
			rp := q.RuntimeProperties()
			return [3]int64{rp.ActiveMessageCount, rp.DeadLetterMessageCount, rp.SizeInBytes}
		}
	}
	return p
}

// L1: lock tokens are random: a token is new at every delivery, of the
// same message or of another, and 95 of its bits are random. The broker
// gives each token 96 random bits, one of them fixed to 1 so that no token
// is all zero; the rest (the message's place in the store) may repeat. So
// over 1024 deliveries of one message, and over 1024 messages locked at
// once, at least 95 bit positions must each be set in 40%–60% of the
// tokens (a fair bit leaves that band with a chance below 1e-9), and no
// token may come twice. A token that lost 32 or 64 of its random bits
// fails (issue 42).
func TestL1_LockTokensAreRandom(t *testing.T) {
	const n = 1024
	e := newEnv(t)
	q := e.queue("q", nil)
	r := e.receiver(q, nil)
	seen := map[[16]byte]bool{}
	check := func(what string, tokens [][16]byte) {
		t.Helper()
		for _, tok := range tokens {
			require.False(t, seen[tok], "%s: token %x twice", what, tok)
			seen[tok] = true
		}
		fair := 0
		for bit := range 128 {
			ones := 0
			for _, tok := range tokens {
				ones += int(tok[bit/8] >> (bit % 8) & 1)
			}
			if ones >= 4*n/10 && ones <= 6*n/10 {
				fair++
			}
		}
		require.GreaterOrEqual(t, fair, 95, "%s: bit positions set in 40%%-60%% of %d tokens", what, n)
	}

	e.send(q, "one")
	var tokens [][16]byte
	for range n {
		m := e.receive(r, 1)[0]
		tokens = append(tokens, m.LockToken)
		require.NoError(t, r.ReleaseMessage(e.ctx, m, nil))
	}
	check("one message delivered again and again", tokens)

	msgs := make([]*minibus.Message, n-1)
	for i := range msgs {
		msgs[i] = &minibus.Message{}
	}
	require.NoError(t, q.SendMessages(e.ctx, msgs, nil))
	tokens = tokens[:0]
	for _, m := range e.receive(r, n) {
		tokens = append(tokens, m.LockToken)
	}
	check("many messages locked at once", tokens)
}

// L11, Close: Namespace.Close wakes a blocked receiver, which returns
// ErrClosed.
func TestL11_NamespaceCloseWakesBlockedReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mock := clock.NewMock()
		ns := minibus.NewNamespace(minibus.WithClock(mock))
		q, err := ns.CreateQueue("q", nil)
		require.NoError(t, err)
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		defer r.Close(ctx) // also wakes a receive a broken Close left blocked
		type result struct {
			msgs []*minibus.ReceivedMessage
			err  error
		}
		done := make(chan result, 1)
		go func() {
			msgs, err := r.ReceiveMessages(ctx, 1, nil)
			done <- result{msgs, err}
		}()
		synctest.Wait()
		require.Empty(t, done, "blocked: the queue is empty")
		require.NoError(t, ns.Close())
		select {
		case res := <-done:
			require.Nil(t, res.msgs)
			requireSentinel(t, res.err, minibus.ErrClosed, "")
		case <-time.After(resultTimeout):
			t.Fatal("Namespace.Close did not wake the blocked receiver")
		}
	})
}

// L8: ReceiveMessages returns min(maxMessages, available) messages in one
// call, in sequence order: 150 of 200, then the other 50 (no cap below
// maxMessages), in both receive modes.
func TestL8_ReceiveReturnsMinOfMaxAndAvailable(t *testing.T) {
	for _, mode := range []minibus.ReceiveMode{minibus.ReceiveModePeekLock, minibus.ReceiveModeReceiveAndDelete} {
		e := newEnv(t)
		q := e.queue("q", nil)
		all := make([]string, 200)
		for i := range all {
			all[i] = "m"
		}
		e.send(q, all...)
		r := e.receiver(q, &minibus.ReceiverOptions{ReceiveMode: mode})
		want := make([]int64, 200)
		for i := range want {
			want[i] = int64(i + 1)
		}
		first, err := r.ReceiveMessages(e.ctx, 150, nil)
		require.NoError(t, err)
		require.Equal(t, want[:150], seqs(first), "mode %v: exactly 150 of 200 in one call", mode)
		rest, err := r.ReceiveMessages(e.ctx, 150, nil)
		require.NoError(t, err)
		require.Equal(t, want[150:], seqs(rest), "mode %v: the 50 left", mode)
	}
}

// L11: Receiver.Close wakes that receiver's own blocked ReceiveMessages,
// which returns ErrClosed; another receiver's blocked call stays blocked.
// In a synctest bubble, so that "blocked" is exact.
func TestL11_ReceiverCloseWakesItsBlockedReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mock := clock.NewMock()
		ns := minibus.NewNamespace(minibus.WithClock(mock))
		defer ns.Close() // also wakes a receive a broken Close left blocked
		q, err := ns.CreateQueue("q", nil)
		require.NoError(t, err)
		closing, err := q.NewReceiver(nil)
		require.NoError(t, err)
		other, err := q.NewReceiver(nil)
		require.NoError(t, err)
		type result struct {
			msgs []*minibus.ReceivedMessage
			err  error
		}
		closingDone := make(chan result, 1)
		otherDone := make(chan result, 1)
		go func() {
			msgs, err := closing.ReceiveMessages(ctx, 1, nil)
			closingDone <- result{msgs, err}
		}()
		go func() {
			msgs, err := other.ReceiveMessages(ctx, 1, nil)
			otherDone <- result{msgs, err}
		}()
		synctest.Wait()
		require.Empty(t, closingDone, "blocked: the queue is empty")
		require.Empty(t, otherDone, "blocked: the queue is empty")

		require.NoError(t, closing.Close(ctx))
		synctest.Wait()
		select {
		case res := <-closingDone:
			require.Nil(t, res.msgs)
			requireSentinel(t, res.err, minibus.ErrClosed, "receiver")
		default:
			t.Fatal("Receiver.Close did not wake its blocked ReceiveMessages")
		}
		require.Empty(t, otherDone, "another receiver's blocked call is not woken")

		require.NoError(t, q.SendMessage(ctx, &minibus.Message{Body: []byte("a")}, nil))
		synctest.Wait()
		select {
		case res := <-otherDone:
			require.NoError(t, res.err)
			require.Equal(t, []string{"a"}, bodies(res.msgs))
		default:
			t.Fatal("the other receiver did not get the message")
		}
	})
}

// L13: runtime counts include session messages.
func TestL13_CountsIncludeSessions(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("s", nil)
	e.sendSession(q, "a", "a0", "a1")
	e.sendSession(q, "b", "b0")
	s := e.accept(q, "a")
	m := e.receiveSession(s, 1)[0]
	require.NoError(t, s.DeferMessage(e.ctx, m, nil))
	rp := q.RuntimeProperties()
	require.EqualValues(t, 3, rp.ActiveMessageCount)
	require.EqualValues(t, 3, rp.TotalMessageCount)
}

// L11: a receive that has passed its first check of the receiver's closed
// flag, and is held in its own catch-up (here: an observer handed an
// expiry of another queue, as the catch-up delivers its events before the
// receive takes its entity's lock) while Receiver.Close completes,
// returns ErrClosed and takes nothing, though a message is available: the
// receive checks again under the entity's lock. Without that check it
// would take the message for a closed receiver (issue 42).
func TestL11_ReceiveClosedDuringItsCatchUp(t *testing.T) {
	ctx := context.Background()
	mock := clock.NewMock()
	mock.Set(epoch)
	reached, release := make(chan struct{}), make(chan struct{})
	var delivered []string
	ns := minibus.NewNamespace(minibus.WithClock(mock), minibus.WithObserver(func(ev minibus.Event) {
		switch {
		case ev.Kind == minibus.EventExpired && ev.Entity == "other":
			close(reached)
			<-release
		case ev.Kind == minibus.EventDelivered:
			delivered = append(delivered, ev.MessageID) // one receive at a time here
		}
	}))
	defer ns.Close()
	q, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	other, err := ns.CreateQueue("other", nil)
	require.NoError(t, err)
	require.NoError(t, other.SendMessage(ctx, &minibus.Message{MessageID: "x", TimeToLive: time.Minute}, nil))
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "a"}, nil))
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	mock.Add(time.Minute) // x is due to expire: the next call's catch-up does it

	type result struct {
		msgs []*minibus.ReceivedMessage
		err  error
	}
	got := make(chan result, 1)
	go func() {
		msgs, err := r.ReceiveMessages(ctx, 1, nil)
		got <- result{msgs, err}
	}()
	select {
	case <-reached: // the receive is in its catch-up, past its first check
	case <-time.After(resultTimeout):
		t.Fatal("the receive did not catch up")
	}
	require.NoError(t, r.Close(ctx))
	close(release)
	var res result
	select {
	case res = <-got:
	case <-time.After(resultTimeout):
		t.Fatal("the receive did not return")
	}
	requireSentinel(t, res.err, minibus.ErrClosed, `receiver of queue "q"`)
	require.Nil(t, res.msgs)
	require.Empty(t, delivered, "nothing was taken")

	r2, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer r2.Close(ctx)
	msgs, err := r2.ReceiveMessages(ctx, 1, &minibus.ReceiveMessagesOptions{NoWait: true})
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, "a", msgs[0].MessageID)
	require.EqualValues(t, 1, msgs[0].DeliveryCount, "its first delivery")
}

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
