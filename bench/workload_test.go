package bench

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// expected is how each run of the tiny matrix must end; anything not listed
// must be ok.
var expected = map[string]Status{
	"W5/chan":      StatusNA,
	"W5/watermill": StatusNA,
}

// TestWorkloadsTiny runs every workload on every peer with its smallest
// count, so that CI catches a broken adapter or runner. It checks how each
// run ended and that every figure is there and finite, never how fast.
func TestWorkloadsTiny(t *testing.T) {
	for _, w := range Workloads() {
		t.Run(w.ID, func(t *testing.T) {
			var results []Result
			RunWorkload(t.Context(), w, RunOptions{Reps: 1, Scale: 1e-9}, func(r Result) {
				results = append(results, r)
			})
			want := len(Peers())
			if w.MinibusOnly {
				want = 1
			}
			if len(results) != want {
				t.Fatalf("%d results, want %d", len(results), want)
			}
			for _, r := range results {
				if r.N != w.MinN { // a Reducer too: never below MinN
					t.Errorf("%s: n = %d, want MinN %d", r.Peer, r.N, w.MinN)
				}
				st, ok := expected[w.ID+"/"+r.Peer]
				if !ok {
					st = StatusOK
				}
				if r.Status != st {
					t.Errorf("%s: status %s (%s), want %s", r.Peer, r.Status, r.Error, st)
					continue
				}
				if r.Status != StatusOK {
					continue
				}
				for _, c := range w.Columns {
					v, ok := r.Metrics[c.Key]
					if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
						t.Errorf("%s: %s = %v (present %v)", r.Peer, c.Key, v, ok)
					}
				}
				if d := r.Metrics["dups"]; d != 0 {
					t.Errorf("%s: %v duplicate deliveries", r.Peer, d)
				}
			}
		})
	}
}

// stuckPeer's queue accepts sends and never delivers: a stand-in for a
// stalled broker.
type stuckPeer struct{}

func (stuckPeer) Name() string { return "stuck" }
func (stuckPeer) OpenQueue(ctx context.Context, cfg Config) (Queue, error) {
	return stuckQueue{}, nil
}

type stuckQueue struct{}

func (stuckQueue) Send(ctx context.Context, body []byte) error { return nil }
func (stuckQueue) NewReceiver(ctx context.Context) (Receiver, error) {
	return stuckReceiver{}, nil
}
func (stuckQueue) Close() error { return nil }

type stuckReceiver struct{}

func (stuckReceiver) Receive(ctx context.Context, max int, buf []Delivery) ([]Delivery, error) {
	<-ctx.Done()
	return buf[:0], ctx.Err()
}
func (stuckReceiver) Complete(ctx context.Context, d Delivery) error { return nil }
func (stuckReceiver) Close() error                                   { return nil }

// TestRunOnceStall checks that the watchdog cancels a run that stops making
// progress and records it as a stall.
func TestRunOnceStall(t *testing.T) {
	r := RunOnce(t.Context(), W1(), stuckPeer{}, 10, RunOptions{StallAfter: 300 * time.Millisecond})
	if r.Status != StatusStall || r.Abandoned {
		t.Fatalf("status %s (abandoned %v, %s), want stall", r.Status, r.Abandoned, r.Error)
	}
}

// TestRunOnceTimeout checks the hard per-run limit.
func TestRunOnceTimeout(t *testing.T) {
	r := RunOnce(t.Context(), W1(), stuckPeer{}, 10, RunOptions{RunTimeout: 300 * time.Millisecond, StallAfter: time.Hour})
	if r.Status != StatusTimeout {
		t.Fatalf("status %s (%s), want timeout", r.Status, r.Error)
	}
}

