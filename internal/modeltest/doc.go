// Package modeltest is the reference model and the state-machine harness of
// the root package's model-based test: TestModel, FuzzModel and
// TestModelFiltersAgree in model_test.go of github.com/minibus-go/minibus.
// It is a package for tests only.
//
// The reference model (model.go, entities.go, send.go, fanout.go,
// forward.go, receive.go, sessions.go, settle.go, time.go, crash.go,
// invariants.go, filter.go, clone.go) is SEMANTICS.md in executable form: plain maps and
// slices, O(n) scans, no timers and no indexes. It knows nothing of the
// broker but the public types it returns, and it never calls it.
//
// The harness (harness.go, compare.go, check.go, guard.go, draw.go,
// draw_props.go and the actions*.go files) is a pgregory.net/rapid state
// machine. It runs random operations on queues, topics, subscriptions and
// rules, sends, schedules, cancels, receives in both modes and from
// dead-letter and transfer dead-letter queues, every settlement with valid,
// stale and forged lock tokens, deferral, peeks, property updates and
// boundary-biased clock jumps against a broker on a mock clock and against
// the model side by side. It covers sessions (session-enabled queues and
// subscriptions, AcceptSession and AcceptNextSession, blocked or not,
// session receives, settlements, state, renewal, lock expiry, Close,
// ListSessions), duplicate detection (repeated MessageIDs across sends, in
// one batch, in schedules, at window ends, through forwards) and
// auto-forwarding (ForwardTo and ForwardDeadLetteredMessagesTo on creation
// and by update, chains, loops to the hop limit, transfer dead-letter
// queues). It compares every answer field by field, every count, list,
// session list and rule, and checks invariants I1–I8 and I10–I15 after
// every step (I9, duplicate detection, shows in the comparisons). A ledger
// proves that every accepted message is in exactly one place or has
// exactly one documented end.
//
// Where the broker's order is its own (events of different entities at one
// instant: noteTie in forward.go, jump in harness.go), the harness steps
// around it and says so in the totals. guard.go keeps forwarding loops finite.
//
// A durable namespace gets one more action: a crash (actions_crash.go,
// crash.go), a power cut of the in-memory file system it is on and an Open
// at the same instant, after which every lock has ended with its delivery
// counted (L6), every session is free, the old receivers are gone, and
// every count and message of the reopened namespace must be as the model
// says. A crash at which two lock ends would forward is held back: Open
// ends locks in an order of its own bookkeeping.
//
// [Run] runs one rapid case and returns its [Report]; [RunDurable] one on
// a durable namespace that its [Opener] opens; [Totals] adds the
// reports of a run up, logs them and names the rare paths (lock expiry,
// dead-lettering, activation, idle deletion, session lock expiry,
// duplicates, forwards, the hop limit, …) that no case reached.
// [FiltersAgree] pins the model's filters and actions against the broker's,
// one message and one rule at a time. The root's other tests share a few of
// its pieces: [Pick] and [Between] (unbiased rapid draws), [PropsEqual],
// [ValidName] and [MessageSize].
//
// # Running
//
// The root's default run (`go test -race ./...`) runs TestModel with 50
// checks of about 50 steps, which the root's model_test.go sets as its
// rapid defaults; -rapid.checks and -rapid.steps, or RAPID_CHECKS and
// RAPID_STEPS, still win. CI (.ci/run) runs it with 200 checks as well.
// Long soaks, from the repository root:
//
//	go test -run 'TestModel$' -rapid.checks=20000 -rapid.steps=200 -timeout 2h .
//	go test -run 'TestModel$' -rapid.seed=<seed> -rapid.v .   # replay a seed
//	go test -run '^$' -fuzz 'FuzzModel$' -fuzztime 30m .
//	go test -run 'TestModelDurable$' -model.crashes=100000 -timeout 3h .
//
// A failing rapid run prints its seed and writes testdata/rapid/TestModel/…
// in the root; plain `go test` replays the saved cases. A run of fewer than
// 100 checks does not require every rare path.
package modeltest
