package modeltest

// The model's settlements: complete, abandon, dead-letter, defer, renew and
// release, and what happens when a lock ends.

import (
	"fmt"
	"slices"

	"github.com/minibus-go/minibus"
)

type settleOp int

const (
	opComplete settleOp = iota
	opAbandon
	opDeadLetter
	opDefer
	opRenew
	opRelease
)

func (o settleOp) String() string {
	return [...]string{"complete", "abandon", "dead-letter", "defer", "renew", "release"}[o]
}

// settleMsg is what the caller passes to a settlement: how it got the
// message and, for a delivery, where from.
type settleMsg struct {
	how    string // "locked", "deleted", "peeked", "token" (built by the caller)
	origin *mEntity
	oq     subQ
	token  [16]byte
	// crashed: the delivery came from a namespace that crashed since. It
	// names that namespace's entity (the receiver it came from, lock.go),
	// which no receiver of the reopened namespace reads.
	crashed bool
}

// settleArgs is the checks of a settlement that need no entity: the
// receiver, the message and PropertiesToModify (L4, L7, L10, L12, D1,
// SS7).
func settleArgs(r *mReceiver, op settleOp, sm settleMsg, mod map[string]any) error {
	switch {
	case r.closed:
		return minibus.ErrClosed
	case r.isSess && op == opRenew:
		return minibus.ErrInvalidArgument // SS7: renew the session, not the message
	case r.rad, sm.how == "deleted", sm.how == "peeked":
		return minibus.ErrInvalidArgument
	case sm.origin != nil && (sm.crashed || sm.origin != r.e || sm.oq != r.q):
		return minibus.ErrInvalidArgument
	case sm.token == [16]byte{}:
		return minibus.ErrInvalidArgument
	case op == opDeadLetter && r.q != sqMain:
		return minibus.ErrInvalidArgument // D1: no dead-lettering from a dead-letter queue
	}
	for _, v := range mod {
		if !validValue(v) {
			return minibus.ErrInvalidArgument
		}
	}
	return nil
}

// settle applies op; renewed is the new LockedUntil of a renewal.
func (m *refModel) settle(r *mReceiver, op settleOp, sm settleMsg, mod map[string]any, reason, desc string) (renewed int64, err error) {
	m.begin()
	if err := settleArgs(r, op, sm, mod); err != nil {
		return 0, err
	}
	if err := m.enterReceive(r); err != nil {
		return 0, err
	}
	e := r.e
	l := e.list(r.q)
	i := slices.IndexFunc(*l, func(x *mMsg) bool { return x.state == mLocked && x.token == sm.token })
	if i < 0 || (r.isSess && (*l)[i].headers.SessionID != r.sess) {
		return 0, minibus.ErrLockLost // L4
	}
	x := (*l)[i]
	if m.now >= x.lockedUntil {
		panic("model: a lock past its end survived the catch-up")
	}
	if len(mod) > 0 {
		if err := m.modify(e, x, mod); err != nil {
			return 0, err
		}
	}
	if op == opRenew {
		x.lockedUntil = mAddSat(m.now, e.cfg.lock)
		m.hits.Renew++
		return x.lockedUntil, nil // renewing is not activity
	}
	m.apply(e, x, op, reason, desc)
	m.touch(e)
	m.flush()
	return 0, nil
}

// apply is complete, abandon, dead-letter and defer of the locked x (L3),
// and release (L15).
func (m *refModel) apply(e *mEntity, x *mMsg, op settleOp, reason, desc string) {
	switch op {
	case opRelease:
		x.deliveries-- // the delivery does not count
		m.unlock(x)
		m.returned(e, x, m.now)
	case opComplete:
		remove(e.list(x.q), x)
		m.terminate(x.item, termCompleted)
	case opAbandon:
		m.lockEnded(e, x, m.now)
	case opDeadLetter:
		m.unlock(x)
		m.deadLetter(e, x, reason, desc, m.now)
	case opDefer:
		m.unlock(x)
		x.fromDeferral = false
		x.state = mDeferred
	}
}

// modify merges PropertiesToModify into x within its entity's limits
// (SEMANTICS V3): a message too large, or an entity (for a subscription,
// its topic) past its quota, refuses it and nothing changes.
func (m *refModel) modify(e *mEntity, x *mMsg, mod map[string]any) error {
	props := copyMap(x.props)
	if props == nil {
		props = map[string]any{}
	}
	for k, v := range copyMap(mod) {
		props[k] = v
	}
	old, oldSize := x.props, x.size
	x.props = props
	x.resize()
	limits, used := e, m.entitySize(e)
	if e.kind == mSub {
		limits, used = e.topic, m.topicSize(e.topic)
	}
	switch {
	case x.size > limits.cfg.maxMsgSize:
		x.props, x.size = old, oldSize
		return minibus.ErrMessageTooLarge
	case x.size > oldSize && used > limits.cfg.maxSize:
		x.props, x.size = old, oldSize
		return minibus.ErrQuotaExceeded
	}
	return nil
}

func (m *refModel) unlock(x *mMsg) {
	x.token = [16]byte{}
	x.lockedUntil = 0
}

// lockEnded is SEMANTICS L6 for a lock that ended unsettled at instant at.
// A message of an entity that began forwarding while it was locked moves
// on (F2).
func (m *refModel) lockEnded(e *mEntity, x *mMsg, at int64) {
	m.unlock(x)
	if x.q == sqMain && x.deliveries >= e.cfg.maxDelivery {
		m.hits.MaxDeliveryDL++
		m.deadLetter(e, x, "MaxDeliveryCountExceeded",
			fmt.Sprintf("Message could not be consumed after %d delivery attempts.", e.cfg.maxDelivery), at)
		return
	}
	m.returned(e, x, at)
}

// returned is SEMANTICS L6 past its MaxDeliveryCount rule, for the
// unlocked x: what a lock's end does after that rule, and all that a
// release does (L15).
func (m *refModel) returned(e *mEntity, x *mMsg, at int64) {
	main := x.q == sqMain
	switch {
	case x.fromDeferral:
		x.fromDeferral = false
		x.state = mDeferred
	case main && at >= x.expires:
		m.expire(e, x, at)
	case main && e.cfg.forwardTo != "":
		remove(&e.main, x)
		m.forwardOut(e, x, at)
	default:
		x.state = mAvail
	}
}

// deadLetter moves x from e's main queue to its dead-letter queue at
// instant at (D2), or on to ForwardDeadLetteredMessagesTo (D4).
func (m *refModel) deadLetter(e *mEntity, x *mMsg, reason, desc string, at int64) {
	remove(&e.main, x)
	x.fromDeferral = false
	x.dlReason, x.dlDesc, x.dlDescPrefix, x.dlSource = reason, desc, false, ""
	if forwardsDeadLetters(e, x, reason) {
		m.dlForward(e, x, at)
		return
	}
	x.q = sqDLQ
	x.state = mAvail
	insert(&e.dlq, x)
}

// expire is SEMANTICS E5 at instant at.
func (m *refModel) expire(e *mEntity, x *mMsg, at int64) {
	if e.cfg.dlOnExpiry {
		m.hits.TTLToDLQ++
		m.deadLetter(e, x, "TTLExpiredException", "The message expired and was dead lettered.", at)
		return
	}
	m.hits.TTLDrop++
	remove(&e.main, x)
	m.terminate(x.item, termExpired)
}
