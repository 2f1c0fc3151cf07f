package wal

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// ErrCrashed is returned by every operation of a [MemFS], and of the files
// opened through it, once it has crashed: the process that used it is
// taken to be dead. [MemFS.Crash] returns the file system as it is after
// the crash.
var ErrCrashed = errors.New("wal: memfs crashed")

// ErrHalted is returned by the operations of a [MemFS] after [MemFS.Halt]'s
// budget of operations is spent.
var ErrHalted = errors.New("wal: memfs halted")

// Op is a kind of [MemFS] operation, for [MemFS.FailNext].
type Op int

// The operations of a MemFS that can be made to fail.
const (
	OpWrite    Op = iota + 1 // File.Write and File.WriteAt
	OpSync                   // File.Sync
	OpRename                 // FS.Rename
	OpOpen                   // FS.OpenFile, which creates files
	OpSyncDir                // FS.SyncDir
	OpTruncate               // File.Truncate, and OpenFile with O_TRUNC
	OpRemove                 // FS.Remove
	OpMkdir                  // FS.MkdirAll
	OpRead                   // File.ReadAt, FS.ReadDir and FS.Stat
)

var opNames = [...]string{"?", "write", "sync", "rename", "open", "syncdir", "truncate", "remove", "mkdir", "read"}

// String names the operation.
func (op Op) String() string {
	if op < 0 || int(op) >= len(opNames) {
		return "?"
	}
	return opNames[op]
}

// MemFS is an in-memory [FS] that can crash. [MemFS.Crash] forgets, per
// file, every change not made durable by File.Sync except a random prefix
// of the unsynced changes (the last change kept may be cut mid-write, so a
// record can be torn), and forgets the creations, renames and removals of
// directory entries not made durable by SyncDir of their directory.
// Directories themselves are durable once made. [MemFS.FailNext] makes the
// next matching operation fail, [MemFS.Halt] makes every operation fail
// after a number of them, and [Full] or [MemFS.SetFull] make writes past a
// byte budget fail with ENOSPC. Given its seed it is deterministic.
//
// A MemFS is safe for concurrent use.
type MemFS struct {
	d     *memDisk
	epoch uint64
}

// memDisk is the state shared by a MemFS and what its crashes return.
type memDisk struct {
	mu      sync.Mutex
	epoch   uint64
	rnd     *rand.Rand
	files   map[string]*memNode // the names as the running process sees them
	durable map[string]*memNode // the names a crash keeps
	dirs    map[string]bool
	locks   map[string]bool
	rules   []failRule
	halt    int   // operations left before halting; <0: never
	budget  int64 // bytes writes may still add; <0: unlimited
}

type failRule struct {
	op   Op
	path string
	err  error
}

// memNode is a file's contents: data as read, synced as a crash keeps
// it, and the changes made since the last sync.
type memNode struct {
	data    []byte
	synced  []byte
	pending []memChange
}

// memChange is a write of data at off, or (truncate) a resize to size.
type memChange struct {
	truncate bool
	off      int64
	data     []byte
	size     int64
}

// MemOption configures [NewMemFS].
type MemOption func(*memDisk)

// WithSeed seeds the random choices of Crash.
func WithSeed(seed uint64) MemOption {
	return func(d *memDisk) { d.rnd = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }
}

// WithRand makes Crash draw its random choices from src.
func WithRand(src rand.Source) MemOption { return func(d *memDisk) { d.rnd = rand.New(src) } }

// Full makes the file system full after limit more bytes are written: the
// write that crosses it writes what fits and fails with an error wrapping
// syscall.ENOSPC.
func Full(limit int64) MemOption { return func(d *memDisk) { d.budget = limit } }

