package modeltest

// The model's clock: every pending deadline, applied in time order.

import (
	"cmp"
	"slices"
	"strings"
)

// mEvent is one thing due at an instant.
type mEvent struct {
	at   int64
	e    *mEntity
	x    *mMsg  // the message of a message event
	sess string // the session of a "session" event
	kind string // "lock", "expire", "activate", "session", "idle"
}

// rank orders the kinds of event of one entity at one instant: message
// events, then session lock ends, then idle deletion.
func (ev mEvent) rank() int {
	switch ev.kind {
	case "session":
		return 1
	case "idle":
		return 2
	}
	return 0
}

// idleDue is when e is deleted for idleness (SEMANTICS A2, A3), or mNever.
// A queue's or topic's idle time counts from the later of its last activity
// and its last scheduled activation, and never runs while it has scheduled
// messages; a forwarding source is never idle (A4).
func (m *refModel) idleDue(e *mEntity) int64 {
	if e.cfg.autoDelete == mNever || e.cfg.forwardTo != "" {
		return mNever
	}
	if e.kind != mSub && slices.ContainsFunc(e.main, func(x *mMsg) bool { return x.state == mScheduled }) {
		return mNever
	}
	return mAddSat(max(e.lastActivity, e.lastActivation), e.cfg.autoDelete)
}

// entityEvents appends everything pending in e.
func (m *refModel) entityEvents(out []mEvent, e *mEntity) []mEvent {
	for _, l := range e.lists() {
		for _, x := range l {
			switch {
			case x.state == mLocked:
				out = append(out, mEvent{at: x.lockedUntil, e: e, x: x, kind: "lock"})
			case x.state == mScheduled:
				out = append(out, mEvent{at: x.sched, e: e, x: x, kind: "activate"})
			case x.state == mAvail && x.q == sqMain && x.expires != mNever:
				out = append(out, mEvent{at: x.expires, e: e, x: x, kind: "expire"})
			}
		}
	}
	for id, h := range e.held {
		out = append(out, mEvent{at: h.until, e: e, sess: id, kind: "session"})
	}
	if d := m.idleDue(e); d != mNever {
		out = append(out, mEvent{at: d, e: e, kind: "idle"})
	}
	return out
}

// events lists everything pending, unordered.
func (m *refModel) events() []mEvent {
	var out []mEvent
	for _, e := range m.all {
		if !e.deleted {
			out = m.entityEvents(out, e)
		}
	}
	return out
}

// eventLess is the order of events (T3): by instant, then by entity (in
// creation order, as the broker numbers them), then message events in key
// order, session lock ends by (instant, id), then idle deletion.
func eventLess(a, b mEvent) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.e != b.e {
		return a.e.id < b.e.id
	}
	if a.rank() != b.rank() {
		return a.rank() < b.rank()
	}
	switch a.kind {
	case "session":
		return strings.Compare(a.sess, b.sess) < 0
	case "idle":
		return false
	}
	return a.x.key.less(b.x.key)
}

// hasEventAt reports whether e has an event pending at instant at.
func (m *refModel) hasEventAt(e *mEntity, at int64) bool {
	for _, ev := range m.entityEvents(nil, e) {
		if ev.at == at {
			return true
		}
	}
	return false
}

// first is the earliest of evs at or before to.
func first(evs []mEvent, to int64) (mEvent, bool) {
	if len(evs) == 0 {
		return mEvent{}, false
	}
	f := evs[0]
	for _, ev := range evs[1:] {
		if eventLess(ev, f) {
			f = ev
		}
	}
	return f, f.at <= to
}

// firstEvent is e's earliest event at or before to.
func (m *refModel) firstEvent(e *mEntity, to int64) (mEvent, bool) {
	if e.deleted {
		return mEvent{}, false
	}
	return first(m.entityEvents(nil, e), to)
}

// begin is the catch-up every broker call starts with (T3). Between calls
// nothing is due but at the end of time, where a deadline a call made is
// due at once.
func (m *refModel) begin() {
	if m.now == mNever-1 {
		m.advance(m.now)
	}
}

