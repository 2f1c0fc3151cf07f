package minibus

import (
	"time"

	"github.com/benbjohnson/clock"
)

// Time in minibus is the namespace clock's (SEMANTICS T1). Every instant the
// broker keeps (EnqueuedTime, ExpiresAt, LockedUntil, ScheduledEnqueueTime,
// idle deadlines) is read from it, and every call first makes happen, in
// time order, everything due at or before the clock's now (T3): with a mock
// clock, time moves only when the test moves it, and a call made after
// mock.Add(d) sees exactly the state d later. The clock stops at the last
// instant int64 nanoseconds hold, in 2262; a finite deadline stays finite
// however far it is (E2).

// WithClock sets the clock every time rule of the namespace reads (SEMANTICS
// T1). The default is the real clock, clock.New(). With a clock.NewMock(),
// time moves only when the test calls Add or Set, and every call made after
// that sees exactly what is due by then (SEMANTICS T3). A nil clock keeps the
// default.
func WithClock(c clock.Clock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

// Now returns the namespace clock's now (SEMANTICS T1): the time every
// instant of the namespace is measured against (EnqueuedTime, ExpiresAt,
// LockedUntil, a schedule's due time). Applications under test must take
// their time from here, or from the mock clock given to [WithClock], never
// from time.Now: on a mock clock, a message scheduled for
// time.Now().Add(time.Hour) is due an hour after the wall clock's now, not
// an hour after the mock's, and moving the mock an hour does not activate
// it. Reading it changes nothing. A nil namespace reads the zero time; a
// closed one still reads its clock.
func (ns *Namespace) Now() time.Time {
	if ns == nil || ns.b == nil {
		return time.Time{}
	}
	return ns.b.Now()
}

// Clock returns the namespace's clock: the one given to [WithClock], or the
// real one. It is for code that must wait on the namespace's time, as a
// protocol layer's own timeouts do (a timer on it fires when a mock is
// moved past its end). Read the time with [Namespace.Now]; move a mock
// through your own handle. A nil namespace returns the real clock.
func (ns *Namespace) Clock() clock.Clock {
	if ns == nil || ns.b == nil {
		return clock.New()
	}
	return ns.b.Clock()
}
