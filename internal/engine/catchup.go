package engine

import (
	"time"

	"github.com/google/btree"
	"github.com/minibus-go/minibus/internal/store"
)

// Time in the engine (SEMANTICS T1–T5).
//
// Every entity keeps its own deadlines (lock ends, expiries, activations, its
// idle deadline) in its store. The scheduler knows, for each entity, a lower
// bound of its earliest deadline, in a btree ordered by (instant, entity
// id); sched.next is the smallest of them.
//
// Catch-up: every call first reads the clock and, when anything in the
// namespace is due (now >= sched.next, one atomic load on the fast path),
// processes everything due at or before now, in time order across entities:
// it takes the entity with the earliest bound and lets it process its own
// deadlines in (instant, key) order for as long as no other entity has an
// earlier one. Correctness never depends on a timer having fired.
//
// The one timer: while some receiver is blocked (T5), the broker keeps one
// clock timer armed at the earliest bound of the entities that receiver
// waits on (its queue or subscription, and a subscription's topic), and of
// the entities that forward, with a forwarding subscription's topic: what
// they forward may arrive where it waits. Its callback runs the catch-up,
// which wakes the receivers whose messages became available, and re-arms.
// With no blocked receiver no timer is armed at all, so a mock clock jump
// over a million deadlines fires nothing and costs nothing until the next
// call; and a receiver blocked on one queue does not make the timer fire
// for every deadline of the entities that forward nothing
// (benbjohnson/clock's Mock sleeps 1 ms of real time per timer it fires).
//
// Lower bounds: an entity registers a new deadline only when it is earlier
// than its registered bound. Deadlines that go away (a completed message's
// lock end) leave the bound early; the catch-up then visits the entity once,
// finds nothing due and registers its true earliest deadline. So the common
// send, receive and complete never touch the scheduler's lock.

// now reads the clock and catches up: when it returns, everything in the
// namespace that was due at or before the returned instant has happened
// (SEMANTICS T3, I5).
func (b *Broker) now() int64 {
	now := b.clockNow()
	if now >= b.sched.next.Load() || b.sched.running.Load() {
		b.catchUp(now)
	}
	return now
}

// CatchUp makes everything due at or before the clock's now happen
// (SEMANTICS T3), and delivers what that forwarded; it returns once the
// observer has seen every event so far.
func (b *Broker) CatchUp() {
	if b.life.closed() {
		return
	}
	c := b.call(endObserved)
	c.since = 0 // every event so far
	defer c.exit(nil)
	b.now()
}

// catchUp processes every deadline due at or before now, in time order
// across entities (SEMANTICS T3), then delivers the events, outside the
// catch-up: an observer may wait for a call, which waits for a running
// catch-up.
func (b *Broker) catchUp(now int64) {
	since := b.events.mark()
	b.catchUpLocked(now)
	b.deliverEvents(since)
}

func (b *Broker) catchUpLocked(now int64) {
	s := &b.sched
	s.catchMu.Lock()
	s.running.Store(true)
	defer func() {
		s.running.Store(false)
		s.catchMu.Unlock()
	}()
	for {
		s.mu.Lock()
		it, ok := s.tree.Min()
		if !ok || it.due > now {
			s.mu.Unlock()
			return
		}
		s.tree.DeleteMin()
		it.e.schedDue.Store(store.Never)
		if nx, ok := s.tree.Min(); ok {
			s.next.Store(nx.due)
		} else {
			s.next.Store(store.Never)
		}
		s.mu.Unlock()
		it.e.catchUp(now)
		b.flushForwards()
	}
}

// catchUp is the namespace catch-up's visit: process what is due at or
// before now while no other entity has an earlier deadline, then register
// the next one.
func (e *Entity) catchUp(now int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.deleted.Load() {
		return
	}
	e.inCatchUp = true
	e.advanceLocked(now, true)
	e.inCatchUp = false
	e.rescheduleLocked() // advanceLocked's registration was skipped
	// Only as far as e has acted (instant: a call that read the clock
	// before this catch-up acts at its own reading, and finds the ids
	// remembered then) and the namespace is caught up (a message forwarded
	// from an entity whose deadlines come first arrives at its own instant):
	// either is a duplicate of an id remembered until after it (SEMANTICS
	// DD1, T3).
	e.pruneDupsLocked(min(now, e.instant, e.b.sched.next.Load()))
}

