package minibus_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// T1: no code in the broker reads the wall clock or sleeps: it parses every
// non-test Go file of the module (examples and internal/modeltest, the
// model test's harness, excepted) and fails on direct use of the time
// functions that bypass the injected clock.
func TestT1_NoDirectTimeCalls(t *testing.T) {
	banned := map[string]bool{
		"Now": true, "Sleep": true, "After": true, "AfterFunc": true, "NewTimer": true,
		"NewTicker": true, "Since": true, "Until": true, "Tick": true,
	}
	fset := token.NewFileSet()
	var checked int
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "examples" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() && path == filepath.Join("internal", "modeltest") {
			return filepath.SkipDir // test code: its hang guards wait on the real clock
		}
		if d.IsDir() && path != "." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		timeName := ""
		for _, imp := range f.Imports {
			if imp.Path.Value == `"time"` {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		if timeName == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == timeName && banned[sel.Sel.Name] {
				t.Errorf("%s: time.%s bypasses the namespace clock (SEMANTICS T1)", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, checked, 10, "the walk found the package's files")
}

// limitInstant is the last instant int64 nanoseconds since 1970 hold
// (2262-04-11T23:47:16.854775807Z).
var limitInstant = time.Unix(0, math.MaxInt64).UTC()

// farFuture is well past limitInstant.
var farFuture = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)

// T2, E2: finite deadlines stay finite. A clock past year 2262 clamps
// rather than wrapping to 1677, so a lock taken before ends (its token is
// lost, the message is receivable again); a finite TTL whose ExpiresAt
// would pass the int64 limit gives a non-zero ExpiresAt (clamped), and the
// message expires when the clock reaches it. Only "no TTL anywhere" never
// expires.
func TestT2_E2_FiniteDeadlinesStayFinite(t *testing.T) {
	t.Run("lock, clock moved past 2262", func(t *testing.T) {
		e := newEnv(t)
		q := e.queue("q", nil)
		e.send(q, "a")
		r := e.receiver(q, nil)
		m := e.receive(r, 1)[0]
		e.mock.Set(farFuture)
		requireSentinel(t, r.CompleteMessage(e.ctx, m, nil), minibus.ErrLockLost, "")
		again := e.receive(r, 1)[0]
		require.Equal(t, m.SequenceNumber, again.SequenceNumber, "receivable again once its lock ended")
		require.EqualValues(t, 2, again.DeliveryCount)
	})

	// requireExpiresAt asserts that q's one message expires exactly at its
	// ExpiresAt (T2): it is dead-lettered then (DeadLetteringOnMessageExpiration).
	requireExpiresAt := func(t *testing.T, e *env, q *minibus.Queue) {
		t.Helper()
		r := e.receiver(q, nil)
		p := e.peekAll(r)
		require.Len(t, p, 1)
		exp := p[0].ExpiresAt
		require.False(t, exp.IsZero(), "a finite TTL gives a finite ExpiresAt")
		require.True(t, exp.After(e.mock.Now()), "ExpiresAt %v is after now %v", exp, e.mock.Now())
		require.False(t, exp.After(limitInstant), "ExpiresAt %v is clamped to what int64 holds", exp)
		e.mock.Set(exp.Add(-time.Nanosecond))
		require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount, "1ns before ExpiresAt")
		e.mock.Set(exp)
		rp := q.RuntimeProperties()
		require.Zero(t, rp.ActiveMessageCount, "expired at ExpiresAt")
		require.EqualValues(t, 1, rp.DeadLetterMessageCount)
		d := e.receive(e.receiver(q, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
		require.Equal(t, "TTLExpiredException", d.DeadLetterReason)
	}

	t.Run("TimeToLive MaxInt64", func(t *testing.T) {
		e := newEnv(t)
		q := e.queue("q", &minibus.QueueProperties{DeadLetteringOnMessageExpiration: true}) // no default TTL
		require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{Body: []byte("a"), TimeToLive: time.Duration(math.MaxInt64)}, nil))
		requireExpiresAt(t, e, q)
	})

	t.Run("clock near the limit", func(t *testing.T) {
		e := newEnv(t)
		e.mock.Set(limitInstant.Add(-time.Hour))
		q := e.queue("q", &minibus.QueueProperties{DeadLetteringOnMessageExpiration: true})
		require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{Body: []byte("a"), TimeToLive: 2 * time.Hour}, nil))
		requireExpiresAt(t, e, q)
	})

	t.Run("clock near the limit, then far past it", func(t *testing.T) {
		e := newEnv(t)
		e.mock.Set(limitInstant.Add(-time.Hour))
		q := e.queue("q", &minibus.QueueProperties{DefaultMessageTimeToLive: 2 * time.Hour, DeadLetteringOnMessageExpiration: true})
		e.send(q, "a")
		require.False(t, e.peekAll(e.receiver(q, nil))[0].ExpiresAt.IsZero(), "a finite TTL gives a finite ExpiresAt")
		e.mock.Set(farFuture)
		rp := q.RuntimeProperties()
		require.Zero(t, rp.ActiveMessageCount, "expired once the clock passed ExpiresAt")
		require.EqualValues(t, 1, rp.DeadLetterMessageCount)
	})
}

