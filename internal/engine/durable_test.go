package engine

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The journal's contract, checked from inside: a broker rebuilt from a
// snapshot and the records after it, before its locks end, is the broker
// that wrote them, field by field.

// memJournal keeps records and the last snapshot in memory.
type memJournal struct {
	mu      sync.Mutex
	first   uint64 // LSN of recs[0]
	recs    [][]byte
	snap    []byte
	snapLSN uint64
}

func (j *memJournal) Append(rec []byte) uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.recs = append(j.recs, slices.Clone(rec))
	return j.first + uint64(len(j.recs)) - 1
}

func (j *memJournal) Last() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.first + uint64(len(j.recs)) - 1
}

func (j *memJournal) Wait(uint64) error { return nil }

func (j *memJournal) Sync(uint64) error { return nil }

func (j *memJournal) Snapshot(lsn uint64, write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.recs = j.recs[lsn+1-j.first:]
	j.first = lsn + 1
	j.snap, j.snapLSN = buf.Bytes(), lsn
	return nil
}

func (j *memJournal) replay(fn func(uint64, []byte) error) error {
	j.mu.Lock()
	recs, first := slices.Clone(j.recs), j.first
	j.mu.Unlock()
	for i, r := range recs {
		if err := fn(first+uint64(i), r); err != nil {
			return err
		}
	}
	return nil
}

func newDurable(t require.TestingT, mock clock.Clock) (*Broker, *memJournal) {
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
	j := &memJournal{first: 1}
	startJournal(t, b, j)
	return b, j
}

// startJournal makes the new broker b durable on j, with nothing to replay.
func startJournal(t require.TestingT, b *Broker, j Journal) {
	require.NoError(t, b.Recover(Recovery{Journal: j, Replay: func(func(uint64, []byte) error) error { return nil }, CompactAfter: 1 << 30}))
}

// replayed rebuilds a broker from j, its locks still held.
func replayed(t require.TestingT, mock clock.Clock, j *memJournal) *Broker {
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
	b.replay = &replayState{covered: map[string]uint64{}, locks: map[lockRef]*store.Message{}}
	if j.snap != nil {
		require.NoError(t, b.restore(j.snap))
	}
	require.NoError(t, j.replay(b.apply))
	return b
}

// dump writes out everything durable in b, in a fixed order.
func dump(b *Broker) string {
	var w strings.Builder
	var names []string
	b.mu.Lock()
	for n, e := range b.entities {
		if !e.deleted.Load() {
			names = append(names, n)
		}
	}
	b.mu.Unlock()
	sort.Strings(names) // reading the clock would catch up
	for _, n := range names {
		b.mu.Lock()
		e := b.entities[n]
		b.mu.Unlock()
		dumpEntity(&w, e)
		for _, s := range e.subs {
			if !s.deleted.Load() {
				dumpEntity(&w, s)
			}
		}
	}
	o := &b.outbox
	for _, f := range o.waiting {
		fmt.Fprintf(&w, "outbox %s %v -> %s at %d %s\n", f.from.Path(), f.key, f.to, f.at, dumpMessage(f.m))
	}
	return w.String()
}

func dumpEntity(w *strings.Builder, e *Entity) {
	e.mu.Lock()
	defer e.mu.Unlock()
	activity := int64(0) // recorded only where it matters (journal.go)
	if e.cfg.AutoDeleteOnIdle != 0 {
		activity = e.lastActivity.Load()
	}
	fmt.Fprintf(w, "%v %s %+v seq=%d times=%d/%d/%d/%d/%d\n", e.kind, e.Path(), e.cfg, e.seq,
		e.created, e.updated, e.accessed, activity, e.lastActivation)
	if h := e.dups; h != nil {
		ids := make([]string, 0, len(h.until))
		for id, u := range h.until {
			if u > e.b.clockNow() { // pruning is not recorded (journal.go)
				ids = append(ids, fmt.Sprintf("%s@%d", id, u))
			}
		}
		sort.Strings(ids)
		fmt.Fprintf(w, "  dups %v\n", ids)
	}
	if e.sessions != nil {
		var ss []string
		for id, s := range e.sessions.byID {
			held := "no"
			if s.holder != nil {
				held = fmt.Sprint(s.lockedUntil)
			}
			ss = append(ss, fmt.Sprintf("%s state=%q held=%s", id, s.state, held))
		}
		sort.Strings(ss)
		fmt.Fprintf(w, "  sessions %v\n", ss)
	}
	for _, r := range e.rules {
		fmt.Fprintf(w, "  rule %+v\n", r.Spec)
	}
	var ms []string
	e.st.Each(func(m *store.Message) {
		ms = append(ms, fmt.Sprintf("  %d %v %v due=%d until=%d %s", m.Queue(), m.Key(), m.State(), m.Due(), m.LockedUntil(), dumpMessage(m)))
	})
	sort.Strings(ms)
	for _, m := range ms {
		w.WriteString(m + "\n")
	}
	fmt.Fprintf(w, "  bytes=%d quota=%d\n", e.st.Bytes(), e.quota.Used())
}

