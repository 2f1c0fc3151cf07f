// Command minibench runs one workload of the minibus benchmark matrix over
// every peer, or one of the durable set over the durable peers, or one
// point of the scaling set over minibus and the btree baseline, or writes
// RESULTS.md (its durable section apart) or SCALING.md (and its PNGs) from
// the files such runs left. bench/run.sh, bench/durable.sh and
// bench/scaling.sh drive it; run it by hand for one workload or one point:
//
//	go run ./cmd/minibench -workload W1 -reps 3 -out results/W1.json
//	go run ./cmd/minibench -report -in results -md RESULTS.md -command "..."
//	go run ./cmd/minibench -workload D2 -dir /var/tmp -out results/D2.json
//	go run ./cmd/minibench -durable-report -in results -md RESULTS.md -command "..."
//	go run ./cmd/minibench -scaling depth -x 1000000 -out results/S-depth-1000000.json
//	go run ./cmd/minibench -scaling-report -in results -md SCALING.md -command "..."
//	go run ./cmd/minibench -workload W6 -peers minibus -cpuprofile w6.prof
//	go run ./cmd/minibench -workload W3 -peers minibus -reps 1 -cpuprofile drain.prof -profile-phase drain
//	go run ./cmd/minibench -workload W1 -peers minibus -reps 1 -trace w1.trace -profile-phase run
//
// -report rewrites RESULTS.md but keeps its durable and AMQP sections; -durable-report
// rewrites the durable section only (appending it if missing).
//
// Environment (flags win): BENCH_QUICK=1 runs 1/100 of the full counts
// (and durations); BENCH_SMOKE=1 sets -smoke, -check, one repetition, a
// run timeout of 1m, a stall of 30s and the smallest scale, so that each
// workload runs its MinN messages or for its MinDuration: the figures
// mean nothing, the run shows that the command works; BENCH_SCALE sets
// the fraction; BENCH_REPS the repetitions; BENCH_CHECK=1 sets -check;
// BENCH_PEERS a comma-separated list of peers; BENCH_DIR where
// the durable peers make their directories (default the system's temporary
// directory); BENCH_RUN_TIMEOUT and BENCH_STALL the per-run limits (Go
// durations).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
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

// defaults are the flag defaults the environment sets.
type defaults struct {
	quick      bool
	smoke      bool
	check      bool
	scale      float64
	reps       int
	runTimeout time.Duration
	stall      time.Duration
}

// smokeScale is BENCH_SMOKE's scale: small enough that every workload
// runs its MinN messages or for its MinDuration.
const smokeScale = 1e-9

// smokeWarmth is the heap a scaling phase warms under -smoke (see
// [bench.RunOptions.HeapWarmth]).
const smokeWarmth = 16 << 20

// envDefaults reads BENCH_QUICK, BENCH_SMOKE, BENCH_CHECK, BENCH_SCALE,
// BENCH_REPS, BENCH_RUN_TIMEOUT and BENCH_STALL.
func envDefaults() (defaults, error) {
	d := defaults{scale: 1.0}
	reps, runTimeout, stall := "3", "5m", "60s"
	if env("BENCH_QUICK", "") == "1" {
		d.scale, d.quick = 0.01, true
	}
	if env("BENCH_SMOKE", "") == "1" {
		d.scale, d.quick, d.smoke, d.check = smokeScale, true, true, true
		reps, runTimeout, stall = "1", "1m", "30s" // a smoke run's runs take a second or less
	}
	if env("BENCH_CHECK", "") == "1" {
		d.check = true
	}
	if s := env("BENCH_SCALE", ""); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return d, fmt.Errorf("BENCH_SCALE: %w", err)
		}
		d.scale = v
	}
	var err error
	if d.reps, err = strconv.Atoi(env("BENCH_REPS", reps)); err != nil {
		return d, fmt.Errorf("BENCH_REPS: %w", err)
	}
	if d.runTimeout, err = time.ParseDuration(env("BENCH_RUN_TIMEOUT", runTimeout)); err != nil {
		return d, fmt.Errorf("BENCH_RUN_TIMEOUT: %w", err)
	}
	if d.stall, err = time.ParseDuration(env("BENCH_STALL", stall)); err != nil {
		return d, fmt.Errorf("BENCH_STALL: %w", err)
	}
	return d, nil
}