// T2, L1: a lock ends exactly at LockedUntil. One nanosecond before, the
// messages locked together are still locked: not receivable, and their
// tokens settle. At LockedUntil the old token is ErrLockLost and the
// message is receivable again.
func TestT2_L1_LockEndsExactlyAtLockedUntil(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
	e.send(q, "a", "b")
	r := e.receiver(q, nil)
	got := e.receive(r, 2)
	a, b := got[0], got[1]
	require.True(t, a.LockedUntil.Equal(at(30*time.Second)), "LockedUntil %v", a.LockedUntil)
	require.True(t, b.LockedUntil.Equal(a.LockedUntil))

	e.mock.Set(a.LockedUntil.Add(-time.Nanosecond))
	e.requireNothing(r)
	require.NoError(t, r.CompleteMessage(e.ctx, a, nil), "1ns before LockedUntil the lock is held")
	require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount, "b is still locked")

	e.mock.Set(b.LockedUntil)
	requireSentinel(t, r.CompleteMessage(e.ctx, b, nil), minibus.ErrLockLost, "")
	again := e.receive(r, 1)[0]
	require.Equal(t, b.SequenceNumber, again.SequenceNumber)
	require.EqualValues(t, 2, again.DeliveryCount)
	require.True(t, again.LockedUntil.Equal(b.LockedUntil.Add(30*time.Second)))
}

// T3: one clock jump across many deadlines gives, at the next call, exactly
// the state that stepping through them gives: lock ends, redeliveries,
// expiries, dead-lettering and idle deletion in time order.
func TestT3_OneJumpEqualsSteps(t *testing.T) {
	run := func(step time.Duration) (active, dead int64, reasons []string, queues []string) {
		e := newEnv(t)
		q := e.queue("q", &minibus.QueueProperties{
			LockDuration: time.Minute, MaxDeliveryCount: 2, DefaultMessageTimeToLive: 150 * time.Second,
			DeadLetteringOnMessageExpiration: true,
		})
		e.queue("idle", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute})
		e.send(q, "ttl", "max", "stay")
		r := e.receiver(q, nil)
		got := e.receive(r, 2) // "ttl" and "max" locked until +1m
		require.NoError(t, r.DeferMessage(e.ctx, got[1], nil))
		m, err := r.ReceiveDeferredMessages(e.ctx, []int64{got[1].SequenceNumber}, nil)
		require.NoError(t, err)
		_ = m
		// At +1m both locks end: "ttl" is available again (1 delivery of 2),
		// "max" has had 2 deliveries: MaxDeliveryCountExceeded. At +150s
		// "ttl" and "stay" expire to the DLQ. At +5m the idle queue goes.
		for elapsed := time.Duration(0); elapsed < 10*time.Minute; elapsed += step {
			e.mock.Add(step)
		}
		rp := q.RuntimeProperties()
		dlq := e.receiver(q, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
		for _, d := range e.peekAll(dlq) {
			reasons = append(reasons, string(d.Body)+":"+d.DeadLetterReason)
		}
		return rp.ActiveMessageCount, rp.DeadLetterMessageCount, reasons, e.ns.Queues()
	}
	a1, d1, r1, q1 := run(10 * time.Minute)
	a2, d2, r2, q2 := run(time.Second)
	require.Equal(t, []any{a2, d2, r2, q2}, []any{a1, d1, r1, q1})
	require.Zero(t, a1)
	require.Equal(t, []string{"ttl:TTLExpiredException", "max:MaxDeliveryCountExceeded", "stay:TTLExpiredException"}, r1)
	require.Equal(t, []string{"q"}, q1)
}

