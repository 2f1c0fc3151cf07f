package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
)

// Sessions (SEMANTICS SS1–SS8). A session-enabled entity's store keeps its
// main queue per session (store.Store.Hold and friends); the engine keeps,
// per session, what is not messages: its state, the receiver holding it and
// until when. A session's lock is the umbrella of its messages' locks: a
// message received in a session is locked until the session's LockedUntil,
// a renewal moves both, and at the session lock's end its messages' locks
// end first, then the session's.

// AcceptSession locks session id for LockDuration, whether or not it has
// messages (SEMANTICS SS2), and returns its receiver. A session held by
// another receiver is ErrSessionCannotBeLocked.
func (e *Entity) AcceptSession(ctx context.Context, id string, mode Mode) (_ *Receiver, err error) {
	c := e.call(OpAcceptSession)
	c.need = needSessions | needReceive
	defer c.exit(&err)
	now, err := c.enter(ctx)
	if err != nil {
		return nil, err
	}
	if s := e.sessions.byID[id]; s != nil && s.holder != nil {
		return nil, errs.Errorf(errs.ErrSessionCannotBeLocked, e.describe(), "session %q is held by another receiver", id)
	}
	return e.holdLocked(id, mode, now), nil
}

// AcceptNextSession waits until a session not held has an available
// message, then locks the one whose first available message is oldest
// (SEMANTICS SS3). If ctx ends first it returns ctx.Err(). onHold, when
// set, is called with the new receiver under the entity's lock, before
// anyone else can see the session held: it must not block or call the
// broker.
func (e *Entity) AcceptNextSession(ctx context.Context, mode Mode, onHold func(*Receiver)) (_ *Receiver, err error) {
	c := e.call(OpAcceptSession)
	c.need = needSessions | needReceive
	defer c.exit(&err)
	var w *waiter
	for {
		now, err := c.enter(ctx)
		if err != nil {
			return nil, err
		}
		if id, ok := e.st.NextSession(); ok {
			r := e.holdLocked(id, mode, now)
			c.waited.tookLocked() // for WaitQuiet, if the call waited (SEMANTICS P2)
			if onHold != nil {
				onHold(r)
			}
			return r, nil
		}
		if w == nil {
			w = newWaiter(nil)
		}
		list := &e.waiters[store.Main]
		again := c.waited != nil
		if !again {
			c.waited = e.blockLocked(nil)
		}
		list.add(w)
		c.leave()
		if again {
			e.b.WorkChanged() // woken, it found nothing: quiet again
		}
		if err := e.waitOn(ctx, list, w, nil); err != nil {
			return nil, err
		}
		c.since = e.b.events.mark() // what others did meanwhile is not this call's
	}
}

// holdLocked gives session id to a new receiver until now + LockDuration:
// activity (SEMANTICS A2), also when replayed.
func (e *Entity) holdLocked(id string, mode Mode, now int64) *Receiver {
	rec := holdRecord{id: id, mode: mode, at: now}
	e.log(rec.kind(), rec.encode)
	s := e.sessions.byID[id]
	if s == nil {
		s = &session{id: id}
		e.sessions.byID[id] = s
	}
	r := &Receiver{e: e, q: store.Main, mode: mode, sess: s}
	s.holder = r
	s.acceptedAt = now
	s.renewUntil = 0
	s.lockedUntil = after(now, int64(e.cfg.LockDuration))
	e.sessions.locks.ReplaceOrInsert(sessLock{s.lockedUntil, id})
	e.noteDueLocked(s.lockedUntil)
	e.st.Hold(id)
	e.touchLocked(now)
	return r
}

// releaseSessionLocked ends r's hold on its session at instant at: the
// session lock expired (expired set: its locked messages' locks ended
// first, each a failed delivery) or r closed (its locked messages return
// without counting a delivery, SS5). Its blocked calls wake; so does a
// receive waiting for a session, when this one has messages.
func (e *Entity) releaseSessionLocked(s *session, at int64, expired bool) {
	r := releaseRecord{id: s.id, at: at, expired: expired}
	e.log(r.kind(), r.encode)
	e.st.LockedIn(s.id, func(m *store.Message) {
		e.emitLocked(EventLockLost, m, store.Main, at, "")
		if !expired {
			// Closing does not count a delivery (SS5): the message is as
			// it was before it, deferred again if it was.
			m.Deliveries--
			if m.FromDeferral {
				m.RenewUntil = 0
				e.deferLocked(m)
				return
			}
		}
		e.lockEndedLocked(m, at)
	})
	e.sessions.locks.Delete(sessLock{s.lockedUntil, s.id})
	s.holder = nil
	s.renewUntil = 0
	s.waiters.wakeAll()
	e.st.Unhold(s.id)
	if _, ok := e.st.NextSession(); ok {
		e.waiters[store.Main].wake(1)
	}
	e.sessions.forget(s)
}

