package bench

import (
	"context"
	"fmt"
	"time"
)

// ScalingDepth is queue depth: send and receive+complete at a queue
// holding 1k to 10M messages.
func ScalingDepth() *Scaling {
	return &Scaling{
		ID:       "depth",
		Title:    "queue depth: send and receive at 1k to 10M messages held",
		Variable: "messages held",
		Method: "One queue is filled to the depth with 32-byte bodies (fill msgs/s, with the collector on as usual; heap B/msg is the HeapAlloc delta per held message after runtime.GC). " +
			"Then, in the measured phase, the producer sends a batch of 32 and the consumer receives (peek-lock, up to 32 a call) and completes those 32, over and over, so that the depth stays between n and n+32, until m messages were sent and received; " +
			"each send is timed apart from each receive+complete batch. The consumer checks that every message comes in FIFO order: the measured messages are received from the deep end of the queue. " +
			"ns/op is the mean time of one send, or of one message's share of a receive plus its complete; / log2 n divides it by log2 of the depth: flat means O(log n). The measured phase runs after runtime.GC with the collector off (see below).",
		Points: []int{1_000, 10_000, 100_000, 1_000_000, 10_000_000},
		Quick:  []int{1_000, 10_000, 100_000},
		Ops:    300_000, MinOps: 64,
		Columns: []Column{
			{Key: "send/s", Header: "send msgs/s", Kind: Rate},
			{Key: "send ns", Header: "send ns/op", Kind: Micros, LowerIsBetter: true},
			{Key: "send ns/log2n", Header: "send ns / log2 n", Kind: Micros, LowerIsBetter: true},
			{Key: "recv/s", Header: "recv+complete msgs/s", Kind: Rate},
			{Key: "recv ns", Header: "recv+complete ns/msg", Kind: Micros, LowerIsBetter: true},
			{Key: "recv ns/log2n", Header: "recv+complete ns / log2 n", Kind: Micros, LowerIsBetter: true},
			{Key: "heap B/msg", Header: "heap B/msg", Kind: Bytes, LowerIsBetter: true},
			{Key: "fill/s", Header: "fill msgs/s", Kind: Rate},
		},
		Panels: []Panel{
			{Title: "Cost per operation", YLabel: "ns per message", Lines: []Line{
				{Peer: "minibus", Key: "send ns", Label: "minibus send"},
				{Peer: "minibus", Key: "recv ns", Label: "minibus receive+complete"},
				{Peer: "btree", Key: "send ns", Label: "btree send"},
				{Peer: "btree", Key: "recv ns", Label: "btree receive+complete"},
			}},
			{Title: "Rate", YLabel: "messages/s", LogY: true, Lines: []Line{
				{Peer: "minibus", Key: "send/s", Label: "minibus send"},
				{Peer: "minibus", Key: "recv/s", Label: "minibus receive+complete"},
				{Peer: "btree", Key: "send/s", Label: "btree send"},
				{Peer: "btree", Key: "recv/s", Label: "btree receive+complete"},
			}},
		},
		Growth: []Growth{
			{Peer: "minibus", Key: "send ns", Label: "minibus send ns/op", Expect: ExpectLog},
			{Peer: "minibus", Key: "recv ns", Label: "minibus receive+complete ns/msg", Expect: ExpectLog},
			{Peer: "btree", Key: "send ns", Label: "btree send ns/op", Expect: ExpectLog},
			{Peer: "btree", Key: "recv ns", Label: "btree receive+complete ns/msg", Expect: ExpectLog},
			{Peer: "minibus", Key: "heap B/msg", Label: "minibus heap B/msg", Expect: ExpectFlat},
		},
		Run: runDepth,
	}
}

func runDepth(ctx context.Context, env *Env, p Peer, depth int) (Metrics, error) {
	ops := env.N
	q, err := p.OpenQueue(ctx, Config{Capacity: depth + ops})
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
	start := time.Now()
	for i := range depth {
		if err := q.Send(ctx, newSmallBody(i)); err != nil {
			return nil, err
		}
		if i%1024 == 0 {
			env.tick(1024)
		}
	}
	fill := time.Since(start)
	after, err := measureMemory(ctx, env, q)
	if err != nil {
		return nil, err
	}
	if err := checkCount(ctx, q, depth); err != nil {
		return nil, err
	}
	heap, _ := perMessage(before, after, depth)

	d := &depthRun{env: env, q: q, r: r, buf: make([]Delivery, 0, receiveBatch), sent: depth}
	if err := measured(env, func() error { return d.run(ctx, ops) }); err != nil {
		return nil, err
	}
	if err := checkCount(ctx, q, depth); err != nil {
		return nil, err
	}
	return Metrics{
		"send/s":        rate(ops, d.sendTime),
		"send ns":       perOp(d.sendTime, ops),
		"send ns/log2n": perOp(d.sendTime, ops) / log2(depth),
		"recv/s":        rate(ops, d.recvTime),
		"recv ns":       perOp(d.recvTime, ops),
		"recv ns/log2n": perOp(d.recvTime, ops) / log2(depth),
		"heap B/msg":    heap,
		"fill/s":        rate(depth, fill),
		"received":      float64(d.received),
	}, nil
}

// depthRun is the measured phase of one depth point.
type depthRun struct {
	env                *Env
	q                  Queue
	r                  Receiver
	buf                []Delivery
	sent, received     int // bodies sent so far (the next index), received
	sendTime, recvTime time.Duration
}

// run sends and receives ops messages in batches of 32, timing each.
func (d *depthRun) run(ctx context.Context, ops int) error {
	for done := 0; done < ops; {
		k := min(receiveBatch, ops-done)
		t0 := time.Now()
		for range k {
			if err := d.q.Send(ctx, newSmallBody(d.sent)); err != nil {
				return err
			}
			d.sent++
		}
		t1 := time.Now()
		if err := d.receive(ctx, k); err != nil {
			return err
		}
		d.recvTime += time.Since(t1)
		d.sendTime += t1.Sub(t0)
		done += k
		d.env.tick(k)
	}
	return nil
}

// receive receives and completes k messages, checking that they come in
// the order they were sent.
func (d *depthRun) receive(ctx context.Context, k int) error {
	for got := 0; got < k; {
		ds, err := d.r.Receive(ctx, k-got, d.buf)
		if err != nil {
			return err
		}
		for _, m := range ds {
			if i := bodyIndex(m.Body); i != d.received {
				return fmt.Errorf("bench: received message %d, want %d (FIFO)", i, d.received)
			}
			d.received++
			if err := d.r.Complete(ctx, m); err != nil {
				return err
			}
		}
		got += len(ds)
		d.buf = ds
	}
	return nil
}
