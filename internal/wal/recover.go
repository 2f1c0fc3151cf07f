package wal

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// DirError is returned by [Open] when the log's directory cannot be used:
// it is a file ([syscall.ENOTDIR]), or the file system failed to read,
// create or lock it. Err is the cause.
type DirError struct {
	// Op is what failed: "use" (a file), "read", "create" or "lock".
	Op  string
	Dir string
	Err error
}

// Error returns "wal: <op> log directory <dir>: <cause>".
func (e *DirError) Error() string {
	return fmt.Sprintf("wal: %s log directory %s: %v", e.Op, e.Dir, e.Err)
}

// Unwrap returns the cause.
func (e *DirError) Unwrap() error { return e.Err }

// prepareDir makes sure dir is a directory, creating it if it is missing.
func prepareDir(fsys FS, dir string) error {
	fi, err := fsys.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return &DirError{Op: "use", Dir: dir, Err: syscall.ENOTDIR}
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return &DirError{Op: "read", Dir: dir, Err: err}
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return &DirError{Op: "create", Dir: dir, Err: err}
	}
	if err := fsys.SyncDir(filepath.Dir(dir)); err != nil {
		return &DirError{Op: "create", Dir: dir, Err: err}
	}
	return nil
}

// recovery is the state of Open while it reads the directory.
type recovery struct {
	fs      FS
	dir     string
	segs    []segHeader // segments from the one holding SnapshotLSN+1 on
	counts  []uint64    // records in each of segs
	snaps   []uint64    // snapshot LSNs, oldest first
	junk    []string    // files to remove once recovery succeeds
	snap    []byte
	release func() // unmaps snap, when it is mapped
	snapLSN uint64
	last    scanResult // of the last segment
	lastLSN uint64
	buf     []byte // read buffer, reused from segment to segment
}

// open recovers the log in the locked directory dir.
func open(dir string, o Options) (_ *Log, _ *Recovered, err error) {
	r := &recovery{fs: o.FS, dir: dir, release: func() {}}
	defer func() {
		if err != nil {
			r.release()
		}
	}()
	if err := r.list(); err != nil {
		return nil, nil, err
	}
	if err := r.loadSnapshot(); err != nil {
		return nil, nil, err
	}
	if err := r.scan(); err != nil {
		return nil, nil, err
	}
	// The log checked out: from here on, change the directory.
	seg, err := r.openLast(o)
	if err != nil {
		return nil, nil, err
	}
	if err := r.removeJunk(); err != nil {
		_ = seg.f.Close()
		return nil, nil, err
	}
	segs := append([]segHeader(nil), r.segs...)
	if len(segs) == 0 {
		segs = []segHeader{{index: seg.index, first: seg.first}}
	}
	l := newLog(dir, o, r.lastLSN, seg, segs, r.snapLSN)
	rec := &Recovered{
		Snapshot: r.snap, Release: r.release, SnapshotLSN: r.snapLSN, LastLSN: r.lastLSN,
		Repaired: r.last.tornTo > 0, Replay: r.replayer(),
	}
	return l, rec, nil
}

// list sorts the directory's files into segments, snapshots and junk.
func (r *recovery) list() error {
	names, err := r.fs.ReadDir(r.dir)
	if err != nil {
		return fmt.Errorf("wal: read log directory: %w", err)
	}
	for _, name := range names {
		if h, ok := parseSegName(name); ok {
			r.segs = append(r.segs, h) // names sort by index
		} else if lsn, ok := parseSnapName(name); ok {
			r.snaps = append(r.snaps, lsn)
		} else if strings.HasSuffix(name, tmpSuffix) {
			r.junk = append(r.junk, name)
		}
	}
	return nil
}

func (r *recovery) path(name string) string { return filepath.Join(r.dir, name) }

