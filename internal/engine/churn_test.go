package engine

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus/internal/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	churnSends  = flag.Int("churn.sends", 400, "messages a round of TestSnapshotUnderChurnLosesNoForward sends")
	churnRounds = flag.Int("churn.rounds", 1, "rounds of TestSnapshotUnderChurnLosesNoForward (CI: 4; a soak: 2000)")
)

// TestSnapshotUnderChurnLosesNoForward: snapshots taken while messages are
// forwarded and their sources created and deleted, from goroutines of their
// own, lose no message and deliver none twice, whatever record a crash
// comes after (SEMANTICS F2). Sources src0–src3 forward to dst, directly or
// through mid0 or mid1, and come and go; dst and the mids stay, so every
// message sent ends in dst, once. For every snapshot, a broker is opened
// from it and the records after it up to each landing in dst (a crash just
// before the next one): once Open has delivered what was on its way, dst
// must hold exactly the messages whose sends those records hold.
func TestSnapshotUnderChurnLosesNoForward(t *testing.T) {
	t.Parallel() // CPU-bound and on a broker of its own: beside the other replay tests
	var total churnCounts
	for round := range *churnRounds {
		c := churnRound(t, uint64(round))
		total.messages += c.messages
		total.records += c.records
		total.snapshots += c.snapshots
		total.checked += c.checked
		total.orphans += c.orphans
	}
	t.Logf("%d rounds: %d messages, %d records, %d snapshots, %d crashes checked, %d messages on their way from deleted sources in snapshots",
		*churnRounds, total.messages, total.records, total.snapshots, total.checked, total.orphans)
}

// churnCounts is what a round did.
type churnCounts struct{ messages, records, snapshots, checked, orphans int }

// churnRound is a round of TestSnapshotUnderChurnLosesNoForward, its
// random choices drawn from seed.
func churnRound(t *testing.T, seed uint64) churnCounts {
	mock := clock.NewMock()
	mock.Set(epoch)
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
	defer b.Close()
	j := &histJournal{memJournal: memJournal{first: 1}}
	startJournal(t, b, j)
	base := Config{LockDuration: time.Minute, MaxDeliveryCount: 3, MaxSizeMB: 1 << 10, MaxMessageKB: 64}
	_, err := b.Create(KindQueue, "dst", base)
	require.NoError(t, err)
	for _, mid := range []string{"mid0", "mid1"} {
		c := base
		c.ForwardTo = "dst"
		_, err := b.Create(KindQueue, mid, c)
		require.NoError(t, err)
	}
	sources := []string{"src0", "src1", "src2", "src3"}
	targets := []string{"dst", "mid0", "mid1"}
	for i, name := range sources {
		c := base
		c.ForwardTo = targets[i%len(targets)]
		_, err := b.Create(KindQueue, name, c)
		require.NoError(t, err)
	}

	ctx := context.Background()
	var sent sync.WaitGroup
	done := make(chan struct{})
	// Each send wakes the goroutine that creates and deletes sources, and
	// every tenth the one that takes snapshots: as many of each as sends,
	// give or take.
	admin, snap := make(chan struct{}, 1), make(chan struct{}, 1)
	var next int
	var nextMu sync.Mutex
	for p := range 2 {
		sent.Add(1)
		go func() {
			defer sent.Done()
			r := rand.New(rand.NewPCG(uint64(p), seed))
			for {
				nextMu.Lock()
				n := next
				next++
				nextMu.Unlock()
				if n >= *churnSends {
					return
				}
				poke(admin)
				if n%10 == 0 {
					poke(snap)
				}
				e, err := b.Find(KindQueue, sources[r.IntN(len(sources))])
				if err != nil {
					continue // deleted: nothing sent
				}
				m := store.NewMessage()
				m.MessageID = churnID(n)
				_, _ = e.Send(ctx, []*store.Message{m}, store.Unset, false) // deleted meanwhile: nothing sent
			}
		}()
	}
	var others sync.WaitGroup
	others.Add(2)
	go func() { // sources come and go
		defer others.Done()
		r := rand.New(rand.NewPCG(2, seed))
		for {
			select {
			case <-done:
				return
			case <-admin:
			}
			name := sources[r.IntN(len(sources))]
			if b.Delete(KindQueue, name) != nil {
				c := base
				c.ForwardTo = targets[r.IntN(len(targets))]
				_, _ = b.Create(KindQueue, name, c)
			}
		}
	}()
	var snapErr error
	go func() {
		defer others.Done()
		for snapErr == nil {
			select {
			case <-done:
				return
			case <-snap:
			}
			snapErr = b.Snapshot()
		}
	}()
	sent.Wait()
	close(done)
	others.Wait()
	require.NoError(t, snapErr)

	// When each message was first recorded: its send.
	first := map[string]uint64{}
	recs, snaps := j.history()
	for i, r := range recs {
		for rest := r; ; {
			at := bytes.Index(rest, []byte("churn-"))
			if at < 0 {
				break
			}
			id := string(rest[at : at+len(churnID(0))])
			if _, ok := first[id]; !ok {
				first[id] = uint64(i + 1)
			}
			rest = rest[at+1:]
		}
	}
	live := churnIDs(entityAt(b, "dst"))
	require.Len(t, live, len(first), "every message sent is in dst")

	var checked, orphans int
	for i, s := range snaps {
		end := uint64(len(recs))
		if i+1 < len(snaps) {
			end = snaps[i+1].durable - 1 // then the next one is the newest
		}
		orphans += s.orphans(t, mock)
		for k := s.durable; k <= end; k++ {
			if k > s.durable && k < end && !isLanding(recs[k]) { // recs[k]: record k+1, a crash just before it
				continue
			}
			opened := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
			rerr := opened.Recover(Recovery{
				Journal:  &memJournal{first: k + 1},
				Snapshot: s.data,
				Replay: func(fn func(uint64, []byte) error) error {
					for lsn := s.lsn + 1; lsn <= k; lsn++ {
						if err := fn(lsn, recs[lsn-1]); err != nil {
							return err
						}
					}
					return nil
				},
				CompactAfter: 1 << 40,
			})
			if rerr != nil {
				for i, r := range recs[:k] {
					d := &decoder{b: r}
					kind := recKind(d.u8())
					if kind == recCreate || kind == recDelete {
						t.Logf("record %d: %v %s/%s", i+1, kind, d.str(), d.str())
					}
				}
				sb := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
				sb.replay = &replayState{covered: map[string]uint64{}, locks: map[lockRef]*store.Message{}}
				require.NoError(t, sb.restore(s.data))
				t.Logf("snapshot %d durable %d covered %v; crash after %d; %s", s.lsn, s.durable, sb.replay.covered, k, dump(sb))
				require.NoError(t, rerr)
			}
			got := churnIDs(entityAt(opened, "dst"))
			opened.Close()
			var want []string
			for id, lsn := range first {
				if lsn <= k {
					want = append(want, id)
				}
			}
			if !assert.ElementsMatch(t, want, got) {
				n := map[string]int{}
				for _, id := range got {
					n[id]++
				}
				for _, id := range want {
					n[id]--
				}
				extra := map[string]bool{}
				for id, c := range n {
					if c != 0 {
						t.Logf("%s: %+d", id, c)
						extra[id] = true
					}
				}
				for i, r := range recs {
					for id := range extra {
						if bytes.Contains(r, []byte(id)) {
							d := &decoder{b: r}
							t.Logf("record %d: %v %s/%s %q", i+1, recKind(d.u8()), d.str(), d.str(), d.b)
						}
					}
				}
				sb := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
				sb.replay = &replayState{covered: map[string]uint64{}, locks: map[lockRef]*store.Message{}}
				require.NoError(t, sb.restore(s.data))
				for _, l := range strings.Split(dump(sb), "\n") {
					for id := range extra {
						if strings.Contains(l, id) {
							t.Logf("in the snapshot: %s", l)
						}
					}
				}
				t.Logf("snapshot %d durable %d covered %v; crash after %d", s.lsn, s.durable, sb.replay.covered, k)
				t.FailNow()
			}
			checked++
		}
	}
	return churnCounts{len(first), len(recs), len(snaps), checked, orphans}
}

