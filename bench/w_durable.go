package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// durableBatch is the batch size of the batched durable workloads (D4–D6).
const durableBatch = 32

// durableSend is the shape of one send workload of the durable set.
type durableSend struct {
	id               string
	producers, batch int
}

// durableSends are D1–D6: 1, 4 and 64 producers, sending one message a
// call, then 32.
var durableSends = []durableSend{
	{"D1", 1, 1}, {"D2", 4, 1}, {"D3", 64, 1},
	{"D4", 1, durableBatch}, {"D5", 4, durableBatch}, {"D6", 64, durableBatch},
}

// durableWarmUp is how much of a durable send run comes before the
// measured window, as a fraction of the window (segment and block files
// created, SQLite's WAL grown): a quarter.
func durableWarmUp(window time.Duration) time.Duration { return window / 4 }

// DurableWorkloads returns the durable set in order: D1–D6 send to a store
// on disk, D7 opens one.
func DurableWorkloads() []*Workload {
	ws := make([]*Workload, 0, len(durableSends)+1)
	for _, d := range durableSends {
		ws = append(ws, durableSendWorkload(d))
	}
	return append(ws, D7())
}

// durableSendWorkload is one of D1–D6: producers goroutines send 1 KiB
// messages to a fresh durable queue, each waiting for every
// acknowledgement before its next call, for a fixed time.
func durableSendWorkload(d durableSend) *Workload {
	how, peers := "one message a call (Send)", DurablePeers()
	if d.batch > 1 {
		how, peers = fmt.Sprintf("%d messages a call (SendBatch)", d.batch), DurableBatchPeers()
	}
	return &Workload{
		ID:    d.id,
		Title: fmt.Sprintf("%d producer%s, %s", d.producers, plural(d.producers), sendShape(d.batch)),
		Method: fmt.Sprintf("%d producer%s send %s to one fresh queue on disk, each waiting for the acknowledgement before its next call, for a quarter of the run's time unmeasured and then for the measured time; the rate is the messages acknowledged in the measured window over its length. After the run the queue must hold every acknowledged message.",
			d.producers, plural(d.producers), how),
		Duration:    2 * time.Second,
		MinDuration: 100 * time.Millisecond,
		Peers:       peers,
		Columns:     []Column{{Key: "msgs/s", Header: "msgs/s", Kind: Rate}},
		Run: func(ctx context.Context, env *Env, p Peer) (Metrics, error) {
			return runDurableSend(ctx, env, p, d.producers, d.batch)
		},
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// sendShape names a batch size in titles: "single sends", "batches of 32".
func sendShape(batch int) string {
	if batch == 1 {
		return "single sends"
	}
	return fmt.Sprintf("batches of %d", batch)
}

// runDurableSend runs producers goroutines that send batch messages a call
// until the measured window, which starts after a quarter of env.Duration
// and lasts env.Duration, has passed. It then checks that the queue holds
// every message acknowledged.
func runDurableSend(ctx context.Context, env *Env, p Peer, producers, batch int) (m Metrics, err error) {
	q, err := p.OpenQueue(ctx, Config{Dir: env.Dir})
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := q.Close(); cerr != nil && err == nil {
			m, err = nil, cerr
		}
	}()
	bs, ok := q.(BatchSender)
	if batch > 1 && !ok {
		return nil, fmt.Errorf("%s cannot send batches: %w", p.Name(), ErrNotSupported)
	}

	var next, acked atomic.Int64
	var stop atomic.Bool
	g, gctx := newGroup(ctx)
	for range producers {
		g.Go(func() error {
			bodies := make([][]byte, batch)
			for !stop.Load() {
				first := int(next.Add(int64(batch))) - batch
				for i := range bodies {
					bodies[i] = newBody(first + i)
				}
				var err error
				if batch == 1 {
					err = q.Send(gctx, bodies[0])
				} else {
					err = bs.SendBatch(gctx, bodies)
				}
				if err != nil {
					return err
				}
				acked.Add(int64(batch))
				env.tick(batch)
			}
			return nil
		})
	}
	var c0, c1 int64
	var t0, t1 time.Time
	g.Go(func() error {
		defer stop.Store(true)
		if err := sleepCtx(gctx, durableWarmUp(env.Duration)); err != nil {
			return err
		}
		c0, t0 = acked.Load(), time.Now()
		if err := sleepCtx(gctx, env.Duration); err != nil {
			return err
		}
		c1, t1 = acked.Load(), time.Now()
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := checkCount(ctx, q, int(acked.Load())); err != nil {
		return nil, err
	}
	return Metrics{"msgs/s": rate(int(c1-c0), t1.Sub(t0)), "sent": float64(acked.Load())}, nil
}

// sleepCtx waits for d or until ctx ends, and then returns its error.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
