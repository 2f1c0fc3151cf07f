package modeltest

// The actions that send, schedule, cancel, receive and peek.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

func (h *machine) sendTo(t *rapid.T, he *hEnt) {
	var msgs []*minibus.Message
	n := Between(t, "batch", 1, 3)
	if chance(t, "emptyBatch", 40) {
		n = 0
	}
	for range n {
		msgs = append(msgs, h.drawMessage(t))
	}
	var err error
	single := len(msgs) == 1 && chance(t, "single", 2)
	switch {
	case he.m.kind == mQueue && single:
		err = he.q.SendMessage(h.ctx, msgs[0], nil)
	case he.m.kind == mQueue:
		err = he.q.SendMessages(h.ctx, msgs, nil)
	case single:
		err = he.t.SendMessage(h.ctx, msgs[0], nil)
	default:
		err = he.t.SendMessages(h.ctx, msgs, nil)
	}
	_, merr := h.m.send(he.m, msgs, mUnset)
	h.errs(t, fmt.Sprintf("send %d messages to %v", len(msgs), he.m), err, merr)
	if merr != nil {
		h.tally["send error: "+merr.Error()]++
	} else {
		h.tally[fmt.Sprintf("messages sent to a %v", he.m.kind)] += len(msgs)
	}
}

func (h *machine) send(t *rapid.T) { h.sendTo(t, h.entity(t, mQueue, mTopic)) }

// fill sends big messages to an entity with a 1 MB quota (SEMANTICS V3).
func (h *machine) fill(t *rapid.T) {
	var full []*hEnt
	for _, he := range h.ents {
		if !he.m.deleted && he.m.kind != mSub && he.m.cfg.maxSize == 1<<20 {
			full = append(full, he)
		}
	}
	if len(full) == 0 {
		skip("no entity with a 1 MB quota")
	}
	he := Pick(t, "entity", full...)
	var msgs []*minibus.Message
	// 250 KB passes the default 256 KB message limit; the fifth in 1 MB
	// does not fit.
	for range Between(t, "batch", 1, 5) {
		h.bodies++
		body := append([]byte(fmt.Sprintf("m%d", h.bodies)), bytes.Repeat([]byte{'.'}, 250<<10)...)
		msgs = append(msgs, &minibus.Message{MessageID: fmt.Sprintf("id-%d", h.bodies), Body: body})
	}
	var err error
	if he.m.kind == mQueue {
		err = he.q.SendMessages(h.ctx, msgs, nil)
	} else {
		err = he.t.SendMessages(h.ctx, msgs, nil)
	}
	_, merr := h.m.send(he.m, msgs, mUnset)
	h.errs(t, fmt.Sprintf("send %d big messages to %v", len(msgs), he.m), err, merr)
}
func (h *machine) sendTopic(t *rapid.T) { h.sendTo(t, h.entity(t, mTopic)) }

func (h *machine) schedule(t *rapid.T) {
	he := h.entity(t, mQueue, mTopic)
	var msgs []*minibus.Message
	for range Between(t, "batch", 1, 2) {
		msgs = append(msgs, h.drawMessage(t))
	}
	at := tm(h.m.now).Add(Pick(t, "offset", offsets...))
	var seqs []int64
	var err error
	if he.m.kind == mQueue {
		seqs, err = he.q.ScheduleMessages(h.ctx, msgs, at, nil)
	} else {
		seqs, err = he.t.ScheduleMessages(h.ctx, msgs, at, nil)
	}
	mseqs, merr := h.m.send(he.m, msgs, mInstant(at))
	h.errs(t, fmt.Sprintf("ScheduleMessages(%d) on %v at %v", len(msgs), he.m, at), err, merr)
	if err == nil && !slices.Equal(seqs, mseqs) {
		t.Fatalf("ScheduleMessages on %v returned %v, model says %v (Q1)", he.m, seqs, mseqs)
	}
}

