// Command worker is a service-shaped program: a Processor sends the emails
// queued in a minibus queue, dead-letters bad addresses and retries a mail
// server that is down. worker_test.go beside it tests it with minibustest:
// quiescence, time travel and an injected fault.
//
//	go run ./examples/worker
package main

import (
	"context"
	"fmt"
	"log"
	"slices"

	"github.com/minibus-go/minibus"
)

func main() {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	defer ns.Close()

	w, err := NewWorker(ns, func(ctx context.Context, to, body string) error {
		return nil // a real service would talk to its mail server here
	})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	started := w.Processor().Started()
	go func() { done <- w.Run(runCtx) }()
	<-started

	for _, to := range []string{"ada@example.com", "bob@example.com", "not an address"} {
		if err := w.Enqueue(ctx, to, "hello"); err != nil {
			log.Fatal(err)
		}
	}
	// Wait until every email is handled: no sleeping, no polling.
	if err := ns.WaitIdle(ctx); err != nil {
		log.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}

	sent := w.Sent()
	slices.Sort(sent)
	fmt.Println("sent:", sent)
	q, _ := ns.Queue("emails")
	dlq, _ := q.NewReceiver(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	dead, _ := dlq.ReceiveMessages(ctx, 10, &minibus.ReceiveMessagesOptions{NoWait: true})
	for _, d := range dead {
		fmt.Printf("dead-lettered: %q (%s: %s)\n", d.To, d.DeadLetterReason, d.DeadLetterErrorDescription)
	}
}
