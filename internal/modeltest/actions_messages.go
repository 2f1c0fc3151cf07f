package modeltest

// The actions that send, schedule and cancel.

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

// sessionOdds is how likely a message for he needs a SessionID (see
// drawMessage).
func sessionOdds(he *hEnt) int {
	switch {
	case he.m.cfg.session:
		return 2
	case he.m.kind == mTopic:
		return 1
	}
	return 0
}

// drawBatch draws the messages of a send; now and then two of them share a
// MessageID (DD1).
func (h *machine) drawBatch(t *rapid.T, he *hEnt, lo, hi int) []*minibus.Message {
	var msgs []*minibus.Message
	for range Between(t, "batch", lo, hi) {
		msgs = append(msgs, h.drawMessage(t, sessionOdds(he)))
	}
	if len(msgs) >= 2 && chance(t, "repeatInBatch", 4) {
		i, j := 0, Between(t, "repeat", 1, len(msgs)-1)
		if msgs[i] != nil && msgs[j] != nil {
			if msgs[i].MessageID == "" {
				msgs[i].MessageID = fmt.Sprintf("batch-%d", h.bodies)
			}
			msgs[j].MessageID = msgs[i].MessageID
		}
	}
	return msgs
}

func (h *machine) sendTo(t *rapid.T, he *hEnt) {
	msgs := h.drawBatch(t, he, 1, 3)
	if chance(t, "emptyBatch", 40) {
		msgs = nil
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

func (h *machine) sendTopic(t *rapid.T) { h.sendTo(t, h.entity(t, mTopic)) }

// sendSession sends to a session-enabled queue, or to a topic with a
// session-enabled subscription.
func (h *machine) sendSession(t *rapid.T) {
	h.sendTo(t, h.entityWhere(t, func(he *hEnt) bool {
		if he.m.kind == mTopic {
			return slices.ContainsFunc(he.m.subs, func(s *mEntity) bool { return s.cfg.session })
		}
		return he.m.kind == mQueue && he.m.cfg.session
	}))
}

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
		msg := &minibus.Message{MessageID: fmt.Sprintf("id-%d", h.bodies), Body: body}
		if he.m.cfg.session {
			msg.SessionID = Pick(t, "session", mSessionIDs...)
		}
		msgs = append(msgs, msg)
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

func (h *machine) schedule(t *rapid.T) {
	he := h.entity(t, mQueue, mTopic)
	msgs := h.drawBatch(t, he, 1, 2)
	at := tm(h.m.now).Add(Pick(t, "offset", offsets...))
	var seqs []int64
	var err error
	if he.m.kind == mQueue {
		seqs, err = he.q.ScheduleMessages(h.ctx, msgs, at, nil)
	} else {
		seqs, err = he.t.ScheduleMessages(h.ctx, msgs, at, nil)
	}
	res, merr := h.m.send(he.m, msgs, mInstant(at))
	h.errs(t, fmt.Sprintf("ScheduleMessages(%d) on %v at %v", len(msgs), he.m, at), err, merr)
	if err == nil && !slices.Equal(seqs, res.seqs) {
		t.Fatalf("ScheduleMessages on %v returned %v, model says %v (Q1, DD1)", he.m, seqs, res.seqs)
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
