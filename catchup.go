package minibus

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/btree"
	"github.com/minibus-go/minibus/internal/store"
)

// Time in minibus (SEMANTICS T1–T5, STYLE.md practice 11).
//
// Every entity keeps its own deadlines (lock ends, expiries, activations, its
// idle deadline) in a deadline index. The namespace scheduler knows, for each
// entity, a lower bound of its earliest deadline, in a btree ordered by
// (instant, entity id); sched.next is the smallest of them.
//
// Catch-up: every public call first reads the clock and, when anything in
// the namespace is due (now >= sched.next, one atomic load on the fast path),
// processes everything due at or before now, in time order across entities:
// it takes the entity with the earliest bound and lets it process its own
// deadlines in (instant, key) order for as long as no other entity has an
// earlier one. Correctness never depends on a timer having fired.
//
// The one timer: while some receiver is blocked (T5), the namespace keeps one
// clock timer armed at the earliest bound of the entities that receiver
// waits on (its queue or subscription, and a subscription's topic). Its
// callback runs the catch-up, which wakes the receivers whose messages
// became available, and re-arms. With no blocked receiver no timer is armed
// at all, so a mock clock jump over a million deadlines fires nothing and
// costs nothing until the next call; and a receiver blocked on one queue
// does not make the timer fire for every deadline of the others
// (benbjohnson/clock's Mock sleeps 1 ms of real time per timer it fires).
//
// Lower bounds: an entity registers a new deadline only when it is earlier
// than its registered bound. Deadlines that go away (a completed message's
// lock end) leave the bound early; the catch-up then visits the entity once,
// finds nothing due and registers its true earliest deadline. So the common
// send, receive and complete never touch the scheduler's lock.

// nanos converts t to the broker's int64 instants, clamping instants outside
// what int64 nanoseconds can hold.
func nanos(t time.Time) int64 {
	switch {
	case t.Before(minInstant):
		return math.MinInt64 + 1
	case t.After(maxInstant):
		return math.MaxInt64 - 1
	}
	return t.UnixNano()
}

var (
	minInstant = time.Unix(0, math.MinInt64+1)
	maxInstant = time.Unix(0, math.MaxInt64-1)
)

// toTime converts an instant back; store.Never and store.Unset give the zero
// time.
func (ns *Namespace) toTime(n int64) time.Time {
	if n == store.Never || n == store.Unset {
		return time.Time{}
	}
	return time.Unix(0, n).In(ns.loc)
}

// addSat returns t+d, or store.Never when that passes what int64 holds
// (SEMANTICS E2: no overflow for huge TTLs).
func addSat(t, d int64) int64 {
	if d > 0 && t > store.Never-d {
		return store.Never
	}
	return t + d
}

type schedItem struct {
	due int64
	id  uint64
	e   *entity
}

func lessSched(a, b schedItem) bool {
	if a.due != b.due {
		return a.due < b.due
	}
	return a.id < b.id
}

// scheduler is the namespace's view of every entity's earliest deadline, and
// its one timer.
type scheduler struct {
	// next is the earliest registered instant, or store.Never.
	next atomic.Int64

	// catchMu serializes catch-ups. It is taken with no other lock held.
	catchMu sync.Mutex

	// mu guards tree. It is a leaf lock: nothing is locked under it.
	mu   sync.Mutex
	tree *btree.BTreeG[schedItem]

	// watched holds, under mu, every entity a receiver has ever blocked on
	// (deleted ones are dropped by arm). The timer is armed only for the
	// deadlines of those whose watchers count is not zero.
	watched map[*entity]struct{}
	// armedAt is the instant the timer is armed for, or store.Never.
	armedAt atomic.Int64

	// timerMu guards timer and stopped. It is a leaf lock but for the clock's
	// own lock.
	timerMu sync.Mutex
	timer   *clock.Timer
	stopped bool
}

func (s *scheduler) init() {
	s.tree = btree.NewG(16, lessSched)
	s.watched = make(map[*entity]struct{})
	s.next.Store(store.Never)
	s.armedAt.Store(store.Never)
}

// register makes sure the scheduler's bound for e is at or before due.
// Called with e.mu held.
func (ns *Namespace) register(e *entity, due int64) {
	if e.inCatchUp || due >= e.schedDue.Load() {
		return
	}
	s := &ns.sched
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
	if e.watchers.Load() > 0 && due < s.armedAt.Load() {
		ns.arm()
	}
}

