package e2e_test

// The flows azservicebus v1.11.0's own examples show (its example_*_test.go
// files), each written here as a test that runs over the wire against
// server.Listen. Each test names the example it mirrors.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
)

// TestSDKExample_SendMessage mirrors ExampleClient_NewSender and
// ExampleSender_SendMessage_message: a sender, one message, closed.
func TestSDKExample_SendMessage(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("exampleQueue", nil)
	sender, err := e.client.NewSender("exampleQueue", nil)
	require.NoError(t, err)
	ctx := e.ctx(sdkTimeout)
	require.NoError(t, sender.SendMessage(ctx, &azservicebus.Message{Body: []byte("hello, this is a message")}, nil))
	require.NoError(t, sender.Close(ctx))
	require.Equal(t, int64(1), e.queueCounts("exampleQueue").ActiveMessageCount)
}

// TestSDKExample_SendMessageBatch mirrors
// ExampleSender_SendMessage_messageBatch, including the path its comment
// describes: when AddMessage says ErrMessageTooLarge, send the full batch
// and start a new one. 1000 messages of 1 KiB go out in as many batches as
// the link's max-message-size needs, and all arrive, in order (W4).
func TestSDKExample_SendMessageBatch(t *testing.T) {
	e := newSDKEnv(t)
	q := e.queue("exampleQueue", nil)
	s := e.sender("exampleQueue")
	ctx := e.ctx(sdkTimeout)
	const n = 1000
	batch, err := s.NewMessageBatch(ctx, nil)
	require.NoError(t, err)
	batches, perBatch := 0, 0
	for i := 0; i < n; {
		err := batch.AddMessage(&azservicebus.Message{Body: make([]byte, 1024), MessageID: sdkPtr(fmt.Sprint(i))}, nil)
		switch {
		case errors.Is(err, azservicebus.ErrMessageTooLarge):
			if perBatch == 0 {
				perBatch = int(batch.NumMessages())
			}
			require.NoError(t, s.SendMessageBatch(ctx, batch, nil))
			batches++
			batch, err = s.NewMessageBatch(ctx, nil)
			require.NoError(t, err)
		case err != nil:
			t.Fatal(err)
		default:
			i++
		}
	}
	require.NoError(t, s.SendMessageBatch(ctx, batch, nil))
	batches++
	require.Greater(t, perBatch, 200, "a 256 KiB batch holds some 240 messages of 1 KiB")
	require.Equal(t, (n+perBatch-1)/perBatch, batches)
	require.Equal(t, int64(n), q.RuntimeProperties().ActiveMessageCount)
	r := e.receiver("exampleQueue", &azservicebus.ReceiverOptions{ReceiveMode: azservicebus.ReceiveModeReceiveAndDelete})
	got := sdkReceiveN(t, r, n, nil)
	for i, m := range got {
		require.Equal(t, fmt.Sprint(i), m.MessageID)
	}
}

// TestSDKExample_ReceiveAndComplete mirrors ExampleClient_NewReceiverForQueue
// and ExampleReceiver_ReceiveMessages: receive in peek-lock and complete
// each message, treating CodeLockLost as the example does (the message
// will come back), here provoked on the mock clock.
func TestSDKExample_ReceiveAndComplete(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("exampleQueue", &minibus.QueueProperties{LockDuration: 30 * time.Second})
	e.send(e.sender("exampleQueue"), "first", "second")
	receiver, err := e.client.NewReceiverForQueue("exampleQueue", &azservicebus.ReceiverOptions{ReceiveMode: azservicebus.ReceiveModePeekLock})
	require.NoError(t, err)
	defer receiver.Close(context.Background())

	completed, lost := 0, 0
	for completed < 2 {
		ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
		messages, err := receiver.ReceiveMessages(ctx, 1, nil)
		cancel()
		require.NoError(t, err)
		for _, message := range messages {
			if string(message.Body) == "second" && lost == 0 {
				e.advance(30 * time.Second) // the lock expires before the work is done
			}
			err = receiver.CompleteMessage(e.ctx(sdkTimeout), message, nil)
			var sbErr *azservicebus.Error
			if errors.As(err, &sbErr) && sbErr.Code == azservicebus.CodeLockLost {
				lost++
				continue
			}
			require.NoError(t, err)
			completed++
		}
	}
	require.Equal(t, 1, lost)
	require.Zero(t, e.queueCounts("exampleQueue").TotalMessageCount)
}

