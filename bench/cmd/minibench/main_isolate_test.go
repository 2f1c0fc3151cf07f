package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minibus-go/minibus/bench"
)

// TestIsolatedRuns runs workloads as the bench scripts do, one run in a
// child process of the workload's process, at the smallest size: D1 and D4
// are timed (their runs pass the child a count of 0), W1 counts messages.
// Each run must end ok with its figure and the process finish.
func TestIsolatedRuns(t *testing.T) {
	for _, c := range []struct{ workload, peer, key string }{
		{"D1", "minibus-always", "msgs/s"},
		{"D4", "minibus-none", "msgs/s"},
		{"W1", "btree", "msgs/s"},
	} {
		t.Run(c.workload, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, c.workload+".json")
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-workload", c.workload, "-peers", c.peer,
				"-reps", "1", "-scale", "1e-9", "-run-timeout", "1m", "-stall", "30s", "-dir", dir, "-out", out)
			cmd.Env = append(os.Environ(), asMinibench+"=1")
			output, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("minibench %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, output)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var rf bench.RunFile
			if err := json.Unmarshal(b, &rf); err != nil {
				t.Fatal(err)
			}
			if rf.Finished.IsZero() || len(rf.Results) != 1 {
				t.Fatalf("finished %v with %d results, want 1\n%s", rf.Finished, len(rf.Results), output)
			}
			r := rf.Results[0]
			if r.Status != bench.StatusOK || r.Peer != c.peer {
				t.Fatalf("%s: status %s (%s)\n%s", r.Peer, r.Status, r.Error, output)
			}
			// A figure, not a speed: under load a 100 ms window can see
			// no acknowledgement.
			if v, ok := r.Metrics[c.key]; !ok || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("%s = %v (present %v), want a figure", c.key, v, ok)
			}
		})
	}
}

// TestCheckChildCount: a timed workload's child takes the count 0 its
// parent passes; one that counts messages wants at least 1; no count is
// negative.
func TestCheckChildCount(t *testing.T) {
	for _, c := range []struct {
		workload string
		n        int
		ok       bool
	}{
		{"D1", 0, true}, {"D6", 0, true}, {"D1", -1, false},
		{"W1", 200, true}, {"W1", 0, false}, {"D7", 0, false}, {"D7", 1000, true},
	} {
		err := checkChildCount(bench.WorkloadByID(c.workload), c.n)
		if (err == nil) != c.ok {
			t.Errorf("%s -child-n %d: %v, want ok %v", c.workload, c.n, err, c.ok)
		}
	}
}

// TestFailedRuns: -check fails a stall, a timeout or an error, and
// passes figures, n/a, not built and a peer skipped for what it lacks.
func TestFailedRuns(t *testing.T) {
	ok := []bench.Status{bench.StatusOK, bench.StatusNA, bench.StatusNotBuilt, bench.StatusSkipped}
	f := bench.RunFile{Workload: "D1"}
	for i, s := range ok {
		f.Results = append(f.Results, bench.Result{Peer: string(s), Rep: i + 1, Status: s})
	}
	if err := failedRuns(f); err != nil {
		t.Fatalf("no run failed: %v", err)
	}
	for _, s := range []bench.Status{bench.StatusStall, bench.StatusTimeout, bench.StatusError} {
		g := f
		g.Results = append(slices.Clone(f.Results), bench.Result{Peer: "p", Rep: 2, Status: s, Error: "what went wrong"})
		err := failedRuns(g)
		if err == nil || !strings.Contains(err.Error(), "p rep 2: "+string(s)+": what went wrong") {
			t.Errorf("%s: %v, want an error naming the run", s, err)
		}
	}
}