// NewMemFS returns an empty MemFS whose root "/" and current directory
// "." exist.
func NewMemFS(opts ...MemOption) *MemFS {
	d := &memDisk{
		files: map[string]*memNode{}, durable: map[string]*memNode{},
		dirs: map[string]bool{"/": true, ".": true}, locks: map[string]bool{},
		halt: -1, budget: -1,
	}
	WithSeed(1)(d)
	for _, o := range opts {
		o(d)
	}
	return &MemFS{d: d, epoch: d.epoch}
}

// Crash simulates a power failure and returns the file system as a new
// process finds it. The receiver, and every file opened through it, then
// fails every operation with [ErrCrashed]; its locks are released. Failure
// rules and Halt are cleared; the byte budget of Full stays.
func (m *MemFS) Crash() *MemFS {
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.epoch++
	files := make(map[string]*memNode, len(d.durable))
	done := map[*memNode]bool{}
	names := make([]string, 0, len(d.durable))
	for name := range d.durable {
		names = append(names, name)
	}
	sort.Strings(names) // deterministic draws
	for _, name := range names {
		n := d.durable[name]
		files[name] = n
		if !done[n] {
			done[n] = true
			n.crash(d.rnd)
		}
	}
	d.files = files
	d.locks = map[string]bool{}
	d.rules = nil
	d.halt = -1
	return &MemFS{d: d, epoch: d.epoch}
}

// FailNext makes the next op whose path contains pathSubstring fail with
// err, doing nothing. Rules queue up; each fails one operation.
func (m *MemFS) FailNext(op Op, pathSubstring string, err error) {
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	m.d.rules = append(m.d.rules, failRule{op, pathSubstring, err})
}

// Halt lets after more operations through, then fails every operation
// with [ErrHalted], doing nothing, as if the process had frozen; a Crash
// then shows the state at that point. Halt(-1) lifts it.
func (m *MemFS) Halt(after int) {
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	m.d.halt = after
}

// SetFull lets limit more bytes be written before writes fail with
// ENOSPC; a negative limit lifts the limit.
func (m *MemFS) SetFull(limit int64) {
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	m.d.budget = limit
}

// check is called, with d.mu held, by every operation: it returns the
// error the operation fails with, if any.
func (m *MemFS) check(op Op, path string) error {
	d := m.d
	if m.epoch != d.epoch {
		return ErrCrashed
	}
	for i, r := range d.rules {
		if r.op == op && strings.Contains(path, r.path) {
			d.rules = append(d.rules[:i:i], d.rules[i+1:]...)
			return r.err
		}
	}
	if d.halt == 0 {
		return ErrHalted
	}
	if d.halt > 0 {
		d.halt--
	}
	return nil
}

// lookupDir returns nil if name is an existing directory.
func (d *memDisk) lookupDir(name string) error {
	if _, ok := d.files[name]; ok {
		return syscall.ENOTDIR
	}
	if !d.dirs[name] {
		return os.ErrNotExist
	}
	return nil
}

// OpenFile opens name; it honours O_CREATE, O_EXCL, O_TRUNC, O_APPEND and
// the access mode.
func (m *MemFS) OpenFile(name string, flag int, _ os.FileMode) (File, error) {
	name = filepath.Clean(name)
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := m.check(OpOpen, name); err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	if err := d.lookupDir(filepath.Dir(name)); err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	if d.dirs[name] {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	n, ok := d.files[name]
	switch {
	case !ok && flag&os.O_CREATE == 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	case !ok:
		n = &memNode{}
		d.files[name] = n
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrExist}
	}
	f := &memFile{fs: m, n: n, name: name, flag: flag}
	if flag&os.O_TRUNC != 0 && f.writable() {
		n.change(memChange{truncate: true})
	}
	return f, nil
}