// flags are the command line.
type flags struct {
	workload, peers, out, rev string
	dir                       string
	reps                      int
	scale                     float64
	runTimeout, stall         time.Duration
	report, durableReport     bool
	in, md, command, missing  string
	scaling                   string
	x                         int
	scalingReport             bool
	points                    string
	quick                     bool
	smoke                     bool
	check                     bool
	cpuprofile, profilePhase  string
	trace                     string
	// inProcess runs every peer in this process; childPeer and childN make
	// this process one run of another minibench (isolate).
	inProcess bool
	childPeer string
	childN    int
}

func parseFlags(def defaults) flags {
	var f flags
	flag.StringVar(&f.workload, "workload", "", "the workload to run: W1 … W7, D1 … D7")
	flag.IntVar(&f.reps, "reps", def.reps, "repetitions; each runs every peer in turn")
	flag.Float64Var(&f.scale, "scale", def.scale, "fraction of the full message counts (BENCH_QUICK=1: 0.01)")
	flag.StringVar(&f.peers, "peers", env("BENCH_PEERS", ""), "comma-separated peers to run (default all; for -scaling minibus,btree)")
	flag.DurationVar(&f.runTimeout, "run-timeout", def.runTimeout, "hard limit of one run")
	flag.DurationVar(&f.stall, "stall", def.stall, "cancel a run in which no message went through for this long")
	flag.StringVar(&f.out, "out", "", "write the results as JSON to this file after every run")
	flag.StringVar(&f.rev, "minibus-rev", "", "the minibus revision to record")
	flag.StringVar(&f.dir, "dir", env("BENCH_DIR", ""), "where durable peers make their directories (default the system's temporary directory)")

	flag.BoolVar(&f.report, "report", false, "write the report from the W*.json files in -in, keeping the durable section of -md")
	flag.BoolVar(&f.durableReport, "durable-report", false, "write the durable section of -md from the D*.json files in -in")
	flag.StringVar(&f.in, "in", "results", "with -report, -durable-report or -scaling-report: the folder of JSON files")
	flag.StringVar(&f.md, "md", "RESULTS.md", "with -report, -durable-report or -scaling-report: the markdown file to write")
	flag.StringVar(&f.command, "command", "", "with -report, -durable-report or -scaling-report: the command to name")
	flag.StringVar(&f.missing, "missing", "", "with -report, -durable-report or -scaling-report: semicolon-separated notes on runs that left no file")

	flag.StringVar(&f.scaling, "scaling", "", "run one point of a scaling variable: depth, fanout, entities, blocked or jump (with -x)")
	flag.IntVar(&f.x, "x", 0, "with -scaling: the size of the point")
	flag.BoolVar(&f.scalingReport, "scaling-report", false, "write SCALING.md (-md) and the PNGs beside it from the S-*.json files in -in")
	flag.StringVar(&f.points, "points", "", "print the sizes of a scaling variable, one a line, and exit")
	flag.BoolVar(&f.quick, "quick", def.quick, "with -points: the sizes of a quick run (BENCH_QUICK=1 or BENCH_SMOKE=1)")
	flag.BoolVar(&f.smoke, "smoke", def.smoke, "a run that measures nothing (BENCH_SMOKE=1): with -points the smallest size only; scaling phases warm 16 MiB of heap, not 1 GiB")
	flag.BoolVar(&f.check, "check", def.check, "exit with an error if a run stalled, timed out or failed (BENCH_CHECK=1 or BENCH_SMOKE=1); a skipped peer is no failure")
	flag.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the runs to this file (with -peers minibus, of minibus only)")
	flag.StringVar(&f.trace, "trace", "", "write a runtime/trace of the runs to this file (read it with cmd/gstates or go tool trace)")
	flag.StringVar(&f.profilePhase, "profile-phase", "", "with -cpuprofile or -trace: capture only the first run's measured part of this name (run, enqueue, drain)")
	flag.BoolVar(&f.inProcess, "in-process", false, "run every peer in this process (default: each run of a workload in a process of its own; -cpuprofile and -trace imply it)")
	flag.StringVar(&f.childPeer, "child-peer", "", "internal: do one run of -workload on this peer and print its result as JSON")
	flag.IntVar(&f.childN, "child-n", 0, "internal: with -child-peer, the run's message count (0 for a timed workload, D1 … D6)")
	flag.Parse()
	return f
}

