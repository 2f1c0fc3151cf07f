package modeltest

// The state machine of the root's TestModel and FuzzModel: random
// operations applied to the broker and to the reference model (model.go)
// side by side, and everything the broker returns compared with what the
// model says (compare.go, check.go).

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/wal"
	"github.com/minibus-go/minibus/minibustest"
	"pgregory.net/rapid"
)

// hEnt pairs a broker handle with its model instance.
type hEnt struct {
	m *mEntity
	// stale: the handles are of a namespace that crashed and the instance
	// was deleted before, so no handle of the new one names it.
	stale bool
	q     *minibus.Queue
	t     *minibus.Topic
	s     *minibus.Subscription
}

// recvAPI is what a Receiver and a SessionReceiver share.
type recvAPI = minibustest.Receiver

// hRecv pairs a broker receiver, plain or of a session, with the model's.
type hRecv struct {
	r    recvAPI
	sess *minibus.SessionReceiver // nil for a plain receiver
	m    *mReceiver
	gone bool // of a namespace that crashed
}

// hTok is a lock token the broker handed out.
type hTok struct {
	obj  *minibus.ReceivedMessage // the message as returned, for settling by object
	recv *hRecv
	item int
}

// timerClock is the mock clock the broker runs on. The mock runs each timer
// callback in a goroutine of its own (benbjohnson/clock), where the broker
// catches up: a catch-up that runs beside the harness's calls can still be
// delivering forwards, due before now, when a call starts, which then sees
// them late (T3). So callbacks run only while the clock moves (gate), and
// a move waits until those that started have ended (quiesce).
type timerClock struct {
	*clock.Mock
	gate           sync.Mutex // held by the harness but while the clock moves
	started, ended atomic.Int64
}

func newTimerClock(mock *clock.Mock) *timerClock {
	c := &timerClock{Mock: mock}
	c.gate.Lock()
	return c
}

func (c *timerClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	return c.Mock.AfterFunc(d, func() {
		c.started.Add(1)
		defer c.ended.Add(1)
		c.gate.Lock()
		defer c.gate.Unlock()
		f()
	})
}

// add moves the mock clock by d and waits for the timer callbacks that
// started, in this move or (late) before it. The mock sleeps 1 ms after it
// starts a callback; one that starts later waits for the next move.
func (c *timerClock) add(d time.Duration) { c.open(func() { c.Mock.Add(d) }) }

// open lets timer callbacks run while f runs (a move of the clock, or the
// wait for a blocked call, which they may wake), then waits for those that
// started.
func (c *timerClock) open(f func()) {
	c.gate.Unlock()
	f()
	for c.started.Load() != c.ended.Load() {
		time.Sleep(20 * time.Microsecond)
	}
	c.gate.Lock()
}

// awaitBlocked waits up to limit for a blocked call's result on done, with
// the timer callbacks free to run (open). Meanwhile it fires, every few
// milliseconds, the timers due at the clock's time that the mock left
// unfired: a timer set while Mock.Add is between its last look at its
// timers and its move to the final time is due but never fired by that
// Add (benbjohnson/clock), and the broker, which read the clock before the
// move, waits for it. A timer that is not due, or was never set, still
// does not fire, so a call the broker fails to wake still shows (T5).
func awaitBlocked[T any](c *timerClock, done <-chan T, limit time.Duration) (res T, ok bool) {
	c.open(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		end := time.After(limit)
		for {
			select {
			case res = <-done:
				ok = true
				return
			case <-end:
				return
			case <-tick.C:
				c.Mock.Add(0)
			}
		}
	})
	return res, ok
}

// brokerStacks returns the stacks of the goroutines in the broker's code,
// for a blocked call that did not wake: where each one waits says whether
// the wake-up was never sent (a receive parked in its select) or the call
// is held up on its way (a lock, a catch-up, the events).
func brokerStacks() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "minibus/internal/engine.") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

type machine struct {
	ctx   context.Context
	clk   *timerClock
	ns    *minibus.Namespace
	m     *refModel
	ents  []*hEnt // by model entity id
	recvs []*hRecv
	// tokens are every lock token seen; none may come twice (I3). seen
	// keeps them in the order seen: the draws must not depend on their
	// random values, or a failing case would not replay.
	tokens map[[16]byte]*hTok
	seen   [][16]byte
	peeked []*minibus.ReceivedMessage
	rad    []*minibus.ReceivedMessage
	// kept are returned messages with a copy of what they read then: the
	// broker must never change them (V4). Every other returned message is
	// scribbled on instead, which must not change the broker.
	kept     []keptMsg
	returned int
	bodies   int
	ops      map[string]int // actions run, by name
	tally    map[string]int // what the broker answered, by outcome
	table    []action       // the actions a step draws from

	// A durable namespace's opener and the file system it is on, which the
	// crash action crashes (actions_crash.go); nil for one in memory.
	open Opener
	fs   *wal.MemFS
}