// TestSDKExample_ReceiveAndDelete mirrors
// ExampleReceiver_ReceiveMessages_receiveAndDelete: receive, close, then
// read the receiver's cache until it says CodeClosed; every message is
// read exactly once and the queue is empty.
func TestSDKExample_ReceiveAndDelete(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("exampleQueue", nil)
	s := e.sender("exampleQueue")
	for i := range 25 {
		e.send(s, fmt.Sprint(i))
	}
	receiver, err := e.client.NewReceiverForQueue("exampleQueue", &azservicebus.ReceiverOptions{ReceiveMode: azservicebus.ReceiveModeReceiveAndDelete})
	require.NoError(t, err)
	ctx := e.ctx(sdkTimeout)
	seen := map[string]int{}
	messages, err := receiver.ReceiveMessages(ctx, 10, nil)
	require.NoError(t, err)
	for _, m := range messages {
		seen[string(m.Body)]++
	}
	require.NoError(t, receiver.Close(ctx))
	for {
		messages, err := receiver.ReceiveMessages(ctx, 10, nil)
		if sbErr := (*azservicebus.Error)(nil); errors.As(err, &sbErr) && sbErr.Code == azservicebus.CodeClosed {
			break
		}
		require.NoError(t, err)
		for _, m := range messages {
			seen[string(m.Body)]++
		}
	}
	// The rest are still in the queue (a closed link took no more).
	rest := e.queueCounts("exampleQueue").ActiveMessageCount
	require.Equal(t, 25, len(seen)+int(rest))
	for b, n := range seen {
		require.Equal(t, 1, n, "message %s read once", b)
	}
	if rest > 0 {
		r2 := e.receiver("exampleQueue", &azservicebus.ReceiverOptions{ReceiveMode: azservicebus.ReceiveModeReceiveAndDelete})
		for _, m := range sdkReceiveN(t, r2, int(rest), nil) {
			seen[string(m.Body)]++
		}
	}
	require.Len(t, seen, 25)
	require.Zero(t, e.queueCounts("exampleQueue").TotalMessageCount)
}

// TestSDKExample_AMQPMessage mirrors
// ExampleReceiver_ReceiveMessages_amqpMessage and
// ExampleSender_SendAMQPAnnotatedMessage: a raw AMQP message goes out and
// comes back with the sections W5 names (header, the x-opt annotations in
// their AMQP types, one data section), and is still settled on the link.
func TestSDKExample_AMQPMessage(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("exampleQueue", nil)
	ctx := e.ctx(sdkTimeout)
	require.NoError(t, e.sender("exampleQueue").SendAMQPAnnotatedMessage(ctx, &azservicebus.AMQPAnnotatedMessage{
		Body:                azservicebus.AMQPAnnotatedMessageBody{Value: "hello"},
		MessageAnnotations:  map[any]any{"x-opt-message-test": "test-annotation-value"},
		DeliveryAnnotations: map[any]any{"x-opt-delivery-test": "test-annotation-value"},
	}, nil))
	receiver := e.receiver("exampleQueue", nil)
	m := e.receiveN(receiver, 1)[0]
	raw := m.RawAMQPMessage
	require.Equal(t, [][]byte{[]byte("hello")}, raw.Body.Data, "minibus keeps a body as bytes: one data section")
	require.Nil(t, raw.Body.Value)
	require.NotNil(t, raw.Header)
	require.Equal(t, uint32(0), raw.Header.DeliveryCount, "W5: DeliveryCount - 1")
	require.IsType(t, int64(0), raw.MessageAnnotations["x-opt-sequence-number"])
	require.IsType(t, time.Time{}, raw.MessageAnnotations["x-opt-enqueued-time"])
	require.IsType(t, time.Time{}, raw.MessageAnnotations["x-opt-locked-until"])
	require.IsType(t, int32(0), raw.MessageAnnotations["x-opt-message-state"])
	require.NoError(t, receiver.CompleteMessage(ctx, m, nil))
}

