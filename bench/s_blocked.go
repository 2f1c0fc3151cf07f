package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ScalingBlocked is the number of receivers blocked in Receive: 1 to 10k.
func ScalingBlocked() *Scaling {
	return &Scaling{
		ID:       "blocked",
		Title:    "blocked receivers: 1 to 10k parked in Receive",
		Variable: "blocked receivers",
		Method: "Two variants, each with n receivers, each in a goroutine of its own blocked in Receive (peek-lock, up to 32). " +
			"**distinct**: n queues of one broker instance; n-1 receivers wait on n-1 idle queues, one each, for the whole run, and the n-th consumes the one hot queue: the cost of many listeners parked on other queues, a service with a listener per queue. " +
			"**shared**: one queue and n competing consumers on it, all blocked when it is empty: each message wakes one of them, the cost of a crowd on one queue. " +
			"For each, msgs/s: one producer sends m messages unpaced (settled) and the consumers receive and complete until every one was completed once, over the time from the first send to the last completion; " +
			"then latency: the producer sends one message per 100 µs as in W4 (m/20 of them, at least 50, after a tenth more to warm up), from just before Send to just after Receive returned it, p50 and p99. " +
			"The producer starts once every receiver has entered Receive (and 20 ms more); the measured phases run after runtime.GC with the collector off.",
		Points: []int{1, 100, 1_000, 10_000},
		Quick:  []int{1, 100, 1_000},
		Ops:    100_000, MinOps: 100,
		Columns: []Column{
			{Key: "distinct msgs/s", Header: "distinct msgs/s", Kind: Rate},
			{Key: "distinct p50 µs", Header: "distinct p50 µs", Kind: Micros, LowerIsBetter: true},
			{Key: "distinct p99 µs", Header: "distinct p99 µs", Kind: Micros, LowerIsBetter: true},
			{Key: "shared msgs/s", Header: "shared msgs/s", Kind: Rate},
			{Key: "shared p50 µs", Header: "shared p50 µs", Kind: Micros, LowerIsBetter: true},
			{Key: "shared p99 µs", Header: "shared p99 µs", Kind: Micros, LowerIsBetter: true},
		},
		Panels: []Panel{
			{Title: "Send → receive → complete rate", YLabel: "messages/s", LogY: true, Lines: []Line{
				{Peer: "minibus", Key: "distinct msgs/s", Label: "minibus distinct queues"},
				{Peer: "minibus", Key: "shared msgs/s", Label: "minibus one shared queue"},
				{Peer: "btree", Key: "distinct msgs/s", Label: "btree distinct queues"},
				{Peer: "btree", Key: "shared msgs/s", Label: "btree one shared queue"},
			}},
			{Title: "Latency at one message per 100 µs, p50", YLabel: "send → receive, µs", LogY: true, Lines: []Line{
				{Peer: "minibus", Key: "distinct p50 µs", Label: "minibus distinct queues"},
				{Peer: "minibus", Key: "shared p50 µs", Label: "minibus one shared queue"},
				{Peer: "btree", Key: "distinct p50 µs", Label: "btree distinct queues"},
				{Peer: "btree", Key: "shared p50 µs", Label: "btree one shared queue"},
			}},
		},
		Growth: []Growth{
			{Peer: "minibus", Key: "distinct msgs/s", Label: "minibus distinct msgs/s", Expect: ExpectFlat},
			{Peer: "minibus", Key: "distinct p50 µs", Label: "minibus distinct p50 µs", Expect: ExpectFlat},
			{Peer: "minibus", Key: "shared msgs/s", Label: "minibus shared msgs/s", Expect: ExpectFlat},
			{Peer: "minibus", Key: "shared p50 µs", Label: "minibus shared p50 µs", Expect: ExpectFlat},
			{Peer: "btree", Key: "distinct msgs/s", Label: "btree distinct msgs/s", Expect: ExpectFlat},
			{Peer: "btree", Key: "shared msgs/s", Label: "btree shared msgs/s", Expect: ExpectFlat},
		},
		Run: runBlocked,
	}
}

func runBlocked(ctx context.Context, env *Env, p Peer, n int) (Metrics, error) {
	sp, ok := p.(QueueSetPeer)
	if !ok {
		return nil, fmt.Errorf("%s cannot hold many queues: %w", p.Name(), ErrNotSupported)
	}
	out := Metrics{}
	distinct, err := runBlockedDistinct(ctx, env, sp, n)
	if err != nil {
		return nil, fmt.Errorf("distinct: %w", err)
	}
	shared, err := runBlockedShared(ctx, env, p, n)
	if err != nil {
		return nil, fmt.Errorf("shared: %w", err)
	}
	for k, v := range distinct {
		out["distinct "+k] = v
	}
	for k, v := range shared {
		out["shared "+k] = v
	}
	out["dups"] = distinct["dups"] + shared["dups"]
	return out, nil
}

