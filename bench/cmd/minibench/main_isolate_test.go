package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minibus-go/minibus/bench"
)

// TestIsolatedRuns runs workloads as the bench scripts do, one run in a
// child process of the workload's process, at the smallest size: D1 and D4
// are timed (their runs pass the child a count of 0), W1 counts messages.
// Each run must end ok with its figures and the process finish.
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
			if v := r.Metrics[c.key]; !(v > 0) {
				t.Fatalf("%s = %v, want a positive figure", c.key, v)
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