// TestSDKExample_DeadLetterProcessing mirrors ExampleReceiver_DeadLetterMessage,
// ExampleClient_NewReceiverForQueue_deadLetterQueue and
// ExampleReceiver_ReceiveMessages_second: dead-letter with a reason and a
// description, then read the dead-letter queue, print both, complete.
func TestSDKExample_DeadLetterProcessing(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("myqueue", nil)
	e.send(e.sender("myqueue"), "body of message")
	ctx := e.ctx(sdkTimeout)
	receiver := e.receiver("myqueue", nil)
	for _, message := range e.receiveN(receiver, 1) {
		require.NoError(t, receiver.DeadLetterMessage(ctx, message, &azservicebus.DeadLetterOptions{
			ErrorDescription: sdkPtr("exampleErrorDescription"),
			Reason:           sdkPtr("exampleReason"),
		}))
	}
	deadLetterReceiver, err := e.client.NewReceiverForQueue("myqueue", &azservicebus.ReceiverOptions{SubQueue: azservicebus.SubQueueDeadLetter})
	require.NoError(t, err)
	defer deadLetterReceiver.Close(ctx)
	for _, dl := range e.receiveN(deadLetterReceiver, 1) {
		line := fmt.Sprintf("DeadLetter Reason: %s\nDeadLetter Description: %s\n", *dl.DeadLetterReason, *dl.DeadLetterErrorDescription)
		require.Equal(t, "DeadLetter Reason: exampleReason\nDeadLetter Description: exampleErrorDescription\n", line)
		require.NoError(t, deadLetterReceiver.CompleteMessage(ctx, dl, nil))
	}
	require.Zero(t, e.queueCounts("myqueue").TotalMessageCount)
}

// TestSDKExample_SettleWithLockToken mirrors Example_settleWithLockToken:
// a ReceivedMessage built from the lock token alone renews and completes
// (through $management, L10).
func TestSDKExample_SettleWithLockToken(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("exampleQueue", nil)
	e.send(e.sender("exampleQueue"), "a")
	receiver := e.receiver("exampleQueue", nil)
	ctx := e.ctx(sdkTimeout)
	for _, message := range e.receiveN(receiver, 1) {
		completelySeparateMsg := &azservicebus.ReceivedMessage{LockToken: message.LockToken}
		require.NoError(t, receiver.RenewMessageLock(ctx, completelySeparateMsg, nil))
		require.NoError(t, receiver.CompleteMessage(ctx, completelySeparateMsg, nil))
	}
	require.Zero(t, e.queueCounts("exampleQueue").TotalMessageCount)
}

// TestSDKExample_AutoRenewLocks mirrors Example_autoRenewLocks: a
// goroutine renews the message's lock every half lock duration until it
// sees CodeLockLost after the message is settled. Here the half lock
// duration is waited for on the mock clock, which the test moves three
// lock durations on: the lock never ends, the message is completed, and
// the renewer stops.
func TestSDKExample_AutoRenewLocks(t *testing.T) {
	e := newSDKEnv(t)
	const lockDuration = 30 * time.Second
	e.queue("exampleQueue", &minibus.QueueProperties{LockDuration: lockDuration})
	e.send(e.sender("exampleQueue"), "long work")
	receiver := e.receiver("exampleQueue", nil)
	ctx := e.ctx(sdkTimeout)
	msg := e.receiveN(receiver, 1)[0]

	renewed := make(chan struct{})
	stopped := make(chan error, 1)
	go func() { // autoRenewMessageLock, with the mock clock's After
		for {
			if err := receiver.RenewMessageLock(ctx, msg, nil); err != nil {
				if sbErr := (*azservicebus.Error)(nil); errors.As(err, &sbErr) && sbErr.Code == azservicebus.CodeLockLost {
					stopped <- nil
					return
				}
				stopped <- err
				return
			}
			after := e.mock.After(lockDuration / 2)
			select {
			case renewed <- struct{}{}:
			case <-ctx.Done():
				stopped <- ctx.Err()
				return
			}
			select {
			case <-ctx.Done():
				stopped <- ctx.Err()
				return
			case <-after:
			}
		}
	}()
	<-renewed
	for range 6 {
		e.advance(lockDuration / 2)
		select {
		case <-renewed:
		case err := <-stopped:
			t.Fatalf("the renewer stopped: %v", err)
		}
	}
	require.NoError(t, receiver.CompleteMessage(ctx, msg, nil), "the lock held for 3 lock durations")
	e.advance(lockDuration / 2)
	require.NoError(t, <-stopped, "the renewer sees CodeLockLost once the message is settled")
}

