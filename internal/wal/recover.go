package wal

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
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
	fs       FS
	dir      string
	segs     []segHeader // segments from the one holding SnapshotLSN+1 on
	counts   []uint64    // records in each of segs
	versions []uint32    // the format version of each of segs
	snaps    []uint64    // snapshot LSNs, oldest first
	junk     []string    // files to remove once recovery succeeds
	snap     []byte
	release  func() // unmaps snap, when it is mapped
	snapLSN  uint64
	snapHead snapHeader
	hasSnap  bool
	hasMan   bool
	man      manifest
	reach    uint64     // every record up to it was fsynced: the log must reach it
	last     scanResult // of the last segment
	lastLSN  uint64
	// coveredTail: the last segment ends, damaged or cut short, before
	// the snapshot's LSN. What it lacks is in the snapshot: Open leaves it
	// and starts a new segment after the snapshot.
	coveredTail bool
	skipped     int    // damaged records the snapshot covers, skipped
	buf         []byte // read buffer, reused from segment to segment
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
	if err := r.readManifest(); err != nil {
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
	man := manifest{index: seg.index, first: seg.first, reach: r.lastLSN}
	if err := writeManifest(r.fs, dir, man); err != nil {
		_ = seg.f.Close()
		return nil, nil, fmt.Errorf("wal: %w", err)
	}
	if err := r.removeJunk(); err != nil {
		_ = seg.f.Close()
		return nil, nil, err
	}
	segs := append([]segHeader(nil), r.segs...)
	l := newLog(dir, o, r.lastLSN, seg, segs, r.snapLSN)
	l.man = man
	rec := &Recovered{
		Snapshot: r.snap, Release: r.release, SnapshotLSN: r.snapLSN, LastLSN: r.lastLSN,
		Repaired: r.last.tornTo > 0 && !r.coveredTail, Skipped: r.skipped, Replay: r.replayer(),
	}
	if r.coveredTail {
		rec.Skipped++
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
		} else if name == manifestName {
			r.hasMan = true
		} else if strings.HasSuffix(name, tmpSuffix) {
			r.junk = append(r.junk, name)
		}
	}
	return nil
}

// readManifest reads the manifest, if there is one. It is replaced by a
// rename, never written in place: a damaged one is ErrCorrupt.
func (r *recovery) readManifest() error {
	if !r.hasMan {
		return nil
	}
	f, err := r.fs.OpenFile(r.path(manifestName), os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("wal: open manifest: %w", err)
	}
	defer f.Close()
	b := make([]byte, manSize+1)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("wal: read manifest: %w", err)
	}
	r.man, err = decodeManifest(b[:n])
	return err
}

// writeManifest puts m in place durably: written to a temporary file,
// fsynced, renamed over the manifest and the directory fsynced.
func writeManifest(fsys FS, dir string, m manifest) error {
	name := filepath.Join(dir, manifestName)
	tmp := name + tmpSuffix
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create manifest: %w", err)
	}
	_, err = f.WriteAt(m.encode(), 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return fmt.Errorf("manifest: %w", err)
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
		body, h, release, err := readSnapshot(r.fs, r.path(snapName(lsn)), lsn)
		if errors.Is(err, ErrCorrupt) {
			r.junk = append(r.junk, snapName(lsn)) // torn: fall back to the previous one
			continue
		}
		if err != nil {
			return err
		}
		found, r.snap, r.release, r.snapLSN, r.snapHead = true, body, release, lsn, h
	}
	r.hasSnap = found
	return nil
}

// readSnapshot reads and checks the snapshot file name of LSN lsn: an
// invalid one is ErrCorrupt, a failed read another error. A file that can
// be mapped into memory is, rather than read (release unmaps it): a
// snapshot as big as the live data is then not copied into a buffer as
// big, only decoded from the page cache.
func readSnapshot(fsys FS, name string, lsn uint64) (body []byte, h snapHeader, release func(), err error) {
	release = func() {}
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, h, release, fmt.Errorf("wal: open snapshot: %w", err)
	}
	defer f.Close() // a mapping outlives its file's descriptor
	fi, err := f.Stat()
	if err != nil {
		return nil, h, release, fmt.Errorf("wal: stat snapshot: %w", err)
	}
	if fi.Size() < snapHeaderV1 {
		return nil, h, release, fmt.Errorf("%w: snapshot %s is shorter than its header", ErrCorrupt, name)
	}
	hb := make([]byte, min(fi.Size(), snapHeaderLen))
	if _, err := f.ReadAt(hb, 0); err != nil {
		return nil, h, release, fmt.Errorf("wal: read snapshot: %w", err)
	}
	h, err = decodeSnapHeader(hb)
	if err == nil && (h.lsn != lsn || h.size != uint64(fi.Size()-h.len())) {
		err = errors.New("snapshot header does not match the file")
	}
	if err != nil {
		return nil, h, release, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	if m, ok := f.(mapper); ok && h.size > 0 {
		if all, unmap, err := m.mapRead(fi.Size()); err == nil {
			body, release = all[h.len():], unmap
		}
	}
	if body == nil {
		body = make([]byte, h.size)
		if _, err := f.ReadAt(body, h.len()); err != nil {
			return nil, h, release, fmt.Errorf("wal: read snapshot: %w", err)
		}
	}
	if crc32.Checksum(body, castagnoli) != h.crc {
		release()
		return nil, h, func() {}, fmt.Errorf("%w: %s: body CRC mismatch", ErrCorrupt, name)
	}
	return body, h, release, nil
}

