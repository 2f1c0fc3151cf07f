// Command quickstart shows minibus's main job in one run: create a queue,
// send, receive with a peek-lock, complete, and watch a message that keeps
// failing land in the dead-letter queue. Run it with
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/minibus-go/minibus"
)

func main() {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	defer ns.Close()

	// A queue whose messages get two delivery attempts.
	q, err := ns.CreateQueue("orders", &minibus.QueueProperties{MaxDeliveryCount: 2})
	check(err)
	fmt.Println("created queue", q.Name())

	check(q.SendMessages(ctx, []*minibus.Message{
		{Body: []byte("order 1: 2 apples")},
		{Body: []byte("order 2: 1 pear"), Subject: "poison"},
	}, nil))
	fmt.Println("sent 2 messages")

	r, err := q.NewReceiver(nil) // peek-lock
	check(err)
	defer r.Close(ctx)

	// Receive until nothing is left: complete good orders, abandon the
	// poison one. After its second failed delivery the broker dead-letters
	// it. NoWait returns what is there now, and nothing once the queue is
	// drained, where a plain receive would wait for the next message.
	for {
		msgs, err := r.ReceiveMessages(ctx, 10, &minibus.ReceiveMessagesOptions{NoWait: true})
		check(err)
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			if m.Subject == "poison" {
				fmt.Printf("abandon  seq=%d delivery=%d %q\n", m.SequenceNumber, m.DeliveryCount, m.Body)
				check(r.AbandonMessage(ctx, m, nil))
				continue
			}
			fmt.Printf("complete seq=%d delivery=%d %q\n", m.SequenceNumber, m.DeliveryCount, m.Body)
			check(r.CompleteMessage(ctx, m, nil))
		}
	}

	rp := q.RuntimeProperties()
	fmt.Printf("queue now: active=%d dead-lettered=%d\n", rp.ActiveMessageCount, rp.DeadLetterMessageCount)

	dlq, err := q.NewReceiver(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	check(err)
	defer dlq.Close(ctx)
	dead, err := dlq.ReceiveMessages(ctx, 10, &minibus.ReceiveMessagesOptions{NoWait: true})
	check(err)
	for _, m := range dead {
		fmt.Printf("dead-letter queue: seq=%d %q reason=%s (%s)\n",
			m.SequenceNumber, m.Body, m.DeadLetterReason, m.DeadLetterErrorDescription)
		check(dlq.CompleteMessage(ctx, m, nil))
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
