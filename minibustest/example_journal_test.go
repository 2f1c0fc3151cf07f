package minibustest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
)

// The journal: every broker event so far, in order.
func ExampleEnv_Events() {
	asTest(func(t testing.TB) {
		ctx := context.Background()
		env := minibustest.New(t)
		q, _ := env.Namespace().CreateQueue("orders", nil)
		_ = q.SendMessage(ctx, &minibus.Message{MessageID: "order-1"}, nil)
		r, _ := q.NewReceiver(nil)
		msgs, _ := r.ReceiveMessages(ctx, 1, nil)
		_ = r.CompleteMessage(ctx, msgs[0], nil)
		for _, ev := range env.Events() {
			fmt.Printf("%v %s %q\n", ev.Kind, ev.Entity, ev.MessageID)
		}
	})
	// Output:
	// EntityCreated orders ""
	// Sent orders "order-1"
	// Delivered orders "order-1"
	// Completed orders "order-1"
}

// EventsOf keeps the events of some kinds: here what a processor
// dead-lettered, with the reason.
func ExampleEnv_EventsOf() {
	asTest(func(t testing.TB) {
		ctx := context.Background()
		env := minibustest.New(t)
		q, _ := env.Namespace().CreateQueue("orders", nil)
		p, _ := q.NewProcessor(func(_ context.Context, m *minibus.ReceivedMessage) error {
			if len(m.Body) == 0 {
				return &minibus.DeadLetterError{Reason: "EmptyOrder"}
			}
			return nil
		}, nil)
		env.Start(p)
		_ = q.SendMessages(ctx, []*minibus.Message{{MessageID: "a", Body: []byte("x")}, {MessageID: "b"}}, nil)
		env.WaitIdle()
		for _, ev := range env.EventsOf(minibus.EventDeadLettered) {
			fmt.Println(ev.Kind, ev.MessageID, ev.Reason)
		}
		fmt.Println(len(env.EventsOf(minibus.EventCompleted, minibus.EventAbandoned)), "completed or abandoned")
	})
	// Output:
	// DeadLettered b EmptyOrder
	// 1 completed or abandoned
}

// EventsFor keeps one entity's events (a subscription by its path),
// optionally of some kinds.
func ExampleEnv_EventsFor() {
	asTest(func(t testing.TB) {
		ctx := context.Background()
		env := minibustest.New(t)
		topic, _ := env.Namespace().CreateTopic("orders", nil)
		_, _ = topic.CreateSubscription("billing", nil)
		_, _ = topic.CreateSubscription("shipping", nil)
		_ = topic.SendMessage(ctx, &minibus.Message{MessageID: "order-1"}, nil)
		for _, ev := range env.EventsFor("orders/Subscriptions/billing") {
			fmt.Printf("%v %s %q\n", ev.Kind, ev.Entity, ev.MessageID)
		}
		fmt.Println(len(env.EventsFor("orders", minibus.EventSent)), "sent to the topic")
	})
	// Output:
	// EntityCreated orders/Subscriptions/billing ""
	// Sent orders/Subscriptions/billing "order-1"
	// 1 sent to the topic
}

// WaitFor waits until an event matches, without polling: here the lock of
// a message a handler holds ends when the clock passes LockDuration, and
// the message comes back.
func ExampleEnv_WaitFor() {
	asTest(func(t testing.TB) {
		ctx := context.Background()
		env := minibustest.New(t)
		q, _ := env.Namespace().CreateQueue("orders", &minibus.QueueProperties{LockDuration: time.Minute})
		_ = q.SendMessage(ctx, &minibus.Message{MessageID: "order-1"}, nil)
		r, _ := q.NewReceiver(nil)
		_, _ = r.ReceiveMessages(ctx, 1, nil) // held, never settled
		env.Advance(time.Minute)
		ev := env.WaitFor(func(ev minibus.Event) bool { return ev.Kind == minibus.EventLockLost })
		fmt.Println(ev.Kind, ev.MessageID, "at", ev.At.Format(time.TimeOnly))
		msgs, _ := r.ReceiveMessages(ctx, 1, nil)
		fmt.Println("delivered again, DeliveryCount", msgs[0].DeliveryCount)
	})
	// Output:
	// LockLost order-1 at 00:01:00
	// delivered again, DeliveryCount 2
}

// FailNext makes chosen calls fail, changing nothing: the code under test
// sees the error its retry must handle.
func ExampleEnv_FailNext() {
	asTest(func(t testing.TB) {
		ctx := context.Background()
		env := minibustest.New(t)
		q, _ := env.Namespace().CreateQueue("orders", nil)
		errBusy := errors.New("server busy")
		env.FailNext("orders", minibus.OpSend, 1, errBusy)
		err := q.SendMessage(ctx, &minibus.Message{}, nil)
		fmt.Println("first:", err, errors.Is(err, errBusy))
		fmt.Println("second:", q.SendMessage(ctx, &minibus.Message{}, nil))
		fmt.Println("active:", q.RuntimeProperties().ActiveMessageCount)
	})
	// Output:
	// first: server busy true
	// second: <nil>
	// active: 1
}
