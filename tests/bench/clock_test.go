package bench

import (
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// countingClock counts the timers created through it, for
// BenchmarkScheduleThenJump's clock-timers (SEMANTICS T4: at most one per
// namespace; TestT4_OneTimerPerNamespace, in the root, asserts it).
type countingClock struct {
	clock.Clock
	timers atomic.Int64
}

func (c *countingClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	c.timers.Add(1)
	return c.Clock.AfterFunc(d, f)
}

func (c *countingClock) Timer(d time.Duration) *clock.Timer {
	c.timers.Add(1)
	return c.Clock.Timer(d)
}

func (c *countingClock) Ticker(d time.Duration) *clock.Ticker {
	c.timers.Add(1)
	return c.Clock.Ticker(d)
}

func (c *countingClock) After(d time.Duration) <-chan time.Time {
	c.timers.Add(1)
	return c.Clock.After(d)
}

func (c *countingClock) Tick(d time.Duration) <-chan time.Time {
	c.timers.Add(1)
	return c.Clock.Tick(d)
}
