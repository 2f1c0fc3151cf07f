package engine

import (
	"time"

	"github.com/minibus-go/minibus/internal/store"
)

// Instants are int64 nanoseconds since the Unix epoch (store.Never and
// store.Unset are the two values outside time). What int64 nanoseconds
// cannot hold is clamped: the clock and every finite deadline stop at
// maxInstant, in 2262, so that a clock moved past it still ends locks and
// expires messages, and a finite time to live stays finite (SEMANTICS E2).
const (
	maxInstant = store.Never - 1
	minInstant = store.Unset + 1
)

// Instant converts t to an instant, clamped.
func Instant(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, minInstant)):
		return minInstant
	case t.After(time.Unix(0, maxInstant)):
		return maxInstant
	}
	return t.UnixNano()
}

// Time converts an instant back to a time in the clock's location;
// store.Never and store.Unset give the zero time.
func (b *Broker) Time(n int64) time.Time {
	if n == store.Never || n == store.Unset {
		return time.Time{}
	}
	return time.Unix(0, n).In(b.loc)
}

// after returns the instant d >= 0 after t, clamped to maxInstant: a
// finite deadline stays finite.
func after(t, d int64) int64 {
	if t > maxInstant-d {
		return maxInstant
	}
	return t + d
}

// clockNow reads the namespace clock as an instant: the clock's time at New
// plus clock.Since of it, clamped. That is exactly the clock's Now for a
// mock; for the real clock it reads only the monotonic clock, about half the
// cost of time.Now, and follows neither steps of the wall clock nor leap
// smearing, as a broker's own clock would not.
func (b *Broker) clockNow() int64 {
	d := int64(b.clock.Since(b.epoch))
	switch {
	case d > 0 && b.epochNanos > maxInstant-d:
		return maxInstant
	case d < 0 && b.epochNanos < minInstant-d:
		return minInstant
	}
	return b.epochNanos + d
}
