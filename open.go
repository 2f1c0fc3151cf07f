package minibus

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/minibus-go/minibus/internal/engine"
	"github.com/minibus-go/minibus/internal/wal"
)

// SyncMode says when a durable namespace's change counts as stored: when
// the call that made it returns. See [Open] and the README's Durability
// section.
type SyncMode int

const (
	// SyncAlways is the default: a call returns once its change is on disk
	// (fsynced). Calls made together share one fsync (group commit). An
	// acknowledged change survives a crash of the process or of the machine.
	SyncAlways SyncMode = iota
	// SyncBatched: a call returns once its change is written to the log
	// file; the log is fsynced at least every SyncInterval (see
	// [WithSyncInterval]). A change survives a crash of the process; a power
	// cut can lose about the last interval.
	SyncBatched
	// SyncNone: a call returns once its change is written; the log is
	// fsynced only when a segment fills and at snapshots. A change survives
	// a crash of the process, not a power cut.
	SyncNone
)

func (m SyncMode) String() string {
	switch m {
	case SyncAlways:
		return "SyncAlways"
	case SyncBatched:
		return "SyncBatched"
	case SyncNone:
		return "SyncNone"
	}
	return fmt.Sprintf("SyncMode(%d)", int(m))
}

// DefaultSyncInterval is how often a SyncBatched namespace fsyncs its log at
// least.
const DefaultSyncInterval = 10 * time.Millisecond

// storeOptions are the options of [Open].
type storeOptions struct {
	sync     SyncMode
	interval time.Duration
	// fs and segment are for tests (export_test.go): a file system that can
	// crash, and small segments.
	fs      wal.FS
	segment int64
	compact int64
	// maxRecord lowers the log's record limit (wal.MaxRecordSize), so that
	// a test reaches it with small calls.
	maxRecord int
}

// WithSync sets when a durable namespace's calls return; the default is
// SyncAlways. [NewNamespace] ignores it.
func WithSync(mode SyncMode) Option {
	return func(o *options) { o.store.sync = mode }
}

// WithSyncInterval sets the longest a SyncBatched namespace leaves a written
// change unsynced; the default is DefaultSyncInterval. [NewNamespace] and
// the other modes ignore it.
func WithSyncInterval(d time.Duration) Option {
	return func(o *options) { o.store.interval = d }
}

// defaultCompactAfter is the least the log grows between two snapshots: a
// segment.
const defaultCompactAfter = wal.DefaultSegmentSize

// Open returns a durable namespace: entities, messages, their states and
// delivery counts, session state and duplicate-detection history live in
// dir (created if missing) and are recovered by the next Open. Locks are
// not kept: a lock open at a crash ended then (SEMANTICS L6 applies at
// Open), and the catch-up runs at the clock's now, so that what expired or
// became due while the process was down happens at once, as after a jump
// of the clock. Only one namespace may hold dir at a time: a second Open of
// the same dir is ErrInvalidArgument, and so is a dir that names a file (or
// lies under one). A dir the file system fails to create, read or lock (no
// permission, a read-only or full disk, an I/O error) is ErrStoreFailed,
// with the system's reason. A damaged directory (a missing log segment,
// wherever it is; a damaged record that was fsynced, or that records after
// it follow) is ErrCorrupt, and nothing in it is changed; a torn last
// record, what a crash leaves, is cut off, and a damaged record that the
// last snapshot holds is skipped, each with a warning in the log.
//
// A call returns once its change is as durable as the [SyncMode] promises
// (SyncAlways by default), and a message becomes receivable, or visible to
// a peek, only then: an acknowledged send is never lost and its sequence
// number never reused, and an acknowledged completion never comes back. A
// failed write or sync makes that call and every later one fail with
// ErrStoreFailed; close the namespace and open it again. Each call is one
// record of the log, of at most 1 GiB: a call whose record would be larger
// (a batch of messages adding up to more) is refused with
// ErrMessageTooLarge and changes nothing (SEMANTICS V3).
func Open(dir string, opts ...Option) (*Namespace, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	s := o.store
	culprit := fmt.Sprintf("namespace directory %q", dir)
	switch {
	case dir == "":
		return nil, errorf(ErrInvalidArgument, "namespace directory", "empty path")
	case s.sync < SyncAlways || s.sync > SyncNone:
		return nil, errorf(ErrInvalidArgument, culprit, "unknown %v", s.sync)
	case s.interval < 0:
		return nil, errorf(ErrInvalidArgument, culprit, "negative SyncInterval %v", s.interval)
	}
	if s.interval == 0 {
		s.interval = DefaultSyncInterval
	}
	// SyncMode converts to the log's as it is (TestEnumsMirror).
	log, rec, err := wal.Open(dir, wal.Options{FS: s.fs, Sync: wal.SyncMode(s.sync), Interval: s.interval, SegmentSize: s.segment, MaxRecordSize: s.maxRecord})
	var dirErr *wal.DirError
	switch {
	case errors.Is(err, wal.ErrLocked):
		return nil, errorf(ErrInvalidArgument, culprit, "another namespace holds it")
	case errors.Is(err, wal.ErrCorrupt):
		return nil, errorf(ErrCorrupt, culprit, "%v", err)
	case errors.As(err, &dirErr) && errors.Is(dirErr.Err, syscall.ENOTDIR):
		// dir, or a folder on its path, is a file: no directory can be there.
		return nil, errorf(ErrInvalidArgument, culprit, "not a directory")
	case errors.As(err, &dirErr):
		return nil, errorf(ErrStoreFailed, culprit, "cannot %s it: %v", dirErr.Op, dirErr.Err)
	case err != nil: // the file system failed while Open read the log
		return nil, errorf(ErrStoreFailed, culprit, "%v", err)
	}
	if rec.Repaired {
		o.logger.Warn("minibus: repaired the torn last record of the log", "dir", dir)
	}
	if rec.Skipped > 0 {
		o.logger.Warn("minibus: skipped damaged records of the log that the snapshot holds", "dir", dir, "records", rec.Skipped)
	}
	b := engine.New(engine.Options{Clock: o.clock, Logger: o.logger, Observer: o.observer(), Faults: o.faults()})
	compact := s.compact
	if compact == 0 {
		compact = defaultCompactAfter
	}
	err = b.Recover(engine.Recovery{Journal: log, Snapshot: rec.Snapshot, Replay: rec.Replay, CompactAfter: compact, MaxRecord: log.MaxRecordSize()})
	rec.Release() // the engine keeps nothing of the snapshot's bytes
	if err != nil {
		b.Close()
		_ = log.Close()
		if errors.Is(err, ErrStoreFailed) {
			return nil, err
		}
		return nil, errorf(ErrCorrupt, culprit, "%v", err)
	}
	return &Namespace{b: b, log: log}, nil
}
