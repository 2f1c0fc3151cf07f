// Command pubsub shows topics and subscriptions: one topic, three
// subscriptions that select with a SQL filter, a correlation filter and no
// filter at all, and a rule action that changes one subscription's copies.
// It prints who got what. Run it with
//
//	go run ./examples/pubsub
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

	orders, err := ns.CreateTopic("orders", nil)
	check(err)

	// Big European orders, by SQL filter; the rule's action marks each copy.
	_, err = orders.CreateSubscription("big-eu", &minibus.SubscriptionProperties{
		DefaultRule: &minibus.RuleProperties{
			Name:   "big-eu",
			Filter: minibus.SQLFilter{Expression: "amount >= @min AND region = 'eu'", Parameters: map[string]any{"@min": 100}},
			Action: minibus.SQLAction{Expression: "SET priority = 'high'; SET sys.Label = 'vip-' + sys.Label"},
		},
	})
	check(err)
	// Refunds, by correlation filter: exact match on the subject.
	_, err = orders.CreateSubscription("refunds", &minibus.SubscriptionProperties{
		DefaultRule: &minibus.RuleProperties{Filter: minibus.CorrelationFilter{Subject: "refund"}},
	})
	check(err)
	// Everything: the default rule, a TrueFilter.
	_, err = orders.CreateSubscription("audit", nil)
	check(err)

	check(orders.SendMessages(ctx, []*minibus.Message{
		{Body: []byte("#1 bike"), Subject: "order", ApplicationProperties: map[string]any{"amount": 250, "region": "eu"}},
		{Body: []byte("#2 bell"), Subject: "order", ApplicationProperties: map[string]any{"amount": 12, "region": "eu"}},
		{Body: []byte("#3 tent"), Subject: "order", ApplicationProperties: map[string]any{"amount": 400, "region": "us"}},
		{Body: []byte("#1 bike"), Subject: "refund", ApplicationProperties: map[string]any{"amount": 250, "region": "eu"}},
	}, nil))

	for _, name := range orders.Subscriptions() {
		sub, err := orders.Subscription(name)
		check(err)
		fmt.Printf("%s:\n", name)
		drain(ctx, sub)
	}
}

// drain receives and prints everything the subscription holds now, and
// closes its receiver.
func drain(ctx context.Context, sub *minibus.Subscription) {
	r, err := sub.NewReceiver(&minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
	check(err)
	defer r.Close(ctx)
	for {
		// NoWait: what is there now; nothing once drained, instead of
		// waiting for the next message.
		msgs, err := r.ReceiveMessages(ctx, 10, &minibus.ReceiveMessagesOptions{NoWait: true})
		check(err)
		if len(msgs) == 0 {
			return
		}
		for _, m := range msgs {
			fmt.Printf("  seq=%d %-8s subject=%-10s priority=%v\n", m.SequenceNumber, m.Body, m.Subject, m.ApplicationProperties["priority"])
		}
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
