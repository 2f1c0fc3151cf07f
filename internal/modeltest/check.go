package modeltest

// Check: every count, list, property, rule and session compared with the
// model, and the model's own invariants, before and after every action.

import (
	"bytes"
	"reflect"
	"slices"
	"sort"
	"time"

	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

// Check compares every count, list and rule, and runs the model's own
// invariants. It runs before and after every action.
func (h *machine) Check(t *rapid.T) {
	if h.m.now == mNever-1 {
		// At the end of time a deadline made by the last step is due at
		// once: the broker's next call processes it first (SEMANTICS T3).
		h.m.advance(h.m.now)
	}
	if err := h.m.check(); err != nil {
		t.Fatalf("model invariant: %v", err)
	}
	h.checkKept(t)
	h.checkNames(t)
	// Queues and subscriptions first: a topic's size is its subscriptions'.
	for _, he := range h.ents {
		if he.stale {
			continue // deleted before a crash: no handle names it
		}
		h.checkCfg(t, he)
		switch he.m.kind {
		case mQueue:
			h.checkQueue(t, he)
		case mSub:
			h.checkSub(t, he)
		}
		h.checkSessions(t, he)
	}
	for _, he := range h.ents {
		if he.m.kind == mTopic && !he.stale {
			h.checkTopic(t, he)
		}
	}
	h.checkHolders(t)
}

// checkKept is V4: a returned message never changes.
func (h *machine) checkKept(t *rapid.T) {
	for _, k := range h.kept {
		if !bytes.Equal(k.msg.Body, k.body) || !PropsEqual(k.msg.ApplicationProperties, k.props) {
			t.Fatalf("a returned message (seq %d) changed after the call: body %q props %v, was %q %v (V4)",
				k.msg.SequenceNumber, k.msg.Body, k.msg.ApplicationProperties, k.body, k.props)
		}
	}
}

func (h *machine) checkNames(t *rapid.T) {
	var queues, topics []string
	for _, e := range h.m.names {
		if e.kind == mQueue {
			queues = append(queues, e.name)
		} else {
			topics = append(topics, e.name)
		}
	}
	sort.Strings(queues)
	sort.Strings(topics)
	if got := h.ns.Queues(); !slices.Equal(got, queues) {
		t.Fatalf("Queues() = %v, model says %v", got, queues)
	}
	if got := h.ns.Topics(); !slices.Equal(got, topics) {
		t.Fatalf("Topics() = %v, model says %v", got, topics)
	}
}

// checkCfg compares Properties() of a live entity.
func (h *machine) checkCfg(t *rapid.T, he *hEnt) {
	e := he.m
	if e.deleted {
		return
	}
	var got mCfg
	var ok bool
	switch e.kind {
	case mQueue:
		got, ok = queueCfg(he.q.Properties())
	case mTopic:
		got, ok = topicCfg(he.t.Properties())
	case mSub:
		got, ok = subCfg(he.s.Properties())
	}
	if !ok || got != e.cfg {
		t.Fatalf("%v: Properties() give %+v, model says %+v", e, got, e.cfg)
	}
}

func (h *machine) checkQueue(t *rapid.T, he *hEnt) {
	e := he.m
	c := h.m.counts(e)
	rp := he.q.RuntimeProperties()
	got := mCounts{rp.ActiveMessageCount, rp.ScheduledMessageCount, rp.DeadLetterMessageCount,
		rp.TransferDeadLetterMessageCount, rp.TotalMessageCount, rp.SizeInBytes, 0}
	if got != c || rp.TransferMessageCount != 0 {
		t.Fatalf("%v: RuntimeProperties %+v (transfer %d), model says %+v: %s", e, got, rp.TransferMessageCount, c, dump(e))
	}
	h.times(t, e, rp.CreatedAt, rp.UpdatedAt, rp.AccessedAt)
}

func (h *machine) checkTopic(t *rapid.T, he *hEnt) {
	e := he.m
	c := h.m.counts(e)
	rp := he.t.RuntimeProperties()
	got := mCounts{scheduled: rp.ScheduledMessageCount, size: rp.SizeInBytes, subs: rp.SubscriptionCount}
	want := mCounts{scheduled: c.scheduled, size: c.size, subs: c.subs}
	if got != want {
		t.Fatalf("%v: RuntimeProperties %+v, model says %+v", e, got, want)
	}
	h.times(t, e, rp.CreatedAt, rp.UpdatedAt, rp.AccessedAt)
	if e.deleted {
		return
	}
	var subs []string
	for _, s := range e.subs {
		subs = append(subs, s.name)
	}
	sort.Strings(subs)
	if got := he.t.Subscriptions(); !slices.Equal(got, subs) {
		t.Fatalf("%v: Subscriptions() = %v, model says %v", e, got, subs)
	}
}

func (h *machine) checkSub(t *rapid.T, he *hEnt) {
	e := he.m
	c := h.m.counts(e)
	rp := he.s.RuntimeProperties()
	got := mCounts{active: rp.ActiveMessageCount, dead: rp.DeadLetterMessageCount,
		transfer: rp.TransferDeadLetterMessageCount, total: rp.TotalMessageCount}
	want := mCounts{active: c.active, dead: c.dead, transfer: c.transfer, total: c.total}
	if got != want || rp.TransferMessageCount != 0 {
		t.Fatalf("%v: RuntimeProperties %+v (transfer %d), model says %+v: %s", e, got, rp.TransferMessageCount, want, dump(e))
	}
	h.times(t, e, rp.CreatedAt, rp.UpdatedAt, rp.AccessedAt)
	if e.deleted {
		return
	}
	rules := he.s.Rules()
	wantRules := make([]minibus.Rule, len(e.rules))
	for i, r := range e.rules {
		wantRules[i] = r.public
	}
	if !reflect.DeepEqual(rules, wantRules) {
		t.Fatalf("%v: Rules() = %+v, model says %+v", e, rules, wantRules)
	}
}

// checkSessions compares ListSessions of a session-enabled queue or
// subscription (SS6: state keeps a session listed).
func (h *machine) checkSessions(t *rapid.T, he *hEnt) {
	if !he.m.cfg.session || he.m.kind == mTopic {
		return
	}
	var got []string
	var err error
	if he.q != nil {
		got, err = he.q.ListSessions(h.ctx)
	} else {
		got, err = he.s.ListSessions(h.ctx)
	}
	want, merr := h.m.listSessions(he.m)
	h.errs(t, "ListSessions on "+he.m.String(), err, merr)
	if !slices.Equal(got, want) {
		t.Fatalf("%v: ListSessions() = %q, model says %q", he.m, got, want)
	}
}

// checkHolders compares each held session's LockedUntil with its
// receiver's (SS8).
func (h *machine) checkHolders(t *rapid.T) {
	for _, r := range h.recvs {
		if r.sess == nil || r.m.closed || r.m.e.deleted || h.m.lost(r.m) {
			continue
		}
		if want := r.m.e.held[r.m.sess].until; !r.sess.LockedUntil().Equal(tm(want)) {
			t.Fatalf("session %q of %v: LockedUntil() = %v, model says %v (SS8)", r.m.sess, r.m.e, r.sess.LockedUntil(), tm(want))
		}
		if r.sess.SessionID() != r.m.sess {
			t.Fatalf("session receiver of %q reads SessionID %q", r.m.sess, r.sess.SessionID())
		}
	}
}

// times compares CreatedAt, UpdatedAt and AccessedAt: a deleted entity reads
// zero.
func (h *machine) times(t *rapid.T, e *mEntity, created, updated, accessed time.Time) {
	t.Helper()
	if e.deleted {
		if !created.IsZero() {
			t.Fatalf("%v: deleted, but RuntimeProperties has CreatedAt %v", e, created)
		}
		return
	}
	if !created.Equal(tm(e.created)) || !updated.Equal(tm(e.updated)) || !accessed.Equal(tm(e.accessed)) {
		t.Fatalf("%v: Created/Updated/AccessedAt %v %v %v, model says %v %v %v", e, created, updated, accessed,
			tm(e.created), tm(e.updated), tm(e.accessed))
	}
}
