// Package bench measures minibus against other in-process brokers on the
// same machine, in the same process, with the same workloads.
//
// It is a module of its own (github.com/minibus-go/minibus/bench, with a
// replace of minibus by ../) so that minibus never depends on the brokers it
// is compared with.
//
// # Running
//
// From the repository root:
//
//	bench/run.sh                 # the full matrix, 3 repetitions: writes bench/RESULTS.md
//	BENCH_QUICK=1 bench/run.sh   # 1/100 of the counts, seconds instead of minutes
//
// run.sh runs cmd/minibench once per workload (W1 … W7), each process
// running every peer in turn for each repetition, then writes RESULTS.md
// from the JSON files the processes left in bench/results/. Its header
// lists the environment variables that shrink or filter a run.
//
// # Scaling
//
// bench/scaling.sh (or BENCH_SCALING=1 bench/run.sh) runs the scaling set
// and writes bench/SCALING.md with one PNG per variable beside it
// (scaling-depth.png, …): how the cost grows with one variable at a time,
// minibus beside the btree baseline where it applies. A [Scaling] is one
// variable (ScalingDepth, ScalingFanout, ScalingEntities, ScalingBlocked,
// ScalingJump, in s_*.go) with its sizes; each size runs in a process of its
// own (cmd/minibench -scaling ID -x N), as [Scaling.Workload], under the
// same runner as the matrix. Bodies are 32 bytes, and each measured phase
// runs after a GC with the collector off, so that a small size and a large
// one pay the same; see SCALING.md.
//
//	bench/scaling.sh                  # the full set, 5 repetitions: about 7 minutes on 2 cores
//	BENCH_QUICK=1 bench/scaling.sh    # the smaller sizes, 1/100 of the work: about 15 s
//
// The peers implement two more optional interfaces for it:
// [FilteredTopicPeer] (fan-out with filters) and [QueueSetPeer] (many
// queues in one broker).
//
// # Peers
//
// A [Peer] makes fresh broker instances; each adapter file
// (adapter_minibus.go, adapter_chan.go, adapter_btree.go,
// adapter_watermill.go, adapter_nats.go, adapter_goqite.go) says in its doc
// comment how it drives its broker. Sends are settled everywhere: Send
// returns once the broker accepted the message. Optional interfaces say what
// else a queue can do: [Scheduler], [Counter], [OffHeap]; a [TopicPeer] can
// fan out (W6).
//
// # Workloads
//
// Each workload (w_*.go) is a [Workload] whose Run takes a peer and a
// message count. [RunWorkload] repeats it over the peers under a per-run
// timeout and a stall watchdog (a run in which no message went through for
// a minute is cancelled and recorded as a stall), and [WriteReport] turns
// the results into markdown tables with medians, min–max and minibus/peer
// ratios.
//
// # Tests
//
// The tests move a few hundred messages through every adapter, run every
// workload on every peer at its smallest count and every scaling variable at
// its smallest size on minibus and the baseline; they check outcomes and
// counts, never timings. goleak checks that every broker shuts down without leaving a
// goroutine behind.
package bench
