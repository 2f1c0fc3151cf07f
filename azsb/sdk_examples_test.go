package azsb_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	azlog "github.com/Azure/azure-sdk-for-go/sdk/azcore/log"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/azsb"
	"github.com/stretchr/testify/require"
)

// The SDK's own example files, ported into example_sdk_*_test.go with only
// the client construction changed, run here against minibus with
// assertions on what they print and on the namespace afterwards. They use
// package variables (client, sender, receiver, adminClient, ns) as in the
// SDK, so these tests do not run in parallel.

// exampleNamespace gives the examples a fresh namespace in ns, on a mock
// clock set to now (the examples schedule with time.Now()), and a client.
func exampleNamespace(t *testing.T) *clock.Mock {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(time.Now())
	exampleNamespaceOn(t, mock)
	return mock
}

// exampleNamespaceOn is exampleNamespace on the clock c.
func exampleNamespaceOn(t *testing.T, c clock.Clock) {
	t.Helper()
	ns = minibus.NewNamespace(minibus.WithClock(c))
	client = azsb.NewClient(ns)
	cl, n := client, ns
	t.Cleanup(func() {
		_ = cl.Close(context.Background())
		_ = n.Close()
		ns, client, sender, receiver, adminClient, messages, err = nil, nil, nil, nil, nil, nil, nil
	})
}

var stdoutMu sync.Mutex

// runExample runs example, failing t if it panics (the examples panic on
// any error), and returns what it printed.
func runExample(t *testing.T, example func()) string {
	t.Helper()
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	r, w, perr := os.Pipe()
	require.NoError(t, perr)
	saved := os.Stdout
	os.Stdout = w
	out := make(chan string)
	go func() {
		var b bytes.Buffer
		_, _ = io.Copy(&b, r)
		out <- b.String()
	}()
	var panicked any
	func() {
		defer func() { panicked = recover() }()
		example()
	}()
	os.Stdout = saved
	require.NoError(t, w.Close())
	printed := <-out
	require.NoError(t, r.Close())
	require.Nil(t, panicked, "the example panicked; it printed:\n%s", printed)
	return printed
}

func mustQueue(t *testing.T, name string) *minibus.Queue {
	t.Helper()
	q, err := ns.CreateQueue(name, nil)
	require.NoError(t, err)
	return q
}

func newTestSender(t *testing.T, name string) *azsb.Sender {
	t.Helper()
	s, err := client.NewSender(name, nil)
	require.NoError(t, err)
	return s
}

func TestSDKExamplesClient(t *testing.T) {
	for name, example := range map[string]func(){
		"ExampleNewClient":                           ExampleNewClient,
		"ExampleNewClient_fromConnectionString":      ExampleNewClient_fromConnectionString,
		"ExampleNewClient_configuringRetries":        ExampleNewClient_configuringRetries,
		"ExampleNewClient_usingCustomEndpoint":       ExampleNewClient_usingCustomEndpoint,
		"ExampleNewClient_usingWebsocketsAndProxies": ExampleNewClient_usingWebsocketsAndProxies,
	} {
		t.Run(name, func(t *testing.T) {
			exampleNamespace(t)
			client = nil
			require.Empty(t, runExample(t, example))
			require.NotNil(t, client)
			q := mustQueue(t, "q")
			s, err := client.NewSender("q", nil)
			if name == "ExampleNewClient_usingWebsocketsAndProxies" {
				// The example closes its client when it returns.
				require.EqualError(t, err, "client has been closed by user")
				return
			}
			require.NoError(t, err)
			require.NoError(t, s.SendMessage(context.Background(), &azservicebus.Message{Body: []byte("x")}, nil))
			require.Equal(t, int64(1), q.RuntimeProperties().ActiveMessageCount, "the options are ignored, the client works")
		})
	}

	t.Run("Example_enablingLogging", func(t *testing.T) {
		exampleNamespace(t)
		defer azlog.SetListener(nil)
		mustQueue(t, "q")
		printed := runExample(t, func() {
			Example_enablingLogging()
			s, err := client.NewSender("q", nil)
			exitOnError("sender", err)
			exitOnError("send", s.SendMessage(context.Background(), &azservicebus.Message{}, nil))
		})
		require.Empty(t, printed, "azsb logs nothing: there is no connection")
	})
}

