package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus/internal/store"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestJournalReplaysTheStateAtTies is TestJournalReplaysTheState where the
// model test cannot go: entities created, updated and deleted at random,
// forwarding to each other in chains and loops (F1, F2, D4), deleted for
// idleness (A2, A3: after 3 or 5 minutes, as A1's floor is the root's to
// check), refusing forwards (F3) and detecting duplicates (DD1), with
// sessions, statuses and size limits, every duration a whole
// number of minutes and the clock moved by whole minutes, so that lock
// ends, expiries, activations, idle deletions and forwards of different
// entities fall on one instant (T3). The order the broker gives such
// events is its own, which is why the model test holds its clock back
// before them; whatever that order, the records it appends must replay to
// the state the live broker reached, field by field.
func TestJournalReplaysTheStateAtTies(t *testing.T) {
	t.Parallel() // CPU-bound and on a broker of its own: beside the other replay tests
	rapid.Check(t, func(t *rapid.T) {
		mock := clock.NewMock()
		mock.Set(epoch)
		b, j := newDurable(t, mock)
		defer b.Close()
		w := &tieWorld{ctx: context.Background(), mock: mock, b: b, recv: map[tieRecvKey]*Receiver{}}
		t.Repeat(journalActions(mock, b, j, time.Minute, 4, map[string]func(*rapid.T){
			"create":  w.create,
			"update":  w.update,
			"delete":  w.delete,
			"send":    w.send,
			"receive": w.receive,
			"settle":  w.settle,
			"cancel":  w.cancel,
			"rule":    w.rule,
		}))
	})
}

// tieNames are the entities a case may create: three queues, a topic and
// its two subscriptions.
var tieNames = []string{"a", "b", "c", "t", "t/x", "t/y"}

type tieRecvKey struct {
	e       *Entity
	q       store.Queue
	mode    Mode
	session string
}

type tieWorld struct {
	ctx   context.Context
	mock  *clock.Mock
	b     *Broker
	recv  map[tieRecvKey]*Receiver
	locks []heldLock
	sched []tieScheduled
}

// tieScheduled is a message scheduled by ScheduleMessages, to cancel.
type tieScheduled struct {
	e   *Entity
	seq int64
}

// entity is the live entity of path, or nil.
func (w *tieWorld) entity(path string) *Entity { return entityAt(w.b, path) }

func minutes(t *rapid.T, label string, choices ...int) time.Duration {
	return time.Duration(rapid.SampledFrom(choices).Draw(t, label)) * time.Minute
}

// config draws a configuration for path whose forwards name queues or the
// topic, existing or not (Create refuses a missing one).
func (w *tieWorld) config(t *rapid.T, path string) Config {
	c := Config{
		LockDuration:     minutes(t, "lock", 1, 2),
		MaxDeliveryCount: int32(rapid.IntRange(1, 2).Draw(t, "mdc")),
		TTL:              minutes(t, "ttl", 0, 2, 3),
		AutoDeleteOnIdle: minutes(t, "idle", 0, 0, 3, 5),
		MaxSizeMB:        1,
		MaxMessageKB:     int64(rapid.SampledFrom([]int{1, 400, 400}).Draw(t, "maxKB")),
		Status:           rapid.SampledFrom([]Status{StatusActive, StatusActive, StatusActive, StatusDisabled, StatusSendDisabled, StatusReceiveDisabled}).Draw(t, "status"),
	}
	c.DeadLetterOnExpiry = rapid.Bool().Draw(t, "dlExpiry")
	if path != "t" && rapid.IntRange(0, 3).Draw(t, "session") == 0 {
		c.RequiresSession = true
	}
	if !strings.Contains(path, "/") && rapid.Bool().Draw(t, "dedup") {
		c.RequiresDuplicateDetection, c.DuplicateWindow = true, minutes(t, "window", 1, 2, 4)
	}
	targets := []string{"", "", "a", "b", "c", "t"}
	if path != "t" {
		c.ForwardTo = rapid.SampledFrom(targets).Draw(t, "forwardTo")
		c.ForwardDeadLetteredTo = rapid.SampledFrom(targets).Draw(t, "forwardDLTo")
	}
	return c
}

