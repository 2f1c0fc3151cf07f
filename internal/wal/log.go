package wal

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// SyncMode tells when a record counts as durable: when [Log.Wait] returns.
type SyncMode int

const (
	// SyncAlways: Wait returns once the record is written and fsynced. One
	// fsync serves every record appended before it (group commit).
	SyncAlways SyncMode = iota
	// SyncBatched: Wait returns once the record is written to the file
	// (it survives the process, not a power failure); the log is fsynced
	// at least every Options.Interval while it has unsynced records.
	SyncBatched
	// SyncNone: Wait returns once the record is written; the log is
	// fsynced only when a segment is sealed, by Snapshot and by Open.
	SyncNone
	// NumSyncModes counts the modes; the root package's TestEnumsMirror
	// (enums_internal_test.go) holds the public SyncMode to them.
	NumSyncModes
)

// String names the mode.
func (m SyncMode) String() string {
	switch m {
	case SyncAlways:
		return "always"
	case SyncBatched:
		return "batched"
	case SyncNone:
		return "none"
	}
	return fmt.Sprintf("SyncMode(%d)", int(m))
}

// Options configure [Open].
type Options struct {
	// FS is the file system; nil means OSFS().
	FS FS
	// Sync is when records are durable; the default is SyncAlways.
	Sync SyncMode
	// Interval is the longest a written record stays unsynced in
	// SyncBatched mode; 0 means 10ms.
	Interval time.Duration
	// Clock times Interval; nil means the real clock.
	Clock clock.Clock
	// SegmentSize is the size a segment file is preallocated to; 0 means
	// 64 MiB. It is rounded up to a multiple of 8 and must be at least 256.
	SegmentSize int64
	// MaxRecordSize is the largest record Append takes; 0 means
	// [MaxRecordSize], which is also the most it may be. Tests lower it to
	// reach the limit with small records.
	MaxRecordSize int
}

// Default option values.
const (
	DefaultInterval    = 10 * time.Millisecond
	DefaultSegmentSize = 64 << 20
	minSegmentSize     = 256
)

