// Package wire measures minibus's AMQP endpoint (package server, the
// command `minibus serve`) from outside, as its users meet it: over TCP on
// loopback, each broker a process of its own, driven by the real Go
// clients. bench/amqp.sh builds the brokers and runs cmd/wirebench, which
// writes the "AMQP endpoint" section of bench/RESULTS.md.
//
// # What it measures
//
//   - The AMQP layer against the Qpid Proton C example broker ([RunLayer]):
//     one go-amqp program, two connections, one sending 1 KiB messages to a
//     queue and one receiving them at a link credit of 1, 100 or 1000,
//     sends pre-settled or confirmed (each waiting for its disposition, as
//     the SDKs send). minibus's receiver is in receive-and-delete
//     (snd-settle-mode settled), so both brokers deliver settled messages
//     and forget them. A flood gives the throughput; a paced phase after
//     it, one message a millisecond, the latency (the flood's latency is
//     mostly queueing, which the brokers' flow control decides). The CPU
//     per message of the broker process and of the client is read from
//     /proc and getrusage.
//   - Idle connections ([RunIdle]): a thousand connections, each with a
//     sender and a receiver link that exchanged a message, then idle: the
//     broker's RSS delta per connection, and any refused.
//   - End to end through azservicebus ([RunSDK]): batches of 100 sent,
//     ReceiveMessages of 100 in peek-lock, every message completed in turn
//     or from 8 goroutines; msgs/s, and the CPU per message of the server
//     process beside the client's; a profiled run of each writes CPU
//     profiles of both sides (the server's through [Serve], the same
//     server.Listen as `minibus serve` plus a profile).
//   - The start ([RunStart]): exec of `minibus serve` to the first 200 of
//     GET /health, polled every millisecond.
//
// # How runs are made
//
// [Plan] lists the runs; cmd/wirebench -suite runs each in a child process
// of its own (-child), which starts its broker as a process of its own
// ([BrokerCommand.Start]: minibus with an emulator Config.json holding
// the queue; Proton creates it on first use), measures, and stops it. A
// repetition runs every layer configuration on both brokers one after the
// other, alternating which goes first, so that the ratios compare runs
// made under the same conditions; the machine's load averages are kept
// with every run, since a shared machine lowers every figure.
// [WriteReport] turns the records into markdown with medians, min–max,
// ratios and the targets.
package wire
