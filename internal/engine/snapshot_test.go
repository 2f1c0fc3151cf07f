package engine

import (
	"context"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus/internal/store"
	"github.com/stretchr/testify/require"
)

// TestSnapshotKeepsTheForwardsOfDeletedSources: a snapshot taken while a
// message is on its way from an entity deleted since it left saves the
// message, by its source's name. The records that sent it are cut from the
// log with the snapshot: without it a crash before it lands would lose it
// (SEMANTICS F2). The test holds the deliveries back (outbox.flushMu) so
// that the snapshot comes between the deletion and the landing, then checks
// a broker rebuilt from the log as of then, and again once it has landed.
func TestSnapshotKeepsTheForwardsOfDeletedSources(t *testing.T) {
	base := Config{LockDuration: time.Minute, MaxDeliveryCount: 3, MaxSizeMB: 1, MaxMessageKB: 64}
	fwd := base
	fwd.ForwardTo = "dst"
	all, err := CompileRule(RuleSpec{Name: "$Default", Filter: FilterTrue})
	require.NoError(t, err)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// steps send the message that src forwards, then delete its
		// source (and may create a namesake), each call in a goroutine
		// of its own, which ends once the message lands.
		steps []step
		// onTheWay is what the outbox holds at the snapshot.
		onTheWay []string
		// landed is how many messages dst holds in the end: 1 unless
		// set.
		landed int64
	}{{
		name: "queue",
		steps: []step{
			{"create src/", func(b *Broker) error { _, err := b.Create(KindQueue, "src", fwd); return err }},
			{"send src/", func(b *Broker) error { return sendTo(ctx, b, KindQueue, "src") }},
			{"delete src/", func(b *Broker) error { return b.Delete(KindQueue, "src") }},
		},
		onTheWay: []string{"outbox src {1 0} -> dst"},
	}, {
		name: "queue, then a namesake",
		steps: []step{
			{"create src/", func(b *Broker) error { _, err := b.Create(KindQueue, "src", fwd); return err }},
			{"send src/", func(b *Broker) error { return sendTo(ctx, b, KindQueue, "src") }},
			{"delete src/", func(b *Broker) error { return b.Delete(KindQueue, "src") }},
			{"create SRC/", func(b *Broker) error { _, err := b.Create(KindQueue, "SRC", base); return err }},
		},
		onTheWay: []string{"outbox src {1 0} -> dst"},
	}, {
		// Two messages on their way with one source name and one
		// sequence number: the records of their landings name them so,
		// and they land in the order they left.
		name: "queue, then a namesake that forwards too",
		steps: []step{
			{"create src/", func(b *Broker) error { _, err := b.Create(KindQueue, "src", fwd); return err }},
			{"send src/", func(b *Broker) error { return sendTo(ctx, b, KindQueue, "src") }},
			{"delete src/", func(b *Broker) error { return b.Delete(KindQueue, "src") }},
			{"create SRC/", func(b *Broker) error { _, err := b.Create(KindQueue, "SRC", fwd); return err }},
			{"send SRC/", func(b *Broker) error { return sendTo(ctx, b, KindQueue, "src") }},
		},
		onTheWay: []string{"outbox src {1 0} -> dst", "outbox SRC {1 0} -> dst"},
		landed:   2,
	}, {
		name: "subscription",
		steps: []step{
			{"create src/s", func(b *Broker) error { return createTopic(b, "src", base, fwd, all) }},
			{"send src/", func(b *Broker) error { return sendTo(ctx, b, KindTopic, "src") }},
			{"delete src/s", func(b *Broker) error {
				top, err := b.Find(KindTopic, "src")
				if err != nil {
					return err
				}
				return top.DeleteSubscription("s")
			}},
		},
		onTheWay: []string{"outbox src/Subscriptions/s {1 0} -> dst"},
	}, {
		name: "topic, then a namesake",
		steps: []step{
			{"create src/s", func(b *Broker) error { return createTopic(b, "src", base, fwd, all) }},
			{"send src/", func(b *Broker) error { return sendTo(ctx, b, KindTopic, "src") }},
			{"delete src/", func(b *Broker) error { return b.Delete(KindTopic, "src") }},
			{"create SRC/", func(b *Broker) error { _, err := b.Create(KindTopic, "SRC", base); return err }},
		},
		onTheWay: []string{"outbox src/Subscriptions/s {1 0} -> dst"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			mock := clock.NewMock()
			mock.Set(epoch)
			b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
			defer b.Close()
			appended := make(chan string, 16)
			j := &appendJournal{memJournal: memJournal{first: 1}}
			watch := func(rec []byte) {
				d := &decoder{b: rec}
				k := recKind(d.u8())
				appended <- k.String() + " " + d.str() + "/" + d.str()
			}
			j.onAppend.Store(&watch) // once the record is in the journal: a snapshot after it covers it
			startJournal(t, b, j)
			_, err := b.Create(KindQueue, "dst", base)
			require.NoError(t, err)
			require.Equal(t, "create dst/", <-appended)

			b.outbox.flushMu.Lock() // no message lands until the snapshot
			done := make(chan error, len(tc.steps))
			for _, s := range tc.steps {
				go func() { done <- s.call(b) }()
				// The next call must come after this one's last record,
				// but a call that forwarded returns only once its
				// message has landed.
				for rec := <-appended; rec != s.last; rec = <-appended {
				}
			}
			require.NoError(t, b.Snapshot())
			want := dump(b)
			require.Equal(t, tc.onTheWay, outboxOf(want))
			got := replayed(t, mock, &j.memJournal)
			sameDump(t, want, dump(got))
			got.Close()
			// Open after a crash then delivers it, as the live broker
			// does once it lets go.
			opened := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
			defer opened.Close()
			snap, recs := j.snap, j.recs
			require.NoError(t, opened.Recover(Recovery{Journal: &memJournal{first: 1}, Snapshot: snap, Replay: j.memJournal.replay, CompactAfter: 1 << 30}))

			b.outbox.flushMu.Unlock()
			for range tc.steps {
				require.NoError(t, <-done)
			}
			want = dump(b)
			for _, x := range []*Broker{b, opened} {
				require.EqualValues(t, max(tc.landed, 1), entityAt(x, "dst").st.Messages(), "the messages have landed")
			}
			require.NotContains(t, want, "outbox")
			sameDump(t, want, dump(opened))
			require.Equal(t, snap, j.snap)
			got = replayed(t, mock, &j.memJournal)
			defer got.Close()
			sameDump(t, want, dump(got))
			// A crash after each landing: the replay takes that message
			// out of the outbox and no other, though two may have one
			// source name and one sequence number.
			landings := 0
			for i, r := range j.recs {
				d := &decoder{b: r}
				if recKind(d.u8()) != recTransfer || d.str() != "dst" {
					continue
				}
				landings++
				crashed := replayed(t, mock, &memJournal{first: j.first, recs: j.recs[:i+1], snap: j.snap, snapLSN: j.snapLSN})
				require.Equal(t, strings.Join(tc.onTheWay[landings:], "\n"), strings.Join(outboxOf(dump(crashed)), "\n"), "after landing %d", landings)
				crashed.Close()
			}
			require.Equal(t, len(tc.onTheWay), landings)
			require.Len(t, recs, 0, "the snapshot cut every record before it")
		})
	}
}