// TestSDKExample_Sessions mirrors ExampleClient_AcceptSessionForQueue and
// ExampleClient_AcceptSessionForSubscription: accept a session, renew its
// lock, receive up to 5 and complete them.
func TestSDKExample_Sessions(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("exampleSessionQueue", &minibus.QueueProperties{RequiresSession: true})
	tp := e.topic("exampleTopic")
	_, err := tp.CreateSubscription("exampleSubscription", &minibus.SubscriptionProperties{RequiresSession: true})
	require.NoError(t, err)
	e.sendSession(e.sender("exampleSessionQueue"), "exampleSessionId", "1", "2", "3")
	e.sendSession(e.sender("exampleTopic"), "exampleSessionId", "t")
	ctx := e.ctx(sdkTimeout)

	sessionReceiver, err := e.client.AcceptSessionForQueue(ctx, "exampleSessionQueue", "exampleSessionId", nil)
	require.NoError(t, err)
	require.NoError(t, sessionReceiver.RenewSessionLock(ctx, nil))
	var lines []string
	for len(lines) < 3 {
		messages, err := sessionReceiver.ReceiveMessages(ctx, 5, nil)
		require.NoError(t, err)
		for _, message := range messages {
			require.NoError(t, sessionReceiver.CompleteMessage(ctx, message, nil))
			lines = append(lines, fmt.Sprintf("Received message from session ID %q and completed it", *message.SessionID))
		}
	}
	require.Equal(t, `Received message from session ID "exampleSessionId" and completed it`, lines[2])
	require.NoError(t, sessionReceiver.Close(ctx))

	subReceiver, err := e.client.AcceptSessionForSubscription(ctx, "exampleTopic", "exampleSubscription", "exampleSessionId", nil)
	require.NoError(t, err)
	defer subReceiver.Close(ctx)
	m := e.receiveN(subReceiver, 1)[0]
	require.NoError(t, subReceiver.CompleteMessage(ctx, m, nil))
	require.Zero(t, e.queueCounts("exampleSessionQueue").TotalMessageCount)
}

