package minibus_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// An application under test takes its time from the namespace, not from
// time.Now: on a mock clock, its "in an hour" is the mock's.
func ExampleNamespace_Now() {
	ctx := context.Background()
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	ns := minibus.NewNamespace(minibus.WithClock(mock))
	defer ns.Close()
	q, _ := ns.CreateQueue("reminders", nil)

	// The application's code: remind in an hour.
	_, _ = q.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte("stand up")}}, ns.Now().Add(time.Hour), nil)

	fmt.Println("now", ns.Now().Format(time.Kitchen), "scheduled", q.RuntimeProperties().ScheduledMessageCount)
	mock.Add(time.Hour)
	fmt.Println("now", ns.Now().Format(time.Kitchen), "active", q.RuntimeProperties().ActiveMessageCount)
	// Output:
	// now 9:00AM scheduled 1
	// now 10:00AM active 1
}
