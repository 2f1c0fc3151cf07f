package bench

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"testing"
)

// TestDurableAdapters sends through every durable peer from four
// producers, one message a call and in batches, then checks that the
// queue holds every message, delivers each once, and that Close removes
// the peer's files.
func TestDurableAdapters(t *testing.T) {
	const producers, singles, batches = 4, 10, 2
	const per = singles + batches*durableBatch
	for _, p := range DurablePeers() {
		t.Run(p.Name(), func(t *testing.T) {
			dir := t.TempDir()
			q, err := p.OpenQueue(t.Context(), Config{Dir: dir})
			if err != nil {
				t.Fatalf("OpenQueue: %v", err)
			}
			closed := false
			t.Cleanup(func() {
				if !closed {
					q.Close()
				}
			})
			bs, ok := q.(BatchSender)
			if !ok {
				t.Fatalf("%s cannot send batches", p.Name())
			}
			var wg sync.WaitGroup
			for w := range producers {
				wg.Go(func() {
					i := w * per
					for range singles {
						if err := q.Send(t.Context(), newBody(i)); err != nil {
							t.Errorf("Send: %v", err)
							return
						}
						i++
					}
					for range batches {
						bodies := make([][]byte, durableBatch)
						for j := range bodies {
							bodies[j] = newBody(i)
							i++
						}
						if err := bs.SendBatch(t.Context(), bodies); err != nil {
							t.Errorf("SendBatch: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			if err := checkCount(t.Context(), q, producers*per); err != nil {
				t.Fatal(err)
			}
			r, err := q.NewReceiver(t.Context())
			if err != nil {
				t.Fatalf("NewReceiver: %v", err)
			}
			receiveAll(t, r, producers*per)
			r.Close()
			closed = true
			if err := q.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
				t.Fatalf("Close left %d entries in the directory (%v)", len(left), err)
			}
		})
	}
}

// TestDurableWorkloadsTiny runs D2 and D5 (four producers, single sends and
// batches) on every durable peer for the shortest time, and D7 at its
// smallest count: each run must end ok with finite figures, the queue
// holding every acknowledged message. It checks no timing.
func TestDurableWorkloadsTiny(t *testing.T) {
	for _, id := range []string{"D2", "D5", "D7"} {
		w := WorkloadByID(id)
		t.Run(id, func(t *testing.T) {
			var results []Result
			RunWorkload(t.Context(), w, RunOptions{Reps: 1, Scale: 1e-9, Dir: t.TempDir()}, func(r Result) {
				results = append(results, r)
			})
			if len(results) != len(w.Peers) {
				t.Fatalf("%d results, want %d", len(results), len(w.Peers))
			}
			for _, r := range results {
				if r.Status != StatusOK {
					t.Errorf("%s: status %s (%s)", r.Peer, r.Status, r.Error)
					continue
				}
				for _, c := range w.Columns {
					v, ok := r.Metrics[c.Key]
					if !ok && (c.Key == "cold ms" || c.Key == "empty cold ms") && runtime.GOOS != "linux" {
						continue // no dropping of the page cache off Linux
					}
					if !ok || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
						t.Errorf("%s: %s = %v (present %v)", r.Peer, c.Key, v, ok)
					}
				}
				if w.Duration > 0 && r.Metrics["sent"] <= 0 {
					t.Errorf("%s: nothing sent", r.Peer)
				}
			}
		})
	}
}

// TestDurableSettings checks that each durable peer runs with the setting
// its name promises: SQLite's synchronous pragma, NATS's sync interval.
func TestDurableSettings(t *testing.T) {
	for _, c := range []struct {
		p    Peer
		want string
	}{
		{GoqiteFilePeer{Full: true}, "synchronous 2"}, // FULL
		{GoqiteFilePeer{}, "synchronous 1"},           // NORMAL
		{NATSFilePeer{SyncAlways: true}, "sync always"},
		{NATSFilePeer{}, "sync every 2m0s"},
	} {
		t.Run(c.p.Name(), func(t *testing.T) {
			q := openQueue(t, c.p, Config{Dir: t.TempDir()})
			var got string
			switch q := q.(type) {
			case *goqiteQueue:
				var v int
				if err := q.db.QueryRowContext(t.Context(), "pragma synchronous").Scan(&v); err != nil {
					t.Fatal(err)
				}
				got = fmt.Sprintf("synchronous %d", v)
			case *natsQueue:
				jc := q.srv.JetStreamConfig()
				got = "sync every " + jc.SyncInterval.String()
				if jc.SyncAlways {
					got = "sync always"
				}
			}
			if got != c.want {
				t.Fatalf("%s: %s, want %s", c.p.Name(), got, c.want)
			}
		})
	}
}
