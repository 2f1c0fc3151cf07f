package minibus_test

import (
	"context"
	"fmt"

	"github.com/minibus-go/minibus"
)

// Send, receive with a peek-lock, and complete.
func Example() {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	defer ns.Close()

	q, _ := ns.CreateQueue("orders", nil)
	_ = q.SendMessage(ctx, &minibus.Message{Body: []byte("2 apples")}, nil)

	r, _ := q.NewReceiver(nil) // peek-lock
	msgs, _ := r.ReceiveMessages(ctx, 10, nil)
	for _, m := range msgs {
		fmt.Printf("seq=%d delivery=%d body=%s\n", m.SequenceNumber, m.DeliveryCount, m.Body)
		_ = r.CompleteMessage(ctx, m, nil)
	}
	fmt.Println("active:", q.RuntimeProperties().ActiveMessageCount)
	// Output:
	// seq=1 delivery=1 body=2 apples
	// active: 0
}
