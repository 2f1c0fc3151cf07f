package modeltest

// The model's receiving side: receives in both modes, peeks and deferred
// fetches.

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
	enqueued    int64
	expires     int64
	lockedUntil int64 // 0: no lock
	deliveries  uint32
	state       minibus.MessageState
	dlReason    string
	dlDesc      string
	descPrefix  bool
}

func (m *refModel) view(x *mMsg, state minibus.MessageState, locked bool) mView {
	v := mView{item: x.item, origin: x.origin, body: x.body, msgID: x.msgID, headers: x.headers,
		props: copyMap(x.props), ttl: x.ttl, sched: x.sched, seq: x.key.seq, enqueued: x.enqueued,
		expires: x.expires, deliveries: x.deliveries, state: state, dlReason: x.dlReason,
		dlDesc: x.dlDesc, descPrefix: x.dlDescPrefix}
	if locked {
		v.lockedUntil = x.lockedUntil
	}
	return v
}

func (m *refModel) newReceiver(e *mEntity, rad, dlq bool) (*mReceiver, error) {
	if e.deleted {
		return nil, minibus.ErrNotFound
	}
	return &mReceiver{e: e, rad: rad, dlq: dlq}, nil
}

// enterReceive is the checks every receive-side call makes after its own
// argument checks.
func (m *refModel) enterReceive(r *mReceiver) error {
	if r.e.deleted {
		return minibus.ErrNotFound
	}
	if !canReceive(r.e.cfg.status) {
		return minibus.ErrEntityDisabled
	}
	return nil
}

func (m *refModel) available(r *mReceiver) []*mMsg {
	var out []*mMsg
	for _, x := range *r.e.list(r.dlq) {
		if x.state == mAvail {
			out = append(out, x)
		}
	}
	return out
}

// receive is ReceiveMessages when it does not block. wouldBlock reports that
// nothing is available: the broker would wait.
func (m *refModel) receive(r *mReceiver, max int) (views []mView, wouldBlock bool, err error) {
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
			remove(e.list(r.dlq), x)
			m.terminate(x.item, termRAD)
			views = append(views, m.view(x, minibus.MessageStateActive, false))
			continue
		}
		m.lock(e, x)
		views = append(views, m.view(x, minibus.MessageStateActive, true))
	}
	m.touch(e)
	e.accessed = m.now
	return views, false, nil
}

func (m *refModel) lock(e *mEntity, x *mMsg) {
	x.state = mLocked
	x.fromDeferral = false
	x.lockedUntil = mAddSat(m.now, e.cfg.lock)
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
	for _, x := range *r.e.list(r.dlq) {
		if x.key.less(start) || len(views) == max {
			continue
		}
		v := m.view(x, peekState(x.state), false)
		if x.state == mScheduled {
			// A scheduled message shows the TimeToLive and ExpiresAt it would
			// get if it activated with today's settings (E1, E2).
			v.ttl = effTTL(x.sentTTL, r.e.cfg.ttl)
			v.expires = mExpiry(x.sched, v.ttl)
		}
		views = append(views, v)
		last = x.key
	}
	if from == 0 && len(views) > 0 {
		r.cursor = last.next()
	}
	m.touch(r.e)
	return views, nil
}

func (m *refModel) receiveDeferred(r *mReceiver, seqs []int64) ([]mView, error) {
	if r.closed {
		return nil, minibus.ErrClosed
	}
	if err := checkSeqs(seqs); err != nil {
		return nil, err
	}
	if err := m.enterReceive(r); err != nil {
		return nil, err
	}
	e := r.e
	var found []*mMsg
	for _, s := range seqs {
		n := len(found)
		for _, x := range *e.list(r.dlq) {
			if x.key.seq == s && x.state == mDeferred {
				found = append(found, x)
			}
		}
		if len(found) == n {
			return nil, minibus.ErrMessageNotFound
		}
	}
	var views []mView
	for _, x := range found {
		x.deliveries++
		m.hits.DeferredFetch++
		if r.rad {
			remove(e.list(r.dlq), x)
			m.terminate(x.item, termRAD)
			views = append(views, m.view(x, minibus.MessageStateDeferred, false))
			continue
		}
		m.lock(e, x)
		x.fromDeferral = true
		views = append(views, m.view(x, minibus.MessageStateDeferred, true))
	}
	m.touch(e)
	e.accessed = m.now
	return views, nil
}
