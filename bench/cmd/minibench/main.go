// Command minibench runs one workload of the minibus benchmark matrix over
// every peer, or writes RESULTS.md from the files such runs left.
// bench/run.sh drives it; run it by hand for one workload:
//
//	go run ./cmd/minibench -workload W1 -reps 3 -out results/W1.json
//	go run ./cmd/minibench -report -in results -md RESULTS.md -command "..."
//
// Environment (flags win): BENCH_QUICK=1 runs 1/100 of the full counts;
// BENCH_SCALE sets the fraction; BENCH_REPS the repetitions; BENCH_PEERS a
// comma-separated list of peers; BENCH_RUN_TIMEOUT and BENCH_STALL the
// per-run limits (Go durations).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/minibus-go/minibus/bench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "minibench:", err)
		os.Exit(1)
	}
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func run() error {
	defScale := 1.0
	if env("BENCH_QUICK", "") == "1" {
		defScale = 0.01
	}
	if s := env("BENCH_SCALE", ""); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("BENCH_SCALE: %w", err)
		}
		defScale = v
	}
	defReps, err := strconv.Atoi(env("BENCH_REPS", "3"))
	if err != nil {
		return fmt.Errorf("BENCH_REPS: %w", err)
	}
	defTimeout, err := time.ParseDuration(env("BENCH_RUN_TIMEOUT", "5m"))
	if err != nil {
		return fmt.Errorf("BENCH_RUN_TIMEOUT: %w", err)
	}
	defStall, err := time.ParseDuration(env("BENCH_STALL", "60s"))
	if err != nil {
		return fmt.Errorf("BENCH_STALL: %w", err)
	}

	workload := flag.String("workload", "", "the workload to run: W1 … W7")
	reps := flag.Int("reps", defReps, "repetitions; each runs every peer in turn")
	scale := flag.Float64("scale", defScale, "fraction of the full message counts (BENCH_QUICK=1: 0.01)")
	peers := flag.String("peers", env("BENCH_PEERS", ""), "comma-separated peers to run (default all)")
	runTimeout := flag.Duration("run-timeout", defTimeout, "hard limit of one run")
	stall := flag.Duration("stall", defStall, "cancel a run in which no message went through for this long")
	out := flag.String("out", "", "write the results as JSON to this file after every run")
	rev := flag.String("minibus-rev", "", "the minibus revision to record")

	report := flag.Bool("report", false, "write the report from the JSON files in -in")
	in := flag.String("in", "results", "with -report: the folder of JSON files")
	md := flag.String("md", "RESULTS.md", "with -report: the markdown file to write")
	command := flag.String("command", "", "with -report: the command to name")
	missing := flag.String("missing", "", "with -report: semicolon-separated notes on workloads that left no file")
	flag.Parse()

	if *report {
		return writeReport(*in, *md, *command, *missing)
	}
	w := bench.WorkloadByID(*workload)
	if w == nil {
		return fmt.Errorf("-workload %q: want one of W1 … W7", *workload)
	}
	opts := bench.RunOptions{
		Reps:       *reps,
		Scale:      *scale,
		RunTimeout: *runTimeout,
		StallAfter: *stall,
		Log:        os.Stderr,
	}
	if *peers != "" {
		opts.Peers, err = selectPeers(*peers)
		if err != nil {
			return err
		}
	}
	names := []string{}
	for _, p := range opts.Peers {
		names = append(names, p.Name())
	}
	if opts.Peers == nil {
		for _, p := range bench.Peers() {
			names = append(names, p.Name())
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	f := bench.RunFile{
		Workload:   w.ID,
		Reps:       *reps,
		Scale:      *scale,
		N:          w.Count(*scale),
		Peers:      names,
		Machine:    bench.ThisMachine(),
		MinibusRev: *rev,
		Started:    time.Now().UTC(),
	}
	save := func() error {
		if *out == "" {
			return nil
		}
		return writeJSON(*out, f)
	}
	if err := save(); err != nil {
		return err
	}
	var saveErr error
	bench.RunWorkload(ctx, w, opts, func(r bench.Result) {
		f.Results = append(f.Results, r)
		if err := save(); err != nil && saveErr == nil {
			saveErr = err
		}
	})
	if saveErr != nil {
		return saveErr
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	f.Finished = time.Now().UTC()
	return save()
}

func selectPeers(list string) ([]bench.Peer, error) {
	var out []bench.Peer
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, p := range bench.Peers() {
			if p.Name() == name {
				out = append(out, p)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("no peer %q", name)
		}
	}
	return out, nil
}

// writeJSON writes v to path through a temporary file, so that a killed
// process leaves the last complete version.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func writeReport(in, md, command, missing string) error {
	paths, err := filepath.Glob(filepath.Join(in, "W*.json"))
	if err != nil {
		return err
	}
	var files []bench.RunFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var f bench.RunFile
		if err := json.Unmarshal(b, &f); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		files = append(files, f)
	}
	opts := bench.ReportOptions{Command: command, Date: time.Now()}
	for _, m := range strings.Split(missing, ";") {
		if m = strings.TrimSpace(m); m != "" {
			opts.Missing = append(opts.Missing, m)
		}
	}
	out, err := os.Create(md)
	if err != nil {
		return err
	}
	if err := bench.WriteReport(out, files, opts); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
