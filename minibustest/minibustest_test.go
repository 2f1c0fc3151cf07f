package minibustest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/stretchr/testify/require"
)

// fakeTB is a testing.TB whose Fatalf records the failure and ends the
// goroutine, as a real one does, and whose cleanups the test runs itself.
type fakeTB struct {
	testing.TB // the real one, for everything else

	mu       sync.Mutex
	fatals   []string
	cleanups []func()
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeTB) Cleanup(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, fn)
}

// cleanup runs the cleanups, last first.
func (f *fakeTB) cleanup() {
	f.mu.Lock()
	fns := f.cleanups
	f.cleanups = nil
	f.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

func (f *fakeTB) failures() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.fatals...)
}

// inGoroutine runs fn in a goroutine of its own, as Fatalf ends the
// goroutine it is called in, and waits for it.
func inGoroutine(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	<-done
}

// held is a handler whose calls wait until released.
type held struct {
	calls   chan *minibus.ReceivedMessage
	release chan error
}

func newHeld() *held {
	return &held{calls: make(chan *minibus.ReceivedMessage, 100), release: make(chan error)}
}

func (h *held) handle(_ context.Context, m *minibus.ReceivedMessage) error {
	h.calls <- m
	return <-h.release
}

// New: a namespace on a mock clock at the Epoch, 2026-01-01T00:00:00Z,
// closed when the test ends.
func TestNew(t *testing.T) {
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), minibustest.Epoch)
	var env *minibustest.Env
	t.Run("inner", func(t *testing.T) {
		env = minibustest.New(t)
		require.Equal(t, minibustest.Epoch, env.Clock().Now())
		q, err := env.Namespace().CreateQueue("q", nil)
		require.NoError(t, err)
		require.Equal(t, minibustest.Epoch, q.RuntimeProperties().CreatedAt)
		env.Clock().Add(time.Minute)
		q2, err := env.Namespace().CreateQueue("q2", nil)
		require.NoError(t, err)
		require.Equal(t, minibustest.Epoch.Add(time.Minute), q2.RuntimeProperties().CreatedAt, "the namespace runs on Clock()")
	})
	_, err := env.Namespace().CreateQueue("later", nil)
	require.ErrorIs(t, err, minibus.ErrClosed, "closed by the test's cleanup")
}

// New adds its journal and injector to the options it is given: the
// caller's observer and injector are called too; a WithClock replaces the
// mock for the namespace, while Clock still returns the Env's mock.
func TestNew_Options(t *testing.T) {
	ctx := context.Background()
	var seen atomic.Int64
	var asked atomic.Int64
	other := clock.NewMock()
	other.Set(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	env := minibustest.New(t,
		minibus.WithObserver(func(minibus.Event) { seen.Add(1) }),
		minibus.WithFaultInjector(func(minibus.Operation, string) error { asked.Add(1); return nil }),
		minibus.WithClock(other),
	)
	q, err := env.Namespace().CreateQueue("q", nil)
	require.NoError(t, err)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{}, nil))
	require.EqualValues(t, 2, seen.Load())
	require.Len(t, env.Events(), 2)
	require.EqualValues(t, 1, asked.Load())
	env.FailNext("q", minibus.OpSend, 1, errors.New("planned"))
	require.Error(t, q.SendMessage(ctx, &minibus.Message{}, nil))
	require.Equal(t, other.Now(), q.RuntimeProperties().CreatedAt)
	require.Equal(t, minibustest.Epoch, env.Clock().Now())
}

// NewWithClock: the namespace runs on the clock wrap returns, given the
// Env's mock at the Epoch; Clock and Advance work on that mock; the journal
// and the injector are installed as by New; a nil wrap is New.
func TestNewWithClock(t *testing.T) {
	var given *clock.Mock
	var wrapped *timerCounter
	env := minibustest.NewWithClock(t, func(m *clock.Mock) clock.Clock {
		given = m
		wrapped = &timerCounter{Clock: m, n: new(atomic.Int64)}
		return wrapped
	})
	require.Same(t, given, env.Clock())
	require.Same(t, clock.Clock(wrapped), env.Namespace().Clock())
	require.Equal(t, minibustest.Epoch, env.Namespace().Now())
	env.Advance(time.Minute)
	require.Equal(t, minibustest.Epoch.Add(time.Minute), env.Namespace().Now())
	q, err := env.Namespace().CreateQueue("q", nil)
	require.NoError(t, err)
	env.FailNext("q", minibus.OpSend, 1, errors.New("planned"))
	require.Error(t, q.SendMessage(context.Background(), &minibus.Message{}, nil))
	require.Len(t, env.EventsOf(minibus.EventEntityCreated), 1)

	plain := minibustest.NewWithClock(t, nil)
	require.Same(t, clock.Clock(plain.Clock()), plain.Namespace().Clock())
	require.Equal(t, minibustest.Epoch, plain.Namespace().Now())
}

