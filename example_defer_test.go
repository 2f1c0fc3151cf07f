package minibus_test

import (
	"context"
	"fmt"

	"github.com/minibus-go/minibus"
)

// A deferred message waits until it is fetched by its sequence number.
func Example_defer() {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	defer ns.Close()
	q, _ := ns.CreateQueue("steps", nil)
	_ = q.SendMessages(ctx, []*minibus.Message{{Body: []byte("step 2")}, {Body: []byte("step 1")}}, nil)

	r, _ := q.NewReceiver(nil)
	msgs, _ := r.ReceiveMessages(ctx, 10, nil)
	_ = r.DeferMessage(ctx, msgs[0], nil) // step 2 must wait for step 1
	fmt.Println("handle", string(msgs[1].Body))
	_ = r.CompleteMessage(ctx, msgs[1], nil)

	later, _ := r.ReceiveDeferredMessages(ctx, []int64{msgs[0].SequenceNumber}, nil)
	fmt.Println("handle", string(later[0].Body), later[0].State)
	_ = r.CompleteMessage(ctx, later[0], nil)
	// Output:
	// handle step 1
	// handle step 2 Deferred
}