func (w *tieWorld) create(t *rapid.T) {
	path := rapid.SampledFrom(tieNames).Draw(t, "create")
	c := w.config(t, path)
	name, sub, ok := strings.Cut(path, "/")
	switch {
	case name == "t" && ok:
		top := w.entity("t")
		if top == nil {
			return
		}
		spec := RuleSpec{Name: "$Default", Filter: FilterTrue}
		if rapid.Bool().Draw(t, "red") {
			spec = RuleSpec{Name: "red", Filter: FilterSQL, SQL: "color = 'red'"}
		}
		r, err := CompileRule(spec)
		require.NoError(t, err)
		_, err = top.CreateSubscription(sub, c, []*Rule{r})
		t.Logf("create %s: %v", path, err)
	case name == "t":
		_, err := w.b.Create(KindTopic, name, c)
		t.Logf("create %s: %v", path, err)
	default:
		_, err := w.b.Create(KindQueue, name, c)
		t.Logf("create %s: %v", path, err)
	}
}

func (w *tieWorld) update(t *rapid.T) {
	path := rapid.SampledFrom(tieNames).Draw(t, "update")
	e := w.entity(path)
	if e == nil {
		return
	}
	c := w.config(t, path)
	old := e.Config()
	c.RequiresDuplicateDetection = old.RequiresDuplicateDetection // fixed at creation
	c.RequiresSession = old.RequiresSession
	if !c.RequiresDuplicateDetection {
		c.DuplicateWindow = old.DuplicateWindow
	}
	t.Logf("update %s: %v", path, e.Update(c))
}

func (w *tieWorld) delete(t *rapid.T) {
	path := rapid.SampledFrom(tieNames).Draw(t, "delete")
	name, sub, ok := strings.Cut(path, "/")
	var err error
	switch {
	case ok:
		top := w.entity(name)
		if top == nil {
			return
		}
		err = top.DeleteSubscription(sub)
	case name == "t":
		err = w.b.Delete(KindTopic, name)
	default:
		err = w.b.Delete(KindQueue, name)
	}
	t.Logf("delete %s: %v", path, err)
}

func (w *tieWorld) send(t *rapid.T) {
	path := rapid.SampledFrom([]string{"a", "b", "c", "t"}).Draw(t, "to")
	recs := make([]*store.Message, rapid.IntRange(1, 3).Draw(t, "n"))
	for i := range recs {
		m := store.NewMessage()
		// Small, larger than 1 KB, and a quarter of the 1 MB quota.
		m.Body = append(m.Body, strings.Repeat("a", rapid.SampledFrom([]int{1, 1, 1, 2000, 300 << 10}).Draw(t, "body"))...)
		m.SessionID = rapid.SampledFrom([]string{"", "", "s1", "s2"}).Draw(t, "session")
		m.MessageID = rapid.SampledFrom([]string{"", "m1", "m2", "m3"}).Draw(t, "id")
		if m.MessageID == "" {
			m.IDSeed = rapid.Uint64Min(1).Draw(t, "seed")
		}
		if rapid.Bool().Draw(t, "red") {
			m.Props = map[string]any{"color": "red"}
		}
		if rapid.IntRange(0, 2).Draw(t, "sched") == 0 {
			m.Scheduled = w.mock.Now().Add(minutes(t, "in", 1, 2, 3)).UnixNano()
		}
		m.TTL = int64(minutes(t, "ttl", 0, 1, 2, 4))
		recs[i] = m
	}
	e := w.entity(path)
	if e == nil {
		return
	}
	at := store.Unset
	if rapid.IntRange(0, 3).Draw(t, "schedule") == 0 { // ScheduleMessages
		at = w.mock.Now().Add(minutes(t, "at", 0, 1, 2)).UnixNano()
	}
	seqs, err := e.Send(w.ctx, recs, at, true)
	t.Logf("send to %s: %v %v", path, seqs, err)
	if at != store.Unset {
		for _, seq := range seqs {
			w.sched = append(w.sched, tieScheduled{e, seq})
		}
	}
}

