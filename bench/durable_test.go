package bench

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// TestDurableAdapters sends through every durable peer from four
// producers, one message a call and in batches, then checks that the
// queue holds every message, delivers each once, and that Close removes
// the peer's files.
func TestDurableAdapters(t *testing.T) {
	const producers, singles, batches, batchSize = 4, 10, 2, 32
	const per = singles + batches*batchSize
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
						bodies := make([][]byte, batchSize)
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
