package minibus_test

import (
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// A queue with AutoDeleteOnIdle disappears after that long without
// activity.
func Example_autoDeleteOnIdle() {
	mock := clock.NewMock()
	ns := minibus.NewNamespace(minibus.WithClock(mock))
	defer ns.Close()
	_, _ = ns.CreateQueue("temp-replies", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute})
	_, _ = ns.CreateQueue("orders", nil)

	mock.Add(5*time.Minute - time.Second)
	fmt.Println(ns.Queues())
	mock.Add(time.Second)
	fmt.Println(ns.Queues())
	_, err := ns.Queue("temp-replies")
	fmt.Println(err)
	// Output:
	// [orders temp-replies]
	// [orders]
	// minibus: queue "temp-replies": not found
}
