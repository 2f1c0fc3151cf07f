package modeltest

// The model's sessions (SEMANTICS SS1–SS8): accepting a session, its lock
// and its end, its state, and the list of sessions.

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/minibus-go/minibus"
)

// lost reports whether r is a session receiver that no longer holds its
// session (SS5).
func (m *refModel) lost(r *mReceiver) bool {
	if !r.isSess {
		return false
	}
	h := r.e.held[r.sess]
	return h == nil || h.r != r
}

// acceptSession is AcceptSession: the session is locked for LockDuration,
// messages or not (SS2).
func (m *refModel) acceptSession(e *mEntity, id string, rad bool) (*mReceiver, error) {
	m.begin()
	if id == "" || len(id) > 128 || !e.cfg.session { // SS2: no message carries an empty id
		return nil, minibus.ErrInvalidArgument
	}
	if err := enterAccept(e); err != nil {
		return nil, err
	}
	if e.held[id] != nil {
		return nil, minibus.ErrSessionCannotBeLocked
	}
	return m.hold(e, id, rad), nil
}

// enterAccept is the checks of AcceptSession and AcceptNextSession on a
// session-enabled entity.
func enterAccept(e *mEntity) error {
	if e.deleted {
		return minibus.ErrNotFound
	}
	if !canReceive(e.cfg.status) {
		return minibus.ErrEntityDisabled
	}
	return nil
}

// acceptNext is AcceptNextSession when it does not block: the unheld
// session whose first available message has the lowest key (SS3).
// wouldBlock reports that there is none.
func (m *refModel) acceptNext(e *mEntity, rad bool) (r *mReceiver, wouldBlock bool, err error) {
	m.begin()
	if !e.cfg.session {
		return nil, false, minibus.ErrInvalidArgument
	}
	if err := enterAccept(e); err != nil {
		return nil, false, err
	}
	id, ok := nextSession(e)
	if !ok {
		return nil, true, nil
	}
	return m.hold(e, id, rad), false, nil
}

// acceptBlocks reports whether AcceptNextSession on e would wait.
func (m *refModel) acceptBlocks(e *mEntity) bool {
	_, ok := nextSession(e)
	return e.cfg.session && enterAccept(e) == nil && !ok
}

// nextSession is the session AcceptNextSession takes now, if any.
func nextSession(e *mEntity) (string, bool) {
	for _, x := range e.main {
		if x.state == mAvail && e.held[x.headers.SessionID] == nil {
			return x.headers.SessionID, true
		}
	}
	return "", false
}

func (m *refModel) hold(e *mEntity, id string, rad bool) *mReceiver {
	r := &mReceiver{e: e, rad: rad, q: sqMain, isSess: true, sess: id}
	e.held[id] = &mHold{r: r, until: mAddSat(m.now, e.cfg.lock)}
	m.touch(e)
	return r
}

// sessionLocked is the locked messages of session id, in the order their
// locks end.
func sessionLocked(e *mEntity, id string) []*mMsg {
	var out []*mMsg
	for _, x := range e.main {
		if x.state == mLocked && x.headers.SessionID == id {
			out = append(out, x)
		}
	}
	slices.SortStableFunc(out, func(a, b *mMsg) int { return cmp.Compare(a.lockedUntil, b.lockedUntil) })
	return out
}

// release ends the hold on session id at instant at: its lock expired
// (each locked message's lock ends as in L6, a failed delivery) or its
// receiver closed (the same, without counting a delivery, so a message
// fetched from deferral is deferred again whatever its DeliveryCount: a
// close cannot dead-letter it) (SS5).
func (m *refModel) release(e *mEntity, id string, at int64, expired bool) {
	for _, x := range sessionLocked(e, id) {
		if !expired {
			x.deliveries--
			if x.fromDeferral {
				m.unlock(x)
				x.fromDeferral = false
				x.state = mDeferred
				continue
			}
		}
		m.lockEnded(e, x, at)
	}
	delete(e.held, id)
}

// closeReceiver is Receiver.Close and SessionReceiver.Close: a session
// receiver that holds its session releases it and its locked messages
// without counting a delivery (SS5); a plain one keeps its locks (L11).
func (m *refModel) closeReceiver(r *mReceiver) {
	m.begin()
	r.closed = true
	if !r.isSess || r.e.deleted || m.lost(r) {
		return
	}
	if len(sessionLocked(r.e, r.sess)) > 0 {
		m.hits.SessionClosedRelease++
	}
	m.release(r.e, r.sess, m.now, false)
	m.flush()
}

// enterSession is the checks of a session receiver's own calls.
func (m *refModel) enterSession(r *mReceiver) error {
	if r.closed {
		return minibus.ErrClosed
	}
	return m.enterReceive(r)
}

// renewSession is RenewSessionLock: the session's lock and its messages'
// locks end at now + LockDuration (SS8).
func (m *refModel) renewSession(r *mReceiver) (int64, error) {
	m.begin()
	if err := m.enterSession(r); err != nil {
		return 0, err
	}
	until := mAddSat(m.now, r.e.cfg.lock)
	for _, x := range sessionLocked(r.e, r.sess) {
		x.lockedUntil = until
	}
	r.e.held[r.sess].until = until
	return until, nil
}

// getState is GetSessionState: nil when never set or cleared (SS6).
func (m *refModel) getState(r *mReceiver) ([]byte, error) {
	m.begin()
	if err := m.enterSession(r); err != nil {
		return nil, err
	}
	return bytes.Clone(r.e.state[r.sess]), nil
}

// setState is SetSessionState: nil clears it; it is activity (A2).
func (m *refModel) setState(r *mReceiver, state []byte) error {
	m.begin()
	if err := m.enterSession(r); err != nil {
		return err
	}
	// SS9: the state counts in the entity's size, against its quota (a
	// subscription's, its topic's), and is at most a message's size.
	limits, used := r.e, m.entitySize(r.e)
	if r.e.kind == mSub {
		limits, used = r.e.topic, m.topicSize(r.e.topic)
	}
	grow := int64(len(state)) - int64(len(r.e.state[r.sess]))
	switch {
	case int64(len(state)) > limits.cfg.maxMsgSize:
		return minibus.ErrMessageTooLarge
	case grow > 0 && used+grow > limits.cfg.maxSize:
		return minibus.ErrQuotaExceeded
	}
	if state == nil {
		delete(r.e.state, r.sess)
	} else {
		r.e.state[r.sess] = bytes.Clone(state)
	}
	m.touch(r.e)
	return nil
}

// listSessions is ListSessions: the sessions with messages (available,
// locked or deferred: not scheduled) or state, sorted.
func (m *refModel) listSessions(e *mEntity) ([]string, error) {
	m.begin()
	if !e.cfg.session {
		return nil, minibus.ErrInvalidArgument
	}
	if e.deleted {
		return nil, minibus.ErrNotFound
	}
	var ids []string
	for _, x := range e.main {
		if x.state != mScheduled {
			ids = append(ids, x.headers.SessionID)
		}
	}
	for id := range e.state {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}
