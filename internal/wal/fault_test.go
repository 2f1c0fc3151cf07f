package wal

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

var errInjected = errors.New("injected failure")

// A failed write, fsync, create, truncate, rename or directory fsync of
// the log makes it failed: Wait returns ErrFailed wrapping the cause for
// every record not yet durable, from then on; records acknowledged before
// stay acknowledged and are recovered after a crash.
func TestFaultInjection(t *testing.T) {
	tests := []struct {
		op       Op
		path     string
		snapshot bool // the failure hits Snapshot, not appending
	}{
		{OpWrite, ".wal", false},
		{OpSync, ".wal", false},
		{OpOpen, ".wal", false}, // creating the next segment
		{OpTruncate, ".wal", false},
		{OpRename, ".wal", false},
		{OpSyncDir, testDir, false},
		{OpOpen, "snap", true},
		{OpWrite, "snap", true},
		{OpSync, "snap", true},
		{OpRename, "snap", true},
		{OpSyncDir, testDir, true},
	}
	for _, tc := range tests {
		name := tc.op.String() + " " + tc.path
		if tc.snapshot {
			name = "snapshot " + name
		}
		t.Run(name, func(t *testing.T) {
			for _, crash := range []bool{false, true} {
				fsys := NewMemFS()
				l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
				appendN(t, l, 1, 11)
				fsys.FailNext(tc.op, tc.path, errInjected)
				var err error
				n := 10
				if tc.snapshot {
					err = l.Snapshot(5, writeSnapshot(5))
				} else {
					n, err = appendUntilError(l, 11)
				}
				require.ErrorIs(t, err, ErrFailed)
				require.ErrorIs(t, err, errInjected)
				requireFailed(t, l, n)
				if crash {
					fsys = fsys.Crash()
				}
				l, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
				require.GreaterOrEqual(t, rec.LastLSN, uint64(n), "acknowledged records lost")
				requireRecords(t, rec, int(rec.LastLSN))
				appendN(t, l, int(rec.LastLSN)+1, int(rec.LastLSN)+30)
				require.NoError(t, l.Close())
			}
		})
	}
}

// appendUntilError appends record(i), i = from, from+1…, waiting for
// each, until Wait fails; it returns the last record acknowledged and the
// error.
func appendUntilError(l *Log, from int) (int, error) {
	for i := from; i < from+1000; i++ {
		if err := l.Wait(l.Append(record(i))); err != nil {
			return i - 1, err
		}
	}
	return from + 999, nil
}

// requireFailed checks that l has failed for good, record acked (and
// those before) staying acknowledged.
func requireFailed(t *testing.T, l *Log, acked int) {
	t.Helper()
	err := l.Err()
	require.ErrorIs(t, err, ErrFailed)
	require.NoError(t, l.Wait(uint64(acked)), "acknowledged before the failure")
	require.Equal(t, err, l.Wait(l.Append([]byte("later"))), "sticky")
	require.Equal(t, err, l.Snapshot(uint64(acked), writeSnapshot(acked)))
	require.ErrorIs(t, l.Close(), ErrFailed)
}

// A failure to remove the files a snapshot made useless is reported but
// leaves the log working; the next Open removes them.
func TestSnapshotRemoveFailure(t *testing.T) {
	fsys := NewMemFS()
	l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
	appendN(t, l, 1, 41)
	fsys.FailNext(OpRemove, ".wal", errInjected)
	err := l.Snapshot(30, writeSnapshot(30))
	require.ErrorIs(t, err, errInjected)
	require.NotErrorIs(t, err, ErrFailed)
	require.NoError(t, l.Err())
	appendN(t, l, 41, 51)
	require.NoError(t, l.Close())
	l, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
	requireRecords(t, rec, 50)
	require.NoError(t, l.Close())
	requireOnlyAfter(t, fsys, 30)
}