func (o Options) withDefaults() (Options, error) {
	if o.FS == nil {
		o.FS = OSFS()
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	o.SegmentSize = padded(o.SegmentSize)
	if o.MaxRecordSize == 0 {
		o.MaxRecordSize = MaxRecordSize
	}
	switch {
	case o.Sync < SyncAlways || o.Sync > SyncNone:
		return o, fmt.Errorf("wal: unknown sync mode %d", int(o.Sync))
	case o.Interval < 0:
		return o, fmt.Errorf("wal: negative interval %v", o.Interval)
	case o.SegmentSize < minSegmentSize:
		return o, fmt.Errorf("wal: segment size %d is below %d", o.SegmentSize, minSegmentSize)
	case o.MaxRecordSize < 0 || o.MaxRecordSize > MaxRecordSize:
		return o, fmt.Errorf("wal: record limit %d is outside 1..%d", o.MaxRecordSize, MaxRecordSize)
	}
	return o, nil
}

// Log is an open write-ahead log. Its methods are safe for concurrent use.
type Log struct {
	o      Options
	dir    string
	unlock func() error

	mu        sync.Mutex
	cond      sync.Cond
	buf       []byte // frames appended and not yet taken by the flusher
	ends      []int  // the end of each frame in buf
	spareBuf  []byte
	spareEnds []int
	bufFirst  uint64 // LSN of the first frame in buf
	last      uint64 // last LSN handed out
	written   uint64 // last LSN written to its segment
	synced    uint64 // last LSN fsynced
	syncReq   uint64 // Snapshot wants everything up to this fsynced
	sleepers  int    // Waits asleep on cond
	syncing   int    // fsyncs under way outside writeMu (syncBehind)
	err       error  // sticky: ErrFailed wrapping the cause
	closing   bool   // Close was called: nothing more is buffered
	closed    bool   // the flusher is gone

	kick chan struct{} // cap 1: there is something to flush
	quit chan struct{} // closed by Close
	done chan struct{} // closed when the flusher returns

	// writeMu is held by whoever writes: the flusher goroutine, or a Wait
	// that writes what is buffered itself rather than hand it over (a
	// handover costs two goroutine switches). It guards what follows.
	writeMu    sync.Mutex
	stopped    bool // the flusher made its last flush: nobody writes any more
	seg        segment
	timer      *clock.Timer
	timerArmed bool

	// syncMu is held by an fsync outside writeMu (syncBehind); roll takes
	// it before it seals the segment, so that it waits for that fsync and
	// never closes the file under it.
	syncMu sync.Mutex

	segMu sync.Mutex
	segs  []segHeader // the segments on disk, oldest first

	// man is the manifest on disk; roll, under writeMu, and Close, once
	// the flusher has stopped, write it.
	man manifest

	snapMu  sync.Mutex // serializes Snapshot
	snapLSN uint64

	closeOnce sync.Once
	closeErr  error
}

// Recovered is what [Open] found in the directory.
type Recovered struct {
	// Snapshot is the newest valid snapshot's contents; nil if none. It
	// may be mapped from its file: call Release once it is no longer read,
	// and keep no part of it (copy what you keep).
	Snapshot []byte
	// Release frees Snapshot.
	Release func()
	// SnapshotLSN is the LSN the snapshot covers: records up to and
	// including it are in it.
	SnapshotLSN uint64
	// LastLSN is the last record recovered (SnapshotLSN if no record
	// follows the snapshot); the first Append returns LastLSN+1.
	LastLSN uint64
	// Replay calls fn for every record after the snapshot up to LastLSN,
	// in order, and stops at fn's first error, which it returns. rec is
	// valid only during the call: fn copies what it keeps. Replay reads
	// the segments again (it may run while the Log takes appends): call it
	// before the first Snapshot of the Log. It returns ErrCorrupt if a
	// record changed since Open.
	Replay func(fn func(lsn uint64, rec []byte) error) error
	// Repaired tells that a torn last record was cut off.
	Repaired bool
	// Skipped counts the damaged records that Open left behind because the
	// snapshot holds what they held: skipped where the records after them
	// could still be found, or, at the end of the log, a damaged or
	// missing run of them (counted as one).
	Skipped int
}

// Open opens the log in dir, creating dir if needed, and recovers it: it
// locks dir ([ErrLocked] if another Log holds it; a [*DirError] if dir is
// a file or the file system fails to read, create or lock it), loads the
// newest valid snapshot, checks every record after it and cuts off a torn
// last record. Damage anywhere else is [ErrCorrupt], and then nothing on
// disk is changed. The Log's flusher goroutine runs until Close.
func Open(dir string, o Options) (*Log, *Recovered, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	if err := prepareDir(o.FS, dir); err != nil {
		return nil, nil, err
	}
	unlock, err := o.FS.Lock(dir)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, nil, err
		}
		return nil, nil, &DirError{Op: "lock", Dir: dir, Err: err}
	}
	l, rec, err := open(dir, o)
	if err != nil {
		_ = unlock()
		return nil, nil, err
	}
	l.unlock = unlock
	go l.run()
	return l, rec, nil
}

// newLog returns a Log whose last record is last, writing to seg.
func newLog(dir string, o Options, last uint64, seg segment, segs []segHeader, snapLSN uint64) *Log {
	l := &Log{
		o: o, dir: dir, seg: seg, segs: segs, snapLSN: snapLSN,
		last: last, written: last, synced: last, bufFirst: last + 1,
		kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
	}
	l.cond.L = &l.mu
	return l
}

