// Command tailtrace finds what W4's latency tail is made of: it runs W4
// (one message per 100 µs to a consumer waiting in Receive) on each peer
// under runtime/trace and tells how many of the slowest 1% of messages
// were in flight while the garbage collector ran, with a histogram; how
// long the consumer ran a wake-up and how often it stalled 1 ms or more
// (its thread off the CPU, bench/PROFILE.md); and with -excerpt the trace
// around the slowest message.
//
//	go run ./cmd/tailtrace -peers minibus,btree,chan -reps 3
//	GOGC=off go run ./cmd/tailtrace        # the same without collections
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/minibus-go/minibus/bench"
)

func main() {
	peers := flag.String("peers", "minibus,btree,chan", "comma-separated peers")
	n := flag.Int("n", 5000, "messages a run (W4's count)")
	reps := flag.Int("reps", 3, "runs of each peer, in turn")
	excerpt := flag.Bool("excerpt", false, "print the trace around each run's slowest message")
	flag.Parse()
	byName := map[string]bench.Peer{}
	for _, p := range bench.Peers() {
		byName[p.Name()] = p
	}
	for rep := range *reps {
		for _, name := range strings.Split(*peers, ",") {
			p, ok := byName[name]
			if !ok {
				fmt.Fprintf(os.Stderr, "tailtrace: no peer %q\n", name)
				os.Exit(2)
			}
			r, err := bench.TraceTail(context.Background(), p, *n)
			if err != nil {
				fmt.Fprintf(os.Stderr, "tailtrace: %s: %v\n", name, err)
				os.Exit(1)
			}
			fmt.Printf("rep %d %s", rep+1, r)
			if *excerpt {
				fmt.Println(strings.Join(r.Excerpt, "\n"))
			}
		}
	}
}
