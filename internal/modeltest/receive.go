package modeltest

// The model's receiving side: receivers, receives in both modes, peeks and
// deferred fetches, for plain and session receivers.

import (
	"github.com/minibus-go/minibus"
)

// mView is what the broker must return for one message.
type mView struct {
	item        int
	origin      int
	body        []byte
	msgID       string
	headers     mHeaders
	props       map[string]any
	ttl         int64
	sched       int64
	seq         int64
	enqSeq      int64
	enqueued    int64
	expires     int64
	lockedUntil int64 // 0: no lock
	deliveries  uint32
	state       minibus.MessageState
	dlReason    string
	dlDesc      string
	descPrefix  bool
	dlSource    string
}

func (m *refModel) view(x *mMsg, state minibus.MessageState, locked bool) mView {
	v := mView{item: x.item, origin: x.origin, body: x.body, msgID: x.msgID, headers: x.headers,
		props: copyMap(x.props), ttl: x.ttl, sched: x.sched, seq: x.key.seq, enqSeq: x.enqSeq,
		enqueued: x.enqueued, expires: x.expires, deliveries: x.deliveries, state: state,
		dlReason: x.dlReason, dlDesc: x.dlDesc, descPrefix: x.dlDescPrefix, dlSource: x.dlSource}
	if locked {
		v.lockedUntil = x.lockedUntil
	}
	return v
}

// newReceiver is NewReceiver: the main queue of a session-enabled entity is
// read through sessions (SS1) and that of a forwarding one not at all (F2).
func (m *refModel) newReceiver(e *mEntity, rad bool, q subQ) (*mReceiver, error) {
	m.begin()
	if e.deleted {
		return nil, minibus.ErrNotFound
	}
	if q == sqMain && (e.cfg.session || e.cfg.forwardTo != "") {
		return nil, minibus.ErrInvalidArgument
	}
	return &mReceiver{e: e, rad: rad, q: q}, nil
}

// enterReceive is the checks every receive-side call makes after its own
// argument checks: the entity exists, a session receiver still holds its
// session (SS5), the status takes receives (V5).
func (m *refModel) enterReceive(r *mReceiver) error {
	switch {
	case r.e.deleted:
		return minibus.ErrNotFound
	case m.lost(r):
		return minibus.ErrSessionLockLost
	case !canReceive(r.e.cfg.status):
		return minibus.ErrEntityDisabled
	}
	return nil
}

// mine reports whether x is in what r reads: its queue, and for a session
// receiver its session's messages, scheduled ones aside (SS4).
func (r *mReceiver) mine(x *mMsg) bool {
	return !r.isSess || (x.headers.SessionID == r.sess && x.state != mScheduled)
}

// messages is what r reads, in key order.
func (r *mReceiver) messages() []*mMsg {
	var out []*mMsg
	for _, x := range *r.e.list(r.q) {
		if r.mine(x) {
			out = append(out, x)
		}
	}
	return out
}

func (m *refModel) available(r *mReceiver) []*mMsg {
	var out []*mMsg
	for _, x := range r.messages() {
		if x.state == mAvail {
			out = append(out, x)
		}
	}
	return out
}

// receiveBlocks reports whether ReceiveMessages on r would wait: no error
// and nothing available.
func (m *refModel) receiveBlocks(r *mReceiver) bool {
	return !r.closed && m.enterReceive(r) == nil && len(m.available(r)) == 0
}

// receive is ReceiveMessages when it does not block. wouldBlock reports that
// nothing is available: the broker would wait.
func (m *refModel) receive(r *mReceiver, max int) (views []mView, wouldBlock bool, err error) {
	m.begin()
	if r.closed {
		return nil, false, minibus.ErrClosed
	}
	if max < 1 {
		return nil, false, minibus.ErrInvalidArgument
	}
	if err := m.enterReceive(r); err != nil {
		return nil, false, err
	}
	avail := m.available(r)
	if len(avail) == 0 {
		return nil, true, nil
	}
	e := r.e
	for _, x := range avail[:min(max, len(avail))] {
		x.deliveries++
		if r.rad {
			remove(e.list(r.q), x)
			m.terminate(x.item, termRAD)
			views = append(views, m.view(x, minibus.MessageStateActive, false))
			continue
		}
		m.lock(r, x)
		views = append(views, m.view(x, minibus.MessageStateActive, true))
	}
	m.touch(e)
	e.accessed = m.now
	return views, false, nil
}

