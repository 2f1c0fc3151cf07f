package wal

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// What a damaged directory is: a missing segment, wherever it is, and a
// damaged record that was fsynced are ErrCorrupt; a torn record no fsync
// covered is repaired; a damaged record the snapshot covers is skipped.

// removeSegment removes segment i of dir (-1: the last).
func removeSegment(t *testing.T, fsys FS, i int) {
	t.Helper()
	segs := segments(t, fsys, testDir)
	if i < 0 {
		i += len(segs)
	}
	require.NoError(t, fsys.Remove(segs[i]))
}

// crashedLog makes a log of records 1..n whose process crashes, as
// buildCrashedLog, with segments of size bytes.
func crashedLog(t *testing.T, n int, size int64) *MemFS {
	fsys := NewMemFS()
	o := memOptions(fsys, SyncAlways)
	o.SegmentSize = size
	l, _ := openT(t, testDir, o)
	appendN(t, l, 1, n+1)
	fsys = fsys.Crash()
	_ = l.Close()
	return fsys
}

func TestMissingSegmentIsCorrupt(t *testing.T) {
	tests := []struct {
		name  string
		build func(t *testing.T) *MemFS
		seg   int
	}{
		{"last of several, closed", func(t *testing.T) *MemFS { return buildLog(t, 40) }, -1},
		{"middle, closed", func(t *testing.T) *MemFS { return buildLog(t, 40) }, 2},
		{"first, closed", func(t *testing.T) *MemFS { return buildLog(t, 40) }, 0},
		{"the only one, closed", func(t *testing.T) *MemFS { return buildLog(t, 3) }, 0},
		{"last of several, crashed", func(t *testing.T) *MemFS { return crashedLog(t, 40, 1024) }, -1},
		{"the only one, crashed", func(t *testing.T) *MemFS { return crashedLog(t, 3, 1024) }, 0},
		{"the only one, after a snapshot", func(t *testing.T) *MemFS {
			fsys := NewMemFS()
			l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
			appendN(t, l, 1, 21)
			require.NoError(t, l.Snapshot(20, writeSnapshot(20)))
			require.NoError(t, l.Close())
			require.Len(t, segments(t, fsys, testDir), 1)
			return fsys
		}, 0},
		{"the last, after a snapshot, crashed", func(t *testing.T) *MemFS {
			fsys := NewMemFS()
			l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
			appendN(t, l, 1, 21)
			require.NoError(t, l.Snapshot(20, writeSnapshot(20)))
			appendN(t, l, 21, 61)
			fsys = fsys.Crash()
			_ = l.Close()
			require.Greater(t, len(segments(t, fsys, testDir)), 1)
			return fsys
		}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := tc.build(t)
			removeSegment(t, fsys, tc.seg)
			requireCorrupt(t, fsys)
		})
	}
}

// The manifest is what tells a missing last segment: without it, in a
// directory written with one, Open cannot tell and refuses; damaged, it
// is corruption too.
func TestManifestDamage(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		fsys := buildLog(t, 40)
		require.NoError(t, fsys.Remove(filepath.Join(testDir, manifestName)))
		requireCorrupt(t, fsys)
	})
	t.Run("missing, with a snapshot", func(t *testing.T) {
		fsys := NewMemFS()
		l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
		appendN(t, l, 1, 21)
		require.NoError(t, l.Snapshot(20, writeSnapshot(20)))
		require.NoError(t, l.Close())
		require.NoError(t, fsys.Remove(filepath.Join(testDir, manifestName)))
		requireCorrupt(t, fsys)
	})
	t.Run("damaged", func(t *testing.T) {
		fsys := buildLog(t, 40)
		patch(t, fsys, filepath.Join(testDir, manifestName), 20, []byte{0xff})
		requireCorrupt(t, fsys)
	})
	t.Run("names a later segment", func(t *testing.T) {
		fsys := buildLog(t, 40)
		m, err := decodeManifest(readFile(t, fsys, filepath.Join(testDir, manifestName)))
		require.NoError(t, err)
		m.index++
		patch(t, fsys, filepath.Join(testDir, manifestName), 0, m.encode())
		requireCorrupt(t, fsys)
	})
	t.Run("reaches past the log", func(t *testing.T) {
		fsys := buildLog(t, 40)
		m, err := decodeManifest(readFile(t, fsys, filepath.Join(testDir, manifestName)))
		require.NoError(t, err)
		require.EqualValues(t, 40, m.reach, "Close records the last record fsynced")
		m.reach++
		patch(t, fsys, filepath.Join(testDir, manifestName), 0, m.encode())
		requireCorrupt(t, fsys)
	})
}