// An error of the snapshot callback is returned and changes nothing.
func TestSnapshotCallbackError(t *testing.T) {
	fsys := NewMemFS()
	l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
	appendN(t, l, 1, 11)
	before := dump(t, fsys, testDir)
	err := l.Snapshot(5, func(w io.Writer) error {
		_, _ = w.Write([]byte("part of it"))
		return errInjected
	})
	require.ErrorIs(t, err, errInjected)
	require.NoError(t, l.Err())
	require.Equal(t, before, dump(t, fsys, testDir))
	appendN(t, l, 11, 12)
}

func TestDiskFull(t *testing.T) {
	for _, crash := range []bool{false, true} {
		fsys := NewMemFS()
		l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
		appendN(t, l, 1, 11)
		fsys.SetFull(3000)
		n, err := appendUntilError(l, 11)
		require.ErrorIs(t, err, ErrFailed)
		require.ErrorIs(t, err, syscall.ENOSPC)
		requireFailed(t, l, n)
		if crash {
			fsys = fsys.Crash()
		}
		fsys.SetFull(-1)
		l, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
		require.GreaterOrEqual(t, rec.LastLSN, uint64(n))
		requireRecords(t, rec, int(rec.LastLSN))
		appendN(t, l, int(rec.LastLSN)+1, int(rec.LastLSN)+20)
		require.NoError(t, l.Close())
	}

	// A disk full from the start: Open cannot create the first segment.
	_, _, err := Open(testDir, memOptions(NewMemFS(Full(10)), SyncAlways))
	require.ErrorIs(t, err, syscall.ENOSPC)
}

// Failures while Open repairs or cleans up are returned; nothing is lost.
func TestOpenFailures(t *testing.T) {
	build := func() *MemFS {
		fsys := buildCrashedLog(t, 20)
		segs := segments(t, fsys, testDir)
		last := segs[len(segs)-1]
		offs := frameOffsets(t, fsys, last)
		patch(t, fsys, last, offs[len(offs)-1]+frameHeaderSize+1, []byte{0xff}) // a torn last record
		patch(t, fsys, testDir+"/x.tmp", 0, []byte("junk"))
		return fsys
	}
	for _, op := range []Op{OpWrite, OpSync, OpRemove, OpSyncDir, OpRead, OpOpen} {
		fsys := build()
		fsys.FailNext(op, testDir, errInjected)
		_, _, err := Open(testDir, memOptions(fsys, SyncAlways))
		require.ErrorIs(t, err, errInjected, op.String())
		l, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
		requireRecords(t, rec, 19) // repaired by the first Open or this one
		require.NoError(t, l.Close())
	}
}

// gateFS is a MemFS whose segment writes block while the gate is shut.
type gateFS struct {
	*MemFS
	mu   sync.Mutex
	gate chan struct{}
}

func (g *gateFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := g.MemFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return gateFile{f, g}, nil
}

type gateFile struct {
	File
	g *gateFS
}

func (f gateFile) WriteAt(p []byte, off int64) (int, error) {
	f.g.mu.Lock()
	gate := f.g.gate
	f.g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return f.File.WriteAt(p, off)
}

// Append never waits for I/O: with the flusher stuck in a write, appends
// go on; the records are written once it returns.
func TestAppendDoesNotWaitForIO(t *testing.T) {
	g := &gateFS{MemFS: NewMemFS()}
	l, _ := openT(t, testDir, memOptions(g, SyncAlways))
	appendN(t, l, 1, 2)
	g.mu.Lock()
	g.gate = make(chan struct{})
	g.mu.Unlock()
	for i := 2; i <= 500; i++ {
		l.Append(record(i))
	}
	require.EqualValues(t, 500, l.Last())
	g.mu.Lock()
	close(g.gate)
	g.gate = nil
	g.mu.Unlock()
	require.NoError(t, l.Wait(500))
	require.NoError(t, l.Close())
	_, rec := openT(t, testDir, memOptions(g.MemFS, SyncAlways))
	requireRecords(t, rec, 500)
}
