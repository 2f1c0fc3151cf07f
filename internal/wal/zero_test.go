package wal

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// zeroFS is a file system whose segment files ask for zeros ahead of the
// records (writesZeros, as on Linux) and record every write.
type zeroFS struct {
	FS
	mu     sync.Mutex
	writes map[string][]span
}

type span struct {
	off, end int64
	zeros    bool
}

func (z *zeroFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := z.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &zeroFile{File: f, fs: z, name: strings.TrimSuffix(name, tmpSuffix)}, nil
}

type zeroFile struct {
	File
	fs   *zeroFS
	name string
}

func (f *zeroFile) writesZeros() bool { return true }

func (f *zeroFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	f.fs.writes[f.name] = append(f.fs.writes[f.name], span{off, off + int64(len(p)), len(p) > 0 && !bytes.ContainsFunc(p, func(r rune) bool { return r != 0 })})
	f.fs.mu.Unlock()
	return f.File.WriteAt(p, off)
}

// With SyncAlways on a file that asks for it, the log writes zeros ahead of
// its records a chunk at a time, never over a record, up to the segment's
// end; every record survives a crash. With the other modes it writes none.
func TestZeroAhead(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncBatched, SyncNone} {
		t.Run(mode.String(), func(t *testing.T) {
			mem := NewMemFS()
			zfs := &zeroFS{FS: mem, writes: map[string][]span{}}
			o := memOptions(zfs, mode)
			o.SegmentSize = 1 << 20
			l, _ := openT(t, testDir, o)
			const n = 30000 // about 3 MiB of records: three segments or more
			for i := 1; i <= n; i += 40 {
				appendN(t, l, i, min(i+40, n+1))
			}
			require.NoError(t, l.Close())

			zfs.mu.Lock()
			defer zfs.mu.Unlock()
			segs, zeroWrites := 0, 0
			for name, ws := range zfs.writes {
				if !strings.HasSuffix(name, ".wal") {
					continue
				}
				segs++
				var framesEnd, zeroedTo int64
				for _, w := range ws {
					if !w.zeros {
						if mode == SyncAlways && w.off > 0 { // not the header
							require.LessOrEqual(t, w.end, zeroedTo, "%s: frames at %d..%d past the zeros", name, w.off, w.end)
						}
						framesEnd = max(framesEnd, w.end)
						continue
					}
					if w.off == 0 {
						continue // the file made
					}
					zeroWrites++
					require.GreaterOrEqual(t, w.off, framesEnd, "%s: zeros at %d over frames ending at %d", name, w.off, framesEnd)
					require.True(t, w.end%zeroChunk == 0 || w.end == o.SegmentSize, "%s: zeros end at %d", name, w.end)
					zeroedTo = w.end
				}
			}
			require.GreaterOrEqual(t, segs, 3)
			if mode == SyncAlways {
				require.Greater(t, zeroWrites, 8)
			} else {
				require.Zero(t, zeroWrites)
			}
			if mode == SyncNone {
				return
			}
			_, rec := openT(t, testDir, memOptions(mem.Crash(), mode))
			requireRecords(t, rec, n)
		})
	}
}
