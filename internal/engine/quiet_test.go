package engine

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
	"github.com/stretchr/testify/require"
)

// White tests of what WaitQuiet sees of blocked receives and accepts
// (SEMANTICS P2, P3): each waiting call is registered while it waits and
// until it returns, whatever ends it, and a woken call that ends without
// taking passes its wake-up on (L8, SS3).

// works returns how much work is registered.
func (b *Broker) works() int {
	b.quiet.mu.Lock()
	defer b.quiet.mu.Unlock()
	return len(b.quiet.works)
}

// quietBroker is a broker on a mock clock with a queue q (sessions as
// asked); call it inside a synctest bubble.
func quietBroker(t *testing.T, sessions bool) (*Broker, *Entity, *clock.Mock) {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(epoch)
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { b.Close() })
	e, err := b.Create(KindQueue, "q", Config{LockDuration: time.Minute, MaxDeliveryCount: 10,
		MaxSizeMB: 1, MaxMessageKB: 64, RequiresSession: sessions})
	require.NoError(t, err)
	return b, e, mock
}

// sendOne sends one message to e (to session id when set).
func sendOne(t *testing.T, e *Entity, id string) {
	t.Helper()
	m := record(0)
	m.SessionID = id
	_, err := e.Send(context.Background(), []*store.Message{m}, store.Unset, false)
	require.NoError(t, err)
}

// async is a receive (or accept) run in a goroutine.
type async struct {
	done chan error
	n    int // messages taken, read after done
}

func receiveAsync(ctx context.Context, r *Receiver, wait time.Duration) *async {
	c := &async{done: make(chan error, 1)}
	go func() {
		s, err := r.Receive(ctx, 1, nil, wait)
		c.n = len(s)
		for _, x := range s {
			x.Release()
		}
		c.done <- err
	}()
	return c
}

func acceptAsync(ctx context.Context, e *Entity) *async {
	c := &async{done: make(chan error, 1)}
	go func() {
		r, err := e.AcceptNextSession(ctx, PeekLock, nil)
		if r != nil {
			c.n = 1
			r.Close()
		}
		c.done <- err
	}()
	return c
}

// A receive is registered from its first wait until it returns; WaitIdle
// returns while it waits for nothing there (P2), and, once a message is
// there, only after the receive took it.
func TestP2_BlockedReceiveRegistered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, e, _ := quietBroker(t, false)
		r, err := e.NewReceiver(store.Main, PeekLock)
		require.NoError(t, err)
		c := receiveAsync(context.Background(), r, 0)
		synctest.Wait()
		require.Equal(t, 1, b.works(), "the waiting receive")
		require.NoError(t, b.WaitQuiet(context.Background()), "nothing to take")
		sendOne(t, e, "")
		require.NoError(t, b.WaitQuiet(context.Background()))
		require.Zero(t, e.st.Available(store.Main), "P2: taken before WaitIdle returned")
		require.NoError(t, <-c.done)
		require.Equal(t, 1, c.n)
		require.Zero(t, b.works())
	})
}

