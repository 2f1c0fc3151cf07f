package modeltest

// The model's counts and its own invariants.

import (
	"fmt"
	"strings"
)

// ---------------------------------------------------------------- counts

type mCounts struct {
	active, scheduled, dead, transfer, total, size int64
	subs                                           int32
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
	c.transfer = int64(len(e.tdlq))
	c.total = c.active + c.scheduled + c.dead + c.transfer
	c.size = m.entitySize(e)
	if e.kind == mTopic {
		c.size = m.topicSize(e)
		c.subs = int32(len(e.subs))
	}
	return c
}

// ---------------------------------------------------------------- invariants

// knownReasons are the dead-letter reasons the broker sets (I10).
var knownReasons = map[string]bool{
	"MaxDeliveryCountExceeded": true, "TTLExpiredException": true, "FilterEvaluationException": true,
	"Session id is null.": true, reasonMaxHops: true, reasonTransfer: true,
}

// check verifies the model's own invariants; the harness compares the
// broker with the model.
func (m *refModel) check() error {
	if len(m.outbox) > 0 {
		return fmt.Errorf("%d forwards never delivered (F2)", len(m.outbox))
	}
	present := map[int]int{}
	tokens := map[[16]byte]int{}
	for _, e := range m.all {
		if err := m.checkEntity(e, present, tokens); err != nil {
			return err
		}
	}
	for tok, n := range tokens {
		if n > 1 {
			return fmt.Errorf("lock token %x held by %d messages (I3)", tok[:4], n)
		}
	}
	return m.checkLedger(present)
}

// checkEntity checks one entity's messages, sessions and numbers, counting
// where each item is (I1) and each lock token (I3).
func (m *refModel) checkEntity(e *mEntity, present map[int]int, tokens map[[16]byte]int) error {
	if e.deleted {
		if len(e.main)+len(e.dlq)+len(e.tdlq)+len(e.subs)+len(e.held) > 0 {
			return fmt.Errorf("deleted %v still holds messages", e)
		}
		return nil
	}
	for q, l := range e.lists() {
		for i, x := range l {
			present[x.item]++
			if x.state == mLocked && x.token != ([16]byte{}) {
				tokens[x.token]++ // I3: one valid lock per message, one message per lock
			}
			if i > 0 && !l[i-1].key.less(x.key) {
				return fmt.Errorf("%v: keys out of order: %v then %v", e, l[i-1].key, x.key)
			}
			if err := m.checkMsg(e, subQ(q), x); err != nil {
				return fmt.Errorf("%v: item %d: %w", e, x.item, err)
			}
		}
	}
	if err := m.checkSessions(e); err != nil {
		return fmt.Errorf("%v: %w", e, err)
	}
	// I5: numbers 1..seq, each one acceptance or activation.
	if e.kind != mSub && int64(len(e.seqLog)) != e.seq {
		return fmt.Errorf("%v: %d numbers for seq %d", e, len(e.seqLog), e.seq)
	}
	return nil
}

// checkMsg checks one message in queue q of e.
func (m *refModel) checkMsg(e *mEntity, q subQ, x *mMsg) error {
	if x.q != q {
		return fmt.Errorf("in the %v queue, marked %v", q, x.q)
	}
	if err := m.checkLock(x); err != nil {
		return err
	}
	if q != sqMain && x.dlReason != "" && !knownReasons[x.dlReason] && !strings.HasPrefix(x.dlReason, "app-") {
		return fmt.Errorf("dead-lettered with unknown reason %q (I10)", x.dlReason)
	}
	return m.checkPlace(e, q, x)
}

// checkLock checks a message's lock and expiry against now. At the end of
// time (the clamped clock) a new deadline is due at once and happens at
// the next call.
func (m *refModel) checkLock(x *mMsg) error {
	endOfTime := m.now == mNever-1
	switch {
	case x.state != mLocked && x.token != ([16]byte{}):
		return fmt.Errorf("unlocked, keeps a token")
	case x.state == mLocked && x.lockedUntil <= m.now && !endOfTime:
		return fmt.Errorf("locked past its lock end")
	case x.state == mAvail && x.q == sqMain && x.expires <= m.now && !endOfTime:
		return fmt.Errorf("available past ExpiresAt (I7)")
	}
	return nil
}

// checkPlace checks that a message is where it can be: scheduled only in a
// queue's or topic's own queue and in the future, with a SessionID in a
// session-enabled entity (SS1), never available in a forwarding one (F2).
func (m *refModel) checkPlace(e *mEntity, q subQ, x *mMsg) error {
	main := q == sqMain
	switch {
	case x.state == mScheduled && (e.kind == mSub || !main || x.sched <= m.now):
		return fmt.Errorf("scheduled where it cannot be")
	case main && x.state != mScheduled && e.cfg.session && x.headers.SessionID == "":
		return fmt.Errorf("no SessionID in a session-enabled entity (SS1)")
	case main && x.state == mAvail && e.cfg.forwardTo != "":
		return fmt.Errorf("available in a forwarding entity (F2)")
	}
	return nil
}

// checkSessions is I4: a session is held by one receiver at most, only in
// a session-enabled entity, and a message locked in a session is locked
// by its holder until the session's lock ends (SS4, SS8).
func (m *refModel) checkSessions(e *mEntity) error {
	if !e.cfg.session && len(e.held)+len(e.state) > 0 {
		return fmt.Errorf("sessions in an entity without sessions")
	}
	for id, h := range e.held {
		if h.r.sess != id || h.r.e != e || h.r.closed {
			return fmt.Errorf("session %q held by a receiver of %q (closed %v) (I4)", id, h.r.sess, h.r.closed)
		}
	}
	for _, x := range e.main {
		if !e.cfg.session || x.state != mLocked {
			continue
		}
		h := e.held[x.headers.SessionID]
		if h == nil || x.lockedUntil != h.until {
			return fmt.Errorf("item %d locked in session %q outside its lock (I4)", x.item, x.headers.SessionID)
		}
	}
	return nil
}

// checkLedger is I1 and I2: every accepted item is in exactly one place or
// has exactly one documented end, and nothing is present that was not
// accepted.
func (m *refModel) checkLedger(present map[int]int) error {
	for item := range m.items {
		p := present[item]
		_, done := m.term[item]
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
