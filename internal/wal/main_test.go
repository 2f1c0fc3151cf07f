package wal

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// soak runs the long crash loops and damage sweeps:
// go test ./internal/wal -run 'CrashLoop|RandomDamage' -args -wal.soak.
var soak = flag.Bool("wal.soak", false, "run the long crash and fault soaks")

// crashIterations and damageCases size TestCrashLoop and TestRandomDamage;
// 0 is the default run's size (crashIterations: 30 a sync mode;
// damageCases: 100), or the soak's with -wal.soak. CI runs 100 and 300.
var (
	crashIterations = flag.Int("wal.crash.iterations", 0, "iterations of each of TestCrashLoop's sync modes; 0: 30, 3000 with -wal.soak (CI runs 100)")
	damageCases     = flag.Int("wal.damage.cases", 0, "cases of TestRandomDamage; 0: 100, 20000 with -wal.soak (CI runs 300)")
)

// seed replays a crash loop or damage sweep from the seed a failure logged.
var seed = flag.Uint64("wal.seed", 0, "seed of TestCrashLoop and TestRandomDamage (0: random)")

// testSeed returns -wal.seed, or a random seed, and logs it.
func testSeed(t *testing.T) uint64 {
	s := *seed
	if s == 0 {
		s = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -args -wal.seed %d)", s, s)
	return s
}

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testDir = "/db/wal"

// memOptions are the options the tests use on a MemFS: small segments so
// that logs roll often.
func memOptions(fsys FS, mode SyncMode) Options {
	return Options{FS: fsys, Sync: mode, SegmentSize: 1024, Clock: clock.NewMock()}
}

// record is the i-th test record: its number and up to 200 bytes drawn
// from i, so that records differ in content and length.
func record(i int) []byte {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	b := fmt.Appendf(nil, "record %d:", i)
	for range r.IntN(200) {
		b = append(b, byte('a'+r.IntN(26)))
	}
	return b
}

// entry is a replayed record.
type entry struct {
	lsn uint64
	rec []byte
}

// replayAll collects every record Replay gives.
func replayAll(t testing.TB, rec *Recovered) []entry {
	t.Helper()
	var got []entry
	require.NoError(t, rec.Replay(func(lsn uint64, b []byte) error {
		got = append(got, entry{lsn, bytes.Clone(b)})
		return nil
	}))
	return got
}

// openT opens dir and fails the test on error; the log is closed when
// the test ends if the test did not close it.
func openT(t testing.TB, dir string, o Options) (*Log, *Recovered) {
	t.Helper()
	l, rec, err := Open(dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l, rec
}

// appendN appends records from..to-1 and waits for the last.
func appendN(t testing.TB, l *Log, from, to int) {
	t.Helper()
	var lsn uint64
	for i := from; i < to; i++ {
		lsn = l.Append(record(i))
	}
	if lsn > 0 {
		require.NoError(t, l.Wait(lsn))
	}
}

// requireRecords checks that the log recovered holds exactly records
// 1..n (record(i) at LSN i), counting the snapshot made by snapshotOf.
func requireRecords(t testing.TB, rec *Recovered, n int) {
	t.Helper()
	if rec.Snapshot != nil {
		require.Equal(t, snapshotOf(int(rec.SnapshotLSN)), rec.Snapshot, "snapshot at %d", rec.SnapshotLSN)
	}
	got := replayAll(t, rec)
	require.Len(t, got, n-int(rec.SnapshotLSN), "records after the snapshot at %d", rec.SnapshotLSN)
	for k, e := range got {
		require.Equal(t, rec.SnapshotLSN+uint64(k)+1, e.lsn)
		require.Equal(t, record(int(e.lsn)), e.rec, "record %d", e.lsn)
	}
	require.EqualValues(t, n, rec.LastLSN)
}

// snapshotOf is the test snapshot body for records 1..n.
func snapshotOf(n int) []byte {
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		b.Write(record(i))
	}
	return b.Bytes()
}

// writeSnapshot returns a Snapshot callback writing snapshotOf(n).
func writeSnapshot(n int) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(snapshotOf(n))
		return err
	}
}