func TestSDKExamplesSender(t *testing.T) {
	ctx := context.Background()
	t.Run("ExampleClient_NewSender", func(t *testing.T) {
		exampleNamespace(t)
		runExample(t, ExampleClient_NewSender)
		require.NotNil(t, sender)
		requireCode(t, sender.SendMessage(ctx, &azservicebus.Message{}, nil), azservicebus.CodeClosed, minibus.ErrClosed)
	})
	t.Run("ExampleSender_SendMessage_message", func(t *testing.T) {
		exampleNamespace(t)
		q := mustQueue(t, "q")
		sender = newTestSender(t, "q")
		runExample(t, ExampleSender_SendMessage_message)
		peeked := peekAll(t, q)
		require.Len(t, peeked, 1)
		require.Equal(t, "hello, this is a message", string(peeked[0].Body))
	})
	t.Run("ExampleSender_SendMessage_messageBatch", func(t *testing.T) {
		exampleNamespace(t)
		q := mustQueue(t, "q")
		sender = newTestSender(t, "q")
		require.Empty(t, runExample(t, ExampleSender_SendMessage_messageBatch))
		peeked := peekAll(t, q)
		require.Len(t, peeked, 1)
		require.Equal(t, "hello world", string(peeked[0].Body))
		require.Len(t, peeked[0].MessageID, 36, "a batch gives each message a UUID")
	})
	t.Run("ExampleSender_ScheduleMessages", func(t *testing.T) {
		mock := exampleNamespace(t)
		q := mustQueue(t, "q")
		sender = newTestSender(t, "q")
		runExample(t, ExampleSender_ScheduleMessages)
		rp := q.RuntimeProperties()
		require.Equal(t, int64(1), rp.ScheduledMessageCount, "one scheduled and cancelled, one scheduled by ScheduledEnqueueTime")
		require.Zero(t, rp.ActiveMessageCount)
		mock.Add(time.Hour + time.Minute)
		require.Equal(t, int64(1), q.RuntimeProperties().ActiveMessageCount)
	})
	t.Run("ExampleSender_SendAMQPAnnotatedMessage", func(t *testing.T) {
		exampleNamespace(t)
		mustQueue(t, "q")
		sender = newTestSender(t, "q")
		runExample(t, ExampleSender_SendAMQPAnnotatedMessage)
		r, err := client.NewReceiverForQueue("q", nil)
		require.NoError(t, err)
		msgs, err := r.ReceiveMessages(ctx, 1, nil)
		require.NoError(t, err)
		raw := msgs[0].RawAMQPMessage
		require.Equal(t, "hello", raw.Body.Value)
		require.Equal(t, "test-annotation-value", raw.MessageAnnotations["x-opt-message-test"])
		require.Nil(t, raw.DeliveryAnnotations, "delivery annotations are for one transfer")
	})
}

// peekAll peeks every message of q.
func peekAll(t *testing.T, q *minibus.Queue) []*minibus.ReceivedMessage {
	t.Helper()
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(context.Background())
	msgs, err := r.PeekMessages(context.Background(), 100, nil)
	require.NoError(t, err)
	return msgs
}

