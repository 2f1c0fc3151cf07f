package engine

import (
	"github.com/minibus-go/minibus/internal/store"
)

// How events flow (the broker's events, broker.go):
//
// Transitions push events under their entity's mutex, so each entity's events
// are in the order of its state; each event gets the next ticket. They wait
// in their entity's lane, by lower-case path, so that an entity deleted and
// created again keeps its order. A call hands the waiting events to the
// observer itself once it holds no entity's mutex (deliverEvents), with no
// broker mutex held while the observer runs: it takes a batch, the waiting
// events of one free lane, and observes them in order while the lane is
// busy; batches of different lanes may go out at once from different
// goroutines. So an observer that waits for another goroutine's call does
// not hold up that call's events, unless they are of the entity whose event
// the observer is handling.
//
// Free lanes with waiting events are ready, by the ticket of their first
// one; a call takes the first ready lane, and of it only the events before
// the next ready lane's first, so that the events that one goroutine pushed
// reach the observer in ticket order when no other delivery runs. An event
// counts as handed over when its observer call begins, not when its batch is
// taken: an observer blocked on one event of a batch holds up the rest of
// the batch as it would hold up the rest of the lane.
//
// A call returns once every event pushed before it ends has been handed
// over, and every event pushed since it began (its own among them) has been
// observed: another goroutine may have taken them, and the call waits until
// that delivery is over. mu is a leaf mutex.
//
// The common case, one goroutine that pushes the events of one call and
// then delivers them, takes mu twice: once to push, once to take the batch;
// knowing then that nothing else is left to wait for, the call returns
// after its batch without taking mu again. The end of a batch is a store to
// its lane's at, which the next push to the lane finishes, or, when events
// wait after the batch or too many batches are busy, the next call that
// looks (reapLocked), unless a call waits: then the goroutine that observed
// it takes mu to finish it and wake the waiters (endLocked), as it does when
// it has more to do.
//
// The lanes' events are in rings, and the ready and busy lanes in lists of
// numbers, so that a delivery writes few pointers: the write barrier of a
// collection that runs meanwhile would cost more than the writes. With
// several goroutines, mu is what they queue for, and each cache line that
// goes from core to core while it is held lengthens the queue: what one
// goroutine reads of another's busy lane is in the lane's first line, not
// in its ring; lanes do not share lines; a call reads no lane whose batch
// it need not finish.

func (ev *events) init(on bool, observe func(*Event)) {
	ev.on, ev.observe = on, observe
	ev.ended.L = &ev.mu
	if on {
		ev.lanes = make(map[string]*lane)
		ev.shared = ev.newLaneLocked()
	}
}

