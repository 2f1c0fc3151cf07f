package wal

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// damageOp is one change FuzzRecover makes to the files of a log, decoded
// from 4 bytes of the fuzz input: what, which file, where, which value.
type damageOp struct {
	kind  byte // 0 flip a byte, 1 tear the last segment, 2 set a byte, 3 truncate, 4 remove
	file  byte // index into the directory's sorted names
	off   uint16
	value byte
}

const damageKinds = 5

func decodeDamage(b []byte) []damageOp {
	var ops []damageOp
	for len(b) >= 5 && len(ops) < 8 {
		ops = append(ops, damageOp{kind: b[0] % damageKinds, file: b[1], off: binary.LittleEndian.Uint16(b[2:]), value: b[4]})
		b = b[5:]
	}
	return ops
}

// fuzzLog builds a log of n records (up to 60) on a MemFS, with a snapshot
// at snap if 0 < snap <= n, taken before the records after it are
// appended. The log is closed cleanly or, when crash is set, the file
// system crashes (every record was fsynced: a crash loses none). It
// returns the file system and the record up to which the directory says
// the log was fsynced (the manifest's reach, or the snapshot's): a record
// up to there that is damaged is not a torn write.
func fuzzLog(t *testing.T, n, snap int, crash bool) (*MemFS, int) {
	fsys := NewMemFS()
	o := memOptions(fsys, SyncAlways)
	o.SegmentSize = 512
	l, _, err := Open(testDir, o)
	require.NoError(t, err)
	if snap > 0 && snap <= n {
		appendN(t, l, 1, snap+1)
		require.NoError(t, l.Snapshot(uint64(snap), writeSnapshot(snap)))
		appendN(t, l, snap+1, n+1)
	} else {
		appendN(t, l, 1, n+1)
	}
	if crash {
		fsys = fsys.Crash()
		_ = l.Close()
	} else {
		require.NoError(t, l.Close())
	}
	m, err := decodeManifest(readFile(t, fsys, filepath.Join(testDir, manifestName)))
	require.NoError(t, err)
	reach := int(m.reach)
	if snap <= n {
		reach = max(reach, snap)
	}
	return fsys, reach
}

// applyDamage applies ops; it returns the records a torn tail leaves if
// every op is a tear of the last segment, else -1.
func applyDamage(t *testing.T, fsys *MemFS, ops []damageOp) int {
	want := -1
	for i, op := range ops {
		names, err := fsys.ReadDir(testDir)
		require.NoError(t, err)
		segs := segments(t, fsys, testDir)
		if len(names) == 0 || len(segs) == 0 {
			return -1
		}
		if op.kind == 1 {
			want = tear(t, fsys, segs, op.off, i == 0 || want >= 0)
			continue
		}
		want = -1
		name := filepath.Join(testDir, names[int(op.file)%len(names)])
		data := readFile(t, fsys, name)
		if len(data) == 0 && op.kind != 4 {
			continue
		}
		off := int64(op.off) % int64(max(len(data), 1))
		switch op.kind {
		case 0:
			patch(t, fsys, name, off, []byte{data[off] ^ (op.value | 1)})
		case 2:
			patch(t, fsys, name, off, []byte{op.value})
		case 3:
			f, err := fsys.OpenFile(name, os.O_RDWR, 0)
			require.NoError(t, err)
			require.NoError(t, f.Truncate(off))
			require.NoError(t, f.Close())
		case 4:
			require.NoError(t, fsys.Remove(name))
		}
	}
	return want
}

// tear zeroes the last segment from a point after its header on, as a
// crash during the write there leaves it, and returns the records left
// (when only tears preceded it: onlyTears), else -1.
func tear(t *testing.T, fsys *MemFS, segs []string, at uint16, onlyTears bool) int {
	last := segs[len(segs)-1]
	data := readFile(t, fsys, last)
	if int64(len(data)) <= segHeaderSize {
		return -1
	}
	off := segHeaderSize + int64(at)%(int64(len(data))-segHeaderSize)
	want := -1
	if onlyTears {
		want = recordsBefore(t, fsys, segs, off)
	}
	patch(t, fsys, last, off, make([]byte, int64(len(data))-off))
	return want
}

