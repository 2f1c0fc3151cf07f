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

// after returns the instant d >= 0 after t, clamped to maxInstant: a
// finite deadline stays finite.
func after(t, d int64) int64 {
	if t > maxInstant-d {
		return maxInstant
	}
	return t + d
}
