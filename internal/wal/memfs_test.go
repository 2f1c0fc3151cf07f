package wal

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, fsys FS, name, data string, sync bool) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	if sync {
		require.NoError(t, f.Sync())
	}
	require.NoError(t, f.Close())
}

func exists(t *testing.T, fsys FS, name string) bool {
	t.Helper()
	_, err := fsys.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	require.NoError(t, err)
	return true
}

// The file system contract the log relies on, checked on the OS and on
// MemFS alike.
func TestFSContract(t *testing.T) {
	for name, fsys := range map[string]FS{"os": OSFS(), "mem": NewMemFS()} {
		t.Run(name, func(t *testing.T) {
			dir := "/d"
			if name == "os" {
				dir = t.TempDir()
			}
			sub := filepath.Join(dir, "a", "b")
			require.NoError(t, fsys.MkdirAll(sub, 0o755))
			require.NoError(t, fsys.MkdirAll(sub, 0o755), "MkdirAll of an existing directory")
			writeFile(t, fsys, filepath.Join(sub, "z"), "zz", true)
			writeFile(t, fsys, filepath.Join(sub, "y"), "y", true)
			writeFile(t, fsys, filepath.Join(sub, "y"), "y2", true) // O_APPEND
			names, err := fsys.ReadDir(sub)
			require.NoError(t, err)
			require.Equal(t, []string{"y", "z"}, names)
			fi, err := fsys.Stat(filepath.Join(sub, "y"))
			require.NoError(t, err)
			require.EqualValues(t, 3, fi.Size())
			require.False(t, fi.IsDir())
			fi, err = fsys.Stat(sub)
			require.NoError(t, err)
			require.True(t, fi.IsDir())

			_, err = fsys.OpenFile(filepath.Join(sub, "z"), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
			require.ErrorIs(t, err, fs.ErrExist)
			_, err = fsys.OpenFile(filepath.Join(sub, "nope"), os.O_RDONLY, 0)
			require.ErrorIs(t, err, fs.ErrNotExist)
			_, err = fsys.OpenFile(filepath.Join(dir, "nope", "x"), os.O_CREATE|os.O_RDWR, 0o644)
			require.ErrorIs(t, err, fs.ErrNotExist)

			require.NoError(t, fsys.Rename(filepath.Join(sub, "y"), filepath.Join(sub, "z")), "rename replaces")
			require.Equal(t, "yy2", string(readFile(t, fsys, filepath.Join(sub, "z"))))
			require.False(t, exists(t, fsys, filepath.Join(sub, "y")))

			f, err := fsys.OpenFile(filepath.Join(sub, "z"), os.O_RDWR|os.O_TRUNC, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte("abc"), 5)
			require.NoError(t, err)
			require.NoError(t, f.Truncate(10))
			b := make([]byte, 12)
			n, err := f.ReadAt(b, 0)
			require.ErrorIs(t, err, io.EOF)
			require.Equal(t, 10, n)
			require.Equal(t, "\x00\x00\x00\x00\x00abc\x00\x00", string(b[:n]))
			fi, err = f.Stat()
			require.NoError(t, err)
			require.EqualValues(t, 10, fi.Size())
			require.NoError(t, f.Close())

			ro, err := fsys.OpenFile(filepath.Join(sub, "z"), os.O_RDONLY, 0)
			require.NoError(t, err)
			_, err = ro.Write([]byte("x"))
			require.Error(t, err, "write to a read-only file")
			require.NoError(t, ro.Close())

			writeFile(t, fsys, filepath.Join(dir, "file"), "f", true)
			require.Error(t, fsys.MkdirAll(filepath.Join(dir, "file", "sub"), 0o755))
			_, err = fsys.ReadDir(filepath.Join(dir, "file"))
			require.Error(t, err)
			require.Error(t, fsys.Remove(filepath.Join(dir, "a")), "not empty")
			require.NoError(t, fsys.SyncDir(sub))
			require.NoError(t, fsys.Remove(filepath.Join(sub, "z")))
			require.ErrorIs(t, fsys.Remove(filepath.Join(sub, "z")), fs.ErrNotExist)

			unlock, err := fsys.Lock(sub)
			require.NoError(t, err)
			_, err = fsys.Lock(sub)
			require.ErrorIs(t, err, ErrLocked)
			require.NoError(t, unlock())
			unlock, err = fsys.Lock(sub)
			require.NoError(t, err)
			require.NoError(t, unlock())
		})
	}
}

func TestMemFSCrashKeepsSyncedAndAPrefix(t *testing.T) {
	seen := map[string]bool{}
	for seed := range uint64(200) {
		fsys := NewMemFS(WithSeed(seed))
		require.NoError(t, fsys.MkdirAll("/d", 0o755))
		writeFile(t, fsys, "/d/f", "hello", true)
		require.NoError(t, fsys.SyncDir("/d"))
		writeFile(t, fsys, "/d/f", " wide", false)
		writeFile(t, fsys, "/d/f", " world", false)
		got := string(readFile(t, fsys.Crash(), "/d/f"))
		require.Contains(t, "hello wide world", got)
		require.GreaterOrEqual(t, len(got), 5, "synced data stays")
		require.Equal(t, "hello wide world"[:len(got)], got, "a prefix")
		seen[got] = true
	}
	require.Contains(t, seen, "hello")
	require.Contains(t, seen, "hello wide world")
	require.Greater(t, len(seen), 5, "writes are cut mid-way too")
}

func TestMemFSCrashDeterministic(t *testing.T) {
	run := func() string {
		fsys := NewMemFS(WithSeed(42))
		require.NoError(t, fsys.MkdirAll("/d", 0o755))
		writeFile(t, fsys, "/d/f", "", true)
		require.NoError(t, fsys.SyncDir("/d"))
		for range 20 {
			writeFile(t, fsys, "/d/f", "0123456789", false)
		}
		return string(readFile(t, fsys.Crash(), "/d/f"))
	}
	require.Equal(t, run(), run())
}

func TestMemFSDirectoryEntriesNeedSyncDir(t *testing.T) {
	fsys := NewMemFS()
	require.NoError(t, fsys.MkdirAll("/d", 0o755))
	writeFile(t, fsys, "/d/new", "data", true)
	writeFile(t, fsys, "/d/kept", "kept", true)
	writeFile(t, fsys, "/d/gone", "gone", true)
	writeFile(t, fsys, "/d/old", "old", true)
	require.NoError(t, fsys.SyncDir("/d"))
	writeFile(t, fsys, "/d/unsynced", "x", true)
	require.NoError(t, fsys.Rename("/d/old", "/d/renamed"))
	require.NoError(t, fsys.Remove("/d/gone"))

	after := fsys.Crash()
	names, err := after.ReadDir("/d")
	require.NoError(t, err)
	require.Equal(t, []string{"gone", "kept", "new", "old"}, names, "creations, renames and removals not made durable are forgotten")

	writeFile(t, after, "/d/unsynced", "x", true)
	require.NoError(t, after.Rename("/d/old", "/d/renamed"))
	require.NoError(t, after.Remove("/d/gone"))
	require.NoError(t, after.SyncDir("/d"))
	names, err = after.Crash().ReadDir("/d")
	require.NoError(t, err)
	require.Equal(t, []string{"kept", "new", "renamed", "unsynced"}, names)
}

func TestMemFSCrashedHandlesFail(t *testing.T) {
	fsys := NewMemFS()
	require.NoError(t, fsys.MkdirAll("/d", 0o755))
	f, err := fsys.OpenFile("/d/f", os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	_, err = fsys.Lock("/d")
	require.NoError(t, err)
	after := fsys.Crash()
	_, err = f.Write([]byte("x"))
	require.ErrorIs(t, err, ErrCrashed)
	require.ErrorIs(t, f.Sync(), ErrCrashed)
	_, err = fsys.OpenFile("/d/g", os.O_CREATE|os.O_RDWR, 0o644)
	require.ErrorIs(t, err, ErrCrashed)
	require.ErrorIs(t, fsys.SyncDir("/d"), ErrCrashed)
	unlock, err := after.Lock("/d")
	require.NoError(t, err, "the crash released the lock")
	require.NoError(t, unlock())
}

func TestMemFSFailNextHaltFull(t *testing.T) {
	fsys := NewMemFS()
	require.NoError(t, fsys.MkdirAll("/d", 0o755))
	writeFile(t, fsys, "/d/a", "a", true)
	fsys.FailNext(OpSync, "/d/b", errInjected)
	writeFile(t, fsys, "/d/a", "a", true) // another path: not failed
	f, err := fsys.OpenFile("/d/b", os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	require.ErrorIs(t, f.Sync(), errInjected)
	require.NoError(t, f.Sync(), "only the next one fails")

	fsys.FailNext(OpRename, "", errInjected)
	require.ErrorIs(t, fsys.Rename("/d/a", "/d/c"), errInjected)
	require.True(t, exists(t, fsys, "/d/a"), "a failed operation does nothing")

	fsys.Halt(2)
	_, err = f.Write([]byte("1"))
	require.NoError(t, err)
	_, err = f.Write([]byte("2"))
	require.NoError(t, err)
	_, err = f.Write([]byte("3"))
	require.ErrorIs(t, err, ErrHalted)
	require.ErrorIs(t, fsys.SyncDir("/d"), ErrHalted)
	fsys.Halt(-1)

	fsys.SetFull(5)
	n, err := f.WriteAt([]byte("abcdefgh"), 0)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Equal(t, 5, n, "the write fills the disk")
	_, err = f.Write([]byte("x"))
	require.ErrorIs(t, err, syscall.ENOSPC)
	fsys.SetFull(-1)
	_, err = f.Write([]byte("x"))
	require.NoError(t, err)
	require.Equal(t, "abxde", string(readFile(t, fsys, "/d/b")), "Write goes at the file offset")
	require.Equal(t, "sync", OpSync.String())
}