// loadSnapshot loads the newest valid snapshot; the others become junk.
func (r *recovery) loadSnapshot() error {
	found := false
	for i := len(r.snaps) - 1; i >= 0; i-- {
		lsn := r.snaps[i]
		if found {
			r.junk = append(r.junk, snapName(lsn))
			continue
		}
		body, release, err := readSnapshot(r.fs, r.path(snapName(lsn)), lsn)
		if errors.Is(err, ErrCorrupt) {
			r.junk = append(r.junk, snapName(lsn)) // torn: fall back to the previous one
			continue
		}
		if err != nil {
			return err
		}
		found, r.snap, r.release, r.snapLSN = true, body, release, lsn
	}
	return nil
}

// readSnapshot reads and checks the snapshot file name of LSN lsn: an
// invalid one is ErrCorrupt, a failed read another error. A file that can
// be mapped into memory is, rather than read (release unmaps it): a
// snapshot as big as the live data is then not copied into a buffer as
// big, only decoded from the page cache.
func readSnapshot(fsys FS, name string, lsn uint64) (body []byte, release func(), err error) {
	release = func() {}
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, release, fmt.Errorf("wal: open snapshot: %w", err)
	}
	defer f.Close() // a mapping outlives its file's descriptor
	fi, err := f.Stat()
	if err != nil {
		return nil, release, fmt.Errorf("wal: stat snapshot: %w", err)
	}
	hb := make([]byte, snapHeaderLen)
	if fi.Size() < snapHeaderLen {
		return nil, release, fmt.Errorf("%w: snapshot %s is shorter than its header", ErrCorrupt, name)
	}
	if _, err := f.ReadAt(hb, 0); err != nil {
		return nil, release, fmt.Errorf("wal: read snapshot: %w", err)
	}
	h, err := decodeSnapHeader(hb)
	if err == nil && (h.lsn != lsn || h.size != uint64(fi.Size()-snapHeaderLen)) {
		err = errors.New("snapshot header does not match the file")
	}
	if err != nil {
		return nil, release, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	if m, ok := f.(mapper); ok && h.size > 0 {
		if all, unmap, err := m.mapRead(fi.Size()); err == nil {
			body, release = all[snapHeaderLen:], unmap
		}
	}
	if body == nil {
		body = make([]byte, h.size)
		if _, err := f.ReadAt(body, snapHeaderLen); err != nil {
			return nil, release, fmt.Errorf("wal: read snapshot: %w", err)
		}
	}
	if crc32.Checksum(body, castagnoli) != h.crc {
		release()
		return nil, func() {}, fmt.Errorf("%w: %s: body CRC mismatch", ErrCorrupt, name)
	}
	return body, release, nil
}

// mapper is a File that can be mapped into memory, read-only: the first n
// bytes. unmap ends the mapping; nothing may read the bytes after it.
type mapper interface {
	mapRead(n int64) (b []byte, unmap func(), err error)
}

// scan finds the segments after the snapshot and checks every one of
// them: headers, the sequence of indexes and LSNs, every record.
func (r *recovery) scan() error {
	r.lastLSN = r.snapLSN
	start := -1
	for i, h := range r.segs {
		if h.first <= r.snapLSN+1 {
			start = i
		}
	}
	if len(r.segs) == 0 {
		return nil
	}
	if start < 0 {
		return fmt.Errorf("%w: the first segment starts at LSN %d, after LSN %d", ErrCorrupt, r.segs[0].first, r.snapLSN+1)
	}
	for _, h := range r.segs[:start] {
		r.junk = append(r.junk, segName(h.index, h.first)) // wholly in the snapshot
	}
	r.segs = r.segs[start:]
	for i, h := range r.segs {
		if err := r.scanOne(i, h); err != nil {
			return err
		}
	}
	if r.lastLSN < r.snapLSN {
		return fmt.Errorf("%w: the log ends at LSN %d, before the snapshot at %d", ErrCorrupt, r.lastLSN, r.snapLSN)
	}
	return nil
}