func (h *machine) cancel(t *rapid.T) {
	he := h.entity(t, mQueue, mTopic)
	var pending []int64
	for _, x := range he.m.main {
		if x.state == mScheduled {
			pending = append(pending, x.key.seq)
		}
	}
	var seqs []int64
	switch Pick(t, "cancelKind", "valid", "valid", "valid", "used", "unknown", "invalid") {
	case "valid":
		if len(pending) == 0 {
			skip("nothing scheduled")
		}
		seqs = []int64{Pick(t, "seq", pending...)}
		if len(pending) > 1 && chance(t, "two", 2) {
			if other := Pick(t, "seq2", pending...); other != seqs[0] {
				seqs = append(seqs, other)
			}
		}
	case "used":
		// A number no longer scheduled (activated, cancelled or never
		// scheduled): S3 says ErrMessageNotFound.
		if he.m.seq == 0 {
			skip("no number used")
		}
		seqs = []int64{int64(Between(t, "seq", 1, int(he.m.seq)))}
	case "unknown":
		seqs = []int64{he.m.seq + 1 + int64(Between(t, "ahead", 0, 3))}
	case "invalid":
		seqs = Pick(t, "badSeqs", []int64{}, []int64{0}, []int64{-1}, []int64{1, 1})
	}
	var err error
	if he.m.kind == mQueue {
		err = he.q.CancelScheduledMessages(h.ctx, seqs, nil)
	} else {
		err = he.t.CancelScheduledMessages(h.ctx, seqs, nil)
	}
	h.errs(t, fmt.Sprintf("CancelScheduledMessages(%v) on %v", seqs, he.m), err, h.m.cancel(he.m, seqs))
}

func (h *machine) receive(t *rapid.T) { h.receiveFrom(t, h.receiver(t)) }

// receiveMain receives from a queue or subscription, or its dead-letter
// queue, that the model says has a message available, mostly in peek-lock
// mode, where the settling happens.
func (h *machine) receiveMain(t *rapid.T) {
	h.receiveFrom(t, h.receiverWith(t, func(x *mMsg) bool { return x.state == mAvail }))
}

// receiverWith returns a receiver, existing or new, of a queue,
// subscription or dead-letter queue holding a message that has the
// property; mostly peek-lock.
func (h *machine) receiverWith(t *rapid.T, has func(*mMsg) bool) *hRecv {
	type src struct {
		he  *hEnt
		dlq bool
	}
	var srcs []src
	for _, he := range h.ents {
		if he.m.kind == mTopic || he.m.deleted {
			continue
		}
		for _, dlq := range []bool{false, true} {
			if slices.ContainsFunc(*he.m.list(dlq), has) {
				srcs = append(srcs, src{he, dlq})
			}
		}
	}
	if len(srcs) == 0 {
		skip("no such message")
	}
	s := Pick(t, "source", srcs...)
	rad := chance(t, "rad", 5)
	for _, r := range h.recvs {
		if r.m.e == s.he.m && r.m.rad == rad && r.m.dlq == s.dlq && !r.m.closed && !chance(t, "fresh", 10) {
			return r
		}
	}
	return h.newReceiver(t, s.he, rad, s.dlq)
}

