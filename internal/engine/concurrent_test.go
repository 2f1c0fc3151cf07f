package engine

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
	"github.com/stretchr/testify/require"
)

var (
	concOps    = flag.Int("conc.ops", 150, "calls each goroutine of TestJournalReplaysConcurrentCalls makes in a round")
	concRounds = flag.Int("conc.rounds", 1, "rounds of TestJournalReplaysConcurrentCalls (CI: 8; a soak: 2000)")
)

// TestJournalReplaysConcurrentCalls is TestJournalReplaysTheStateAtTies
// with its calls made from goroutines of their own, beside snapshots: two
// workers send, schedule, cancel, receive (sessions too), settle (with
// PropertiesToModify that may pass the limits too), renew, set session
// states and delete messages, two blocked receivers (one accepting the
// next session) take what arrives, an administrator creates, updates and
// deletes the queues, the topic, its subscriptions and their rules,
// forwarding in chains and loops (F1, F2, D4), and the clock moves
// by whole minutes, so that deadlines of different entities tie (T3). The
// records the calls append, in the order they are appended, must replay to
// the state the live broker reached, field by field; and for every
// snapshot, a broker rebuilt from it and the records after it, up to any
// record after those it reflects (a crash just after that record), must be
// the one the records alone rebuild. An observer follows every message
// through its events meanwhile (ledger): no event may come that its
// message's state does not allow, and at the end the entities must hold
// what the events left in them, no message lost, duplicated or invented.
func TestJournalReplaysConcurrentCalls(t *testing.T) {
	t.Parallel() // CPU-bound and on a broker of its own: beside the other replay tests
	var checked, records, snaps int
	for round := range *concRounds {
		c := concRound(t, uint64(round))
		checked += c.checked
		records += c.records
		snaps += c.snapshots
	}
	t.Logf("%d rounds: %d records, %d snapshots, %d crashes checked", *concRounds, records, snaps, checked)
}

