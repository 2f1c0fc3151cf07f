package minibus_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/stretchr/testify/require"
)

// Tests of session processors (NewSessionProcessor).

// A session processor renews its session's lock (and its messages' locks)
// until acceptance + MaxAutoLockRenewalDuration; then the session lock ends,
// the message is released and delivered again.
func TestSessionProcessor_AutoRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", &minibus.QueueProperties{RequiresSession: true, LockDuration: 30 * time.Second})
		h := newHolder(t)
		p, err := q.NewSessionProcessor(h.handle, &minibus.SessionProcessorOptions{MaxConcurrentSessions: 2, MaxAutoLockRenewalDuration: 2 * time.Minute})
		require.NoError(t, err)
		env.Start(p)
		sendToSession(t, q, "s", "x")
		first := h.next(t)
		synctest.Wait() // the free session slot waits before the clock moves
		sess, ok := minibus.SessionFromContext(first.ctx)
		require.True(t, ok)
		require.Equal(t, epoch.Add(30*time.Second), sess.LockedUntil())
		for i := range 3 {
			env.Clock().Add(30 * time.Second)
			synctest.Wait()
			_ = q.RuntimeProperties() // catch up
			require.Equal(t, epoch.Add(time.Duration(i+2)*30*time.Second), sess.LockedUntil(), "renewed")
			h.requireNoCall(t)
		}
		_, err = q.AcceptSession(context.Background(), "s", nil)
		require.ErrorIs(t, err, minibus.ErrSessionCannotBeLocked, "the processor holds the session")

		env.Clock().Add(30 * time.Second) // +120s: the renewal limit
		second := h.next(t)
		require.EqualValues(t, 2, second.msg.DeliveryCount)
		require.Equal(t, []string{"LockLost q seq=1 id=x dc=1 at=+2m0s"}, eventLines(env.Events(), "q", minibus.EventLockLost))
		second.reply <- nil
		first.reply <- nil
		synctest.Wait()
		env.WaitIdle()
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
}

// Deleting a session entity while a session processor's loop enters
// AcceptNextSession: Run returns ErrNotFound, and -race finds no race on
// the entity's session bookkeeping, which AcceptSession, AcceptNextSession
// and SessionIDs look at before they lock the entity.
func TestSessionProcessor_DeleteRace(t *testing.T) {
	ctx := context.Background()
	for range 100 {
		ns := minibus.NewNamespace()
		q, err := ns.CreateQueue("q", &minibus.QueueProperties{RequiresSession: true})
		require.NoError(t, err)
		p, err := q.NewSessionProcessor(func(context.Context, *minibus.ReceivedMessage) error { return nil }, nil)
		require.NoError(t, err)
		done := runAsync(t, p, ctx)
		require.NoError(t, ns.DeleteQueue("q"))
		require.ErrorIs(t, runResult(t, done), minibus.ErrNotFound)
		require.NoError(t, ns.Close())
	}
}

// The same for a session processor: after ctx ends the session lock is no
// longer renewed; Run gives up after LockDuration; the session's message is
// delivered again.
func TestSessionProcessor_StuckHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", &minibus.QueueProperties{RequiresSession: true, LockDuration: 30 * time.Second})
		h := newHolder(t)
		p, err := q.NewSessionProcessor(h.handle, nil)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := runAsync(t, p, ctx)
		sendToSession(t, q, "s", "x")
		stuck := h.next(t)
		synctest.Wait()
		env.Clock().Add(45 * time.Second) // the session is renewed at +30s until +60s
		synctest.Wait()
		cancel()
		synctest.Wait()
		require.Error(t, stuck.ctx.Err())
		env.Clock().Add(15 * time.Second) // +60s: the session lock ends
		synctest.Wait()
		_ = q.RuntimeProperties()
		require.Equal(t, []string{"LockLost q seq=1 id=x dc=1 at=+1m0s"}, eventLines(env.Events(), "q", minibus.EventLockLost))
		requireRunning(t, done)
		env.Clock().Add(15 * time.Second) // +75s
		require.NoError(t, runResult(t, done))

		s, err := q.AcceptSession(context.Background(), "s", nil)
		require.NoError(t, err)
		msgs, err := s.ReceiveMessages(context.Background(), 1, &minibus.ReceiveMessagesOptions{NoWait: true})
		require.NoError(t, err)
		require.Len(t, msgs, 1)
		require.EqualValues(t, 2, msgs[0].DeliveryCount)
		require.NoError(t, s.CompleteMessage(context.Background(), msgs[0], nil))
		require.NoError(t, s.Close(context.Background()))
		stuck.reply <- nil
		synctest.Wait()
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
}