func TestPercentile(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 5}, {0.99, 10}, {0.1, 1}, {1, 10}} {
		if got := percentile(d, c.p); got != c.want {
			t.Errorf("percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if percentile(nil, 0.5) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}

func TestTrackerCountsDistinct(t *testing.T) {
	tr := newTracker(3)
	for _, i := range []int{0, 2, 2, 1} {
		if err := tr.see(newBody(i)); err != nil {
			t.Fatal(err)
		}
	}
	if !tr.complete() || tr.dups.Load() != 1 {
		t.Fatalf("complete %v, dups %d", tr.complete(), tr.dups.Load())
	}
	select {
	case <-tr.done:
	default:
		t.Fatal("done not closed")
	}
	if err := tr.see(newBody(3)); err == nil {
		t.Fatal("an index out of range was accepted")
	}
}

// TestRunWorkloadIsolate: with Isolate set, every run goes to it, peers in
// the rotating order, each with its count, and what it returns is emitted
// with the repetition's number; nothing runs in this process.
func TestRunWorkloadIsolate(t *testing.T) {
	w := W1()
	peers := []Peer{MinibusPeer{}, BtreePeer{}}
	var asked, emitted []string
	opts := RunOptions{Reps: 2, Scale: 1e-9, Peers: peers,
		Isolate: func(ctx context.Context, w *Workload, p Peer, n int) Result {
			asked = append(asked, p.Name())
			if n != w.MinN {
				t.Errorf("%s: n = %d, want %d", p.Name(), n, w.MinN)
			}
			return Result{Workload: w.ID, Peer: p.Name(), N: n, Status: StatusOK, Metrics: Metrics{"msgs/s": 1}}
		}}
	RunWorkload(t.Context(), w, opts, func(r Result) {
		emitted = append(emitted, r.Peer+"/"+string(rune('0'+r.Rep)))
		if r.Metrics["msgs/s"] != 1 {
			t.Errorf("%s: %v, not the isolated run's result", r.Peer, r.Metrics)
		}
	})
	if want := []string{"minibus", "btree", "btree", "minibus"}; !slices.Equal(asked, want) {
		t.Errorf("runs asked of Isolate: %v, want %v", asked, want)
	}
	if want := []string{"minibus/1", "btree/1", "btree/2", "minibus/2"}; !slices.Equal(emitted, want) {
		t.Errorf("results emitted: %v, want %v", emitted, want)
	}
}

// needyPeer lacks something: a run that opens it ends in an error.
type needyPeer struct{}

func (needyPeer) Name() string    { return "needy" }
func (needyPeer) Missing() string { return "a thing not installed here" }
func (needyPeer) OpenQueue(context.Context, Config) (Queue, error) {
	return nil, errors.New("a peer that lacks something was opened")
}

// TestRunWorkloadSkipsNeedy: a peer that lacks something ([Needy]) is not
// run, in this process or isolated; its result is skipped, saying what it
// lacks, and the report shows it so and names it among the incidents.
func TestRunWorkloadSkipsNeedy(t *testing.T) {
	w := W1()
	for _, isolate := range []bool{false, true} {
		opts := RunOptions{Reps: 2, Scale: 1e-9, Peers: []Peer{needyPeer{}, BtreePeer{}}}
		if isolate {
			opts.Isolate = func(ctx context.Context, w *Workload, p Peer, n int) Result {
				if p.Name() == "needy" {
					t.Errorf("Isolate was asked to run %s", p.Name())
				}
				return Result{Workload: w.ID, Peer: p.Name(), N: n, Status: StatusOK, Metrics: Metrics{"msgs/s": 1}}
			}
		}
		f := RunFile{Workload: w.ID, Reps: 2, Scale: 1e-9, N: w.MinN, Peers: []string{"needy", "btree"}}
		RunWorkload(t.Context(), w, opts, func(r Result) { f.Results = append(f.Results, r) })
		for _, r := range f.Results {
			switch {
			case r.Peer == "needy" && (r.Status != StatusSkipped || r.Error != "a thing not installed here"):
				t.Errorf("isolate %v: needy: %s (%s), want skipped with what it lacks", isolate, r.Status, r.Error)
			case r.Peer != "needy" && r.Status != StatusOK:
				t.Errorf("isolate %v: %s: %s (%s)", isolate, r.Peer, r.Status, r.Error)
			case r.Status.Failed():
				t.Errorf("isolate %v: %s counts as failed", isolate, r.Status)
			}
		}
		if len(f.Results) != 4 {
			t.Fatalf("isolate %v: %d results, want 4", isolate, len(f.Results))
		}
		if got := collect(f, "needy", "msgs/s").cell(Rate); got != "skipped" {
			t.Errorf("the needy peer's cell: %q, want skipped", got)
		}
		var b strings.Builder
		writeIncidents(&b, "##", []RunFile{f}, nil)
		if want := "- W1 needy: skipped: a thing not installed here\n"; strings.Count(b.String(), want) != 1 {
			t.Errorf("incidents:\n%s\nwant the line %q once", b.String(), want)
		}
	}
}
