package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

var (
	// ErrCorrupt is returned by [Open] (and Replay) when the log's files are
	// damaged anywhere but in a torn last record: a CRC mismatch followed by
	// more data, a bad header, a missing segment, a gap in the LSNs. Open
	// changes nothing on disk when it returns ErrCorrupt.
	ErrCorrupt = errors.New("wal: corrupt log")
	// ErrFailed is the sticky error of a [Log] after a write, sync, rename,
	// create or truncate failed: every later Wait for a record that was not
	// yet durable returns it, wrapping the cause. Reopen the log to recover.
	ErrFailed = errors.New("wal: log failed")
	// ErrLocked is returned by [Open] when another Log (of this process or
	// another) holds the directory.
	ErrLocked = errors.New("wal: directory locked by another log")
	// ErrClosed is returned by Wait for a record that was not made durable
	// before the log was closed, and by Snapshot on a closed log.
	ErrClosed = errors.New("wal: log closed")
	// ErrRecordTooLarge is the cause of the failure of a [Log] given a
	// record longer than its [Log.MaxRecordSize].
	ErrRecordTooLarge = errors.New("wal: record too large")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	frameHeaderSize = 8 // uint32 length, uint32 CRC-32C
	align           = 8

	// MaxRecordSize is the largest record a Log takes (Options.MaxRecordSize
	// may lower it): 1 GiB.
	MaxRecordSize = 1 << 30

	segMagic      = "MBUSWAL\x00"
	snapMagic     = "MBUSSNAP"
	manMagic      = "MBUSMANI"
	segVersion    = 2  // 1: written before the manifest; read still
	snapVersion   = 2  // 1: no reach; read still
	manVersion    = 1  //
	segHeaderSize = 40 // magic, version, reserved, index, first LSN, CRC, pad
	snapHeaderV1  = 40 // magic, version, body CRC, LSN, body length, CRC, pad
	snapHeaderLen = 48 // magic, version, body CRC, LSN, body length, reach, CRC, pad
	manSize       = 48 // magic, version, reserved, index, first LSN, reach, CRC, pad

	segSuffix    = ".wal"
	snapPrefix   = "snap-"
	snapSuffix   = ".snap"
	tmpSuffix    = ".tmp"
	manifestName = "MANIFEST"
)

// padded is n rounded up to a multiple of align.
func padded(n int64) int64 { return (n + align - 1) &^ (align - 1) }

// frameSize is the bytes a record of n bytes takes in a segment.
func frameSize(n int) int64 { return frameHeaderSize + padded(int64(n)) }

// frameCRC is the CRC-32C of a frame's length field and payload.
func frameCRC(lenField []byte, payload []byte) uint32 {
	return crc32.Update(crc32.Checksum(lenField, castagnoli), castagnoli, payload)
}

// appendFrame appends rec, framed, to b.
func appendFrame(b []byte, rec []byte) []byte {
	var h [frameHeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(rec)))
	binary.LittleEndian.PutUint32(h[4:8], frameCRC(h[0:4], rec))
	b = append(b, h[:]...)
	b = append(b, rec...)
	pad := int(padded(int64(len(rec)))) - len(rec)
	for range pad {
		b = append(b, 0)
	}
	return b
}

// frameStatus tells what decodeFrame found.
type frameStatus int

const (
	frameOK    frameStatus = iota // a valid record
	frameEnd                      // an all-zero header: no more records
	frameShort                    // the frame runs past the end of b
	frameBad                      // a CRC mismatch
)

// decodeFrame reads the frame at the start of b: its payload (aliasing b)
// and the bytes it takes.
func decodeFrame(b []byte) (payload []byte, size int64, st frameStatus) {
	if len(b) < frameHeaderSize {
		if allZero(b) {
			return nil, 0, frameEnd
		}
		return nil, 0, frameShort
	}
	n := binary.LittleEndian.Uint32(b[0:4])
	sum := binary.LittleEndian.Uint32(b[4:8])
	if n == 0 && sum == 0 {
		return nil, 0, frameEnd
	}
	size = frameSize(int(n))
	if size > int64(len(b)) {
		return nil, size, frameShort
	}
	payload = b[frameHeaderSize : frameHeaderSize+int64(n)]
	if frameCRC(b[0:4], payload) != sum {
		return nil, size, frameBad
	}
	return payload, size, frameOK
}

