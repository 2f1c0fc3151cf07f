package e2e_test

// Settlement through azservicebus: on the receiver link (W6), through
// $management update-disposition when the link is gone or the message was
// fetched by sequence number (W6, W8, L10), deferred messages (L9), the
// dead-letter and transfer dead-letter sub-queues (D1, D2, F3).

import (
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
)

// TestSDKSettle_OnLink_W6_L3 settles four messages on their link, one
// outcome each: Accepted completes, Modified abandons (its annotations
// merged into the application properties) or defers (undeliverable-here),
// Rejected com.microsoft:dead-letter dead-letters with reason, description
// and properties (W6, L3).
func TestSDKSettle_OnLink_W6_L3(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", nil)
	s := e.sender("orders")
	r := e.receiver("orders", nil)
	ctx := e.ctx(sdkTimeout)
	for _, b := range []string{"complete", "abandon", "defer", "deadletter"} {
		require.NoError(t, s.SendMessage(ctx, &azservicebus.Message{Body: []byte(b), ApplicationProperties: map[string]any{"orig": "o"}}, nil))
	}
	enqueued := e.now()
	got := e.receiveN(r, 4)
	e.advance(time.Second) // so that a settlement's instant differs from the enqueue's

	require.NoError(t, r.CompleteMessage(ctx, got[0], nil))
	require.NoError(t, r.AbandonMessage(ctx, got[1], &azservicebus.AbandonMessageOptions{
		PropertiesToModify: map[string]any{"retried": true, "orig": "changed"},
	}))
	require.NoError(t, r.DeferMessage(ctx, got[2], &azservicebus.DeferMessageOptions{
		PropertiesToModify: map[string]any{"deferred": int64(1)},
	}))
	require.NoError(t, r.DeadLetterMessage(ctx, got[3], &azservicebus.DeadLetterOptions{
		Reason: sdkPtr("bad order"), ErrorDescription: sdkPtr("no such product"),
		PropertiesToModify: map[string]any{"why": "sku"},
	}))

	c := e.queueCounts("orders")
	require.Equal(t, int64(2), c.ActiveMessageCount, "abandoned and deferred")
	require.Equal(t, int64(1), c.DeadLetterMessageCount)
	require.Equal(t, int64(3), c.TotalMessageCount)

	// The abandoned message is next again (Q4), its delivery counted, its
	// properties merged.
	again := e.receiveN(r, 1)[0]
	require.Equal(t, "abandon", string(again.Body))
	require.Equal(t, uint32(2), again.DeliveryCount)
	require.Equal(t, *got[1].SequenceNumber, *again.SequenceNumber)
	require.Equal(t, map[string]any{"orig": "changed", "retried": true}, again.ApplicationProperties)
	require.NoError(t, r.CompleteMessage(ctx, again, nil))

	// The deferred message is only seen by peek, in State Deferred.
	e.receiveNone(r)
	peeked, err := r.PeekMessages(ctx, 5, &azservicebus.PeekMessagesOptions{FromSequenceNumber: sdkPtr(int64(1))})
	require.NoError(t, err)
	require.Len(t, peeked, 1)
	require.Equal(t, "defer", string(peeked[0].Body))
	require.Equal(t, azservicebus.MessageStateDeferred, peeked[0].State)
	require.Equal(t, map[string]any{"orig": "o", "deferred": int64(1)}, peeked[0].ApplicationProperties)

	// The dead-lettered message keeps what it had (D2) and gains the
	// reason, the description and the properties.
	dlq := e.receiver("orders", &azservicebus.ReceiverOptions{SubQueue: azservicebus.SubQueueDeadLetter})
	dl := e.receiveN(dlq, 1)[0]
	require.Equal(t, "deadletter", string(dl.Body))
	require.Equal(t, "bad order", *dl.DeadLetterReason)
	require.Equal(t, "no such product", *dl.DeadLetterErrorDescription)
	require.Equal(t, "sku", dl.ApplicationProperties["why"])
	require.Equal(t, "o", dl.ApplicationProperties["orig"])
	require.Equal(t, *got[3].SequenceNumber, *dl.SequenceNumber, "D2")
	require.True(t, enqueued.Equal(*dl.EnqueuedTime), "D2")
	require.Equal(t, uint32(2), dl.DeliveryCount, "D2, L14: the count it had, and this delivery from the DLQ")
	require.Equal(t, azservicebus.MessageStateActive, dl.State, "L14")
	require.Nil(t, dl.DeadLetterSource, "D4: set only when forwarded")
	require.NoError(t, dlq.CompleteMessage(ctx, dl, nil))
	c = e.queueCounts("orders")
	require.Zero(t, c.DeadLetterMessageCount)
	require.Equal(t, int64(1), c.TotalMessageCount)
}

