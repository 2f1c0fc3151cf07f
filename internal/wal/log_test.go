package wal

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"
)

func TestAppendReopen(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncBatched, SyncNone} {
		t.Run(mode.String(), func(t *testing.T) {
			fsys := NewMemFS()
			l, rec := openT(t, testDir, memOptions(fsys, mode))
			requireRecords(t, rec, 0)
			require.False(t, rec.Repaired)
			appendN(t, l, 1, 101)
			require.EqualValues(t, 100, l.Last())
			require.NoError(t, l.Close())

			l, rec = openT(t, testDir, memOptions(fsys, mode))
			requireRecords(t, rec, 100)
			require.EqualValues(t, 100, l.Last())
			appendN(t, l, 101, 151)
			require.NoError(t, l.Close())
			_, rec = openT(t, testDir, memOptions(fsys, mode))
			requireRecords(t, rec, 150)
		})
	}
}

// Close makes everything appended durable (except with SyncNone), whether
// or not anyone waited.
func TestCloseFlushes(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncBatched} {
		t.Run(mode.String(), func(t *testing.T) {
			fsys := NewMemFS()
			l, _ := openT(t, testDir, memOptions(fsys, mode))
			for i := 1; i <= 50; i++ {
				l.Append(record(i))
			}
			require.NoError(t, l.Close())
			fsys = fsys.Crash()
			l, rec := openT(t, testDir, memOptions(fsys, mode))
			requireRecords(t, rec, 50)
			require.NoError(t, l.Close())
		})
	}
}

