package minibus_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/wal"
	"github.com/stretchr/testify/require"
)

// A damaged durable directory: a missing log segment is ErrCorrupt wherever
// it is, the last one and the only one included; a damaged record that the
// snapshot holds does not fail Open; a torn last record after a crash is
// repaired.

// segmentFiles lists the log segments in ddir, oldest first.
func segmentFiles(t *testing.T, fs wal.FS) []string {
	names, err := fs.ReadDir(ddir)
	require.NoError(t, err)
	var segs []string
	for _, n := range names {
		if strings.HasSuffix(n, ".wal") {
			segs = append(segs, filepath.Join(ddir, n))
		}
	}
	return segs
}

// sendOrders sends n messages of about 100 bytes to a new queue "q".
func sendOrders(d *denv, n int) {
	q := d.queue("q", nil)
	for i := range n {
		require.NoError(d.t, q.SendMessage(d.ctx, &minibus.Message{Body: fmt.Appendf(nil, "order %03d %s", i, strings.Repeat(".", 90))}, nil))
	}
}

// requireCorruptOpen opens ddir and expects ErrCorrupt, naming the directory.
func requireCorruptOpen(d *denv) {
	d.t.Helper()
	_, err := minibus.Open(ddir, append([]minibus.Option{minibus.WithClock(d.clock), minibus.WithFS(d.fs)}, d.opts...)...)
	requireSentinel(d.t, err, minibus.ErrCorrupt, ddir)
	d.t.Log(err)
}

func TestOpenMissingSegmentIsCorrupt(t *testing.T) {
	tests := []struct {
		name  string
		close bool // close cleanly, else crash
		seg   int  // which segment goes: its index, -1 for the last
		segs  int  // at least this many segments
	}{
		{"last of 8, crashed", false, -1, 8},
		{"middle, crashed", false, 3, 8},
		{"the only one, crashed", false, 0, 1},
		{"the only one, closed", true, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDurableEnv(t, minibus.WithSegmentSize(4<<10))
			n := 200
			if tc.segs == 1 {
				n = 20
			}
			sendOrders(d, n)
			if tc.close {
				require.NoError(t, d.ns.Close())
			} else {
				d.fs = d.fs.Crash()
				_ = d.ns.Close()
			}
			segs := segmentFiles(t, d.fs)
			if tc.segs > 1 {
				require.GreaterOrEqual(t, len(segs), tc.segs)
			} else {
				require.Len(t, segs, 1)
			}
			i := tc.seg
			if i < 0 {
				i += len(segs)
			}
			require.NoError(t, d.fs.Remove(segs[i]))
			requireCorruptOpen(d)
		})
	}
}

// patchFile writes b at off in name.
func patchFile(t *testing.T, fs wal.FS, name string, off int64, b []byte) {
	f, err := fs.OpenFile(name, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// lastRecord returns where the last record of segment name starts and
// how long its payload is.
func lastRecord(t *testing.T, fs wal.FS, name string) (off, n int64) {
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	data := make([]byte, fi.Size())
	_, err = f.ReadAt(data, 0)
	require.NoError(t, err)
	o := lastRecordOffset(t, data)
	l := int64(data[o]) | int64(data[o+1])<<8 | int64(data[o+2])<<16 | int64(data[o+3])<<24
	return int64(o), l
}

// After a clean Close the snapshot holds every record: a damaged last
// record of the log is skipped, nothing is lost.
func TestOpenDamagedLastRecordAfterCloseLosesNothing(t *testing.T) {
	d := newDurableEnv(t, minibus.WithSegmentSize(4<<10))
	sendOrders(d, 200)
	require.NoError(t, d.ns.Close())
	segs := segmentFiles(t, d.fs)
	off, _ := lastRecord(t, d.fs, segs[len(segs)-1])
	patchFile(t, d.fs, segs[len(segs)-1], off+8+2, []byte{0xff})
	d.open()
	require.EqualValues(t, 200, d.q("q").RuntimeProperties().ActiveMessageCount)
	d.send(d.q("q"), "after")
	d.reopen()
	require.EqualValues(t, 201, d.q("q").RuntimeProperties().ActiveMessageCount)
}

// A torn last record after a crash (the write of a record no call was
// told about, cut short) is cut off, as before: the records before it
// stay. It is indistinguishable from a flipped byte in the last record a
// call was told about, which Open treats the same.
func TestOpenTornTailAfterCrashIsRepaired(t *testing.T) {
	d := newDurableEnv(t, minibus.WithSegmentSize(4<<10))
	sendOrders(d, 200)
	d.fs = d.fs.Crash()
	_ = d.ns.Close()
	segs := segmentFiles(t, d.fs)
	off, n := lastRecord(t, d.fs, segs[len(segs)-1])
	cut := off + 8 + n/2
	patchFile(t, d.fs, segs[len(segs)-1], cut, make([]byte, off+8+n-cut))
	d.open()
	require.EqualValues(t, 199, d.q("q").RuntimeProperties().ActiveMessageCount)
	d.send(d.q("q"), "after")
	d.reopen()
	require.EqualValues(t, 200, d.q("q").RuntimeProperties().ActiveMessageCount)
}