// TestSDKSettle_Deferred_L9_W8 fetches deferred messages by sequence
// number (receive-by-sequence-number, W8: each carries its lock token)
// and settles them, as the SDK always does for them, through
// update-disposition: an abandoned deferred message stays deferred with
// its delivery counted (L9), a renewed one keeps its lock (L5), a number
// that is not deferred is message-not-found and fetches nothing.
func TestSDKSettle_Deferred_L9_W8(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", nil)
	s := e.sender("orders")
	r := e.receiver("orders", nil)
	ctx := e.ctx(sdkTimeout)
	e.send(s, "one", "two", "three")
	got := e.receiveN(r, 3)
	for _, m := range got {
		require.NoError(t, r.DeferMessage(ctx, m, nil))
	}
	seq := func(i int) int64 { return *got[i].SequenceNumber }

	// In the order named (L9).
	d, err := r.ReceiveDeferredMessages(ctx, []int64{seq(2), seq(0)}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"three", "one"}, bodies(d))
	for _, m := range d {
		require.Equal(t, azservicebus.MessageStateDeferred, m.State, "L14")
		require.Equal(t, uint32(2), m.DeliveryCount, "L9: a fetch is a delivery")
		require.NotEqual(t, [16]byte{}, m.LockToken, "W8: the lock token travels with the message")
		require.True(t, e.now().Add(time.Minute).Equal(*m.LockedUntil))
	}

	// Locked right now: fetching it again is message-not-found and changes
	// nothing (L9), nor does a number that was never deferred.
	_, err = r.ReceiveDeferredMessages(ctx, []int64{seq(1), seq(2)}, nil)
	require.Equal(t, azservicebus.CodeNotFound, sdkCode(err), "L9: a locked one is message-not-found (404): %v", err)
	_, err = r.ReceiveDeferredMessages(ctx, []int64{99}, nil)
	require.Equal(t, azservicebus.CodeNotFound, sdkCode(err), "L9: %v", err)
	peeked, err := r.PeekMessages(ctx, 3, &azservicebus.PeekMessagesOptions{FromSequenceNumber: sdkPtr(seq(1))})
	require.NoError(t, err)
	require.Equal(t, uint32(1), peeked[0].DeliveryCount, "L9: the refused fetch changed nothing")

	e.advance(30 * time.Second)
	require.NoError(t, r.RenewMessageLock(ctx, d[0], nil))
	require.True(t, e.now().Add(time.Minute).Equal(*d[0].LockedUntil), "L5: renewed in the caller's message")
	require.NoError(t, r.CompleteMessage(ctx, d[0], nil))
	require.NoError(t, r.AbandonMessage(ctx, d[1], &azservicebus.AbandonMessageOptions{PropertiesToModify: map[string]any{"a": "b"}}))

	again, err := r.ReceiveDeferredMessages(ctx, []int64{seq(0), seq(1)}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"one", "two"}, bodies(again))
	require.Equal(t, uint32(3), again[0].DeliveryCount, "L9: the abandoned fetch counted")
	require.Equal(t, map[string]any{"a": "b"}, again[0].ApplicationProperties)
	require.Equal(t, uint32(2), again[1].DeliveryCount)
	require.NoError(t, r.DeferMessage(ctx, again[0], &azservicebus.DeferMessageOptions{PropertiesToModify: map[string]any{"c": "d"}}))
	require.NoError(t, r.DeadLetterMessage(ctx, again[1], &azservicebus.DeadLetterOptions{Reason: sdkPtr("r"), ErrorDescription: sdkPtr("d")}))

	c := e.queueCounts("orders")
	require.Equal(t, int64(1), c.ActiveMessageCount)
	require.Equal(t, int64(1), c.DeadLetterMessageCount)
	dl := e.receiveN(e.receiver("orders", &azservicebus.ReceiverOptions{SubQueue: azservicebus.SubQueueDeadLetter}), 1)[0]
	require.Equal(t, "two", string(dl.Body))
	require.Equal(t, "r", *dl.DeadLetterReason)
	require.Equal(t, "d", *dl.DeadLetterErrorDescription)
	last, err := r.ReceiveDeferredMessages(ctx, []int64{seq(0)}, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": "b", "c": "d"}, last[0].ApplicationProperties)
	require.NoError(t, r.CompleteMessage(ctx, last[0], nil))
	require.Equal(t, int64(0), e.queueCounts("orders").ActiveMessageCount)
}