// watch counts a receiver blocked on e, and on a subscription's topic, and
// reports whether a deadline it waits for is already due: then the caller
// catches up instead of blocking. unwatch undoes it.
func (ns *Namespace) watch(e *entity) (due bool) {
	target := store.Never
	for _, x := range [2]*entity{e, e.topic} {
		if x == nil {
			continue
		}
		x.watchers.Add(1)
		if !x.inWatchSet.Load() {
			s := &ns.sched
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
	if target <= ns.clockNow() {
		return true
	}
	return target < ns.sched.armedAt.Load() && ns.arm()
}

func (ns *Namespace) unwatch(e *entity) {
	e.watchers.Add(-1)
	if e.topic != nil {
		e.topic.watchers.Add(-1)
	}
}

// watchedNext is the earliest bound of the entities receivers wait on.
func (ns *Namespace) watchedNext() int64 {
	s := &ns.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	next := store.Never
	for x := range s.watched {
		if x.gone.Load() {
			delete(s.watched, x)
			continue
		}
		if x.watchers.Load() > 0 {
			next = min(next, x.schedDue.Load())
		}
	}
	return next
}

// clockNow reads the namespace clock as an instant: the clock's time at
// NewNamespace plus clock.Since of it. That is exactly the clock's Now for a
// mock; for the real clock it reads only the monotonic clock, about half
// the cost of time.Now, and follows neither steps of the wall clock nor
// leap smearing, as a broker's own clock would not.
func (ns *Namespace) clockNow() int64 {
	return ns.epochNanos + int64(ns.clock.Since(ns.epoch))
}

// now reads the clock and catches up: when it returns, everything in the
// namespace that was due at or before the returned instant has happened
// (SEMANTICS T3).
func (ns *Namespace) now() int64 {
	now := ns.clockNow()
	if now >= ns.sched.next.Load() {
		ns.catchUp(now)
	}
	return now
}

// catchUp processes every deadline due at or before now, in time order
// across entities (SEMANTICS T3).
func (ns *Namespace) catchUp(now int64) {
	s := &ns.sched
	s.catchMu.Lock()
	defer s.catchMu.Unlock()
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
	}
}

// arm sets the timer for the earliest deadline blocked receivers wait on.
// It reports true when that deadline is already due: the caller must catch
// up instead of waiting for a timer that the clock may never fire
// (benbjohnson/clock does not fire timers of d <= 0 until it is advanced).
func (ns *Namespace) arm() (due bool) {
	s := &ns.sched
	next := ns.watchedNext()
	if next == store.Never {
		return false
	}
	s.timerMu.Lock()
	if s.stopped {
		s.timerMu.Unlock()
		return false
	}
	now := ns.clockNow()
	if next <= now {
		s.timerMu.Unlock()
		return true
	}
	d := time.Duration(next - now)
	if s.timer == nil {
		s.timer = ns.clock.AfterFunc(d, ns.onTimer)
	} else {
		s.timer.Reset(d)
	}
	s.armedAt.Store(next)
	s.timerMu.Unlock()
	// The clock may have passed next while the timer was being set (a mock's
	// Add runs in another goroutine): then the timer might not fire in this
	// Add, so the caller catches up itself.
	return next <= ns.clockNow()
}

// onTimer is the timer's callback: catch up, which wakes the receivers whose
// messages became available, and re-arm while receivers are still blocked.
func (ns *Namespace) onTimer() {
	if !ns.life.enter() {
		return
	}
	defer ns.life.exit()
	ns.sched.armedAt.Store(store.Never)
	for {
		ns.catchUp(ns.clockNow())
		if !ns.arm() {
			return
		}
	}
}

// stopTimer stops the timer for good (Close).
func (s *scheduler) stopTimer() {
	s.timerMu.Lock()
	s.stopped = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timerMu.Unlock()
}

// lifecycle tracks the goroutines the namespace owns (timer callbacks) so
// that Close can wait for them.
type lifecycle struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (l *lifecycle) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.wg.Add(1)
	return true
}

func (l *lifecycle) exit() { l.wg.Done() }

// close marks the lifecycle closed and reports whether it was open.
func (l *lifecycle) close() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.closed = true
	return true
}
