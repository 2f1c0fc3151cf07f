package minibus_test

// The reliability suite of the root package:
//
//   - model_test.go: T1, a model-based state machine (pgregory.net/rapid)
//     that runs random operations against the broker and a plain reference
//     model side by side, sessions, duplicate detection and auto-forwarding
//     included, compares every answer, and checks invariants I1–I8 and
//     I10–I15 after every step (I9, duplicate detection, shows in the
//     comparisons). The reference model and the harness are in
//     internal/modeltest.
//   - TestModelDurable (below): T1 on a durable namespace on an in-memory
//     file system, with crashes: after each, the reopened namespace must
//     hold exactly what the model says.
//   - model_regression_test.go: the smallest tests for the broker bugs the
//     model found on the way, each citing its SEMANTICS rule: fixed ones,
//     which guard the fixes, and open ones, which fail until they are fixed
//     and run only with -model.open (internal/modeltest steps around those).
//   - tests/stress (the tests module): T2, concurrent stress under -race
//     with a Jepsen-style ledger (lost, duplicated, unexpected, completed
//     twice).
//   - fuzz_test.go: T4, native fuzz targets (names, property maps); FuzzModel
//     (below) is T1 under the coverage-guided fuzzer.
//   - broker_test.go: I16, Close during heavy use; T3, a seeded simulation in
//     a testing/synctest bubble on the real clock.
//
// The default run (`go test -race ./...`) is a check, small: TestModel
// runs 50 checks of about 50 steps (see init below). CI (.ci/run) runs it
// at 200 checks as well; longer soaks:
//
//	go test -race -run 'TestModel$' -rapid.checks=200 -rapid.steps=50 .   # as CI

//	go test -run 'TestModel$' -rapid.checks=20000 -rapid.steps=200 -timeout 2h .
//	go test -run 'TestModel$' -rapid.seed=<seed> -rapid.v .   # replay a seed
//	go test -run 'TestModelDurable$' -model.crashes=100000 -timeout 3h .
//	go test -run '^$' -fuzz 'FuzzModel$' -fuzztime 30m .
//	go test -run '^$' -fuzz 'FuzzEntityNames$' -fuzztime 10m .
//	go test -run '^$' -fuzz 'FuzzMessageProperties$' -fuzztime 10m .
//	cd tests && go test -race -run 'TestStress$' ./stress -stress.duration=1m -stress.seed=<seed>
//
// A failing rapid run prints its seed and writes testdata/rapid/TestModel/…;
// plain `go test` replays the saved cases.

import (
	"flag"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/modeltest"
	"github.com/minibus-go/minibus/internal/wal"
	"pgregory.net/rapid"
)

// init sets this package's rapid defaults: 50 checks of about 50 steps
// (rapid's own are 100 and 30), a few seconds under -race; TestModel and
// TestModelDurable run fewer (modelChecks, durableChecks). The command line
// (-rapid.checks, -rapid.steps, parsed later) and RAPID_CHECKS /
// RAPID_STEPS still win.
func init() {
	for flagName, env := range map[string]string{"rapid.checks": "RAPID_CHECKS", "rapid.steps": "RAPID_STEPS"} {
		if os.Getenv(env) != "" {
			continue
		}
		if f := flag.Lookup(flagName); f != nil {
			_ = f.Value.Set(map[string]string{"rapid.checks": "50", "rapid.steps": "50"}[flagName])
		}
	}
}

// TestModel is the model-based test (T1): random operations on queues,
// topics, subscriptions and rules, sends, schedules, cancels, receives in
// both modes and from dead-letter and transfer dead-letter queues, every
// settlement with valid, stale and forged lock tokens, deferral, peeks,
// property updates, sessions (accepting, receiving, settling, state,
// renewal, lock expiry, closing), duplicate detection, auto-forwarding and
// boundary-biased clock jumps, each compared with the reference model. It
// fails too if the run never hit one of the rare paths.
func TestModel(t *testing.T) {
	// Beside the kill tests, once the tests that are not parallel are done
	// (TestModelDurable sets -rapid.checks for itself while it runs; no
	// other parallel test calls rapid).
	t.Parallel()
	var totals modeltest.Totals
	withRapidChecks(modelChecks, func() {
		rapid.Check(t, func(t *rapid.T) {
			totals.Add(modeltest.Run(t))
		})
	})
	if t.Failed() {
		return
	}
	totals.Log(t)
	if totals.Checks() < 100 {
		return // a short run (-rapid.checks) proves nothing about rare paths
	}
	for _, name := range totals.Missed() {
		t.Errorf("no run hit %s: the generators no longer reach it", name)
	}
}

