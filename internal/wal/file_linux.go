package wal

import (
	"errors"
	"os"
	"syscall"
)

// osFile is an *os.File whose Sync is fdatasync(2), which skips the
// metadata a read does not need (times), and whose Truncate also
// allocates the blocks it adds (fallocate(2), keeping the size), so that
// the space is reserved at once and the blocks lie together. Blocks that
// fallocate adds are unwritten until first written, and that first write
// changes the block map, which the next sync writes too: writesZeros
// tells the log to write zeros ahead of its records (Log.zeroAhead).
type osFile struct{ *os.File }

func wrapFile(f *os.File) File { return osFile{f} }

func (f osFile) Sync() error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if !errors.Is(err, syscall.EINTR) {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

// mapRead maps the first n bytes of the file, read-only (mmap(2)).
func (f osFile) mapRead(n int64) ([]byte, func(), error) {
	if n <= 0 || int64(int(n)) != n {
		return nil, nil, errors.New("cannot map the file")
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(n), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { _ = syscall.Munmap(b) }, nil
}

// writesZeros tells the log to write zeros ahead of its records in a
// segment fsynced at every write (Log.zeroAhead): the blocks fallocate
// adds are unwritten extents, whose first write costs each fsync a
// journal commit.
func (f osFile) writesZeros() bool { return true }

func (f osFile) Truncate(size int64) error {
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	if size > 0 {
		// Only a speed-up: a file system without fallocate (EOPNOTSUPP)
		// or out of room for it leaves the file sparse, and a write that
		// finds no room fails as it would have.
		const keepSize = 0x01 // FALLOC_FL_KEEP_SIZE
		_ = syscall.Fallocate(int(f.Fd()), keepSize, 0, size)
	}
	return nil
}