// runBlockedDistinct parks n-1 receivers on n-1 idle queues and measures
// the traffic of the n-th queue.
func runBlockedDistinct(ctx context.Context, env *Env, sp QueueSetPeer, n int) (Metrics, error) {
	set, err := sp.OpenQueues(ctx, n)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	hot := set.Queue(0)
	receivers, err := openReceivers(ctx, n, func(i int) (Receiver, error) { return set.Queue(i).NewReceiver(ctx) })
	if err != nil {
		return nil, err
	}
	defer closeAll(receivers)

	// The idle receivers wait until the measurement is over.
	idleCtx, stopIdle := context.WithCancel(ctx)
	var idle sync.WaitGroup
	var entered atomic.Int64
	idleErrs := make(chan error, 1)
	for _, r := range receivers[1:] {
		idle.Go(func() {
			entered.Add(1)
			ds, err := r.Receive(idleCtx, receiveBatch, nil)
			if err == nil || !errors.Is(err, context.Canceled) {
				select {
				case idleErrs <- fmt.Errorf("bench: an idle receiver returned %d messages, %v", len(ds), err):
				default:
				}
			}
		})
	}
	defer idle.Wait()
	defer stopIdle()
	waitEntered(&entered, n-1)

	m, err := blockedPhases(ctx, env, hot, receivers[:1])
	if err != nil {
		return nil, err
	}
	select {
	case err := <-idleErrs:
		return nil, err
	default:
	}
	return m, nil
}

// runBlockedShared measures one queue with n competing consumers.
func runBlockedShared(ctx context.Context, env *Env, p Peer, n int) (Metrics, error) {
	q, err := p.OpenQueue(ctx, Config{Capacity: env.N})
	if err != nil {
		return nil, err
	}
	defer q.Close()
	receivers, err := openReceivers(ctx, n, func(int) (Receiver, error) { return q.NewReceiver(ctx) })
	if err != nil {
		return nil, err
	}
	defer closeAll(receivers)
	return blockedPhases(ctx, env, q, receivers)
}

// waitEntered waits until n goroutines said they are about to block, then
// 20 ms more so that they did.
func waitEntered(entered *atomic.Int64, n int) {
	for entered.Load() < int64(n) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
}

// blockedPhases measures q's rate, then its latency, with receivers
// consuming it.
func blockedPhases(ctx context.Context, env *Env, q Queue, receivers []Receiver) (Metrics, error) {
	n := env.N
	t := newTracker(n)
	var elapsed time.Duration
	err := measured(env, func() error {
		g, gctx := newGroup(ctx)
		var entered atomic.Int64
		for _, r := range receivers {
			g.Go(func() error {
				entered.Add(1)
				return consume(gctx, env, r, t, receiveBatch)
			})
		}
		waitEntered(&entered, len(receivers))
		start := time.Now()
		g.Go(func() error {
			for i := range n {
				if err := q.Send(gctx, newSmallBody(i)); err != nil {
					return err
				}
			}
			return nil
		})
		err := g.Wait()
		elapsed = time.Since(start)
		return err
	})
	if err != nil {
		return nil, err
	}
	lat, err := blockedLatency(ctx, env, q, receivers, max(n/20, 50))
	if err != nil {
		return nil, err
	}
	lat["msgs/s"] = rate(n, elapsed)
	lat["delivered"] = float64(t.distinct.Load())
	lat["dups"] += float64(t.dups.Load())
	return lat, nil
}

// blockedLatency sends k messages (after a tenth more to warm up) at one per
// 100 µs to q, consumed by receivers, and returns the latency percentiles.
func blockedLatency(ctx context.Context, env *Env, q Queue, receivers []Receiver, k int) (Metrics, error) {
	warm := max(k/10, 1)
	total := k + warm
	sent := make([]time.Duration, total)
	recv := make([]time.Duration, total)
	t := newTracker(total)
	err := measured(env, func() error {
		g, gctx := newGroup(ctx)
		cctx, stop := untilComplete(gctx, t)
		defer stop()
		var entered atomic.Int64
		t0 := time.Now()
		for _, r := range receivers {
			g.Go(func() error {
				entered.Add(1)
				return timedConsume(cctx, env, r, t, recv, t0)
			})
		}
		waitEntered(&entered, len(receivers))
		g.Go(func() error {
			return pacedSend(total, sent, t0, newSmallBody, func(b []byte) error { return q.Send(gctx, b) })
		})
		return g.Wait()
	})
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, 0, k)
	for i := warm; i < total; i++ {
		lat = append(lat, recv[i]-sent[i])
	}
	slices.Sort(lat)
	micros := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	return Metrics{
		"p50 µs": micros(percentile(lat, 0.50)),
		"p99 µs": micros(percentile(lat, 0.99)),
		"dups":   float64(t.dups.Load()),
	}, nil
}
