package bench

import (
	"context"
	"runtime"
	"testing"
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
		})
	}
}
