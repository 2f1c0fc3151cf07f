package bench

import (
	"context"
	"runtime"
	"slices"
	"time"
)

// latencyInterval is W4's pace: one message per 100 µs.
const latencyInterval = 100 * time.Microsecond

// W4 measures the latency from send to receive at one message per 100 µs
// with a consumer already waiting.
func W4() *Workload {
	return &Workload{
		ID:     "W4",
		Title:  "latency at one message per 100 µs",
		Method: "A consumer waits in Receive (batches of up to 32, completing each); the producer sends one message per 100 µs, pacing by spinning on the clock with runtime.Gosched (time.Sleep overshoots 100 µs by about 1 ms here) and never catching up in bursts. Latency is from just before Send to just after Receive returned the message. The first tenth of the messages warms up and is not counted. sent msgs/s is the pace the producer achieved: below 10k, Send itself took longer than 100 µs and the latency includes a growing backlog.",
		N:      5_000, MinN: 50,
		Columns: []Column{
			{Key: "p50 µs", Header: "p50 µs", Kind: Micros, LowerIsBetter: true},
			{Key: "p99 µs", Header: "p99 µs", Kind: Micros, LowerIsBetter: true},
			{Key: "max µs", Header: "max µs", Kind: Micros, LowerIsBetter: true},
			{Key: "sent/s", Header: "sent msgs/s", Kind: Rate},
		},
		Run: runLatency,
	}
}

func runLatency(ctx context.Context, env *Env, p Peer) (Metrics, error) {
	warm := max(env.N/10, 1)
	total := env.N + warm
	q, err := p.OpenQueue(ctx, Config{Capacity: total})
	if err != nil {
		return nil, err
	}
	defer q.Close()
	r, err := q.NewReceiver(ctx)
	if err != nil {
		return nil, err
	}
	defer r.Close()

	sent := make([]time.Duration, total)
	recv := make([]time.Duration, total)
	t := newTracker(total)
	g, gctx := newGroup(ctx)
	t0 := time.Now()
	g.Go(func() error { return timedConsume(gctx, env, r, t, recv, t0) })
	g.Go(func() error {
		time.Sleep(10 * time.Millisecond) // let the consumer block in Receive
		return pacedSend(total, sent, t0, newBody, func(b []byte) error { return q.Send(gctx, b) })
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	lat := make([]time.Duration, 0, env.N)
	for i := warm; i < total; i++ {
		lat = append(lat, recv[i]-sent[i])
	}
	slices.Sort(lat)
	micros := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	return Metrics{
		"p50 µs": micros(percentile(lat, 0.50)),
		"p99 µs": micros(percentile(lat, 0.99)),
		"max µs": micros(lat[len(lat)-1]),
		"sent/s": float64(total-1) / (sent[total-1] - sent[0]).Seconds(),
		"dups":   float64(t.dups.Load()),
	}, nil
}

// timedConsume receives batches of up to receiveBatch from r and completes
// each until t has seen every message, noting in recv[i] when message i
// arrived, measured from t0. Several consumers may share t and recv; an
// error once t is complete is not one (ctx ended with the last message).
func timedConsume(ctx context.Context, env *Env, r Receiver, t *tracker, recv []time.Duration, t0 time.Time) error {
	buf := make([]Delivery, 0, receiveBatch)
	for !t.complete() {
		ds, err := r.Receive(ctx, receiveBatch, buf)
		if err != nil {
			if t.complete() { // another consumer saw the last message
				return nil
			}
			return err
		}
		at := time.Since(t0)
		for _, d := range ds {
			if i := bodyIndex(d.Body); i >= 0 && i < len(recv) {
				recv[i] = at
			}
			if err := r.Complete(ctx, d); err != nil {
				return err
			}
			if err := t.see(d.Body); err != nil {
				return err
			}
		}
		env.tick(len(ds))
		buf = ds
	}
	return nil
}

// pacedSend sends message i (the body made by body(i)) for i from 0 to
// total-1, one per latencyInterval, pacing by spinning on the clock with
// runtime.Gosched and never catching up in bursts. It notes in sent[i] when
// message i was sent, from t0, just before send.
func pacedSend(total int, sent []time.Duration, t0 time.Time, body func(i int) []byte, send func(b []byte) error) error {
	next := time.Now()
	for i := range total {
		for time.Now().Before(next) {
			runtime.Gosched()
		}
		b := body(i)
		sent[i] = time.Since(t0)
		if err := send(b); err != nil {
			return err
		}
		next = next.Add(latencyInterval)
		if now := time.Now(); now.Sub(next) > latencyInterval {
			next = now // fell behind: do not catch up in a burst
		}
	}
	return nil
}

// percentile returns the p-th quantile of sorted, by the nearest-rank method.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
