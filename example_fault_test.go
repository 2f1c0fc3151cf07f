package minibus_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/minibus-go/minibus"
)

// A fault injector makes chosen calls fail with a chosen error, changing
// nothing: here the first send to "orders", to test a retry.
func ExampleWithFaultInjector() {
	ctx := context.Background()
	errUnavailable := errors.New("service unavailable")
	failures := 1
	ns := minibus.NewNamespace(minibus.WithFaultInjector(func(op minibus.Operation, entity string) error {
		if op == minibus.OpSend && entity == "orders" && failures > 0 {
			failures--
			return errUnavailable
		}
		return nil
	}))
	defer ns.Close()
	q, _ := ns.CreateQueue("orders", nil)

	send := func() error { return q.SendMessage(ctx, &minibus.Message{Body: []byte("2 apples")}, nil) }
	err := send()
	fmt.Println("first send:", err, "- unavailable:", errors.Is(err, errUnavailable))
	fmt.Println("messages:", q.RuntimeProperties().ActiveMessageCount)
	fmt.Println("second send:", send())
	fmt.Println("messages:", q.RuntimeProperties().ActiveMessageCount)
	// Output:
	// first send: service unavailable - unavailable: true
	// messages: 0
	// second send: <nil>
	// messages: 1
}
