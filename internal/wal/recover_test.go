package wal

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// dump returns every file of dir with its contents.
func dump(t testing.TB, fsys FS, dir string) map[string]string {
	t.Helper()
	names, err := fsys.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, name := range names {
		out[name] = string(readFile(t, fsys, filepath.Join(dir, name)))
	}
	return out
}

func readFile(t testing.TB, fsys FS, name string) []byte {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	b := make([]byte, fi.Size())
	_, err = f.ReadAt(b, 0)
	require.NoError(t, err)
	return b
}

// patch writes b at off in file name.
func patch(t testing.TB, fsys FS, name string, off int64, b []byte) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// segments lists the segment files of dir.
func segments(t testing.TB, fsys FS, dir string) []string {
	t.Helper()
	names, err := fsys.ReadDir(dir)
	require.NoError(t, err)
	var segs []string
	for _, n := range names {
		if _, ok := parseSegName(n); ok {
			segs = append(segs, filepath.Join(dir, n))
		}
	}
	return segs
}

// frameOffsets returns where each record of segment name starts.
func frameOffsets(t testing.TB, fsys FS, name string) []int64 {
	t.Helper()
	b := readFile(t, fsys, name)
	var offs []int64
	for off := int64(segHeaderSize); off+frameHeaderSize <= int64(len(b)); {
		_, n, st := decodeFrame(b[off:])
		if st != frameOK {
			break
		}
		offs = append(offs, off)
		off += n
	}
	return offs
}

// buildLog makes a closed log of records 1..n on a new MemFS.
func buildLog(t testing.TB, n int) *MemFS {
	t.Helper()
	fsys := NewMemFS()
	l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
	appendN(t, l, 1, n+1)
	require.NoError(t, l.Close())
	return fsys
}

// buildCrashedLog makes a log of records 1..n on a new MemFS whose
// process then crashes: every record was fsynced and survives, but the
// directory does not say so (a clean Close would), so that the last
// record may be torn, as a crash in the middle of its write leaves it.
func buildCrashedLog(t testing.TB, n int) *MemFS {
	t.Helper()
	fsys := NewMemFS()
	l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
	appendN(t, l, 1, n+1)
	fsys = fsys.Crash()
	_ = l.Close()
	return fsys
}

// requireCorrupt opens dir, expects ErrCorrupt and checks that nothing
// on disk changed.
func requireCorrupt(t *testing.T, fsys FS) {
	t.Helper()
	before := dump(t, fsys, testDir)
	_, _, err := Open(testDir, memOptions(fsys, SyncAlways))
	require.ErrorIs(t, err, ErrCorrupt)
	t.Log(err)
	require.Equal(t, before, dump(t, fsys, testDir), "Open changed the directory")
	// The lock was released.
	unlock, err := fsys.Lock(testDir)
	require.NoError(t, err)
	require.NoError(t, unlock())
}

// Cutting the log of a crashed process at any byte (zeros from there on,
// as a torn write leaves it) recovers exactly the records wholly before
// the cut.
func TestTornTailAtEveryByte(t *testing.T) {
	const n = 40
	base := buildCrashedLog(t, n)
	segs := segments(t, base, testDir)
	last := segs[len(segs)-1]
	h, _ := parseSegName(filepath.Base(last))
	offs := frameOffsets(t, base, last)
	data := readFile(t, base, last)
	end := offs[len(offs)-1] + frameSize(int(binary.LittleEndian.Uint32(data[offs[len(offs)-1]:])))
	for cut := int64(segHeaderSize); cut < end; cut++ {
		fsys := buildCrashedLog(t, n)
		patch(t, fsys, last, cut, make([]byte, end-cut))
		want := int(h.first) - 1
		torn := false
		for _, off := range offs {
			payloadEnd := off + frameHeaderSize + int64(binary.LittleEndian.Uint32(data[off:]))
			if payloadEnd <= cut {
				want++
			} else if cut > off {
				torn = true
			}
		}
		l, rec, err := Open(testDir, memOptions(fsys, SyncAlways))
		require.NoError(t, err, "cut at %d", cut)
		requireRecords(t, rec, want)
		require.Equal(t, torn, rec.Repaired, "cut at %d", cut)
		appendN(t, l, want+1, want+4)
		require.NoError(t, l.Close())
		l, rec = openT(t, testDir, memOptions(fsys, SyncAlways))
		requireRecords(t, rec, want+3)
		require.False(t, rec.Repaired)
		require.NoError(t, l.Close())
	}
}