func TestSDKExamplesReceiver(t *testing.T) {
	ctx := context.Background()
	for name, example := range map[string]func(){
		"ExampleClient_NewReceiverForQueue":                        ExampleClient_NewReceiverForQueue,
		"ExampleClient_NewReceiverForQueue_deadLetterQueue":        ExampleClient_NewReceiverForQueue_deadLetterQueue,
		"ExampleClient_NewReceiverForSubscription":                 ExampleClient_NewReceiverForSubscription,
		"ExampleClient_NewReceiverForSubscription_deadLetterQueue": ExampleClient_NewReceiverForSubscription_deadLetterQueue,
	} {
		t.Run(name, func(t *testing.T) {
			exampleNamespace(t)
			runExample(t, example)
			require.NotNil(t, receiver)
			_, err := receiver.PeekMessages(ctx, 1, nil)
			requireCode(t, err, azservicebus.CodeClosed, minibus.ErrClosed) // the example closes it
		})
	}

	t.Run("ExampleReceiver_ReceiveMessages", func(t *testing.T) {
		exampleNamespace(t)
		q := mustQueue(t, "exampleQueue")
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{Body: []byte("hello")}, nil))
		receiver, err = client.NewReceiverForQueue("exampleQueue", nil)
		require.NoError(t, err)
		printed := runExample(t, ExampleReceiver_ReceiveMessages)
		require.Equal(t, "Message received with body: hello\nReceived and completed the message\n", printed)
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
	t.Run("ExampleReceiver_ReceiveMessages_receiveAndDelete", func(t *testing.T) {
		exampleNamespace(t)
		q := mustQueue(t, "exampleQueue")
		for _, b := range []string{"a", "b", "c"} {
			require.NoError(t, q.SendMessage(ctx, &minibus.Message{Body: []byte(b)}, nil))
		}
		receiver, err = client.NewReceiverForQueue("exampleQueue", &azservicebus.ReceiverOptions{ReceiveMode: azservicebus.ReceiveModeReceiveAndDelete})
		require.NoError(t, err)
		printed := runExample(t, ExampleReceiver_ReceiveMessages_receiveAndDelete)
		require.Equal(t, 3, strings.Count(printed, "Message received with body: "))
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
	t.Run("ExampleReceiver_ReceiveMessages_amqpMessage", func(t *testing.T) {
		exampleNamespace(t)
		q := mustQueue(t, "exampleQueue")
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{Body: []byte("x")}, nil))
		receiver, err = client.NewReceiverForQueue("exampleQueue", nil)
		require.NoError(t, err)
		runExample(t, ExampleReceiver_ReceiveMessages_amqpMessage)
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
	t.Run("ExampleReceiver_DeadLetterMessage and _second", func(t *testing.T) {
		exampleNamespace(t)
		q := mustQueue(t, "myqueue")
		sender = newTestSender(t, "myqueue")
		runExample(t, ExampleReceiver_DeadLetterMessage)
		require.Equal(t, int64(1), q.RuntimeProperties().DeadLetterMessageCount)
		printed := runExample(t, ExampleReceiver_ReceiveMessages_second)
		require.Equal(t, "DeadLetter Reason: exampleReason\nDeadLetter Description: exampleErrorDescription\n", printed)
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
	t.Run("Example_settleWithLockToken", func(t *testing.T) {
		mock := exampleNamespace(t)
		q := mustQueue(t, "exampleQueue")
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{Body: []byte("tok")}, nil))
		receiver, err = client.NewReceiverForQueue("exampleQueue", nil)
		require.NoError(t, err)
		mock.Add(time.Second)
		printed := runExample(t, Example_settleWithLockToken)
		require.Equal(t, "Message received with body: tok\nReceived and completed the message\n", printed)
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
	t.Run("Example_unitTesting", func(t *testing.T) {
		runExample(t, Example_unitTesting) // TestUnitTestingReceiver runs by itself
	})
}

// TestSDKExampleAutoRenew runs the auto-renew example's helper,
// autoRenewMessageLock, as the example uses it. (Example_autoRenewLocks
// itself starts goroutines it never stops, on a real-time timer of 15
// seconds, so it is compiled but not run.)
func TestSDKExampleAutoRenew(t *testing.T) {
	ctx := context.Background()
	mock := exampleNamespace(t)
	q, err := ns.CreateQueue("q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
	require.NoError(t, err)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "m1"}, nil))
	receiver, err = client.NewReceiverForQueue("q", nil)
	require.NoError(t, err)
	msgs, err := receiver.ReceiveMessages(ctx, 1, nil)
	require.NoError(t, err)
	msg := msgs[0]
	first := *msg.LockedUntil

	logs := &syncBuffer{renewed: make(chan struct{}, 1)}
	log.SetOutput(logs)
	defer log.SetOutput(os.Stderr)

	// A lock renewed while it holds.
	mock.Add(10 * time.Second)
	renewCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- autoRenewMessageLock(renewCtx, receiver, msg, 30*time.Second) }()
	select {
	case <-logs.renewed:
	case <-time.After(10 * time.Second):
		t.Fatal("the lock was never renewed")
	}
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.True(t, first.Add(10*time.Second).Equal(*msg.LockedUntil), "renewed at +10s for 30s")

	// A settled message: the helper sees the lock lost and returns nil.
	require.NoError(t, receiver.CompleteMessage(ctx, msg, nil))
	require.NoError(t, autoRenewMessageLock(ctx, receiver, msg, 30*time.Second))
	require.Contains(t, logs.String(), "Lock was lost for message with ID m1")
}

// syncBuffer collects log output and signals the first renewal.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	renewed chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bytes.Contains(p, []byte("Renewed lock for")) {
		select {
		case s.renewed <- struct{}{}:
		default:
		}
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSDKExamplesAdmin(t *testing.T) {
	for name, example := range map[string]func(){
		"ExampleNewAdminClient":                      ExampleNewAdminClient,
		"ExampleNewAdminClient_fromConnectionString": ExampleNewAdminClient_fromConnectionString,
	} {
		t.Run(name, func(t *testing.T) {
			exampleNamespace(t)
			runExample(t, example)
			require.NotNil(t, adminClient)
		})
	}
	t.Run("ExampleAdminClient_CreateQueue", func(t *testing.T) {
		exampleNamespace(t)
		adminClient = azsb.NewAdminClient(ns)
		printed := runExample(t, ExampleAdminClient_CreateQueue)
		require.Equal(t, "Max message delivery count = 10\nLock duration: PT1M\n", printed)
		_, err := ns.Queue("queue-name")
		require.NoError(t, err)
	})
	t.Run("ExampleAdminClient_CreateQueue_usingproperties", func(t *testing.T) {
		exampleNamespace(t)
		adminClient = azsb.NewAdminClient(ns)
		printed := runExample(t, ExampleAdminClient_CreateQueue_usingproperties)
		require.Equal(t, "Max message delivery count = 10\nLock duration: PT1M\n", printed)
	})
	t.Run("ExampleAdminClient_NewListQueuesPager and runtime properties", func(t *testing.T) {
		exampleNamespace(t)
		adminClient = azsb.NewAdminClient(ns)
		mustQueue(t, "b")
		q := mustQueue(t, "a")
		require.NoError(t, q.SendMessage(context.Background(), &minibus.Message{}, nil))
		require.Equal(t, "Queue name: a, max size in MB: 1024\nQueue name: b, max size in MB: 1024\n", runExample(t, ExampleAdminClient_NewListQueuesPager))
		require.Equal(t, "Queue name: a, active messages: 1\nQueue name: b, active messages: 0\n", runExample(t, ExampleAdminClient_NewListQueuesRuntimePropertiesPager))
	})
	t.Run("an example's error panics, as in the SDK", func(t *testing.T) {
		exampleNamespace(t)
		adminClient = azsb.NewAdminClient(ns)
		mustQueue(t, "queue-name")
		log.SetOutput(io.Discard) // exitOnError logs as it panics
		defer log.SetOutput(os.Stderr)
		var panicked any
		func() {
			defer func() { panicked = recover() }()
			ExampleAdminClient_CreateQueue()
		}()
		require.NotNil(t, panicked, "creating a queue that exists fails")
		require.Contains(t, fmt.Sprint(panicked), "409")
	})
}
