package modeltest

// The model's counts and its own invariants.

import (
	"fmt"
	"strings"
)

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
				// At the end of time (the clamped clock) a new deadline is due at
				// once and happens at the next call.
				endOfTime := m.now == mNever-1
				if x.state == mLocked && x.lockedUntil <= m.now && !endOfTime {
					return fmt.Errorf("%v: item %d locked past its lock end", e, x.item)
				}
				if x.state == mAvail && !x.dlq && x.expires <= m.now && !endOfTime {
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
