package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// chunkSize is how much a segmentReader reads at a time.
const chunkSize = 1 << 20

// segmentReader reads a file through a window of bytes.
type segmentReader struct {
	f    File
	size int64
	buf  []byte
	base int64 // file offset of buf[0]
	n    int   // bytes of buf that hold data
}

// window returns want bytes at off, fewer at the end of the file; the
// slice is valid until the next call.
func (r *segmentReader) window(off int64, want int64) ([]byte, error) {
	if off >= r.base && off+want <= r.base+int64(r.n) {
		return r.buf[off-r.base : off-r.base+want], nil
	}
	n := min(max(want, chunkSize), r.size-off)
	if n <= 0 {
		return nil, nil
	}
	if int64(cap(r.buf)) < n {
		r.buf = make([]byte, n)
	}
	r.buf = r.buf[:n]
	got, err := r.f.ReadAt(r.buf, off)
	if err != nil && !(errors.Is(err, io.EOF) && int64(got) == n) {
		return nil, fmt.Errorf("read at %d: %w", off, err)
	}
	r.base, r.n = off, got
	return r.buf[:min(want, n)], nil
}

// frame reads the frame at off.
func (r *segmentReader) frame(off int64) (payload []byte, size int64, st frameStatus, err error) {
	h, err := r.window(off, frameHeaderSize)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(h) < frameHeaderSize {
		payload, size, st = decodeFrame(h)
		return payload, size, st, nil
	}
	size = frameSize(int(binary.LittleEndian.Uint32(h)))
	if off+size > r.size {
		_, _, st = decodeFrame(h) // frameEnd for a zero header, else frameShort
		return nil, size, st, nil
	}
	b, err := r.window(off, size)
	if err != nil {
		return nil, 0, 0, err
	}
	payload, size, st = decodeFrame(b)
	return payload, size, st, nil
}

// lastNonZero returns the offset just past the last non-zero byte at or
// after from, or from if there is none.
func (r *segmentReader) lastNonZero(from int64) (int64, error) {
	end := from
	for off := from; off < r.size; off += chunkSize {
		b, err := r.window(off, chunkSize)
		if err != nil {
			return 0, err
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != 0 {
				end = off + int64(i) + 1
				break
			}
		}
	}
	return end, nil
}

// scanResult is what scanSegment found.
type scanResult struct {
	count   uint64 // records, valid or skipped
	end     int64  // offset just past the last of them
	tornTo  int64  // > end: a torn record (or, covered, damage) lies in [end, tornTo)
	version uint32 // the segment's format version
	skipped int    // damaged records the snapshot covers, skipped
}

// scanSegment checks the segment r reads, whose header must be want,
// calling fn for each valid record with its index in the segment. Its
// first covered records are in the snapshot and its first durable ones
// were fsynced (durable >= covered need not hold). Everything after the
// last record must be zero, except, in the last segment, one torn record
// followed only by zeros, or damage among the covered records; anything
// else is ErrCorrupt.
func scanSegment(r *segmentReader, want segHeader, last bool, covered, durable uint64, fn func(uint64, []byte) error) (scanResult, error) {
	res, st, err := scanRecords(r, want, ^uint64(0), covered, fn)
	if err != nil {
		return res, err
	}
	return res, checkTail(r, &res, st, last, covered, durable)
}