// allZero tells whether every byte of b is zero.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// segHeader is the start of a segment file.
type segHeader struct {
	index uint64 // position of the segment in the sequence
	first uint64 // LSN of its first record
}

func (h segHeader) encode() []byte {
	b := make([]byte, segHeaderSize)
	copy(b, segMagic)
	binary.LittleEndian.PutUint32(b[8:12], segVersion)
	binary.LittleEndian.PutUint64(b[16:24], h.index)
	binary.LittleEndian.PutUint64(b[24:32], h.first)
	binary.LittleEndian.PutUint32(b[32:36], crc32.Checksum(b[:32], castagnoli))
	return b
}

// decodeSegHeader reads a segment's header, of either format version.
func decodeSegHeader(b []byte) (h segHeader, version uint32, err error) {
	if len(b) < segHeaderSize {
		return h, 0, fmt.Errorf("%w: segment shorter than its header", ErrCorrupt)
	}
	if string(b[:8]) != segMagic {
		return h, 0, fmt.Errorf("%w: bad segment magic", ErrCorrupt)
	}
	if crc32.Checksum(b[:32], castagnoli) != binary.LittleEndian.Uint32(b[32:36]) {
		return h, 0, fmt.Errorf("%w: segment header CRC mismatch", ErrCorrupt)
	}
	version = binary.LittleEndian.Uint32(b[8:12])
	if version < 1 || version > segVersion {
		return h, 0, fmt.Errorf("%w: segment format version %d, want 1 to %d", ErrCorrupt, version, segVersion)
	}
	return segHeader{index: binary.LittleEndian.Uint64(b[16:24]), first: binary.LittleEndian.Uint64(b[24:32])}, version, nil
}

// snapHeader is the start of a snapshot file.
type snapHeader struct {
	version uint32
	lsn     uint64
	size    uint64 // bytes of the body
	crc     uint32 // CRC-32C of the body
	// reach is the last record fsynced when the snapshot was put in
	// place (version 2; lsn for version 1): the log holds every record up
	// to it, those the snapshot covers aside.
	reach uint64
}

// len is the size of the header, which the body follows.
func (h snapHeader) len() int64 {
	if h.version == 1 {
		return snapHeaderV1
	}
	return snapHeaderLen
}

// encode encodes h in the current version.
func (h snapHeader) encode() []byte {
	b := make([]byte, snapHeaderLen)
	copy(b, snapMagic)
	binary.LittleEndian.PutUint32(b[8:12], snapVersion)
	binary.LittleEndian.PutUint32(b[12:16], h.crc)
	binary.LittleEndian.PutUint64(b[16:24], h.lsn)
	binary.LittleEndian.PutUint64(b[24:32], h.size)
	binary.LittleEndian.PutUint64(b[32:40], h.reach)
	binary.LittleEndian.PutUint32(b[40:44], crc32.Checksum(b[:40], castagnoli))
	return b
}

