package wal

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireOnlyAfter checks the disk use after a snapshot at lsn: the
// snapshot, the segments holding records after it, nothing else.
func requireOnlyAfter(t *testing.T, fsys FS, lsn uint64) {
	t.Helper()
	names, err := fsys.ReadDir(testDir)
	require.NoError(t, err)
	var segs []segHeader
	for _, name := range names {
		if h, ok := parseSegName(name); ok {
			segs = append(segs, h)
			continue
		}
		if name == manifestName {
			continue
		}
		require.Equal(t, snapName(lsn), name, "a file other than the snapshot, the segments and the manifest")
	}
	require.NotEmpty(t, segs)
	for i := 0; i+1 < len(segs); i++ {
		require.Greater(t, segs[i+1].first, lsn+1, "segment %s holds only records in the snapshot", segName(segs[i].index, segs[i].first))
	}
}

func TestSnapshot(t *testing.T) {
	fsys := NewMemFS()
	l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
	appendN(t, l, 1, 101)
	before := len(segments(t, fsys, testDir))
	require.NoError(t, l.Snapshot(60, writeSnapshot(60)))
	requireOnlyAfter(t, fsys, 60)
	require.Less(t, len(segments(t, fsys, testDir)), before)

	require.Error(t, l.Snapshot(101, writeSnapshot(101)), "past the last record")
	require.Error(t, l.Snapshot(59, writeSnapshot(59)), "older than the last snapshot")
	require.NoError(t, l.Err())

	appendN(t, l, 101, 131)
	require.NoError(t, l.Snapshot(130, writeSnapshot(130)))
	requireOnlyAfter(t, fsys, 130)
	require.Len(t, segments(t, fsys, testDir), 1, "only the segment being written")
	appendN(t, l, 131, 141)
	require.NoError(t, l.Close())

	l, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
	require.EqualValues(t, 130, rec.SnapshotLSN)
	requireRecords(t, rec, 140)
	appendN(t, l, 141, 151)
	require.NoError(t, l.Close())
	_, rec = openT(t, testDir, memOptions(fsys, SyncAlways))
	requireRecords(t, rec, 150)
}

// Snapshot fsyncs the records it covers even when the mode does not: a
// crash right after it loses none of them.
func TestSnapshotSyncsTheLog(t *testing.T) {
	for _, mode := range []SyncMode{SyncBatched, SyncNone} {
		fsys := NewMemFS()
		l, _ := openT(t, testDir, memOptions(fsys, mode))
		appendN(t, l, 1, 51)
		require.NoError(t, l.Snapshot(50, writeSnapshot(50)))
		fsys = fsys.Crash()
		_ = l.Close()
		_, rec := openT(t, testDir, memOptions(fsys, mode))
		require.EqualValues(t, 50, rec.SnapshotLSN)
		requireRecords(t, rec, 50)
	}
}

// A crash at every step of Snapshot (each file system operation: creating
// the temporary file, writing it, fsyncing it, renaming it, fsyncing the
// directory, removing each old file) recovers every record, with either
// the old or the new snapshot, and Open removes what the snapshot left.
func TestSnapshotCrashAtEveryStep(t *testing.T) {
	seen := map[uint64]int{}
	for step := 0; ; step++ {
		fsys := NewMemFS(WithSeed(uint64(step)))
		l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
		appendN(t, l, 1, 31)
		require.NoError(t, l.Snapshot(15, writeSnapshot(15)))
		appendN(t, l, 31, 41)
		fsys.Halt(step)
		err := l.Snapshot(30, writeSnapshot(30))
		fsys = fsys.Crash()
		_ = l.Close()
		l, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
		requireRecords(t, rec, 40)
		seen[rec.SnapshotLSN]++
		require.NoError(t, l.Close())
		requireOnlyAfter(t, fsys, rec.SnapshotLSN)
		if err == nil {
			require.EqualValues(t, 30, rec.SnapshotLSN)
			break
		}
		require.ErrorIs(t, err, ErrHalted)
	}
	t.Log(seen)
	require.Positive(t, seen[15], "crashes before the rename was durable keep the old snapshot")
	require.Positive(t, seen[30])
}

// The named steps, each by failing the operation that follows it and
// crashing.
func TestSnapshotCrashNamedSteps(t *testing.T) {
	steps := []struct {
		name string
		op   Op
		path string
		want uint64 // the snapshot recovered
	}{
		{"before the temporary file's fsync", OpSync, "snap", 15},
		{"after the fsync, before the rename", OpRename, "snap", 15},
		{"after the rename, before the directory fsync", OpSyncDir, testDir, 15},
		{"after the directory fsync, before removing old segments", OpRemove, ".wal", 30},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			fsys := NewMemFS()
			l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
			appendN(t, l, 1, 31)
			require.NoError(t, l.Snapshot(15, writeSnapshot(15)))
			appendN(t, l, 31, 41)
			fsys.FailNext(s.op, s.path, errInjected)
			require.ErrorIs(t, l.Snapshot(30, writeSnapshot(30)), errInjected)
			fsys = fsys.Crash()
			_ = l.Close()
			l, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
			require.Equal(t, s.want, rec.SnapshotLSN)
			requireRecords(t, rec, 40)
			require.NoError(t, l.Close())
			requireOnlyAfter(t, fsys, rec.SnapshotLSN)
			names, err := fsys.ReadDir(testDir)
			require.NoError(t, err)
			for _, n := range names {
				require.False(t, strings.HasSuffix(n, tmpSuffix), n)
			}
		})
	}
}

// A snapshot of the whole log, with its last segment and no record after:
// reopening starts the next LSN after it.
func TestSnapshotOfEverything(t *testing.T) {
	fsys := NewMemFS()
	l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
	appendN(t, l, 1, 21)
	require.NoError(t, l.Snapshot(20, writeSnapshot(20)))
	require.NoError(t, l.Close())
	l, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
	requireRecords(t, rec, 20)
	require.EqualValues(t, 21, l.Append(record(21)))
	require.NoError(t, l.Close())

	// Segments all gone (removed by hand): whatever the snapshot holds, a
	// missing segment is corruption (the log held record 21 after it).
	for _, s := range segments(t, fsys, testDir) {
		require.NoError(t, fsys.Remove(s))
	}
	requireCorrupt(t, fsys)
}
