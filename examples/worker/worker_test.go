package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The worker mails what it can, dead-letters a bad address, and retries a
// mail server that is down a minute later: the test waits for quiescence
// and travels in time instead of sleeping.
func TestWorker(t *testing.T) {
	env := minibustest.New(t)
	ctx := context.Background()
	var down atomic.Bool
	down.Store(true)
	w, err := NewWorker(env.Namespace(), func(ctx context.Context, to, body string) error {
		if down.Load() && to == "bob@example.com" {
			return ErrServerDown
		}
		return nil
	})
	require.NoError(t, err)
	stop := env.Start(w.Processor())

	require.NoError(t, w.Enqueue(ctx, "ada@example.com", "hi"))
	require.NoError(t, w.Enqueue(ctx, "bob@example.com", "hi"))
	require.NoError(t, w.Enqueue(ctx, "nobody", "hi"))
	env.WaitIdle()
	require.Equal(t, []string{"ada@example.com"}, w.Sent(), "bob's server is down: retried in a minute")

	q, err := env.Namespace().Queue("emails")
	require.NoError(t, err)
	rp := q.RuntimeProperties()
	require.EqualValues(t, 1, rp.ActiveMessageCount, "bob's email waits for its retry")
	require.EqualValues(t, 1, rp.DeadLetterMessageCount, "the bad address")

	down.Store(false)
	env.Advance(time.Minute) // the retry is due: handled before Advance returns
	require.ElementsMatch(t, []string{"ada@example.com", "bob@example.com"}, w.Sent())
	require.Zero(t, q.RuntimeProperties().ActiveMessageCount)

	// What happened, from the journal.
	var dead []string
	for _, ev := range env.Events() {
		if ev.Kind == minibus.EventDeadLettered {
			dead = append(dead, ev.Reason)
		}
	}
	require.Equal(t, []string{"BadAddress"}, dead)
	require.NoError(t, stop())
}

// A completion that fails (here injected) leaves the message locked; its
// lock ends and it is delivered, and mailed, again.
func TestWorkerCompleteFails(t *testing.T) {
	env := minibustest.New(t)
	ctx := context.Background()
	var mails atomic.Int32
	w, err := NewWorker(env.Namespace(), func(context.Context, string, string) error {
		mails.Add(1)
		return nil
	})
	require.NoError(t, err)
	env.Start(w.Processor())
	env.FailNext("emails", minibus.OpComplete, 1, errors.New("network blip"))

	require.NoError(t, w.Enqueue(ctx, "ada@example.com", "hi"))
	env.WaitIdle()
	require.EqualValues(t, 1, mails.Load())
	q, err := env.Namespace().Queue("emails")
	require.NoError(t, err)
	require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount, "still locked: the completion failed")

	env.Advance(time.Minute) // LockDuration: the lock ends and the message comes back
	require.EqualValues(t, 2, mails.Load(), "delivered again")
	require.Zero(t, q.RuntimeProperties().ActiveMessageCount)
}
