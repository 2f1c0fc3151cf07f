package bench

import (
	"bytes"
	"runtime/trace"
	"strings"
	"testing"
	"time"
)

// spinFor runs on the CPU for d, then closes done.
func spinFor(d time.Duration, done chan<- struct{}) {
	start := time.Now()
	for time.Since(start) < d {
	}
	close(done)
}

// waitForSpinner starts a spinner and blocks until it is done.
func waitForSpinner(d time.Duration) {
	done := make(chan struct{})
	go spinFor(d, done)
	<-done
}

// GoroutineStates finds a goroutine blocked on a channel while another
// runs, names both, and accounts no goroutine more time than the trace
// spans.
func TestGoroutineStates(t *testing.T) {
	if trace.IsEnabled() {
		t.Skip("a trace is already being written")
	}
	const spin = 40 * time.Millisecond
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		waitForSpinner(spin)
	}()
	<-finished
	trace.Stop()

	s, err := GoroutineStates(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if s.Span < spin || s.ProcRunning < spin {
		t.Errorf("span %v, Ps running %v: want both at least the spin, %v", s.Span, s.ProcRunning, spin)
	}
	var spinner, waiter *GoStates
	for i := range s.Goroutines {
		g := &s.Goroutines[i]
		switch {
		case strings.HasSuffix(g.Func, ".spinFor"):
			spinner = g
		case strings.HasSuffix(g.BlocksIn, ".waitForSpinner"):
			waiter = g
		}
		total := g.Running + g.Runnable
		for _, d := range g.Waiting {
			total += d
		}
		if total > s.Span {
			t.Errorf("G%d accounted %v in a trace of %v", g.ID, total, s.Span)
		}
		sum := 0
		for _, n := range g.ReadyWaits {
			sum += n
		}
		if sum > g.Readied {
			t.Errorf("G%d: %d waits for a P counted, readied %d times", g.ID, sum, g.Readied)
		}
	}
	if spinner == nil || waiter == nil {
		t.Fatalf("spinner %v, waiter %v: not found in\n%s", spinner, waiter, s.Format(len(s.Goroutines), 0))
	}
	if spinner.Running <= 0 {
		t.Errorf("spinner ran %v", spinner.Running)
	}
	if w := waiter.Waiting["chan receive"]; w < spin/4 {
		t.Errorf("waiter blocked on the channel %v while the spinner spun %v", w, spin)
	}
	if waiter.Readied < 1 {
		t.Errorf("waiter readied %d times, want at least once (when the spinner closed the channel)", waiter.Readied)
	}
	if out := s.Format(len(s.Goroutines), 1000); !strings.Contains(out, "ns/msg") || !strings.Contains(out, "chan receive") {
		t.Errorf("Format left out the per-message figures or the waiting reasons:\n%s", out)
	}
}

// bucket puts a duration in the first bucket whose bound it is below.
func TestReadyWaitBuckets(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int
	}{{0, 0}, {3 * time.Microsecond, 0}, {4 * time.Microsecond, 1}, {100 * time.Microsecond, 2}, {time.Millisecond, 4}, {time.Second, 4}} {
		if got := bucket(c.d, ReadyWaitBounds); got != c.want {
			t.Errorf("bucket(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}