// recordsBefore counts the records whose payload lies wholly before off
// in the last segment, plus those of the segments before.
func recordsBefore(t *testing.T, fsys FS, segs []string, off int64) int {
	last := segs[len(segs)-1]
	h, _ := parseSegName(filepath.Base(last))
	n := int(h.first) - 1
	data := readFile(t, fsys, last)
	for _, o := range frameOffsets(t, fsys, last) {
		if o+frameHeaderSize+int64(binary.LittleEndian.Uint32(data[o:])) <= off {
			n++
		}
	}
	return n
}

// checkRecover opens the damaged log: it must either fail with
// ErrCorrupt or recover a prefix of the records (exactly the records
// before the tear when the damage is only a torn tail), and then take
// appends and reopen.
func checkRecover(t *testing.T, fsys *MemFS, n, snap, reach, want int) {
	if snap > n {
		snap = 0 // fuzzLog took none
	}
	if want >= 0 && want < snap {
		want = snap // a tear into the snapshot's records loses nothing: Open starts after it
	}
	if want >= 0 && want < reach {
		want = -1 // a tear into records fsynced is not a crash's: ErrCorrupt
	}
	o := memOptions(fsys, SyncAlways)
	o.SegmentSize = 512
	l, rec, err := Open(testDir, o)
	if err != nil {
		require.ErrorIs(t, err, ErrCorrupt)
		require.Equal(t, -1, want, "a torn tail is not corruption: %v", err)
		return
	}
	defer l.Close()
	got := int(rec.LastLSN)
	require.LessOrEqual(t, got, n)
	if want >= 0 {
		require.Equal(t, want, got, "a torn tail leaves the records before it")
	}
	requireRecords(t, rec, got)
	appendN(t, l, got+1, got+4)
	require.NoError(t, l.Close())
	l, rec, err = Open(testDir, o)
	require.NoError(t, err)
	requireRecords(t, rec, got+3)
	require.False(t, rec.Repaired)
	require.NoError(t, l.Close())
}

// FuzzRecover damages a log at random and checks what Open makes of it:
// go test ./internal/wal -run '^$' -fuzz FuzzRecover.
func FuzzRecover(f *testing.F) {
	f.Add(uint8(30), uint8(0), []byte{})
	f.Add(uint8(30), uint8(0), []byte{1, 0, 100, 0, 0})
	f.Add(uint8(30), uint8(0), []byte{1, 0, 13, 0, 0})
	f.Add(uint8(30), uint8(10), []byte{0, 1, 80, 0, 4})
	f.Add(uint8(45), uint8(20), []byte{0, 3, 200, 0, 0x40})
	f.Add(uint8(45), uint8(20), []byte{4, 2, 0, 0, 0})
	f.Add(uint8(45), uint8(20), []byte{3, 5, 60, 0, 0})
	f.Add(uint8(20), uint8(5), []byte{2, 7, 41, 0, 9, 1, 0, 50, 0, 0})
	f.Add(uint8(30), uint8(64+10), []byte{1, 0, 100, 0, 0})
	f.Add(uint8(30), uint8(64+0), []byte{1, 0, 13, 0, 0})
	f.Fuzz(func(t *testing.T, n, snap uint8, damage []byte) {
		records := int(n%60) + 1
		fsys, reach := fuzzLog(t, records, int(snap%64), snap&64 != 0)
		want := applyDamage(t, fsys, decodeDamage(damage))
		checkRecover(t, fsys, records, int(snap%64), reach, want)
	})
}

// TestRandomDamage runs FuzzRecover's check on random damage: 100 cases
// each run (-wal.damage.cases; CI runs 300), 20000 with -wal.soak.
func TestRandomDamage(t *testing.T) {
	cases := 100
	switch {
	case *damageCases > 0:
		cases = *damageCases
	case *soak:
		cases = 20000
	}
	r := rand.New(rand.NewPCG(testSeed(t), 2))
	for range cases {
		damage := make([]byte, 5*(1+r.IntN(3)))
		for i := range damage {
			damage[i] = byte(r.Uint32())
		}
		records, snap := 1+r.IntN(60), r.IntN(64)
		fsys, reach := fuzzLog(t, records, snap, r.IntN(2) == 0)
		want := applyDamage(t, fsys, decodeDamage(damage))
		checkRecover(t, fsys, records, snap, reach, want)
		if t.Failed() {
			t.Fatalf("damage %v on %d records", damage, records)
		}
	}
}
