package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// FS is the file system the log uses: the operating system's ([OSFS]) or,
// in tests, a [MemFS] that can crash and fail on demand.
type FS interface {
	// OpenFile opens or creates name, as os.OpenFile does.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Rename renames oldpath to newpath, replacing newpath.
	Rename(oldpath, newpath string) error
	// Remove removes the file or empty directory name.
	Remove(name string) error
	// MkdirAll creates path and its missing parents.
	MkdirAll(path string, perm os.FileMode) error
	// ReadDir returns the names of the entries of directory name, sorted.
	ReadDir(name string) ([]string, error)
	// SyncDir makes the creations, renames and removals of entries of
	// directory name durable.
	SyncDir(name string) error
	// Lock takes an exclusive lock on directory dir: while it is held, a
	// second Lock of dir, from this process or another, fails with
	// [ErrLocked]. unlock releases it.
	Lock(dir string) (unlock func() error, err error)
	// Stat describes the file or directory name.
	Stat(name string) (os.FileInfo, error)
}

// File is an open file of an [FS]. *os.File is one.
type File interface {
	io.ReaderAt
	io.Writer
	io.WriterAt
	// Sync makes the file's contents durable.
	Sync() error
	// Truncate changes the file's size; extending it adds zeros.
	Truncate(size int64) error
	// Close closes the file.
	Close() error
	// Stat describes the file.
	Stat() (os.FileInfo, error)
}

// lockFile is the name of the file that [OSFS] locks in a log directory.
const lockFile = "LOCK"

// OSFS returns the operating system's file system. Its Lock takes a
// flock(2) lock on a file named LOCK in the directory, which the kernel
// releases when the process ends.
func OSFS() FS { return osFS{} }

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // a nil *os.File must not become a non-nil File
	}
	return wrapFile(f), nil
}

func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }

func (osFS) ReadDir(name string) ([]string, error) {
	entries, err := os.ReadDir(name)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", name, err)
	}
	return nil
}

func (osFS) Lock(dir string) (func() error, error) {
	name := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := flock(f); err != nil {
		_ = f.Close()
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return f.Close, nil // closing the descriptor releases the flock
}