// laneOf returns the lane of the entity at path, made there; nil when
// events are not wanted. The lane of an entity deleted there whose events
// are not all observed yet serves the new one, after them: the events of a
// path stay in order.
func (ev *events) laneOf(path string) *lane {
	if ev.lanes == nil {
		return nil
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	key := nameKey(path)
	l := ev.lanes[key]
	if l == nil {
		l = ev.newLaneLocked()
		l.key = key
		ev.lanes[key] = l
	}
	l.gone = false
	return l
}

// newLaneLocked returns a lane released before, or a new one.
func (ev *events) newLaneLocked() *lane {
	if n := len(ev.free); n > 0 {
		l := ev.all[ev.free[n-1]]
		ev.free = ev.free[:n-1]
		return l
	}
	l := &lane{id: int32(len(ev.all))}
	ev.all = append(ev.all, l)
	ev.slots = append(ev.slots, -1)
	return l
}

// releaseLocked releases l, gone, free and with every event observed: its
// path no longer has it. It keeps its number, and stays a valid lane: an
// event of its deleted entity that comes later (none should) is still
// observed, in the order of the lane's next path.
func (ev *events) releaseLocked(l *lane) {
	if ev.lanes[l.key] == l {
		delete(ev.lanes, l.key)
	}
	l.gone, l.key, l.q = false, "", nil
	ev.free = append(ev.free, l.id)
}

// mark returns the ticket of the last event pushed: a call that begins
// reads it, and waits at its end for the events after it to be observed.
func (ev *events) mark() uint64 { return ev.last.Load() }

// push records an event of the entity of lane l, under its mutex, in state
// order (I8).
func (ev *events) push(l *lane, kind EventKind, at int64, path string, q store.Queue, seq int64, id string,
	deliveries uint32, reason string) {
	if l == nil {
		l = ev.shared // an entity made before events were wanted
	}
	ev.mu.Lock()
	if l.busy && l.at.Load() == l.mid {
		ev.finishLocked(l)
	}
	if l.tail-l.head == uint64(len(l.q)) {
		l.grow()
	}
	x := &l.q[l.tail&uint64(len(l.q)-1)]
	x.ticket = ev.last.Add(1)
	x.Kind, x.At, x.Entity, x.Queue, x.Seq, x.MessageID, x.Deliveries, x.Reason =
		kind, at, path, q, seq, id, deliveries, reason
	l.tail++
	ev.open++
	if kind == EventEntityDeleted && l != ev.shared {
		l.gone = true // released once this event is observed
	}
	if l.tail-l.mid == 1 {
		l.next = x.ticket
		if l.busy {
			ev.stallLocked(l)
		} else {
			ev.readyLocked(l)
		}
	}
	ev.mu.Unlock()
}

// grow doubles l's ring, full.
func (l *lane) grow() {
	q := make([]queued, max(4, 2*len(l.q)))
	for p := l.head; p < l.tail; p++ {
		q[p&uint64(len(q)-1)] = l.q[p&uint64(len(l.q)-1)]
	}
	l.q = q // the old ring stays as it is: a batch may be read from it
}

// emitLocked records an event of message m at instant at.
func (e *Entity) emitLocked(kind EventKind, m *store.Message, q store.Queue, at int64, reason string) {
	if e.b.events.on {
		e.b.events.push(e.lane, kind, at, e.path, q, m.Key().Seq, m.ID(), m.Deliveries, reason)
	}
}

// emitKeyed is emitLocked for a message that is in no store: k is its key.
func (e *Entity) emitKeyed(kind EventKind, m *store.Message, k store.Key, q store.Queue, at int64, reason string) {
	if e.b.events.on {
		e.b.events.push(e.lane, kind, at, e.path, q, k.Seq, m.ID(), m.Deliveries, reason)
	}
}

// emitEntity records the creation or deletion of e at instant at.
func (e *Entity) emitEntity(kind EventKind, at int64) {
	if e.b.events.on {
		e.b.events.push(e.lane, kind, at, e.path, store.Main, 0, "", 0, "")
	}
}

// deliverEvents hands the waiting events to the observer and the logger
// until every event pushed so far has been handed over and every one pushed
// after ticket since has been observed. It hands over what it can itself,
// in ticket order, and waits for the deliveries of other goroutines that
// it needs. With since = 0 it waits for every event so far.
func (b *Broker) deliverEvents(since uint64) {
	ev := &b.events
	if !ev.on {
		return
	}
	waiting := false
	defer func() { // also when the observer panics
		if waiting {
			ev.waiters.Add(-1)
		}
	}()
	ev.mu.Lock()
	until := ev.last.Load()
	for {
		ev.reapLocked()
		if l := ev.takeLocked(until); l != nil {
			// Once this batch is observed, is there anything left to wait
			// for? Then this call is done without taking mu again, unless
			// a call waits for the batch.
			// The batch of a deleted entity's lane is finished at once,
			// to release the lane: no push to it will.
			done, gone := ev.settledLocked(since, until, l), l.gone
			b.handOver(l)
			if done && !gone && ev.waiters.Load() == 0 {
				return
			}
			ev.mu.Lock()
			ev.endLocked(l)
			if done {
				break
			}
			continue
		}
		if ev.settledLocked(since, until, nil) {
			break
		}
		if !waiting {
			// Counted, the goroutines that end a batch wake this one; look
			// once more, as one may have ended a batch just before.
			ev.waiters.Add(1)
			waiting = true
			continue
		}
		ev.ended.Wait()
	}
	ev.mu.Unlock()
}

// takeLocked takes a batch, up to ticket until, from the first ready lane:
// its waiting events before the first of the next ready lane. It returns
// the lane, now busy, or nil when no ready lane has an event up to until.
func (ev *events) takeLocked(until uint64) *lane {
	if len(ev.ready) == 0 || ev.ready[0].first > until {
		return nil
	}
	l := ev.popReadyLocked()
	limit := until
	if len(ev.ready) > 0 {
		limit = min(limit, ev.ready[0].first)
	}
	mask := uint64(len(l.q) - 1)
	l.first, l.second = l.next, 0
	end := l.mid + 1
	for ; end < l.tail; end++ {
		t := l.q[end&mask].ticket
		if t > limit {
			l.next = t
			break
		}
		if l.second == 0 {
			l.second = t
		}
	}
	l.mid = end
	l.busy = true
	ev.slots[l.id] = int32(len(ev.busy))
	ev.busy = append(ev.busy, l.id)
	if end < l.tail {
		ev.stallLocked(l) // its next event comes after another lane's
	}
	return l
}

// handOver gives the batch of l, just taken, to the logger and the observer
// with ev.mu unlocked, and marks its end. When the observer panics, the
// events after the one it panicked on wait again.
func (b *Broker) handOver(l *lane) {
	ev := &b.events
	q, first, end := l.q, l.head, l.mid
	ev.mu.Unlock()
	p := first
	defer func() {
		if p < end { // the observer panicked
			ev.mu.Lock()
			ev.abortLocked(l, p+1)
			ev.mu.Unlock()
		}
	}()
	debug := b.debugging()
	mask := uint64(len(q) - 1)
	for ; p < end; p++ {
		if p > first {
			l.at.Store(p)
		}
		x := &q[p&mask].Event
		if debug {
			b.logEvent(x)
		}
		if ev.observe != nil {
			ev.observe(x)
		}
	}
	l.at.Store(end)
}

// endLocked ends the batch of l that this goroutine observed, if no other
// has ended it yet, and wakes the calls that wait.
func (ev *events) endLocked(l *lane) {
	if l.busy && l.at.Load() == l.mid {
		ev.finishLocked(l)
	}
	if ev.waiters.Load() > 0 {
		ev.ended.Broadcast()
	}
}

// maxLingering is how many batches may be busy before a call finishes every
// one that is over (reapLocked): more than that, and the quiet lanes' over
// batches would pile up, for every check to read.
const maxLingering = 8

// reapLocked finishes the stalled batches that are over: their waiting
// events become ready. Another over batch waits for the next push to its
// lane to finish it (reading the lane, which another core wrote last, would
// lengthen the hold of mu for nothing), unless more than maxLingering
// batches are busy.
func (ev *events) reapLocked() {
	if len(ev.busy) > maxLingering {
		for i := len(ev.busy) - 1; i >= 0; i-- {
			if l := ev.all[ev.busy[i]]; l.at.Load() == l.mid {
				ev.finishLocked(l)
			}
		}
	}
	kept := ev.stalled[:0]
	for _, id := range ev.stalled {
		switch l := ev.all[id]; {
		case !l.busy || l.tail == l.mid:
			l.stalled = false // finished, or taken again whole
		case l.at.Load() == l.mid:
			l.stalled = false
			ev.finishLocked(l)
		default:
			kept = append(kept, id)
		}
	}
	ev.stalled = kept
}

// stallLocked notes that busy l has events waiting after its batch.
func (ev *events) stallLocked(l *lane) {
	if !l.stalled {
		l.stalled = true
		ev.stalled = append(ev.stalled, l.id)
	}
}

// finishLocked finishes l's batch, observed.
func (ev *events) finishLocked(l *lane) {
	ev.open -= int(l.mid - l.head)
	l.head = l.mid
	ev.freeLocked(l)
}

// abortLocked ends l's batch, whose events before position p have been
// observed: the others wait again.
func (ev *events) abortLocked(l *lane, p uint64) {
	ev.open -= int(p - l.head)
	l.head, l.mid = p, p
	if p < l.tail {
		l.next = l.q[p&uint64(len(l.q)-1)].ticket
	}
	l.at.Store(p)
	ev.freeLocked(l)
	if ev.waiters.Load() > 0 {
		ev.ended.Broadcast()
	}
}

// freeLocked makes l, whose batch is over, free again.
func (ev *events) freeLocked(l *lane) {
	l.busy = false
	i, last := ev.slots[l.id], len(ev.busy)-1
	moved := ev.busy[last]
	ev.busy[i], ev.slots[moved], ev.slots[l.id] = moved, i, -1
	ev.busy = ev.busy[:last]
	switch {
	case l.tail > l.mid:
		ev.readyLocked(l)
	case l.gone:
		ev.releaseLocked(l) // every event of the deleted entity is observed
	case len(l.q) > 64:
		l.q = nil // a long ring, now empty, holds no strings
	}
}

// settledLocked reports whether every event up to ticket until has been
// handed over and none after since is still being observed, once the batch
// of mine, if not nil, is over; reapLocked has run, and takeLocked has
// found nothing or mine.
func (ev *events) settledLocked(since, until uint64, mine *lane) bool {
	if mine != nil {
		if ev.open == int(mine.mid-mine.head) {
			return true
		}
		if len(ev.ready) > 0 && ev.ready[0].first <= until {
			return false
		}
	} else if ev.open == 0 {
		return true
	}
	for _, id := range ev.busy {
		l := ev.all[id]
		if l.tail > l.mid && l.next <= until {
			return false // after the batch
		}
		if l == mine {
			continue
		}
		// The ticket of the event being observed, and of the next one.
		t, u := l.first, l.second
		if p := l.at.Load(); p >= l.mid {
			continue // over
		} else if p > l.head {
			mask := uint64(len(l.q) - 1)
			t, u = l.q[p&mask].ticket, 0
			if p+1 < l.mid {
				u = l.q[(p+1)&mask].ticket
			}
		}
		if t > since && t <= until {
			return false // being observed
		}
		if u != 0 && u <= until {
			return false // later in the batch
		}
	}
	return true
}

// readyLocked adds l, free with waiting events, to the ready heap.
func (ev *events) readyLocked(l *lane) {
	h := append(ev.ready, readyLane{first: l.next, id: l.id})
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].first <= h[i].first {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	ev.ready = h
}

// popReadyLocked removes the first ready lane.
func (ev *events) popReadyLocked() *lane {
	h := ev.ready
	l := ev.all[h[0].id]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && h[c+1].first < h[c].first {
			c++
		}
		if h[i].first <= h[c].first {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	ev.ready = h
	return l
}

// logEvent writes x's debug line; the caller checked that the logger is
// enabled at Debug level.
func (b *Broker) logEvent(x *Event) {
	attrs := []any{"kind", x.Kind, "entity", x.Entity, "at", b.Time(x.At)}
	if x.Seq != 0 {
		attrs = append(attrs, "seq", x.Seq, "messageID", x.MessageID, "deliveries", x.Deliveries)
	}
	if x.Reason != "" {
		attrs = append(attrs, "reason", x.Reason)
	}
	b.log.Debug("minibus: event", attrs...)
}
