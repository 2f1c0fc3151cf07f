// Command timetravel drives a namespace with a mock clock and prints what
// happens, minute by minute: a message expiring into the dead-letter queue,
// a scheduled message activating and then expiring, a lock running out (a
// late complete is ErrLockLost, and the message comes back with its
// DeliveryCount up) and an idle queue disappearing. No sleeps: one mock.Add
// and every rule due by then has applied. Run it with
//
//	go run ./examples/timetravel
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

func main() {
	ctx := context.Background()
	mock := clock.NewMock()
	start := mock.Now()
	ns := minibus.NewNamespace(minibus.WithClock(mock))
	defer ns.Close()

	jobs, err := ns.CreateQueue("jobs", &minibus.QueueProperties{
		LockDuration:                     time.Minute,
		DefaultMessageTimeToLive:         10 * time.Minute,
		DeadLetteringOnMessageExpiration: true,
	})
	check(err)
	_, err = ns.CreateQueue("replies-42", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute})
	check(err)

	check(jobs.SendMessage(ctx, &minibus.Message{Body: []byte("stale job"), TimeToLive: 3 * time.Minute}, nil))
	check(jobs.SendMessage(ctx, &minibus.Message{Body: []byte("held job")}, nil))
	_, err = jobs.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte("nightly report")}}, start.Add(5*time.Minute), nil)
	check(err)

	r, err := jobs.NewReceiver(nil)
	check(err)
	defer r.Close(ctx)
	// Lock "stale job" and "held job" and never settle them: each lock runs
	// out after a minute, and "stale job" expires at +3m, once its second
	// lock has ended too.
	held, err := r.ReceiveMessages(ctx, 2, nil)
	check(err)
	fmt.Printf("+0m   locked %q and %q until +%v\n", held[0].Body, held[1].Body, held[0].LockedUntil.Sub(start))

	report := func(label string) {
		rp := jobs.RuntimeProperties()
		fmt.Printf("%-5s jobs: active=%d scheduled=%d dead-lettered=%d   queues=%v\n",
			label, rp.ActiveMessageCount, rp.ScheduledMessageCount, rp.DeadLetterMessageCount, ns.Queues())
	}
	report("+0m")

	// +1m: both locks have run out. Settling with the old lock is
	// ErrLockLost, and the messages are back, their delivery counted.
	mock.Add(time.Minute)
	report("+1m")
	err = r.CompleteMessage(ctx, held[1], nil)
	fmt.Printf("+1m   complete %q with its old lock: lock lost=%t (%v)\n", held[1].Body, errors.Is(err, minibus.ErrLockLost), err)
	again, err := r.ReceiveMessages(ctx, 2, &minibus.ReceiveMessagesOptions{NoWait: true})
	check(err)
	for _, m := range again {
		fmt.Printf("+1m   received %q again: DeliveryCount=%d, locked until +%v\n", m.Body, m.DeliveryCount, m.LockedUntil.Sub(start))
	}

	for _, step := range []time.Duration{2 * time.Minute, 2 * time.Minute, 10 * time.Minute} {
		mock.Add(step)
		report(fmt.Sprintf("+%dm", int(mock.Now().Sub(start).Minutes())))
	}

	dlq, err := jobs.NewReceiver(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	check(err)
	defer dlq.Close(ctx)
	dead, err := dlq.PeekMessages(ctx, 10, nil)
	check(err)
	for _, m := range dead {
		fmt.Printf("dead-lettered: %q seq=%d enqueued=+%v expired=+%v reason=%s\n",
			m.Body, m.SequenceNumber, m.EnqueuedTime.Sub(start), m.ExpiresAt.Sub(start), m.DeadLetterReason)
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