// Opener opens the durable namespace of a case on fs with the clock c. The
// root's TestModelDurable passes minibus.Open with SyncAlways and the
// test-only option that puts its files on fs.
type Opener func(fs wal.FS, c clock.Clock) (*minibus.Namespace, error)

// newMachine returns a machine on a namespace in memory, or, with open, on
// a durable one on an in-memory file system whose crashes are drawn from
// seed.
func newMachine(open Opener, seed uint64) (*machine, error) {
	mock := clock.NewMock()
	mock.Set(epoch)
	clk := newTimerClock(mock)
	h := &machine{
		ctx:    context.Background(),
		clk:    clk,
		m:      newRefModel(epoch.UnixNano()),
		tokens: map[[16]byte]*hTok{},
		ops:    map[string]int{},
		tally:  map[string]int{},
		table:  machineActions,
		open:   open,
	}
	if open == nil {
		h.ns = minibus.NewNamespace(minibus.WithClock(clk))
		return h, nil
	}
	h.table = append(slices.Clone(machineActions), crashAction)
	h.fs = wal.NewMemFS(wal.WithSeed(seed))
	var err error
	h.ns, err = open(h.fs, clk)
	return h, err
}

func (h *machine) close() {
	_ = h.ns.Close()
	h.clk.gate.Unlock() // late timer callbacks end on the closed namespace
}

type keptMsg struct {
	msg   *minibus.ReceivedMessage
	body  []byte
	props map[string]any
}

// own is SEMANTICS V4 both ways for a message the broker returned: keep a
// copy to check it never changes, or scribble on it (in place, and by
// appending, which must not reach a neighbour's body).
func (h *machine) own(g *minibus.ReceivedMessage) {
	h.returned++
	if h.returned%2 == 0 {
		h.kept = append(h.kept, keptMsg{g, bytes.Clone(g.Body), copyMap(g.ApplicationProperties)})
		return
	}
	for i := range g.Body {
		g.Body[i] ^= 0xff
	}
	g.Body = append(g.Body, "scribbled"...)
	for k, v := range g.ApplicationProperties {
		if b, ok := v.([]byte); ok && len(b) > 0 {
			b[0]++
		}
		g.ApplicationProperties[k] = "scribbled"
	}
	if g.ApplicationProperties != nil {
		g.ApplicationProperties["scribbled"] = true
	}
}

// epoch is where every case's mock clock starts, as in the root's tests: a
// round instant, so that times in failures read well.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func tm(n int64) time.Time { return time.Unix(0, n) }

// jump moves the broker's mock clock and the model to instant to, or to
// just before a tie between entities on the way (noteTie).
func (h *machine) jump(to int64) {
	if to >= mNever-1 && h.m.fwdGraph().forwards() {
		to = max(h.m.now, mNever-2) // no forwarding at the end of time (guard.go)
		h.tally["jumps held back before the end of time"]++
	}
	ahead := h.m.clone()
	ahead.advance(to)
	if ahead.tieAt <= to {
		// Stop before a tie between entities (noteTie).
		to = ahead.tieAt - 1
		h.tally["jumps held back before a tie"]++
	}
	h.move(to)
}

func (h *machine) move(to int64) {
	if to > h.m.now {
		h.clk.add(time.Duration(to - h.m.now))
	}
	h.m.advance(max(to, h.m.now))
}

// ---------------------------------------------------------------- errors

var sentinels = []error{
	minibus.ErrNotFound, minibus.ErrAlreadyExists, minibus.ErrInvalidArgument,
	minibus.ErrLockLost, minibus.ErrSessionLockLost, minibus.ErrSessionCannotBeLocked,
	minibus.ErrMessageNotFound, minibus.ErrMessageTooLarge, minibus.ErrQuotaExceeded,
	minibus.ErrEntityDisabled, minibus.ErrClosed, context.DeadlineExceeded, context.Canceled,
}

// sameErr reports whether got wraps want (nil: got is nil) and no other
// sentinel.
func sameErr(got, want error) bool {
	if want == nil || got == nil {
		return got == want
	}
	for _, s := range sentinels {
		if errors.Is(got, s) != (s == want) {
			return false
		}
	}
	return true
}

func (h *machine) errs(t *rapid.T, what string, got, want error) {
	t.Helper()
	t.Logf("%s: %v", what, got)
	if !sameErr(got, want) {
		t.Fatalf("%s: broker returned %v, model says %v", what, got, want)
	}
}

func (h *machine) findItem(item int) *mMsg {
	for _, e := range h.m.all {
		for _, l := range e.lists() {
			for _, x := range l {
				if x.item == item {
					return x
				}
			}
		}
	}
	return nil
}

// recvOf is the harness receiver of a model receiver, or nil.
func (h *machine) recvOf(r *mReceiver) *hRecv {
	for _, x := range h.recvs {
		if x.m == r {
			return x
		}
	}
	return nil
}

// run is one rapid test case: the setup, then random actions.
func (h *machine) run(t *rapid.T) {
	h.setup(t)
	t.Repeat(h.actions())
}
