// Command cpusplit reads a CPU profile of a benchmark run and writes where
// the time went per message, as markdown tables: by kind of work (body
// copies, the collector, parking and waking, the store, ...) and by side
// (consumer, producer, the runtime's own goroutines). bench/PROFILE.md is
// made with it:
//
//	go run ./cmd/minibench -workload W1 -peers minibus -reps 1 -cpuprofile w1.prof -profile-phase run
//	go run ./cmd/cpusplit -n 200000 w1.prof
//
// -n is the number of messages the profile covers.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/google/pprof/profile"
	"github.com/minibus-go/minibus/bench"
)

func main() {
	n := flag.Int("n", 1, "the number of messages the profile covers")
	flag.Parse()
	if flag.NArg() != 1 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: cpusplit -n MESSAGES PROFILE")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *n); err != nil {
		fmt.Fprintln(os.Stderr, "cpusplit:", err)
		os.Exit(1)
	}
}

func run(path string, n int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return err
	}
	s, err := bench.SplitCPU(p)
	if err != nil {
		return err
	}
	return s.WriteMarkdown(os.Stdout, n)
}