// T3: across entities, events happen in time order: a topic's activation at
// +1m reaches a subscription whose copy then expires at +1m30s, in one jump.
func TestT3_AcrossEntities(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	s := e.subscription(top, "s", &minibus.SubscriptionProperties{
		DefaultMessageTimeToLive: 30 * time.Second, DeadLetteringOnMessageExpiration: true,
	})
	_, err := top.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("x")}}, at(time.Minute), nil)
	require.NoError(t, err)
	e.mock.Add(time.Hour)
	d := e.receive(e.receiver(s, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
	require.True(t, d.EnqueuedTime.Equal(at(time.Minute)))
	require.True(t, d.ExpiresAt.Equal(at(90*time.Second)))
	require.Equal(t, "TTLExpiredException", d.DeadLetterReason)
}

// T4: a namespace keeps at most one clock timer, whatever the number of
// deadlines and blocked receivers.
func TestT4_OneTimerPerNamespace(t *testing.T) {
	e := newEnv(t)
	qs := make([]*minibus.Queue, 5)
	for i := range qs {
		qs[i] = e.queue(string(rune('a'+i)), &minibus.QueueProperties{LockDuration: 5 * time.Second, AutoDeleteOnIdle: time.Hour})
	}
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	for _, q := range qs {
		for i := range 50 {
			_, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{}}, at(time.Duration(i)*time.Second), nil)
			require.NoError(t, err)
		}
		r := e.receiver(q, nil)
		for range 3 {
			wg.Go(func() {
				for ctx.Err() == nil {
					_, _ = r.ReceiveMessages(ctx, 7, nil) // locks expire: redelivered
				}
			})
		}
	}
	for range 100 {
		e.mock.Add(time.Second)
	}
	cancel()
	wg.Wait()
	require.Equal(t, int64(1), e.clock.timers.Load(), "clock timers created: one, reset as deadlines change")
}

// T4: the timer is armed only for deadlines of entities a receiver is
// blocked on: a receiver blocked on one queue does not make a clock jump
// fire the timer for every deadline of another (benbjohnson/clock sleeps
// 1 ms of real time per timer it fires).
func TestT4_TimerOnlyForWatchedEntities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		mock := clock.NewMock()
		cc := &countingClock{Clock: mock}
		ns := minibus.NewNamespace(minibus.WithClock(cc))
		defer ns.Close()
		idle, err := ns.CreateQueue("idle", nil)
		require.NoError(t, err)
		busy, err := ns.CreateQueue("busy", nil)
		require.NoError(t, err)
		for i := range 100 {
			_, err := busy.ScheduleMessages(ctx, []*minibus.Message{{}}, mock.Now().Add(time.Duration(i+1)*time.Second), nil)
			require.NoError(t, err)
		}
		r, err := idle.NewReceiver(nil)
		require.NoError(t, err)
		done := make(chan error)
		go func() {
			_, err := r.ReceiveMessages(ctx, 1, nil)
			done <- err
		}()
		synctest.Wait()
		mock.Add(time.Hour)
		synctest.Wait()
		require.Zero(t, cc.fired.Load(), "no timer fired for the other queue's deadlines")
		require.EqualValues(t, 100, busy.RuntimeProperties().ActiveMessageCount)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	})
}

