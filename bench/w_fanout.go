package bench

import (
	"context"
	"fmt"
	"time"
)

// fanoutSubscriptions is W6's number of subscriptions.
const fanoutSubscriptions = 10

// W6 is topic fan-out: one producer, ten subscriptions, one consumer each.
func W6() *Workload {
	return &Workload{
		ID:     "W6",
		Title:  "topic fan-out to 10 subscriptions",
		Method: "One producer sends every message (settled) to a topic with 10 subscriptions; one consumer per subscription receives batches of up to 32 and completes each until its subscription has delivered every message once. msgs/s counts messages sent, deliveries/s the 10 copies. chan and btree have no topic: they are 10 channels or 10 queues that the producer writes in turn, the floor of a fan-out. goqite inserts into 10 queues of its table in one transaction.",
		N:      50_000, MinN: 100,
		Reducible: true,
		Columns: []Column{
			{Key: "msgs/s", Header: "msgs/s", Kind: Rate},
			{Key: "deliveries/s", Header: "deliveries/s", Kind: Rate},
		},
		Run: runFanout,
	}
}

func runFanout(ctx context.Context, env *Env, p Peer) (Metrics, error) {
	tp, ok := p.(TopicPeer)
	if !ok {
		return nil, fmt.Errorf("%s has no topics: %w", p.Name(), ErrNotSupported)
	}
	n := env.N
	t, err := tp.OpenTopic(ctx, Config{Capacity: n}, fanoutSubscriptions)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	receivers, err := openReceivers(ctx, fanoutSubscriptions, func(i int) (Receiver, error) { return t.NewReceiver(ctx, i) })
	if err != nil {
		return nil, err
	}
	defer closeAll(receivers)

	trackers := make([]*tracker, fanoutSubscriptions)
	g, gctx := newGroup(ctx)
	env.phase("run")
	start := time.Now()
	g.Go(func() error {
		for i := range n {
			if err := t.Send(gctx, newBody(i)); err != nil {
				return err
			}
		}
		return nil
	})
	for i, r := range receivers {
		trackers[i] = newTracker(n)
		g.Go(func() error { return consume(gctx, env, r, trackers[i], receiveBatch) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	env.phase("")
	var dups int64
	for _, tr := range trackers {
		dups += tr.dups.Load()
	}
	return Metrics{
		"msgs/s":       rate(n, elapsed),
		"deliveries/s": rate(n*fanoutSubscriptions, elapsed),
		"dups":         float64(dups),
	}, nil
}
