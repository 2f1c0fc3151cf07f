// Command wirebench measures minibus's AMQP endpoint: the AMQP layer
// against the Qpid Proton C example broker, end to end through
// azservicebus, the start of `minibus serve`, and the memory of idle
// connections (package wire says how). bench/amqp.sh builds the brokers
// and drives it; by hand:
//
//	wirebench -suite -minibus results/minibus -proton results/proton-broker -results results -out results/amqp.json
//	wirebench -report -in results/amqp.json -md RESULTS.md -command "bench/amqp.sh"
//	wirebench -child -spec '{"kind":"layer","broker":"minibus","credit":1000,"presettled":true,"n":50000}' -minibus results/minibus -results results
//	wirebench serve --addr 127.0.0.1:5672 --config amqp-config.json --cpuprofile server.pprof
//
// -suite runs every run of the plan (wire.Plan) in a child process of its
// own (-child), each child starting its broker, measuring and stopping it,
// and writes their records to -out. -report rewrites the AMQP section of
// -md from such a file, keeping the rest. serve is `minibus serve` in
// memory with a CPU profile (wire.Serve).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/minibus-go/minibus/bench"
	"github.com/minibus-go/minibus/bench/wire"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
		os.Exit(wire.Serve(os.Args[2:], os.Stdout, os.Stderr, stop))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "wirebench:", err)
		os.Exit(1)
	}
}

func run() error {
	suite := flag.Bool("suite", false, "run the whole plan, each run in a child process, and write -out")
	child := flag.Bool("child", false, "run the one run -spec and print its record")
	report := flag.Bool("report", false, "rewrite the AMQP section of -md from -in")
	spec := flag.String("spec", "", "-child: the run, as JSON")
	minibusBin := flag.String("minibus", "", "the built cmd/minibus")
	floorBin := flag.String("floor", "", "the built cmd/healthfloor: the floor of a start; empty: none")
	protonBin := flag.String("proton", "", "the built Proton example broker; empty: skipped")
	protonSkip := flag.String("proton-skip", "", "why the Proton broker is skipped (for the report)")
	protonVersion := flag.String("proton-version", "", "the Proton library's version (for the report)")
	results := flag.String("results", "results", "where runs put their files")
	out := flag.String("out", "", "-suite: the file of records")
	in := flag.String("in", "", "-report: the file of records")
	md := flag.String("md", "RESULTS.md", "-report: the markdown to rewrite")
	command := flag.String("command", "bench/amqp.sh", "-report: the command that made the records")
	rev := flag.String("rev", "", "-suite: the minibus commit")
	smoke := flag.Bool("smoke", false, "-suite: every run once at its smallest")
	reps := flag.Int("reps", 0, "-suite: repetitions (0: the scale's, 3 or 1 with -smoke)")
	runTimeout := flag.Duration("run-timeout", 5*time.Minute, "-suite: one child's limit")
	flag.Parse()

	switch {
	case *child:
		var s wire.Spec
		if err := json.Unmarshal([]byte(*spec), &s); err != nil {
			return fmt.Errorf("-spec: %w", err)
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer cancel()
		rec := wire.RunSpec(ctx, s, wire.Env{MinibusBin: *minibusBin, FloorBin: *floorBin, ProtonBin: *protonBin, SelfBin: self, Results: *results, Log: os.Stderr})
		return json.NewEncoder(os.Stdout).Encode(rec)
	case *suite:
		if *out == "" || *minibusBin == "" {
			return errors.New("-suite needs -out and -minibus")
		}
		return runSuite(*out, *minibusBin, *floorBin, *protonBin, *protonSkip, *protonVersion, *results, *rev, *smoke, *reps, *runTimeout)
	case *report:
		if *in == "" {
			return errors.New("-report needs -in")
		}
		return writeReport(*in, *md, *command)
	}
	flag.Usage()
	return errors.New("one of -suite, -child, -report or serve")
}

// runSuite runs the plan, each run in a child process of this binary.
func runSuite(out, minibusBin, floorBin, protonBin, protonSkip, protonVersion, results, rev string, smoke bool, reps int, runTimeout time.Duration) error {
	sc := wire.FullScale
	if smoke {
		sc = wire.SmokeScale
	}
	if reps > 0 {
		sc.Reps = reps
	}
	brokers := []string{wire.Minibus}
	if protonBin != "" {
		brokers = append(brokers, wire.Proton)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	f := wire.File{
		Date:          time.Now().UTC(),
		Rev:           rev,
		Machine:       bench.ThisMachine(),
		LoadBefore:    wire.LoadAvg(),
		Smoke:         smoke,
		ProtonSkip:    protonSkip,
		ProtonVersion: protonVersion,
		Versions:      wire.ClientVersions(),
	}
	plan := wire.Plan(sc, brokers)
	start := time.Now()
	for i, s := range plan {
		js, _ := json.Marshal(s)
		fmt.Fprintf(os.Stderr, "== %d/%d %s rep %d (%.0f s so far, load %s)\n", i+1, len(plan), s.Name(), s.Rep, time.Since(start).Seconds(), wire.LoadAvg())
		rec := runChild(self, string(js), s, minibusBin, floorBin, protonBin, results, runTimeout)
		if rec.Err != "" {
			fmt.Fprintf(os.Stderr, "   FAILED: %s\n", rec.Err)
		}
		f.Records = append(f.Records, rec)
	}
	f.LoadAfter = wire.LoadAvg()
	f.Seconds = time.Since(start).Seconds()
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return err
	}
	if n := f.Failed(); n > 0 {
		return fmt.Errorf("%d of %d runs failed (records in %s)", n, len(plan), out)
	}
	return nil
}

// runChild runs one spec in a child process; a child that fails to
// answer is a failed record.
func runChild(self, spec string, s wire.Spec, minibusBin, floorBin, protonBin, results string, timeout time.Duration) wire.Record {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "-child", "-spec", spec, "-minibus", minibusBin, "-floor", floorBin, "-proton", protonBin, "-results", results)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	err := cmd.Run()
	var rec wire.Record
	if jerr := json.Unmarshal(stdout.Bytes(), &rec); jerr != nil {
		msg := fmt.Sprintf("the child process gave no record: %v", jerr)
		if err != nil {
			msg = fmt.Sprintf("the child process failed: %v", err)
		}
		if ctx.Err() != nil {
			msg = fmt.Sprintf("the child process was stopped by the %s timeout", timeout)
		}
		return wire.Record{Spec: s, Err: msg, LoadAfter: wire.LoadAvg()}
	}
	return rec
}

// writeReport rewrites the AMQP section of md.
func writeReport(in, md, command string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var f wire.File
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	old, err := os.ReadFile(md)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var sb strings.Builder
	wire.WriteReport(&sb, f, command)
	outMD := bench.SpliceAMQP(string(old), strings.TrimSuffix(sb.String(), "\n"))
	return os.WriteFile(md, []byte(outMD), 0o644)
}
