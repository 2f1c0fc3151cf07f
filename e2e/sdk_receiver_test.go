package e2e_test

// Receiver methods of azservicebus over the wire: ReceiveMessages,
// PeekMessages, receive-and-delete, Close (SEMANTICS W5, L1, L2, L7, L8,
// L11, L12, L14).

import (
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
)

// TestSDKReceiver_ReceiveMessages_W5_L1_EveryField sends a message in
// process with every field and receives it through the SDK: each field
// arrives in the annotation, property or header W5 names, in the type the
// SDK asserts, application properties in their Go types; the lock token
// (the delivery tag in .NET GUID order) is the broker's, since minibus
// settles by it in process (L10).
func TestSDKReceiver_ReceiveMessages_W5_L1_EveryField(t *testing.T) {
	e := newSDKEnv(t)
	q := e.queue("orders", &minibus.QueueProperties{LockDuration: 30 * time.Second})
	stamp := time.Date(2025, 6, 1, 12, 30, 0, 5_000_000, time.UTC)
	ctx := e.ctx(sdkTimeout)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{
		MessageID: "m-1", Body: []byte("hello"), ContentType: "application/json",
		CorrelationID: "c-1", Subject: "subj", To: "to", ReplyTo: "rt", ReplyToSessionID: "rts",
		PartitionKey: "pk", TimeToLive: 10 * time.Minute,
		ApplicationProperties: map[string]any{
			"str": "x", "int64": int64(-5), "int32": int32(6), "uint16": uint16(7), "float64": 2.25,
			"bool": false, "time": stamp, "bin": []byte{9},
		},
	}, nil))
	r := e.receiver("orders", nil)
	m := e.receiveN(r, 1)[0]
	now := e.now()
	require.Equal(t, "m-1", m.MessageID)
	require.Equal(t, "hello", string(m.Body))
	require.Equal(t, "application/json", *m.ContentType)
	require.Equal(t, "c-1", *m.CorrelationID)
	require.Equal(t, "subj", *m.Subject)
	require.Equal(t, "to", *m.To)
	require.Equal(t, "rt", *m.ReplyTo)
	require.Equal(t, "rts", *m.ReplyToSessionID)
	require.Equal(t, "pk", *m.PartitionKey)
	require.Equal(t, 10*time.Minute, *m.TimeToLive)
	require.Equal(t, int64(1), *m.SequenceNumber)
	require.True(t, now.Equal(*m.EnqueuedTime))
	require.True(t, now.Add(10*time.Minute).Equal(*m.ExpiresAt), "E2")
	require.True(t, now.Add(30*time.Second).Equal(*m.LockedUntil), "L1: locked for LockDuration")
	require.Equal(t, uint32(1), m.DeliveryCount, "L1: the first delivery reads 1")
	require.Equal(t, azservicebus.MessageStateActive, m.State)
	require.Nil(t, m.DeadLetterReason)
	require.Nil(t, m.SessionID)
	require.NotEqual(t, [16]byte{}, m.LockToken)
	require.Equal(t, map[string]any{
		"str": "x", "int64": int64(-5), "int32": int32(6), "uint16": uint16(7), "float64": 2.25,
		"bool": false, "time": stamp, "bin": []byte{9},
	}, utcProps(m.ApplicationProperties), "application properties keep their Go types (W5)")

	// L2: locked, it is invisible to another receive.
	e.receiveNone(e.receiver("orders", nil))

	// The SDK's lock token is the broker's: complete it in process (L10).
	ir, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer ir.Close(ctx)
	require.NoError(t, ir.CompleteMessage(ctx, &minibus.ReceivedMessage{LockToken: m.LockToken}, nil))
	require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	require.Equal(t, azservicebus.CodeLockLost, sdkCode(r.CompleteMessage(ctx, m, nil)), "L4: already settled")
}