// scanOne checks segment i of r.segs.
func (r *recovery) scanOne(i int, h segHeader) error {
	name := segName(h.index, h.first)
	switch {
	case h.first == 0:
		return fmt.Errorf("%w: segment %s starts at LSN 0", ErrCorrupt, name)
	case i > 0 && h.index != r.segs[i-1].index+1:
		return fmt.Errorf("%w: segment %d is missing before %s", ErrCorrupt, r.segs[i-1].index+1, name)
	case i > 0 && h.first != r.segs[i-1].first+r.counts[i-1]:
		return fmt.Errorf("%w: segment %s should start at LSN %d", ErrCorrupt, name, r.segs[i-1].first+r.counts[i-1])
	}
	f, err := r.fs.OpenFile(r.path(name), os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("wal: open segment: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("wal: stat segment: %w", err)
	}
	last := i == len(r.segs)-1
	sr := &segmentReader{f: f, size: fi.Size(), buf: r.buf}
	res, err := scanSegment(sr, h, last, func([]byte) error { return nil })
	r.buf = sr.buf
	if err != nil {
		return fmt.Errorf("segment %s: %w", name, err)
	}
	r.counts = append(r.counts, res.count)
	if last {
		r.last = res
		r.lastLSN = h.first + res.count - 1
	}
	return nil
}

// openLast opens the last segment for appending, cutting off its torn
// record, and fsyncs it; with no segment it creates the first.
func (r *recovery) openLast(o Options) (segment, error) {
	if len(r.segs) == 0 {
		f, err := createSegment(r.fs, r.dir, 0, r.snapLSN+1, o.SegmentSize)
		if err != nil {
			return segment{}, fmt.Errorf("wal: %w", err)
		}
		return segment{f: f, first: r.snapLSN + 1, off: segHeaderSize, size: o.SegmentSize}, nil
	}
	h := r.segs[len(r.segs)-1]
	f, err := r.fs.OpenFile(r.path(segName(h.index, h.first)), os.O_RDWR, 0)
	if err != nil {
		return segment{}, fmt.Errorf("wal: open segment: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && r.last.tornTo > r.last.end {
		_, err = f.WriteAt(make([]byte, r.last.tornTo-r.last.end), r.last.end)
	}
	if err == nil {
		// Records a SyncNone log wrote before it was closed may not be
		// durable yet: the Log takes every record it recovered as synced.
		err = f.Sync()
	}
	if err != nil {
		_ = f.Close()
		return segment{}, fmt.Errorf("wal: repair the torn end of segment %d: %w", h.index, err)
	}
	return segment{f: f, index: h.index, first: h.first, off: r.last.end, size: fi.Size()}, nil
}

// removeJunk removes temporary files, snapshots older than the one loaded
// or invalid, and segments wholly in the snapshot.
func (r *recovery) removeJunk() error {
	if len(r.junk) == 0 {
		return nil
	}
	for _, name := range r.junk {
		if err := r.fs.Remove(r.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("wal: remove %s: %w", name, err)
		}
	}
	if err := r.fs.SyncDir(r.dir); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	return nil
}

// replayer returns Recovered.Replay: it reads the segments again and
// calls fn for each record after the snapshot up to the recovered end.
func (r *recovery) replayer() func(fn func(uint64, []byte) error) error {
	fsys, dir, segs, counts, from := r.fs, r.dir, r.segs, r.counts, r.snapLSN
	return func(fn func(uint64, []byte) error) error {
		var buf []byte
		for i, h := range segs {
			var err error
			buf, err = replaySegment(fsys, filepath.Join(dir, segName(h.index, h.first)), h, counts[i], from, buf, fn)
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// replaySegment calls fn for the first count records of segment h, those
// after LSN from, reading through buf; it returns the buffer for reuse.
func replaySegment(fsys FS, name string, h segHeader, count, from uint64, buf []byte, fn func(uint64, []byte) error) ([]byte, error) {
	if count == 0 || h.first+count-1 <= from {
		return buf, nil
	}
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return buf, fmt.Errorf("wal: replay: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return buf, fmt.Errorf("wal: replay: %w", err)
	}
	lsn := h.first
	sr := &segmentReader{f: f, size: fi.Size(), buf: buf}
	res, _, err := scanRecords(sr, h, count, func(rec []byte) error {
		lsn++
		if lsn-1 <= from {
			return nil
		}
		return fn(lsn-1, rec)
	})
	if err == nil && res.count < count {
		err = fmt.Errorf("%w: segment %s lost records since Open", ErrCorrupt, name)
	}
	return sr.buf, err
}
