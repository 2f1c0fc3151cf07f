package bench

import (
	"context"
	"time"
)

// W3 enqueues 1,000,000 messages with nobody receiving, measures the memory
// they take, then drains them with one consumer.
func W3() *Workload {
	return &Workload{
		ID:     "W3",
		Title:  "enqueue 1,000,000, then drain",
		Method: "One producer sends every message with nobody receiving (enqueue rate); then runtime.GC and the HeapAlloc delta from before the first send, per message (heap B/msg), plus the growth of goroutine stacks and of memory outside the Go heap (SQLite's pages), per message (other B/msg), and their sum (total B/msg); the count the queue reports is checked; then one consumer receives batches of up to 32 and completes each until the queue is empty (drain rate).",
		N:      1_000_000, MinN: 200,
		Reducible: true,
		Columns: []Column{
			{Key: "enqueue msgs/s", Header: "enqueue msgs/s", Kind: Rate},
			{Key: "heap B/msg", Header: "heap B/msg", Kind: Bytes, LowerIsBetter: true},
			{Key: "other B/msg", Header: "other B/msg", Kind: Bytes, LowerIsBetter: true},
			{Key: "total B/msg", Header: "total B/msg", Kind: Bytes, LowerIsBetter: true},
			{Key: "drain msgs/s", Header: "drain msgs/s", Kind: Rate},
		},
		Run: runBacklog,
	}
}

func runBacklog(ctx context.Context, env *Env, p Peer) (Metrics, error) {
	n := env.N
	q, err := p.OpenQueue(ctx, Config{Capacity: n})
	if err != nil {
		return nil, err
	}
	defer q.Close()
	r, err := q.NewReceiver(ctx)
	if err != nil {
		return nil, err
	}
	defer r.Close()

	before, err := measureMemory(ctx, env, q)
	if err != nil {
		return nil, err
	}
	env.phase("enqueue")
	start := time.Now()
	for i := range n {
		if err := q.Send(ctx, newBody(i)); err != nil {
			return nil, err
		}
		if i%1024 == 0 {
			env.tick(1024)
		}
	}
	enqueue := time.Since(start)
	env.phase("")
	after, err := measureMemory(ctx, env, q)
	if err != nil {
		return nil, err
	}
	if err := checkCount(ctx, q, n); err != nil {
		return nil, err
	}
	heap, other := perMessage(before, after, n)

	t := newTracker(n)
	env.phase("drain")
	start = time.Now()
	if err := consume(ctx, env, r, t, receiveBatch); err != nil {
		return nil, err
	}
	drain := time.Since(start)
	env.phase("")
	return Metrics{
		"enqueue msgs/s": rate(n, enqueue),
		"heap B/msg":     heap,
		"other B/msg":    other,
		"total B/msg":    heap + other,
		"drain msgs/s":   rate(n, drain),
		"dups":           float64(t.dups.Load()),
	}, nil
}
