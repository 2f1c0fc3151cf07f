package modeltest

// The model's settlements: complete, abandon, dead-letter, defer and renew,
// and what happens when a lock ends.

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
)

func (o settleOp) String() string {
	return [...]string{"complete", "abandon", "dead-letter", "defer", "renew"}[o]
}

// settleMsg is what the caller passes to a settlement: how it got the
// message and, for a delivery, where from.
type settleMsg struct {
	how    string // "locked", "deleted", "peeked", "token" (built by the caller)
	origin *mEntity
	odlq   bool
	token  [16]byte
}

// settle applies op; renewed is the new LockedUntil of a renewal.
func (m *refModel) settle(r *mReceiver, op settleOp, sm settleMsg, mod map[string]any, reason, desc string) (renewed int64, err error) {
	if r.closed {
		return 0, minibus.ErrClosed
	}
	switch {
	case r.rad, sm.how == "deleted", sm.how == "peeked":
		return 0, minibus.ErrInvalidArgument
	case sm.origin != nil && (sm.origin != r.e || sm.odlq != r.dlq):
		return 0, minibus.ErrInvalidArgument
	case sm.token == [16]byte{}:
		return 0, minibus.ErrInvalidArgument
	case op == opDeadLetter && r.dlq:
		return 0, minibus.ErrInvalidArgument // D1: no dead-lettering from a DLQ
	}
	for _, v := range mod {
		if !validValue(v) {
			return 0, minibus.ErrInvalidArgument
		}
	}
	if err := m.enterReceive(r); err != nil {
		return 0, err
	}
	e := r.e
	l := e.list(r.dlq)
	i := slices.IndexFunc(*l, func(x *mMsg) bool { return x.state == mLocked && x.token == sm.token })
	if i < 0 {
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
	switch op {
	case opComplete:
		remove(l, x)
		m.terminate(x.item, termCompleted)
	case opAbandon:
		m.lockEnded(e, x, m.now)
	case opDeadLetter:
		m.unlock(x)
		m.deadLetter(e, x, reason, desc)
	case opDefer:
		m.unlock(x)
		x.fromDeferral = false
		x.state = mDeferred
	case opRenew:
		x.lockedUntil = mAddSat(m.now, e.cfg.lock)
		m.hits.Renew++
		return x.lockedUntil, nil // renewing is not activity
	}
	m.touch(e)
	return 0, nil
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
func (m *refModel) lockEnded(e *mEntity, x *mMsg, at int64) {
	m.unlock(x)
	main := !x.dlq
	switch {
	case main && x.deliveries >= e.cfg.maxDelivery:
		m.hits.MaxDeliveryDL++
		m.deadLetter(e, x, "MaxDeliveryCountExceeded",
			fmt.Sprintf("Message could not be consumed after %d delivery attempts.", e.cfg.maxDelivery))
	case x.fromDeferral:
		x.fromDeferral = false
		x.state = mDeferred
	case main && at >= x.expires:
		m.expire(e, x)
	default:
		x.state = mAvail
	}
}

// deadLetter moves x from e's main queue to its dead-letter queue (D2).
func (m *refModel) deadLetter(e *mEntity, x *mMsg, reason, desc string) {
	remove(&e.main, x)
	x.dlq = true
	x.state = mAvail
	x.fromDeferral = false
	x.dlReason, x.dlDesc, x.dlDescPrefix = reason, desc, false
	insert(&e.dlq, x)
}

// expire is SEMANTICS E5.
func (m *refModel) expire(e *mEntity, x *mMsg) {
	if e.cfg.dlOnExpiry {
		m.hits.TTLToDLQ++
		m.deadLetter(e, x, "TTLExpiredException", "The message expired and was dead lettered.")
		return
	}
	m.hits.TTLDrop++
	remove(&e.main, x)
	m.terminate(x.item, termExpired)
}