func (h *machine) receiveFrom(t *rapid.T, r *hRecv) {
	max := Between(t, "max", 1, 4)
	if chance(t, "badMax", 30) {
		max = 0
	}
	want, wouldBlock, merr := h.m.receive(r.m, max)
	what := fmt.Sprintf("ReceiveMessages(%d) rad=%v dlq=%v on %v", max, r.m.rad, r.m.dlq, r.m.e)
	if merr != nil {
		h.tally["receive error: "+merr.Error()]++
	}
	if wouldBlock {
		h.tally["receive with nothing available"]++
		// Nothing is receivable: the counts (Check) show it; now and then a
		// receive with a very short real deadline shows it too (L8).
		if !chance(t, "probeEmpty", 6) {
			return
		}
		ctx, cancel := context.WithTimeout(h.ctx, 2*time.Millisecond)
		got, err := r.r.ReceiveMessages(ctx, max, nil)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || got != nil {
			t.Fatalf("%s: nothing is receivable, broker returned %v %v", what, describeGot(got), err)
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
		if !r.m.dlq && !g.ExpiresAt.IsZero() && !g.ExpiresAt.After(tm(h.m.now)) {
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

// blockedReceive blocks a receive where nothing is available, moves the
// clock onto the first deadline that can change what the receiver sees,
// and expects the receive to wake with what became available there, or with
// the error the entity gives now (T5, I14); if nothing did, it must still
// wait. Jumping no further keeps the answer exact: benbjohnson/clock runs
// timer callbacks while its time steps through them.
func (h *machine) blockedReceive(t *rapid.T) {
	r := h.receiver(t)
	if r.m.closed || r.m.e.deleted || !canReceive(r.m.e.cfg.status) || len(h.m.available(r.m)) > 0 {
		skip("the receive would not block")
	}
	to := h.m.wakeDeadline(r.m)
	if to == mNever {
		skip("nothing pending")
	}
	max := Between(t, "max", 1, 4)
	type result struct {
		got []*minibus.ReceivedMessage
		err error
	}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	done := make(chan result, 1)
	go func() {
		got, err := r.r.ReceiveMessages(ctx, max, nil)
		done <- result{got, err}
	}()
	h.mock.Add(time.Duration(to - h.m.now))
	h.m.advance(to)
	want, wouldBlock, merr := h.m.receive(r.m, max)
	what := fmt.Sprintf("blocked ReceiveMessages(%d) rad=%v dlq=%v on %v, clock moved to its deadline +%v",
		max, r.m.rad, r.m.dlq, r.m.e, time.Duration(to-epoch.UnixNano()))
	if wouldBlock {
		cancel()
	}
	var res result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked after 10 s, the model says %d messages or error %v (T5)", what, len(want), merr)
	}
	if wouldBlock {
		if !errors.Is(res.err, context.Canceled) || res.got != nil {
			t.Fatalf("%s: nothing became available, broker returned %v %v", what, describeGot(res.got), res.err)
		}
		return
	}
	h.errs(t, what, res.err, merr)
	h.msgs(t, what, r, res.got, want)
	if r.m.rad {
		h.rad = append(h.rad, res.got...)
	}
	h.tally["blocked receives woken by time"]++
}

func (h *machine) peek(t *rapid.T) {
	r := h.receiver(t)
	max := Between(t, "max", 0, 5)
	var from int64
	if chance(t, "from", 2) {
		from = int64(Between(t, "fromSeq", -1, int(max64(max64(r.m.e.seq, r.m.e.topicSeq()), 1)+1)))
	}
	var opts *minibus.PeekMessagesOptions
	if from != 0 || chance(t, "zeroOpts", 2) {
		opts = &minibus.PeekMessagesOptions{FromSequenceNumber: from}
	}
	got, err := r.r.PeekMessages(h.ctx, max, opts)
	want, merr := h.m.peek(r.m, max, from)
	what := fmt.Sprintf("PeekMessages(%d, from %d) dlq=%v on %v", max, from, r.m.dlq, r.m.e)
	h.errs(t, what, err, merr)
	if err == nil && got == nil {
		t.Fatalf("%s: an empty peek is an empty slice, not nil (L12)", what)
	}
	h.msgs(t, what, r, got, want)
	h.peeked = append(h.peeked, got...)
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func (h *machine) receiveDeferred(t *rapid.T) {
	kind := Pick(t, "deferKind", "valid", "valid", "valid", "valid", "other", "invalid")
	var r *hRecv
	if kind == "valid" {
		r = h.receiverWith(t, func(x *mMsg) bool { return x.state == mDeferred })
	} else {
		r = h.receiver(t)
	}
	var deferred []int64
	for _, x := range *r.m.e.list(r.m.dlq) {
		if x.state == mDeferred {
			deferred = append(deferred, x.key.seq)
		}
	}
	var seqs []int64
	switch kind {
	case "valid":
		seqs = []int64{Pick(t, "seq", deferred...)}
		if o := Pick(t, "seq2", deferred...); o != seqs[0] {
			seqs = append(seqs, o)
		}
	case "other":
		seqs = []int64{int64(Between(t, "seq", 1, int(max64(r.m.e.seq, r.m.e.topicSeq())+2)))}
	case "invalid":
		seqs = Pick(t, "badSeqs", []int64{}, []int64{0}, []int64{2, 2})
	}
	got, err := r.r.ReceiveDeferredMessages(h.ctx, seqs, nil)
	want, merr := h.m.receiveDeferred(r.m, seqs)
	what := fmt.Sprintf("ReceiveDeferredMessages(%v) rad=%v dlq=%v on %v", seqs, r.m.rad, r.m.dlq, r.m.e)
	h.errs(t, what, err, merr)
	h.msgs(t, what, r, got, want)
}

func (e *mEntity) topicSeq() int64 {
	if e.topic != nil {
		return e.topic.seq
	}
	return 0
}
