package bench

import (
	"context"
	"runtime"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// TraceTail accounts for every message once, orders its percentiles, and
// finds the collections a run forces.
func TestTraceTail(t *testing.T) {
	for _, p := range []Peer{ChanPeer{}, MinibusPeer{}} {
		t.Run(p.Name(), func(t *testing.T) {
			const n = 300
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { // collections while the run goes on
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
						runtime.GC()
					}
				}
			}()
			r, err := TraceTail(context.Background(), p, n)
			close(stop)
			<-done
			if err != nil {
				t.Fatal(err)
			}
			sum := 0
			for _, row := range r.Hist {
				for _, c := range row {
					sum += c
				}
			}
			if sum != n {
				t.Errorf("histogram counts %d messages, want %d", sum, n)
			}
			if r.P50 <= 0 || r.P50 > r.P99 || r.P99 > r.Max {
				t.Errorf("percentiles out of order: p50 %v p99 %v max %v", r.P50, r.P99, r.Max)
			}
			if r.Slowest != n-n*99/100 || r.SlowInGC > r.Slowest {
				t.Errorf("slowest %d, %d in GC", r.Slowest, r.SlowInGC)
			}
			if r.GCs == 0 || r.GCShare <= 0 {
				t.Errorf("found no collection in a run that forced them: %+v", r)
			}
			if len(r.Excerpt) == 0 {
				t.Error("no excerpt around the slowest message")
			}
			if r.Wakes == 0 || r.Running <= 0 {
				t.Errorf("consumer woken %d times, running %v", r.Wakes, r.Running)
			}
		})
	}
}

// consumerStalls finds the goroutine readied most often and tells its
// stalls, a millisecond or more runnable or running, from its work.
func TestConsumerStalls(t *testing.T) {
	const us = time.Microsecond
	ev := func(at time.Duration, g xtrace.GoID, from, to xtrace.GoState) traceEvent {
		return traceEvent{at: at, g: g, from: from, to: to}
	}
	W, R, X := xtrace.GoWaiting, xtrace.GoRunnable, xtrace.GoRunning
	events := []traceEvent{
		{at: 1 * us, begin: "GC concurrent mark phase"}, // not a goroutine's
		ev(10*us, 7, W, R), ev(11*us, 7, R, X), ev(14*us, 7, X, W), // 3 µs of work
		ev(20*us, 9, R, X), ev(21*us, 9, X, R), // the producer, yielding
		ev(100*us, 7, W, R),
		ev(200*us, 9, W, R),                        // readied once only
		ev(4100*us, 7, R, X), ev(4102*us, 7, X, W), // 4 ms runnable
		ev(5000*us, 7, W, R), ev(5001*us, 7, R, X), ev(9001*us, 7, X, W), // 4 ms running
	}
	wakes, running, stalls, longest := consumerStalls(events)
	if wakes != 3 || running != 5*us || stalls != [2]int{1, 1} || longest != 4000*us {
		t.Errorf("consumerStalls = %d wakes, running %v, stalls %v, longest %v; want 3, 5µs, [1 1], 4ms",
			wakes, running, stalls, longest)
	}
}
