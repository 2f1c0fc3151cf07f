package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// ScalingJump is W7 at 10k to 10M scheduled messages: how the one clock jump
// that activates them all grows.
func ScalingJump() *Scaling {
	return &Scaling{
		ID:       "jump",
		Title:    "one clock jump over 10k to 10M scheduled messages (minibus only)",
		Variable: "scheduled messages",
		Method: "As W7 with 32-byte bodies: a namespace on clock.NewMock(); one producer schedules every message, one per ScheduleMessages call, at distinct instants spread over the next hour of the mock clock (schedule s, and per message). " +
			"Then, after runtime.GC with the collector off, one mock.Add(time.Hour) and the next call, q.RuntimeProperties(), which activates them all (jump s, and per message; / log2 n divides the time per message by log2 n: flat means O(n log n) in all). " +
			"The counts are checked: every message active, none scheduled. The btree baseline has no mock clock and is not run.",
		Points:      []int{10_000, 100_000, 1_000_000, 10_000_000},
		Quick:       []int{10_000, 100_000},
		MinibusOnly: true,
		Columns: []Column{
			{Key: "schedule s", Header: "schedule s", Kind: Seconds, LowerIsBetter: true},
			{Key: "schedule ns", Header: "schedule ns/msg", Kind: Micros, LowerIsBetter: true},
			{Key: "jump s", Header: "jump s", Kind: Seconds, LowerIsBetter: true},
			{Key: "jump ns", Header: "jump ns/msg", Kind: Micros, LowerIsBetter: true},
			{Key: "jump ns/log2n", Header: "jump ns/msg / log2 n", Kind: Micros, LowerIsBetter: true},
			{Key: "ratio", Header: "jump / schedule", Kind: Ratio, LowerIsBetter: true},
		},
		Panels: []Panel{
			{Title: "Time per message", YLabel: "ns per message", Lines: []Line{
				{Peer: "minibus", Key: "jump ns", Label: "minibus jump (add + call)"},
				{Peer: "minibus", Key: "schedule ns", Label: "minibus schedule"},
			}},
			{Title: "Whole jump", YLabel: "seconds", LogY: true, Lines: []Line{
				{Peer: "minibus", Key: "jump s", Label: "minibus jump (add + call)"},
			}},
		},
		Growth: []Growth{
			{Peer: "minibus", Key: "jump ns", Label: "minibus jump ns/msg", Expect: ExpectLog},
			{Peer: "minibus", Key: "schedule ns", Label: "minibus schedule ns/msg", Expect: ExpectLog},
		},
		Run: runJump,
	}
}

func runJump(ctx context.Context, env *Env, p Peer, n int) (Metrics, error) {
	if _, ok := p.(MinibusPeer); !ok {
		return nil, fmt.Errorf("time travel is minibus's: %w", ErrNotSupported)
	}
	mock := clock.NewMock()
	ns := minibus.NewNamespace(minibus.WithClock(mock))
	defer ns.Close()
	q, err := ns.CreateQueue("jump", &minibus.QueueProperties{MaxSizeInMegabytes: minibusMaxSizeMB})
	if err != nil {
		return nil, err
	}

	start := mock.Now()
	t0 := time.Now()
	for i := range n {
		at := start.Add(time.Duration(int64(time.Hour) * int64(i+1) / int64(n+1)))
		if _, err := q.ScheduleMessages(ctx, []*minibus.Message{{Body: newSmallBody(i)}}, at, nil); err != nil {
			return nil, err
		}
		if i%1024 == 0 {
			env.tick(1024)
		}
	}
	schedule := time.Since(t0)

	var jump time.Duration
	var rp minibus.QueueRuntimeProperties
	err = measured(env, func() error {
		env.quiet(func() {
			t1 := time.Now()
			mock.Add(time.Hour)
			rp = q.RuntimeProperties()
			jump = time.Since(t1)
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rp.ActiveMessageCount != int64(n) || rp.ScheduledMessageCount != 0 {
		return nil, fmt.Errorf("bench: after the jump: %d active and %d scheduled, want %d and 0",
			rp.ActiveMessageCount, rp.ScheduledMessageCount, n)
	}
	return Metrics{
		"schedule s":    schedule.Seconds(),
		"schedule ns":   perOp(schedule, n),
		"jump s":        jump.Seconds(),
		"jump ns":       perOp(jump, n),
		"jump ns/log2n": perOp(jump, n) / log2(n),
		"ratio":         jump.Seconds() / schedule.Seconds(),
		"activated":     float64(rp.ActiveMessageCount),
	}, nil
}