func TestConcurrentAppendWait(t *testing.T) {
	fsys := NewMemFS()
	l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
	var mu sync.Mutex
	got := map[uint64][]byte{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				rec := record(g*1000 + i)
				lsn := l.Append(rec)
				if err := l.Wait(lsn); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[lsn] = rec
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.NoError(t, l.Close())
	_, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
	all := replayAll(t, rec)
	require.Len(t, all, 400)
	for _, e := range all {
		require.Equal(t, got[e.lsn], e.rec)
	}
}

func TestBigRecordGetsItsOwnSegment(t *testing.T) {
	fsys := NewMemFS()
	o := memOptions(fsys, SyncAlways)
	l, _ := openT(t, testDir, o)
	big := make([]byte, 5000)
	for i := range big {
		big[i] = byte(i)
	}
	l.Append([]byte("small"))
	l.Append(big)
	require.NoError(t, l.Wait(l.Append([]byte("after"))))
	require.NoError(t, l.Close())
	names, err := fsys.ReadDir(testDir)
	require.NoError(t, err)
	require.Equal(t, []string{
		"0000000000000000-0000000000000001.wal",
		"0000000000000001-0000000000000002.wal",
		"0000000000000002-0000000000000003.wal",
		manifestName,
	}, names)
	fi, err := fsys.Stat(testDir + "/0000000000000001-0000000000000002.wal")
	require.NoError(t, err)
	require.EqualValues(t, segHeaderSize+frameSize(len(big)), fi.Size())

	_, rec := openT(t, testDir, o)
	got := replayAll(t, rec)
	require.Len(t, got, 3)
	require.Equal(t, big, got[1].rec)
	require.Equal(t, "after", string(got[2].rec))
}

func TestEmptyRecord(t *testing.T) {
	fsys := NewMemFS()
	l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
	l.Append(nil)
	require.NoError(t, l.Wait(l.Append([]byte{})))
	require.NoError(t, l.Close())
	_, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
	got := replayAll(t, rec)
	require.Len(t, got, 2)
	require.Empty(t, got[0].rec)
}

// A record over the limit does not panic: it fails the log, as a failed
// write does, and nothing after the records before it reaches the disk.
func TestRecordOverTheLimitFailsTheLog(t *testing.T) {
	fsys := NewMemFS()
	o := memOptions(fsys, SyncAlways)
	o.MaxRecordSize = 300
	l, _ := openT(t, testDir, o)
	require.Equal(t, 300, l.MaxRecordSize())
	appendN(t, l, 1, 3)
	require.NoError(t, l.Wait(l.Append(make([]byte, 300))), "a record of the limit's size")
	lsn := l.Append(make([]byte, 301))
	require.EqualValues(t, 4, lsn)
	err := l.Wait(lsn)
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorIs(t, err, ErrRecordTooLarge)
	require.ErrorContains(t, err, "limit of 300")
	require.ErrorIs(t, l.Wait(l.Append(record(5))), ErrFailed)
	require.ErrorIs(t, l.Close(), ErrRecordTooLarge)
	_, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
	require.EqualValues(t, 3, rec.LastLSN)
}

func TestWaitErrors(t *testing.T) {
	fsys := NewMemFS()
	l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
	require.Error(t, l.Wait(1), "nothing appended yet")
	require.NoError(t, l.Wait(0))
	lsn := l.Append([]byte("a"))
	require.NoError(t, l.Close())
	require.NoError(t, l.Wait(lsn), "durable before Close")
	late := l.Append([]byte("after close"))
	require.ErrorIs(t, l.Wait(late), ErrClosed)
	require.NoError(t, l.Close(), "Close twice")
	require.ErrorIs(t, l.Snapshot(lsn, writeSnapshot(1)), ErrClosed)
}

// SyncBatched acknowledges written records and fsyncs them within the
// interval, timed by the injected clock.
func TestSyncBatchedInterval(t *testing.T) {
	fsys := NewMemFS()
	mock := clock.NewMock()
	o := memOptions(fsys, SyncBatched)
	o.Clock = mock
	o.Interval = 50 * time.Millisecond
	l, _ := openT(t, testDir, o)
	require.NoError(t, l.Wait(l.Append(record(1))))
	synced := func() uint64 {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.synced
	}
	require.Zero(t, synced(), "written, not yet synced")
	mock.Add(49 * time.Millisecond)
	require.Zero(t, synced())
	mock.Add(time.Millisecond)
	require.Eventually(t, func() bool { return synced() == 1 }, 5*time.Second, time.Millisecond)
	crashed := fsys.Crash()
	_ = l.Close() // the old process: its files are gone
	l, rec := openT(t, testDir, memOptions(crashed, SyncBatched))
	requireRecords(t, rec, 1)
	require.NoError(t, l.Close())
}

func TestOptionsValidation(t *testing.T) {
	fsys := NewMemFS()
	for _, o := range []Options{
		{FS: fsys, Sync: SyncMode(9)},
		{FS: fsys, SegmentSize: 100},
		{FS: fsys, Interval: -time.Second},
		{FS: fsys, MaxRecordSize: -1},
		{FS: fsys, MaxRecordSize: MaxRecordSize + 1},
	} {
		_, _, err := Open(testDir, o)
		require.Error(t, err)
	}
}

func TestErrLocked(t *testing.T) {
	t.Run("memfs", func(t *testing.T) {
		fsys := NewMemFS()
		l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
		_, _, err := Open(testDir, memOptions(fsys, SyncAlways))
		require.ErrorIs(t, err, ErrLocked)
		require.NoError(t, l.Close())
		l, _ = openT(t, testDir, memOptions(fsys, SyncAlways))
		require.NoError(t, l.Close())
	})
	t.Run("osfs", func(t *testing.T) {
		dir := t.TempDir()
		o := Options{FS: OSFS(), SegmentSize: 4096}
		l, _ := openT(t, dir, o)
		_, _, err := Open(dir, o)
		require.ErrorIs(t, err, ErrLocked)
		require.NoError(t, l.Close())
		l, _ = openT(t, dir, o)
		require.NoError(t, l.Close())
	})
}

func TestOSFS(t *testing.T) {
	dir := t.TempDir() + "/nested/wal"
	for _, mode := range []SyncMode{SyncAlways, SyncBatched, SyncNone} {
		o := Options{FS: OSFS(), Sync: mode, SegmentSize: 4096}
		l, rec := openT(t, dir, o)
		n := int(rec.LastLSN)
		requireRecords(t, rec, n)
		appendN(t, l, n+1, n+301)
		require.NoError(t, l.Snapshot(uint64(n+150), writeSnapshot(n+150)))
		appendN(t, l, n+301, n+311)
		require.NoError(t, l.Close())
		l, rec = openT(t, dir, o)
		requireRecords(t, rec, n+310) // the snapshot mapped from its file, on Linux
		rec.Release()
		require.NoError(t, l.Close())
		names, err := o.FS.ReadDir(dir)
		require.NoError(t, err)
		require.Contains(t, names, snapName(uint64(n+150)))
	}
}

func TestDirErrors(t *testing.T) {
	fsys := NewMemFS()
	f, err := fsys.OpenFile("/file", os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, _, err = Open("/file", memOptions(fsys, SyncAlways))
	var dirErr *DirError
	require.ErrorAs(t, err, &dirErr)
	require.ErrorIs(t, err, syscall.ENOTDIR)
	require.EqualError(t, err, "wal: use log directory /file: not a directory")
	_, _, err = Open("/file/wal", memOptions(fsys, SyncAlways))
	require.ErrorIs(t, err, syscall.ENOTDIR)
	require.ErrorAs(t, err, &dirErr)
	require.Equal(t, "create", dirErr.Op)
	require.ErrorContains(t, err, "/file/wal")

	fsys.FailNext(OpMkdir, "/new", syscall.EIO)
	_, _, err = Open("/new", memOptions(fsys, SyncAlways))
	require.ErrorIs(t, err, syscall.EIO)
	require.ErrorAs(t, err, &dirErr)
	require.Equal(t, "create", dirErr.Op)

	fsys.FailNext(OpRead, "/db", os.ErrPermission)
	_, _, err = Open(testDir, memOptions(fsys, SyncAlways))
	require.ErrorIs(t, err, fs.ErrPermission)
	require.ErrorContains(t, err, testDir)

	t.Run("osfs", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root ignores permissions")
		}
		dir := t.TempDir()
		require.NoError(t, os.Chmod(dir, 0o500))
		defer os.Chmod(dir, 0o700)
		_, _, err := Open(filepath.Join(dir, "wal"), Options{})
		require.ErrorIs(t, err, fs.ErrPermission)
	})
	t.Run("osfs file", func(t *testing.T) {
		name := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(name, nil, 0o644))
		_, _, err := Open(name, Options{})
		require.ErrorIs(t, err, syscall.ENOTDIR)
		require.ErrorContains(t, err, name)
	})
}

