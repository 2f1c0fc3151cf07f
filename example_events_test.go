package minibus_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// An observer sees every broker event, in order, with the instant it took
// effect: a deadline's own instant, such as an expiry, even when the clock
// has moved past it.
func ExampleWithObserver() {
	ctx := context.Background()
	mock := clock.NewMock()
	start := mock.Now()
	ns := minibus.NewNamespace(minibus.WithClock(mock), minibus.WithObserver(func(ev minibus.Event) {
		fmt.Printf("+%-4v %-13v %s", ev.At.Sub(start), ev.Kind, ev.Entity)
		if ev.SequenceNumber != 0 {
			fmt.Printf(" #%d %s", ev.SequenceNumber, ev.MessageID)
		}
		if ev.Reason != "" {
			fmt.Printf(" (%s)", ev.Reason)
		}
		fmt.Println()
	}))
	defer ns.Close()
	q, _ := ns.CreateQueue("orders", &minibus.QueueProperties{DeadLetteringOnMessageExpiration: true})

	_ = q.SendMessages(ctx, []*minibus.Message{
		{MessageID: "pay"},
		{MessageID: "stale", TimeToLive: 10 * time.Second},
	}, nil)
	r, _ := q.NewReceiver(nil)
	msgs, _ := r.ReceiveMessages(ctx, 1, nil)
	_ = r.CompleteMessage(ctx, msgs[0], nil)

	mock.Add(time.Minute)
	_ = q.RuntimeProperties() // the next call sees everything due by now
	// Output:
	// +0s   EntityCreated orders
	// +0s   Sent          orders #1 pay
	// +0s   Sent          orders #2 stale
	// +0s   Delivered     orders #1 pay
	// +0s   Completed     orders #1 pay
	// +10s  Expired       orders #2 stale
	// +10s  DeadLettered  orders #2 stale (TTLExpiredException)
}