// LockedUntil returns when the receiver's session lock ends (SEMANTICS SS8);
// 0 for a plain receiver.
func (r *Receiver) LockedUntil() int64 {
	if r.sess == nil {
		return 0
	}
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	return r.sess.lockedUntil
}

// RenewSessionLock moves the session's lock, and its locked messages'
// locks, to now + LockDuration (SEMANTICS SS8) and returns the new end.
func (r *Receiver) RenewSessionLock(ctx context.Context) (_ int64, err error) {
	c := r.call(OpRenewLock)
	defer c.exit(&err)
	now, err := c.enter(ctx)
	if err != nil {
		return 0, err
	}
	return r.e.renewSessionLocked(r.sess, now), nil
}

// renewSessionLocked moves session s's lock, and its messages' locks, to
// now + LockDuration, and returns that.
func (e *Entity) renewSessionLocked(s *session, now int64) int64 {
	until := after(now, int64(e.cfg.LockDuration))
	e.relockSessionLocked(s, until)
	return until
}

// relockSessionLocked moves session s's lock, and its messages' locks, to
// until, and records it: a renewal acknowledged before a crash holds at
// Open, so that the lock does not end at its earlier end in the catch-up
// (SEMANTICS L6 then ends it at Open, as every lock).
func (e *Entity) relockSessionLocked(s *session, until int64) {
	r := renewRecord{session: true, id: s.id, until: until}
	e.log(r.kind(), r.encode)
	e.sessions.locks.Delete(sessLock{s.lockedUntil, s.id})
	s.lockedUntil = until
	e.sessions.locks.ReplaceOrInsert(sessLock{until, s.id})
	e.st.LockedIn(s.id, func(m *store.Message) { e.st.Renew(m, until) })
	e.noteDueLocked(until)
}

// SessionState returns the session's state; nil when never set (SEMANTICS
// SS6). The caller copies it.
func (r *Receiver) SessionState(ctx context.Context) (_ []byte, err error) {
	c := r.call(noFault)
	defer c.exit(&err)
	if _, err := c.enter(ctx); err != nil {
		return nil, err
	}
	return r.sess.state, nil
}

// SetSessionState replaces the session's state with state, the caller's
// copy; nil clears it (SEMANTICS SS6).
func (r *Receiver) SetSessionState(ctx context.Context, state []byte) (err error) {
	c := r.call(noFault)
	defer c.exit(&err)
	now, err := c.enter(ctx)
	if err != nil {
		return err
	}
	e := r.e
	// The record is the call's own data: built, and checked against the
	// journal's limit, before anything changes (V3).
	rec := stateRecord{id: r.sess.id, state: state, at: now}
	enc := e.begin(rec.kind(), rec.encode)
	if enc != nil {
		if err := e.recordTooLarge(enc, errs.ErrMessageTooLarge, "a session state of "+strconv.Itoa(len(state))+" bytes"); err != nil {
			return err
		}
	}
	if err := e.setStateLocked(r.sess, state, now); err != nil {
		if enc != nil {
			enc.drop()
		}
		return err
	}
	e.commit(enc)
	return nil
}

// setStateLocked gives session s the state state at now. The state counts
// in the entity's size and quota (SEMANTICS SS9): one larger than
// MaxMessageSizeInKilobytes, or one whose growth would pass
// MaxSizeInMegabytes, is refused and nothing changes.
func (e *Entity) setStateLocked(s *session, state []byte, now int64) error {
	n := int64(len(state)) - int64(len(s.state))
	switch {
	case e.b.replay != nil:
		e.quota.Add(n) // the live call was allowed (as in modifyLocked)
	case int64(len(state)) > e.cfg.maxMessageSize():
		return errs.Errorf(errs.ErrMessageTooLarge, e.describe(), "session %q: state is %d bytes, more than MaxMessageSizeInKilobytes (%d bytes)",
			s.id, len(state), e.cfg.maxMessageSize())
	case !e.quota.TryAdd(n):
		return errQuota(e, n, fmt.Sprintf("session %q's state", s.id))
	}
	e.sessions.bytes += n
	s.state = state
	e.touchLocked(now)
	return nil
}

// SessionIDs returns the ids of the entity's sessions that have messages or
// state, sorted.
func (e *Entity) SessionIDs(ctx context.Context) (_ []string, err error) {
	c := e.call(noFault)
	c.need = needSessions
	defer c.exit(&err)
	if _, err := c.enter(ctx); err != nil {
		return nil, err
	}
	ids := e.st.SessionIDs()
	for id, s := range e.sessions.byID {
		if s.state != nil && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}