// advanceLocked processes e's deadlines due at or before now in (instant,
// key) order, and deletes e at its idle deadline (SEMANTICS T3, A3). With
// global set it stops at the namespace's next deadline elsewhere, so that
// events across entities happen in time order.
func (e *Entity) advanceLocked(now int64, global bool) {
	if e.b.replay != nil {
		return // the log holds what happened (replay.go)
	}
	for !e.deleted.Load() {
		d := e.st.Next()
		l, held := e.sessions.next()
		idle := e.idleDueLocked()
		at := min(d.At, l.until, idle)
		if at > now || (global && at > e.b.sched.next.Load()) {
			break
		}
		e.instant = max(e.instant, at)
		switch {
		case d.At == at: // a message's deadline, before a session's at the same instant
			e.deadlineLocked(d)
		case held && l.until == at:
			if s := e.sessions.byID[l.id]; s.renewUntil > at {
				e.renewSessionLocked(s, at) // a session processor's renewal
			} else {
				e.releaseSessionLocked(s, at, true) // SEMANTICS SS5
			}
		default:
			e.b.log.Info("minibus: deleted on idle", "entity", e.describe())
			e.deleteRecLocked(at)
		}
		if global && e.b.outbox.n.Load() > 0 {
			break // deliver first: the destinations' deadlines may come next (T3)
		}
	}
	e.rescheduleLocked()
}

// pruneDupsLocked forgets the ids whose window ended at or before at,
// unless a forward is on its way: it left at an instant of its own, maybe
// earlier, and must find the ids remembered then (SEMANTICS DD1, T3). The
// next entry or catch-up with nothing on its way prunes instead.
func (e *Entity) pruneDupsLocked(at int64) {
	if e.dups != nil && e.b.outbox.n.Load() == 0 {
		e.dups.prune(at)
	}
}

// nextDueLocked is e's earliest pending event, or store.Never.
func (e *Entity) nextDueLocked() int64 {
	if e.deleted.Load() {
		return store.Never
	}
	l, _ := e.sessions.next()
	return min(e.st.Next().At, l.until, e.idleDueLocked())
}

// idleDueLocked is the instant e is deleted for idleness (SEMANTICS A3), or
// store.Never. A queue or topic with pending scheduled messages is never
// idle (A2); its idle time counts from its last scheduled activation too.
func (e *Entity) idleDueLocked() int64 {
	if e.cfg.AutoDeleteOnIdle == 0 || e.cfg.ForwardTo != "" || e.deleted.Load() {
		return store.Never // a forwarding source is never idle (SEMANTICS A4)
	}
	if e.kind != KindSubscription && e.st.Count(store.Main, store.Scheduled) > 0 {
		return store.Never
	}
	last := max(e.lastActivity.Load(), e.lastActivation)
	return after(last, int64(e.cfg.AutoDeleteOnIdle))
}

// rescheduleLocked refreshes localNext and the scheduler's bound after e's
// deadlines or idle settings changed.
func (e *Entity) rescheduleLocked() {
	e.localNext = e.nextDueLocked()
	if e.localNext != store.Never {
		e.b.register(e, e.localNext)
	}
}

// noteDueLocked makes sure e is caught up at due: a new deadline.
func (e *Entity) noteDueLocked(due int64) {
	if due < e.localNext {
		e.localNext = due
	}
	e.b.register(e, due)
}

// rescheduleIdleLocked moves the idle deadline after an activity. The
// scheduler's bound is a lower bound (I6), so a later idle deadline needs no
// registration; only a first one does (an entity with nothing else due).
func (e *Entity) rescheduleIdleLocked() {
	if e.cfg.AutoDeleteOnIdle != 0 && e.localNext == store.Never {
		e.rescheduleLocked()
	}
}