// Events is the journal so far, in order, as a copy.
func TestEvents(t *testing.T) {
	ctx := context.Background()
	env := minibustest.New(t)
	require.Empty(t, env.Events())
	q, err := env.Namespace().CreateQueue("q", nil)
	require.NoError(t, err)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "a"}, nil))
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(ctx)
	msgs, err := r.ReceiveMessages(ctx, 1, nil)
	require.NoError(t, err)
	require.NoError(t, r.CompleteMessage(ctx, msgs[0], nil))
	evs := env.Events()
	var kinds []string
	for _, ev := range evs {
		require.Equal(t, "q", ev.Entity)
		require.Equal(t, minibustest.Epoch, ev.At)
		kinds = append(kinds, ev.Kind.String())
	}
	require.Equal(t, []string{"EntityCreated", "Sent", "Delivered", "Completed"}, kinds)
	require.Equal(t, "a", evs[1].MessageID)
	evs[0].Entity = "changed"
	require.Equal(t, "q", env.Events()[0].Entity, "a copy")
}

// FailNext makes the next n calls of op on entity fail with err, changing
// nothing; other operations and entities are not touched; planned failures
// add up, used in the order planned; n < 1 plans nothing.
func TestFailNext(t *testing.T) {
	ctx := context.Background()
	env := minibustest.New(t)
	ns := env.Namespace()
	q, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	other, err := ns.CreateQueue("other", nil)
	require.NoError(t, err)
	e1, e2 := errors.New("first"), errors.New("second")
	env.FailNext("q", minibus.OpSend, 2, e1)
	env.FailNext("q", minibus.OpSend, 1, e2)
	env.FailNext("q", minibus.OpSend, 0, errors.New("never"))
	env.FailNext("q", minibus.OpSend, -1, errors.New("never"))
	before := len(env.Events())
	require.NoError(t, other.SendMessage(ctx, &minibus.Message{}, nil), "another entity")
	_, err = q.ScheduleMessages(ctx, []*minibus.Message{{}}, minibustest.Epoch.Add(time.Hour), nil)
	require.NoError(t, err, "another operation")
	require.Len(t, env.Events(), before+2)
	for _, want := range []error{e1, e1, e2} {
		require.ErrorIs(t, q.SendMessages(ctx, []*minibus.Message{{}, {}}, nil), want)
	}
	require.Len(t, env.Events(), before+2, "the failed calls made no event")
	require.Zero(t, q.RuntimeProperties().ActiveMessageCount)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{}, nil))
	require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount)

	// A subscription, by its path.
	topic, err := ns.CreateTopic("t", nil)
	require.NoError(t, err)
	sub, err := topic.CreateSubscription("s", nil)
	require.NoError(t, err)
	require.NoError(t, topic.SendMessage(ctx, &minibus.Message{}, nil))
	r, err := sub.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(ctx)
	env.FailNext("t/Subscriptions/s", minibus.OpReceive, 1, e1)
	_, err = r.ReceiveMessages(ctx, 1, nil)
	require.ErrorIs(t, err, e1)
	msgs, err := r.ReceiveMessages(ctx, 1, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, msgs[0].DeliveryCount)
	env.FailNext("t/Subscriptions/s", minibus.OpComplete, 1, e2)
	require.ErrorIs(t, r.CompleteMessage(ctx, msgs[0], nil), e2)
	require.NoError(t, r.CompleteMessage(ctx, msgs[0], nil))
}

// Start returns once the processor runs (WaitIdle waits for it); its stop
// function cancels it and returns Run's error, once for all calls.
func TestStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		env := minibustest.New(t)
		q, err := env.Namespace().CreateQueue("q", nil)
		require.NoError(t, err)
		h := newHeld()
		p, err := q.NewProcessor(h.handle, nil)
		require.NoError(t, err)
		stop := env.Start(p)
		select {
		case <-p.Started():
		default:
			t.Fatal("Start returned before the processor ran")
		}
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{}, nil))
		<-h.calls
		idle := make(chan struct{})
		go func() {
			env.WaitIdle()
			close(idle)
		}()
		synctest.Wait()
		select {
		case <-idle:
			t.Fatal("WaitIdle returned while the handler runs")
		default:
		}
		h.release <- nil
		<-idle
		require.NoError(t, stop())
		require.NoError(t, stop(), "stop again")
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)

		// stop returns Run's error: the entity was deleted.
		p2, err := q.NewProcessor(h.handle, nil)
		require.NoError(t, err)
		stop = env.Start(p2)
		require.NoError(t, env.Namespace().DeleteQueue("q"))
		synctest.Wait()
		require.ErrorIs(t, stop(), minibus.ErrNotFound)
	})
}