// TestSDKSettle_AfterReceiverClosed_W6_L10 settles messages whose receiver
// link is closed: the SDK's settlement on the closed link fails with a
// link error and it falls back to update-disposition on another
// receiver's $management link, which settles by lock token (W6, L10).
func TestSDKSettle_AfterReceiverClosed_W6_L10(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", nil)
	s := e.sender("orders")
	ctx := e.ctx(sdkTimeout)
	e.send(s, "complete", "abandon", "defer", "deadletter")
	r1, err := e.client.NewReceiverForQueue("orders", nil)
	require.NoError(t, err)
	got := e.receiveN(r1, 4)
	require.NoError(t, r1.Close(ctx))

	r2 := e.receiver("orders", nil)
	require.NoError(t, r2.CompleteMessage(ctx, got[0], nil))
	require.NoError(t, r2.AbandonMessage(ctx, got[1], &azservicebus.AbandonMessageOptions{PropertiesToModify: map[string]any{"n": int32(1)}}))
	require.NoError(t, r2.DeferMessage(ctx, got[2], nil))
	require.NoError(t, r2.DeadLetterMessage(ctx, got[3], &azservicebus.DeadLetterOptions{
		Reason: sdkPtr("why"), ErrorDescription: sdkPtr("because"), PropertiesToModify: map[string]any{"p": "q"},
	}))
	require.Equal(t, azservicebus.CodeLockLost, sdkCode(r2.CompleteMessage(ctx, got[0], nil)), "L4: already settled")

	c := e.queueCounts("orders")
	require.Equal(t, int64(2), c.ActiveMessageCount)
	require.Equal(t, int64(1), c.DeadLetterMessageCount)
	again := e.receiveN(r2, 1)[0]
	require.Equal(t, "abandon", string(again.Body))
	require.Equal(t, uint32(2), again.DeliveryCount)
	require.Equal(t, int32(1), again.ApplicationProperties["n"])
	require.NoError(t, r2.CompleteMessage(ctx, again, nil))
	d, err := r2.ReceiveDeferredMessages(ctx, []int64{*got[2].SequenceNumber}, nil)
	require.NoError(t, err)
	require.Equal(t, "defer", string(d[0].Body))
	require.NoError(t, r2.CompleteMessage(ctx, d[0], nil))
	dl := e.receiveN(e.receiver("orders", &azservicebus.ReceiverOptions{SubQueue: azservicebus.SubQueueDeadLetter}), 1)[0]
	require.Equal(t, "why", *dl.DeadLetterReason)
	require.Equal(t, "because", *dl.DeadLetterErrorDescription)
	require.Equal(t, "q", dl.ApplicationProperties["p"])
}

// TestSDKSettle_LockTokenOnly_AfterConnectionGone_W6 settles with only a
// lock token, as the SDK's Example_settleWithLockToken does, after the
// client (and its connection) that received the message is closed: the
// lock outlives the connection (W6) and another client's receiver renews
// and completes it through $management.
func TestSDKSettle_LockTokenOnly_AfterConnectionGone_W6(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", nil)
	e.send(e.sender("orders"), "a", "b")
	other := e.newClient()
	r1 := sdkReceiver(t, other, "orders", nil)
	got := e.receiveN(r1, 2)
	require.NoError(t, other.Close(e.ctx(sdkTimeout)))

	ctx := e.ctx(sdkTimeout)
	r2 := e.receiver("orders", nil)
	e.advance(20 * time.Second)
	tok := &azservicebus.ReceivedMessage{LockToken: got[0].LockToken}
	require.NoError(t, r2.RenewMessageLock(ctx, tok, nil))
	require.True(t, e.now().Add(time.Minute).Equal(*tok.LockedUntil), "L5")
	require.NoError(t, r2.CompleteMessage(ctx, tok, nil))
	require.NoError(t, r2.AbandonMessage(ctx, &azservicebus.ReceivedMessage{LockToken: got[1].LockToken}, nil))
	m := e.receiveN(r2, 1)[0]
	require.Equal(t, "b", string(m.Body))
	require.Equal(t, uint32(2), m.DeliveryCount)
	require.NoError(t, r2.CompleteMessage(ctx, m, nil))
	require.Zero(t, e.queueCounts("orders").TotalMessageCount)
}

