// Package wal is the write-ahead log under a durable namespace: a
// directory of segment files holding numbered records, snapshots that let
// old segments go, group commit, and recovery that repairs a torn end and
// refuses any other damage.
//
// # Use
//
// [Open] locks the directory, recovers it and returns the [Log] and what
// it found ([Recovered]: the newest snapshot, and Replay for the records
// after it). [Log.Append] hands a record to the log and returns its LSN
// (log sequence number: 1, 2, 3… with no gaps) without waiting for I/O;
// [Log.Wait] waits until the record is as durable as the [SyncMode]
// promises. [Log.Snapshot] stores the state up to an LSN so that the
// segments before it can be removed. [Log.Close] flushes and stops.
//
// Writing is a flush: it takes every record appended so far, writes them
// with one write per segment, fsyncs once if the mode asks for it and
// wakes every waiter whose record is covered. A Wait whose record is not
// yet durable flushes itself when nobody is flushing (it leads the group)
// and otherwise waits for the flush under way and then leads the next; so
// writers that wait together share one fsync (group commit), throughput
// grows with the number of concurrent writers, and a lone writer costs no
// goroutine switch. One flusher goroutine per Log flushes what nobody
// waits for: once 256 KiB are buffered, when the SyncBatched interval
// ends, for a Snapshot and at Close. The interval's fsync runs while
// Waits go on writing (a segment is not sealed until it has ended).
//
// With SyncAlways, where every write is fsynced, a segment is written
// with zeros a chunk ahead of its records when the file system asks for
// it (on Linux): blocks preallocated but never written make each fsync
// write metadata too (ext4's unwritten extents), blocks written once do
// not.
//
// # Sync modes
//
//   - [SyncAlways]: Wait returns once the record is written and fsynced;
//     a record whose Wait returned survives a crash of the process or of
//     the machine.
//   - [SyncBatched]: Wait returns once the record is written to its file;
//     it survives a crash of the process. The log is fsynced at least once
//     per Options.Interval (timed by Options.Clock) while it has unsynced
//     records, so a power failure loses at most about the last interval.
//   - [SyncNone]: Wait returns once the record is written; the log is
//     fsynced only when a segment is sealed, by Snapshot and by Open,
//     never on Close. A power failure can lose everything since then.
//
// In every mode, what Open recovers after a crash is a prefix of the
// records appended: records in LSN order, none missing in between, none
// that was never appended.
//
// A failed write, fsync, rename, create or truncate makes the Log failed:
// from then on every Wait for a record not yet durable returns the sticky
// [ErrFailed] error wrapping the cause, and nothing more is written.
// Nothing acknowledged is lost: reopen the directory to recover.
//
// # Files
//
// All integers are little-endian; CRCs are CRC-32C (Castagnoli).
//
// A segment is named <index>-<first LSN>.wal, both as 16 hex digits:
// 0000000000000003-00000000000004d3.wal. It is preallocated (by
// truncation) to Options.SegmentSize; zeros mark the end of its records.
// It starts with a 40-byte header:
//
//	[8]  magic "MBUSWAL\x00"
//	[4]  format version (2; 1 was written before the manifest, and is read)
//	[4]  reserved, zero
//	[8]  segment index
//	[8]  LSN of its first record
//	[4]  CRC of the 32 bytes above
//	[4]  zero
//
// and then holds records, each framed as
//
//	[4]  payload length n
//	[4]  CRC of the length field and the payload
//	[n]  payload
//	     zeros up to a multiple of 8 bytes
//
// A record's LSN is the segment's first LSN plus its position. A record
// that does not fit in the rest of a segment starts the next one; a record
// bigger than a segment gets a segment of its own, sized to fit. A new
// segment is written under a temporary name, fsynced, renamed into place
// and the directory fsynced, and the previous segment is fsynced before
// (in every mode), so a segment that exists follows a complete one.
//
// A snapshot is named snap-<LSN>.snap (16 hex digits) and holds the state
// up to and including that LSN, after a 48-byte header:
//
//	[8]  magic "MBUSSNAP"
//	[4]  format version (2)
//	[4]  CRC of the body
//	[8]  LSN
//	[8]  body length
//	[8]  reach: the last record fsynced when the snapshot was written
//	[4]  CRC of the 40 bytes above
//	[4]  zero
//
// (version 1, still read, had no reach and a 40-byte header). It is
// written to snap-<LSN>.snap.tmp, fsynced, renamed and the directory
// fsynced; only then are the segments wholly at or below its LSN and the
// older snapshots removed. After a Snapshot the directory holds the newest
// snapshot and the segments after it, the last one being the preallocated
// segment in use.
//
// MANIFEST says what the directory must hold, in 48 bytes:
//
//	[8]  magic "MBUSMANI"
//	[4]  format version (1)
//	[4]  reserved, zero
//	[8]  index of the newest segment
//	[8]  its first LSN
//	[8]  reach: the last record known fsynced
//	[4]  CRC of the 40 bytes above
//	[4]  zero
//
// It is replaced (a temporary file, fsynced, renamed, the directory
// fsynced) by Open, once a new segment is in place, and by Close with the
// last record it fsynced (not with SyncNone). A crash between a new
// segment and its manifest leaves the manifest one segment behind, which
// Open accepts.
//
// # Recovery
//
// Open reads the manifest, loads the newest valid snapshot (an invalid one
// falls back to the one before), then checks every segment after it: each
// header, that the indexes follow one another, that each segment starts at
// the LSN after the last record of the one before, and that the last is
// the newest the manifest names, or a later one. A directory with a
// snapshot or a manifest and no segment is damaged; so is one without a
// manifest whose segments were written with one (version 2), unless the
// only such segment is the last and empty (a first Open cut short). Every
// segment but the last must end cleanly: its records, then only zeros. The
// last may end in one torn record: a frame whose CRC does not match, which
// claims no more than the file holds, followed only by zeros, inside which
// no valid frame starts, and which is past the reach of the manifest and
// of the snapshot (a record fsynced is not torn by a crash). Open zeroes
// it, fsyncs, and reports Repaired. The log must reach both reaches.
//
// Records the snapshot covers need not be valid: a damaged one whose frame
// is followed by a valid frame or zeros is skipped; a last segment that
// ends, damaged or cut short, among them, with no valid frame after, is
// left for a new segment that starts after the snapshot. Open reports
// them in Skipped. Any other damage is [ErrCorrupt], and then Open
// changes nothing on disk. Temporary files, stale snapshots and segments
// wholly in the snapshot are removed.
//
// What Open can tell from a damaged directory: a missing segment, first,
// middle, last or only, is ErrCorrupt, as is a damaged record followed by
// valid ones and a damaged last record that was fsynced (after a clean
// Close with SyncAlways or SyncBatched every record was): there a flipped
// byte is told apart from a torn write. A damaged record that the snapshot
// already holds is skipped. What it cannot tell: after a crash, a bad CRC
// in the last record written since the manifest or a snapshot last
// recorded the fsynced end looks exactly like a write cut short, so Open
// cuts it off, even if it was acknowledged and only a byte flipped; and a
// directory written before the manifest (format version 1) has its
// missing last segment go unnoticed until an Open has written one.
//
// The model of a crash behind these rules, which [MemFS] simulates, is
// that of an fsync barrier: what was fsynced stays, and of what was
// written since, some prefix in order (possibly cut mid-write) survives.
//
// # Testing
//
// [MemFS] is an in-memory file system that can crash, fail any operation
// on demand, run out of space and halt after a number of operations; the
// package's tests use it to crash the log at every step.
package wal