// T5: a receiver blocked in ReceiveMessages wakes when a message becomes
// available through time: a scheduled activation or a lock expiry. Run in a
// synctest bubble so that "blocked" and "woken" are exact.
func TestT5_BlockedReceiverWakesThroughTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mock := clock.NewMock()
		ns := minibus.NewNamespace(minibus.WithClock(mock))
		defer ns.Close()
		q, err := ns.CreateQueue("q", nil)
		require.NoError(t, err)
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		got := make(chan []*minibus.ReceivedMessage, 1)
		receive := func() {
			msgs, err := r.ReceiveMessages(ctx, 10, nil)
			if err != nil {
				t.Error(err)
			}
			got <- msgs
		}

		_, err = q.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte("s")}}, mock.Now().Add(5*time.Minute), nil)
		require.NoError(t, err)
		go receive()
		synctest.Wait()
		require.Empty(t, got, "nothing yet")
		mock.Add(5*time.Minute - 1)
		synctest.Wait()
		require.Empty(t, got, "1ns early")
		mock.Add(1)
		synctest.Wait()
		require.Len(t, got, 1, "woken by the activation")
		first := <-got
		require.Equal(t, "s", string(first[0].Body))

		go receive()
		synctest.Wait()
		mock.Add(time.Minute) // the lock ends: redelivered to the blocked receiver
		synctest.Wait()
		require.Len(t, got, 1, "woken by the lock expiry")
		again := <-got
		require.Equal(t, first[0].SequenceNumber, again[0].SequenceNumber)
		require.EqualValues(t, 2, again[0].DeliveryCount)
	})
}

// T5: a receiver blocked in ReceiveMessages wakes when a lock ends and
// receives the message, not before.
func TestT5_BlockedReceiverWakesAtLockEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mock := clock.NewMock()
		ns := minibus.NewNamespace(minibus.WithClock(mock))
		defer ns.Close() // also wakes a receive a broken broker left blocked
		q, err := ns.CreateQueue("q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
		require.NoError(t, err)
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{Body: []byte("a")}, nil))
		holder, err := q.NewReceiver(nil)
		require.NoError(t, err)
		held, err := holder.ReceiveMessages(ctx, 1, nil)
		require.NoError(t, err)
		waiting, err := q.NewReceiver(nil)
		require.NoError(t, err)
		type result struct {
			msgs []*minibus.ReceivedMessage
			err  error
		}
		got := make(chan result, 1)
		go func() {
			msgs, err := waiting.ReceiveMessages(ctx, 10, nil)
			got <- result{msgs, err}
		}()
		synctest.Wait()
		require.Empty(t, got, "blocked: the message is locked")
		mock.Add(30*time.Second - 1)
		synctest.Wait()
		require.Empty(t, got, "1ns before the lock ends")
		mock.Add(1)
		select {
		case res := <-got:
			require.NoError(t, res.err)
			msgs := res.msgs
			require.Len(t, msgs, 1)
			require.Equal(t, held[0].SequenceNumber, msgs[0].SequenceNumber)
			require.EqualValues(t, 2, msgs[0].DeliveryCount)
		case <-time.After(resultTimeout):
			t.Fatal("the blocked receiver did not wake when the lock ended")
		}
	})
}

// T5: blocked receivers on several queues each wake for their own queue's
// deadline, in one jump.
func TestT5_ManyQueuesOneJump(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mock := clock.NewMock()
		ns := minibus.NewNamespace(minibus.WithClock(mock))
		defer ns.Close()
		var wg sync.WaitGroup
		for i := range 10 {
			q, err := ns.CreateQueue("q"+string(rune('0'+i)), nil)
			require.NoError(t, err)
			_, err = q.ScheduleMessages(ctx, []*minibus.Message{{}}, mock.Now().Add(time.Duration(i+1)*time.Minute), nil)
			require.NoError(t, err)
			r, err := q.NewReceiver(nil)
			require.NoError(t, err)
			wg.Go(func() {
				msgs, err := r.ReceiveMessages(ctx, 1, nil)
				if err != nil || len(msgs) != 1 {
					t.Error(err, len(msgs))
				}
			})
		}
		synctest.Wait()
		mock.Add(time.Hour)
		wg.Wait()
	})
}

