package modeltest

// The actions that settle: every settlement with valid, stale and forged
// lock tokens, through the right receiver or another.

import (
	"errors"
	"fmt"
	"time"

	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

// settleTarget draws the message a settlement names: a current lock, a
// stale or forged token, a peeked or receive-and-delete message, or one
// with no token. It returns the broker's argument and the model's view.
func (h *machine) settleTarget(t *rapid.T) (*minibus.ReceivedMessage, settleMsg, *hRecv, string) {
	var current, stale [][16]byte
	for _, tok := range h.seen {
		if x := h.findItem(h.tokens[tok].item); x != nil && x.state == mLocked && x.token == tok {
			current = append(current, tok)
		} else {
			stale = append(stale, tok)
		}
	}
	kind := Pick(t, "target", "current", "current", "current", "current", "current", "current", "stale", "stale", "forged", "peeked", "rad", "zero")
	switch kind {
	case "current", "stale":
		toks := current
		if kind == "stale" {
			toks = stale
		}
		if len(toks) == 0 {
			skip("no such token")
		}
		tok := Pick(t, "token", toks...)
		info := h.tokens[tok]
		if chance(t, "bare", 3) {
			return &minibus.ReceivedMessage{LockToken: tok}, settleMsg{how: "token", token: tok}, info.recv, kind
		}
		return info.obj, settleMsg{how: "locked", origin: info.recv.m.e, odlq: info.recv.m.dlq, token: tok}, info.recv, kind
	case "forged":
		var tok [16]byte
		for i := range tok {
			tok[i] = byte(Between(t, "byte", 0, 255))
		}
		if tok == ([16]byte{}) {
			tok[0] = 1
		}
		if _, ok := h.tokens[tok]; ok {
			skip("forged a real token")
		}
		return &minibus.ReceivedMessage{LockToken: tok}, settleMsg{how: "token", token: tok}, nil, kind
	case "peeked":
		if len(h.peeked) == 0 {
			skip("nothing peeked")
		}
		return Pick(t, "peeked", h.peeked...), settleMsg{how: "peeked"}, nil, kind
	case "rad":
		if len(h.rad) == 0 {
			skip("nothing received and deleted")
		}
		return Pick(t, "rad", h.rad...), settleMsg{how: "deleted"}, nil, kind
	}
	return &minibus.ReceivedMessage{}, settleMsg{how: "token"}, nil, kind
}

// settle settles through the receiver that got the message, another
// receiver of the same entity and sub-queue (L10), or any receiver.
func (h *machine) settle(t *rapid.T) {
	obj, sm, origin, kind := h.settleTarget(t)
	var r *hRecv
	switch {
	case origin != nil && chance(t, "sameReceiver", 2):
		r = origin
	case origin != nil && !chance(t, "anyReceiver", 5):
		var peers []*hRecv
		for _, x := range h.recvs {
			if x.m.e == origin.m.e && x.m.dlq == origin.m.dlq && !x.m.rad && !x.m.closed {
				peers = append(peers, x)
			}
		}
		if len(peers) == 0 {
			r = origin
		} else {
			r = Pick(t, "peer", peers...)
		}
	default:
		r = h.receiver(t)
	}
	h.settleWith(t, r, obj, sm, kind)
}

// settleStranger settles a current lock through a receiver of another
// entity or sub-queue: ErrInvalidArgument for the delivered object,
// ErrLockLost for a bare token.
func (h *machine) settleStranger(t *rapid.T) {
	obj, sm, _, kind := h.settleTarget(t)
	h.settleWith(t, h.receiver(t), obj, sm, kind)
}

func (h *machine) settleWith(t *rapid.T, r *hRecv, obj *minibus.ReceivedMessage, sm settleMsg, kind string) {
	op := Pick(t, "op", opComplete, opComplete, opComplete, opAbandon, opAbandon, opDeadLetter, opDefer, opDefer, opRenew, opRenew, opRenew)
	var mod map[string]any
	if op == opAbandon || op == opDeadLetter || op == opDefer {
		switch Pick(t, "mod", "none", "none", "some", "bad") {
		case "some":
			mod = map[string]any{"tag": "mod", Pick(t, "modKey", "n", "color"): Pick[any](t, "modValue", 5, "red", nil)}
		case "bad":
			mod = map[string]any{"bad": []int{1}}
		}
	}
	reason, desc := Pick(t, "reason", "app-bad", ""), Pick(t, "desc", "it broke", "")
	if x := h.findItem(h.itemOf(sm.token)); op == opRenew && kind == "current" && x != nil && chance(t, "renewLater", 2) {
		// Renew halfway through the lock, later than the delivery.
		half := (x.lockedUntil - h.m.now) / 2
		h.mock.Add(time.Duration(half))
		h.m.advance(h.m.now + half)
	}
	var err error
	before := obj.LockedUntil
	switch op {
	case opComplete:
		err = r.r.CompleteMessage(h.ctx, obj, nil)
	case opAbandon:
		err = r.r.AbandonMessage(h.ctx, obj, &minibus.AbandonMessageOptions{PropertiesToModify: mod})
	case opDeadLetter:
		err = r.r.DeadLetterMessage(h.ctx, obj, &minibus.DeadLetterOptions{Reason: reason, ErrorDescription: desc, PropertiesToModify: mod})
	case opDefer:
		err = r.r.DeferMessage(h.ctx, obj, &minibus.DeferMessageOptions{PropertiesToModify: mod})
	case opRenew:
		err = r.r.RenewMessageLock(h.ctx, obj, nil)
	}
	renewed, merr := h.m.settle(r.m, op, sm, mod, reason, desc)
	what := fmt.Sprintf("%v of a %s %s message (item %v) through rad=%v dlq=%v %v", op, kind, sm.how, h.itemOf(sm.token), r.m.rad, r.m.dlq, r.m.e)
	h.errs(t, what, err, merr)
	if kind == "stale" && errors.Is(err, minibus.ErrLockLost) {
		h.m.hits.StaleTokenRejected++
	}
	if op == opRenew && err == nil && chance(t, "idleAfterRenew", 2) {
		// A renewal is not activity (A2): jump onto the idle deadline it
		// must not have moved.
		if due := h.m.idleDue(r.m.e); due != mNever && due > h.m.now {
			h.mock.Add(time.Duration(due - h.m.now))
			h.m.advance(due)
		}
	}
	if op == opRenew {
		switch {
		case err == nil && !obj.LockedUntil.Equal(tm(renewed)):
			t.Fatalf("%s: the caller's LockedUntil reads %v, model says %v (L5)", what, obj.LockedUntil, tm(renewed))
		case err != nil && !obj.LockedUntil.Equal(before):
			t.Fatalf("%s: failed, but changed the caller's LockedUntil", what)
		}
	}
}

// itemOf is the ledger item a token was handed out for, or 0.
func (h *machine) itemOf(tok [16]byte) int {
	if info, ok := h.tokens[tok]; ok {
		return info.item
	}
	return 0
}
