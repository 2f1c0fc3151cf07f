package modeltest

// The actions that settle: every settlement with valid, stale and forged
// lock tokens, through the right receiver or another, plain or of a
// session.

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
	kind := Pick(t, "target", "current", "current", "current", "current", "current", "current", "stale", "stale", "forged", "peeked", "rad", "zero")
	switch kind {
	case "current", "stale":
		return h.tokenTarget(t, kind)
	case "forged":
		return h.forgedTarget(t)
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

// tokenTarget draws a token the broker handed out, current or stale, as
// the delivered message or as a bare token.
func (h *machine) tokenTarget(t *rapid.T, kind string) (*minibus.ReceivedMessage, settleMsg, *hRecv, string) {
	var toks [][16]byte
	for _, tok := range h.seen {
		x := h.findItem(h.tokens[tok].item)
		current := x != nil && x.state == mLocked && x.token == tok
		if current == (kind == "current") {
			toks = append(toks, tok)
		}
	}
	if len(toks) == 0 {
		skip("no such token")
	}
	tok := Pick(t, "token", toks...)
	info := h.tokens[tok]
	origin := info.recv
	if origin.gone {
		origin = nil // of a namespace that crashed: settle through a new one
	}
	if chance(t, "bare", 3) {
		return &minibus.ReceivedMessage{LockToken: tok}, settleMsg{how: "token", token: tok}, origin, kind
	}
	return info.obj, settleMsg{how: "locked", origin: info.recv.m.e, oq: info.recv.m.q, token: tok, crashed: info.recv.gone}, origin, kind
}

func (h *machine) forgedTarget(t *rapid.T) (*minibus.ReceivedMessage, settleMsg, *hRecv, string) {
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
	return &minibus.ReceivedMessage{LockToken: tok}, settleMsg{how: "token", token: tok}, nil, "forged"
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
		r = h.peer(t, origin)
	default:
		r = h.anyReceiver(t)
	}
	h.settleWith(t, r, obj, sm, kind)
}

// peer is another open peek-lock receiver of origin's entity and
// sub-queue, or origin.
func (h *machine) peer(t *rapid.T, origin *hRecv) *hRecv {
	var peers []*hRecv
	for _, x := range h.recvs {
		if x.m.e == origin.m.e && x.m.q == origin.m.q && !x.m.rad && !x.m.closed {
			peers = append(peers, x)
		}
	}
	if len(peers) == 0 {
		return origin
	}
	return Pick(t, "peer", peers...)
}

// settleStranger settles a current lock through a receiver of another
// entity or sub-queue: ErrInvalidArgument for the delivered object,
// ErrLockLost for a bare token.
func (h *machine) settleStranger(t *rapid.T) {
	obj, sm, _, kind := h.settleTarget(t)
	h.settleWith(t, h.anyReceiver(t), obj, sm, kind)
}

// drawSettlement draws a settlement, its PropertiesToModify and its
// dead-letter reason and description.
func drawSettlement(t *rapid.T) (op settleOp, mod map[string]any, reason, desc string) {
	op = Pick(t, "op", opComplete, opComplete, opComplete, opAbandon, opAbandon, opDeadLetter, opDefer, opDefer, opRenew, opRenew, opRenew, opRelease, opRelease)
	if op == opAbandon || op == opDeadLetter || op == opDefer {
		switch Pick(t, "mod", "none", "none", "some", "bad") {
		case "some":
			mod = map[string]any{"tag": "mod", Pick(t, "modKey", "n", "color"): Pick[any](t, "modValue", 5, "red", nil)}
		case "bad":
			mod = map[string]any{"bad": []int{1}}
		}
	}
	return op, mod, Pick(t, "reason", "app-bad", ""), Pick(t, "desc", "it broke", "")
}

func (h *machine) settleWith(t *rapid.T, r *hRecv, obj *minibus.ReceivedMessage, sm settleMsg, kind string) {
	op, mod, reason, desc := drawSettlement(t)
	if x := h.findItem(h.itemOf(sm.token)); op == opRenew && kind == "current" && x != nil && chance(t, "renewLater", 2) {
		// Renew halfway through the lock, later than the delivery.
		h.jump(h.m.now + (x.lockedUntil-h.m.now)/2)
	}
	before := obj.LockedUntil
	err := callSettle(h, r, obj, op, mod, reason, desc)
	renewed, merr := h.m.settle(r.m, op, sm, mod, reason, desc)
	what := fmt.Sprintf("%v of a %s %s message (item %v) through %s", op, kind, sm.how, h.itemOf(sm.token), describe(r.m))
	h.errs(t, what, err, merr)
	if kind == "stale" && errors.Is(err, minibus.ErrLockLost) {
		h.m.hits.StaleTokenRejected++
	}
	if op == opRenew {
		h.checkRenewed(t, what, r, obj, err, before, renewed)
	}
}

// checkRenewed checks a renewal's LockedUntil in the caller's message (L5)
// and, now and then, that it was not activity (A2), by jumping onto the
// idle deadline it must not have moved.
func (h *machine) checkRenewed(t *rapid.T, what string, r *hRecv, obj *minibus.ReceivedMessage, err error, before time.Time, renewed int64) {
	if err == nil && chance(t, "idleAfterRenew", 2) {
		if due := h.m.idleDue(r.m.e); due != mNever && due > h.m.now {
			h.jump(due)
		}
	}
	switch {
	case err == nil && !obj.LockedUntil.Equal(tm(renewed)):
		t.Fatalf("%s: the caller's LockedUntil reads %v, model says %v (L5)", what, obj.LockedUntil, tm(renewed))
	case err != nil && !obj.LockedUntil.Equal(before):
		t.Fatalf("%s: failed, but changed the caller's LockedUntil", what)
	}
}

// callSettle makes the broker's call.
func callSettle(h *machine, r *hRecv, obj *minibus.ReceivedMessage, op settleOp, mod map[string]any, reason, desc string) error {
	switch op {
	case opComplete:
		return r.r.CompleteMessage(h.ctx, obj, nil)
	case opAbandon:
		return r.r.AbandonMessage(h.ctx, obj, &minibus.AbandonMessageOptions{PropertiesToModify: mod})
	case opDeadLetter:
		return r.r.DeadLetterMessage(h.ctx, obj, &minibus.DeadLetterOptions{Reason: reason, ErrorDescription: desc, PropertiesToModify: mod})
	case opDefer:
		return r.r.DeferMessage(h.ctx, obj, &minibus.DeferMessageOptions{PropertiesToModify: mod})
	case opRelease:
		return r.r.ReleaseMessage(h.ctx, obj, nil)
	}
	return r.r.RenewMessageLock(h.ctx, obj, nil)
}

// itemOf is the ledger item a token was handed out for, or 0.
func (h *machine) itemOf(tok [16]byte) int {
	if info, ok := h.tokens[tok]; ok {
		return info.item
	}
	return 0
}