// concRound is a round of TestJournalReplaysConcurrentCalls, its random
// choices drawn from seed.
func concRound(t *testing.T, seed uint64) churnCounts {
	mock := clock.NewMock()
	mock.Set(epoch)
	l := newLedger("t")
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler), Observer: l.observe})
	defer b.Close()
	j := &histJournal{memJournal: memJournal{first: 1}}
	startJournal(t, b, j)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plain := Config{LockDuration: time.Minute, MaxDeliveryCount: 2, MaxSizeMB: 1, MaxMessageKB: 400}
	for _, name := range []string{"a", "b", "c"} {
		_, err := b.Create(KindQueue, name, plain)
		require.NoError(t, err)
	}
	topicTakingAll(t, b, plain, "x", "y")

	// The workers make *concOps calls each; after each, the administrator,
	// the clock and the snapshots take a turn, each acting now and then,
	// so that their calls fall among the workers' throughout the round.
	var workers, others sync.WaitGroup
	actor := func(stream uint64) *concActor {
		return &concActor{t: t, ctx: ctx, mock: mock, b: b, l: l, r: rand.New(rand.NewPCG(stream, seed)), recv: map[tieRecvKey]*Receiver{}}
	}
	var turns []chan struct{}
	turn := func(stream uint64, f func(a *concActor)) chan struct{} {
		c := make(chan struct{}, 1)
		turns = append(turns, c)
		others.Add(1)
		go func() {
			defer others.Done()
			a := actor(stream)
			for {
				select {
				case <-ctx.Done():
					return
				case <-c:
				}
				f(a)
			}
		}()
		return c
	}
	turn(0, func(a *concActor) {
		if a.r.IntN(2) == 0 {
			a.admin()
		}
	})
	turn(3, func(a *concActor) {
		if a.r.IntN(8) == 0 {
			mock.Add(time.Duration(a.r.IntN(2)+1) * time.Minute)
			b.CatchUp()
		}
	})
	var snapErr error
	turn(4, func(a *concActor) {
		if a.r.IntN(16) == 0 && snapErr == nil {
			snapErr = b.Snapshot()
		}
	})
	waitsA, waitsB := make(chan struct{}, 1), make(chan struct{}, 1) // the blocked receivers', below
	turns = append(turns, waitsA, waitsB)
	for stream := range uint64(2) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			a := actor(1 + stream)
			for range *concOps {
				a.work()
				for _, c := range turns {
					poke(c)
				}
				runtime.Gosched() // the others' calls before this one's next

			}
		}()
	}
	// A receiver blocked on a's main queue, and one blocked accepting the
	// next session of b, take what the others' calls bring there, on
	// goroutines of their own, until the round ends; while they cannot,
	// they wait for a worker's next call.
	var waiter sync.WaitGroup
	block := func(path string, waits chan struct{}) {
		waiter.Add(1)
		go func() {
			defer waiter.Done()
			for ctx.Err() == nil {
				var err error
				if e := entityAt(b, path); e != nil {
					var r *Receiver
					if e.Config().RequiresSession {
						r, err = e.AcceptNextSession(ctx, PeekLock, nil)
					} else {
						r, err = e.NewReceiver(store.Main, PeekLock)
					}
					if err == nil {
						var views []store.View
						views, err = r.Receive(ctx, 2, nil, 0)
						for i := range views {
							_, _ = r.Settle(context.Background(), Settlement{Op: Complete, Token: views[i].Token, Seq: views[i].Key.Seq})
							views[i].Release()
						}
						r.Close()
					}
				}
				if e := entityAt(b, path); e == nil || err != nil { // deleted, disabled or forwarding
					select {
					case <-ctx.Done():
					case <-waits:
					}
				}
			}
		}()
	}
	block("a", waitsA)
	block("b", waitsB)
	workers.Wait()
	cancel()
	others.Wait()
	waiter.Wait()
	require.NoError(t, snapErr)
	l.check(t, b)

	recs, hist := j.history()
	scratch := concReplayer(t, mock, nil)
	for i, r := range recs {
		if err := scratch.apply(uint64(i+1), r); err != nil {
			logRecords(t, recs[:i+1])
			t.Logf("replayed before record %d:\n%s", i+1, dump(scratch))
			t.Logf("live:\n%s", dump(b))
			require.NoError(t, err)
		}
	}
	// The records rebuild what the calls left, field by field.
	sameDump(t, dump(b), dump(scratch))
	scratch.Close()

	// Every snapshot, with the records after it, rebuilds what the records
	// alone do, from the first record it may not reflect on.
	scratch = concReplayer(t, mock, nil)
	defer scratch.Close()
	var k uint64 // records scratch has applied
	var checked int
	for i, s := range hist {
		end := uint64(len(recs))
		if i+1 < len(hist) {
			end = max(hist[i+1].durable, s.durable)
		}
		for ; k < s.durable; k++ {
			require.NoError(t, scratch.apply(k+1, recs[k]))
		}
		sb := concReplayer(t, mock, s.data)
		for lsn := s.lsn + 1; lsn <= k; lsn++ {
			require.NoError(t, sb.apply(lsn, recs[lsn-1]), "snapshot of record %d", s.lsn)
		}
		for {
			if want, got := bySource(dump(scratch)), bySource(dump(sb)); want != got {
				t.Logf("snapshot of record %d, written after record %d; a crash after record %d", s.lsn, s.durable, k)
				sameDump(t, want, got)
			}
			checked++
			if k == end {
				break
			}
			require.NoError(t, scratch.apply(k+1, recs[k]))
			require.NoError(t, sb.apply(k+1, recs[k]), "snapshot of record %d", s.lsn)
			k++
		}
		sb.Close()
	}
	return churnCounts{records: len(recs), snapshots: len(hist), checked: checked}
}

// logRecords logs what each of recs is and whose, for a failure.
func logRecords(t *testing.T, recs [][]byte) {
	for i, r := range recs {
		d := &decoder{b: r}
		k := recKind(d.u8())
		path := pathOf(d.str(), d.str())
		switch k {
		case recDeadline:
			what, q, key, session, at := d.u8(), store.Queue(d.u8()), d.key(), d.str(), d.svar()
			t.Logf("record %d: %v %s: %d of %v %v %q at %d", i+1, k, path, what, q, key, session, at)
		case recSettle:
			q, key, op := store.Queue(d.u8()), d.key(), Op(d.u8())
			t.Logf("record %d: %v %s: %v %v op %d", i+1, k, path, q, key, op)
		default:
			t.Logf("record %d: %v %s %x", i+1, k, path, d.b[:min(len(d.b), 48)])
		}
	}
}

