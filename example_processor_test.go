package minibus_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// A processor calls the handler for each message: nil completes it, a
// *DeadLetterError dead-letters it, any other error retries it after
// RetryDelay, on the namespace clock. WaitIdle waits for the running
// handlers, without a sleep.
func ExampleQueue_NewProcessor() {
	ctx := context.Background()
	mock := clock.NewMock()
	start := mock.Now()
	ns := minibus.NewNamespace(minibus.WithClock(mock))
	defer ns.Close()
	q, _ := ns.CreateQueue("orders", nil)

	called := make(chan struct{}, 10)
	handler := func(ctx context.Context, m *minibus.ReceivedMessage) error {
		defer func() { called <- struct{}{} }()
		fmt.Printf("%s: delivery %d at +%v\n", m.Body, m.DeliveryCount, mock.Now().Sub(start))
		switch {
		case string(m.Body) == "poison":
			return &minibus.DeadLetterError{Reason: "Unreadable"}
		case string(m.Body) == "flaky" && m.DeliveryCount == 1:
			return errors.New("the stock service is down")
		}
		return nil
	}
	p, _ := q.NewProcessor(handler, &minibus.ProcessorOptions{
		MaxConcurrentCalls: 1,
		RetryDelay:         func(deliveryCount uint32) time.Duration { return time.Duration(deliveryCount) * time.Minute },
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	<-p.Started()

	_ = q.SendMessages(ctx, []*minibus.Message{
		{Body: []byte("apple")}, {Body: []byte("flaky")}, {Body: []byte("poison")},
	}, nil)
	for range 3 {
		<-called
	}
	mock.Add(time.Minute) // flaky's retry delay
	<-called
	_ = ns.WaitIdle(ctx) // the last handler has returned and its message is settled
	props := q.RuntimeProperties()
	fmt.Println("active:", props.ActiveMessageCount, "dead-lettered:", props.DeadLetterMessageCount)

	stop()
	fmt.Println("Run:", <-done)
	// Output:
	// apple: delivery 1 at +0s
	// flaky: delivery 1 at +0s
	// poison: delivery 1 at +0s
	// flaky: delivery 2 at +1m0s
	// active: 0 dead-lettered: 1
	// Run: <nil>
}

// A session processor handles each session's messages in order, one at a
// time; the handler gets its session, and its state, from the context.
func ExampleQueue_NewSessionProcessor() {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	defer ns.Close()
	q, _ := ns.CreateQueue("carts", &minibus.QueueProperties{RequiresSession: true})

	called := make(chan struct{}, 10)
	p, _ := q.NewSessionProcessor(func(ctx context.Context, m *minibus.ReceivedMessage) error {
		defer func() { called <- struct{}{} }()
		s, _ := minibus.SessionFromContext(ctx)
		cart, _ := s.GetSessionState(ctx, nil)
		cart = append(cart, m.Body...)
		fmt.Printf("cart %s: %s\n", s.SessionID(), cart)
		return s.SetSessionState(ctx, cart, nil)
	}, &minibus.SessionProcessorOptions{MaxConcurrentSessions: 1})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	<-p.Started()

	_ = q.SendMessages(ctx, []*minibus.Message{
		{SessionID: "alice", Body: []byte("A")},
		{SessionID: "bob", Body: []byte("X")},
		{SessionID: "alice", Body: []byte("B")},
	}, nil)
	for range 3 {
		<-called
	}
	_ = ns.WaitIdle(ctx)
	stop()
	fmt.Println("Run:", <-done)
	// Output:
	// cart alice: A
	// cart alice: AB
	// cart bob: X
	// Run: <nil>
}
