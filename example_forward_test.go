package minibus_test

import (
	"context"
	"fmt"

	"github.com/minibus-go/minibus"
)

// A queue or subscription with ForwardTo passes every message on to
// another queue or topic; ForwardDeadLetteredMessagesTo does the same for
// its dead letters.
func ExampleQueueProperties_forwardTo() {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	defer ns.Close()
	all, _ := ns.CreateQueue("all-orders", nil)
	_, _ = ns.CreateQueue("web-orders", &minibus.QueueProperties{ForwardTo: "all-orders"})
	top, _ := ns.CreateTopic("events", nil)
	_, _ = top.CreateSubscription("orders", &minibus.SubscriptionProperties{
		DefaultRule: &minibus.RuleProperties{Filter: minibus.CorrelationFilter{Subject: "order"}},
		ForwardTo:   "all-orders",
	})

	web, _ := ns.Queue("web-orders")
	_ = web.SendMessage(ctx, &minibus.Message{Body: []byte("from the web shop")}, nil)
	_ = top.SendMessage(ctx, &minibus.Message{Subject: "order", Body: []byte("from the event bus")}, nil)

	r, _ := all.NewReceiver(nil)
	msgs, _ := r.ReceiveMessages(ctx, 10, nil)
	for _, m := range msgs {
		fmt.Printf("%s (seq %d, first numbered %d)\n", m.Body, m.SequenceNumber, m.EnqueuedSequenceNumber)
	}
	// Output:
	// from the web shop (seq 1, first numbered 1)
	// from the event bus (seq 2, first numbered 1)
}
