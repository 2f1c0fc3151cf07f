// Package bench measures minibus against other in-process brokers on the
// same machine, with the same workloads, each run in a fresh process.
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
//	BENCH_SMOKE=1 bench/run.sh   # each run once at its smallest, into a temporary directory
//
// run.sh runs cmd/minibench once per workload (W1 … W7), each process
// running every peer in turn for each repetition, then writes RESULTS.md
// from the JSON files the processes left in bench/results/. Its header
// lists the environment variables that shrink or filter a run.
//
// BENCH_SMOKE=1 (bench/lib.sh) runs any of the three scripts through
// every workload, peer and process once at the smallest size, writes the
// report to a temporary directory (or BENCH_OUT) and fails if a run or a
// process failed: .ci/run does so for all three, to show that the
// commands work; its figures mean nothing. A peer that needs something
// missing here ([Needy]: goqite without cgo) is skipped with the reason.
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
// # Durable
//
// bench/durable.sh (or BENCH_DURABLE=1 bench/run.sh) runs the durable set
// and rewrites the durable section of RESULTS.md, leaving the matrix above
// it as it is (and run.sh keeps the durable section). D1–D6 send 1 KiB
// messages to a store on disk for a fixed time ([Workload.Duration]) from
// 1, 4 and 64 producers, one message a call or 32 ([BatchSender]), each
// producer waiting for every acknowledgement: minibus in each sync mode
// ([MinibusDurablePeer]) beside NATS JetStream's file store
// ([NATSFilePeer]) and goqite on a SQLite file ([GoqiteFilePeer]), each in
// its most durable setting and its default ([DurablePeers]). D7 builds a
// minibus store of a million messages and times minibus.Open of it: clean,
// with the page cache dropped, after a crash, and empty after the traffic.
// The report checks the figures against the targets of the durable store.
// Stores go to fresh directories under BENCH_DIR (default the system's
// temporary directory): it must be a disk, not a tmpfs, which the report
// names.
//
//	bench/durable.sh                  # the full set, 3 repetitions: about 8 minutes on 2 cores
//	BENCH_QUICK=1 bench/durable.sh    # 1/100 of the time and counts: about 15 s
//
// # AMQP endpoint
//
// bench/amqp.sh measures the AMQP endpoint (package server, `minibus
// serve`) from outside, over loopback, and rewrites the AMQP section of
// RESULTS.md, which run.sh and durable.sh keep: the AMQP layer against the
// Qpid Proton C example broker (built by the script from Debian's
// packages into bench/results/, or skipped with the reason), both driven
// by the same go-amqp program; memory per idle connection; azservicebus
// end to end with the server's and the client's CPU per message; and the
// start of `minibus serve` to /health 200. Package bench/wire and its
// command bench/wire/cmd/wirebench say how.
//
//	bench/amqp.sh                   # the whole set, 3 repetitions: about 5 minutes on 2 cores
//	BENCH_SMOKE=1 bench/amqp.sh     # each run once at its smallest: does the command work? (CI)
//
// # Profiles
//
// cmd/minibench -cpuprofile writes a CPU profile of its runs, and with
// -profile-phase of one measured part of the first run only (W1 and W6:
// run; W3: enqueue or drain, [RunOptions.OnPhase]); cmd/cpusplit sorts
// such a profile into where the time goes per message (body copies, the
// collector, parking and waking, the store, ...) and whose it is
// (consumer, producer, the runtime's own goroutines), as in PROFILE.md.
// cmd/tailtrace runs W4 under runtime/trace and reports what the slowest
// messages were waiting for ([TraceTail]). cmd/minibench -trace writes a
// runtime/trace in the same way as -cpuprofile, and cmd/gstates tells from
// it where each goroutine's time went: running, waiting for a P, blocked
// and why ([GoroutineStates]), as in PROFILE.md ("Waiting for a P").
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
// The tests move a few hundred messages through every adapter (the durable
// ones on disk, single sends and batches, checking that the queue holds
// every message acknowledged), run every workload of the matrix on every
// peer at its smallest count, D2, D5 and D7 of the durable set for the
// shortest time or at the smallest count, and every scaling variable at its
// smallest size on minibus and the baseline; cmd/minibench's run D1, D4
// and W1 through the command, each run in a child process as the scripts
// do. They check outcomes and counts, never timings. goleak checks that every broker shuts down without leaving a
// goroutine behind.
package bench
