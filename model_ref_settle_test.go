package minibus_test

import (
	"fmt"
	"slices"
	"strings"

	"github.com/minibus-go/minibus"
)

// ---------------------------------------------------------------- settling

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
		if x.props == nil {
			x.props = map[string]any{}
		}
		for k, v := range copyMap(mod) {
			x.props[k] = v
		}
		x.resize()
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

// ---------------------------------------------------------------- time

// mEvent is one thing due at an instant.
type mEvent struct {
	at   int64
	e    *mEntity
	x    *mMsg // nil: the entity's idle deletion
	kind string
}

// idleDue is when e is deleted for idleness (SEMANTICS A2, A3), or mNever.
// A queue's or topic's idle time counts from the later of its last activity
// and its last scheduled activation, and never runs while it has scheduled
// messages.
func (m *refModel) idleDue(e *mEntity) int64 {
	if e.cfg.autoDelete == mNever {
		return mNever
	}
	if e.kind != mSub && slices.ContainsFunc(e.main, func(x *mMsg) bool { return x.state == mScheduled }) {
		return mNever
	}
	return mAddSat(max(e.lastActivity, e.lastActivation), e.cfg.autoDelete)
}

// events lists everything pending, unordered.
func (m *refModel) events() []mEvent {
	var out []mEvent
	for _, e := range m.all {
		if e.deleted {
			continue
		}
		for _, l := range [][]*mMsg{e.main, e.dlq} {
			for _, x := range l {
				switch {
				case x.state == mLocked:
					out = append(out, mEvent{x.lockedUntil, e, x, "lock"})
				case x.state == mScheduled:
					out = append(out, mEvent{x.sched, e, x, "activate"})
				case x.state == mAvail && !x.dlq && x.expires != mNever:
					out = append(out, mEvent{x.expires, e, x, "expire"})
				}
			}
		}
		if d := m.idleDue(e); d != mNever {
			out = append(out, mEvent{d, e, nil, "idle"})
		}
	}
	return out
}

// eventLess orders events due at the same instant: queues and subscriptions
// first (a topic fans a message out to subscriptions that are up to date,
// T3), then by entity, then message events in key order before the
// entity's idle deletion.
func eventLess(a, b mEvent) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	at, bt := a.e.kind == mTopic, b.e.kind == mTopic
	if at != bt {
		return !at
	}
	if a.e != b.e {
		return a.e.id < b.e.id
	}
	if (a.x == nil) != (b.x == nil) {
		return a.x != nil
	}
	if a.x == nil {
		return false
	}
	if a.x.dlq != b.x.dlq {
		return !a.x.dlq
	}
	return a.x.key.less(b.x.key)
}

// advance moves the model's clock to `to`, applying every event due at or
// before it in time order (SEMANTICS T2, T3).
func (m *refModel) advance(to int64) {
	for {
		evs := m.events()
		if len(evs) == 0 {
			break
		}
		first := evs[0]
		for _, ev := range evs[1:] {
			if eventLess(ev, first) {
				first = ev
			}
		}
		if first.at > to {
			break
		}
		m.fire(first)
	}
	m.now = to
}

func (m *refModel) fire(ev mEvent) {
	e, x := ev.e, ev.x
	switch ev.kind {
	case "idle":
		m.hits.IdleDeletion++
		m.deleteEntity(e)
	case "lock":
		m.hits.LockExpiry++
		m.lockEnded(e, x, ev.at)
	case "expire":
		m.expire(e, x)
	case "activate":
		// SEMANTICS S4: a new sequence number, EnqueuedTime = its time.
		m.hits.Activation++
		remove(&e.main, x)
		e.lastActivation = ev.at
		e.seq++
		e.seqLog = append(e.seqLog, x.item)
		x.key = mKey{seq: e.seq}
		if e.kind == mTopic {
			m.fanOut(e, x, ev.at)
		} else {
			m.enqueue(e, x, ev.at, e.cfg.ttl)
		}
	}
}

// deadlines lists every pending event instant after now, for the clock
// jumps, by kind of event: "lock", "expire", "activate", "idle".
func (m *refModel) deadlines() map[string][]int64 {
	out := map[string][]int64{}
	for _, ev := range m.events() {
		if ev.at > m.now && ev.at != mNever {
			out[ev.kind] = append(out[ev.kind], ev.at)
		}
	}
	for k, l := range out {
		slices.Sort(l)
		out[k] = slices.Compact(l)
	}
	return out
}