// bySource sorts the messages on their way in a dump by their source,
// stably: a snapshot keeps those of each source in the order they left it,
// as the records do, but those of different sources in the order they left,
// where the records have them in the order their calls ended. Open
// delivers them in that order; calls that end in one order may have
// forwarded in the other, which is why either is one a live broker may
// take.
func bySource(dump string) string {
	lines := strings.Split(dump, "\n")
	var on []string
	lines = slices.DeleteFunc(lines, func(l string) bool {
		if strings.HasPrefix(l, "outbox ") {
			on = append(on, l)
			return true
		}
		return false
	})
	from := func(l string) string { return strings.Fields(l)[1] }
	slices.SortStableFunc(on, func(a, b string) int { return strings.Compare(from(a), from(b)) })
	return strings.Join(append(lines, on...), "\n")
}

// concReplayer is a broker that replays records, from snapshot when it is
// not nil; it keeps the locks they hold.
func concReplayer(t require.TestingT, mock clock.Clock, snapshot []byte) *Broker {
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
	b.replay = &replayState{covered: map[string]uint64{}, locks: map[lockRef]*store.Message{}}
	if snapshot != nil {
		require.NoError(t, b.restore(snapshot))
	}
	return b
}

// concActor is one goroutine of TestJournalReplaysConcurrentCalls, with its
// own receivers, locks and scheduled messages.
type concActor struct {
	t        *testing.T
	ctx      context.Context
	mock     *clock.Mock
	b        *Broker
	l        *ledger
	r        *rand.Rand
	recv     map[tieRecvKey]*Receiver
	locks    []heldLock
	deferred []heldLock // no token: a deferred message's receiver and number
	sched    []tieScheduled
}

func pick[T any](r *rand.Rand, choices ...T) T { return choices[r.IntN(len(choices))] }

func (a *concActor) minutes(choices ...int) time.Duration {
	return time.Duration(pick(a.r, choices...)) * time.Minute
}

// config is tieWorld.config, drawn from a's source.
func (a *concActor) config(path string) Config {
	c := Config{
		LockDuration:     a.minutes(1, 2),
		MaxDeliveryCount: int32(a.r.IntN(2) + 1),
		TTL:              a.minutes(0, 2, 3),
		AutoDeleteOnIdle: a.minutes(0, 0, 3, 5),
		MaxSizeMB:        1,
		MaxMessageKB:     int64(pick(a.r, 1, 400, 400)),
		Status:           pick(a.r, StatusActive, StatusActive, StatusActive, StatusDisabled, StatusSendDisabled, StatusReceiveDisabled),
	}
	c.DeadLetterOnExpiry = a.r.IntN(2) == 0
	if path != "t" && a.r.IntN(4) == 0 {
		c.RequiresSession = true
	}
	if !strings.Contains(path, "/") && a.r.IntN(2) == 0 {
		c.RequiresDuplicateDetection, c.DuplicateWindow = true, a.minutes(1, 2, 4)
	}
	if path != "t" {
		c.ForwardTo = pick(a.r, "", "", "a", "b", "c", "t")
		c.ForwardDeadLetteredTo = pick(a.r, "", "", "a", "b", "c", "t")
	}
	return c
}