// Append adds rec to the log and returns its LSN. It copies rec and never
// waits for I/O: the flusher writes it; [Log.Wait] tells when it is
// durable. Records wait in memory until the flusher takes them: only the
// callers' Waits bound that backlog. Records of a failed or closed Log are
// dropped (Wait reports why).
//
// A record longer than [Log.MaxRecordSize] makes the log failed, as a
// failed write does (a record's LSN is its position: the log cannot go on
// without it); the caller checks the size first ([ErrRecordTooLarge]).
func (l *Log) Append(rec []byte) uint64 {
	l.mu.Lock()
	l.last++
	lsn := l.last
	if len(rec) > l.o.MaxRecordSize {
		l.fail(fmt.Errorf("%w: record %d is %d bytes, over the limit of %d", ErrRecordTooLarge, lsn, len(rec), l.o.MaxRecordSize))
	}
	if l.err == nil && !l.closing {
		l.buf = appendFrame(l.buf, rec)
		l.ends = append(l.ends, len(l.buf))
	}
	kick := len(l.buf) >= kickAt
	l.mu.Unlock()
	if kick {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
	return lsn
}

// kickAt is how much Append buffers before it wakes the flusher. Below it
// the records wait for a Wait, which writes them itself with whatever else
// is buffered (one goroutine, no handover), or for the flusher's next
// flush: waking the flusher at every Append would have it race the caller
// for the write and make the caller wait for it, two goroutine switches
// per call. Records nobody waits for (the broker's timer work) reach the
// disk with the next Wait, Snapshot or Close, or once kickAt bytes wait.
const kickAt = 256 << 10

// MaxRecordSize returns the largest record Append takes.
func (l *Log) MaxRecordSize() int { return l.o.MaxRecordSize }

// Last returns the last LSN Append handed out (the last recovered record
// before the first Append).
func (l *Log) Last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// durable is the last LSN Wait may acknowledge; l.mu is held.
func (l *Log) durable() uint64 {
	if l.o.Sync == SyncAlways {
		return l.synced
	}
	return l.written
}

// Wait returns once the record lsn is as durable as the sync mode
// promises: fsynced with SyncAlways, written with SyncBatched and SyncNone.
// Once the log has failed it returns the sticky [ErrFailed] error for
// every record not durable before the failure; after Close, [ErrClosed]
// for records Close did not make durable. Waiting for an LSN not yet
// appended is an error.
func (l *Log) Wait(lsn uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lsn > l.last {
		return fmt.Errorf("wal: wait for LSN %d, past the last appended %d", lsn, l.last)
	}
	for {
		switch {
		case lsn <= l.durable():
			return nil
		case l.err != nil:
			return l.err
		case l.closed:
			return ErrClosed
		}
		if !l.closing && l.writeMu.TryLock() {
			// Nobody is writing: write it ourselves, with whatever else is
			// buffered (the leader of a group commit).
			l.mu.Unlock()
			l.flushLocked(false, false)
			l.releaseWrite()
			l.mu.Lock()
			continue
		}
		l.sleepers++
		l.cond.Wait()
		l.sleepers--
	}
}

// Err returns the sticky error of a failed log, nil if it has not failed.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// fail makes the log failed with cause, if it was not already; l.mu is held.
func (l *Log) fail(cause error) {
	if l.err == nil {
		l.err = fmt.Errorf("%w: %w", ErrFailed, cause)
	}
	l.buf, l.ends = nil, nil
	l.cond.Broadcast()
}

// failIO makes the log failed with cause and returns the sticky error.
func (l *Log) failIO(cause error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fail(cause)
	return l.err
}

// Close writes what was appended, fsyncs it (not in SyncNone mode), stops
// the flusher, closes the files and unlocks the directory. It returns the
// sticky error if the log failed. Later calls return what the first did.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.snapMu.Lock() // let a Snapshot under way finish
		defer l.snapMu.Unlock()
		l.mu.Lock()
		l.closing = true
		l.mu.Unlock()
		close(l.quit)
		<-l.done
		var errs []error
		if err := l.noteReach(); err != nil {
			errs = append(errs, err)
		}
		if l.seg.f != nil {
			if err := l.seg.f.Close(); err != nil {
				errs = append(errs, fmt.Errorf("wal: close segment: %w", err))
			}
		}
		if err := l.unlock(); err != nil {
			errs = append(errs, fmt.Errorf("wal: unlock %s: %w", l.dir, err))
		}
		l.mu.Lock()
		l.closed = true
		if l.err != nil {
			errs = append([]error{l.err}, errs...)
		}
		l.cond.Broadcast()
		l.mu.Unlock()
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// noteReach records in the manifest, at Close, that the log reaches the
// last record fsynced: Open then takes a damaged record up to there for
// what it is, damage, and not a torn write. Not with SyncNone, which does
// not fsync at Close, nor for a failed log.
func (l *Log) noteReach() error {
	l.mu.Lock()
	reach, failed := l.synced, l.err != nil
	l.mu.Unlock()
	if failed || l.o.Sync == SyncNone || reach <= l.man.reach {
		return nil
	}
	m := l.man
	m.reach = reach
	if err := writeManifest(l.o.FS, l.dir, m); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	l.man = m
	return nil
}

// run is the flusher goroutine.
func (l *Log) run() {
	defer close(l.done)
	for {
		l.writeMu.Lock()
		var fired <-chan time.Time
		if l.timerArmed {
			fired = l.timer.C
		}
		l.releaseWrite()
		select {
		case <-l.kick:
			l.flush(false, false)
		case <-fired:
			l.writeMu.Lock()
			l.timerArmed = false
			l.flushLocked(false, false)
			s := l.startSync()
			l.releaseWrite()
			l.syncBehind(s)
		case <-l.quit:
			l.writeMu.Lock()
			if l.timer != nil {
				l.timer.Stop()
			}
			l.flushLocked(false, true)
			l.stopped = true
			l.writeMu.Unlock()
			return
		}
	}
}

// behind is a SyncBatched fsync that runs while others write on.
type behind struct {
	f     File // nil: nothing to sync
	index uint64
	upTo  uint64 // the last LSN written before it
}

// startSync takes the segment's unsynced writes for an fsync that runs
// after writeMu is released (syncBehind): Waits write on meanwhile, where
// an fsync under writeMu made each wait for it. writeMu is held.
func (l *Log) startSync() behind {
	if !l.seg.dirty {
		return behind{}
	}
	l.seg.dirty = false
	if l.timerArmed { // armed for the writes this sync takes
		l.timer.Stop()
		l.timerArmed = false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncing++
	return behind{f: l.seg.f, index: l.seg.index, upTo: l.written}
}

// syncBehind runs the fsync startSync took, under syncMu, which keeps roll
// from closing the file meanwhile, and then counts its records synced.
func (l *Log) syncBehind(s behind) {
	if s.f == nil {
		return
	}
	l.syncMu.Lock()
	err := s.f.Sync()
	l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncing--
	if err != nil {
		l.fail(fmt.Errorf("sync segment %d: %w", s.index, err))
		return
	}
	l.synced = max(l.synced, s.upTo)
	l.cond.Broadcast()
}

// maxSpare is the largest buffer the flusher keeps for reuse.
const maxSpare = 4 << 20

// flush is flushLocked under writeMu.
func (l *Log) flush(syncNow, final bool) {
	l.writeMu.Lock()
	defer l.releaseWrite()
	l.flushLocked(syncNow, final)
}

// releaseWrite unlocks writeMu and, if records are buffered and a Wait
// sleeps, wakes the sleepers: one of them leads the next flush. A Wait
// that found writeMu locked went to sleep counting on whoever held it, and
// Append wakes nobody (see kickAt).
func (l *Log) releaseWrite() {
	l.writeMu.Unlock()
	l.mu.Lock()
	if l.sleepers > 0 && len(l.ends) > 0 {
		l.cond.Broadcast()
	}
	l.mu.Unlock()
}

// flushLocked writes every frame appended so far, one write per segment,
// and fsyncs if the mode, a Snapshot, the batch timer (syncNow) or Close
// (final) wants it; then it wakes the waiters. writeMu is held.
func (l *Log) flushLocked(syncNow, final bool) {
	if l.stopped {
		return
	}
	l.mu.Lock()
	buf, ends, first := l.buf, l.ends, l.bufFirst
	l.buf, l.ends = l.spareBuf[:0], l.spareEnds[:0]
	l.spareBuf, l.spareEnds = nil, nil
	l.bufFirst += uint64(len(ends))
	failed := l.err != nil
	wantSync := syncNow || l.o.Sync == SyncAlways || l.syncReq > l.synced || (final && l.o.Sync != SyncNone)
	l.mu.Unlock()
	if failed {
		return
	}
	err := l.writeAndSync(buf, ends, first, wantSync)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.fail(err)
		return
	}
	l.written = first + uint64(len(ends)) - 1
	if !l.seg.dirty && l.syncing == 0 {
		l.synced = l.written
	}
	if cap(buf) <= maxSpare {
		l.spareBuf, l.spareEnds = buf[:0], ends[:0]
	}
	l.cond.Broadcast()
}

// writeAndSync writes the frames, fsyncs if asked to and, with
// SyncBatched, arms the timer for what stays unsynced.
func (l *Log) writeAndSync(buf []byte, ends []int, first uint64, wantSync bool) error {
	if len(ends) > 0 {
		if err := l.write(buf, ends, first); err != nil {
			return err
		}
	}
	if wantSync && l.seg.dirty {
		if err := l.seg.f.Sync(); err != nil {
			return fmt.Errorf("sync segment %d: %w", l.seg.index, err)
		}
		l.seg.dirty = false
	}
	if l.o.Sync == SyncBatched && l.seg.dirty && !l.timerArmed {
		l.armTimer()
		select { // the flusher must see the new timer
		case l.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// armTimer starts the SyncBatched timer.
func (l *Log) armTimer() {
	if l.timer == nil {
		l.timer = l.o.Clock.Timer(l.o.Interval)
	} else {
		l.timer.Reset(l.o.Interval)
	}
	l.timerArmed = true
}