// decodeSnapHeader reads a snapshot's header, of either format version,
// from b, the first snapHeaderLen bytes of the file or all of a shorter
// one.
func decodeSnapHeader(b []byte) (snapHeader, error) {
	if len(b) < snapHeaderV1 || string(b[:8]) != snapMagic {
		return snapHeader{}, errors.New("bad snapshot magic")
	}
	h := snapHeader{
		version: binary.LittleEndian.Uint32(b[8:12]),
		crc:     binary.LittleEndian.Uint32(b[12:16]),
		lsn:     binary.LittleEndian.Uint64(b[16:24]),
		size:    binary.LittleEndian.Uint64(b[24:32]),
	}
	crcAt := 32
	switch {
	case h.version == 1:
		h.reach = h.lsn
	case h.version == 2 && len(b) >= snapHeaderLen:
		h.reach = binary.LittleEndian.Uint64(b[32:40])
		crcAt = 40
	case h.version == 2:
		return snapHeader{}, errors.New("snapshot shorter than its header")
	default:
		return snapHeader{}, fmt.Errorf("snapshot format version %d, want 1 or %d", h.version, snapVersion)
	}
	if crc32.Checksum(b[:crcAt], castagnoli) != binary.LittleEndian.Uint32(b[crcAt:crcAt+4]) {
		return snapHeader{}, errors.New("snapshot header CRC mismatch")
	}
	if h.reach < h.lsn {
		return snapHeader{}, errors.New("snapshot header reach before its LSN")
	}
	return h, nil
}

// manifest is the content of the MANIFEST file: what the directory must
// hold besides what the snapshot does. The newest segment (the one being
// written) must exist, and the log must reach record reach, which was
// fsynced: a segment missing at the end, or records cut from it, is
// corruption and not a crash.
type manifest struct {
	index, first uint64 // the newest segment
	reach        uint64
}

func (m manifest) encode() []byte {
	b := make([]byte, manSize)
	copy(b, manMagic)
	binary.LittleEndian.PutUint32(b[8:12], manVersion)
	binary.LittleEndian.PutUint64(b[16:24], m.index)
	binary.LittleEndian.PutUint64(b[24:32], m.first)
	binary.LittleEndian.PutUint64(b[32:40], m.reach)
	binary.LittleEndian.PutUint32(b[40:44], crc32.Checksum(b[:40], castagnoli))
	return b
}

func decodeManifest(b []byte) (manifest, error) {
	switch {
	case len(b) != manSize || string(b[:8]) != manMagic:
		return manifest{}, fmt.Errorf("%w: bad manifest", ErrCorrupt)
	case crc32.Checksum(b[:40], castagnoli) != binary.LittleEndian.Uint32(b[40:44]):
		return manifest{}, fmt.Errorf("%w: manifest CRC mismatch", ErrCorrupt)
	case binary.LittleEndian.Uint32(b[8:12]) != manVersion:
		return manifest{}, fmt.Errorf("%w: manifest format version %d, want %d", ErrCorrupt, binary.LittleEndian.Uint32(b[8:12]), manVersion)
	}
	return manifest{
		index: binary.LittleEndian.Uint64(b[16:24]),
		first: binary.LittleEndian.Uint64(b[24:32]),
		reach: binary.LittleEndian.Uint64(b[32:40]),
	}, nil
}

// segName is the file name of segment index whose first record is first.
func segName(index, first uint64) string {
	return fmt.Sprintf("%016x-%016x%s", index, first, segSuffix)
}

// parseSegName parses a name made by segName.
func parseSegName(name string) (h segHeader, ok bool) {
	s, found := strings.CutSuffix(name, segSuffix)
	if !found || len(s) != 33 || s[16] != '-' {
		return h, false
	}
	i, err1 := strconv.ParseUint(s[:16], 16, 64)
	f, err2 := strconv.ParseUint(s[17:], 16, 64)
	if err1 != nil || err2 != nil {
		return h, false
	}
	return segHeader{index: i, first: f}, true
}

// snapName is the file name of the snapshot of everything up to lsn.
func snapName(lsn uint64) string { return fmt.Sprintf("%s%016x%s", snapPrefix, lsn, snapSuffix) }

// parseSnapName parses a name made by snapName.
func parseSnapName(name string) (lsn uint64, ok bool) {
	s, found := strings.CutPrefix(name, snapPrefix)
	if !found {
		return 0, false
	}
	s, found = strings.CutSuffix(s, snapSuffix)
	if !found || len(s) != 16 {
		return 0, false
	}
	lsn, err := strconv.ParseUint(s, 16, 64)
	return lsn, err == nil
}