func TestCorruption(t *testing.T) {
	const n = 40
	tests := []struct {
		name   string
		damage func(t *testing.T, fsys FS, segs []string)
	}{
		{"CRC mismatch followed by records", func(t *testing.T, fsys FS, segs []string) {
			last := segs[len(segs)-1]
			offs := frameOffsets(t, fsys, last)
			patch(t, fsys, last, offs[0]+frameHeaderSize+2, []byte{0xff})
		}},
		{"length grown over the records after", func(t *testing.T, fsys FS, segs []string) {
			last := segs[len(segs)-1]
			offs := frameOffsets(t, fsys, last)
			patch(t, fsys, last, offs[0]+1, []byte{0x3})
		}},
		{"length shrunk", func(t *testing.T, fsys FS, segs []string) {
			last := segs[len(segs)-1]
			offs := frameOffsets(t, fsys, last)
			patch(t, fsys, last, offs[len(offs)-1], []byte{0x1})
		}},
		{"CRC mismatch in an earlier segment", func(t *testing.T, fsys FS, segs []string) {
			offs := frameOffsets(t, fsys, segs[1])
			patch(t, fsys, segs[1], offs[len(offs)-1]+frameHeaderSize, []byte{0xff})
		}},
		{"earlier segment cut short", func(t *testing.T, fsys FS, segs []string) {
			offs := frameOffsets(t, fsys, segs[1])
			patch(t, fsys, segs[1], offs[len(offs)-1], make([]byte, 300))
		}},
		{"data after the end", func(t *testing.T, fsys FS, segs []string) {
			patch(t, fsys, segs[len(segs)-1], 1000, []byte{1})
		}},
		{"data after the end of an earlier segment", func(t *testing.T, fsys FS, segs []string) {
			patch(t, fsys, segs[0], 1016, []byte{1})
		}},
		{"missing segment", func(t *testing.T, fsys FS, segs []string) {
			require.NoError(t, fsys.Remove(segs[2]))
		}},
		{"missing first segment", func(t *testing.T, fsys FS, segs []string) {
			require.NoError(t, fsys.Remove(segs[0]))
		}},
		{"bad header magic", func(t *testing.T, fsys FS, segs []string) {
			patch(t, fsys, segs[len(segs)-1], 0, []byte{'X'})
		}},
		{"bad header CRC", func(t *testing.T, fsys FS, segs []string) {
			patch(t, fsys, segs[0], 20, []byte{7})
		}},
		{"header and name disagree", func(t *testing.T, fsys FS, segs []string) {
			dir, base := filepath.Split(segs[1])
			h, _ := parseSegName(base)
			require.NoError(t, fsys.Rename(segs[1], filepath.Join(dir, segName(h.index, h.first+1))))
		}},
		{"LSN gap", func(t *testing.T, fsys FS, segs []string) {
			dir, base := filepath.Split(segs[2])
			h, _ := parseSegName(base)
			h.first += 5
			f, err := fsys.OpenFile(segs[2], os.O_RDWR, 0)
			require.NoError(t, err)
			_, err = f.WriteAt(h.encode(), 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			require.NoError(t, fsys.Rename(segs[2], filepath.Join(dir, segName(h.index, h.first))))
		}},
		{"short segment", func(t *testing.T, fsys FS, segs []string) {
			f, err := fsys.OpenFile(segs[len(segs)-1], os.O_RDWR, 0)
			require.NoError(t, err)
			require.NoError(t, f.Truncate(10))
			require.NoError(t, f.Close())
		}},
		{"torn length claims more than the file", func(t *testing.T, fsys FS, segs []string) {
			last := segs[len(segs)-1]
			offs := frameOffsets(t, fsys, last)
			end := offs[len(offs)-1]
			patch(t, fsys, last, end, []byte{0, 0, 0, 1})
			patch(t, fsys, last, end+4, make([]byte, 1024-end-4))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := buildLog(t, n)
			segs := segments(t, fsys, testDir)
			require.GreaterOrEqual(t, len(segs), 4)
			tc.damage(t, fsys, segs)
			requireCorrupt(t, fsys)
		})
	}
}

func TestSnapshotFallback(t *testing.T) {
	fsys := NewMemFS()
	l, _ := openT(t, testDir, memOptions(fsys, SyncAlways))
	appendN(t, l, 1, 31)
	require.NoError(t, l.Snapshot(20, writeSnapshot(20)))
	appendN(t, l, 31, 41)
	require.NoError(t, l.Close())

	// A newer snapshot torn by a crash: Open falls back and removes it.
	for _, body := range [][]byte{nil, []byte("garbage"), snapHeader{lsn: 35, size: 3}.encode()} {
		torn := filepath.Join(testDir, snapName(35))
		patch(t, fsys, torn, 0, body)
		l, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
		require.EqualValues(t, 20, rec.SnapshotLSN)
		requireRecords(t, rec, 40)
		require.NoError(t, l.Close())
		require.NotContains(t, dump(t, fsys, testDir), snapName(35))
	}

	// The only snapshot damaged, with the segments before it gone.
	patch(t, fsys, filepath.Join(testDir, snapName(20)), snapHeaderLen+3, []byte{0xee})
	requireCorrupt(t, fsys)
}

// Temporary files of a crashed segment creation or snapshot are removed.
func TestOpenRemovesTemporaryFiles(t *testing.T) {
	fsys := buildLog(t, 5)
	patch(t, fsys, filepath.Join(testDir, segName(1, 6)+tmpSuffix), 0, []byte("x"))
	patch(t, fsys, filepath.Join(testDir, snapName(3)+tmpSuffix), 0, []byte("y"))
	l, rec := openT(t, testDir, memOptions(fsys, SyncAlways))
	requireRecords(t, rec, 5)
	require.NoError(t, l.Close())
	require.Equal(t, []string{segName(0, 1), manifestName}, keys(dump(t, fsys, testDir)))
}

// keys returns the names of the files of a dump, sorted.
func keys(files map[string]string) []string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
