// Package stress holds minibus's concurrent stress suites (its tests only):
// many goroutines against one namespace under -race, with a Jepsen-style
// ledger of every message (TestStress, TestStressFaults) and
// administration beside traffic, in memory and durable (TestStressAdmin,
// TestStressAdminDurable). They run in CI at their default size; longer:
//
//	go test -race -run 'TestStress$' ./stress -stress.duration=1m
package stress
