package minibus

import "github.com/minibus-go/minibus/internal/wal"

// Hooks for the black-box tests of this folder: what no public call shows.

// DuplicateHistory returns how many MessageIDs q remembers for duplicate
// detection (SEMANTICS DD1), as of now.
func DuplicateHistory(q *Queue) int { return q.e.DuplicateHistory() }

// WithFS puts a durable namespace's files on fs, a wal.MemFS in tests.
func WithFS(fs wal.FS) Option { return func(o *options) { o.store.fs = fs } }

// WithSegmentSize sets the size of the log's segments.
func WithSegmentSize(n int64) Option { return func(o *options) { o.store.segment = n } }

// WithMaxRecordSize lowers the log's record limit (1 GiB) to n bytes.
func WithMaxRecordSize(n int) Option { return func(o *options) { o.store.maxRecord = n } }

// WithCompactAfter sets the least the log grows between two snapshots.
func WithCompactAfter(n int64) Option { return func(o *options) { o.store.compact = n } }

// CatchUpSnapshots takes the snapshot the snapshotter is due to take, if
// any, and returns when it is written.
func CatchUpSnapshots(ns *Namespace) { ns.b.CatchUpSnapshots() }

// Snapshot takes a snapshot of a durable namespace now.
func Snapshot(ns *Namespace) { _ = ns.b.Snapshot() }