// TestSDKReceiver_ReceiveMessages_L8_Order receives in sequence order and
// never more than asked; with nothing available it waits until its ctx
// ends, and a message sent while it waits wakes it (L8, T5).
func TestSDKReceiver_ReceiveMessages_L8_Order(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", nil)
	s := e.sender("orders")
	r := e.receiver("orders", nil)
	for i := range 7 {
		e.send(s, fmt.Sprint(i))
	}
	ctx := e.ctx(sdkTimeout)
	first, err := r.ReceiveMessages(ctx, 3, &azservicebus.ReceiveMessagesOptions{TimeAfterFirstMessage: 5 * time.Second})
	require.NoError(t, err)
	require.Len(t, first, 3, "L8: min(maxMessages, available), at once")
	rest := e.receiveN(r, 7-len(first))
	all := append(first, rest...)
	for i, m := range all {
		require.Equal(t, fmt.Sprint(i), string(m.Body), "L8: sequence order")
		require.Equal(t, int64(i+1), *m.SequenceNumber)
	}
	for _, m := range all {
		require.NoError(t, r.CompleteMessage(ctx, m, nil))
	}
	require.Zero(t, e.queueCounts("orders").TotalMessageCount)

	// Nothing available: the receive waits; a send wakes it.
	e.receiveNone(r)
	done := make(chan []*azservicebus.ReceivedMessage, 1)
	go func() {
		msgs, _ := r.ReceiveMessages(ctx, 5, nil)
		done <- msgs
	}()
	e.send(s, "late")
	select {
	case msgs := <-done:
		require.Equal(t, []string{"late"}, bodies(msgs))
		require.Equal(t, uint32(1), msgs[0].DeliveryCount, "L15: the releaser's release did not count")
		require.NoError(t, r.CompleteMessage(ctx, msgs[0], nil))
	case <-ctx.Done():
		t.Fatal("a blocked receive was not woken by a send")
	}
}

// TestSDKReceiver_PeekMessages_L12_L14 peeks through $management
// (peek-message, W8): every message in sequence order, locked, deferred
// and scheduled ones included, with their State; FromSequenceNumber and
// the receiver's cursor; nothing locked; an empty page is no error.
func TestSDKReceiver_PeekMessages_L12_L14(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", nil)
	s := e.sender("orders")
	r := e.receiver("orders", nil)
	ctx := e.ctx(sdkTimeout)
	e.send(s, "a", "b", "c")
	_, err := s.ScheduleMessages(ctx, []*azservicebus.Message{{Body: []byte("s")}}, e.now().Add(time.Hour), nil)
	require.NoError(t, err)
	got := e.receiveN(r, 2) // a, b locked
	require.NoError(t, r.DeferMessage(ctx, got[1], nil))

	peeked, err := r.PeekMessages(ctx, 10, &azservicebus.PeekMessagesOptions{FromSequenceNumber: sdkPtr(int64(1))})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c", "s"}, bodies(peeked))
	require.Equal(t, []azservicebus.MessageState{
		azservicebus.MessageStateActive, azservicebus.MessageStateDeferred,
		azservicebus.MessageStateActive, azservicebus.MessageStateScheduled,
	}, []azservicebus.MessageState{peeked[0].State, peeked[1].State, peeked[2].State, peeked[3].State})
	for i, m := range peeked {
		require.Equal(t, int64(i+1), *m.SequenceNumber)
		require.Equal(t, [16]byte{}, m.LockToken, "L12: a peeked message has no lock token")
		require.Nil(t, m.LockedUntil)
	}

	// The cursor: peeks without FromSequenceNumber continue where the
	// last one stopped.
	p1, err := r.PeekMessages(ctx, 2, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, bodies(p1))
	p2, err := r.PeekMessages(ctx, 2, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"c", "s"}, bodies(p2))
	p3, err := r.PeekMessages(ctx, 2, nil)
	require.NoError(t, err)
	require.Empty(t, p3, "L12: an empty page is no error")

	from3, err := r.PeekMessages(ctx, 1, &azservicebus.PeekMessagesOptions{FromSequenceNumber: sdkPtr(int64(3))})
	require.NoError(t, err)
	require.Equal(t, []string{"c"}, bodies(from3))

	// Peeking locked nothing: c is still receivable, a still locked.
	got2 := e.receiveN(r, 1)
	require.Equal(t, "c", string(got2[0].Body))
	require.Equal(t, uint32(1), got2[0].DeliveryCount)
	c := e.queueCounts("orders")
	require.Equal(t, int64(3), c.ActiveMessageCount, "L13: locked and deferred count as active")
	require.Equal(t, int64(1), c.ScheduledMessageCount)
}

