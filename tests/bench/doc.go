// Package bench holds the benchmarks of minibus's hot paths (its tests
// only), each against a baseline in the same run (a buffered channel, a
// namespace without the feature): sends, receives and settlements,
// scheduling and clock jumps, topics, sessions, duplicate detection,
// forwarding, the Processor, WaitIdle, observers and durable sends. Run
// them from this folder with
//
//	go test -run '^$' -bench . -benchmem ./bench
//
// and compare runs with benchstat. The comparisons with other brokers and
// the workloads W1–W8 are the bench module at the repository's root.
package bench
