package bench

import (
	"context"
	"errors"
	"testing"
	"time"
)

// smokeCount is how many messages the adapter smoke tests move.
const smokeCount = 300

func openQueue(t *testing.T, p Peer, cfg Config) Queue {
	t.Helper()
	q, err := p.OpenQueue(t.Context(), cfg)
	if err != nil {
		t.Fatalf("%s: OpenQueue: %v", p.Name(), err)
	}
	t.Cleanup(func() {
		if err := q.Close(); err != nil {
			t.Errorf("%s: Close: %v", p.Name(), err)
		}
	})
	return q
}

func newReceiver(t *testing.T, open func() (Receiver, error)) Receiver {
	t.Helper()
	r, err := open()
	if err != nil {
		t.Fatalf("NewReceiver: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// receiveAll receives and completes until every one of n messages was seen
// once, failing on an unknown or repeated body.
func receiveAll(t *testing.T, r Receiver, n int) {
	t.Helper()
	seen := make([]bool, n)
	buf := make([]Delivery, 0, receiveBatch)
	for got := 0; got < n; {
		ds, err := r.Receive(t.Context(), receiveBatch, buf)
		if err != nil {
			t.Fatalf("Receive after %d of %d: %v", got, n, err)
		}
		if len(ds) == 0 || len(ds) > receiveBatch {
			t.Fatalf("Receive returned %d messages, want 1..%d", len(ds), receiveBatch)
		}
		for _, d := range ds {
			if len(d.Body) != BodySize {
				t.Fatalf("body of %d bytes, want %d", len(d.Body), BodySize)
			}
			i := bodyIndex(d.Body)
			if i < 0 || i >= n || seen[i] {
				t.Fatalf("unexpected or repeated message %d", i)
			}
			seen[i] = true
			got++
			if err := r.Complete(t.Context(), d); err != nil {
				t.Fatalf("Complete: %v", err)
			}
		}
		buf = ds
	}
}

// TestAdapterSmoke moves a few hundred messages through every peer's queue:
// send, receive, complete, with the counts the queue reports checked where
// it can count.
func TestAdapterSmoke(t *testing.T) {
	for _, p := range Peers() {
		t.Run(p.Name(), func(t *testing.T) {
			q := openQueue(t, p, Config{Capacity: smokeCount})
			r := newReceiver(t, func() (Receiver, error) { return q.NewReceiver(t.Context()) })
			for i := range smokeCount {
				if err := q.Send(t.Context(), newBody(i)); err != nil {
					t.Fatalf("Send %d: %v", i, err)
				}
			}
			if c, ok := q.(Counter); ok {
				got, err := c.Count(t.Context())
				if err != nil || got != smokeCount {
					t.Fatalf("Count = %d, %v; want %d", got, err, smokeCount)
				}
			}
			receiveAll(t, r, smokeCount)
		})
	}
}

// TestAdapterReceiveHonoursContext checks that a Receive on an empty queue
// returns the context's error when it ends.
func TestAdapterReceiveHonoursContext(t *testing.T) {
	for _, p := range Peers() {
		t.Run(p.Name(), func(t *testing.T) {
			q := openQueue(t, p, Config{})
			r := newReceiver(t, func() (Receiver, error) { return q.NewReceiver(t.Context()) })
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(20*time.Millisecond, cancel)
			_, err := r.Receive(ctx, receiveBatch, nil)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Receive on a cancelled context: %v, want context.Canceled", err)
			}
		})
	}
}

// TestAdapterSchedule schedules a few messages an hour ahead on every peer
// that can schedule and checks the count.
func TestAdapterSchedule(t *testing.T) {
	for _, p := range Peers() {
		t.Run(p.Name(), func(t *testing.T) {
			q := openQueue(t, p, Config{Scheduling: true})
			s, ok := q.(Scheduler)
			if !ok {
				t.Skipf("%s cannot schedule", p.Name())
			}
			at := time.Now().Add(time.Hour)
			for i := range 10 {
				if err := s.Schedule(t.Context(), newBody(i), at); err != nil {
					t.Fatalf("Schedule: %v", err)
				}
			}
			if c, ok := q.(Counter); ok {
				got, err := c.Count(t.Context())
				if err != nil || got != 10 {
					t.Fatalf("Count = %d, %v; want 10", got, err)
				}
			}
		})
	}
}

// TestAdapterTopicSmoke sends messages to a topic with three subscriptions
// on every peer with topics; each subscription gets every message.
func TestAdapterTopicSmoke(t *testing.T) {
	const n, subs = 100, 3
	for _, p := range Peers() {
		t.Run(p.Name(), func(t *testing.T) {
			tp, ok := p.(TopicPeer)
			if !ok {
				t.Skipf("%s has no topics", p.Name())
			}
			top, err := tp.OpenTopic(t.Context(), Config{Capacity: n}, subs)
			if errors.Is(err, ErrNotBuilt) {
				t.Skipf("%s: topics not built yet", p.Name())
			}
			if err != nil {
				t.Fatalf("OpenTopic: %v", err)
			}
			t.Cleanup(func() { top.Close() })
			rs := make([]Receiver, subs)
			for i := range rs {
				rs[i] = newReceiver(t, func() (Receiver, error) { return top.NewReceiver(t.Context(), i) })
			}
			for i := range n {
				if err := top.Send(t.Context(), newBody(i)); err != nil {
					t.Fatalf("Send: %v", err)
				}
			}
			for _, r := range rs {
				receiveAll(t, r, n)
			}
		})
	}
}

// TestBtreeLockExpiry checks the btree baseline's peek-lock: an unsettled
// message comes back when its lock ends, and the old lock token is then
// lost.
func TestBtreeLockExpiry(t *testing.T) {
	q := newBtreeQueue()
	q.lockDuration = 5 * time.Millisecond
	defer q.Close()
	r, _ := q.NewReceiver(t.Context())
	defer r.Close()
	if err := q.Send(t.Context(), newBody(7)); err != nil {
		t.Fatal(err)
	}
	first, err := r.Receive(t.Context(), 1, nil)
	if err != nil || len(first) != 1 {
		t.Fatalf("Receive = %v, %v", first, err)
	}
	again, err := r.Receive(t.Context(), 1, nil) // waits for the lock to end
	if err != nil || len(again) != 1 || bodyIndex(again[0].Body) != 7 {
		t.Fatalf("Receive after expiry = %v, %v", again, err)
	}
	if err := r.Complete(t.Context(), first[0]); err == nil {
		t.Fatal("Complete with the expired lock token succeeded")
	}
	if err := r.Complete(t.Context(), again[0]); err != nil {
		t.Fatalf("Complete with the live token: %v", err)
	}
}

// TestBtreeScheduleActivates checks that a scheduled message becomes
// receivable at its time, waking a blocked receiver.
func TestBtreeScheduleActivates(t *testing.T) {
	q := newBtreeQueue()
	defer q.Close()
	r, _ := q.NewReceiver(t.Context())
	defer r.Close()
	if err := q.Schedule(t.Context(), newBody(3), time.Now().Add(5*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	ds, err := r.Receive(t.Context(), receiveBatch, nil)
	if err != nil || len(ds) != 1 || bodyIndex(ds[0].Body) != 3 {
		t.Fatalf("Receive = %v, %v", ds, err)
	}
}
