package minibus_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// A scheduled message waits for its time, then gets a new sequence number
// and its EnqueuedTime; its time to live counts from then.
func Example_schedule() {
	ctx := context.Background()
	mock := clock.NewMock()
	start := mock.Now()
	ns := minibus.NewNamespace(minibus.WithClock(mock))
	defer ns.Close()
	q, _ := ns.CreateQueue("reminders", nil)

	seqs, _ := q.ScheduleMessages(ctx, []*minibus.Message{
		{Body: []byte("pay rent"), TimeToLive: 10 * time.Minute},
		{Body: []byte("cancelled")},
	}, start.Add(5*time.Minute), nil)
	_ = q.CancelScheduledMessages(ctx, seqs[1:], nil)
	fmt.Println("scheduled as", seqs[0], "- scheduled count:", q.RuntimeProperties().ScheduledMessageCount)

	mock.Add(5 * time.Minute)
	r, _ := q.NewReceiver(nil)
	m, _ := r.ReceiveMessages(ctx, 1, nil)
	fmt.Printf("%s: seq=%d enqueued=+%v expires=+%v\n", m[0].Body, m[0].SequenceNumber,
		m[0].EnqueuedTime.Sub(start), m[0].ExpiresAt.Sub(start))
	// Output:
	// scheduled as 1 - scheduled count: 1
	// pay rent: seq=3 enqueued=+5m0s expires=+15m0s
}
