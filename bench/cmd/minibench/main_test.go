package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// asMinibench, set to 1 in its environment, makes this test binary
// minibench itself: the tests start it so to go through the command as
// bench/run.sh and bench/durable.sh do, its child processes included
// (os.Executable is this binary, and they inherit the variable).
const asMinibench = "MINIBENCH_TEST_AS_MAIN"

// TestMain runs minibench's main when asMinibench is set, and otherwise
// the tests, failing the package if any leaves a goroutine behind.
func TestMain(m *testing.M) {
	if os.Getenv(asMinibench) == "1" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