// outboxOf returns the messages on their way in a dump: their source, key
// and destination.
func outboxOf(dump string) []string {
	var out []string
	for _, l := range strings.Split(dump, "\n") {
		if strings.HasPrefix(l, "outbox ") {
			out = append(out, strings.Join(strings.Fields(l)[:6], " "))
		}
	}
	return out
}

// step is a call and the last record it appends.
type step struct {
	last string
	call func(b *Broker) error
}

// sendTo sends a message to the queue or topic of kind named name.
func sendTo(ctx context.Context, b *Broker, kind Kind, name string) error {
	e, err := b.Find(kind, name)
	if err != nil {
		return err
	}
	_, err = e.Send(ctx, []*store.Message{store.NewMessage()}, store.Unset, false)
	return err
}

// createTopic creates topic name with a subscription "s" configured as sub
// that takes every message.
func createTopic(b *Broker, name string, c, sub Config, all *Rule) error {
	top, err := b.Create(KindTopic, name, c)
	if err != nil {
		return err
	}
	_, err = top.CreateSubscription("s", sub, []*Rule{all})
	return err
}

// snapshotV1 is a snapshot that the version before this one wrote of
// snapshotWorld's broker: queues dst, src (forwarding to dst) and q, topic
// t with subscription s, a message in q and one in s, and one on its way
// from src to dst.
const snapshotV1 = "" +
	"010103647374080101000364737480e0ba84bf0306000000000000000000028001008080d0dfbd94b986318080d0dfbd" +
	"94b986318080d0dfbd94b986318080d0dfbd94b98631ffffffffffffffffff0100000000000001017108010100017180" +
	"e0ba84bf0306000000000000000000028001008080d0dfbd94b986318080d0dfbd94b986318080d0dfbd94b986318080" +
	"d0dfbd94b98631ffffffffffffffffff010200000100020000feffffffffffffffff010000000000010568656c6c6f00" +
	"ffffffffffffffffff01008080d0dfbd94b98631feffffffffffffffff01000000000000000001037372630801010003" +
	"73726380e0ba84bf0306000000000000000364737400028001008080d0dfbd94b986318080d0dfbd94b986318080d0df" +
	"bd94b986318080d0dfbd94b98631ffffffffffffffffff0102000000010200036473748080d0dfbd94b9863101000000" +
	"00000000ffffffffffffffffff010000feffffffffffffffff010002010000000001017408010101017480e0ba84bf03" +
	"06000000000000000000028001008080d0dfbd94b986318080d0dfbd94b986318080d0dfbd94b986318080d0dfbd94b9" +
	"8631ffffffffffffffffff010200000000010102017380e0ba84bf0306000000000000000000028001008080d0dfbd94" +
	"b986318080d0dfbd94b986318080d0dfbd94b986318080d0dfbd94b98631ffffffffffffffffff010000000100020000" +
	"feffffffffffffffff0100000000000000ffffffffffffffffff01008080d0dfbd94b98631feffffffffffffffff0100" +
	"00000000000001082444656661756c7400000000000000000000000000000000"

