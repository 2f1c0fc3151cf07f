package minibus_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// Time to live with a mock clock: the queue's default caps the message's
// own, and expired messages move to the dead-letter queue.
func Example_timeToLive() {
	ctx := context.Background()
	mock := clock.NewMock()
	ns := minibus.NewNamespace(minibus.WithClock(mock))
	defer ns.Close()
	q, _ := ns.CreateQueue("prices", &minibus.QueueProperties{
		DefaultMessageTimeToLive:         10 * time.Minute,
		DeadLetteringOnMessageExpiration: true,
	})
	_ = q.SendMessages(ctx, []*minibus.Message{
		{Body: []byte("short"), TimeToLive: time.Minute},
		{Body: []byte("long"), TimeToLive: time.Hour}, // cut to 10 minutes
	}, nil)

	for _, d := range []time.Duration{time.Minute, 9 * time.Minute} {
		mock.Add(d)
		rp := q.RuntimeProperties()
		fmt.Printf("after %v more: active=%d dead-lettered=%d\n", d, rp.ActiveMessageCount, rp.DeadLetterMessageCount)
	}
	dlq, _ := q.NewReceiver(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	dead, _ := dlq.PeekMessages(ctx, 10, nil)
	for _, d := range dead {
		fmt.Println(string(d.Body), d.DeadLetterReason)
	}
	// Output:
	// after 1m0s more: active=1 dead-lettered=1
	// after 9m0s more: active=0 dead-lettered=2
	// short TTLExpiredException
	// long TTLExpiredException
}