// T5, S5: a receiver blocked on a subscription wakes when a message
// scheduled in its topic activates.
func TestT5_SubscriptionReceiverWakesOnTopicActivation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mock := clock.NewMock()
		ns := minibus.NewNamespace(minibus.WithClock(mock))
		defer ns.Close()
		top, err := ns.CreateTopic("t", nil)
		require.NoError(t, err)
		s, err := top.CreateSubscription("s", nil)
		require.NoError(t, err)
		r, err := s.NewReceiver(nil)
		require.NoError(t, err)
		_, err = top.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte("x")}}, mock.Now().Add(time.Minute), nil)
		require.NoError(t, err)
		got := make(chan string, 1)
		go func() {
			msgs, err := r.ReceiveMessages(ctx, 1, nil)
			if err != nil {
				t.Error(err)
				return
			}
			got <- string(msgs[0].Body)
		}()
		synctest.Wait()
		mock.Add(time.Minute)
		synctest.Wait()
		require.Len(t, got, 1)
		require.Equal(t, "x", <-got)
	})
}

// T1: Namespace.Now is the namespace clock's now, the time an application
// under test must schedule from: on a mock clock a schedule for
// ns.Now().Add(time.Hour) activates when the mock has moved an hour; on
// the real clock (virtual in a synctest bubble) it is the clock's now. A
// closed namespace still reads its clock; a nil one reads the zero time.
func TestT1_NamespaceNow(t *testing.T) {
	e := newEnv(t)
	require.True(t, e.ns.Now().Equal(epoch), "%v", e.ns.Now())
	require.Equal(t, time.UTC, e.ns.Now().Location(), "in the clock's location")
	e.mock.Add(90 * time.Minute)
	require.True(t, e.ns.Now().Equal(at(90*time.Minute)))

	q := e.queue("q", nil)
	_, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("later")}}, e.ns.Now().Add(time.Hour), nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, q.RuntimeProperties().ScheduledMessageCount)
	e.mock.Add(time.Hour - time.Nanosecond)
	require.EqualValues(t, 1, q.RuntimeProperties().ScheduledMessageCount)
	e.mock.Add(time.Nanosecond)
	got := e.receive(e.receiver(q, nil), 1)[0]
	require.True(t, got.EnqueuedTime.Equal(e.ns.Now()), "activated at the namespace's now (S4)")

	synctest.Test(t, func(t *testing.T) {
		ns := minibus.NewNamespace()
		require.True(t, ns.Now().Equal(time.Now()), "the real clock, virtual in the bubble")
		time.Sleep(time.Hour)
		require.True(t, ns.Now().Equal(time.Now()))
		require.NoError(t, ns.Close())
		require.True(t, ns.Now().Equal(time.Now()), "a closed namespace still reads its clock")
	})

	var nilNS *minibus.Namespace
	require.True(t, nilNS.Now().IsZero())
	require.NotNil(t, nilNS.Clock())
	require.Same(t, e.clock, e.ns.Clock(), "Clock is the one WithClock gave")
}

// T3 across entities: a forwarded message's deadline in its destination
// comes before the source's next event when it is earlier. Here the first
// message fills the destination until it expires at +2m30s; the second
// arrives at +2m45s and fits only if the expiry happened first, although
// the source's two activations could be processed in one visit.
func TestT3_TimeOrderAcrossEntities(t *testing.T) {
	e := newEnv(t)
	dest := e.queue("dest", &minibus.QueueProperties{MaxSizeInMegabytes: 1, MaxMessageSizeInKilobytes: 1024})
	src := e.queue("src", &minibus.QueueProperties{ForwardTo: "dest", MaxMessageSizeInKilobytes: 1024})
	big := func(ttl time.Duration) *minibus.Message {
		return &minibus.Message{Body: make([]byte, 700<<10), TimeToLive: ttl}
	}
	_, err := src.ScheduleMessages(e.ctx, []*minibus.Message{big(30 * time.Second)}, at(2*time.Minute), nil)
	require.NoError(t, err)
	_, err = src.ScheduleMessages(e.ctx, []*minibus.Message{big(0)}, at(2*time.Minute+45*time.Second), nil)
	require.NoError(t, err)
	e.mock.Add(5 * time.Minute) // one jump over all four events
	require.Zero(t, src.RuntimeProperties().TransferDeadLetterMessageCount, "the second fit: the first had expired")
	require.EqualValues(t, 1, dest.RuntimeProperties().ActiveMessageCount)
	m := e.receive(e.receiver(dest, nil), 1)[0]
	require.True(t, m.EnqueuedTime.Equal(at(2*time.Minute+45*time.Second)))
}