// scanRecords checks the header of the segment r reads and calls fn for
// each of its first limit records that is valid, with its index. A
// damaged record among the first covered ones, which the snapshot holds,
// is skipped (counted, not given to fn) when its frame still says where
// the next starts: a valid frame or zeros follow it. It returns the status
// of the frame it stopped at.
func scanRecords(r *segmentReader, want segHeader, limit, covered uint64, fn func(uint64, []byte) error) (scanResult, frameStatus, error) {
	hb, err := r.window(0, segHeaderSize)
	if err != nil {
		return scanResult{}, 0, err
	}
	h, version, err := decodeSegHeader(hb)
	if err != nil {
		return scanResult{}, 0, err
	}
	if h != want {
		return scanResult{}, 0, fmt.Errorf("%w: header says segment %d from LSN %d, name says %d from %d",
			ErrCorrupt, h.index, h.first, want.index, want.first)
	}
	res := scanResult{end: segHeaderSize, version: version}
	st := frameEnd
	for res.end < r.size && res.count < limit {
		var payload []byte
		var n int64
		payload, n, st, err = r.frame(res.end)
		if err != nil {
			break
		}
		if st == frameBad && res.count < covered {
			var skip bool
			if skip, err = r.followedByFrame(res.end + n); err != nil {
				break
			}
			if skip {
				res.count++
				res.skipped++
				res.end += n
				continue
			}
		}
		if st != frameOK {
			break
		}
		if err = fn(res.count, payload); err != nil {
			break
		}
		res.count++
		res.end += n
	}
	return res, st, err
}

// followedByFrame tells whether a valid frame, or zeros, or the end of the
// file, is at off.
func (r *segmentReader) followedByFrame(off int64) (bool, error) {
	if off >= r.size {
		return off == r.size, nil
	}
	_, _, st, err := r.frame(off)
	return err == nil && (st == frameOK || st == frameEnd), err
}

// checkTail checks what follows the last record of a segment: the frame at
// res.end has status st, and is the record of index res.count.
func checkTail(r *segmentReader, res *scanResult, st frameStatus, last bool, covered, durable uint64) error {
	nz, err := r.lastNonZero(res.end)
	if err != nil {
		return err
	}
	if nz <= res.end {
		return nil // only zeros follow: a clean end
	}
	if res.count < covered {
		// Damage among the records the snapshot covers, which hides where
		// the next one starts. At the end of the log, with no valid record
		// after it, nothing is lost: Open leaves the segment and starts
		// the next after the snapshot (coveredTail).
		if last {
			valid, err := r.validFrameIn(res.end+align, nz)
			if err != nil {
				return err
			}
			if !valid {
				res.tornTo = nz
				return nil
			}
		}
		return fmt.Errorf("%w: damaged record at offset %d, which the snapshot covers, followed by records it does not", ErrCorrupt, res.end)
	}
	if !last || st == frameEnd {
		return fmt.Errorf("%w: damaged data at offset %d", ErrCorrupt, res.end)
	}
	if res.count < durable {
		return fmt.Errorf("%w: damaged record at offset %d, which was fsynced: not a torn write", ErrCorrupt, res.end)
	}
	torn, err := tornRecord(r, res.end, nz)
	if err != nil {
		return err
	}
	if !torn {
		return fmt.Errorf("%w: damaged record at offset %d followed by more data", ErrCorrupt, res.end)
	}
	res.tornTo = nz
	return nil
}

// validFrameIn tells whether a valid frame starts at an aligned offset in
// [from, to).
func (r *segmentReader) validFrameIn(from, to int64) (bool, error) {
	for p := from; p < to; p += align {
		_, _, st, err := r.frame(p)
		if err != nil || st == frameOK {
			return st == frameOK, err
		}
	}
	return false, nil
}

// tornRecord tells whether the bytes in [off, nz), after which the file
// holds only zeros, are a prefix of one record whose write was cut short:
// the frame's length must fit in the file (a torn length field is a
// prefix of the little-endian length, so never larger than the real one),
// no non-zero byte may lie past the frame it claims, and no valid frame
// may start inside it (damage followed by more records is corruption).
func tornRecord(r *segmentReader, off, nz int64) (bool, error) {
	h, err := r.window(off, frameHeaderSize)
	if err != nil || len(h) < frameHeaderSize {
		return false, err
	}
	frameEnd := off + frameSize(int(binary.LittleEndian.Uint32(h)))
	if frameEnd > r.size || nz > frameEnd {
		return false, nil
	}
	b, err := r.window(off, frameEnd-off)
	if err != nil {
		return false, err
	}
	for p := align; p < len(b); p += align {
		if _, _, st := decodeFrame(b[p:]); st == frameOK {
			return false, nil
		}
	}
	return true, nil
}
