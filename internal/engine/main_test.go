package engine

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// init sets this package's rapid default to 30 checks (rapid's own is
// 100) for TestJournalReplaysTheState and TestJournalReplaysTheStateAtTies,
// a second or two each under -race; CI runs them at 100 (.ci/run:
// -rapid.checks=100). The command line (-rapid.checks, parsed later) and
// RAPID_CHECKS still win.
func init() {
	if os.Getenv("RAPID_CHECKS") != "" {
		return
	}
	if f := flag.Lookup("rapid.checks"); f != nil {
		_ = f.Value.Set("30")
	}
}
