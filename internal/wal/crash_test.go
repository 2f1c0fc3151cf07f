package wal

import (
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// crashModel is what the writers of the crash loop appended: the record
// of each LSN, and the last LSN whose Wait returned nil.
type crashModel struct {
	mu    sync.Mutex
	recs  [][]byte   // recs[lsn-1]
	chain [][32]byte // chain[lsn-1]: digest of records 1..lsn, the snapshot body
	acked uint64
}

func (m *crashModel) put(lsn uint64, rec []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uint64(len(m.recs)) < lsn {
		m.recs = append(m.recs, nil)
	}
	m.recs[lsn-1] = rec
}

func (m *crashModel) ack(lsn uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.acked = max(m.acked, lsn)
}

// digest returns the snapshot body for records 1..lsn, false if one of
// them is not known yet. m.mu is held.
func (m *crashModel) digest(lsn uint64) ([]byte, bool) {
	for uint64(len(m.chain)) < lsn {
		i := len(m.chain)
		if m.recs[i] == nil {
			return nil, false
		}
		var prev [32]byte
		if i > 0 {
			prev = m.chain[i-1]
		}
		m.chain = append(m.chain, sha256.Sum256(append(prev[:], m.recs[i]...)))
	}
	if lsn == 0 {
		return []byte{}, true
	}
	return m.chain[lsn-1][:], true
}

// check verifies what Open recovered against the model: a prefix of the
// records appended, holding every acknowledged one if durable, with a
// snapshot that matches; then it forgets the records that were lost.
func (m *crashModel) check(t *testing.T, rec *Recovered, durable bool) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	last := rec.LastLSN
	require.LessOrEqual(t, last, uint64(len(m.recs)), "recovered records that were never appended")
	if durable {
		require.GreaterOrEqual(t, last, m.acked, "lost acknowledged records")
	}
	if rec.Snapshot != nil {
		want, ok := m.digest(rec.SnapshotLSN)
		require.True(t, ok)
		require.Equal(t, want, rec.Snapshot, "snapshot at %d", rec.SnapshotLSN)
	}
	next := rec.SnapshotLSN + 1
	require.NoError(t, rec.Replay(func(lsn uint64, b []byte) error {
		require.Equal(t, next, lsn)
		require.Equal(t, m.recs[lsn-1], b, "record %d", lsn)
		next++
		return nil
	}))
	require.Equal(t, last+1, next)
	m.recs = m.recs[:last]
	m.chain = m.chain[:min(uint64(len(m.chain)), last)]
	m.acked = min(m.acked, last)
}

// crashLoop runs iterations of: open (recover and check), append from
// several goroutines with Wait while snapshots are taken, then crash at a
// random moment, or sometimes close cleanly.
func crashLoop(t *testing.T, mode SyncMode, iterations int, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 1))
	fsys := NewMemFS(WithSeed(seed))
	m := &crashModel{}
	durable := true
	var repaired int
	for it := range iterations {
		l, rec, err := Open(testDir, memOptions(fsys, mode))
		if err != nil {
			for name, data := range dump(t, fsys, testDir) {
				t.Logf("%s: %d bytes: %x", name, len(data), []byte(data)[:min(len(data), 120)])
			}
		}
		require.NoError(t, err, "iteration %d", it)
		m.check(t, rec, durable)
		if rec.Repaired {
			repaired++
		}
		clean := rnd.IntN(5) == 0
		next := runWriters(t, l, m, rnd, clean)
		if clean {
			require.NoError(t, l.Close())
			durable = true
		} else {
			_ = l.Close() // the log of the crashed process failed
			durable = mode == SyncAlways
		}
		fsys = next
	}
	t.Logf("%d iterations, %d torn tails repaired, %d records", iterations, repaired, len(m.recs))
}

// runWriters appends from 4 goroutines until a random number of records
// is appended, then crashes fsys (unless clean) and stops them. Half the
// time the crash comes at an exact file system operation instead: the
// file system halts after a random number of them (the log fails), and
// crashes once the writers have stopped. It returns the file system the
// next iteration opens.
func runWriters(t *testing.T, l *Log, m *crashModel, rnd *rand.Rand, clean bool) *MemFS {
	fsys := l.o.FS.(*MemFS)
	target := int64(1 + rnd.IntN(120))
	if !clean && rnd.IntN(2) == 0 {
		fsys.Halt(rnd.IntN(40))
	}
	var appended atomic.Int64
	reached := make(chan struct{})
	stop := make(chan struct{})
	var writers, wg sync.WaitGroup
	for g := range 4 {
		r := rand.New(rand.NewPCG(rnd.Uint64(), uint64(g)))
		writers.Go(func() { writer(t, l, m, r, &appended, target, reached, stop) })
	}
	stopped := make(chan struct{})
	go func() { writers.Wait(); close(stopped) }()
	if rnd.IntN(2) == 0 {
		wg.Go(func() { snapshotter(t, l, m, stop) })
	}
	select {
	case <-reached:
	case <-stopped: // all failed: the file system halted
	}
	next := fsys
	if !clean {
		next = fsys.Crash()
	}
	close(stop)
	<-stopped
	wg.Wait()
	return next
}

func writer(t *testing.T, l *Log, m *crashModel, r *rand.Rand, appended *atomic.Int64, target int64, reached, stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		n := r.IntN(300)
		if r.IntN(50) == 0 {
			n = 1500 + r.IntN(1000) // bigger than a segment
		}
		rec := make([]byte, n)
		for i := range rec {
			rec[i] = byte(r.Uint32())
		}
		lsn := l.Append(rec)
		m.put(lsn, rec)
		if appended.Add(1) == target {
			close(reached)
		}
		err := l.Wait(lsn)
		if err != nil {
			if !errors.Is(err, ErrFailed) && !errors.Is(err, ErrClosed) {
				t.Errorf("Wait: %v", err)
			}
			return
		}
		m.ack(lsn)
	}
}

// snapshotter takes snapshots of the acknowledged prefix until stopped.
func snapshotter(t *testing.T, l *Log, m *crashModel, stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		m.mu.Lock()
		lsn := m.acked
		body, ok := m.digest(lsn)
		m.mu.Unlock()
		if !ok || lsn == 0 {
			continue
		}
		err := l.Snapshot(lsn, func(w io.Writer) error {
			_, err := w.Write(body)
			return err
		})
		if err != nil && !errors.Is(err, ErrFailed) && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrCrashed) && !errors.Is(err, ErrHalted) {
			t.Errorf("Snapshot: %v", err)
		}
		if err != nil {
			return
		}
	}
}

// TestCrashLoop runs crashLoop in each sync mode: 30 iterations a mode by
// default, -wal.crash.iterations (CI: 100) or 3000 with -wal.soak.
func TestCrashLoop(t *testing.T) {
	iterations := 30
	switch {
	case *crashIterations > 0:
		iterations = *crashIterations
	case *soak:
		iterations = 3000
	}
	for _, mode := range []SyncMode{SyncAlways, SyncBatched, SyncNone} {
		t.Run(mode.String(), func(t *testing.T) {
			crashLoop(t, mode, iterations, testSeed(t))
		})
	}
}
