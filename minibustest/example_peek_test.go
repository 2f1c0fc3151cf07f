package minibustest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
)

// Peek shows what an entity holds, in sequence order, changing nothing.
func ExampleEnv_Peek() {
	asTest(func(t testing.TB) {
		ctx := context.Background()
		env := minibustest.New(t)
		q, _ := env.Namespace().CreateQueue("orders", nil)
		_ = q.SendMessages(ctx, []*minibus.Message{{MessageID: "a"}, {MessageID: "b"}}, nil)
		r, _ := q.NewReceiver(nil)
		msgs, _ := r.ReceiveMessages(ctx, 1, nil)
		_ = r.DeferMessage(ctx, msgs[0], nil)
		for _, m := range env.Peek("orders") {
			fmt.Println(m.SequenceNumber, m.MessageID, m.State)
		}
	})
	// Output:
	// 1 a Deferred
	// 2 b Active
}

// DeadLetters shows a dead-letter queue with the reasons, peeking: the
// messages stay there.
func ExampleEnv_DeadLetters() {
	asTest(func(t testing.TB) {
		ctx := context.Background()
		env := minibustest.New(t)
		q, _ := env.Namespace().CreateQueue("orders", &minibus.QueueProperties{MaxDeliveryCount: 1})
		p, _ := q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error {
			return fmt.Errorf("no price")
		}, nil)
		env.Start(p)
		_ = q.SendMessage(ctx, &minibus.Message{MessageID: "order-1"}, nil)
		env.WaitIdle()
		for _, m := range env.DeadLetters("orders") {
			fmt.Println(m.MessageID, m.DeadLetterReason)
		}
		fmt.Println("still there:", q.RuntimeProperties().DeadLetterMessageCount)
	})
	// Output:
	// order-1 MaxDeliveryCountExceeded
	// still there: 1
}