// A crash before the first manifest is written leaves the first segment,
// empty, without one: that is a new log, not a damaged one. A crash in a
// roll before the manifest names the new segment leaves it one behind.
func TestManifestCrashWindows(t *testing.T) {
	fsys := NewMemFS()
	fsys.FailNext(OpRename, manifestName, errInjected)
	_, _, err := Open(testDir, memOptions(fsys, SyncAlways))
	require.ErrorIs(t, err, errInjected)
	fsys = fsys.Crash()
	require.Equal(t, []string{segName(0, 1)}, keys(dump(t, fsys, testDir)))
	l, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
	requireRecords(t, rec, 0)
	appendN(t, l, 1, 4)

	// The next roll fails to write the manifest: the log fails, the new
	// segment exists and the manifest names the one before.
	fsys.FailNext(OpRename, manifestName, errInjected)
	var lsn uint64
	for i := 4; i < 40; i++ {
		lsn = l.Append(record(i))
	}
	require.ErrorIs(t, l.Wait(lsn), errInjected)
	fsys = fsys.Crash()
	_ = l.Close()
	segs := segments(t, fsys, testDir)
	require.Len(t, segs, 2)
	m, err := decodeManifest(readFile(t, fsys, filepath.Join(testDir, manifestName)))
	require.NoError(t, err)
	require.EqualValues(t, 0, m.index)
	l, rec = openT(t, testDir, memOptions(fsys, SyncAlways))
	require.GreaterOrEqual(t, rec.LastLSN, uint64(3))
	requireRecords(t, rec, int(rec.LastLSN))
	require.NoError(t, l.Close())
}

// snapshotAll makes a log of records 1..n, takes a snapshot of all of
// them and closes it: a clean Close, as a namespace's.
func snapshotAll(t *testing.T, n int) *MemFS {
	fsys := NewMemFS()
	l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
	appendN(t, l, 1, n+1)
	require.NoError(t, l.Snapshot(uint64(n), writeSnapshot(n)))
	require.NoError(t, l.Close())
	return fsys
}

// A damaged record that the snapshot covers cannot fail an Open: the
// snapshot holds what it held. The log goes on after the snapshot.
func TestDamageTheSnapshotCoversIsSkipped(t *testing.T) {
	const n = 20
	tests := []struct {
		name   string
		damage func(t *testing.T, fsys FS, last string, offs []int64)
	}{
		{"a byte of the last record", func(t *testing.T, fsys FS, last string, offs []int64) {
			patch(t, fsys, last, offs[len(offs)-1]+frameHeaderSize+3, []byte{0xff})
		}},
		{"the length of the last record", func(t *testing.T, fsys FS, last string, offs []int64) {
			patch(t, fsys, last, offs[len(offs)-1]+1, []byte{0x7f})
		}},
		{"the last records cut off", func(t *testing.T, fsys FS, last string, offs []int64) {
			patch(t, fsys, last, offs[len(offs)-3], make([]byte, 1024-offs[len(offs)-3]))
		}},
		{"a byte of a record in the middle", func(t *testing.T, fsys FS, last string, offs []int64) {
			patch(t, fsys, last, offs[1]+frameHeaderSize, []byte{0xff})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := snapshotAll(t, n)
			segs := segments(t, fsys, testDir)
			last := segs[len(segs)-1]
			offs := frameOffsets(t, fsys, last)
			require.GreaterOrEqual(t, len(offs), 3, "the last segment holds records the snapshot covers")
			tc.damage(t, fsys, last, offs)
			l, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
			requireRecords(t, rec, n)
			require.Positive(t, rec.Skipped)
			require.False(t, rec.Repaired)
			appendN(t, l, n+1, n+6)
			require.NoError(t, l.Close())
			l, rec = openT(t, testDir, memOptions(fsys, SyncAlways))
			requireRecords(t, rec, n+5)
			require.NoError(t, l.Close())
		})
	}
}

// A damaged last record that no snapshot covers, after a clean Close,
// was fsynced (the manifest says so): not a torn write, ErrCorrupt. After
// a crash it is what a torn write leaves: cut off (TestTornTailAtEveryByte).
func TestDamagedLastRecordAfterCloseIsCorrupt(t *testing.T) {
	for _, what := range []string{"payload", "zeros"} {
		t.Run(what, func(t *testing.T) {
			fsys := buildLog(t, 40)
			segs := segments(t, fsys, testDir)
			last := segs[len(segs)-1]
			offs := frameOffsets(t, fsys, last)
			if what == "payload" {
				patch(t, fsys, last, offs[len(offs)-1]+frameHeaderSize+1, []byte{0xff})
			} else {
				off := offs[len(offs)-1] + frameHeaderSize + 1
				patch(t, fsys, last, off, make([]byte, 1024-off))
			}
			requireCorrupt(t, fsys)
		})
	}
	// The same damage to a crashed process's log is a torn write.
	fsys := buildCrashedLog(t, 40)
	segs := segments(t, fsys, testDir)
	last := segs[len(segs)-1]
	offs := frameOffsets(t, fsys, last)
	patch(t, fsys, last, offs[len(offs)-1]+frameHeaderSize+1, []byte{0xff})
	l, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
	require.True(t, rec.Repaired)
	requireRecords(t, rec, 39)
	require.NoError(t, l.Close())
}

// A damaged record that the snapshot covers, followed by records it does
// not, whose frame no longer says where the next starts: the records
// after it cannot be found, and Open refuses rather than lose them.
func TestCoveredDamageHidingTheRecordsAfterIsCorrupt(t *testing.T) {
	fsys := NewMemFS()
	l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
	appendN(t, l, 1, 6)
	require.NoError(t, l.Snapshot(3, writeSnapshot(3)))
	require.NoError(t, l.Close())
	segs := segments(t, fsys, testDir)
	require.Len(t, segs, 1)
	offs := frameOffsets(t, fsys, segs[0])
	patch(t, fsys, segs[0], offs[2]+1, []byte{0x7f}) // record 3's length
	requireCorrupt(t, fsys)
}
