package wal

import (
	"fmt"
	"os"
	"path/filepath"
)

// segment is the segment file the flusher appends to.
type segment struct {
	f     File
	index uint64
	first uint64 // LSN of its first record
	off   int64  // where the next frame goes
	size  int64  // preallocated size
	dirty bool   // written since the last fsync
	// zeroed is how far the file has been written with zeros ahead of
	// its frames (zeroAhead); 0 when it is not.
	zeroed int64
}

// zeroChunk is how much of a segment zeroAhead writes with zeros at a time.
const zeroChunk = 256 << 10

// zeros is what zeroAhead writes; never written to.
var zeros [zeroChunk]byte

// zeroAhead writes zeros over the segment from where zeros were last
// written up to a zeroChunk boundary past end, before frames are written
// below end, when the mode syncs every write and the file asks for it
// (writesZeros): a segment preallocated without being written (fallocate
// on ext4) has every first write into a block change the file's block map,
// and then each fsync writes that metadata too; over blocks already
// written it writes only the data. So every chunk's zeros go out with one
// fsync, and the many fsyncs over the chunk write data only. Zeros are
// what a preallocated file reads anyway: a crash in the middle changes
// nothing recovery sees.
func (l *Log) zeroAhead(end int64) error {
	if l.o.Sync != SyncAlways || end <= l.seg.zeroed {
		return nil
	}
	z, ok := l.seg.f.(interface{ writesZeros() bool })
	if !ok || !z.writesZeros() {
		return nil
	}
	from := max(l.seg.zeroed, l.seg.off)
	to := min(l.seg.size, (end+zeroChunk-1)/zeroChunk*zeroChunk)
	if to <= from {
		return nil
	}
	for off := from; off < to; {
		n := min(to-off, zeroChunk)
		if _, err := l.seg.f.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("write segment %d: %w", l.seg.index, err)
		}
		off += n
	}
	l.seg.zeroed = to
	l.seg.dirty = true
	return nil
}

// createSegment creates segment index, whose first record is first,
// preallocated to size: it builds it under a temporary name (truncate,
// header, fsync) and renames it into place, then fsyncs the directory, so
// that a segment under its own name always has a valid header. It returns
// the open file.
func createSegment(fsys FS, dir string, index, first uint64, size int64) (File, error) {
	name := filepath.Join(dir, segName(index, first))
	tmp := name + tmpSuffix
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", err)
	}
	err = f.Truncate(size)
	if err == nil {
		_, err = f.WriteAt(segHeader{index: index, first: first}.encode(), 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		_ = f.Close()
		_ = fsys.Remove(tmp)
		return nil, fmt.Errorf("create segment %s: %w", name, err)
	}
	return f, nil
}

// write writes the frames of buf (frame i ends at ends[i]; the first is
// LSN first): as many as fit into the current segment in one write, then
// into new segments.
func (l *Log) write(buf []byte, ends []int, first uint64) error {
	i, start := 0, 0 // next frame, and where it starts in buf
	for i < len(ends) {
		room := l.seg.size - l.seg.off
		j := i
		for j < len(ends) && int64(ends[j]-start) <= room {
			j++
		}
		if j == i {
			if err := l.roll(first+uint64(i), int64(ends[i]-start)); err != nil {
				return err
			}
			continue
		}
		end := ends[j-1]
		if err := l.zeroAhead(l.seg.off + int64(end-start)); err != nil {
			return err
		}
		if _, err := l.seg.f.WriteAt(buf[start:end], l.seg.off); err != nil {
			return fmt.Errorf("write segment %d: %w", l.seg.index, err)
		}
		l.seg.off += int64(end - start)
		l.seg.dirty = true
		i, start = j, end
	}
	return nil
}

// roll seals the current segment (fsyncs it, whatever the mode, so that a
// later segment never follows a torn one) and starts the next, whose first
// record is LSN first and takes need bytes: a record bigger than a segment
// gets a segment of its own size.
func (l *Log) roll(first uint64, need int64) error {
	l.syncMu.Lock() // an fsync of the segment under way ends first
	l.syncMu.Unlock()
	if err := l.Err(); err != nil {
		return err // that fsync failed: no segment may follow this one
	}
	if l.seg.dirty {
		if err := l.seg.f.Sync(); err != nil {
			return fmt.Errorf("sync segment %d: %w", l.seg.index, err)
		}
		l.seg.dirty = false
	}
	size := max(l.o.SegmentSize, padded(segHeaderSize+need))
	f, err := createSegment(l.o.FS, l.dir, l.seg.index+1, first, size)
	if err != nil {
		return err
	}
	_ = l.seg.f.Close() // its data is durable: a close error loses nothing
	l.seg = segment{f: f, index: l.seg.index + 1, first: first, off: segHeaderSize, size: size}
	l.segMu.Lock()
	l.segs = append(l.segs, segHeader{index: l.seg.index, first: first})
	l.segMu.Unlock()
	// The manifest names the new segment, which exists now: a crash
	// before it is written leaves the manifest one segment behind, which
	// Open accepts; a segment missing after it is written is corruption.
	m := manifest{index: l.seg.index, first: first, reach: max(l.man.reach, first-1)}
	if err := writeManifest(l.o.FS, l.dir, m); err != nil {
		return err
	}
	l.man = m
	return nil
}