func (w *tieWorld) cancel(t *rapid.T) {
	if len(w.sched) == 0 {
		t.Skip("nothing scheduled")
	}
	i := rapid.IntRange(0, len(w.sched)-1).Draw(t, "scheduled")
	s := w.sched[i]
	w.sched = slices.Delete(w.sched, i, i+1)
	t.Logf("cancel %d: %v", s.seq, s.e.Cancel(w.ctx, []int64{s.seq}))
}

// rule adds a rule to a subscription or deletes one.
func (w *tieWorld) rule(t *rapid.T) {
	s := w.entity(rapid.SampledFrom([]string{"t/x", "t/y"}).Draw(t, "sub"))
	if s == nil {
		return
	}
	name := rapid.SampledFrom([]string{"$Default", "red", "blue"}).Draw(t, "rule")
	if rapid.Bool().Draw(t, "add") {
		spec := RuleSpec{Name: name, Filter: FilterSQL, SQL: "color = '" + name + "'", HasAction: true, ActionSQL: "SET seen = 1"}
		if name == "$Default" {
			spec = RuleSpec{Name: name, Filter: FilterTrue}
		}
		r, err := CompileRule(spec)
		require.NoError(t, err)
		t.Logf("add rule %s: %v", name, s.CreateRule(r))
		return
	}
	t.Logf("delete rule %s: %v", name, s.DeleteRule(name))
}

func (w *tieWorld) receive(t *rapid.T) {
	path := rapid.SampledFrom([]string{"a", "b", "c", "t/x", "t/y"}).Draw(t, "from")
	q := store.Queue(rapid.IntRange(0, 2).Draw(t, "queue"))
	mode := Mode(rapid.IntRange(0, 1).Draw(t, "mode"))
	e := w.entity(path)
	if e == nil {
		return
	}
	if e.Config().RequiresSession && q == store.Main {
		w.session(t, e, mode)
		return
	}
	key := tieRecvKey{e: e, q: q, mode: mode}
	r := w.recv[key]
	if r == nil {
		var err error
		if r, err = e.NewReceiver(q, mode); err != nil {
			t.Logf("receiver of %s: %v", path, err) // a forwarding entity's main queue
			return
		}
		w.recv[key] = r
	}
	w.take(t, r, path)
}

// session accepts a session of e, receives from it, and closes the
// receiver or keeps it, with the session's lock, for later calls.
func (w *tieWorld) session(t *rapid.T, e *Entity, mode Mode) {
	id := rapid.SampledFrom([]string{"s1", "s2"}).Draw(t, "session")
	key := tieRecvKey{e: e, session: id}
	r := w.recv[key]
	if r == nil || r.Closed() {
		var err error
		if r, err = e.AcceptSession(w.ctx, id, mode); err != nil {
			t.Logf("accept session %s of %s: %v", id, e.Path(), err)
			return
		}
		w.recv[key] = r
	}
	w.take(t, r, e.Path()+"/"+id)
	if rapid.Bool().Draw(t, "close") {
		r.Close()
	}
}

func (w *tieWorld) take(t *rapid.T, r *Receiver, path string) {
	snaps, err := r.Receive(w.ctx, rapid.IntRange(1, 3).Draw(t, "max"), nil, -1)
	t.Logf("receive from %s: %d, %v", path, len(snaps), err)
	w.locks = hold(w.locks, r, snaps)
}

func (w *tieWorld) settle(t *rapid.T) {
	if len(w.locks) == 0 {
		t.Skip("no lock")
	}
	i := rapid.IntRange(0, len(w.locks)-1).Draw(t, "lock")
	l := w.locks[i]
	s := Settlement{Op: Op(rapid.IntRange(0, int(Release)).Draw(t, "op")), Token: l.token, Seq: l.seq}
	if s.Op != Renew {
		w.locks = slices.Delete(w.locks, i, i+1)
	}
	if s.Op == DeadLetter {
		s.Reason = "bad"
	}
	_, err := l.r.Settle(w.ctx, s)
	t.Logf("settle %d op %d: %v", l.seq, s.Op, err)
}
