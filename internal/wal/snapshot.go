package wal

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Snapshot records that everything up to and including lsn is in the
// snapshot write writes, so that the records up to lsn can go. It fsyncs
// the log up to lsn (whatever the mode), has write write the snapshot to
// a temporary file, fsyncs it, renames it into place and fsyncs the
// directory; then it removes the segments wholly at or below lsn and the
// older snapshots. Snapshots are taken one at a time.
//
// An error from write is returned as is and leaves the log as it was. A
// failed write, fsync or rename of the snapshot makes the log failed (the
// sticky [ErrFailed]). A failure to remove old files is returned but
// leaves the log working: the next Snapshot or Open removes them.
func (l *Log) Snapshot(lsn uint64, write func(w io.Writer) error) error {
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	if lsn < l.snapLSN {
		return fmt.Errorf("wal: snapshot at LSN %d is older than the one at %d", lsn, l.snapLSN)
	}
	if err := l.syncTo(lsn); err != nil {
		return err
	}
	if err := l.writeSnapshot(lsn, write); err != nil {
		return err
	}
	l.snapLSN = lsn
	return l.compact(lsn)
}

// Sync returns once every record up to lsn is fsynced, whatever the mode.
// A Snapshot's write calls it when what it writes reflects records past the
// snapshot's LSN, so that the snapshot is never ahead of the log on disk.
func (l *Log) Sync(lsn uint64) error { return l.syncTo(lsn) }

// syncTo returns once every record up to lsn is fsynced.
func (l *Log) syncTo(lsn uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.err != nil:
		return l.err
	case l.closing:
		return ErrClosed
	case lsn > l.last:
		return fmt.Errorf("wal: snapshot at LSN %d, past the last appended %d", lsn, l.last)
	}
	l.syncReq = max(l.syncReq, lsn)
	select {
	case l.kick <- struct{}{}:
	default:
	}
	for l.synced < lsn {
		if l.err != nil {
			return l.err
		}
		if l.closed {
			return ErrClosed
		}
		l.cond.Wait()
	}
	return nil
}

// snapWriter writes a snapshot's body after its header, computing its
// CRC and length, and remembers the first error.
type snapWriter struct {
	f   File
	off int64
	crc uint32
	err error
}

// Write writes p after what was written before.
func (w *snapWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	w.crc = crc32.Update(w.crc, castagnoli, p[:n])
	w.err = err
	return n, err
}

// writeSnapshot writes the snapshot of lsn and puts it in place durably.
func (l *Log) writeSnapshot(lsn uint64, write func(w io.Writer) error) error {
	fsys := l.o.FS
	name := filepath.Join(l.dir, snapName(lsn))
	tmp := name + tmpSuffix
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return l.failIO(fmt.Errorf("create snapshot: %w", err))
	}
	sw := &snapWriter{f: f, off: snapHeaderLen}
	bw := bufio.NewWriterSize(sw, 1<<20)
	if err := write(bw); err != nil {
		_ = f.Close()
		_ = fsys.Remove(tmp)
		if sw.err != nil {
			return l.failIO(fmt.Errorf("write snapshot: %w", sw.err))
		}
		return fmt.Errorf("wal: snapshot: %w", err)
	}
	err = bw.Flush()
	if err == nil {
		// What the snapshot reflects is fsynced (the callback syncs the
		// records past lsn it reflects): Open must find the log reaching
		// that far.
		l.mu.Lock()
		reach := max(lsn, l.synced)
		l.mu.Unlock()
		h := snapHeader{lsn: lsn, size: uint64(sw.off - snapHeaderLen), crc: sw.crc, reach: reach}
		_, err = f.WriteAt(h.encode(), 0)
	}
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
		err = fsys.SyncDir(l.dir)
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return l.failIO(fmt.Errorf("snapshot %s: %w", name, err))
	}
	return nil
}

// compact removes the segments wholly at or below lsn (never the one being
// written) and the snapshots older than lsn's.
func (l *Log) compact(lsn uint64) error {
	l.segMu.Lock()
	k := 0
	for k+1 < len(l.segs) && l.segs[k+1].first <= lsn+1 {
		k++
	}
	old := append([]segHeader(nil), l.segs[:k]...)
	l.segs = append([]segHeader(nil), l.segs[k:]...)
	l.segMu.Unlock()
	var errs []error
	remove := func(name string) {
		if err := l.o.FS.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, h := range old {
		remove(segName(h.index, h.first))
	}
	names, err := l.o.FS.ReadDir(l.dir)
	if err != nil {
		errs = append(errs, err)
	}
	for _, name := range names {
		if s, ok := parseSnapName(name); ok && s < lsn {
			remove(name)
		} else if strings.HasPrefix(name, snapPrefix) && strings.HasSuffix(name, tmpSuffix) {
			remove(name)
		}
	}
	if err := l.o.FS.SyncDir(l.dir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("wal: snapshot at LSN %d written; removing old files: %w", lsn, errors.Join(errs...))
	}
	return nil
}
