package bench

import (
	"context"
	"time"
)

// receiveBatch is the most messages a receive asks for, in every workload.
const receiveBatch = 32

// W1 is one producer and one consumer: send → receive (peek-lock, batches
// of up to 32) → complete, 200,000 messages.
func W1() *Workload {
	return &Workload{
		ID:     "W1",
		Title:  "one producer, one consumer",
		Method: "One producer sends every message (settled) while one consumer receives batches of up to 32 (peek-lock) and completes each; the rate is messages over the time from the first send to the last completion. Every message is counted once by its index.",
		N:      200_000, MinN: 200,
		Reducible: true,
		Columns:   []Column{{Key: "msgs/s", Header: "msgs/s", Kind: Rate}},
		Run: func(ctx context.Context, env *Env, p Peer) (Metrics, error) {
			return runThroughput(ctx, env, p, 1, 1)
		},
	}
}

// W2 is W1 with four producers and four consumers on one queue.
func W2() *Workload {
	return &Workload{
		ID:     "W2",
		Title:  "four producers, four consumers",
		Method: "As W1 with four producers (each sending a quarter of the messages) and four consumers, each with its own receiver of the one queue.",
		N:      200_000, MinN: 200,
		Reducible: true,
		Columns:   []Column{{Key: "msgs/s", Header: "msgs/s", Kind: Rate}},
		Run: func(ctx context.Context, env *Env, p Peer) (Metrics, error) {
			return runThroughput(ctx, env, p, 4, 4)
		},
	}
}

// runThroughput runs producers and consumers concurrently on one fresh
// queue until every message has been completed once.
func runThroughput(ctx context.Context, env *Env, p Peer, producers, consumers int) (Metrics, error) {
	n := env.N
	q, err := p.OpenQueue(ctx, Config{Capacity: n})
	if err != nil {
		return nil, err
	}
	defer q.Close()
	receivers, err := openReceivers(ctx, consumers, func(int) (Receiver, error) { return q.NewReceiver(ctx) })
	if err != nil {
		return nil, err
	}
	defer closeAll(receivers)

	t := newTracker(n)
	g, gctx := newGroup(ctx)
	env.phase("run")
	start := time.Now()
	for w := range producers {
		g.Go(func() error {
			for i := w; i < n; i += producers {
				if err := q.Send(gctx, newBody(i)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for _, r := range receivers {
		g.Go(func() error { return consume(gctx, env, r, t, receiveBatch) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	env.phase("")
	return Metrics{"msgs/s": rate(n, elapsed), "dups": float64(t.dups.Load())}, nil
}

// openReceivers makes k receivers with open, closing them all on failure.
func openReceivers(ctx context.Context, k int, open func(i int) (Receiver, error)) ([]Receiver, error) {
	rs := make([]Receiver, 0, k)
	for i := range k {
		r, err := open(i)
		if err != nil {
			closeAll(rs)
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func closeAll(rs []Receiver) {
	for _, r := range rs {
		r.Close()
	}
}