func lessSched(a, b schedItem) bool {
	if a.due != b.due {
		return a.due < b.due
	}
	return a.id < b.id
}

func (s *scheduler) init() {
	s.tree = btree.NewG(16, lessSched)
	s.watched = make(map[*Entity]struct{})
	s.forwarders = make(map[*Entity]struct{})
	s.next.Store(store.Never)
	s.armedAt.Store(store.Never)
}

// register makes sure the scheduler's bound for e is at or before due.
// Called with e.mu held.
func (b *Broker) register(e *Entity, due int64) {
	if e.inCatchUp || due >= e.schedDue.Load() {
		return
	}
	s := &b.sched
	s.mu.Lock()
	if old := e.schedDue.Load(); due < old {
		if old != store.Never {
			s.tree.Delete(schedItem{due: old, id: e.id})
		}
		s.tree.ReplaceOrInsert(schedItem{due: due, id: e.id, e: e})
		e.schedDue.Store(due)
		if due < s.next.Load() {
			s.next.Store(due)
		}
	}
	s.mu.Unlock()
	if (e.watchers.Load() > 0 || s.blocked.Load() > 0 && e.feedsForwardsLocked()) && due < s.armedAt.Load() {
		b.arm()
	}
}

// feedsForwardsLocked reports whether e's deadlines may forward a message:
// e forwards, or it is a topic one of whose subscriptions forwards what an
// activation fans out to it (SEMANTICS S5, F2). Called with e.mu held.
func (e *Entity) feedsForwardsLocked() bool {
	if e.forwards.Load() {
		return true
	}
	for _, s := range e.subs {
		if s.forwards.Load() && !s.deleted.Load() {
			return true
		}
	}
	return false
}

// noteForwarding tells the scheduler whether e, configured as c, forwards.
// An entity that starts to forward while a receiver blocks arms the timer
// for its deadlines and its topic's, as register would have (SEMANTICS
// T5). Called with e.mu held, or before e is shared.
func (b *Broker) noteForwarding(e *Entity, c Config) {
	forwards := c.ForwardTo != "" || c.ForwardDeadLetteredTo != ""
	if e.forwards.Load() == forwards {
		return
	}
	s := &b.sched
	s.mu.Lock()
	if forwards {
		s.forwarders[e] = struct{}{}
	} else {
		delete(s.forwarders, e)
	}
	e.forwards.Store(forwards)
	s.mu.Unlock()
	if forwards && s.blocked.Load() > 0 && forwarderDue(e) < s.armedAt.Load() {
		b.arm()
	}
}

// forwarderDue is the earliest bound of a forwarding entity's deadlines and
// of its topic's.
func forwarderDue(x *Entity) int64 {
	due := x.schedDue.Load()
	if x.topic != nil && !x.topic.deleted.Load() {
		due = min(due, x.topic.schedDue.Load())
	}
	return due
}

// watch counts a receiver blocked on e, and on a subscription's topic, and
// reports whether a deadline it waits for is already due: then the caller
// catches up instead of blocking. unwatch undoes it.
func (b *Broker) watch(e *Entity) (due bool) {
	b.sched.blocked.Add(1)
	target := b.forwardersNext()
	for _, x := range [2]*Entity{e, e.topic} {
		if x == nil {
			continue
		}
		x.watchers.Add(1)
		if !x.inWatchSet.Load() {
			s := &b.sched
			s.mu.Lock()
			s.watched[x] = struct{}{}
			x.inWatchSet.Store(true)
			s.mu.Unlock()
		}
		target = min(target, x.schedDue.Load())
	}
	if target == store.Never {
		return false
	}
	if target <= b.clockNow() {
		return true
	}
	return target < b.sched.armedAt.Load() && b.arm()
}

func (b *Broker) unwatch(e *Entity) {
	b.sched.blocked.Add(-1)
	e.watchers.Add(-1)
	if e.topic != nil {
		e.topic.watchers.Add(-1)
	}
}

