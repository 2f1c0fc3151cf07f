package minibustest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
)

// A test's namespace: on a mock clock at the Epoch, closed when the test
// ends.
func ExampleNew() {
	asTest(func(t testing.TB) {
		env := minibustest.New(t)
		q, err := env.Namespace().CreateQueue("orders", nil)
		if err != nil {
			t.Fatalf("%v", err)
		}
		fmt.Println(q.Name(), "created at", q.RuntimeProperties().CreatedAt)
	})
	// Output: orders created at 2026-01-01 00:00:00 +0000 UTC
}

// NewWithClock puts a clock of the test's own between the namespace and
// the mock, here one that counts the timers the namespace creates, while
// Advance still moves the mock. No receive waits, so the namespace armed
// no timer for the scheduled message: it activates when a call (Advance's
// WaitIdle, here) finds its instant passed (SEMANTICS T3, T4).
func ExampleNewWithClock() {
	asTest(func(t testing.TB) {
		ctx := context.Background()
		var timers atomic.Int64
		env := minibustest.NewWithClock(t, func(m *clock.Mock) clock.Clock {
			return &timerCounter{Clock: m, n: &timers}
		})
		q, _ := env.Namespace().CreateQueue("reminders", nil)
		_, _ = q.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte("call back")}}, env.Namespace().Now().Add(time.Minute), nil)
		env.Advance(time.Minute)
		fmt.Println("now:", env.Namespace().Now())
		fmt.Println("active:", q.RuntimeProperties().ActiveMessageCount, "timers:", timers.Load())
	})
	// Output:
	// now: 2026-01-01 00:01:00 +0000 UTC
	// active: 1 timers: 0
}

// timerCounter counts the timers created through it.
type timerCounter struct {
	clock.Clock
	n *atomic.Int64
}

func (c *timerCounter) AfterFunc(d time.Duration, f func()) *clock.Timer {
	c.n.Add(1)
	return c.Clock.AfterFunc(d, f)
}

func (c *timerCounter) Timer(d time.Duration) *clock.Timer {
	c.n.Add(1)
	return c.Clock.Timer(d)
}

// The Env's namespace is an ordinary one: create entities, send, receive.
func ExampleEnv_Namespace() {
	asTest(func(t testing.TB) {
		ctx := context.Background()
		ns := minibustest.New(t).Namespace()
		q, _ := ns.CreateQueue("orders", nil)
		_ = q.SendMessage(ctx, &minibus.Message{Body: []byte("order 1")}, nil)
		fmt.Println(ns.Queues(), q.RuntimeProperties().ActiveMessageCount)
	})
	// Output: [orders] 1
}

// The code under test takes its time from the namespace (or the mock),
// never from time.Now: the mock starts at the Epoch, behind the wall
// clock, so a schedule for time.Now().Add(time.Hour) is months away on it.
func ExampleEnv_Clock() {
	asTest(func(t testing.TB) {
		ctx := context.Background()
		env := minibustest.New(t)
		q, _ := env.Namespace().CreateQueue("reminders", nil)
		in := func(d time.Duration) time.Time { return env.Namespace().Now().Add(d) }
		_, _ = q.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte("right")}}, in(time.Hour), nil)
		_, _ = q.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte("trap")}}, time.Now().Add(time.Hour), nil)
		env.Advance(time.Hour)
		p := q.RuntimeProperties()
		fmt.Println("now:", env.Clock().Now())
		fmt.Println("active:", p.ActiveMessageCount, "still scheduled:", p.ScheduledMessageCount)
	})
	// Output:
	// now: 2026-01-01 01:00:00 +0000 UTC
	// active: 1 still scheduled: 1
}

// Advance moves the clock, then waits until idle: the scheduled message is
// handled when it returns.
func ExampleEnv_Advance() {
	asTest(func(t testing.TB) {
		ctx := context.Background()
		env := minibustest.New(t)
		q, _ := env.Namespace().CreateQueue("reminders", nil)
		p, _ := q.NewProcessor(func(_ context.Context, m *minibus.ReceivedMessage) error {
			fmt.Println("handled", string(m.Body), "at", m.EnqueuedTime.Format(time.TimeOnly))
			return nil
		}, nil)
		env.Start(p)
		at := env.Namespace().Now().Add(30 * time.Minute)
		_, _ = q.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte("call back")}}, at, nil)
		env.Advance(29 * time.Minute)
		fmt.Println("after 29m")
		env.Advance(time.Minute)
		fmt.Println("after 30m")
	})
	// Output:
	// after 29m
	// handled call back at 00:30:00
	// after 30m
}

// WaitIdle returns once the processor has handled and settled what was
// sent: no sleep, no polling.
func ExampleEnv_WaitIdle() {
	asTest(func(t testing.TB) {
		ctx := context.Background()
		env := minibustest.New(t)
		q, _ := env.Namespace().CreateQueue("orders", nil)
		p, _ := q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error { return nil }, nil)
		env.Start(p)
		_ = q.SendMessages(ctx, []*minibus.Message{{}, {}, {}}, nil)
		env.WaitIdle()
		fmt.Println("completed:", len(env.EventsOf(minibus.EventCompleted)), "left:", q.RuntimeProperties().TotalMessageCount)
	})
	// Output: completed: 3 left: 0
}

// WaitIdle also sees a hand-written receive loop while it waits in
// ReceiveMessages: it returns once the loop took the message (SEMANTICS
// P2). What the loop then does is its own (P3): wait for that by its event.
func ExampleEnv_WaitIdle_receiveLoop() {
	asTest(func(t testing.TB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		env := minibustest.New(t)
		q, _ := env.Namespace().CreateQueue("orders", nil)
		r, _ := q.NewReceiver(nil)
		go func() { // the loop every azservicebus user writes
			for {
				msgs, err := r.ReceiveMessages(ctx, 10, nil)
				if err != nil {
					return
				}
				for _, m := range msgs {
					_ = r.CompleteMessage(context.Background(), m, nil)
				}
			}
		}()
		_ = q.SendMessage(ctx, &minibus.Message{MessageID: "order-1"}, nil)
		ev := env.WaitFor(func(ev minibus.Event) bool {
			return ev.Kind == minibus.EventCompleted && ev.MessageID == "order-1"
		})
		fmt.Println(ev.Kind, ev.MessageID)
		env.WaitIdle()
		fmt.Println("left:", q.RuntimeProperties().TotalMessageCount)
	})
	// Output:
	// Completed order-1
	// left: 0
}

// Start runs a processor until the test ends (or stop is called).
func ExampleEnv_Start() {
	asTest(func(t testing.TB) {
		ctx := context.Background()
		env := minibustest.New(t)
		q, _ := env.Namespace().CreateQueue("orders", nil)
		p, _ := q.NewProcessor(func(_ context.Context, m *minibus.ReceivedMessage) error {
			fmt.Println("handled", string(m.Body))
			return nil
		}, nil)
		stop := env.Start(p)
		_ = q.SendMessage(ctx, &minibus.Message{Body: []byte("order 1")}, nil)
		env.WaitIdle()
		fmt.Println("Run returned:", stop())
	})
	// Output:
	// handled order 1
	// Run returned: <nil>
}