// Replay reads only what Open recovered, while the log takes appends.
func TestReplayWhileAppending(t *testing.T) {
	fsys := buildLog(t, 30)
	l, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
	done := make(chan struct{})
	go func() {
		defer close(done)
		appendN(t, l, 31, 200)
	}()
	for range 5 {
		requireRecords(t, rec, 30)
	}
	<-done
}

// syncGateFS is a file system whose fsyncs, once gated, wait until the
// test lets them go.
type syncGateFS struct {
	FS
	gated   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *syncGateFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := g.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return syncGateFile{f, g}, nil
}

type syncGateFile struct {
	File
	g *syncGateFS
}

func (f syncGateFile) Sync() error {
	if f.g.gated.CompareAndSwap(true, false) {
		f.g.entered <- struct{}{}
		<-f.g.release
	}
	return f.File.Sync()
}

// With SyncBatched the interval's fsync runs while writers go on: a Wait
// during it returns once its record is written, without waiting for the
// fsync, and the fsync's records count as synced once it ends.
func TestBatchedSyncDoesNotHoldUpWaits(t *testing.T) {
	mem := NewMemFS()
	g := &syncGateFS{FS: mem, entered: make(chan struct{}), release: make(chan struct{})}
	o := memOptions(g, SyncBatched)
	o.SegmentSize = 1 << 20
	mock := o.Clock.(*clock.Mock)
	l, _ := openT(t, testDir, o)
	appendN(t, l, 1, 11) // written; the interval's timer armed
	g.gated.Store(true)
	mock.Add(DefaultInterval)
	<-g.entered // the flusher is in the interval's fsync
	appendN(t, l, 11, 21)
	close(g.release)
	require.NoError(t, l.Snapshot(10, writeSnapshot(10))) // waits for 1..10 synced
	require.NoError(t, l.Close())
	_, rec := openT(t, testDir, memOptions(mem.Crash(), SyncBatched))
	requireRecords(t, rec, 20)
}
