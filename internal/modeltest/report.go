package modeltest

// What the state machine did: per case, and over every case of a run.

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// Run runs one rapid case of the state machine on t: a namespace on a mock
// clock and a fresh reference model, a setup of queues, a topic and
// subscriptions, then random steps (t.Repeat), each compared with the model
// and every check run before and after it. It fails t at the first
// disagreement; otherwise it returns what the case did.
func Run(t *rapid.T) Report {
	h, _ := newMachine(nil, 0)
	defer h.close()
	h.run(t)
	return h.report()
}

// RunDurable is Run on a durable namespace that open opens on an in-memory
// file system (internal/wal's MemFS), with one more action: a crash, a
// power cut followed by an Open, after which the reopened namespace must
// hold exactly what the model says (actions_crash.go).
func RunDurable(t *rapid.T, open Opener) Report {
	h, err := newMachine(open, uint64(Between(t, "fsSeed", 0, 1<<16)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer h.close()
	h.run(t)
	return h.report()
}

// Report is what one case of the state machine did: the actions run, what
// the broker answered, the ledger and the rare paths hit.
type Report struct {
	ops    map[string]int // actions run, by name
	tally  map[string]int // what the broker answered, by outcome
	ledger map[string]int // items accepted, and their ends
	hits   sometimes
}

// Steps is the number of actions the case ran.
func (r Report) Steps() int {
	n := 0
	for _, v := range r.ops {
		n += v
	}
	return n
}

func (h *machine) report() Report {
	ledger := map[string]int{"accepted": len(h.m.items)}
	for _, why := range h.m.term {
		ledger[why]++
	}
	return Report{ops: h.ops, tally: h.tally, ledger: ledger, hits: h.m.hits}
}

// Totals adds up, over every rapid check of a run, the rare paths hit, the
// operations tried, the broker's answers and the ledger. The zero value is
// ready to use; it is safe for concurrent use.
type Totals struct {
	mu     sync.Mutex
	hits   sometimes
	ops    map[string]int
	tally  map[string]int
	checks int
	ledger map[string]int
}

// Add counts the report of one check.
func (m *Totals) Add(r Report) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hits.add(r.hits)
	m.checks++
	if m.ops == nil {
		m.ops, m.tally, m.ledger = map[string]int{}, map[string]int{}, map[string]int{}
	}
	for k, v := range r.ops {
		m.ops[k] += v
	}
	for k, v := range r.tally {
		m.tally[k] += v
	}
	for k, v := range r.ledger {
		m.ledger[k] += v
	}
}

// Checks is the number of checks added.
func (m *Totals) Checks() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checks
}

// Log logs the totals on tb: the checks and the operations by name, the
// broker's answers by outcome, the ledger (items accepted and their ends)
// and the rare paths hit.
func (m *Totals) Log(tb testing.TB) {
	tb.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int
	for _, v := range m.ops {
		n += v
	}
	tb.Logf("%d checks, %d operations: %v", m.checks, n, sortedCounts(m.ops))
	tb.Logf("outcomes: %v", sortedCounts(m.tally))
	tb.Logf("ledger: %v", sortedCounts(m.ledger))
	tb.Logf("rare paths: %+v", m.hits)
}

// Crashes is the number of crashes the checks added simulated.
func (m *Totals) Crashes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops["crash"]
}

// Missed names, in a fixed order, the rare paths that no check hit: each
// one means the generators no longer reach it.
func (m *Totals) Missed() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	v := reflect.ValueOf(m.hits)
	for i := range v.NumField() {
		if v.Field(i).Int() == 0 {
			out = append(out, v.Type().Field(i).Name)
		}
	}
	return out
}

func sortedCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d, ", k, m[k])
	}
	return strings.TrimSuffix(b.String(), ", ")
}
