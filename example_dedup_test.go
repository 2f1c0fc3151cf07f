package minibus_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// With duplicate detection a resend within the history window is accepted
// and dropped; after the window it is new.
func ExampleQueueProperties_duplicateDetection() {
	ctx := context.Background()
	mock := clock.NewMock()
	ns := minibus.NewNamespace(minibus.WithClock(mock))
	defer ns.Close()
	q, _ := ns.CreateQueue("payments", &minibus.QueueProperties{
		RequiresDuplicateDetection:          true,
		DuplicateDetectionHistoryTimeWindow: 10 * time.Minute,
	})

	pay := &minibus.Message{MessageID: "payment-42", Body: []byte("42 EUR")}
	fmt.Println(q.SendMessage(ctx, pay, nil))
	fmt.Println(q.SendMessage(ctx, pay, nil)) // a retry: no error, dropped
	fmt.Println("messages:", q.RuntimeProperties().ActiveMessageCount)

	mock.Add(10 * time.Minute)
	_ = q.SendMessage(ctx, pay, nil) // the window has passed: a new message
	fmt.Println("messages:", q.RuntimeProperties().ActiveMessageCount)
	// Output:
	// <nil>
	// <nil>
	// messages: 1
	// messages: 2
}
