package engine

import (
	"fmt"

	"github.com/minibus-go/minibus/internal/store"
)

// The records about one entity, replayed under its lock (replay.go finds
// the entity): each applies the transition its live call made, through
// the same code.

// apply applies a record about e, whose lock is held.
func (e *Entity) apply(k recKind, d *decoder) error {
	switch k {
	case recUpdate:
		e.updateLocked(d.config(), d.svar())
	case recRuleAdd, recRuleDelete:
		return e.applyRule(k, d)
	case recSend:
		return e.applySend(d)
	case recCancel:
		return e.applyCancel(d)
	case recTake, recFetch:
		return e.applyTake(k, d)
	case recSettle:
		return e.applySettle(d)
	case recRemove:
		return e.applyRemove(d)
	case recDeadline:
		return e.applyDeadline(d)
	case recHold, recRelease, recState:
		return e.applySession(k, d)
	case recTransferFailed:
		return e.applyTransferFailed(d)
	case recTouch:
		e.touchLocked(d.svar())
	case recRenew:
		return e.applyRenew(d)
	default:
		return fmt.Errorf("unknown record kind %d", uint8(k))
	}
	return nil
}

// applyRule adds or deletes a subscription's rule.
func (e *Entity) applyRule(k recKind, d *decoder) error {
	if k == recRuleDelete {
		i, found := findRule(e.rules, d.str())
		if !found {
			return errDiverged
		}
		e.deleteRuleLocked(i, d.svar())
		return nil
	}
	r, err := CompileRule(d.rule())
	if err != nil {
		return err
	}
	if _, found := findRule(e.rules, r.Spec.Name); found || e.kind != KindSubscription {
		return errDiverged
	}
	e.addRuleLocked(r, d.svar())
	return nil
}

// count reads a count of items of at least one byte each.
func (d *decoder) count() int {
	n := d.uvar()
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return 0
	}
	return int(n)
}

func (e *Entity) applySend(d *decoder) error {
	at, n := d.svar(), d.count()
	recs := make([]*store.Message, n)
	for i := range recs {
		recs[i] = d.message()
	}
	if d.err != nil {
		return d.err
	}
	if err := e.sendLocked(recs, at, nil, nil); err != nil {
		return fmt.Errorf("%w: %w", errDiverged, err)
	}
	return nil
}

func (e *Entity) applyCancel(d *decoder) error {
	at, n := d.svar(), d.count()
	found := make([]*store.Message, n)
	for i := range found {
		m := e.st.Get(store.Main, store.Key{Seq: d.svar()})
		if m == nil || m.State() != store.Scheduled {
			return errDiverged
		}
		found[i] = m
	}
	e.cancelAllLocked(found, at)
	return nil
}

// find returns the message of q with key k, not locked, or nil.
func (e *Entity) find(q store.Queue, k store.Key, session string) *store.Message {
	return e.st.Find(q, k, session)
}

// lockedReplay returns e's message of q with key k, locked, or nil.
func (e *Entity) lockedReplay(q store.Queue, k store.Key) *store.Message {
	ref := lockRef{e, q, k}
	m := e.b.replay.locks[ref]
	if m == nil || !e.st.Holds(m) || m.State() != store.Locked || m.Queue() != q || m.Key() != k {
		return nil
	}
	delete(e.b.replay.locks, ref)
	return m
}

func (e *Entity) noteLockReplay(m *store.Message) {
	e.b.replay.locks[lockRef{e, m.Queue(), m.Key()}] = m
}

func (e *Entity) applyTake(k recKind, d *decoder) error {
	q, mode, session := store.Queue(d.u8()), Mode(d.u8()), d.str()
	at, until, n := d.svar(), d.svar(), d.count()
	for range n {
		m := e.find(q, d.key(), session)
		if m == nil || d.err != nil {
			return errDiverged
		}
		if k == recFetch {
			if m.State() != store.Deferred {
				return errDiverged
			}
			s := e.fetchDeferredLocked(m, q, mode, at, until, 0)
			s.Release()
		} else {
			if m.State() != store.Available {
				return errDiverged
			}
			if mode == PeekLock {
				e.st.Lock(m, until)
			}
			e.deliveredLocked(m, q, mode, at, 0)
			if mode == ReceiveAndDelete {
				e.st.Remove(m)
			}
		}
		if mode == PeekLock {
			e.noteLockReplay(m)
		}
	}
	if n > 0 && mode == PeekLock {
		e.noteDueLocked(until)
	}
	e.touchLocked(at)
	e.accessed = at
	return nil
}