// TestSDKSettle_DeadLetterQueue_D1_D3 reads a queue's and a
// subscription's dead-letter queues (addresses …/$DeadLetterQueue, W2):
// abandon, defer and complete work there, and neither MaxDeliveryCount nor
// TTL applies (D3).
func TestSDKSettle_DeadLetterQueue_D1_D3(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", &minibus.QueueProperties{MaxDeliveryCount: 1, DefaultMessageTimeToLive: time.Hour})
	tp := e.topic("events")
	_, err := tp.CreateSubscription("audit", &minibus.SubscriptionProperties{MaxDeliveryCount: 1})
	require.NoError(t, err)
	ctx := e.ctx(sdkTimeout)
	e.send(e.sender("orders"), "q")
	e.send(e.sender("events"), "t")

	for _, tc := range []struct {
		name string
		main *azservicebus.Receiver
		dlq  *azservicebus.Receiver
	}{
		{"queue", e.receiver("orders", nil), e.receiver("orders", &azservicebus.ReceiverOptions{SubQueue: azservicebus.SubQueueDeadLetter})},
		{"subscription", e.subReceiver("events", "audit", nil), e.subReceiver("events", "audit", &azservicebus.ReceiverOptions{SubQueue: azservicebus.SubQueueDeadLetter})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := e.receiveN(tc.main, 1)[0]
			require.NoError(t, tc.main.DeadLetterMessage(ctx, m, nil))
			// Abandoned twice in the DLQ: MaxDeliveryCount 1 does not apply.
			for i := range 2 {
				dl := e.receiveN(tc.dlq, 1)[0]
				require.Equal(t, uint32(i+2), dl.DeliveryCount, "D2, L14: its one main delivery, then each DLQ delivery")
				require.NoError(t, tc.dlq.AbandonMessage(ctx, dl, nil))
			}
			e.advance(2 * time.Hour) // E6: nothing expires in a DLQ
			dl := e.receiveN(tc.dlq, 1)[0]
			require.NoError(t, tc.dlq.DeferMessage(ctx, dl, nil))
			d, err := tc.dlq.ReceiveDeferredMessages(ctx, []int64{*dl.SequenceNumber}, nil)
			require.NoError(t, err)
			require.Len(t, d, 1)
			require.NoError(t, tc.dlq.CompleteMessage(ctx, d[0], nil))
		})
	}
	require.Zero(t, e.queueCounts("orders").TotalMessageCount)
	require.Zero(t, e.subCounts("events", "audit").TotalMessageCount)
}

// TestSDKSettle_TransferDeadLetterQueue_F3 forwards from a queue to one
// that is then disabled: the message goes to the source's transfer
// dead-letter queue (F3), read with SubQueueTransfer (address
// …/$Transfer/$DeadLetterQueue, W2).
func TestSDKSettle_TransferDeadLetterQueue_F3(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("dst", nil)
	e.queue("src", &minibus.QueueProperties{ForwardTo: "dst"})
	_, err := e.ns.UpdateQueue("dst", minibus.QueueProperties{Status: minibus.EntityStatusDisabled})
	require.NoError(t, err)
	e.send(e.sender("src"), "lost?")
	c := e.queueCounts("src")
	require.Equal(t, int64(1), c.TransferDeadLetterMessageCount)
	require.Zero(t, c.ActiveMessageCount)

	tdlq := e.receiver("src", &azservicebus.ReceiverOptions{SubQueue: azservicebus.SubQueueTransfer})
	m := e.receiveN(tdlq, 1)[0]
	require.Equal(t, "lost?", string(m.Body))
	require.Equal(t, "TransferFailed", *m.DeadLetterReason)
	require.Contains(t, *m.DeadLetterErrorDescription, "dst")
	require.NoError(t, tdlq.CompleteMessage(e.ctx(sdkTimeout), m, nil))
	require.Zero(t, e.queueCounts("src").TotalMessageCount)
}

// TestSDKSettle_Forwarding_F2_D4_W5 reads auto-forwarded messages through
// the SDK: a message forwarded by ForwardTo carries the number it was
// first given as EnqueuedSequenceNumber (x-opt-enqueue-sequence-number,
// F2, W5); one dead-lettered into ForwardDeadLetteredMessagesTo carries
// its source as DeadLetterSource (x-opt-deadletter-source, D4).
func TestSDKSettle_Forwarding_F2_D4_W5(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("dst", nil)
	e.queue("dlsink", nil)
	e.queue("src", &minibus.QueueProperties{ForwardTo: "dst"})
	e.queue("work", &minibus.QueueProperties{ForwardDeadLetteredMessagesTo: "dlsink"})
	ctx := e.ctx(sdkTimeout)
	e.send(e.sender("dst"), "first") // dst's own number 1
	e.send(e.sender("src"), "forwarded")
	got := e.receiveN(e.receiver("dst", nil), 2)
	require.Equal(t, []string{"first", "forwarded"}, bodies(got))
	require.Nil(t, got[0].EnqueuedSequenceNumber)
	require.Equal(t, int64(2), *got[1].SequenceNumber, "F2: the destination's own number")
	require.Equal(t, int64(1), *got[1].EnqueuedSequenceNumber, "F2: the number it got in src")

	e.send(e.sender("work"), "poison")
	wr := e.receiver("work", nil)
	m := e.receiveN(wr, 1)[0]
	require.NoError(t, wr.DeadLetterMessage(ctx, m, &azservicebus.DeadLetterOptions{Reason: sdkPtr("bad")}))
	require.Zero(t, e.queueCounts("work").TotalMessageCount)
	dl := e.receiveN(e.receiver("dlsink", nil), 1)[0]
	require.Equal(t, "poison", string(dl.Body))
	require.Equal(t, "work", *dl.DeadLetterSource, "D4")
	require.Equal(t, "bad", *dl.DeadLetterReason)
}
