package minibus_test

import (
	"context"
	"fmt"

	"github.com/minibus-go/minibus"
)

// A session-enabled queue hands all messages of one session to one
// receiver at a time, in order, with state kept per session.
func ExampleQueue_AcceptNextSession() {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	defer ns.Close()
	q, _ := ns.CreateQueue("orders", &minibus.QueueProperties{RequiresSession: true})

	_ = q.SendMessages(ctx, []*minibus.Message{
		{SessionID: "bob", Body: []byte("bob: created")},
		{SessionID: "ada", Body: []byte("ada: created")},
		{SessionID: "bob", Body: []byte("bob: paid")},
	}, nil)

	// The session whose first message is oldest comes first.
	s, _ := q.AcceptNextSession(ctx, nil)
	msgs, _ := s.ReceiveMessages(ctx, 10, nil)
	for _, m := range msgs {
		fmt.Println(string(m.Body))
		_ = s.CompleteMessage(ctx, m, nil)
	}
	_ = s.SetSessionState(ctx, []byte("paid"), nil)
	_ = s.Close(ctx)

	s, _ = q.AcceptSession(ctx, "bob", nil)
	state, _ := s.GetSessionState(ctx, nil)
	fmt.Println("bob's state:", string(state))
	_ = s.Close(ctx)
	// Output:
	// bob: created
	// bob: paid
	// bob's state: paid
}