func dumpMessage(m *store.Message) string {
	dl := ""
	if m.DL != nil {
		dl = fmt.Sprintf("%+v", *m.DL)
	}
	h := ""
	if m.Headers != nil {
		h = fmt.Sprintf("%+v", *m.Headers)
	}
	var body string
	if len(m.Body) > 64 { // large bodies by length and checksum: the dumps stay small, and quick
		body = fmt.Sprintf("%d bytes, crc %08x", len(m.Body), crc32.ChecksumIEEE(m.Body))
	} else {
		body = fmt.Sprintf("%q", m.Body)
	}
	return fmt.Sprintf("id=%s sess=%q %s body=%s props=%v sched=%d ttl=%d enq=%d exp=%d dc=%d eseq=%d hops=%d dl=%s fd=%v",
		m.ID(), m.SessionID, h, body, m.Props, m.Scheduled, m.TTL, m.Enqueued, m.Expires, m.Deliveries, m.EnqueuedSeq, m.Hops, dl, m.FromDeferral)
}

// durableWorld is a broker with one entity of each sort and its receivers.
type durableWorld struct {
	t     *rapid.T
	ctx   context.Context
	mock  *clock.Mock
	b     *Broker
	j     *memJournal
	recv  map[string]*Receiver
	locks []heldLock
}

type heldLock struct {
	r     *Receiver
	token [16]byte
	seq   int64
}

func (w *durableWorld) entity(path string) *Entity { return entityAt(w.b, path) }

// entityAt is b's live entity at path ("q", "t" for the topic, "t/sub"),
// or nil.
func entityAt(b *Broker, path string) *Entity {
	name, sub, _ := strings.Cut(path, "/")
	kind := KindQueue
	if name == "t" {
		kind = KindTopic
	}
	e, err := b.Find(kind, name)
	if err != nil {
		return nil
	}
	if sub != "" {
		if e, err = e.Subscription(sub); err != nil {
			return nil
		}
	}
	return e
}

var durablePaths = []string{"q", "fwd", "sq", "t/all", "t/red"}

func (w *durableWorld) setUp(t *rapid.T) {
	base := Config{LockDuration: time.Minute, MaxDeliveryCount: 3, MaxSizeMB: 1, MaxMessageKB: 64, DuplicateWindow: 10 * time.Minute}
	q := base
	q.TTL, q.DeadLetterOnExpiry, q.RequiresDuplicateDetection = 5*time.Minute, true, true
	_, err := w.b.Create(KindQueue, "q", q)
	require.NoError(t, err)
	f := base
	f.ForwardTo, f.ForwardDeadLetteredTo = "q", "q"
	_, err = w.b.Create(KindQueue, "fwd", f)
	require.NoError(t, err)
	s := base
	s.RequiresSession = true
	_, err = w.b.Create(KindQueue, "sq", s)
	require.NoError(t, err)
	top, _ := topicTakingAll(t, w.b, base, "all")
	red, err := CompileRule(RuleSpec{Name: "red", Filter: FilterSQL, SQL: "color = 'red'", HasAction: true, ActionSQL: "SET seen = 1"})
	require.NoError(t, err)
	_, err = top.CreateSubscription("red", base, []*Rule{red})
	require.NoError(t, err)
}

func (w *durableWorld) receiver(t *rapid.T, path string, q store.Queue, mode Mode) *Receiver {
	key := fmt.Sprint(path, q, mode)
	if r := w.recv[key]; r != nil {
		return r
	}
	e := w.entity(path)
	if e == nil {
		return nil
	}
	r, err := e.NewReceiver(q, mode)
	if err != nil {
		return nil // a forwarding queue's main queue
	}
	w.recv[key] = r
	return r
}

