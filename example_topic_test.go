package minibus_test

import (
	"context"
	"fmt"

	"github.com/minibus-go/minibus"
)

// A topic copies each message to every subscription whose rules match: here
// a SQL filter, a correlation filter, and the default rule that takes
// everything.
func Example_topicsAndFilters() {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	defer ns.Close()
	top, _ := ns.CreateTopic("orders", nil)
	_, _ = top.CreateSubscription("big", &minibus.SubscriptionProperties{
		DefaultRule: &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "amount > 100"}},
	})
	_, _ = top.CreateSubscription("refunds", &minibus.SubscriptionProperties{
		DefaultRule: &minibus.RuleProperties{Filter: minibus.CorrelationFilter{Subject: "refund"}},
	})
	_, _ = top.CreateSubscription("all", nil)

	_ = top.SendMessages(ctx, []*minibus.Message{
		{Body: []byte("bike"), Subject: "order", ApplicationProperties: map[string]any{"amount": 250}},
		{Body: []byte("bell"), Subject: "refund", ApplicationProperties: map[string]any{"amount": 12}},
	}, nil)

	for _, name := range top.Subscriptions() {
		sub, _ := top.Subscription(name)
		r, _ := sub.NewReceiver(nil)
		msgs, _ := r.PeekMessages(ctx, 10, nil)
		fmt.Print(name, ":")
		for _, m := range msgs {
			fmt.Printf(" %s(seq %d)", m.Body, m.SequenceNumber)
		}
		fmt.Println()
	}
	// Output:
	// all: bike(seq 1) bell(seq 2)
	// big: bike(seq 1)
	// refunds: bell(seq 2)
}

// A rule with an action gives the subscription its own, changed copy.
func ExampleSQLAction() {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	defer ns.Close()
	top, _ := ns.CreateTopic("orders", nil)
	sub, _ := top.CreateSubscription("discounted", &minibus.SubscriptionProperties{
		DefaultRule: &minibus.RuleProperties{
			Filter: minibus.SQLFilter{Expression: "quantity >= 10"},
			Action: minibus.SQLAction{Expression: "SET price = price * 0.9; SET sys.Label = 'bulk'"},
		},
	})
	_ = top.SendMessage(ctx, &minibus.Message{Subject: "order", ApplicationProperties: map[string]any{"quantity": 12, "price": 5.0}}, nil)

	r, _ := sub.NewReceiver(nil)
	msgs, _ := r.ReceiveMessages(ctx, 1, nil)
	fmt.Println(msgs[0].Subject, msgs[0].ApplicationProperties["price"])
	// Output:
	// bulk 4.5
}
