package main

import (
	"context"
	"fmt"
	"io"

	"github.com/minibus-go/minibus"
)

// recoverOrders opens the namespace in dir, says what it found, and
// receives and completes every order, writing what it gets to w.
func recoverOrders(w io.Writer, dir string) error {
	ctx := context.Background()
	ns, err := minibus.Open(dir)
	if err != nil {
		return err
	}
	defer ns.Close()
	q, err := ns.Queue("orders")
	if err != nil {
		return err
	}
	rp := q.RuntimeProperties()
	fmt.Fprintf(w, "opened the directory again: the queue %s holds %d messages\n", q.Name(), rp.ActiveMessageCount)
	r, err := q.NewReceiver(nil)
	if err != nil {
		return err
	}
	defer r.Close(ctx)
	for {
		msgs, err := r.ReceiveMessages(ctx, 10, &minibus.ReceiveMessagesOptions{NoWait: true})
		if err != nil || len(msgs) == 0 {
			return err
		}
		for _, m := range msgs {
			fmt.Fprintf(w, "recovered %q: sequence number %d, delivery count %d\n", m.Body, m.SequenceNumber, m.DeliveryCount)
			if err := r.CompleteMessage(ctx, m, nil); err != nil {
				return err
			}
		}
	}
}
