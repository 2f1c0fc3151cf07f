package bench

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Match says which messages each subscription of a filtered topic takes.
// Every message carries an integer property k, its index modulo the number
// of subscriptions, and the subject "bench".
type Match int

const (
	// MatchAll: every subscription takes every message. minibus: a
	// CorrelationFilter on Subject "bench".
	MatchAll Match = iota
	// MatchOneCorrelation: subscription i takes the messages with k = i,
	// one subscription per message. minibus: a CorrelationFilter on the
	// application property k.
	MatchOneCorrelation
	// MatchOneSQL: as MatchOneCorrelation with an SQLFilter "k = i".
	MatchOneSQL
)

// matches are the fan-out variants, in report order, with their metric
// prefixes.
var matches = []struct {
	m      Match
	prefix string
}{{MatchAll, "all"}, {MatchOneCorrelation, "corr1"}, {MatchOneSQL, "sql1"}}

// FilteredTopicPeer is implemented by peers that can route one message to
// the subscriptions whose filter matches it (the fan-out scaling).
type FilteredTopicPeer interface {
	Peer
	// OpenFilteredTopic starts a fresh broker holding one topic with subs
	// subscriptions filtering as m says. It returns ErrNotSupported for a
	// kind of filter the peer does not have.
	OpenFilteredTopic(ctx context.Context, subs int, m Match) (FilteredTopic, error)
}

// FilteredTopic is a topic whose messages carry the property k.
type FilteredTopic interface {
	// Send publishes one message with property k, settled.
	Send(ctx context.Context, body []byte, k int) error
	// NewReceiver returns a receiver of subscription sub.
	NewReceiver(ctx context.Context, sub int) (Receiver, error)
	// Close stops the broker instance.
	Close() error
}

// fanoutDeliveries bounds the copies one all-match run makes: with x
// subscriptions it sends at most fanoutDeliveries*scale/x messages.
const fanoutDeliveries = 10

// ScalingFanout is topic fan-out: 1 to 100 filtered subscriptions.
func ScalingFanout() *Scaling {
	return &Scaling{
		ID:       "fanout",
		Title:    "topic fan-out: 1 to 100 subscriptions with filters",
		Variable: "subscriptions",
		Method: "One topic with n subscriptions, one consumer each (batches of up to 32, peek-lock, complete each); one producer sends every message (settled, 32-byte body, subject \"bench\", application property k = index mod n). Three variants, each a fresh topic: " +
			"**all**, every subscription has a CorrelationFilter on the subject and takes every message (n copies per message; the run sends m messages, or 10m/n when fewer); " +
			"**corr1**, subscription i has a CorrelationFilter on k = i (n filters evaluated, one copy per message; m messages); " +
			"**sql1**, the same with an SQLFilter \"k = i\". msgs/s counts messages sent, deliveries/s the copies completed, both over the time from the first send to the last completion, after runtime.GC with the collector off. " +
			"The btree baseline has no topic: its topic is n btree queues, each with a Go func(k int) bool as its filter (true, or k == i), which the send calls in turn, inserting into each queue that matches: the floor of a fan-out with filters, without any filter language (so no sql1). Every subscription's count and each message's subscription (k) are checked.",
		Points: []int{1, 10, 30, 100},
		Quick:  []int{1, 10, 30},
		Ops:    100_000, MinOps: 100,
		Columns: []Column{
			{Key: "all msgs/s", Header: "all msgs/s", Kind: Rate},
			{Key: "all deliveries/s", Header: "all deliveries/s", Kind: Rate},
			{Key: "all ns/delivery", Header: "all ns/delivery", Kind: Micros, LowerIsBetter: true},
			{Key: "corr1 msgs/s", Header: "corr1 msgs/s", Kind: Rate},
			{Key: "corr1 ns/msg", Header: "corr1 ns/msg", Kind: Micros, LowerIsBetter: true},
			{Key: "sql1 msgs/s", Header: "sql1 msgs/s", Kind: Rate},
			{Key: "sql1 ns/msg", Header: "sql1 ns/msg", Kind: Micros, LowerIsBetter: true},
		},
		Panels: []Panel{
			{Title: "Messages sent per second", YLabel: "messages sent/s", LogY: true, Lines: []Line{
				{Peer: "minibus", Key: "all msgs/s", Label: "minibus all match"},
				{Peer: "minibus", Key: "corr1 msgs/s", Label: "minibus 1 match, correlation"},
				{Peer: "minibus", Key: "sql1 msgs/s", Label: "minibus 1 match, SQL"},
				{Peer: "btree", Key: "all msgs/s", Label: "btree all match"},
				{Peer: "btree", Key: "corr1 msgs/s", Label: "btree 1 match"},
			}},
			{Title: "Deliveries per second", YLabel: "copies delivered/s", LogY: true, Lines: []Line{
				{Peer: "minibus", Key: "all deliveries/s", Label: "minibus all match"},
				{Peer: "minibus", Key: "corr1 deliveries/s", Label: "minibus 1 match, correlation"},
				{Peer: "minibus", Key: "sql1 deliveries/s", Label: "minibus 1 match, SQL"},
				{Peer: "btree", Key: "all deliveries/s", Label: "btree all match"},
				{Peer: "btree", Key: "corr1 deliveries/s", Label: "btree 1 match"},
			}},
		},
		Growth: []Growth{
			{Peer: "minibus", Key: "all ns/delivery", Label: "minibus all match, ns per delivery", Expect: ExpectFlat},
			{Peer: "btree", Key: "all ns/delivery", Label: "btree all match, ns per delivery", Expect: ExpectFlat},
			{Peer: "minibus", Key: "corr1 ns/msg", Label: "minibus 1 match (correlation), ns per message", Expect: ExpectLinear},
			{Peer: "minibus", Key: "sql1 ns/msg", Label: "minibus 1 match (SQL), ns per message", Expect: ExpectLinear},
			{Peer: "btree", Key: "corr1 ns/msg", Label: "btree 1 match, ns per message", Expect: ExpectLinear},
		},
		Run: runScalingFanout,
	}
}