// modelChecks is TestModel's default number of checks: about two seconds
// under -race on two cores. CI runs 200 (.ci/run: -rapid.checks=200), which
// also asserts that the rare paths were reached; 20 is below the 100 that
// assertion needs.
const modelChecks = 20

// FuzzModel is TestModel's state machine driven by the coverage-guided
// fuzzer: go test -run '^$' -fuzz 'FuzzModel$' -fuzztime 30m . rapid reads
// the input as 64-bit words and the harness's unbiased draws take one word
// per bit, so a step costs about a kilobyte of input: the seeds are 256 KB
// (room for some 250 steps; rapid stops after about 50 on average), and an
// input that runs out is skipped.
func FuzzModel(f *testing.F) {
	f.Add([]byte("minibus: send, receive, advance, settle, peek, defer"))
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 2026))
		b := make([]byte, 256<<10)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(rapid.MakeFuzz(func(t *rapid.T) {
		t.Logf("%d steps", modeltest.Run(t).Steps())
	}))
}

// TestModelFiltersAgree checks the model's filters and actions against the
// broker's, one message and one rule at a time (SEMANTICS R1–R5): a copy in
// the subscription exactly when the model's rule matches, changed as the
// model's action says, and a FilterEvaluationException dead-letter copy
// exactly when the model's evaluation fails. TestModel then uses the same
// rules on whole histories.
func TestModelFiltersAgree(t *testing.T) {
	rapid.Check(t, modeltest.FiltersAgree)
}

// TestModelDurable is TestModel on a durable namespace (minibus.Open with
// SyncAlways) on an in-memory file system, with one more action: a crash,
// which loses what the file system had not synced, closes the old
// namespace and opens the directory again at the same instant. After each
// crash every count, list and message of the reopened namespace must be as
// the model says: nothing acknowledged lost, nothing completed back, every
// lock ended with its delivery counted (L6), every session free. The
// default run is small (durableChecks); -rapid.checks overrides it, and
// -model.crashes runs checks until that many crashes were simulated:
//
//	go test -run 'TestModelDurable$' -model.crashes=100000 -timeout 3h .
func TestModelDurable(t *testing.T) {
	var totals modeltest.Totals
	prop := func(t *rapid.T) { totals.Add(modeltest.RunDurable(t, openDurableModel)) }
	withRapidChecks(durableChecks, func() { rapid.Check(t, prop) })
	for !t.Failed() && totals.Crashes() < *modelCrashes {
		withRapidChecks(1000, func() { rapid.Check(t, prop) })
	}
	if t.Failed() {
		return
	}
	totals.Log(t)
	t.Logf("%d crashes simulated", totals.Crashes())
	if totals.Checks() >= durableChecks && totals.Crashes() == 0 {
		t.Error("no check crashed: the generators no longer reach the crash action")
	}
}

// durableChecks is TestModelDurable's default number of checks: a second
// or two under -race on two cores (about 7 crashes a check). CI runs 20
// (.ci/run: -rapid.checks=20).
const durableChecks = 8

var modelCrashes = flag.Int("model.crashes", 0, "TestModelDurable: go on with more checks until this many crashes were simulated (a soak)")

// withRapidChecks runs f with -rapid.checks at n, unless the command line
// or RAPID_CHECKS set it.
func withRapidChecks(n int, f func()) {
	set := os.Getenv("RAPID_CHECKS") != ""
	flag.Visit(func(fl *flag.Flag) { set = set || fl.Name == "rapid.checks" })
	if fl := flag.Lookup("rapid.checks"); fl != nil && !set {
		old := fl.Value.String()
		_ = fl.Value.Set(strconv.Itoa(n))
		defer func() { _ = fl.Value.Set(old) }()
	}
	f()
}

// openDurableModel opens TestModelDurable's namespace on fs, in segments
// of 64 KiB: a crash copies the file system and Open scans the last
// segment's tail, which larger segments make slow under -race (1 MiB took
// four times as long as this), and histories roll segments this way too.
func openDurableModel(fs wal.FS, c clock.Clock) (*minibus.Namespace, error) {
	return minibus.Open("/model", minibus.WithClock(c), minibus.WithFS(fs), minibus.WithSync(minibus.SyncAlways), minibus.WithSegmentSize(64<<10))
}
