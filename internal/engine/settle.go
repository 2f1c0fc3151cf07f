package engine

import (
	"context"
	"fmt"

	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
)

// Settle applies s to the message of the receiver's queue locked under
// s.Token (SEMANTICS L3, L5, L10, L15). A lock that has ended, a message
// settled already or an unknown token is ErrLockLost (L4);
// PropertiesToModify that would pass the entity's limits are refused (V3).
// On error nothing changed. For Renew it returns the lock's new end.
func (r *Receiver) Settle(ctx context.Context, s Settlement) (lockedUntil int64, err error) {
	c := r.call(settleOps[s.Op])
	defer c.exit(&err)
	now, err := c.enter(ctx)
	if err != nil {
		return 0, err
	}
	c.yield = true
	e := r.e
	m := e.st.ByToken(s.Token)
	if m == nil || m.Queue() != r.q || now >= m.LockedUntil() || (r.sess != nil && m.SessionID != r.sess.id) {
		return 0, errs.Errorf(errs.ErrLockLost, e.Describe(r.q), "%s", lockName(s))
	}
	if s.Op == Renew {
		return e.renewLocked(m, now), nil // a renewal is not activity (SEMANTICS A2)
	}
	retry := after(now, int64(s.RetryAfter))
	// The record is the call's own data: built, and checked against the
	// journal's limit, before anything changes (V3). settleLocked appends
	// no record of its own.
	var enc *encoder
	if e.journaled() {
		rec := settleRecord{q: r.q, key: m.Key(), op: s.Op, at: now, retry: retry, props: s.Props, reason: s.Reason, description: s.Description}
		enc = e.begin(rec.kind(), rec.encode)
		if err := e.recordTooLarge(enc, errs.ErrMessageTooLarge, "the settlement's PropertiesToModify, reason and description"); err != nil {
			return 0, err
		}
	}
	if err := e.settleLocked(m, s.Op, s.Props, s.Reason, s.Description, now, retry); err != nil {
		if enc != nil {
			enc.drop()
		}
		return 0, err
	}
	e.commit(enc)
	return 0, nil
}

// settleLocked applies op to the locked message m at now, with
// PropertiesToModify props first (SEMANTICS L3, V3): an abandoned message
// waits until retry. On error nothing changed.
func (e *Entity) settleLocked(m *store.Message, op Op, props map[string]any, reason, description string, now, retry int64) error {
	if len(props) > 0 {
		if err := e.modifyLocked(m, props); err != nil {
			return err
		}
	}
	q := m.Queue()
	switch op {
	case Complete:
		e.completeLocked(m, now)
	case Abandon:
		e.emitLocked(EventAbandoned, m, q, now, "")
		e.releaseLocked(m, now, retry)
	case DeadLetter:
		e.deadLetterLocked(m, reason, description, now)
	case Defer:
		e.emitLocked(EventDeferred, m, q, now, "")
		e.deferLocked(m)
	case Release:
		e.emitLocked(EventReleased, m, q, now, "")
		e.unreceiveLocked(m, now)
	}
	e.touchLocked(now)
	return nil
}

// lockName names the lock in a lock-lost error: by the message's sequence
// number when the caller knows it, and by the whole token, which is new at
// every delivery.
func lockName(s Settlement) string {
	if s.Seq != 0 {
		return fmt.Sprintf("message %d, lock token %x", s.Seq, s.Token)
	}
	return fmt.Sprintf("lock token %x", s.Token)
}
