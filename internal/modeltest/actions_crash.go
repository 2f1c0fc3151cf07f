package modeltest

// The crash action of a durable namespace: a power cut, then Open on what
// the file system kept, compared with the model (crash.go).

import (
	"fmt"

	"pgregory.net/rapid"
)

var crashAction = action{"crash", 10, (*machine).crash}

// crash cuts the power: the in-memory file system loses what it had not
// synced, the old namespace is closed (it can write nothing more) and the
// directory is opened again at the same instant. The harness drops the old
// receivers and refreshes its handles; the model ends every lock and
// releases every session (crash.go). Then every count, property and list
// (Check, after the step) and every message the reopened namespace holds,
// peeked queue by queue, must be as the model says: nothing acknowledged
// lost, nothing completed back.
func (h *machine) crash(t *rapid.T) {
	if !h.m.crashOrdered() {
		// Open ends the locks in an order of its own bookkeeping, which two
		// lock ends that forward would show (crash.go).
		h.tally["crashes held back: two lock ends would forward"]++
		skip("two lock ends would forward")
	}
	h.fs = h.fs.Crash()
	h.clk.open(func() { _ = h.ns.Close() })
	ns, err := h.open(h.fs, h.clk)
	if err != nil {
		t.Fatalf("Open after a crash at +%v: %v", tm(h.m.now).Sub(epoch), err)
	}
	h.ns = ns
	var rs []*mReceiver
	for _, r := range h.recvs {
		r.gone = true
		rs = append(rs, r.m)
	}
	h.recvs = nil
	h.m.crash(rs)
	h.refreshHandles(t)
	t.Logf("crash at +%v: reopened", tm(h.m.now).Sub(epoch))
	h.peekEverything(t)
}

// refreshHandles gives every live instance handles of the reopened
// namespace; a deleted one's old handles can name nothing there (stale).
func (h *machine) refreshHandles(t *rapid.T) {
	for _, he := range h.ents {
		if he.m.deleted {
			he.stale = true
			continue
		}
		var err error
		switch he.m.kind {
		case mQueue:
			he.q, err = h.ns.Queue(he.m.name)
		case mTopic:
			he.t, err = h.ns.Topic(he.m.name)
		case mSub:
			he.s, err = h.ents[he.m.topic.id].t.Subscription(he.m.name)
		}
		if err != nil {
			t.Fatalf("after a crash, %v is missing: %v", he.m, err)
		}
	}
}

// peekEverything peeks every queue of every live queue and subscription
// through a new receiver and compares each message with the model (L12).
// A peek is activity (A2), in the model too.
func (h *machine) peekEverything(t *rapid.T) {
	for _, he := range h.ents {
		if he.stale || he.m.deleted || he.m.kind == mTopic {
			continue
		}
		for _, q := range []subQ{sqMain, sqDLQ, sqTransfer} {
			h.peekAll(t, he, q)
		}
	}
}

// peekAll compares all of one queue of he with the model.
func (h *machine) peekAll(t *rapid.T, he *hEnt, q subQ) {
	mr, merr := h.m.newReceiver(he.m, false, q)
	if merr != nil {
		return // a session-enabled or forwarding main queue; its counts are checked
	}
	opts := newReceiverOptions(false, q)
	var r recvAPI
	var err error
	if he.m.kind == mQueue {
		r, err = he.q.NewReceiver(opts)
	} else {
		r, err = he.s.NewReceiver(opts)
	}
	what := fmt.Sprintf("after a crash, PeekMessages of %v", describe(mr))
	h.errs(t, what, err, merr)
	if err != nil {
		return
	}
	n := len(*he.m.list(q)) + 1
	got, err := r.PeekMessages(h.ctx, n, nil)
	want, merr := h.m.peek(mr, n, 0)
	h.errs(t, what, err, merr)
	h.msgs(t, what, &hRecv{r: r, m: mr}, got, want)
	_ = r.Close(h.ctx)
}