// A session processor handles each session's messages in sequence order,
// one call at a time, and up to MaxConcurrentSessions sessions at once,
// oldest first message first.
func TestSessionProcessor_OrderAndConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", &minibus.QueueProperties{RequiresSession: true})
		h := newHolder(t)
		p, err := q.NewSessionProcessor(h.handle, &minibus.SessionProcessorOptions{MaxConcurrentSessions: 2})
		require.NoError(t, err)
		env.Start(p)
		sessions := []string{"A", "B", "C", "D"}
		for i := range 3 {
			for _, s := range sessions {
				sendToSession(t, q, s, s+strconv.Itoa(i))
			}
		}
		synctest.Wait()
		running := h.pending()
		require.ElementsMatch(t, []string{"A0", "B0"}, callBodies(running), "the sessions with the oldest messages first")
		last := map[string]int64{}
		var order []string
		for len(order) < 12 {
			synctest.Wait()
			running = append(running, h.pending()...)
			require.LessOrEqual(t, len(running), 2, "running: %v", callBodies(running))
			require.NotEmpty(t, running)
			ids := map[string]bool{}
			for _, c := range running {
				require.False(t, ids[c.msg.SessionID], "two calls of session %s at once", c.msg.SessionID)
				ids[c.msg.SessionID] = true
			}
			c := running[0]
			running = running[1:]
			require.Greater(t, c.msg.SequenceNumber, last[c.msg.SessionID], "in order within session %s", c.msg.SessionID)
			last[c.msg.SessionID] = c.msg.SequenceNumber
			order = append(order, string(c.msg.Body))
			sess, ok := minibus.SessionFromContext(c.ctx)
			require.True(t, ok)
			require.Equal(t, c.msg.SessionID, sess.SessionID())
			c.reply <- nil
		}
		env.WaitIdle()
		require.EqualValues(t, 2, h.max.Load())
		h.mu.Lock()
		require.Empty(t, h.twice)
		h.mu.Unlock()
		for _, s := range sessions {
			var mine []string
			for _, b := range order {
				if b[:1] == s {
					mine = append(mine, b)
				}
			}
			require.Equal(t, []string{s + "0", s + "1", s + "2"}, mine)
		}
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
}

// SessionFromContext gives a session handler its session: its id and
// state. Other contexts have none.
func TestSessionProcessor_SessionFromContext(t *testing.T) {
	_, ok := minibus.SessionFromContext(context.Background())
	require.False(t, ok)
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", &minibus.QueueProperties{RequiresSession: true})
		plain := mkQueue(t, env, "plain", nil)
		var mu sync.Mutex
		var seen []string
		p, err := q.NewSessionProcessor(func(ctx context.Context, m *minibus.ReceivedMessage) error {
			s, ok := minibus.SessionFromContext(ctx)
			if !ok {
				return errors.New("no session")
			}
			state, err := s.GetSessionState(ctx, nil)
			if err != nil {
				return err
			}
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s %s state=%q", s.SessionID(), m.Body, state))
			mu.Unlock()
			return s.SetSessionState(ctx, append(state, m.Body...), nil)
		}, nil)
		require.NoError(t, err)
		pp, err := plain.NewProcessor(func(ctx context.Context, m *minibus.ReceivedMessage) error {
			if _, ok := minibus.SessionFromContext(ctx); ok {
				return errors.New("a plain processor has no session")
			}
			return nil
		}, nil)
		require.NoError(t, err)
		env.Start(p)
		env.Start(pp)
		sendToSession(t, q, "s", "a", "b")
		sendBodies(t, plain, "x")
		synctest.Wait()
		env.WaitIdle()
		mu.Lock()
		require.Equal(t, []string{`s a state=""`, `s b state="a"`}, seen)
		mu.Unlock()
		require.Zero(t, plain.RuntimeProperties().TotalMessageCount)
		require.Empty(t, eventLines(env.Events(), "", minibus.EventAbandoned))
		s, err := q.AcceptSession(context.Background(), "s", nil)
		require.NoError(t, err)
		state, err := s.GetSessionState(context.Background(), nil)
		require.NoError(t, err)
		require.Equal(t, "ab", string(state))
		require.NoError(t, s.Close(context.Background()))
	})
}

