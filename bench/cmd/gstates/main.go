// Command gstates reads a runtime/trace of a benchmark run and writes where
// each busy goroutine's time went: running, runnable (ready, waiting for a
// P to run on) and waiting, by the runtime's reason, with how long each
// wait for a P was. bench/PROFILE.md ("Waiting for a P") is made with it:
//
//	go run ./cmd/minibench -workload W1 -peers minibus -reps 1 -trace w1.trace -profile-phase run
//	go run ./cmd/gstates -n 200000 w1.trace
//
// -n is the number of messages the trace covers (0: no per-message
// figures); -top how many goroutines to show, the longest running first.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/minibus-go/minibus/bench"
)

func main() {
	n := flag.Int("n", 0, "the number of messages the trace covers")
	top := flag.Int("top", 4, "goroutines to show, the longest running first")
	flag.Parse()
	if flag.NArg() != 1 || *n < 0 || *top < 1 {
		fmt.Fprintln(os.Stderr, "usage: gstates [-n MESSAGES] [-top N] TRACE")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "gstates:", err)
		os.Exit(1)
	}
	defer f.Close()
	s, err := bench.GoroutineStates(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gstates:", err)
		os.Exit(1)
	}
	fmt.Print(s.Format(*top, *n))
}
