package wal

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"
)

func crc32Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func TestFrameRoundTrip(t *testing.T) {
	var buf []byte
	var recs [][]byte
	for n := range 70 {
		rec := bytes.Repeat([]byte{byte(n + 1)}, n)
		recs = append(recs, rec)
		before := len(buf)
		buf = appendFrame(buf, rec)
		require.EqualValues(t, frameSize(n), len(buf)-before)
		require.Zero(t, len(buf)%align, "frames keep 8-byte alignment")
	}
	for _, rec := range recs {
		payload, size, st := decodeFrame(buf)
		require.Equal(t, frameOK, st)
		require.Equal(t, rec, payload)
		buf = buf[size:]
	}
	require.Empty(t, buf)
}

func TestDecodeFrameStatuses(t *testing.T) {
	frame := appendFrame(nil, []byte("hello, world"))
	_, _, st := decodeFrame(make([]byte, 64))
	require.Equal(t, frameEnd, st, "zeros end the log")
	_, _, st = decodeFrame(nil)
	require.Equal(t, frameEnd, st)
	_, _, st = decodeFrame(frame[:len(frame)-8])
	require.Equal(t, frameShort, st)
	_, _, st = decodeFrame([]byte{1, 2})
	require.Equal(t, frameShort, st)
	empty := appendFrame(nil, nil)
	require.Len(t, empty, 8)
	require.NotEqual(t, make([]byte, 8), empty, "an empty record is not an end")
	_, _, st = decodeFrame(empty)
	require.Equal(t, frameOK, st)
	for i := range len(frame) - 4 { // every byte but the padding
		bad := bytes.Clone(frame)
		bad[i] ^= 0x10
		_, _, st = decodeFrame(bad)
		require.NotEqual(t, frameOK, st, "a flip at %d", i)
	}
}

func TestHeaders(t *testing.T) {
	h := segHeader{index: 7, first: 12345}
	got, version, err := decodeSegHeader(h.encode())
	require.NoError(t, err)
	require.Equal(t, h, got)
	require.EqualValues(t, 2, version)
	for i := range 36 {
		b := h.encode()
		b[i] ^= 1
		_, _, err := decodeSegHeader(b)
		require.ErrorIs(t, err, ErrCorrupt, "flip at %d", i)
	}
	// Version 1, written before manifests, is the same but for its number.
	v1 := h.encode()
	binary.LittleEndian.PutUint32(v1[8:12], 1)
	binary.LittleEndian.PutUint32(v1[32:36], crc32Checksum(v1[:32]))
	got, version, err = decodeSegHeader(v1)
	require.NoError(t, err)
	require.Equal(t, h, got)
	require.EqualValues(t, 1, version)
	v3 := h.encode()
	binary.LittleEndian.PutUint32(v3[8:12], 3)
	binary.LittleEndian.PutUint32(v3[32:36], crc32Checksum(v3[:32]))
	_, _, err = decodeSegHeader(v3)
	require.ErrorIs(t, err, ErrCorrupt)

	s := snapHeader{version: 2, lsn: 99, size: 1000, crc: 0xdeadbeef, reach: 120}
	gs, err := decodeSnapHeader(s.encode())
	require.NoError(t, err)
	require.Equal(t, s, gs)
	require.EqualValues(t, snapHeaderLen, gs.len())
	for i := range 44 {
		b := s.encode()
		b[i] ^= 1
		_, err = decodeSnapHeader(b)
		require.Error(t, err, "flip at %d", i)
	}
	_, err = decodeSnapHeader(s.encode()[:snapHeaderV1])
	require.Error(t, err, "a version 2 header cut short")
	s.reach = 98
	_, err = decodeSnapHeader(s.encode())
	require.Error(t, err, "reach before the LSN")
	// Version 1: 40 bytes, no reach (the LSN stands for it).
	gs, err = decodeSnapHeader(snapHeaderV1Bytes(99, 1000, 0xdeadbeef))
	require.NoError(t, err)
	require.Equal(t, snapHeader{version: 1, lsn: 99, size: 1000, crc: 0xdeadbeef, reach: 99}, gs)
	require.EqualValues(t, snapHeaderV1, gs.len())

	m := manifest{index: 3, first: 77, reach: 80}
	gm, err := decodeManifest(m.encode())
	require.NoError(t, err)
	require.Equal(t, m, gm)
	for i := range 44 {
		b := m.encode()
		b[i] ^= 1
		_, err = decodeManifest(b)
		require.ErrorIs(t, err, ErrCorrupt, "flip at %d", i)
	}
	_, err = decodeManifest(m.encode()[:40])
	require.ErrorIs(t, err, ErrCorrupt)
}

// snapHeaderV1Bytes is a snapshot header as format version 1 wrote it.
func snapHeaderV1Bytes(lsn, size uint64, crc uint32) []byte {
	b := make([]byte, snapHeaderV1)
	copy(b, snapMagic)
	binary.LittleEndian.PutUint32(b[8:12], 1)
	binary.LittleEndian.PutUint32(b[12:16], crc)
	binary.LittleEndian.PutUint64(b[16:24], lsn)
	binary.LittleEndian.PutUint64(b[24:32], size)
	binary.LittleEndian.PutUint32(b[32:36], crc32Checksum(b[:32]))
	return b
}

func TestNames(t *testing.T) {
	name := segName(0x1f, 0xabc)
	require.Equal(t, "000000000000001f-0000000000000abc.wal", name)
	h, ok := parseSegName(name)
	require.True(t, ok)
	require.Equal(t, segHeader{index: 0x1f, first: 0xabc}, h)
	for _, bad := range []string{"x.wal", name + ".tmp", "000000000000001f_0000000000000abc.wal", "000000000000001g-0000000000000abc.wal"} {
		_, ok := parseSegName(bad)
		require.False(t, ok, bad)
	}
	require.Equal(t, "snap-0000000000000063.snap", snapName(99))
	lsn, ok := parseSnapName(snapName(99))
	require.True(t, ok)
	require.EqualValues(t, 99, lsn)
	for _, bad := range []string{"snap-63.snap", "snap-0000000000000063.snap.tmp", "0000000000000063.snap"} {
		_, ok := parseSnapName(bad)
		require.False(t, ok, bad)
	}
}