func runScalingFanout(ctx context.Context, env *Env, p Peer, subs int) (Metrics, error) {
	tp, ok := p.(FilteredTopicPeer)
	if !ok {
		return nil, fmt.Errorf("%s has no filtered topics: %w", p.Name(), ErrNotSupported)
	}
	out := Metrics{}
	for _, v := range matches {
		n := env.N
		if v.m == MatchAll {
			n = max(min(n, n*fanoutDeliveries/subs), 1)
		}
		m, err := runFanoutVariant(ctx, env, tp, subs, v.m, n)
		if errors.Is(err, ErrNotSupported) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.prefix, err)
		}
		for k, x := range m {
			out[v.prefix+" "+k] = x
		}
		out["dups"] += m["dups"]
	}
	return out, nil
}

// runFanoutVariant sends n messages to a fresh topic with subs
// subscriptions matching as m says, and receives every copy.
func runFanoutVariant(ctx context.Context, env *Env, tp FilteredTopicPeer, subs int, m Match, n int) (Metrics, error) {
	t, err := tp.OpenFilteredTopic(ctx, subs, m)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	receivers, err := openReceivers(ctx, subs, func(i int) (Receiver, error) { return t.NewReceiver(ctx, i) })
	if err != nil {
		return nil, err
	}
	defer closeAll(receivers)

	trackers := make([]*tracker, subs)
	copies := 0
	for i := range trackers {
		if m == MatchAll {
			trackers[i] = newTracker(n)
		} else {
			trackers[i] = newStridedTracker(n, subs, i)
		}
		copies += int(trackers[i].n)
	}
	var elapsed time.Duration
	err = measured(env, func() error {
		g, gctx := newGroup(ctx)
		start := time.Now()
		g.Go(func() error {
			for i := range n {
				if err := t.Send(gctx, newSmallBody(i), i%subs); err != nil {
					return err
				}
			}
			return nil
		})
		for i, r := range receivers {
			if trackers[i].n > 0 {
				g.Go(func() error { return consume(gctx, env, r, trackers[i], receiveBatch) })
			}
		}
		err := g.Wait()
		elapsed = time.Since(start)
		return err
	})
	if err != nil {
		return nil, err
	}
	var dups int64
	for _, tr := range trackers {
		dups += tr.dups.Load()
	}
	return Metrics{
		"msgs/s":       rate(n, elapsed),
		"deliveries/s": rate(copies, elapsed),
		"ns/msg":       perOp(elapsed, n),
		"ns/delivery":  perOp(elapsed, copies),
		"sent":         float64(n),
		"delivered":    float64(copies),
		"dups":         float64(dups),
	}, nil
}
