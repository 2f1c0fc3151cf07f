// Ported from the Azure SDK for Go (azservicebus v1.11.0,
// admin/example_admin_client_test.go), Copyright (c) Microsoft Corporation,
// MIT License. Changed: the client construction (azsb.NewAdminClient(ns)
// where the SDK calls admin.NewClient or admin.NewClientFromConnectionString)
// and so the type of adminClient; the examples' names, which name azsb's
// AdminClient and NewAdminClient; and the shared err and exitOnError, which
// are example_sdk_shared_test.go's (that exitOnError panics on an error,
// where the admin package's ignores it).

package azsb_test

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus/admin"
	"github.com/minibus-go/minibus/azsb"
)

func ExampleNewAdminClient() {
	// NOTE: If you'd like to authenticate using a Service Bus connection string
	// look at `NewClientWithConnectionString` instead.

	adminClient = azsb.NewAdminClient(ns)
}

func ExampleNewAdminClient_fromConnectionString() {
	// NOTE: If you'd like to authenticate via Azure Active Directory look at
	// the `NewClient` function instead.

	adminClient = azsb.NewAdminClient(ns)
}

func ExampleAdminClient_CreateQueue() {
	resp, err := adminClient.CreateQueue(context.TODO(), "queue-name", nil)
	exitOnError("Failed to add queue", err)

	// some example properties
	fmt.Printf("Max message delivery count = %d\n", *resp.MaxDeliveryCount)
	fmt.Printf("Lock duration: %s\n", *resp.LockDuration)
}

func ExampleAdminClient_CreateQueue_usingproperties() {
	maxDeliveryCount := int32(10)

	resp, err := adminClient.CreateQueue(context.TODO(), "queue-name", &admin.CreateQueueOptions{
		Properties: &admin.QueueProperties{
			// some example properties
			LockDuration:     to.Ptr("PT1M"),
			MaxDeliveryCount: &maxDeliveryCount,
		},
	})
	exitOnError("Failed to create queue", err)

	// some example properties
	fmt.Printf("Max message delivery count = %d\n", *resp.MaxDeliveryCount)
	fmt.Printf("Lock duration: %s\n", *resp.LockDuration)
}

func ExampleAdminClient_NewListQueuesPager() {
	queuePager := adminClient.NewListQueuesPager(nil)

	for queuePager.More() {
		page, err := queuePager.NextPage(context.TODO())

		if err != nil {
			panic(err)
		}

		for _, queue := range page.Queues {
			fmt.Printf("Queue name: %s, max size in MB: %d\n", queue.QueueName, *queue.MaxSizeInMegabytes)
		}
	}
}

func ExampleAdminClient_NewListQueuesRuntimePropertiesPager() {
	queuePager := adminClient.NewListQueuesRuntimePropertiesPager(nil)

	for queuePager.More() {
		page, err := queuePager.NextPage(context.TODO())

		if err != nil {
			panic(err)
		}

		for _, queue := range page.QueueRuntimeProperties {
			fmt.Printf("Queue name: %s, active messages: %d\n", queue.QueueName, queue.ActiveMessageCount)
		}
	}
}

// NOTE: these are just here to keep the examples succinct.
var adminClient *azsb.AdminClient