// admin creates, updates or deletes an entity, or a subscription's rule.
func (a *concActor) admin() {
	path := pick(a.r, tieNames...)
	name, sub, isSub := strings.Cut(path, "/")
	switch a.r.IntN(5) {
	case 0, 1: // create
		c := a.config(path)
		switch {
		case isSub:
			if top := entityAt(a.b, name); top != nil {
				spec := RuleSpec{Name: "$Default", Filter: FilterTrue}
				if a.r.IntN(2) == 0 {
					spec = RuleSpec{Name: "red", Filter: FilterSQL, SQL: "color = 'red'"}
				}
				r, err := CompileRule(spec)
				require.NoError(a.t, err)
				_, _ = top.CreateSubscription(sub, c, []*Rule{r})
			}
		case name == "t":
			_, _ = a.b.Create(KindTopic, name, c)
		default:
			_, _ = a.b.Create(KindQueue, name, c)
		}
	case 2: // update
		if e := entityAt(a.b, path); e != nil {
			c, old := a.config(path), e.Config()
			c.RequiresDuplicateDetection, c.RequiresSession = old.RequiresDuplicateDetection, old.RequiresSession
			if !c.RequiresDuplicateDetection {
				c.DuplicateWindow = old.DuplicateWindow
			}
			_ = e.Update(c)
		}
	case 3: // delete, now and then
		if a.r.IntN(3) != 0 {
			return
		}
		switch {
		case isSub:
			if top := entityAt(a.b, name); top != nil {
				_ = top.DeleteSubscription(sub)
			}
		case name == "t":
			_ = a.b.Delete(KindTopic, name)
		default:
			_ = a.b.Delete(KindQueue, name)
		}
	case 4: // a rule
		s := entityAt(a.b, pick(a.r, "t/x", "t/y"))
		if s == nil {
			return
		}
		rule := pick(a.r, "$Default", "red", "blue")
		if a.r.IntN(2) == 0 {
			_ = s.DeleteRule(rule)
			return
		}
		spec := RuleSpec{Name: rule, Filter: FilterSQL, SQL: "color = '" + rule + "'", HasAction: true, ActionSQL: "SET seen = 1"}
		if rule == "$Default" {
			spec = RuleSpec{Name: rule, Filter: FilterTrue}
		}
		r, err := CompileRule(spec)
		require.NoError(a.t, err)
		_ = s.CreateRule(r)
	}
}

// work sends, cancels, receives, settles, or does something else with a
// receiver.
func (a *concActor) work() {
	switch a.r.IntN(9) {
	case 0, 1, 2:
		a.send()
	case 3:
		if len(a.sched) > 0 {
			i := a.r.IntN(len(a.sched))
			s := a.sched[i]
			a.sched = slices.Delete(a.sched, i, i+1)
			_ = s.e.Cancel(a.ctx, []int64{s.seq})
		}
	case 4, 5:
		a.receive()
	case 6:
		a.other()
	default:
		a.settle()
	}
}