// A session processor releases a session as soon as it has nothing
// available, without the clock moving: another receiver can accept it, and
// one session at a time still serves every session.
func TestSessionProcessor_ReleasesSessionAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", &minibus.QueueProperties{RequiresSession: true})
		var mu sync.Mutex
		var seen []string
		p, err := q.NewSessionProcessor(func(_ context.Context, m *minibus.ReceivedMessage) error {
			mu.Lock()
			seen = append(seen, string(m.Body))
			mu.Unlock()
			return nil
		}, &minibus.SessionProcessorOptions{MaxConcurrentSessions: 1})
		require.NoError(t, err)
		env.Start(p)
		sendToSession(t, q, "A", "a1")
		synctest.Wait()
		env.WaitIdle()
		s, err := q.AcceptSession(context.Background(), "A", nil)
		require.NoError(t, err, "the processor released session A")
		require.NoError(t, s.Close(context.Background()))
		sendToSession(t, q, "B", "b1")
		sendToSession(t, q, "A", "a2")
		sendToSession(t, q, "C", "c1")
		synctest.Wait()
		env.WaitIdle()
		mu.Lock()
		require.Equal(t, []string{"a1", "b1", "a2", "c1"}, seen)
		mu.Unlock()
		require.Equal(t, epoch, env.Clock().Now())
	})
}

// In a session, a message waiting for its retry holds back the session's
// later messages; other sessions go on.
func TestSessionProcessor_RetryHoldsBackSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := minibustest.New(t)
		q := mkQueue(t, env, "q", &minibus.QueueProperties{RequiresSession: true})
		var mu sync.Mutex
		var seen []string
		p, err := q.NewSessionProcessor(func(_ context.Context, m *minibus.ReceivedMessage) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("%s dc=%d", m.Body, m.DeliveryCount))
			if string(m.Body) == "a1" && m.DeliveryCount == 1 {
				return errors.New("later")
			}
			return nil
		}, &minibus.SessionProcessorOptions{MaxConcurrentSessions: 2, RetryDelay: func(uint32) time.Duration { return time.Minute }})
		require.NoError(t, err)
		env.Start(p)
		sendToSession(t, q, "A", "a1", "a2")
		sendToSession(t, q, "B", "b1")
		synctest.Wait()
		env.WaitIdle()
		mu.Lock()
		require.ElementsMatch(t, []string{"a1 dc=1", "b1 dc=1"}, seen)
		seen = nil
		mu.Unlock()
		require.EqualValues(t, 2, q.RuntimeProperties().ActiveMessageCount)
		s, err := q.AcceptSession(context.Background(), "A", nil)
		require.NoError(t, err)
		msgs, err := s.ReceiveMessages(context.Background(), 2, &minibus.ReceiveMessagesOptions{NoWait: true})
		require.NoError(t, err)
		require.Empty(t, msgs, "a2 waits behind a1")
		require.NoError(t, s.Close(context.Background()))

		env.Advance(time.Minute)
		mu.Lock()
		require.Equal(t, []string{"a1 dc=2", "a2 dc=1"}, seen)
		mu.Unlock()
		require.Zero(t, q.RuntimeProperties().TotalMessageCount)
	})
}
