package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// timeTravelTarget is W7's goal: the jump costs at most twice the
// scheduling.
const timeTravelTarget = 2.0

// W7 is minibus's time travel: schedule 1,000,000 messages on a mock clock,
// then one mock.Add past all of them and the one call that activates them.
func W7() *Workload {
	return &Workload{
		ID:          "W7",
		Title:       "time travel over 1,000,000 scheduled messages",
		Method:      "A namespace on clock.NewMock(); one producer schedules every message, one per ScheduleMessages call, at distinct instants spread over the next hour of the mock clock (schedule s). Then one mock.Add(time.Hour) and the next call, q.RuntimeProperties(), which activates them all (add+call s). ratio = add+call / schedule; the target is at most 2x. The counts are checked: every message active, none scheduled.",
		N:           1_000_000,
		MinN:        200,
		MinibusOnly: true,
		Columns: []Column{
			{Key: "schedule s", Header: "schedule s", Kind: Seconds, LowerIsBetter: true},
			{Key: "add+call s", Header: "add+call s", Kind: Seconds, LowerIsBetter: true},
			{Key: "ratio", Header: "add+call / schedule", Kind: Ratio, LowerIsBetter: true},
		},
		Run: runTimeTravel,
	}
}

func runTimeTravel(ctx context.Context, env *Env, p Peer) (Metrics, error) {
	if _, ok := p.(MinibusPeer); !ok {
		return nil, fmt.Errorf("time travel is minibus's: %w", ErrNotSupported)
	}
	n := env.N
	mock := clock.NewMock()
	ns := minibus.NewNamespace(minibus.WithClock(mock))
	defer ns.Close()
	q, err := ns.CreateQueue("w7", &minibus.QueueProperties{MaxSizeInMegabytes: minibusMaxSizeMB})
	if err != nil {
		return nil, err
	}

	start := mock.Now()
	t0 := time.Now()
	for i := range n {
		at := start.Add(time.Duration(int64(time.Hour) * int64(i+1) / int64(n+1)))
		if _, err := q.ScheduleMessages(ctx, []*minibus.Message{{Body: newBody(i)}}, at, nil); err != nil {
			return nil, err
		}
		if i%1024 == 0 {
			env.tick(1024)
		}
	}
	schedule := time.Since(t0)

	var jump time.Duration
	var rp minibus.QueueRuntimeProperties
	env.quiet(func() {
		t1 := time.Now()
		mock.Add(time.Hour)
		rp = q.RuntimeProperties()
		jump = time.Since(t1)
	})
	if rp.ActiveMessageCount != int64(n) || rp.ScheduledMessageCount != 0 {
		return nil, fmt.Errorf("bench: after the jump: %d active and %d scheduled, want %d and 0",
			rp.ActiveMessageCount, rp.ScheduledMessageCount, n)
	}
	return Metrics{
		"schedule s": schedule.Seconds(),
		"add+call s": jump.Seconds(),
		"ratio":      jump.Seconds() / schedule.Seconds(),
	}, nil
}
