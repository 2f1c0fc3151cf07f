// Command sessions runs an ordered per-customer workflow on a
// session-enabled queue: every customer's events are one session, handled
// strictly in order by whichever worker accepts it, with the workflow's
// progress kept in the session's state.
//
//	go run ./examples/sessions
package main

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/minibus-go/minibus"
)

// steps is the workflow every customer goes through, in this order.
var steps = []string{"created", "paid", "packed", "shipped"}

func main() {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	defer ns.Close()

	q, err := ns.CreateQueue("orders", &minibus.QueueProperties{RequiresSession: true})
	if err != nil {
		log.Fatal(err)
	}

	// The events of three customers arrive interleaved.
	customers := []string{"ada", "bob", "cyd"}
	for _, step := range steps {
		for _, c := range customers {
			msg := &minibus.Message{SessionID: c, Subject: step, Body: []byte(c + " " + step)}
			if err := q.SendMessage(ctx, msg, nil); err != nil {
				log.Fatal(err)
			}
		}
	}

	// Two workers take whole sessions: each customer's events reach one
	// worker at a time, in the order they were sent.
	var (
		mu     sync.Mutex
		report []string
		left   atomic.Int32
		wg     sync.WaitGroup
	)
	left.Store(int32(len(customers)))
	for range 2 {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				s, err := q.AcceptNextSession(ctx, nil)
				if err != nil {
					log.Fatal(err)
				}
				line, err := handle(ctx, s)
				if err != nil {
					log.Fatal(err)
				}
				mu.Lock()
				report = append(report, line)
				mu.Unlock()
				_ = s.Close(ctx)
			}
		})
	}
	wg.Wait()

	slices.Sort(report)
	for _, line := range report {
		fmt.Println(line)
	}
	fmt.Println("messages left:", q.RuntimeProperties().TotalMessageCount)
}

// handle processes one customer's session: each event must follow the step
// recorded in the session state, which it then advances.
func handle(ctx context.Context, s *minibus.SessionReceiver) (string, error) {
	var done []string
	for len(done) < len(steps) {
		msgs, err := s.ReceiveMessages(ctx, 10, nil)
		if err != nil {
			return "", err
		}
		for _, m := range msgs {
			state, err := s.GetSessionState(ctx, nil)
			if err != nil {
				return "", err
			}
			if want := steps[len(state)]; m.Subject != want {
				return "", fmt.Errorf("%s: got %q, expected %q", s.SessionID(), m.Subject, want)
			}
			// The state records one byte per step done.
			if err := s.SetSessionState(ctx, append(state, '.'), nil); err != nil {
				return "", err
			}
			if err := s.CompleteMessage(ctx, m, nil); err != nil {
				return "", err
			}
			done = append(done, m.Subject)
		}
	}
	return s.SessionID() + ": " + strings.Join(done, " -> "), nil
}