// advance moves the model's clock to `to`, applying every event due at or
// before it in time order (SEMANTICS T2, T3), each followed by the
// forwards it made (F2). Like the broker's, the model's clock stops at the
// last instant int64 nanoseconds hold.
func (m *refModel) advance(to int64) {
	to = min(to, mNever-1)
	m.catchingUp = true
	for {
		ev, ok := first(m.events(), to)
		if !ok {
			break
		}
		m.firing = ev.e
		m.fire(ev)
		m.flush()
	}
	m.catchingUp, m.firing = false, nil
	m.now = to
}

func (m *refModel) fire(ev mEvent) {
	e, x := ev.e, ev.x
	e.lastFired = ev.at
	switch ev.kind {
	case "idle":
		m.hits.IdleDeletion++
		if e.kind != mSub {
			m.idleGone[strings.ToLower(e.name)] = gone{e, ev.at}
		}
		m.noteSubsTie(e, ev.at)
		m.deleteEntity(e)
	case "lock":
		m.hits.LockExpiry++
		m.lockEnded(e, x, ev.at)
	case "expire":
		m.expire(e, x, ev.at)
	case "session":
		m.hits.SessionExpired++
		m.release(e, ev.sess, ev.at, true)
	case "activate":
		m.activate(e, x, ev.at)
	}
}

// activate is SEMANTICS S4: a new sequence number, EnqueuedTime = its time;
// a topic fans it out then (S5), a forwarding queue moves it on (F2).
func (m *refModel) activate(e *mEntity, x *mMsg, at int64) {
	m.hits.Activation++
	remove(&e.main, x)
	e.lastActivation = at
	e.seq++
	e.seqLog = append(e.seqLog, x.item)
	x.key = mKey{seq: e.seq}
	if e.kind == mTopic {
		m.fanOut(e, x, at)
	} else {
		m.enqueue(e, x, at, e.cfg.ttl)
	}
}

// deadlines lists every pending event instant after now, for the clock
// jumps, by kind of event: "lock", "expire", "activate", "session", "idle",
// and "dup" for the ends of duplicate detection windows.
func (m *refModel) deadlines() map[string][]int64 {
	out := map[string][]int64{}
	for _, ev := range m.events() {
		if ev.at > m.now && ev.at != mNever {
			out[ev.kind] = append(out[ev.kind], ev.at)
		}
	}
	for _, e := range m.all {
		for _, until := range e.dups {
			if !e.deleted && until > m.now {
				out["dup"] = append(out["dup"], until)
			}
		}
	}
	for k, l := range out {
		slices.SortFunc(l, cmp.Compare[int64])
		out[k] = slices.Compact(l)
	}
	return out
}

// wakeDeadline is the first pending instant that can change what a call
// blocked on e sees: an event of e, or its topic's activation or idle
// deletion (entityWake), or an earlier event of another entity that
// forwards a message to e or to its topic (F2, D4), which wakes a blocked
// call as a send does (T5, TestRegressionT5_ForwardWakesReceiver); mNever
// if none. A look-ahead copy steps through the instants of every entity's
// events before e's own until a forward reaches e.
func (m *refModel) wakeDeadline(e *mEntity) int64 {
	to := m.entityWake(e)
	ahead := m.clone()
	for {
		next := ahead.nextEventAt()
		if next >= to {
			return to
		}
		ahead.advance(next)
		if ce := ahead.all[e.id]; ce.lastDelivery == next || ce.topic != nil && ce.topic.lastDelivery == next {
			return next
		}
	}
}

// nextEventAt is the first instant after now at which anything is due, or
// mNever.
func (m *refModel) nextEventAt() int64 {
	f := mNever
	for _, ev := range m.events() {
		if ev.at > m.now && ev.at < f {
			f = ev.at
		}
	}
	return f
}

// entityWake is the first pending instant of e's own events, or of its
// topic's activations and idle deletion.
func (m *refModel) entityWake(e *mEntity) int64 {
	f := mNever
	for _, ev := range m.events() {
		mine := ev.e == e || (e.kind == mSub && ev.e == e.topic && (ev.kind == "activate" || ev.kind == "idle"))
		if mine && ev.at > m.now && ev.at < f {
			f = ev.at
		}
	}
	return f
}
