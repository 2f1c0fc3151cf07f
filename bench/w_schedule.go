package bench

import (
	"context"
	"fmt"
	"time"
)

// scheduleLead keeps every W5 due time at least this far ahead, so that no
// message falls due while the workload runs (NATS schedules have whole
// seconds).
const scheduleLead = 2 * time.Second

// W5 schedules 1,000,000 messages due within the next hour.
func W5() *Workload {
	return &Workload{
		ID:     "W5",
		Title:  "schedule 1,000,000 due within the hour",
		Method: "One producer schedules every message, one per call, at distinct instants spread evenly from 2 s to 1 h ahead (rate); then runtime.GC and the HeapAlloc delta per message, plus stacks and memory outside the Go heap (other B/msg), and their sum (total B/msg); the count the queue reports is checked. n/a where the peer cannot schedule.",
		N:      1_000_000, MinN: 200,
		Reducible: true,
		Columns: []Column{
			{Key: "schedule msgs/s", Header: "schedule msgs/s", Kind: Rate},
			{Key: "heap B/msg", Header: "heap B/msg", Kind: Bytes, LowerIsBetter: true},
			{Key: "other B/msg", Header: "other B/msg", Kind: Bytes, LowerIsBetter: true},
			{Key: "total B/msg", Header: "total B/msg", Kind: Bytes, LowerIsBetter: true},
		},
		Run: runSchedule,
	}
}

func runSchedule(ctx context.Context, env *Env, p Peer) (Metrics, error) {
	n := env.N
	q, err := p.OpenQueue(ctx, Config{Capacity: n, Scheduling: true})
	if err != nil {
		return nil, err
	}
	defer q.Close()
	s, ok := q.(Scheduler)
	if !ok {
		return nil, fmt.Errorf("%s cannot schedule: %w", p.Name(), ErrNotSupported)
	}

	before, err := measureMemory(ctx, env, q)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	first := start.Add(scheduleLead)
	span := time.Hour - scheduleLead
	for i := range n {
		at := first.Add(time.Duration(int64(span) * int64(i) / int64(n)))
		if err := s.Schedule(ctx, newBody(i), at); err != nil {
			return nil, err
		}
		if i%1024 == 0 {
			env.tick(1024)
		}
	}
	elapsed := time.Since(start)
	after, err := measureMemory(ctx, env, q)
	if err != nil {
		return nil, err
	}
	if err := checkCount(ctx, q, n); err != nil {
		return nil, err
	}
	heap, other := perMessage(before, after, n)
	return Metrics{
		"schedule msgs/s": rate(n, elapsed),
		"heap B/msg":      heap,
		"other B/msg":     other,
		"total B/msg":     heap + other,
	}, nil
}