// TestSDKReceiver_ReceiveAndDelete_L7_W5 receives in receive-and-delete
// mode (snd-settle-mode settled): each message is removed as it is
// delivered, carries no lock, and cannot be settled.
func TestSDKReceiver_ReceiveAndDelete_L7_W5(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", nil)
	s := e.sender("orders")
	e.send(s, "a", "b", "c")
	r := e.receiver("orders", &azservicebus.ReceiverOptions{ReceiveMode: azservicebus.ReceiveModeReceiveAndDelete})
	got := sdkReceiveN(t, r, 3, nil)
	require.Equal(t, []string{"a", "b", "c"}, bodies(got))
	for i, m := range got {
		require.Equal(t, int64(i+1), *m.SequenceNumber)
		require.Equal(t, [16]byte{}, m.LockToken, "L7: no lock token")
		require.Nil(t, m.LockedUntil, "L7: no lock")
		require.Equal(t, uint32(1), m.DeliveryCount, "L7: this delivery counts")
	}
	require.Zero(t, e.queueCounts("orders").TotalMessageCount, "L7: removed as returned %+v", e.queueCounts("orders"))
	require.Error(t, r.CompleteMessage(e.ctx(sdkTimeout), got[0], nil), "L7: not settleable")

	// ReceiveDeferredMessages in receive-and-delete removes the deferred
	// message (L9).
	plr := e.receiver("orders", nil)
	e.send(s, "d")
	d := e.receiveN(plr, 1)[0]
	require.NoError(t, plr.DeferMessage(e.ctx(sdkTimeout), d, nil))
	fetched, err := r.ReceiveDeferredMessages(e.ctx(sdkTimeout), []int64{*d.SequenceNumber}, nil)
	require.NoError(t, err)
	require.Len(t, fetched, 1)
	require.Equal(t, "d", string(fetched[0].Body))
	require.Equal(t, azservicebus.MessageStateDeferred, fetched[0].State, "L14")
	require.Zero(t, e.queueCounts("orders").TotalMessageCount)
}

// TestSDKReceiver_Close_L11 closes a receiver holding a lock: the lock
// outlives the link (W6) and ends at LockedUntil, when the message is
// delivered again with its delivery counted (L6); calls on the closed
// receiver fail with the SDK's closed code.
func TestSDKReceiver_Close_L11(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("orders", nil)
	e.send(e.sender("orders"), "a")
	r, err := e.client.NewReceiverForQueue("orders", nil)
	require.NoError(t, err)
	m := e.receiveN(r, 1)[0]
	require.NoError(t, r.Close(e.ctx(sdkTimeout)))
	_, err = r.ReceiveMessages(e.ctx(sdkTimeout), 1, nil)
	require.Equal(t, azservicebus.CodeClosed, sdkCode(err))

	r2 := e.receiver("orders", nil)
	e.receiveNone(r2)
	require.Equal(t, int64(1), e.queueCounts("orders").ActiveMessageCount)
	e.advance(m.LockedUntil.Sub(e.now()))
	again := e.receiveN(r2, 1)[0]
	require.Equal(t, "a", string(again.Body))
	require.Equal(t, uint32(2), again.DeliveryCount, "L6: the lock's end counts a delivery")
	require.NotEqual(t, m.LockToken, again.LockToken, "L1: a fresh lock token")
	require.NoError(t, r2.CompleteMessage(e.ctx(sdkTimeout), again, nil))
}
