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
//   - model_regression_test.go: the smallest tests for the broker bugs the
//     model found on the way, each citing its SEMANTICS rule: fixed ones,
//     which guard the fixes, and open ones, which fail until they are fixed
//     (internal/modeltest steps around those).
//   - stress_test.go: T2, concurrent stress under -race with a Jepsen-style
//     ledger (lost, duplicated, unexpected, completed twice).
//   - fuzz_test.go: T4, native fuzz targets (names, property maps); FuzzModel
//     (below) is T1 under the coverage-guided fuzzer.
//   - close_test.go: I16, Close during heavy use; T3, a seeded simulation in
//     a testing/synctest bubble on the real clock.
//
// The default run (`go test -race ./...`) keeps the whole suite under a
// minute on two cores: TestModel runs 200 checks of about 50 steps (see
// init below). Long soaks:
//
//	go test -run 'TestModel$' -rapid.checks=20000 -rapid.steps=200 -timeout 2h .
//	go test -run 'TestModel$' -rapid.seed=<seed> -rapid.v .   # replay a seed
//	go test -run '^$' -fuzz 'FuzzModel$' -fuzztime 30m .
//	go test -run '^$' -fuzz 'FuzzEntityNames$' -fuzztime 10m .
//	go test -run '^$' -fuzz 'FuzzMessageProperties$' -fuzztime 10m .
//	go test -race -run 'TestStress$' -stress.duration=1m -stress.seed=<seed> .
//
// A failing rapid run prints its seed and writes testdata/rapid/TestModel/…;
// plain `go test` replays the saved cases.

import (
	"flag"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/minibus-go/minibus/internal/modeltest"
	"pgregory.net/rapid"
)

// init sets this package's rapid defaults: 200 checks of about 50 steps
// (rapid's own are 100 and 30). The command line (-rapid.checks,
// -rapid.steps, parsed later) and RAPID_CHECKS / RAPID_STEPS still win.
func init() {
	for flagName, env := range map[string]string{"rapid.checks": "RAPID_CHECKS", "rapid.steps": "RAPID_STEPS"} {
		if os.Getenv(env) != "" {
			continue
		}
		if f := flag.Lookup(flagName); f != nil {
			_ = f.Value.Set(map[string]string{"rapid.checks": "200", "rapid.steps": "50"}[flagName])
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
	var totals modeltest.Totals
	rapid.Check(t, func(t *rapid.T) {
		totals.Add(modeltest.Run(t))
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
