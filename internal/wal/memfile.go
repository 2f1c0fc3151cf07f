package wal

import (
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// change applies c to the file's data and remembers it until a sync.
func (n *memNode) change(c memChange) {
	n.data = c.apply(n.data)
	n.pending = append(n.pending, c)
}

// apply returns b changed by c.
func (c memChange) apply(b []byte) []byte {
	if c.truncate {
		if c.size <= int64(len(b)) {
			return b[:c.size]
		}
		return append(b, make([]byte, c.size-int64(len(b)))...)
	}
	if end := c.off + int64(len(c.data)); end > int64(len(b)) {
		b = append(b, make([]byte, end-int64(len(b)))...)
	}
	copy(b[c.off:], c.data)
	return b
}

// sync makes the file's data durable.
func (n *memNode) sync() {
	for _, c := range n.pending {
		n.synced = c.apply(n.synced)
	}
	n.pending = nil
}

// crash keeps the synced data and a random prefix of the changes since,
// the last of which may be cut short.
func (n *memNode) crash(r *rand.Rand) {
	img := append([]byte(nil), n.synced...)
	k := r.IntN(len(n.pending) + 1)
	for _, c := range n.pending[:k] {
		img = c.apply(img)
	}
	if k < len(n.pending) && !n.pending[k].truncate {
		c := n.pending[k]
		c.data = c.data[:r.IntN(len(c.data)+1)]
		img = c.apply(img)
	}
	n.data = img
	n.synced = append([]byte(nil), img...)
	n.pending = nil
}

// memFile is a file opened through a MemFS.
type memFile struct {
	fs     *MemFS
	n      *memNode
	name   string
	flag   int
	off    int64
	closed bool
}

func (f *memFile) writable() bool { return f.flag&(os.O_WRONLY|os.O_RDWR) != 0 }

// begin locks the disk and checks the file and op; on error it unlocks.
func (f *memFile) begin(op Op, what string) error {
	f.fs.d.mu.Lock()
	err := f.fs.check(op, f.name)
	switch {
	case err != nil:
	case f.closed:
		err = os.ErrClosed
	case op == OpRead && f.flag&os.O_WRONLY != 0, op != OpRead && !f.writable():
		err = syscall.EBADF
	}
	if err != nil {
		f.fs.d.mu.Unlock()
		return &os.PathError{Op: what, Path: f.name, Err: err}
	}
	return nil
}

func (f *memFile) end() { f.fs.d.mu.Unlock() }

// ReadAt reads len(p) bytes at off.
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.begin(OpRead, "read"); err != nil {
		return 0, err
	}
	defer f.end()
	if off < 0 {
		return 0, &os.PathError{Op: "read", Path: f.name, Err: syscall.EINVAL}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Write writes p at the file's offset (its end with O_APPEND).
func (f *memFile) Write(p []byte) (int, error) {
	if err := f.begin(OpWrite, "write"); err != nil {
		return 0, err
	}
	defer f.end()
	if f.flag&os.O_APPEND != 0 {
		f.off = int64(len(f.n.data))
	}
	n, err := f.writeAt(p, f.off)
	f.off += int64(n)
	return n, err
}

// WriteAt writes p at off.
func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.begin(OpWrite, "write"); err != nil {
		return 0, err
	}
	defer f.end()
	if off < 0 {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: syscall.EINVAL}
	}
	return f.writeAt(p, off)
}

// writeAt writes what the byte budget allows of p at off.
func (f *memFile) writeAt(p []byte, off int64) (int, error) {
	d := f.fs.d
	var err error
	if d.budget >= 0 && int64(len(p)) > d.budget {
		p = p[:d.budget]
		err = &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	if d.budget >= 0 {
		d.budget -= int64(len(p))
	}
	if len(p) > 0 {
		f.n.change(memChange{off: off, data: append([]byte(nil), p...)})
	}
	return len(p), err
}

// Sync makes the file's data durable.
func (f *memFile) Sync() error {
	if err := f.begin(OpSync, "sync"); err != nil {
		return err
	}
	defer f.end()
	f.n.sync()
	return nil
}

// Truncate resizes the file, adding zeros when it grows.
func (f *memFile) Truncate(size int64) error {
	if err := f.begin(OpTruncate, "truncate"); err != nil {
		return err
	}
	defer f.end()
	if size < 0 {
		return &os.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	}
	f.n.change(memChange{truncate: true, size: size})
	return nil
}

// Close closes the file; it fails only if it was closed already.
func (f *memFile) Close() error {
	d := f.fs.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if f.closed {
		return &os.PathError{Op: "close", Path: f.name, Err: os.ErrClosed}
	}
	f.closed = true
	return nil
}

// Stat describes the file.
func (f *memFile) Stat() (os.FileInfo, error) {
	d := f.fs.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if f.fs.epoch != d.epoch {
		return nil, &os.PathError{Op: "stat", Path: f.name, Err: ErrCrashed}
	}
	return memInfo{name: filepath.Base(f.name), size: int64(len(f.n.data))}, nil
}

// memInfo describes a file or directory of a MemFS.
type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