func run() error {
	def, err := envDefaults()
	if err != nil {
		return err
	}
	f := parseFlags(def)
	switch {
	case f.report:
		return writeReport(f.in, f.md, f.command, f.missing)
	case f.durableReport:
		return writeDurableReport(f.in, f.md, f.command, f.missing)
	case f.scalingReport:
		return writeScalingReport(f.in, f.md, f.command, f.missing)
	case f.points != "":
		return printPoints(f.points, f.quick, f.smoke)
	}
	w, err := f.selectWorkload()
	if err != nil {
		return err
	}
	opts := bench.RunOptions{
		Reps:       f.reps,
		Scale:      f.scale,
		RunTimeout: f.runTimeout,
		StallAfter: f.stall,
		Log:        os.Stderr,
		Dir:        f.dir,
	}
	if f.smoke {
		opts.HeapWarmth = smokeWarmth
	}
	if f.childPeer != "" {
		return runChild(w, f, opts)
	}
	if f.scaling != "" {
		opts.Peers = bench.ScalingPeers()
	}
	if f.peers != "" {
		if opts.Peers, err = selectPeers(f.peers); err != nil {
			return err
		}
	}
	names := []string{}
	for _, p := range w.PeersFor(opts) {
		names = append(names, p.Name())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rf := bench.RunFile{
		Workload:   w.ID,
		X:          f.x,
		Reps:       f.reps,
		Scale:      f.scale,
		N:          w.Count(f.scale),
		Peers:      names,
		Machine:    bench.ThisMachine(),
		MinibusRev: f.rev,
		Started:    time.Now().UTC(),
	}
	if w.Peers != nil {
		rf.Store = bench.DescribeStoreDir(f.dir)
	}
	if f.cpuprofile != "" && f.trace != "" {
		return errors.New("-cpuprofile and -trace: one at a time (each would show the other's cost)")
	}
	if f.cpuprofile != "" {
		stop, err := startCapture(f.cpuprofile, f.profilePhase, &opts, pprof.StartCPUProfile, pprof.StopCPUProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if f.trace != "" {
		stop, err := startCapture(f.trace, f.profilePhase, &opts, trace.Start, trace.Stop)
		if err != nil {
			return err
		}
		defer stop()
	}
	if !f.inProcess && f.cpuprofile == "" && f.trace == "" && f.scaling == "" {
		opts.Isolate = isolate(f)
	}
	return runAndSave(ctx, w, opts, rf, f.out, f.check)
}

// isolate does each run in a child process, this program again with
// -child-peer (see [bench.RunOptions.Isolate]).
func isolate(f flags) func(ctx context.Context, w *bench.Workload, p bench.Peer, n int) bench.Result {
	return func(ctx context.Context, w *bench.Workload, p bench.Peer, n int) bench.Result {
		fail := func(err error) bench.Result {
			return bench.Result{Workload: w.ID, Peer: p.Name(), N: n, Status: bench.StatusError, Error: err.Error()}
		}
		exe, err := os.Executable()
		if err != nil {
			return fail(fmt.Errorf("finding this program to run a run in: %w", err))
		}
		timeout := f.runTimeout
		if timeout <= 0 {
			timeout = 5 * time.Minute
		}
		ctx, cancel := context.WithTimeout(ctx, timeout+2*time.Minute) // the run's own limit, its grace, and a start
		defer cancel()
		args := []string{"-workload", w.ID, "-child-peer", p.Name(), "-child-n", strconv.Itoa(n),
			"-scale", strconv.FormatFloat(f.scale, 'g', -1, 64), "-run-timeout", f.runTimeout.String(),
			"-stall", f.stall.String(), "-dir", f.dir, "-smoke=" + strconv.FormatBool(f.smoke)}
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fail(fmt.Errorf("the run's process: %w", err))
		}
		var r bench.Result
		if err := json.Unmarshal(out, &r); err != nil {
			return fail(fmt.Errorf("the run's process printed no result: %w", err))
		}
		return r
	}
}

// runChild does the one run of w that -child-peer and -child-n ask for
// and prints its result as JSON.
func runChild(w *bench.Workload, f flags, opts bench.RunOptions) error {
	peers, err := selectPeers(f.childPeer)
	if err != nil {
		return err
	}
	if len(peers) != 1 {
		return fmt.Errorf("-child-peer %q: want one peer", f.childPeer)
	}
	if err := checkChildCount(w, f.childN); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return json.NewEncoder(os.Stdout).Encode(bench.RunOnce(ctx, w, peers[0], f.childN, opts))
}

// checkChildCount checks the count a parent passed with -child-n: the one
// [bench.Workload.CountFor] gave it, at least 1 for a workload that counts
// messages; for a timed one (D1–D6) the count is 0 and not used.
func checkChildCount(w *bench.Workload, n int) error {
	if n < 0 || (n == 0 && w.Duration == 0) {
		return fmt.Errorf("-workload %s -child-n %d: want a count of at least 1 (%s counts messages)", w.ID, n, w.ID)
	}
	return nil
}

// startCapture writes a CPU profile or a trace (start and end) to path:
// of everything from now on, or, with a phase, of the first run's part of
// that name alone (see [bench.RunOptions.OnPhase]). stop ends it, if it is
// still on, and closes the file.
func startCapture(path, phase string, opts *bench.RunOptions, start func(io.Writer) error, end func()) (stop func(), err error) {
	pf, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	on, done := false, false
	finish := func() { // ends the capture if it is on: it covers one part only
		mu.Lock()
		defer mu.Unlock()
		if on {
			end()
			on, done = false, true
		}
	}
	stop = func() {
		finish()
		pf.Close()
	}
	if phase == "" {
		on = true
		return stop, start(pf)
	}
	opts.OnPhase = func(workload, peer, name string) {
		switch {
		case name == phase:
			mu.Lock()
			defer mu.Unlock()
			if !on && !done {
				on = start(pf) == nil
			}
		case name == "":
			finish()
		}
	}
	return stop, nil
}

// selectWorkload is the workload of -workload, or the point of -scaling
// and -x.
func (f flags) selectWorkload() (*bench.Workload, error) {
	if f.scaling == "" {
		w := bench.WorkloadByID(f.workload)
		if w == nil {
			return nil, fmt.Errorf("-workload %q: want one of W1 … W7, D1 … D7", f.workload)
		}
		return w, nil
	}
	s := bench.ScalingByID(f.scaling)
	if s == nil {
		return nil, fmt.Errorf("-scaling %q: want one of depth, fanout, entities, blocked, jump", f.scaling)
	}
	if f.x < 1 {
		return nil, fmt.Errorf("-scaling %s: -x %d: want a size of at least 1", f.scaling, f.x)
	}
	return s.Workload(f.x), nil
}

// runAndSave runs w as opts say, saving f with every result to out. With
// check, a run that failed ([bench.Status.Failed]) makes it return an
// error once all have run.
func runAndSave(ctx context.Context, w *bench.Workload, opts bench.RunOptions, f bench.RunFile, out string, check bool) error {
	save := func() error {
		if out == "" {
			return nil
		}
		return writeJSON(out, f)
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
	if err := save(); err != nil {
		return err
	}
	if check {
		return failedRuns(f)
	}
	return nil
}

// failedRuns is an error naming the runs of f that failed, or nil.
func failedRuns(f bench.RunFile) error {
	var failed []string
	for _, r := range f.Results {
		if r.Status.Failed() {
			failed = append(failed, fmt.Sprintf("%s rep %d: %s: %s", r.Peer, r.Rep, r.Status, r.Error))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("-check: %s: %d of %d runs failed: %s", f.Workload, len(failed), len(f.Results), strings.Join(failed, "; "))
}

// printPoints prints the sizes of scaling variable id: all, the quick
// ones, or with smoke the smallest.
func printPoints(id string, quick, smoke bool) error {
	s := bench.ScalingByID(id)
	if s == nil {
		return fmt.Errorf("-points %q: want one of depth, fanout, entities, blocked, jump", id)
	}
	pts := s.Points
	if quick {
		pts = s.Quick
	}
	if smoke {
		pts = s.Quick[:1]
	}
	for _, x := range pts {
		fmt.Println(x)
	}
	return nil
}

func selectPeers(list string) ([]bench.Peer, error) {
	var out []bench.Peer
	for _, name := range strings.Split(list, ",") {
		p := bench.PeerByName(strings.TrimSpace(name))
		if p == nil {
			return nil, fmt.Errorf("no peer %q", name)
		}
		out = append(out, p)
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

// writeReport writes md from the W*.json files in in, keeping the durable
// and AMQP sections md has.
func writeReport(in, md, command, missing string) error {
	files, err := readRunFiles(in, "W*.json")
	if err != nil {
		return err
	}
	keep, err := readMarkdown(md)
	if err != nil {
		return err
	}
	opts := bench.ReportOptions{Command: command, Date: time.Now(), Missing: splitMissing(missing)}
	var b strings.Builder
	if err := bench.WriteReport(&b, files, opts); err != nil {
		return err
	}
	out := b.String()
	if section := bench.DurableSection(keep); section != "" {
		out = bench.SpliceDurable(out, section)
	}
	if section := bench.AMQPSection(keep); section != "" {
		out = bench.SpliceAMQP(out, section)
	}
	return writeFile(md, func(w io.Writer) error {
		_, err := io.WriteString(w, out)
		return err
	})
}

// writeDurableReport rewrites the durable section of md (appending it if
// missing) from the D*.json files in in.
func writeDurableReport(in, md, command, missing string) error {
	files, err := readRunFiles(in, "D*.json")
	if err != nil {
		return err
	}
	old, err := readMarkdown(md)
	if err != nil {
		return err
	}
	opts := bench.ReportOptions{Command: command, Date: time.Now(), Missing: splitMissing(missing)}
	var b strings.Builder
	if err := bench.WriteDurableReport(&b, files, opts); err != nil {
		return err
	}
	out := bench.SpliceDurable(old, strings.TrimSuffix(b.String(), "\n"))
	return writeFile(md, func(w io.Writer) error {
		_, err := io.WriteString(w, out)
		return err
	})
}

// readMarkdown reads md, or returns "" if it does not exist.
func readMarkdown(md string) (string, error) {
	b, err := os.ReadFile(md)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return string(b), err
}

// readRunFiles reads the run files in that match pattern.
func readRunFiles(in, pattern string) ([]bench.RunFile, error) {
	paths, err := filepath.Glob(filepath.Join(in, pattern))
	if err != nil {
		return nil, err
	}
	var files []bench.RunFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var f bench.RunFile
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		files = append(files, f)
	}
	return files, nil
}

// splitMissing splits the -missing notes.
func splitMissing(missing string) []string {
	var out []string
	for _, m := range strings.Split(missing, ";") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// writeScalingReport writes md and, beside it, one PNG per scaling
// variable with results.
func writeScalingReport(in, md, command, missing string) error {
	files, err := readRunFiles(in, "S-*.json")
	if err != nil {
		return err
	}
	opts := bench.ScalingReportOptions{Command: command, Date: time.Now(), Missing: splitMissing(missing), Images: map[string]string{}}
	bySet := map[string][]bench.RunFile{}
	for _, f := range files {
		bySet[f.Workload] = append(bySet[f.Workload], f)
	}
	for _, s := range bench.Scalings() {
		if len(bySet[s.ID]) == 0 {
			continue
		}
		name := bench.ScalingImageName(s.ID)
		if err := writePNG(filepath.Join(filepath.Dir(md), name), s, bySet[s.ID]); err != nil {
			return err
		}
		opts.Images[s.ID] = name
	}
	return writeFile(md, func(w io.Writer) error { return bench.WriteScalingReport(w, files, opts) })
}

func writePNG(path string, s *bench.Scaling, files []bench.RunFile) error {
	return writeFile(path, func(w io.Writer) error { return bench.WriteScalingPNG(w, s, files) })
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
