package e2e_test

// Errors as the Go SDK reports them (SEMANTICS W2, W3, W4, W5, V3, V5,
// SS1): missing entities, messages too large, disabled entities, quotas,
// receivers the entity does not allow, an entity deleted under a receiver.

import (
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/go-amqp"
	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
)

// requireCondition checks that err carries the AMQP error condition cond
// and a description naming what (W4, W5).
// The SDK returns some as they are, and wraps others in an
// *azservicebus.Error that does not unwrap: those are read from its text.
func requireCondition(t *testing.T, err error, cond amqp.ErrCond, what string) {
	t.Helper()
	require.Error(t, err)
	var ae *amqp.Error
	if !errors.As(err, &ae) {
		require.Contains(t, err.Error(), "Condition: "+string(cond)+",")
		require.Contains(t, err.Error(), what)
		return
	}
	require.Equal(t, cond, ae.Condition, "%v", err)
	require.Contains(t, ae.Description, what)
}

// TestSDKErrors_MissingEntity_W2_W3 opens senders and receivers on
// entities that do not exist: the $cbs put-token for them is answered 404
// (W3), which the SDK reports as CodeNotFound on the first call.
func TestSDKErrors_MissingEntity_W2_W3(t *testing.T) {
	e := newSDKEnv(t)
	e.topic("events")
	ctx := e.ctx(sdkTimeout)
	err := e.sender("missing").SendMessage(ctx, &azservicebus.Message{Body: []byte("x")}, nil)
	require.Equal(t, azservicebus.CodeNotFound, sdkCode(err), "%v", err)
	require.Contains(t, err.Error(), `"missing"`)

	_, err = e.receiver("missing", nil).ReceiveMessages(ctx, 1, nil)
	require.Equal(t, azservicebus.CodeNotFound, sdkCode(err), "%v", err)
	_, err = e.receiver("missing", nil).PeekMessages(ctx, 1, nil)
	require.Equal(t, azservicebus.CodeNotFound, sdkCode(err), "%v", err)
	_, err = e.subReceiver("events", "nosuchsub", nil).ReceiveMessages(ctx, 1, nil)
	require.Equal(t, azservicebus.CodeNotFound, sdkCode(err), "%v", err)
	_, err = e.client.AcceptSessionForQueue(ctx, "missing", "s", nil)
	require.Equal(t, azservicebus.CodeNotFound, sdkCode(err), "%v", err)
	require.Empty(t, e.ns.Queues(), "nothing was created")
}

// TestSDKErrors_MessageTooLarge_W4_V3 sends messages larger than the
// entity allows: the SDK refuses one larger than the sender link's
// max-message-size itself, and the server refuses one the entity's limit
// shrank under after the link was attached, with
// amqp:link:message-size-exceeded, which the SDK reports as
// ErrMessageTooLarge (W4, V3). Nothing is enqueued.
func TestSDKErrors_MessageTooLarge_W4_V3(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("small", &minibus.QueueProperties{MaxMessageSizeInKilobytes: 64})
	s := e.sender("small")
	ctx := e.ctx(sdkTimeout)
	require.NoError(t, s.SendMessage(ctx, &azservicebus.Message{Body: make([]byte, 60*1024)}, nil))
	err := s.SendMessage(ctx, &azservicebus.Message{Body: make([]byte, 65*1024)}, nil)
	require.ErrorIs(t, err, azservicebus.ErrMessageTooLarge)

	_, err = e.ns.UpdateQueue("small", minibus.QueueProperties{MaxMessageSizeInKilobytes: 16})
	require.NoError(t, err)
	err = s.SendMessage(ctx, &azservicebus.Message{Body: make([]byte, 32*1024)}, nil)
	require.ErrorIs(t, err, azservicebus.ErrMessageTooLarge, "the server's refusal (the link still says 64 KiB)")
	require.Equal(t, int64(1), e.queueCounts("small").ActiveMessageCount)

	// A new sender link is told the new limit (W4).
	s2 := e.sender("small")
	batch, err := s2.NewMessageBatch(ctx, nil)
	require.NoError(t, err)
	require.ErrorIs(t, batch.AddMessage(&azservicebus.Message{Body: make([]byte, 17*1024)}, nil), azservicebus.ErrMessageTooLarge)
}