func (w *durableWorld) send(t *rapid.T) {
	path := rapid.SampledFrom([]string{"q", "fwd", "sq", "t"}).Draw(t, "to")
	n := rapid.IntRange(1, 3).Draw(t, "n")
	recs := make([]*store.Message, n)
	for i := range recs {
		m := store.NewMessage()
		m.Body = append(m.Body, rapid.SampledFrom([]string{"a", "b", ""}).Draw(t, "body")...)
		m.MessageID = rapid.SampledFrom([]string{"", "m1", "m2", "m3"}).Draw(t, "id")
		if m.MessageID == "" {
			m.IDSeed = rapid.Uint64Min(1).Draw(t, "seed")
		}
		if rapid.Bool().Draw(t, "props") {
			m.Props = map[string]any{"color": rapid.SampledFrom([]string{"red", "blue"}).Draw(t, "color"), "n": int32(7)}
		}
		if path == "sq" {
			m.SessionID = rapid.SampledFrom([]string{"s1", "s2"}).Draw(t, "session")
		}
		if rapid.IntRange(0, 3).Draw(t, "sched") == 0 {
			m.Scheduled = w.mock.Now().Add(time.Duration(rapid.IntRange(1, 5).Draw(t, "in")) * time.Minute).UnixNano()
		}
		m.TTL = int64(time.Duration(rapid.IntRange(0, 8).Draw(t, "ttl")) * time.Minute)
		recs[i] = m
	}
	e := w.entity(path)
	if e == nil {
		return
	}
	_, err := e.Send(w.ctx, recs, store.Unset, true)
	require.NoError(t, err)
}

func (w *durableWorld) receive(t *rapid.T) {
	path := rapid.SampledFrom(durablePaths).Draw(t, "from")
	q := store.Queue(rapid.IntRange(0, 2).Draw(t, "queue"))
	mode := Mode(rapid.IntRange(0, 1).Draw(t, "mode"))
	if path == "sq" && q == store.Main {
		w.session(t)
		return
	}
	r := w.receiver(t, path, q, mode)
	if r == nil {
		return
	}
	views, err := r.Receive(w.ctx, rapid.IntRange(1, 3).Draw(t, "max"), nil, -1)
	require.NoError(t, err)
	w.hold(r, views)
}

func (w *durableWorld) hold(r *Receiver, views []store.View) { w.locks = hold(w.locks, r, views) }

// hold releases views, which r received, and appends their locks to locks.
func hold(locks []heldLock, r *Receiver, views []store.View) []heldLock {
	for i := range views {
		if r.Mode() == PeekLock {
			locks = append(locks, heldLock{r, views[i].Token, views[i].Key.Seq})
		}
		views[i].Release()
	}
	return locks
}

func (w *durableWorld) session(t *rapid.T) {
	e := w.entity("sq")
	r, err := e.AcceptSession(w.ctx, rapid.SampledFrom([]string{"s1", "s2", "s3"}).Draw(t, "session"), PeekLock)
	if err != nil {
		return // held already
	}
	views, err := r.Receive(w.ctx, 2, nil, -1)
	require.NoError(t, err)
	w.hold(r, views)
	if rapid.Bool().Draw(t, "state") {
		require.NoError(t, r.SetSessionState(w.ctx, []byte(rapid.SampledFrom([]string{"x", "y"}).Draw(t, "st"))))
	}
	if rapid.Bool().Draw(t, "close") {
		r.Close()
	}
}

func (w *durableWorld) settle(t *rapid.T) {
	if len(w.locks) == 0 {
		t.Skip("no lock")
	}
	i := rapid.IntRange(0, len(w.locks)-1).Draw(t, "lock")
	l := w.locks[i]
	w.locks = slices.Delete(w.locks, i, i+1)
	s := Settlement{Op: rapid.SampledFrom([]Op{Complete, Abandon, DeadLetter, Defer, Release}).Draw(t, "op"), Token: l.token, Seq: l.seq}
	if s.Op == DeadLetter {
		s.Reason, s.Description = "bad", "very"
	}
	if s.Op != Release && rapid.Bool().Draw(t, "modify") { // a release modifies nothing (SEMANTICS L15)
		s.Props = map[string]any{"touched": true}
	}
	if s.Op == Abandon && rapid.Bool().Draw(t, "retry") {
		s.RetryAfter = time.Minute
	}
	_, _ = l.r.Settle(w.ctx, s) // the lock may be lost: then nothing changes
}

func (w *durableWorld) fetchDeferred(t *rapid.T) {
	path := rapid.SampledFrom([]string{"q", "t/all"}).Draw(t, "from")
	r := w.receiver(t, path, store.Main, PeekLock)
	if r == nil {
		return
	}
	peek, err := r.Peek(w.ctx, 20, 1)
	require.NoError(t, err)
	for _, p := range peek {
		if p.State == store.Deferred {
			views, err := r.ReceiveDeferred(w.ctx, []int64{p.Key.Seq})
			require.NoError(t, err)
			w.hold(r, views)
			return
		}
	}
}

