package modeltest

// The actions that receive, peek and fetch deferred messages, through plain
// and session receivers.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

// describe names a receiver in failure messages.
func describe(r *mReceiver) string {
	if r.isSess {
		return fmt.Sprintf("session %q rad=%v of %v", r.sess, r.rad, r.e)
	}
	return fmt.Sprintf("rad=%v %v queue of %v", r.rad, r.q, r.e)
}

func (h *machine) receive(t *rapid.T) { h.receiveFrom(t, h.anyReceiver(t)) }

// receiveMain receives from a queue, subscription, session or dead-letter
// queue that the model says has a message available, mostly in peek-lock
// mode, where the settling happens.
func (h *machine) receiveMain(t *rapid.T) {
	h.receiveFrom(t, h.receiverWith(t, func(x *mMsg) bool { return x.state == mAvail }))
}

// source is where messages can be read: a queue of an entity, or a session
// of its main queue.
type source struct {
	he     *hEnt
	q      subQ
	isSess bool
	sess   string
}

// sources lists the sources holding a message that has the property.
func (h *machine) sources(has func(*mMsg) bool) []source {
	var out []source
	for _, he := range h.ents {
		if he.m.kind == mTopic || he.m.deleted {
			continue
		}
		for _, q := range []subQ{sqMain, sqDLQ, sqTransfer} {
			out = appendSources(out, he, q, has)
		}
	}
	return out
}

func appendSources(out []source, he *hEnt, q subQ, has func(*mMsg) bool) []source {
	seen := map[string]bool{}
	for _, x := range *he.m.list(q) {
		switch {
		case !has(x):
		case q != sqMain || !he.m.cfg.session:
			return append(out, source{he: he, q: q})
		case x.state != mScheduled && !seen[x.headers.SessionID]:
			seen[x.headers.SessionID] = true
			out = append(out, source{he: he, q: q, isSess: true, sess: x.headers.SessionID})
		}
	}
	return out
}

// receiverWith returns a receiver, existing or new, of a queue,
// subscription, session or dead-letter queue holding a message that has
// the property; mostly peek-lock. A session is accepted if no receiver
// holds it.
func (h *machine) receiverWith(t *rapid.T, has func(*mMsg) bool) *hRecv {
	srcs := h.sources(has)
	if len(srcs) == 0 {
		skip("no such message")
	}
	s := Pick(t, "source", srcs...)
	rad := chance(t, "rad", 5)
	if s.isSess {
		if held := s.he.m.held[s.sess]; held != nil {
			return h.recvOf(held.r)
		}
		return h.accept(t, s.he, s.sess, rad)
	}
	for _, r := range h.recvs {
		if r.sess == nil && r.m.e == s.he.m && r.m.rad == rad && r.m.q == s.q && !r.m.closed && !chance(t, "fresh", 10) {
			return r
		}
	}
	return h.newReceiver(t, s.he, rad, s.q)
}

func (h *machine) receiveFrom(t *rapid.T, r *hRecv) {
	max := Between(t, "max", 1, 4)
	if chance(t, "badMax", 30) {
		max = 0
	}
	want, wouldBlock, merr := h.m.receive(r.m, max)
	what := fmt.Sprintf("ReceiveMessages(%d) from %s", max, describe(r.m))
	if merr != nil {
		h.tally["receive error: "+merr.Error()]++
	}
	if wouldBlock {
		h.tally["receive with nothing available"]++
		// Nothing is receivable: the counts (Check) show it; now and then a
		// receive with a very short real deadline shows it too (L8).
		if chance(t, "probeEmpty", 6) {
			h.probeEmpty(t, what, r, max)
		}
		return
	}
	// A generous hang guard: the model says a message is available, so the
	// broker must return at once.
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	got, err := r.r.ReceiveMessages(ctx, max, nil)
	cancel()
	h.errs(t, what, err, merr)
	for _, g := range got {
		if r.m.q == sqMain && !g.ExpiresAt.IsZero() && !g.ExpiresAt.After(tm(h.m.now)) {
			t.Fatalf("%s: returned seq %d expired at %v, now %v (I7)", what, g.SequenceNumber, g.ExpiresAt, tm(h.m.now))
		}
	}
	h.msgs(t, what, r, got, want)
	if len(got) > 0 {
		h.tally["messages received"] += len(got)
	}
	if r.m.rad {
		h.rad = append(h.rad, got...)
	}
}