// TestSDKExample_SessionRoundRobin mirrors
// ExampleClient_AcceptNextSessionForQueue_roundrobin (and
// ExampleClient_AcceptNextSessionForQueue): accept next sessions until the
// server answers CodeTimeout, consuming each on its own goroutine; every
// session's messages are completed, in order within the session.
func TestSDKExample_SessionRoundRobin(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("exampleSessionQueue", &minibus.QueueProperties{RequiresSession: true})
	s := e.sender("exampleSessionQueue")
	const sessions, per = 6, 4
	for i := range per {
		for j := range sessions {
			e.sendSession(s, fmt.Sprintf("session-%d", j), fmt.Sprint(i))
		}
	}
	var (
		mu  sync.Mutex
		got = map[string][]string{}
		wg  sync.WaitGroup
	)
	errs := make(chan error, sessions)
	for {
		// The deadline is only claimed (deadlineOnly): the server's
		// com.microsoft:timeout, derived from it, ends the loop.
		ctx := deadlineOnly{Context: e.ctx(sdkTimeout), d: time.Now().Add(500 * time.Millisecond)}
		sessionReceiver, err := e.client.AcceptNextSessionForQueue(ctx, "exampleSessionQueue", nil)
		if err != nil {
			var sbErr *azservicebus.Error
			if errors.As(err, &sbErr) && sbErr.Code == azservicebus.CodeTimeout || errors.Is(err, context.DeadlineExceeded) {
				break // "No sessions available"
			}
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			defer sessionReceiver.Close(ctx)
			rctx, cancel := context.WithTimeout(ctx, sdkTimeout)
			defer cancel()
			var bodies []string
			for len(bodies) < per {
				messages, err := sessionReceiver.ReceiveMessages(rctx, 10, nil)
				if err != nil {
					errs <- err
					return
				}
				for _, m := range messages {
					if err := sessionReceiver.CompleteMessage(rctx, m, nil); err != nil {
						errs <- err
						return
					}
					bodies = append(bodies, string(m.Body))
				}
			}
			mu.Lock()
			got[sessionReceiver.SessionID()] = bodies
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, got, sessions)
	for id, b := range got {
		require.Equal(t, []string{"0", "1", "2", "3"}, b, "session %s in order (SS4)", id)
	}
	require.Zero(t, e.queueCounts("exampleSessionQueue").TotalMessageCount)
}

// TestSDKExample_ListSessions mirrors ExampleClient_NewListSessionsForQueuePager
// and ExampleClient_NewListSessionsForSubscriptionPager.
func TestSDKExample_ListSessions(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("exampleSessionQueue", &minibus.QueueProperties{RequiresSession: true})
	tp := e.topic("exampleTopic")
	_, err := tp.CreateSubscription("exampleSubscription", &minibus.SubscriptionProperties{RequiresSession: true})
	require.NoError(t, err)
	e.sendSession(e.sender("exampleSessionQueue"), "q1", "x")
	e.sendSession(e.sender("exampleSessionQueue"), "q2", "x")
	e.sendSession(e.sender("exampleTopic"), "t1", "x")
	ctx := e.ctx(sdkTimeout)
	list := func(pager interface {
		More() bool
		NextPage(context.Context) (azservicebus.ListSessionsResponse, error)
	}) []string {
		var ids []string
		for pager.More() {
			page, err := pager.NextPage(ctx)
			require.NoError(t, err)
			ids = append(ids, page.Sessions...)
		}
		return ids
	}
	require.Equal(t, []string{"q1", "q2"}, list(e.client.NewListSessionsForQueuePager("exampleSessionQueue", nil)))
	require.Equal(t, []string{"t1"}, list(e.client.NewListSessionsForSubscriptionPager("exampleTopic", "exampleSubscription", nil)))
}

// TestSDKExample_ScheduleMessages mirrors ExampleSender_ScheduleMessages:
// schedule an hour ahead and cancel; then schedule by ScheduledEnqueueTime
// and see it arrive when the mock clock reaches it.
func TestSDKExample_ScheduleMessages(t *testing.T) {
	e := newSDKEnv(t)
	e.queue("exampleQueue", nil)
	sender := e.sender("exampleQueue")
	ctx := e.ctx(sdkTimeout)
	sequenceNumbers, err := sender.ScheduleMessages(ctx, []*azservicebus.Message{{Body: []byte("hello world")}}, e.now().Add(time.Hour), nil)
	require.NoError(t, err)
	require.NoError(t, sender.CancelScheduledMessages(ctx, sequenceNumbers, nil))
	require.Zero(t, e.queueCounts("exampleQueue").ScheduledMessageCount)

	future := e.now().Add(time.Hour)
	require.NoError(t, sender.SendMessage(ctx, &azservicebus.Message{Body: []byte("hello world"), ScheduledEnqueueTime: &future}, nil))
	require.Equal(t, int64(1), e.queueCounts("exampleQueue").ScheduledMessageCount)
	r := e.receiver("exampleQueue", nil)
	e.receiveNone(r)
	e.advance(time.Hour)
	m := e.receiveN(r, 1)[0]
	require.Equal(t, "hello world", string(m.Body))
	require.True(t, future.Equal(*m.EnqueuedTime))
	require.NoError(t, r.CompleteMessage(ctx, m, nil))
}