// lock locks x for r: until now + LockDuration, or in a session until the
// session's lock ends (L1, SS8).
func (m *refModel) lock(r *mReceiver, x *mMsg) {
	x.state = mLocked
	x.fromDeferral = false
	x.lockedUntil = mAddSat(m.now, r.e.cfg.lock)
	if r.isSess {
		x.lockedUntil = r.e.held[r.sess].until
	}
	x.token = [16]byte{} // the broker's answer tells the new one
}

func peekState(s mState) minibus.MessageState {
	switch s {
	case mDeferred:
		return minibus.MessageStateDeferred
	case mScheduled:
		return minibus.MessageStateScheduled
	}
	return minibus.MessageStateActive
}

func (m *refModel) peek(r *mReceiver, max int, from int64) ([]mView, error) {
	m.begin()
	if r.closed {
		return nil, minibus.ErrClosed
	}
	if max < 1 || from < 0 {
		return nil, minibus.ErrInvalidArgument
	}
	if err := m.enterReceive(r); err != nil {
		return nil, err
	}
	start := mKey{seq: from}
	if from == 0 {
		start = r.cursor
	}
	views := []mView{}
	var last mKey
	for _, x := range r.messages() {
		if x.key.less(start) || len(views) == max {
			continue
		}
		views = append(views, m.peekView(r.e, x))
		last = x.key
	}
	if from == 0 && len(views) > 0 {
		r.cursor = last.next()
	}
	m.touch(r.e)
	return views, nil
}

// peekView shows x as a peek does (L12, L14). A scheduled message shows the
// TimeToLive and ExpiresAt it would get if it activated with today's
// settings (E1, E2).
func (m *refModel) peekView(e *mEntity, x *mMsg) mView {
	v := m.view(x, peekState(x.state), false)
	if x.state == mScheduled {
		v.ttl = effTTL(x.sentTTL, e.cfg.ttl)
		v.expires = mExpiry(x.sched, v.ttl)
	}
	return v
}

func (m *refModel) receiveDeferred(r *mReceiver, seqs []int64) ([]mView, error) {
	m.begin()
	if r.closed {
		return nil, minibus.ErrClosed
	}
	if err := checkSeqs(seqs); err != nil {
		return nil, err
	}
	if err := m.enterReceive(r); err != nil {
		return nil, err
	}
	found, err := m.findDeferred(r, seqs)
	if err != nil {
		return nil, err
	}
	e := r.e
	var views []mView
	for _, x := range found {
		x.deliveries++
		m.hits.DeferredFetch++
		if r.rad {
			remove(e.list(r.q), x)
			m.terminate(x.item, termRAD)
			views = append(views, m.view(x, minibus.MessageStateDeferred, false))
			continue
		}
		m.lock(r, x)
		x.fromDeferral = true
		views = append(views, m.view(x, minibus.MessageStateDeferred, true))
	}
	m.touch(e)
	e.accessed = m.now
	return views, nil
}

// findDeferred finds, in the order named, the deferred messages of r with
// the given numbers (every copy of a number); one number without any is
// ErrMessageNotFound (L9, SS8).
func (m *refModel) findDeferred(r *mReceiver, seqs []int64) ([]*mMsg, error) {
	var found []*mMsg
	for _, s := range seqs {
		n := len(found)
		for _, x := range r.messages() {
			if x.key.seq == s && x.state == mDeferred {
				found = append(found, x)
			}
		}
		if len(found) == n {
			return nil, minibus.ErrMessageNotFound
		}
	}
	return found, nil
}
