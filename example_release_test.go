package minibus_test

import (
	"context"
	"fmt"

	"github.com/minibus-go/minibus"
)

// A receiver that took a message it cannot handle now, say while shutting
// down, releases it: the message is next again for anyone, and the
// delivery does not count against MaxDeliveryCount (SEMANTICS L15).
func ExampleReceiver_ReleaseMessage() {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	defer ns.Close()
	q, _ := ns.CreateQueue("jobs", &minibus.QueueProperties{MaxDeliveryCount: 1})
	_ = q.SendMessage(ctx, &minibus.Message{Body: []byte("job 1")}, nil)

	r, _ := q.NewReceiver(nil)
	defer r.Close(ctx)
	for range 3 {
		msgs, _ := r.ReceiveMessages(ctx, 1, nil)
		fmt.Println("took", string(msgs[0].Body), "delivery", msgs[0].DeliveryCount)
		_ = r.ReleaseMessage(ctx, msgs[0], nil) // not now
	}
	msgs, _ := r.ReceiveMessages(ctx, 1, nil)
	_ = r.CompleteMessage(ctx, msgs[0], nil)
	fmt.Println("done", string(msgs[0].Body), "dead-lettered:", q.RuntimeProperties().DeadLetterMessageCount)
	// Output:
	// took job 1 delivery 1
	// took job 1 delivery 1
	// took job 1 delivery 1
	// done job 1 dead-lettered: 0
}