func (w *durableWorld) cancel(t *rapid.T) {
	e := w.entity(rapid.SampledFrom([]string{"q", "t"}).Draw(t, "in"))
	r, err := e.NewReceiver(store.Main, PeekLock)
	if e.Kind() == KindTopic || err != nil {
		r = nil
	}
	var seq int64
	if r != nil {
		peek, err := r.Peek(w.ctx, 20, 1)
		require.NoError(t, err)
		for _, p := range peek {
			if p.State == store.Scheduled {
				seq = p.Key.Seq
			}
		}
		r.Close()
	}
	if seq != 0 {
		require.NoError(t, e.Cancel(w.ctx, []int64{seq}))
	}
}

func TestJournalReplaysTheState(t *testing.T) {
	t.Parallel() // CPU-bound and on a broker of its own: beside the other replay tests
	rapid.Check(t, func(t *rapid.T) {
		mock := clock.NewMock()
		mock.Set(epoch)
		b, j := newDurable(t, mock)
		defer b.Close()
		w := &durableWorld{t: t, ctx: context.Background(), mock: mock, b: b, j: j, recv: map[string]*Receiver{}}
		w.setUp(t)
		t.Repeat(journalActions(mock, b, j, time.Second, 150, map[string]func(*rapid.T){
			"send":     w.send,
			"receive":  w.receive,
			"settle":   w.settle,
			"deferred": w.fetchDeferred,
			"cancel":   w.cancel,
			"delete": func(t *rapid.T) {
				r := w.receiver(t, rapid.SampledFrom([]string{"q", "t/red"}).Draw(t, "from"), store.DeadLetterQueue, PeekLock)
				if r != nil {
					_, err := r.Delete(w.ctx, 2, store.Never)
					require.NoError(t, err)
				}
			},
			"update": func(t *rapid.T) {
				e := w.entity("q")
				c := e.Config()
				c.MaxDeliveryCount = int32(rapid.IntRange(1, 4).Draw(t, "mdc"))
				require.NoError(t, e.Update(c))
			},
		}))
	})
}

// journalActions adds to actions those the replay tests share: the clock
// moved by 1 to n steps and caught up, a snapshot, and the check after
// every action, that a broker rebuilt from j is b.
func journalActions(mock *clock.Mock, b *Broker, j *memJournal, step time.Duration, n int, actions map[string]func(*rapid.T)) map[string]func(*rapid.T) {
	actions["time"] = func(t *rapid.T) {
		mock.Add(time.Duration(rapid.IntRange(1, n).Draw(t, "steps")) * step)
		b.CatchUp()
	}
	actions["snapshot"] = func(t *rapid.T) { require.NoError(t, b.Snapshot()) }
	actions[""] = func(t *rapid.T) {
		got := replayed(t, mock, j)
		defer got.Close()
		if want, have := dump(b), dump(got); want != have {
			for i, r := range j.recs {
				d := &decoder{b: r}
				t.Logf("record %d: %v %s/%s %x", j.first+uint64(i), recKind(d.u8()), d.str(), d.str(), d.b)
			}
			sameDump(t, want, have)
		}
	}
	return actions
}

// sameDump fails with the lines that differ.
func sameDump(t require.TestingT, want, got string) {
	if want == got {
		return
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var diff []string
	for i := range max(len(w), len(g)) {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			diff = append(diff, "- "+a, "+ "+b)
		}
	}
	t.Errorf("replayed state differs:\n%s", strings.Join(diff, "\n"))
	t.FailNow()
}

// TestJournalAppendsATopicSendBeforeTheSubscriptionsUnlock: a topic's
// record of a send, or of a message forwarded to it, is appended while its
// subscriptions are still locked. Otherwise a receive could take a copy and
// append its record first: the replay would then receive a message not yet
// sent, and a durable namespace could not be opened again.
func TestJournalAppendsATopicSendBeforeTheSubscriptionsUnlock(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(epoch)
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
	defer b.Close()
	var sub *Entity
	var appended []string
	j := &appendJournal{memJournal: memJournal{first: 1}}
	watch := func(rec []byte) {
		d := &decoder{b: rec}
		k := recKind(d.u8())
		if (k == recSend || k == recTransfer) && d.str() == "t" && d.str() == "" {
			held := !sub.mu.TryLock()
			if !held {
				sub.mu.Unlock()
			}
			appended = append(appended, fmt.Sprintf("%v held=%v", k, held))
		}
	}
	j.beforeAppend.Store(&watch)
	startJournal(t, b, j)
	base := Config{LockDuration: time.Minute, MaxDeliveryCount: 3, MaxSizeMB: 1, MaxMessageKB: 64, DuplicateWindow: 10 * time.Minute}
	top, subs := topicTakingAll(t, b, base, "all")
	sub = subs[0]
	fwd := base
	fwd.ForwardTo = "t"
	q, err := b.Create(KindQueue, "fwd", fwd)
	require.NoError(t, err)

	ctx := context.Background()
	_, err = top.Send(ctx, []*store.Message{store.NewMessage()}, store.Unset, false)
	require.NoError(t, err)
	_, err = q.Send(ctx, []*store.Message{store.NewMessage()}, store.Unset, false)
	require.NoError(t, err)
	require.Equal(t, []string{"send held=true", "forward held=true"}, appended)
	replayed(t, mock, &j.memJournal).Close()
}

