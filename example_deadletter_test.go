package minibus_test

import (
	"context"
	"fmt"

	"github.com/minibus-go/minibus"
)

// A message that keeps failing is dead-lettered after MaxDeliveryCount
// deliveries; the application can dead-letter one itself, too.
func Example_deadLetter() {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	defer ns.Close()
	q, _ := ns.CreateQueue("orders", &minibus.QueueProperties{MaxDeliveryCount: 2})
	_ = q.SendMessages(ctx, []*minibus.Message{{Body: []byte("poison")}, {Body: []byte("malformed")}}, nil)

	r, _ := q.NewReceiver(nil)
	for range 2 { // two failed deliveries of "poison"
		m, _ := r.ReceiveMessages(ctx, 1, nil)
		_ = r.AbandonMessage(ctx, m[0], nil)
	}
	m, _ := r.ReceiveMessages(ctx, 1, nil)
	_ = r.DeadLetterMessage(ctx, m[0], &minibus.DeadLetterOptions{Reason: "Malformed", ErrorDescription: "no quantity"})

	dlq, _ := q.NewReceiver(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	dead, _ := dlq.ReceiveMessages(ctx, 10, nil)
	for _, d := range dead {
		fmt.Printf("%s: %s (%s)\n", d.Body, d.DeadLetterReason, d.DeadLetterErrorDescription)
	}
	// Output:
	// poison: MaxDeliveryCountExceeded (Message could not be consumed after 2 delivery attempts.)
	// malformed: Malformed (no quantity)
}
