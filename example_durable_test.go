package minibus_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// A durable namespace keeps its queues and messages in a directory: opened
// again, it has them, a lock open when it closed has ended with its
// delivery counted (SEMANTICS L6), and what came due while it was closed
// happens at once.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "minibus-example-")
	defer os.RemoveAll(dir)
	mock := clock.NewMock()

	ns, _ := minibus.Open(dir, minibus.WithClock(mock))
	q, _ := ns.CreateQueue("orders", nil)
	_ = q.SendMessage(ctx, &minibus.Message{Body: []byte("2 apples")}, nil)
	_, _ = q.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte("1 pear")}}, mock.Now().Add(time.Hour), nil)
	r, _ := q.NewReceiver(nil)
	_, _ = r.ReceiveMessages(ctx, 1, nil) // locked, never settled
	_ = ns.Close()

	mock.Add(2 * time.Hour) // time passes while the process is down
	ns, _ = minibus.Open(dir, minibus.WithClock(mock))
	defer ns.Close()
	q, _ = ns.Queue("orders")
	r, _ = q.NewReceiver(nil)
	msgs, _ := r.ReceiveMessages(ctx, 10, &minibus.ReceiveMessagesOptions{NoWait: true})
	for _, m := range msgs {
		fmt.Printf("%s: sequence number %d, delivery count %d\n", m.Body, m.SequenceNumber, m.DeliveryCount)
	}
	// Output:
	// 2 apples: sequence number 1, delivery count 2
	// 1 pear: sequence number 3, delivery count 1
}