// A processor that Start started and the test did not stop is stopped when
// the test ends.
func TestStart_StoppedByCleanup(t *testing.T) {
	var p *minibus.Processor
	t.Run("inner", func(t *testing.T) {
		env := minibustest.New(t)
		q, err := env.Namespace().CreateQueue("q", nil)
		require.NoError(t, err)
		p, err = q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error { return nil }, nil)
		require.NoError(t, err)
		env.Start(p)
	})
	// Not running any more: Run does not say "running already"; the
	// namespace is closed.
	require.ErrorIs(t, p.Run(context.Background()), minibus.ErrClosed)
}

// Start fails the test when Run returns at once.
func TestStart_Fails(t *testing.T) {
	fake := &fakeTB{TB: t}
	defer fake.cleanup()
	env := minibustest.New(fake)
	q, err := env.Namespace().CreateQueue("q", nil)
	require.NoError(t, err)
	p, err := q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error { return nil }, nil)
	require.NoError(t, err)
	require.NoError(t, env.Namespace().DeleteQueue("q"))
	inGoroutine(func() { env.Start(p) })
	require.Len(t, fake.failures(), 1)
	require.Contains(t, fake.failures()[0], "did not start")
	require.Contains(t, fake.failures()[0], "not found")
}

// Start of a processor that is running already fails the test, although
// the running Run's Started channel is closed.
func TestStart_FailsWhenRunning(t *testing.T) {
	fake := &fakeTB{TB: t}
	defer fake.cleanup()
	env := minibustest.New(fake)
	q, err := env.Namespace().CreateQueue("q", nil)
	require.NoError(t, err)
	p, err := q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error { return nil }, nil)
	require.NoError(t, err)
	env.Start(p)
	inGoroutine(func() { env.Start(p) })
	require.Len(t, fake.failures(), 1, "the second Start fails the test")
}

// Advance moves the clock and waits until idle: a scheduled message due
// within the move is handled when it returns.
func TestAdvance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		env := minibustest.New(t)
		q, err := env.Namespace().CreateQueue("q", nil)
		require.NoError(t, err)
		var handled atomic.Int64
		p, err := q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error {
			handled.Add(1)
			return nil
		}, nil)
		require.NoError(t, err)
		env.Start(p)
		_, err = q.ScheduleMessages(ctx, []*minibus.Message{{}, {}, {}}, minibustest.Epoch.Add(time.Minute), nil)
		require.NoError(t, err)
		synctest.Wait() // the processor waits in a receive before the clock moves
		env.Advance(59 * time.Second)
		require.Zero(t, handled.Load())
		env.Advance(time.Second)
		require.EqualValues(t, 3, handled.Load())
		require.Equal(t, minibustest.Epoch.Add(time.Minute), env.Clock().Now())
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
}

// WaitIdle returns at once when nothing runs, waits for a running handler,
// and fails the test after 10 s (here of synctest's fake time) when the
// namespace does not become idle, or is closed.
func TestWaitIdle(t *testing.T) {
	env := minibustest.New(t)
	env.WaitIdle()

	synctest.Test(t, func(t *testing.T) {
		fake := &fakeTB{TB: t}
		defer fake.cleanup()
		env := minibustest.New(fake)
		q, err := env.Namespace().CreateQueue("q", nil)
		require.NoError(t, err)
		h := newHeld()
		p, err := q.NewProcessor(h.handle, nil)
		require.NoError(t, err)
		env.Start(p)
		require.NoError(t, q.SendMessage(context.Background(), &minibus.Message{}, nil))
		<-h.calls
		start := time.Now()
		inGoroutine(env.WaitIdle)
		require.Equal(t, 10*time.Second, time.Since(start))
		require.Len(t, fake.failures(), 1)
		require.Contains(t, fake.failures()[0], "not idle")
		require.Contains(t, fake.failures()[0], "deadline exceeded")
		h.release <- nil
		inGoroutine(env.WaitIdle)
		require.Len(t, fake.failures(), 1, "idle now")

		require.NoError(t, env.Namespace().Close())
		inGoroutine(env.WaitIdle)
		require.Len(t, fake.failures(), 2)
		require.Contains(t, fake.failures()[1], "closed")
	})
}

// An Env's methods are safe for concurrent use.
func TestEnv_Concurrent(t *testing.T) {
	ctx := context.Background()
	env := minibustest.New(t)
	q, err := env.Namespace().CreateQueue("q", nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				env.FailNext("q", minibus.OpPeek, 1, errors.New("x"))
				_ = q.SendMessage(ctx, &minibus.Message{}, nil)
				_ = env.Events()
				env.WaitIdle()
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 200, q.RuntimeProperties().ActiveMessageCount)
	require.Len(t, env.Events(), 201)
}