// TestJournalLandsAForwardAsItsRecordIsAppended: a message on its way
// leaves the outbox's flying set as the record of where it went is
// appended, in one step under the outbox's lock. A snapshot that began
// after that record would otherwise cut the record from the log yet still
// find the message on its way, and Open would deliver it a second time; or
// a snapshot's unit of its source, read between the two, would find
// neither, and a crash before the record was durable would lose it
// (SEMANTICS F2; TestSnapshotUnderChurnLosesNoForward).
func TestJournalLandsAForwardAsItsRecordIsAppended(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(epoch)
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
	defer b.Close()
	var appended []string
	j := &appendJournal{memJournal: memJournal{first: 1}}
	watch := func(rec []byte) {
		d := &decoder{b: rec}
		if k := recKind(d.u8()); k == recTransfer || k == recTransferFailed || k == recTransferLost {
			// The outbox's lock is held: the record is appended as the
			// message leaves flying, in one step.
			held := !b.outbox.mu.TryLock()
			if !held {
				b.outbox.mu.Unlock()
			}
			appended = append(appended, fmt.Sprintf("%v, in %s: %d flying, held=%v", k, d.str(), len(b.outbox.flying), held))
		}
	}
	j.beforeAppend.Store(&watch)
	startJournal(t, b, j)
	base := Config{LockDuration: time.Minute, MaxDeliveryCount: 3, MaxSizeMB: 1, MaxMessageKB: 64}
	topicTakingAll(t, b, base, "all")
	_, err := b.Create(KindQueue, "q", base)
	require.NoError(t, err)
	off := base
	off.Status = StatusDisabled
	_, err = b.Create(KindQueue, "off", off)
	require.NoError(t, err)
	ctx := context.Background()
	for _, to := range []string{"q", "t", "off"} {
		fwd := base
		fwd.ForwardTo = to
		src, err := b.Create(KindQueue, "to-"+to, fwd)
		require.NoError(t, err)
		_, err = src.Send(ctx, []*store.Message{store.NewMessage()}, store.Unset, false)
		require.NoError(t, err)
	}
	require.Equal(t, []string{"forward, in q: 0 flying, held=true", "forward, in t: 0 flying, held=true", "forward failed, in to-off: 0 flying, held=true"}, appended)
	replayed(t, mock, &j.memJournal).Close()
}

// A record over the journal's limit that no check refused (each call whose
// record grows with its caller's data checks it first, SEMANTICS V3) does
// not reach the journal: it fails the broker, the call returns
// ErrStoreFailed and so does every later call, and no snapshot takes the
// change the log does not have.
func TestJournalRecordOverTheLimitFailsTheBroker(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(epoch)
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
	defer b.Close()
	j := &memJournal{first: 1}
	require.NoError(t, b.Recover(Recovery{Journal: j, Replay: func(func(uint64, []byte) error) error { return nil }, CompactAfter: 1 << 30, MaxRecord: 1 << 20}))
	base := Config{LockDuration: time.Minute, MaxDeliveryCount: 3, MaxSizeMB: 1, MaxMessageKB: 64, DuplicateWindow: 10 * time.Minute}
	_, err := b.Create(KindQueue, "kept", base)
	require.NoError(t, err)
	last := j.Last()
	b.dur.maxRecord = 8 // smaller than any create record
	_, err = b.Create(KindQueue, "lost", base)
	require.ErrorIs(t, err, errs.ErrStoreFailed)
	require.ErrorContains(t, err, "over the log's limit of 8 bytes")
	require.Equal(t, last, j.Last(), "nothing appended")
	_, err = b.Create(KindQueue, "later", base)
	require.ErrorIs(t, err, errs.ErrStoreFailed)
	require.ErrorIs(t, b.Snapshot(), errs.ErrStoreFailed)
	require.Nil(t, j.snap)
}
