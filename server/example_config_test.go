package server_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/server"
)

// The official emulator's Config.json, comments and trailing commas
// included, creates the same entities in a minibus namespace; a bad value
// is reported by its JSON path and changes nothing.
func ExampleApplyConfig() {
	ns := minibus.NewNamespace()
	defer ns.Close()

	config := []byte(`{
  "UserConfig": {
    "Namespaces": [{
      "Name": "sbemulatorns",
      "Queues": [
        {"Name": "orders", "Properties": {"LockDuration": "PT30S", "MaxDeliveryCount": 3}},
      ],
      "Topics": [{
        "Name": "events",
        "Subscriptions": [
          {"Name": "all"}, // no Rules: the $Default rule
          {"Name": "json", "Rules": [{"Name": "by-type", "Properties": {
            "FilterType": "Correlation",
            "CorrelationFilter": {"ContentType": "application/json"},
          }}]},
        ],
      }],
    }],
    "Logging": {"Type": "Console"}
  }
}`)
	if err := server.ApplyConfig(ns, config); err != nil {
		fmt.Println(err)
		return
	}
	orders, _ := ns.Queue("orders")
	fmt.Println(orders.Name(), orders.Properties().LockDuration, orders.Properties().MaxDeliveryCount)

	events, _ := ns.Topic("events")
	_ = events.SendMessage(context.Background(), &minibus.Message{Body: []byte("{}"), ContentType: "application/json"}, nil)
	_ = events.SendMessage(context.Background(), &minibus.Message{Body: []byte("hi"), ContentType: "text/plain"}, nil)
	for _, name := range events.Subscriptions() {
		sub, _ := events.Subscription(name)
		fmt.Println(name, sub.Rules()[0].Name, sub.RuntimeProperties().ActiveMessageCount)
	}

	bad := []byte(`{"UserConfig": {"Namespaces": [{"Queues": [{"Name": "late", "Properties": {"LockDuration": "PT1X"}}]}]}}`)
	err := server.ApplyConfig(ns, bad)
	fmt.Println(errors.Is(err, minibus.ErrInvalidArgument))
	fmt.Println(err)
	fmt.Println(ns.Queues())
	// Output:
	// orders 30s 3
	// all $Default 2
	// json by-type 1
	// true
	// minibus: config: UserConfig.Namespaces[0].Queues[0].Properties.LockDuration: "PT1X" is not an ISO 8601 duration: invalid argument
	// [orders]
}
