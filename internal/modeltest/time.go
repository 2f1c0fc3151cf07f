package modeltest

// The model's clock: every pending deadline, applied in time order.

import (
	"slices"
)

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
// before it in time order (SEMANTICS T2, T3). Like the broker's, the model's
// clock stops at the last instant int64 nanoseconds hold.
func (m *refModel) advance(to int64) {
	to = min(to, mNever-1)
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
