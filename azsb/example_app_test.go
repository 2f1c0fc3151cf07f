package azsb_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/azsb"
)

// An application's own small interfaces over the SDK's types, as many Go
// services declare them: the service below is written only against
// these, so the real azservicebus client serves it in production and azsb
// in tests.

// OrderSender is what the order service needs to send.
type OrderSender interface {
	SendMessage(ctx context.Context, message *azservicebus.Message, options *azservicebus.SendMessageOptions) error
}

// OrderReceiver is what the order service needs to receive and settle.
type OrderReceiver interface {
	ReceiveMessages(ctx context.Context, maxMessages int, options *azservicebus.ReceiveMessagesOptions) ([]*azservicebus.ReceivedMessage, error)
	CompleteMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.CompleteMessageOptions) error
	DeadLetterMessage(ctx context.Context, message *azservicebus.ReceivedMessage, options *azservicebus.DeadLetterOptions) error
}

// Order is the application's message.
type Order struct {
	ID  string `json:"id"`
	Qty int    `json:"qty"`
}

// OrderService places orders and processes them.
type OrderService struct {
	Out OrderSender
	In  OrderReceiver
}

// Place sends an order.
func (s *OrderService) Place(ctx context.Context, o Order) error {
	body, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return s.Out.SendMessage(ctx, &azservicebus.Message{MessageID: &o.ID, Body: body, ContentType: to.Ptr("application/json")}, nil)
}

// ProcessOne takes one order: a valid one is completed, an invalid one
// dead-lettered with the reason.
func (s *OrderService) ProcessOne(ctx context.Context) (Order, error) {
	msgs, err := s.In.ReceiveMessages(ctx, 1, nil)
	if err != nil {
		return Order{}, err
	}
	var o Order
	if err := json.Unmarshal(msgs[0].Body, &o); err != nil || o.Qty <= 0 {
		return o, s.In.DeadLetterMessage(ctx, msgs[0], &azservicebus.DeadLetterOptions{Reason: to.Ptr("InvalidOrder")})
	}
	return o, s.In.CompleteMessage(ctx, msgs[0], nil)
}

// orderClient is what the constructor needs from a client: the SDK's and
// azsb's both have it, with their own sender and receiver types.
type orderClient[S OrderSender, R OrderReceiver] interface {
	NewSender(queueOrTopic string, options *azservicebus.NewSenderOptions) (S, error)
	NewReceiverForQueue(queueName string, options *azservicebus.ReceiverOptions) (R, error)
}

// newOrderService wires the service to a client: the same code for both.
func newOrderService[S OrderSender, R OrderReceiver](c orderClient[S, R]) (*OrderService, error) {
	out, err := c.NewSender("orders", nil)
	if err != nil {
		return nil, err
	}
	in, err := c.NewReceiverForQueue("orders", nil)
	if err != nil {
		return nil, err
	}
	return &OrderService{Out: out, In: in}, nil
}

// NewProductionOrderService runs against Azure Service Bus.
func NewProductionOrderService(connectionString string) (*OrderService, error) {
	client, err := azservicebus.NewClientFromConnectionString(connectionString, nil)
	if err != nil {
		return nil, err
	}
	return newOrderService(client)
}

// NewTestOrderService runs against an in-process minibus namespace: only
// the constructor differs.
func NewTestOrderService(ns *minibus.Namespace) (*OrderService, error) {
	return newOrderService(azsb.NewClient(ns))
}

func Example_applicationInterface() {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	defer ns.Close()
	if _, err := ns.CreateQueue("orders", nil); err != nil {
		panic(err)
	}

	svc, err := NewTestOrderService(ns)
	if err != nil {
		panic(err)
	}
	_ = svc.Place(ctx, Order{ID: "o-1", Qty: 2})
	_ = svc.Place(ctx, Order{ID: "o-2", Qty: 0})
	for range 2 {
		o, err := svc.ProcessOne(ctx)
		fmt.Println(o.ID, err)
	}

	q, _ := ns.Queue("orders")
	fmt.Println("dead-lettered:", q.RuntimeProperties().DeadLetterMessageCount)
	// Output:
	// o-1 <nil>
	// o-2 <nil>
	// dead-lettered: 1
}