// poke wakes the goroutine that waits on c, unless a wake-up waits there
// already.
func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// churnID is the MessageID of the nth message.
func churnID(n int) string { return fmt.Sprintf("churn-%07d", n) }

// churnIDs returns the ids of the messages in e, in a slice: one found
// twice is there twice.
func churnIDs(e *Entity) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ids []string
	e.st.Each(func(m *store.Message) { ids = append(ids, m.MessageID) })
	return ids
}

// isLanding reports whether rec is a message's arrival in dst.
func isLanding(rec []byte) bool {
	d := &decoder{b: rec}
	return recKind(d.u8()) == recTransfer && d.str() == "dst"
}

// histJournal is a journal that keeps every record and every snapshot, so
// that a test can open a broker as a crash after any record would leave it:
// a memJournal whose snapshots cut nothing.
type histJournal struct {
	memJournal // first is 1: LSN i+1 at recs[i]
	snaps      []histSnap
}

// histSnap is a snapshot: its contents, the record it is of, and the last
// record appended when it was written, which it may reflect (the snapshot
// waits until it is on disk: a crash leaves at least that much).
type histSnap struct {
	data         []byte
	lsn, durable uint64
}

// orphans counts the messages on their way from deleted sources that s
// holds.
func (s histSnap) orphans(t require.TestingT, mock clock.Clock) int {
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
	defer b.Close()
	b.replay = &replayState{covered: map[string]uint64{}, locks: map[lockRef]*store.Message{}}
	require.NoError(t, b.restore(s.data))
	n := 0
	for _, f := range b.outbox.waiting {
		if f.from.deleted.Load() {
			n++
		}
	}
	return n
}

func (j *histJournal) Snapshot(lsn uint64, write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.snaps = append(j.snaps, histSnap{data: buf.Bytes(), lsn: lsn, durable: uint64(len(j.recs))})
	return nil
}

// history returns the records and snapshots so far.
func (j *histJournal) history() ([][]byte, []histSnap) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.recs, j.snaps
}