// Rename renames the file oldpath to newpath.
func (m *MemFS) Rename(oldpath, newpath string) error {
	oldpath, newpath = filepath.Clean(oldpath), filepath.Clean(newpath)
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	err := m.check(OpRename, oldpath+" "+newpath)
	if err == nil {
		err = d.lookupDir(filepath.Dir(newpath))
	}
	n, ok := d.files[oldpath]
	if err == nil && !ok {
		err = os.ErrNotExist
	}
	if err == nil && d.dirs[newpath] {
		err = syscall.EISDIR
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	delete(d.files, oldpath)
	d.files[newpath] = n
	return nil
}

// Remove removes the file or empty directory name.
func (m *MemFS) Remove(name string) error {
	name = filepath.Clean(name)
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := m.check(OpRemove, name); err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	if _, ok := d.files[name]; ok {
		delete(d.files, name)
		return nil
	}
	if !d.dirs[name] {
		return &os.PathError{Op: "remove", Path: name, Err: os.ErrNotExist}
	}
	if len(d.children(name)) > 0 {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	delete(d.dirs, name)
	return nil
}

// MkdirAll creates the directory path and its missing parents.
func (m *MemFS) MkdirAll(path string, _ os.FileMode) error {
	path = filepath.Clean(path)
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := m.check(OpMkdir, path); err != nil {
		return &os.PathError{Op: "mkdir", Path: path, Err: err}
	}
	var missing []string
	for p := path; !d.dirs[p]; p = filepath.Dir(p) {
		if _, ok := d.files[p]; ok {
			return &os.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
		}
		missing = append(missing, p)
	}
	for _, p := range missing {
		d.dirs[p] = true
	}
	return nil
}

// children returns the names of the entries of directory dir, sorted.
func (d *memDisk) children(dir string) []string {
	var names []string
	for name := range d.files {
		if filepath.Dir(name) == dir {
			names = append(names, filepath.Base(name))
		}
	}
	for name := range d.dirs {
		if name != dir && filepath.Dir(name) == dir {
			names = append(names, filepath.Base(name))
		}
	}
	sort.Strings(names)
	return names
}

// ReadDir returns the sorted names of the entries of directory name.
func (m *MemFS) ReadDir(name string) ([]string, error) {
	name = filepath.Clean(name)
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	err := m.check(OpRead, name)
	if err == nil {
		err = d.lookupDir(name)
	}
	if err != nil {
		return nil, &os.PathError{Op: "readdir", Path: name, Err: err}
	}
	return d.children(name), nil
}

// SyncDir makes the current entries of directory name durable: files
// created or renamed into it survive a crash, files removed or renamed out
// of it stay gone.
func (m *MemFS) SyncDir(name string) error {
	name = filepath.Clean(name)
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	err := m.check(OpSyncDir, name)
	if err == nil {
		err = d.lookupDir(name)
	}
	if err != nil {
		return &os.PathError{Op: "syncdir", Path: name, Err: err}
	}
	for p := range d.durable {
		if filepath.Dir(p) == name && d.files[p] == nil {
			delete(d.durable, p)
		}
	}
	for p, n := range d.files {
		if filepath.Dir(p) == name {
			d.durable[p] = n
		}
	}
	return nil
}

// Lock locks directory dir until the returned function is called or the
// file system crashes.
func (m *MemFS) Lock(dir string) (func() error, error) {
	dir = filepath.Clean(dir)
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if m.epoch != d.epoch {
		return nil, ErrCrashed
	}
	if err := d.lookupDir(dir); err != nil {
		return nil, &os.PathError{Op: "lock", Path: dir, Err: err}
	}
	if d.locks[dir] {
		return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
	}
	d.locks[dir] = true
	var once sync.Once
	return func() error {
		once.Do(func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			if m.epoch == d.epoch {
				delete(d.locks, dir)
			}
		})
		return nil
	}, nil
}

// Stat describes the file or directory name.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	name = filepath.Clean(name)
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := m.check(OpRead, name); err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if d.dirs[name] {
		return memInfo{name: filepath.Base(name), dir: true}, nil
	}
	if n, ok := d.files[name]; ok {
		return memInfo{name: filepath.Base(name), size: int64(len(n.data))}, nil
	}
	return nil, &os.PathError{Op: "stat", Path: name, Err: os.ErrNotExist}
}
