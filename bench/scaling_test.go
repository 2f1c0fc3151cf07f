package bench

import (
	"bytes"
	"image/png"
	"math"
	"strings"
	"testing"
	"time"
)

func init() { heapWarmth = 16 << 20 } // no need to warm a gigabyte in tests

// scalingCounts are the counts each scaling variable's run reports at its
// smallest size with its least work (MinOps), keyed by metric: what must
// have gone through, checked exactly. x is the size, m the work.
var scalingCounts = map[string]func(x, m int) Metrics{
	"depth": func(x, m int) Metrics { return Metrics{"received": float64(m)} },
	"fanout": func(x, m int) Metrics {
		all := max(min(m, m*fanoutDeliveries/x), 1)
		return Metrics{"all sent": float64(all), "all delivered": float64(all * x), "corr1 delivered": float64(m)}
	},
	"entities": func(x, m int) Metrics { return Metrics{"delivered": float64(m - m%hotQueues)} },
	"blocked": func(x, m int) Metrics {
		return Metrics{"distinct delivered": float64(m), "shared delivered": float64(m)}
	},
	"jump": func(x, m int) Metrics { return Metrics{"activated": float64(x)} },
}

// TestScalingTiny runs every scaling variable at its smallest size, with its
// least work, on minibus and the btree baseline, and checks how each run
// ended and what went through, never how fast.
func TestScalingTiny(t *testing.T) {
	for _, s := range Scalings() {
		t.Run(s.ID, func(t *testing.T) {
			x := s.Points[0]
			if s.Quick[0] != x {
				t.Errorf("quick sizes start at %d, full ones at %d", s.Quick[0], x)
			}
			w := s.Workload(x)
			var results []Result
			RunWorkload(t.Context(), w, RunOptions{Reps: 1, Scale: 1e-9, Peers: ScalingPeers()}, func(r Result) {
				results = append(results, r)
			})
			want := len(ScalingPeers())
			if s.MinibusOnly {
				want = 1
			}
			if len(results) != want {
				t.Fatalf("%d results, want %d", len(results), want)
			}
			counts := scalingCounts[s.ID](x, w.MinN)
			for _, r := range results {
				checkScalingResult(t, s, r, counts)
			}
		})
	}
}

// checkScalingResult checks that r ended well with counts and every figure
// of s's table, finite, and no message delivered twice.
func checkScalingResult(t *testing.T, s *Scaling, r Result, counts Metrics) {
	t.Helper()
	if r.Status != StatusOK {
		t.Errorf("%s: status %s (%s), want ok", r.Peer, r.Status, r.Error)
		return
	}
	for k, v := range counts {
		if got := r.Metrics[k]; got != v {
			t.Errorf("%s: %s = %v, want %v", r.Peer, k, got, v)
		}
	}
	for _, c := range s.Columns {
		v, ok := r.Metrics[c.Key]
		if !ok && r.Peer == "btree" && strings.HasPrefix(c.Key, "sql1 ") {
			continue // the baseline has no SQL filters
		}
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("%s: %s = %v (present %v)", r.Peer, c.Key, v, ok)
		}
	}
	if d := r.Metrics["dups"]; d != 0 {
		t.Errorf("%s: %v duplicate deliveries", r.Peer, d)
	}
}

func TestStridedTracker(t *testing.T) {
	tr := newStridedTracker(10, 4, 1) // 1, 5, 9
	if tr.n != 3 {
		t.Fatalf("n = %d, want 3", tr.n)
	}
	for _, i := range []int{1, 9, 5, 5} {
		if err := tr.see(newSmallBody(i)); err != nil {
			t.Fatal(err)
		}
	}
	if !tr.complete() || tr.dups.Load() != 1 {
		t.Fatalf("complete %v, dups %d", tr.complete(), tr.dups.Load())
	}
	for _, i := range []int{2, 13, 0} {
		if err := tr.see(newSmallBody(i)); err == nil {
			t.Errorf("index %d was accepted", i)
		}
	}
	if newStridedTracker(3, 4, 3).n != 0 {
		t.Error("a subscription past the last message expects some")
	}
}

func scalingFile(id string, x int, results ...Result) RunFile {
	f := fakeFile(id, results...)
	f.X = x
	return f
}

func TestWriteScalingReport(t *testing.T) {
	res := func(peer string, m Metrics) Result {
		return Result{Workload: "depth", Peer: peer, Rep: 1, N: 1000, Status: StatusOK, Metrics: m}
	}
	files := []RunFile{
		scalingFile("depth", 1000,
			res("minibus", Metrics{"send ns": 200, "recv ns": 400, "send/s": 5e6}),
			res("btree", Metrics{"send ns": 100, "recv ns": 100, "send/s": 1e7})),
		scalingFile("depth", 1_000_000,
			res("minibus", Metrics{"send ns": 400, "recv ns": 800, "send/s": 2.5e6}),
			res("btree", Metrics{"send ns": 200, "recv ns": 200, "send/s": 5e6})),
		scalingFile("fanout", 10,
			Result{Workload: "fanout", Peer: "btree", Rep: 1, Status: StatusOK, Metrics: Metrics{"all msgs/s": 1e6}}),
	}
	var b strings.Builder
	opts := ScalingReportOptions{Command: "bench/scaling.sh", Date: time.Unix(0, 0), Images: map[string]string{"depth": "scaling-depth.png"}}
	if err := WriteScalingReport(&b, files, opts); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"`bench/scaling.sh`",
		"![queue depth",
		"| 1,000 | minibus | 5.00M | 200 |",
		"| 1,000,000 | btree | 5.00M | 200 |",
		"- minibus send ns/op: 200 at 1,000 → 400 at 1,000,000, ×2.00 (log2 n grew ×2.00)",
		"| 10 | btree | 1.00M | n/a | n/a | n/a | n/a | n/a | n/a | 1 ok |",
		"## jump",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(md)
	}

	var img bytes.Buffer
	if err := WriteScalingPNG(&img, ScalingDepth(), files[:2]); err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(&img)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width < 1000 || cfg.Height < 500 {
		t.Errorf("PNG of %dx%d", cfg.Width, cfg.Height)
	}
}