// Every way a waiting receive or accept ends leaves nothing registered:
// its ctx ends, its receiver closes, its MaxWaitTime passes, its session
// lock ends, the entity is deleted, the broker closes, it takes.
func TestP2_EveryEndUnregisters(t *testing.T) {
	ends := []struct {
		name     string
		sessions bool
		start    func(t *testing.T, ctx context.Context, e *Entity) (*async, *Receiver)
		end      func(t *testing.T, b *Broker, e *Entity, mock *clock.Mock, r *Receiver, cancel func())
		want     error // nil: taken or timed out without error
	}{
		{name: "ctx", end: func(_ *testing.T, _ *Broker, _ *Entity, _ *clock.Mock, _ *Receiver, cancel func()) { cancel() }, want: context.Canceled},
		{name: "close", end: func(_ *testing.T, _ *Broker, _ *Entity, _ *clock.Mock, r *Receiver, _ func()) { r.Close() }, want: errs.ErrClosed},
		{name: "maxwait", end: func(_ *testing.T, _ *Broker, _ *Entity, mock *clock.Mock, _ *Receiver, _ func()) {
			mock.Add(time.Second)
		}},
		{name: "taken", end: func(t *testing.T, _ *Broker, e *Entity, _ *clock.Mock, _ *Receiver, _ func()) { sendOne(t, e, "") }},
		{name: "deleted", end: func(t *testing.T, b *Broker, _ *Entity, _ *clock.Mock, _ *Receiver, _ func()) {
			require.NoError(t, b.Delete(KindQueue, "q"))
		}, want: errs.ErrNotFound},
		{name: "broker closed", end: func(_ *testing.T, b *Broker, _ *Entity, _ *clock.Mock, _ *Receiver, _ func()) { b.Close() }, want: errs.ErrClosed},
		{name: "session lock lost", sessions: true, start: func(t *testing.T, ctx context.Context, e *Entity) (*async, *Receiver) {
			r, err := e.AcceptSession(ctx, "s", PeekLock)
			require.NoError(t, err)
			return receiveAsync(ctx, r, 0), r
		}, end: func(_ *testing.T, _ *Broker, _ *Entity, mock *clock.Mock, _ *Receiver, _ func()) {
			mock.Add(time.Minute)
		}, want: errs.ErrSessionLockLost},
		{name: "accept ctx", sessions: true, start: func(t *testing.T, ctx context.Context, e *Entity) (*async, *Receiver) {
			return acceptAsync(ctx, e), nil
		}, end: func(_ *testing.T, _ *Broker, _ *Entity, _ *clock.Mock, _ *Receiver, cancel func()) { cancel() }, want: context.Canceled},
		{name: "accept taken", sessions: true, start: func(t *testing.T, ctx context.Context, e *Entity) (*async, *Receiver) {
			return acceptAsync(ctx, e), nil
		}, end: func(t *testing.T, _ *Broker, e *Entity, _ *clock.Mock, _ *Receiver, _ func()) { sendOne(t, e, "s") }},
		{name: "accept broker closed", sessions: true, start: func(t *testing.T, ctx context.Context, e *Entity) (*async, *Receiver) {
			return acceptAsync(ctx, e), nil
		}, end: func(_ *testing.T, b *Broker, _ *Entity, _ *clock.Mock, _ *Receiver, _ func()) { b.Close() }, want: errs.ErrClosed},
	}
	for _, x := range ends {
		t.Run(x.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, e, mock := quietBroker(t, x.sessions)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var c *async
				var r *Receiver
				if x.start != nil {
					c, r = x.start(t, ctx, e)
				} else {
					var err error
					r, err = e.NewReceiver(store.Main, PeekLock)
					require.NoError(t, err)
					c = receiveAsync(ctx, r, time.Second)
				}
				synctest.Wait()
				require.Equal(t, 1, b.works())
				x.end(t, b, e, mock, r, cancel)
				err := <-c.done
				if x.want == nil {
					require.NoError(t, err)
				} else {
					require.True(t, errors.Is(err, x.want), "got %v, want %v", err, x.want)
				}
				require.Zero(t, b.works(), "nothing left registered")
			})
		})
	}
}

// A woken receive that ends without taking (its receiver closed, or its
// ctx ended, right after the wake-up) passes the wake-up on: the other
// waiting receive takes the message (L8), and WaitIdle returns.
func TestL8_WokenReceiveThatEndsPassesTheWakeOn(t *testing.T) {
	for _, how := range []string{"closed", "canceled"} {
		t.Run(how, func(t *testing.T) {
			for range 20 { // "canceled" takes either path of the wait at random
				synctest.Test(t, func(t *testing.T) {
					b, e, _ := quietBroker(t, false)
					ra, err := e.NewReceiver(store.Main, PeekLock)
					require.NoError(t, err)
					rb, err := e.NewReceiver(store.Main, PeekLock)
					require.NoError(t, err)
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					a := receiveAsync(ctx, ra, 0)
					synctest.Wait()
					bc := receiveAsync(context.Background(), rb, 0)
					synctest.Wait()
					// a's receiver closes (or its ctx ends) without a seeing
					// it, then a message arrives and wakes a, the first
					// waiting: a ends without taking.
					e.mu.Lock()
					if how == "closed" {
						ra.isClosed.Store(true) // Close, but for its wakeOwned
					} else {
						cancel()
					}
					e.acceptLocked(record(0), now0())
					e.mu.Unlock()
					require.Error(t, <-a.done)
					require.NoError(t, <-bc.done, "b woke")
					require.Equal(t, 1, bc.n, "L8: b took the message")
					require.NoError(t, b.WaitQuiet(context.Background()))
				})
			}
		})
	}
}

// The same for AcceptNextSession (SS3): a woken accept that ends passes
// its wake-up on to the next waiting accept.
func TestSS3_WokenAcceptThatEndsPassesTheWakeOn(t *testing.T) {
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			b, e, _ := quietBroker(t, true)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			a := acceptAsync(ctx, e)
			synctest.Wait()
			bc := acceptAsync(context.Background(), e)
			synctest.Wait()
			m := record(0)
			m.SessionID = "s"
			e.mu.Lock()
			cancel()
			e.acceptLocked(m, now0()) // wakes a, the first waiting
			e.mu.Unlock()
			require.ErrorIs(t, <-a.done, context.Canceled)
			require.NoError(t, <-bc.done)
			require.Equal(t, 1, bc.n, "SS3: b accepted the session")
			require.NoError(t, b.WaitQuiet(context.Background()))
			require.Zero(t, b.works())
		})
	}
}