// mapper is a File that can be mapped into memory, read-only: the first n
// bytes. unmap ends the mapping; nothing may read the bytes after it.
type mapper interface {
	mapRead(n int64) (b []byte, unmap func(), err error)
}

// scan finds the segments after the snapshot and checks every one of
// them: headers, the sequence of indexes and LSNs, every record; then that
// the directory holds what the manifest and the snapshot say it must.
func (r *recovery) scan() error {
	r.lastLSN = r.snapLSN
	r.reach = max(r.man.reach, r.snapHead.reach)
	if len(r.segs) == 0 {
		switch {
		case r.hasMan:
			return fmt.Errorf("%w: no segment, and the manifest names segment %d", ErrCorrupt, r.man.index)
		case r.hasSnap:
			return fmt.Errorf("%w: no segment follows the snapshot at LSN %d", ErrCorrupt, r.snapLSN)
		}
		return nil // a new log
	}
	start := -1
	for i, h := range r.segs {
		if h.first <= r.snapLSN+1 {
			start = i
		}
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
	if err := r.checkManifest(); err != nil {
		return err
	}
	if r.lastLSN < r.snapLSN {
		// The last segment ends, cut short or damaged, among the records
		// the snapshot covers (scanOne): nothing is missing.
		r.coveredTail, r.lastLSN = true, r.snapLSN
	}
	if r.lastLSN < r.reach {
		return fmt.Errorf("%w: the log ends at LSN %d, but every record up to %d was fsynced: records are missing from its end", ErrCorrupt, r.lastLSN, r.reach)
	}
	return nil
}

// checkManifest checks the segments found against the manifest: its
// newest segment must be there. A directory without a manifest was
// written before there were manifests (segments of format version 1),
// unless Open was cut short before it wrote the first: then the only
// segment of version 2 is the last one, empty.
func (r *recovery) checkManifest() error {
	last := r.segs[len(r.segs)-1]
	if r.hasMan {
		switch {
		case last.index < r.man.index:
			return fmt.Errorf("%w: segment %d is missing: the manifest names it as the newest, and the last one is %s",
				ErrCorrupt, r.man.index, segName(last.index, last.first))
		case last.index == r.man.index && last.first != r.man.first:
			return fmt.Errorf("%w: segment %s should start at LSN %d, as the manifest says", ErrCorrupt, segName(last.index, last.first), r.man.first)
		}
		return nil
	}
	if r.hasSnap && r.snapHead.version >= 2 {
		return fmt.Errorf("%w: the manifest is missing (snapshot %s was written with one)", ErrCorrupt, snapName(r.snapLSN))
	}
	for i, v := range r.versions {
		if v >= 2 && (i < len(r.segs)-1 || r.counts[i] > 0) {
			return fmt.Errorf("%w: the manifest is missing (segment %s was written with one)", ErrCorrupt, segName(r.segs[i].index, r.segs[i].first))
		}
	}
	return nil
}

// covered returns how many records of segment h the snapshot covers.
func covered(h segHeader, snapLSN uint64) uint64 {
	if snapLSN < h.first {
		return 0
	}
	return snapLSN - h.first + 1
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
	durable := covered(h, r.reach) // records fsynced, which no crash tears
	sr := &segmentReader{f: f, size: fi.Size(), buf: r.buf}
	res, err := scanSegment(sr, h, last, covered(h, r.snapLSN), durable, func(uint64, []byte) error { return nil })
	r.buf = sr.buf
	if err != nil {
		return fmt.Errorf("segment %s: %w", name, err)
	}
	r.counts = append(r.counts, res.count)
	r.versions = append(r.versions, res.version)
	r.skipped += res.skipped
	if last {
		r.last = res
		r.lastLSN = h.first + res.count - 1
	}
	return nil
}

// openLast opens the last segment for appending, cutting off its torn
// record, and fsyncs it. With no segment it creates the first; when the
// last one ends before the snapshot's LSN (coveredTail), the next, which
// starts after the snapshot, and leaves the last one to be removed.
func (r *recovery) openLast(o Options) (segment, error) {
	if len(r.segs) == 0 || r.coveredTail {
		var index uint64
		if r.coveredTail { // the only segment scanned: its records are all in the snapshot
			for _, h := range r.segs {
				r.junk = append(r.junk, segName(h.index, h.first))
			}
			index = r.segs[len(r.segs)-1].index + 1
		}
		f, err := createSegment(r.fs, r.dir, index, r.snapLSN+1, o.SegmentSize)
		if err != nil {
			return segment{}, fmt.Errorf("wal: %w", err)
		}
		r.segs, r.counts = []segHeader{{index: index, first: r.snapLSN + 1}}, []uint64{0}
		return segment{f: f, index: index, first: r.snapLSN + 1, off: segHeaderSize, size: o.SegmentSize}, nil
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
	sr := &segmentReader{f: f, size: fi.Size(), buf: buf}
	res, _, err := scanRecords(sr, h, count, covered(h, from), func(i uint64, rec []byte) error {
		if lsn := h.first + i; lsn > from {
			return fn(lsn, rec)
		}
		return nil
	})
	if err == nil && res.count < count {
		err = fmt.Errorf("%w: segment %s lost records since Open", ErrCorrupt, name)
	}
	return sr.buf, err
}
