package bench

import (
	"context"
	"fmt"
	"time"
)

// QueueSetPeer is implemented by peers that can hold many queues in one
// broker instance (the entities and blocked-receivers scalings).
type QueueSetPeer interface {
	Peer
	// OpenQueues starts a fresh broker holding n empty queues.
	OpenQueues(ctx context.Context, n int) (QueueSet, error)
}

// QueueSet is n queues of one broker instance, numbered from 0.
type QueueSet interface {
	// Queue returns queue i. Its Close must not be called: Close the set.
	Queue(i int) Queue
	// Close stops the broker instance.
	Close() error
}

// hotQueues is how many queues of the entities scaling carry traffic.
const hotQueues = 4

// ScalingEntities is the number of queues: 4 hot ones beside up to 100k
// idle ones.
func ScalingEntities() *Scaling {
	return &Scaling{
		ID:       "entities",
		Title:    "entities: 4 hot queues among 4 to 100k queues",
		Variable: "queues",
		Method: "One broker instance with n queues (create µs/queue is the time to create them, per queue; B/queue the HeapAlloc delta per queue after runtime.GC, the queues being empty). " +
			"Four of them are hot, the n-4 others stay idle (the smallest point, 4, has none idle): four producers each send m/4 messages to their own hot queue while four consumers, one per hot queue, receive (peek-lock, up to 32 a call) and complete, until every message was completed once; " +
			"msgs/s is all four queues' messages over the time from the first send to the last completion, after runtime.GC with the collector off; ns/msg its inverse.",
		Points: []int{4, 100, 1_000, 10_000, 100_000},
		Quick:  []int{4, 100, 1_000},
		Ops:    200_000, MinOps: 4 * 50,
		Columns: []Column{
			{Key: "msgs/s", Header: "hot msgs/s", Kind: Rate},
			{Key: "ns/msg", Header: "hot ns/msg", Kind: Micros, LowerIsBetter: true},
			{Key: "B/queue", Header: "heap B/queue", Kind: Bytes, LowerIsBetter: true},
			{Key: "create µs", Header: "create µs/queue", Kind: Micros, LowerIsBetter: true},
		},
		Panels: []Panel{
			{Title: "Traffic on 4 hot queues", YLabel: "messages/s", LogY: true, Lines: []Line{
				{Peer: "minibus", Key: "msgs/s", Label: "minibus"},
				{Peer: "btree", Key: "msgs/s", Label: "btree"},
			}},
			{Title: "Memory per queue", YLabel: "heap bytes per queue", LogY: true, Lines: []Line{
				{Peer: "minibus", Key: "B/queue", Label: "minibus"},
				{Peer: "btree", Key: "B/queue", Label: "btree"},
			}},
		},
		Growth: []Growth{
			{Peer: "minibus", Key: "ns/msg", Label: "minibus hot ns/msg", Expect: ExpectFlat},
			{Peer: "btree", Key: "ns/msg", Label: "btree hot ns/msg", Expect: ExpectFlat},
			{Peer: "minibus", Key: "B/queue", Label: "minibus heap B/queue", Expect: ExpectFlat},
			{Peer: "minibus", Key: "create µs", Label: "minibus create µs/queue", Expect: ExpectFlat},
		},
		Run: runEntities,
	}
}

func runEntities(ctx context.Context, env *Env, p Peer, queues int) (Metrics, error) {
	sp, ok := p.(QueueSetPeer)
	if !ok {
		return nil, fmt.Errorf("%s cannot hold many queues: %w", p.Name(), ErrNotSupported)
	}
	n := env.N - env.N%hotQueues
	before, err := measureMemory(ctx, env, nil)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	set, err := sp.OpenQueues(ctx, queues)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	create := time.Since(start)
	after, err := measureMemory(ctx, env, nil)
	if err != nil {
		return nil, err
	}
	perQueue, _ := perMessage(before, after, queues)

	hot := make([]Queue, hotQueues)
	for i := range hot {
		hot[i] = set.Queue(i * (queues / hotQueues)) // spread over the set
	}
	receivers, err := openReceivers(ctx, hotQueues, func(i int) (Receiver, error) { return hot[i].NewReceiver(ctx) })
	if err != nil {
		return nil, err
	}
	defer closeAll(receivers)

	per := n / hotQueues
	trackers := make([]*tracker, hotQueues)
	var elapsed time.Duration
	err = measured(env, func() error {
		g, gctx := newGroup(ctx)
		start := time.Now()
		for w := range hotQueues {
			trackers[w] = newTracker(per)
			g.Go(func() error {
				for i := range per {
					if err := hot[w].Send(gctx, newSmallBody(i)); err != nil {
						return err
					}
				}
				return nil
			})
			g.Go(func() error { return consume(gctx, env, receivers[w], trackers[w], receiveBatch) })
		}
		err := g.Wait()
		elapsed = time.Since(start)
		return err
	})
	if err != nil {
		return nil, err
	}
	var dups, delivered int64
	for _, t := range trackers {
		dups += t.dups.Load()
		delivered += t.distinct.Load()
	}
	return Metrics{
		"msgs/s":    rate(n, elapsed),
		"ns/msg":    perOp(elapsed, n),
		"B/queue":   perQueue,
		"create µs": perOp(create, queues) / 1e3,
		"delivered": float64(delivered),
		"dups":      float64(dups),
	}, nil
}