// forwardersNext is the earliest bound of the entities that forward, and
// of their topics.
func (b *Broker) forwardersNext() int64 {
	s := &b.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.forwardersNextLocked()
}

func (s *scheduler) forwardersNextLocked() int64 {
	next := store.Never
	for x := range s.forwarders {
		if x.deleted.Load() {
			delete(s.forwarders, x)
			continue
		}
		next = min(next, forwarderDue(x))
	}
	return next
}

// watchedNext is the earliest bound of the entities receivers wait on,
// and, while any receiver waits, of those that forward.
func (b *Broker) watchedNext() int64 {
	s := &b.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	next := store.Never
	if s.blocked.Load() > 0 {
		next = s.forwardersNextLocked()
	}
	for x := range s.watched {
		if x.deleted.Load() {
			delete(s.watched, x)
			continue
		}
		if x.watchers.Load() > 0 {
			next = min(next, x.schedDue.Load())
		}
	}
	return next
}

// arm sets the timer for the earliest deadline blocked receivers wait on.
// It reports true when that deadline is already due: the caller must catch
// up instead of waiting for a timer that the clock may never fire
// (benbjohnson/clock does not fire timers of d <= 0 until it is advanced).
// Finding the deadline and setting the timer happen under timerMu, so that
// of two concurrent calls the later one sets the timer for what is earliest
// then.
func (b *Broker) arm() (due bool) {
	s := &b.sched
	s.timerMu.Lock()
	next := b.watchedNext()
	if next == store.Never || b.life.closed() {
		s.timerMu.Unlock()
		return false
	}
	now := b.clockNow()
	if next <= now {
		s.timerMu.Unlock()
		return true
	}
	// A timer runs from the clock as it is when it is set, which may be
	// later than the reading its duration came from (a mock's Add in another
	// goroutine): it would then fire that much late, after a deadline that
	// a blocked receiver waits for (SEMANTICS T5). So when the clock moved
	// while the timer was being set, set it again from the new reading.
	var read int64
	for try := 0; ; try++ {
		b.setTimerLocked(time.Duration(next - now))
		read = now
		now = b.clockNow()
		if now == read || now >= next || try == armRetries {
			break
		}
	}
	// The timer fires at most as late as the clock moved since read: armedAt
	// says so, so that a receiver that blocks later for an earlier deadline
	// arms it again rather than wait for it (watch, register).
	at := after(next, now-read)
	if now >= next {
		// The clock passed next meanwhile: the timer is set to fire at once
		// (a mock's, when the clock next moves), for the receivers already
		// blocked, whose wake-up a caller that cannot catch up itself
		// (register, noteForwarding) would otherwise leave to a late timer.
		b.setTimerLocked(0)
		at = b.clockNow()
	}
	s.armedAt.Store(at)
	s.timerMu.Unlock()
	// The clock may have passed next while the timer was being set: then
	// the timer might not fire in this Add, so the caller catches up itself.
	return next <= b.clockNow()
}

// armRetries bounds how often arm sets the timer again because the clock
// moved meanwhile: a real clock always moves a little.
const armRetries = 2

// setTimerLocked sets the timer to fire after d; timerMu is held.
func (b *Broker) setTimerLocked(d time.Duration) {
	s := &b.sched
	if s.timer == nil {
		s.timer = b.clock.AfterFunc(d, b.onTimer)
	} else {
		s.timer.Reset(d)
	}
}

// onTimer is the timer's callback: catch up, which wakes the receivers whose
// messages became available, and re-arm while receivers are still blocked.
func (b *Broker) onTimer() {
	if !b.life.add() {
		return
	}
	defer b.life.done()
	b.sched.armedAt.Store(store.Never)
	for {
		b.catchUp(b.clockNow())
		if !b.arm() {
			return
		}
	}
}

// stopTimer stops the timer for good (Close): arm checks the closed state
// under timerMu, so no timer is armed after this.
func (s *scheduler) stopTimer() {
	s.timerMu.Lock()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timerMu.Unlock()
}