// other fetches a deferred message, sets a session's state, renews a
// session's lock, deletes messages, or has a receiver's locks renew
// themselves, with a receiver a has.
func (a *concActor) other() {
	var rs []*Receiver
	for _, r := range a.recv {
		if !r.Closed() {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return
	}
	r := rs[a.r.IntN(len(rs))]
	switch a.r.IntN(5) {
	case 4:
		r.AutoRenew(a.minutes(0, 2, 5))
	case 0:
		if len(a.deferred) > 0 {
			i := a.r.IntN(len(a.deferred))
			d := a.deferred[i]
			a.deferred = slices.Delete(a.deferred, i, i+1)
			snaps, _ := d.r.ReceiveDeferred(a.ctx, []int64{d.seq})
			a.took(d.r, snaps)
			a.locks = hold(a.locks, d.r, snaps)
		}
	case 1:
		if r.SessionID() != "" {
			_ = r.SetSessionState(a.ctx, []byte(pick(a.r, "", "one", "two")))
		}
	case 2:
		if r.SessionID() != "" {
			_, _ = r.RenewSessionLock(a.ctx)
		}
	default:
		_, _ = r.Delete(a.ctx, a.r.IntN(3)+1, store.Never)
	}
}

func (a *concActor) send() {
	path := pick(a.r, "a", "b", "c", "t")
	recs := make([]*store.Message, a.r.IntN(3)+1)
	for i := range recs {
		m := store.NewMessage()
		// Small, larger than 1 KB, and a quarter of the 1 MB quota.
		m.Body = append(m.Body, strings.Repeat("a", pick(a.r, 1, 1, 1, 2000, 300<<10))...)
		m.SessionID = pick(a.r, "", "", "s1", "s2")
		m.MessageID = pick(a.r, "", "m1", "m2", "m3")
		if m.MessageID == "" {
			m.IDSeed = a.r.Uint64() | 1
		}
		if a.r.IntN(2) == 0 {
			m.Props = map[string]any{"color": "red"}
		}
		if a.r.IntN(3) == 0 {
			m.Scheduled = a.mock.Now().Add(a.minutes(1, 2, 3)).UnixNano()
		}
		m.TTL = int64(a.minutes(0, 1, 2, 4))
		recs[i] = m
	}
	e := entityAt(a.b, path)
	if e == nil {
		return
	}
	at := store.Unset
	if a.r.IntN(4) == 0 { // ScheduleMessages
		at = a.mock.Now().Add(a.minutes(0, 1, 2)).UnixNano()
	}
	ids := make([]string, len(recs))
	for i, m := range recs {
		ids[i] = m.MessageID
		if ids[i] == "" {
			ids[i] = string(store.AppendID(nil, m.IDSeed))
		}
	}
	seqs, err := e.Send(a.ctx, recs, at, true)
	if err == nil {
		a.l.sent(path, ids)
	}
	if err == nil && at != store.Unset {
		for _, seq := range seqs {
			a.sched = append(a.sched, tieScheduled{e, seq})
		}
	}
}

func (a *concActor) receive() {
	e := entityAt(a.b, pick(a.r, "a", "b", "c", "t/x", "t/y"))
	if e == nil {
		return
	}
	q := store.Queue(a.r.IntN(3))
	mode := Mode(a.r.IntN(2))
	key := tieRecvKey{e: e, q: q, mode: mode}
	if e.Config().RequiresSession && q == store.Main {
		key = tieRecvKey{e: e, session: pick(a.r, "s1", "s2")}
	}
	r := a.recv[key]
	if r == nil || r.Closed() {
		var err error
		if key.session != "" {
			r, err = e.AcceptSession(a.ctx, key.session, mode)
		} else {
			r, err = e.NewReceiver(q, mode)
		}
		if err != nil {
			return // held by another, or a forwarding entity's main queue
		}
		a.recv[key] = r
	}
	snaps, _ := r.Receive(a.ctx, a.r.IntN(3)+1, nil, -1)
	a.took(r, snaps)
	a.locks = hold(a.locks, r, snaps)
	if key.session != "" && a.r.IntN(2) == 0 {
		r.Close()
	}
}

// took tells the ledger what r took, when it receives and deletes.
func (a *concActor) took(r *Receiver, snaps []store.View) {
	if r.Mode() == ReceiveAndDelete {
		a.l.took(r.e.Path(), snaps)
	}
}

func (a *concActor) settle() {
	if len(a.locks) == 0 {
		return
	}
	i := a.r.IntN(len(a.locks))
	l := a.locks[i]
	s := Settlement{Op: Op(a.r.IntN(int(Release) + 1)), Token: l.token, Seq: l.seq}
	if s.Op != Renew {
		a.locks = slices.Delete(a.locks, i, i+1)
	}
	if s.Op == DeadLetter {
		s.Reason = "bad"
	}
	if (s.Op == Abandon || s.Op == Defer || s.Op == DeadLetter) && a.r.IntN(3) == 0 { // it may not fit (V3)
		s.Props = map[string]any{"pad": strings.Repeat("p", pick(a.r, 10, 2000, 200<<10))}
	}
	if _, err := l.r.Settle(a.ctx, s); err == nil && s.Op == Defer {
		a.deferred = append(a.deferred, heldLock{r: l.r, seq: l.seq})
	}
}

// TestJournalRecordsNothingOfASubscriptionAfterItsTopicsDeletion: a
// settlement on a subscription made as its topic's delete record is
// appended finds the subscription deleted; without the subscriptions
// deleted first, it would append its record after the topic's, and the
// replay, having deleted the subscription with its topic, would fail ("no
// such entity"). TestJournalReplaysConcurrentCalls found it.
func TestJournalRecordsNothingOfASubscriptionAfterItsTopicsDeletion(t *testing.T) {
	mock, b, j, top, subs := topicWithSubs(t, Config{LockDuration: time.Minute, MaxDeliveryCount: 3, MaxSizeMB: 1, MaxMessageKB: 64}, "x")
	defer b.Close()
	ctx := context.Background()
	sub := subs[0]
	_, err := top.Send(ctx, []*store.Message{store.NewMessage()}, store.Unset, false)
	require.NoError(t, err)
	r, err := sub.NewReceiver(store.Main, PeekLock)
	require.NoError(t, err)
	snaps, err := r.Receive(ctx, 1, nil, -1)
	require.NoError(t, err)
	require.Len(t, snaps, 1)
	token := snaps[0].Token
	snaps[0].Release()

	var settled error
	fn := func(rec []byte) {
		d := &decoder{b: rec}
		if recKind(d.u8()) == recDelete && d.str() == "t" && d.str() == "" {
			j.onAppend.Store(nil)
			_, settled = r.Settle(ctx, Settlement{Op: Complete, Token: token})
		}
	}
	j.onAppend.Store(&fn)
	require.NoError(t, b.Delete(KindTopic, "t"))
	got := replayed(t, mock, &j.memJournal)
	defer got.Close()
	sameDump(t, dump(b), dump(got))
	require.ErrorIs(t, settled, errs.ErrNotFound)
}

// TestJournalReplaysASubscriptionsGrowthInTheQuotaAnotherFreed: two
// subscriptions share their topic's quota (SEMANTICS V3), each changing it
// under its own lock. A settlement that grows a message with
// PropertiesToModify into room a settlement on the other subscription has
// just freed, before that one's record is appended, is recorded first: the
// replay, which applies it before the room is free, must take it as the
// live call did, not refuse it (Open would fail). So with a topic's new
// limits, which its subscriptions see before its update is recorded.
func TestJournalReplaysASubscriptionsGrowthInTheQuotaAnotherFreed(t *testing.T) {
	for _, tc := range []struct {
		name string
		// trigger reports whether rec is the record to make the growth
		// before: when the room or the limit is there, and not recorded.
		trigger func(rec []byte) bool
		// free makes the room: a completion on x, or a larger topic.
		free func(t *testing.T, top *Entity, x *Receiver, token [16]byte)
	}{
		{"completion", func(rec []byte) bool {
			d := &decoder{b: rec}
			return recKind(d.u8()) == recSettle && d.str() == "t" && d.str() == "x"
		}, func(t *testing.T, _ *Entity, x *Receiver, token [16]byte) {
			_, err := x.Settle(context.Background(), Settlement{Op: Complete, Token: token})
			require.NoError(t, err)
		}},
		{"update", func(rec []byte) bool {
			d := &decoder{b: rec}
			return recKind(d.u8()) == recUpdate && d.str() == "t"
		}, func(t *testing.T, top *Entity, _ *Receiver, _ [16]byte) {
			c := top.Config()
			c.MaxSizeMB = 2
			require.NoError(t, top.Update(c))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mock, b, j, top, subs := topicWithSubs(t, Config{LockDuration: time.Minute, MaxDeliveryCount: 3, MaxSizeMB: 1, MaxMessageKB: 2048}, "x", "y")
			defer b.Close()
			ctx := context.Background()
			recv := map[string]*Receiver{}
			for _, sub := range subs {
				r, err := sub.NewReceiver(store.Main, PeekLock)
				require.NoError(t, err)
				recv[sub.Name()] = r
			}
			m := store.NewMessage()
			m.Body = make([]byte, 400<<10)
			_, err := top.Send(ctx, []*store.Message{m}, store.Unset, false)
			require.NoError(t, err)
			tokens := map[string][16]byte{}
			for name, r := range recv {
				snaps, err := r.Receive(ctx, 1, nil, -1)
				require.NoError(t, err)
				require.Len(t, snaps, 1)
				tokens[name] = snaps[0].Token
				snaps[0].Release()
			}
			// Properties that pass the room left, and fit the room the
			// completion or the update makes.
			pad := map[string]any{"pad": strings.Repeat("p", int(top.quota.Limit()-top.quota.Used())+10<<10)}
			grow := func() error {
				_, err := recv["y"].Settle(ctx, Settlement{Op: Abandon, Token: tokens["y"], Props: pad})
				return err
			}
			require.ErrorIs(t, grow(), errs.ErrQuotaExceeded, "no room yet")

			// The growth comes now, if y's lock lets it, or as soon as it
			// does.
			grown := make(chan error, 1)
			fn := func(rec []byte) {
				if !tc.trigger(rec) {
					return
				}
				j.beforeAppend.Store(nil)
				y := recv["y"].Entity()
				if y.mu.TryLock() {
					y.mu.Unlock()
					grown <- grow()
					return
				}
				go func() { grown <- grow() }()
			}
			j.beforeAppend.Store(&fn)
			tc.free(t, top, recv["x"], tokens["x"])
			require.NoError(t, <-grown, "the room is there")
			got := replayed(t, mock, &j.memJournal)
			defer got.Close()
			sameDump(t, dump(b), dump(got))
		})
	}
}

// TestJournalRecordsATopicsUpdateWithItsSubscriptionsLocked: a
// subscription reads its topic's TTL when a message that passed through it
// comes back from a destination that could not take it (SEMANTICS E1, F3),
// under its own lock. The topic's new TTL is there before its update is
// recorded: a subscription's record in between would replay under the old
// one. So its subscriptions stay locked until the record is appended.
func TestJournalRecordsATopicsUpdateWithItsSubscriptionsLocked(t *testing.T) {
	c := Config{LockDuration: time.Minute, MaxDeliveryCount: 3, MaxSizeMB: 1, MaxMessageKB: 64}
	_, b, j, top, subs := topicWithSubs(t, c, "x")
	defer b.Close()
	sub := subs[0]

	held := errors.New("not recorded")
	fn := func(rec []byte) {
		d := &decoder{b: rec}
		if recKind(d.u8()) != recUpdate || d.str() != "t" {
			return
		}
		held = nil
		if sub.mu.TryLock() {
			sub.mu.Unlock()
			held = errors.New("the subscription was not locked")
		}
	}
	j.beforeAppend.Store(&fn)
	c.TTL = time.Minute
	require.NoError(t, top.Update(c))
	require.NoError(t, held)
}

// topicWithSubs returns a durable broker on an appendJournal, with a topic
// t and its subscriptions named names, every one with configuration c and
// the default rule.
func topicWithSubs(t *testing.T, c Config, names ...string) (*clock.Mock, *Broker, *appendJournal, *Entity, []*Entity) {
	mock := clock.NewMock()
	mock.Set(epoch)
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
	j := &appendJournal{}
	j.first = 1
	startJournal(t, b, j)
	top, subs := topicTakingAll(t, b, c, names...)
	return mock, b, j, top, subs
}

// topicTakingAll creates a topic t on b and its subscriptions named names,
// every one with configuration c and the default rule (every message).
func topicTakingAll(t require.TestingT, b *Broker, c Config, names ...string) (*Entity, []*Entity) {
	top, err := b.Create(KindTopic, "t", c)
	require.NoError(t, err)
	rule, err := CompileRule(RuleSpec{Name: "$Default", Filter: FilterTrue})
	require.NoError(t, err)
	subs := make([]*Entity, len(names))
	for i, name := range names {
		subs[i], err = top.CreateSubscription(name, c, []*Rule{rule})
		require.NoError(t, err)
	}
	return top, subs
}

// appendJournal is a memJournal that calls beforeAppend and onAppend, once
// set, with every record it appends, before appending it and after.
type appendJournal struct {
	memJournal
	beforeAppend, onAppend atomic.Pointer[func(rec []byte)]
}

func (j *appendJournal) Append(rec []byte) uint64 {
	if fn := j.beforeAppend.Load(); fn != nil {
		(*fn)(rec)
	}
	lsn := j.memJournal.Append(rec)
	if fn := j.onAppend.Load(); fn != nil {
		(*fn)(rec)
	}
	return lsn
}

// TestJournalRecordsOneDeletion: an entity deleted on idle (SEMANTICS A3)
// after a Delete found it and before the Delete locks it (its lookup holds
// the broker's lock or its topic's, the idle deletion the entity's alone)
// is not deleted, nor recorded deleted, a second time: the replay would not
// find it ("no such subscription") and Open would fail.
// TestJournalReplaysConcurrentCalls found it.
func TestJournalRecordsOneDeletion(t *testing.T) {
	for _, path := range []string{"q", "t", "t/x"} {
		t.Run(path, func(t *testing.T) {
			mock := clock.NewMock()
			mock.Set(epoch)
			b, j := newDurable(t, mock)
			defer b.Close()
			c := Config{LockDuration: time.Minute, MaxDeliveryCount: 3, MaxSizeMB: 1, MaxMessageKB: 64}
			idle := c
			idle.AutoDeleteOnIdle = 5 * time.Minute
			_, err := b.Create(KindQueue, "q", idle)
			require.NoError(t, err)
			topicTakingAll(t, b, idle, "x")
			found := entityAt(b, path) // what Delete's lookup found
			mock.Add(5 * time.Minute)
			b.CatchUp() // deletes it on idle
			require.True(t, found.deleted.Load())
			err = found.deleteFound(mock.Now().UnixNano())
			got := replayed(t, mock, j)
			defer got.Close()
			sameDump(t, dump(b), dump(got))
			require.ErrorIs(t, err, errs.ErrNotFound)
		})
	}
}