// probeEmpty receives with a very short real deadline where nothing is
// available: the receive must end with the deadline, having taken nothing.
func (h *machine) probeEmpty(t *rapid.T, what string, r *hRecv, max int) {
	ctx, cancel := context.WithTimeout(h.ctx, 2*time.Millisecond)
	got, err := r.r.ReceiveMessages(ctx, max, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || got != nil {
		t.Fatalf("%s: nothing is receivable, broker returned %v %v", what, describeGot(got), err)
	}
}

// blockedReceive blocks a receive where nothing is available, moves the
// clock onto the first deadline that can change what the receiver sees,
// and expects the receive to wake with what became available there, or with
// the error the entity or session gives now (T5, I14, SS5); if nothing did,
// it must still wait. Jumping no further keeps the answer exact:
// benbjohnson/clock runs timer callbacks while its time steps through them.
func (h *machine) blockedReceive(t *rapid.T) {
	r := h.anyReceiver(t)
	if !h.m.receiveBlocks(r.m) {
		skip("the receive would not block")
	}
	to := h.m.wakeDeadline(r.m.e)
	if to == mNever {
		skip("nothing pending")
	}
	max := Between(t, "max", 1, 4)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	done := make(chan blockedResult, 1)
	go func() {
		got, err := r.r.ReceiveMessages(ctx, max, nil)
		done <- blockedResult{got, err}
	}()
	h.jump(to)
	want, wouldBlock, merr := h.m.receive(r.m, max)
	what := fmt.Sprintf("blocked ReceiveMessages(%d) from %s, clock moved to its deadline +%v",
		max, describe(r.m), time.Duration(to-epoch.UnixNano()))
	res := h.await(t, what, done, wouldBlock, cancel)
	if wouldBlock {
		return
	}
	h.errs(t, what, res.err, merr)
	h.msgs(t, what, r, res.got, want)
	if r.m.rad {
		h.rad = append(h.rad, res.got...)
	}
	h.tally["blocked receives woken by time"]++
}

type blockedResult struct {
	got []*minibus.ReceivedMessage
	err error
}

// await waits for a blocked call: when the model says it still waits, it
// is cancelled and must end with context.Canceled, having taken nothing;
// otherwise it must have woken.
func (h *machine) await(t *rapid.T, what string, done chan blockedResult, wouldBlock bool, cancel func()) blockedResult {
	if wouldBlock {
		cancel()
	}
	res, ok := awaitBlocked(h.clk, done, 10*time.Second)
	if !ok {
		t.Fatalf("%s: still blocked after 10 s, the model says it woke (T5); the clock at +%v, the broker's goroutines:\n%s",
			what, h.clk.Now().Sub(epoch), brokerStacks())
	}
	if wouldBlock && (!errors.Is(res.err, context.Canceled) || res.got != nil) {
		t.Fatalf("%s: nothing became available, broker returned %v %v", what, describeGot(res.got), res.err)
	}
	return res
}

func (h *machine) peek(t *rapid.T) {
	r := h.anyReceiver(t)
	n := Between(t, "max", 0, 5)
	var from int64
	if chance(t, "from", 2) {
		from = int64(Between(t, "fromSeq", -1, int(max(r.m.e.seq, r.m.e.topicSeq(), 1)+1)))
	}
	var opts *minibus.PeekMessagesOptions
	if from != 0 || chance(t, "zeroOpts", 2) {
		opts = &minibus.PeekMessagesOptions{FromSequenceNumber: from}
	}
	got, err := r.r.PeekMessages(h.ctx, n, opts)
	want, merr := h.m.peek(r.m, n, from)
	what := fmt.Sprintf("PeekMessages(%d, from %d) from %s", n, from, describe(r.m))
	h.errs(t, what, err, merr)
	if err == nil && got == nil {
		t.Fatalf("%s: an empty peek is an empty slice, not nil (L12)", what)
	}
	h.msgs(t, what, r, got, want)
	h.peeked = append(h.peeked, got...)
}

func (h *machine) receiveDeferred(t *rapid.T) {
	kind := Pick(t, "deferKind", "valid", "valid", "valid", "valid", "other", "invalid")
	var r *hRecv
	if kind == "valid" {
		r = h.receiverWith(t, func(x *mMsg) bool { return x.state == mDeferred })
	} else {
		r = h.anyReceiver(t)
	}
	var deferred []int64
	for _, x := range r.m.messages() {
		if x.state == mDeferred {
			deferred = append(deferred, x.key.seq)
		}
	}
	var seqs []int64
	switch kind {
	case "valid":
		if len(deferred) == 0 {
			skip("nothing deferred there")
		}
		seqs = []int64{Pick(t, "seq", deferred...)}
		if o := Pick(t, "seq2", deferred...); o != seqs[0] {
			seqs = append(seqs, o)
		}
	case "other":
		seqs = []int64{int64(Between(t, "seq", 1, int(max(r.m.e.seq, r.m.e.topicSeq())+2)))}
	case "invalid":
		seqs = Pick(t, "badSeqs", []int64{}, []int64{0}, []int64{2, 2})
	}
	got, err := r.r.ReceiveDeferredMessages(h.ctx, seqs, nil)
	want, merr := h.m.receiveDeferred(r.m, seqs)
	what := fmt.Sprintf("ReceiveDeferredMessages(%v) from %s", seqs, describe(r.m))
	h.errs(t, what, err, merr)
	h.msgs(t, what, r, got, want)
}

func (e *mEntity) topicSeq() int64 {
	if e.topic != nil {
		return e.topic.seq
	}
	return 0
}