// T5, F2: a receiver blocked on a destination wakes, at the instant, for a
// message that a forwarding source scheduled after the receiver blocked
// (issue 42): the source's new deadline arms the namespace's timer though
// nobody receives from the source. The source is a queue, or a topic
// whose subscription forwards. In a synctest bubble, so that "blocked"
// and "woken" are exact.
func TestT5_F2_WakesForAForwardScheduledAfterItBlocked(t *testing.T) {
	for _, source := range []string{"queue", "subscription"} {
		t.Run(source, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				mock := clock.NewMock()
				mock.Set(epoch)
				ns := minibus.NewNamespace(minibus.WithClock(mock))
				defer ns.Close()
				dest, err := ns.CreateQueue("dest", nil)
				require.NoError(t, err)
				var schedule func() error
				if source == "queue" {
					src, err := ns.CreateQueue("src", &minibus.QueueProperties{ForwardTo: "dest"})
					require.NoError(t, err)
					schedule = func() error {
						_, err := src.ScheduleMessages(ctx, []*minibus.Message{{MessageID: "m"}}, at(time.Minute), nil)
						return err
					}
				} else {
					top, err := ns.CreateTopic("t", nil)
					require.NoError(t, err)
					_, err = top.CreateSubscription("s", &minibus.SubscriptionProperties{ForwardTo: "dest"})
					require.NoError(t, err)
					schedule = func() error {
						_, err := top.ScheduleMessages(ctx, []*minibus.Message{{MessageID: "m"}}, at(time.Minute), nil)
						return err
					}
				}
				r, err := dest.NewReceiver(nil)
				require.NoError(t, err)
				defer r.Close(ctx)
				type result struct {
					msgs []*minibus.ReceivedMessage
					err  error
				}
				got := make(chan result, 1)
				go func() {
					msgs, err := r.ReceiveMessages(ctx, 1, nil)
					got <- result{msgs, err}
				}()
				synctest.Wait() // blocked
				require.NoError(t, schedule())
				synctest.Wait()
				require.Empty(t, got, "nothing yet")
				mock.Add(time.Minute - 1)
				synctest.Wait()
				require.Empty(t, got, "1ns early")
				mock.Add(1)
				synctest.Wait()
				select {
				case res := <-got:
					require.NoError(t, res.err)
					require.Len(t, res.msgs, 1)
					require.Equal(t, "m", res.msgs[0].MessageID)
					require.True(t, res.msgs[0].EnqueuedTime.Equal(at(time.Minute)), "forwarded at its activation (F2, Q3)")
				default:
					t.Fatal("the blocked receiver did not wake for the forwarded activation")
				}
			})
		})
	}
}

// T3: scheduled messages activate in time order, ties in sequence order,
// whatever order they were scheduled in; one clock jump over all of them
// gives the same result as stepping through.
func TestT3_ActivationOrder(t *testing.T) {
	for _, steps := range []bool{false, true} {
		e := newEnv(t)
		q := e.queue("q", nil)
		for _, s := range []struct {
			body string
			at   time.Duration
		}{{"c", 30 * time.Second}, {"a", 10 * time.Second}, {"d1", time.Minute}, {"d2", time.Minute}, {"b", 20 * time.Second}} {
			_, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte(s.body)}}, at(s.at), nil)
			require.NoError(t, err)
		}
		if steps {
			for range 6 {
				e.mock.Add(10 * time.Second)
				q.RuntimeProperties()
			}
		} else {
			e.mock.Add(time.Minute)
		}
		got := e.receive(e.receiver(q, nil), 5)
		require.Equal(t, []string{"a", "b", "c", "d1", "d2"}, bodies(got), "steps=%v", steps)
		require.Equal(t, []int64{6, 7, 8, 9, 10}, seqs(got))
	}
}