// wakeDeadline is the first pending instant that can change what r sees:
// an event of its entity, or its topic's activation or idle deletion; mNever
// if none.
func (m *refModel) wakeDeadline(r *mReceiver) int64 {
	first := mNever
	for _, ev := range m.events() {
		mine := ev.e == r.e || (r.e.kind == mSub && ev.e == r.e.topic && ev.kind != "lock" && ev.kind != "expire")
		if mine && ev.at > m.now && ev.at < first {
			first = ev.at
		}
	}
	return first
}

// ---------------------------------------------------------------- counts

type mCounts struct {
	active, scheduled, dead, total, size int64
	subs                                 int32
}

func (m *refModel) counts(e *mEntity) mCounts {
	var c mCounts
	if e.deleted {
		return c
	}
	for _, x := range e.main {
		if x.state == mScheduled {
			c.scheduled++
		} else {
			c.active++
		}
	}
	c.dead = int64(len(e.dlq))
	c.total = c.active + c.scheduled + c.dead
	c.size = m.entitySize(e)
	if e.kind == mTopic {
		c.size = m.topicSize(e)
		c.subs = int32(len(e.subs))
	}
	return c
}

// ---------------------------------------------------------------- invariants

// check verifies the model's own invariants; the harness compares the
// broker with the model.
func (m *refModel) check() error {
	// I1: every accepted item is in exactly one place or has exactly one
	// documented end.
	present := map[int]int{}
	tokens := map[[16]byte]int{}
	for _, e := range m.all {
		if e.deleted {
			if len(e.main)+len(e.dlq)+len(e.subs) > 0 {
				return fmt.Errorf("deleted %v still holds messages", e)
			}
			continue
		}
		for _, l := range [][]*mMsg{e.main, e.dlq} {
			for i, x := range l {
				present[x.item]++
				if i > 0 && !l[i-1].key.less(x.key) {
					return fmt.Errorf("%v: keys out of order: %v then %v", e, l[i-1].key, x.key)
				}
				if x.state == mLocked && x.token != ([16]byte{}) {
					tokens[x.token]++ // I3: one valid lock per message, one message per lock
				}
				if x.state != mLocked && x.token != ([16]byte{}) {
					return fmt.Errorf("%v: unlocked item %d keeps a token", e, x.item)
				}
				if x.state == mLocked && x.lockedUntil <= m.now {
					return fmt.Errorf("%v: item %d locked past its lock end", e, x.item)
				}
				if x.state == mAvail && !x.dlq && x.expires <= m.now {
					return fmt.Errorf("%v: item %d available past ExpiresAt (I7)", e, x.item)
				}
				if x.dlq {
					switch x.dlReason {
					case "MaxDeliveryCountExceeded", "TTLExpiredException", "FilterEvaluationException":
					default:
						if x.dlReason != "" && !strings.HasPrefix(x.dlReason, "app-") {
							return fmt.Errorf("%v: item %d dead-lettered with unknown reason %q (I10)", e, x.item, x.dlReason)
						}
					}
				}
				if x.state == mScheduled && (e.kind == mSub || x.dlq || x.sched <= m.now) {
					return fmt.Errorf("%v: item %d scheduled where it cannot be", e, x.item)
				}
			}
		}
		// I5: numbers 1..seq, each one acceptance or activation.
		if e.kind != mSub && int64(len(e.seqLog)) != e.seq {
			return fmt.Errorf("%v: %d numbers for seq %d", e, len(e.seqLog), e.seq)
		}
	}
	for tok, n := range tokens {
		if n > 1 {
			return fmt.Errorf("lock token %x held by %d messages (I3)", tok[:4], n)
		}
	}
	for item := range m.items {
		p, done := present[item], false
		_, done = m.term[item]
		if !(p == 1 && !done || p == 0 && done) {
			return fmt.Errorf("ledger: item %d (%s) is in %d places, ended %v (%q) (I1)", item, m.items[item], p, done, m.term[item])
		}
	}
	for item := range present {
		if _, ok := m.items[item]; !ok {
			return fmt.Errorf("ledger: item %d present but never accepted (I2)", item)
		}
	}
	return nil
}