// TestSnapshotReadsVersion1: a snapshot written before the messages on
// their way from deleted sources were saved still restores the state it
// holds, so that a namespace written by that version opens.
func TestSnapshotReadsVersion1(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(epoch)
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
	defer b.Close()
	sent := make(chan struct{}, 1)
	j := &appendJournal{memJournal: memJournal{first: 1}}
	watch := func(rec []byte) {
		d := &decoder{b: rec}
		if recKind(d.u8()) == recSend && d.str() == "src" {
			sent <- struct{}{}
		}
	}
	j.onAppend.Store(&watch) // once the record is in the journal
	startJournal(t, b, j)
	ctx := context.Background()
	base := Config{LockDuration: time.Minute, MaxDeliveryCount: 3, MaxSizeMB: 1, MaxMessageKB: 64}
	fwd := base
	fwd.ForwardTo = "dst"
	all, err := CompileRule(RuleSpec{Name: "$Default", Filter: FilterTrue})
	require.NoError(t, err)
	_, err = b.Create(KindQueue, "dst", base)
	require.NoError(t, err)
	_, err = b.Create(KindQueue, "src", fwd)
	require.NoError(t, err)
	q, err := b.Create(KindQueue, "q", base)
	require.NoError(t, err)
	m := store.NewMessage()
	m.Body = []byte("hello")
	_, err = q.Send(ctx, []*store.Message{m}, store.Unset, false)
	require.NoError(t, err)
	require.NoError(t, createTopic(b, "t", base, base, all))
	require.NoError(t, sendTo(ctx, b, KindTopic, "t"))
	b.outbox.flushMu.Lock() // src's message stays on its way
	done := make(chan error, 1)
	go func() { done <- sendTo(ctx, b, KindQueue, "src") }()
	<-sent
	want := dump(b)
	require.Contains(t, want, "outbox src")

	snap, err := hex.DecodeString(snapshotV1)
	require.NoError(t, err)
	require.Equal(t, byte(1), snap[0], "the version")
	got := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
	defer got.Close()
	got.replay = &replayState{covered: map[string]uint64{}, locks: map[lockRef]*store.Message{}}
	require.NoError(t, got.restore(snap))
	sameDump(t, want, dump(got))

	b.outbox.flushMu.Unlock()
	require.NoError(t, <-done)
}

// TestSnapshotHasAUnitForEveryEntityOfItsRecord: a queue deleted as a
// snapshot begins is in it or its deletion is not. The snapshot is of the
// last record when it begins, and has a unit for each queue and topic that
// exists then; a Delete between the two would leave the queue without a
// unit, its create record cut and its delete record replayed, and Open
// would fail ("no such entity").
func TestSnapshotHasAUnitForEveryEntityOfItsRecord(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(epoch)
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
	defer b.Close()
	j := &lastJournal{}
	j.first = 1
	startJournal(t, b, j)
	base := Config{LockDuration: time.Minute, MaxDeliveryCount: 3, MaxSizeMB: 1, MaxMessageKB: 64}
	for _, name := range []string{"gone", "kept"} {
		_, err := b.Create(KindQueue, name, base)
		require.NoError(t, err)
	}
	deleted := make(chan error, 1)
	var fn func()
	j.onLast.Store(&fn)
	fn = func() {
		// The snapshot reads the record it is of: a Delete comes now if
		// nothing holds it back, or as soon as the snapshot lets it.
		if b.mu.TryLock() {
			b.mu.Unlock()
			deleted <- b.Delete(KindQueue, "gone")
			return
		}
		go func() { deleted <- b.Delete(KindQueue, "gone") }()
	}
	require.NoError(t, b.Snapshot())
	require.NoError(t, <-deleted)
	got := replayed(t, mock, &j.memJournal)
	defer got.Close()
	sameDump(t, dump(b), dump(got))
}

// lastJournal is a memJournal that calls onLast, once set, the next time
// Last is called, after reading the last record and before returning it.
type lastJournal struct {
	memJournal
	onLast atomic.Pointer[func()]
}

func (j *lastJournal) Last() uint64 {
	lsn := j.memJournal.Last()
	if fn := j.onLast.Swap(nil); fn != nil {
		(*fn)()
	}
	return lsn
}