// TestSDKErrors_Disabled_W4_W5_V5 sends to and receives from disabled
// entities: com.microsoft:entity-disabled on the send's disposition (W4)
// and on the receiver's attach (W5); messages are kept (V5).
func TestSDKErrors_Disabled_W4_W5_V5(t *testing.T) {
	e := newSDKEnv(t)
	q := e.queue("orders", nil)
	ctx := e.ctx(sdkTimeout)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{Body: []byte("kept")}, nil))
	for _, tc := range []struct {
		status      minibus.EntityStatus
		send, recv  bool // allowed
		description string
	}{
		{minibus.EntityStatusDisabled, false, false, "Disabled"},
		{minibus.EntityStatusSendDisabled, false, true, "SendDisabled"},
		{minibus.EntityStatusReceiveDisabled, true, false, "ReceiveDisabled"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			_, err := e.ns.UpdateQueue("orders", minibus.QueueProperties{Status: tc.status})
			require.NoError(t, err)
			err = e.sender("orders").SendMessage(ctx, &azservicebus.Message{Body: []byte("x")}, nil)
			if tc.send {
				require.NoError(t, err)
			} else {
				requireCondition(t, err, "com.microsoft:entity-disabled", `"orders"`)
			}
			r := e.receiver("orders", nil)
			if tc.recv {
				m := e.receiveN(r, 1)[0]
				require.NoError(t, r.AbandonMessage(ctx, m, nil))
			} else {
				_, err = r.ReceiveMessages(ctx, 1, nil)
				requireCondition(t, err, "com.microsoft:entity-disabled", `"orders"`)
			}
		})
	}
	_, err := e.ns.UpdateQueue("orders", minibus.QueueProperties{})
	require.NoError(t, err)
	got := e.receiveN(e.receiver("orders", nil), 2)
	require.Equal(t, []string{"kept", "x"}, bodies(got), "V5: messages are kept while disabled")
}

// TestSDKErrors_Sessions_SS1_W5 uses sessions where the entity says
// otherwise: a plain receiver on a session queue and a session receiver
// on a plain one are refused with amqp:not-allowed at attach (W5); a
// message without SessionID to a session queue is refused with
// amqp:not-allowed naming it, which the SDK takes as final (no retries),
// and a batch holding one is refused whole (SS1, V3, W4).
func TestSDKErrors_Sessions_SS1_W5(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("sess", &minibus.QueueProperties{RequiresSession: true})
	e.queue("plain", nil)
	ctx := e.ctx(sdkTimeout)
	_, err := e.receiver("sess", nil).ReceiveMessages(ctx, 1, nil)
	requireCondition(t, err, "amqp:not-allowed", `"sess"`)
	_, err = e.client.AcceptSessionForQueue(ctx, "plain", "x", nil)
	requireCondition(t, err, "amqp:not-allowed", `"plain"`)

	s := e.sender("sess")
	err = s.SendMessage(ctx, &azservicebus.Message{Body: []byte("x")}, nil)
	requireCondition(t, err, "amqp:not-allowed", "SessionID")
	// Not a link failure the SDK would retry (amqp:invalid-field was one).
	require.NotEqual(t, azservicebus.CodeConnectionLost, sdkCode(err))
	batch, err := s.NewMessageBatch(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, batch.AddMessage(&azservicebus.Message{Body: []byte("ok"), SessionID: sdkPtr("a")}, nil))
	require.NoError(t, batch.AddMessage(&azservicebus.Message{Body: []byte("bad")}, nil))
	requireCondition(t, s.SendMessageBatch(ctx, batch, nil), "amqp:not-allowed", "SessionID")
	require.Zero(t, e.queueCounts("sess").TotalMessageCount, "V3: all or nothing")
}

// TestSDKErrors_Quota_W4_V3 fills a queue to its MaxSizeInMegabytes: the
// send that would pass it is refused with amqp:resource-limit-exceeded
// and nothing of it is enqueued.
func TestSDKErrors_Quota_W4_V3(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("full", &minibus.QueueProperties{MaxSizeInMegabytes: 1})
	s := e.sender("full")
	ctx := e.ctx(sdkTimeout)
	body := make([]byte, 200*1024)
	for range 5 {
		require.NoError(t, s.SendMessage(ctx, &azservicebus.Message{Body: body}, nil))
	}
	requireCondition(t, s.SendMessage(ctx, &azservicebus.Message{Body: body}, nil), "amqp:resource-limit-exceeded", "MaxSizeInMegabytes")
	require.Equal(t, int64(5), e.queueCounts("full").ActiveMessageCount)
}

// TestSDKErrors_EntityDeletedUnderReceiver_W5 deletes a queue while an SDK
// receive is blocked on it: the server detaches the link with
// amqp:not-found at once (the receive returns; it does not wait for its
// context).
func TestSDKErrors_EntityDeletedUnderReceiver_W5(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("gone", nil)
	r := e.receiver("gone", nil)
	e.receiveNone(r) // attached, with a credit outstanding
	ctx := e.ctx(sdkTimeout)
	done := make(chan error, 1)
	go func() {
		_, err := r.ReceiveMessages(ctx, 1, nil)
		done <- err
	}()
	require.NoError(t, e.ns.DeleteQueue("gone"))
	select {
	case err := <-done:
		requireCondition(t, err, "amqp:not-found", `"gone"`)
	case <-ctx.Done():
		t.Fatal("a receive on a deleted queue did not return")
	}
}