// applyRenew moves a message's lock, or a session's lock and its
// messages' locks, to the end the record gives.
func (e *Entity) applyRenew(d *decoder) error {
	if d.boolean() {
		id, until := d.str(), d.svar()
		if d.err != nil || e.sessions == nil {
			return errDiverged
		}
		s := e.sessions.byID[id]
		if s == nil || s.holder == nil {
			return errDiverged
		}
		e.relockSessionLocked(s, until)
		return nil
	}
	q, k, until := store.Queue(d.u8()), d.key(), d.svar()
	m := e.b.replay.locks[lockRef{e, q, k}]
	if d.err != nil || m == nil || !e.st.Holds(m) || m.State() != store.Locked {
		return errDiverged
	}
	e.relockLocked(m, until)
	return nil
}

func (e *Entity) applySettle(d *decoder) error {
	q, k, op := store.Queue(d.u8()), d.key(), Op(d.u8())
	at, retry, props, reason, desc := d.svar(), d.svar(), d.props(), d.str(), d.str()
	if d.err == nil && (op == Renew || op > Release) {
		return fmt.Errorf("%w: settlement %d", errDiverged, op) // a renewal is a recRenew
	}
	m := e.lockedReplay(q, k)
	if m == nil || d.err != nil {
		return errDiverged
	}
	if err := e.settleLocked(m, op, props, reason, desc, at, retry); err != nil {
		return fmt.Errorf("%w: %w", errDiverged, err)
	}
	return nil
}

func (e *Entity) applyRemove(d *decoder) error {
	q, session, at, n := store.Queue(d.u8()), d.str(), d.svar(), d.count()
	doomed := make([]*store.Message, n)
	for i := range doomed {
		if doomed[i] = e.find(q, d.key(), session); doomed[i] == nil {
			return errDiverged
		}
	}
	e.removeLocked(doomed, q, at)
	return nil
}

func (e *Entity) applyDeadline(d *decoder) error {
	what, q, k, session, at := d.u8(), store.Queue(d.u8()), d.key(), d.str(), d.svar()
	if d.err != nil {
		return d.err
	}
	if what == dlLockEnd {
		m := e.lockedReplay(q, k)
		if m == nil {
			return errDiverged
		}
		e.lockLostLocked(m, at)
		return nil
	}
	m := e.find(q, k, session)
	switch {
	case m == nil:
		return errDiverged
	case what == dlActivate && m.State() == store.Scheduled:
		e.activateLocked(m, at)
	case what == dlReady && m.State() == store.Delayed:
		e.readyLocked(m)
	case what == dlExpire && m.State() != store.Scheduled:
		e.expireLocked(m, at)
	default:
		return errDiverged
	}
	e.rescheduleLocked()
	return nil
}

func (e *Entity) applySession(k recKind, d *decoder) error {
	if e.sessions == nil {
		return errDiverged
	}
	id := d.str()
	s := e.sessions.byID[id]
	switch k {
	case recHold:
		mode, at := Mode(d.u8()), d.svar()
		if s != nil && s.holder != nil {
			return errDiverged
		}
		e.holdLocked(id, mode, at)
	case recRelease:
		at, expired := d.svar(), d.boolean()
		if s == nil || s.holder == nil {
			return errDiverged
		}
		e.releaseSessionLocked(s, at, expired)
	case recState:
		state, at := d.bytes(), d.svar()
		if s == nil || s.holder == nil {
			return errDiverged
		}
		if err := e.setStateLocked(s, state, at); err != nil {
			return fmt.Errorf("%w: %w", errDiverged, err)
		}
	}
	return nil
}

func (e *Entity) applyTransferFailed(d *decoder) error {
	k, why := d.key(), d.str()
	top, sub := e, ""
	if e.topic != nil {
		top, sub = e.topic, e.name
	}
	f := e.b.replay.unsend(top.name, sub, k, &e.b.outbox)
	if f == nil {
		return errDiverged
	}
	f.from = e
	e.transferFailedLocked(f, why)
	return nil
}
