package minibus_test

import (
	"bytes"
	"testing"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// Session state and the entity's size and quota (SEMANTICS SS9).

// stateOf returns n bytes of session state.
func stateOf(n int) []byte { return bytes.Repeat([]byte("s"), n) }

// SS9, L13: a session state's length is part of its queue's SizeInBytes,
// held or not, and leaves it when the state shrinks or is cleared; a
// subscription's is part of its topic's, and leaves it with the
// subscription.
func TestSS9_StateCountsInSizeInBytes(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("q", nil)
	size := func() int64 { return q.RuntimeProperties().SizeInBytes }
	a := e.accept(q, "a")
	require.NoError(t, a.SetSessionState(e.ctx, stateOf(100), nil))
	require.EqualValues(t, 100, size())
	require.NoError(t, a.SetSessionState(e.ctx, stateOf(40), nil))
	require.EqualValues(t, 40, size())
	b := e.accept(q, "b")
	require.NoError(t, b.SetSessionState(e.ctx, stateOf(10), nil))
	require.EqualValues(t, 50, size())
	require.NoError(t, a.Close(e.ctx))
	require.NoError(t, b.Close(e.ctx))
	require.EqualValues(t, 50, size(), "a state is kept, and counted, when its session is not held (SS6)")
	e.sendSession(q, "a", "m")
	withMessage := size()
	require.Greater(t, withMessage, int64(50))
	a = e.accept(q, "a")
	require.NoError(t, a.SetSessionState(e.ctx, nil, nil))
	require.Equal(t, withMessage-40, size())

	top := e.topic("t", nil)
	sub := e.subscription(top, "s", &minibus.SubscriptionProperties{RequiresSession: true})
	require.NoError(t, e.accept(sub, "x").SetSessionState(e.ctx, stateOf(70), nil))
	require.EqualValues(t, 70, top.RuntimeProperties().SizeInBytes)
	require.NoError(t, top.DeleteSubscription("s"))
	require.Zero(t, top.RuntimeProperties().SizeInBytes, "deleting the subscription freed its states")
}

// SS9, V3: a state counts against MaxSizeInMegabytes with the messages: one
// that would pass it is ErrQuotaExceeded and changes nothing; a state that
// fills the quota refuses a send; shrinking it always succeeds and makes
// room. A subscription's states count against its topic's quota.
func TestSS9_StateAgainstQuota(t *testing.T) {
	const mb = 1 << 20
	e := newEnv(t)
	q := e.sessionQueue("q", &minibus.QueueProperties{MaxSizeInMegabytes: 1, MaxMessageSizeInKilobytes: 1024})
	e.sendSession(q, "a", "m")
	msgSize := q.RuntimeProperties().SizeInBytes
	a := e.accept(q, "a")
	require.NoError(t, a.SetSessionState(e.ctx, stateOf(10), nil))

	err := a.SetSessionState(e.ctx, stateOf(mb-int(msgSize)+1), nil)
	requireSentinel(t, err, minibus.ErrQuotaExceeded, `queue "q": size`)
	require.Contains(t, err.Error(), `session "a"'s state`)
	got, err := a.GetSessionState(e.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, stateOf(10), got, "nothing changed")
	require.Equal(t, msgSize+10, q.RuntimeProperties().SizeInBytes)

	require.NoError(t, a.SetSessionState(e.ctx, stateOf(mb-int(msgSize)), nil), "exactly the quota")
	require.EqualValues(t, mb, q.RuntimeProperties().SizeInBytes)
	requireSentinel(t, q.SendMessage(e.ctx, &minibus.Message{SessionID: "b"}, nil), minibus.ErrQuotaExceeded, `queue "q"`)
	require.NoError(t, a.SetSessionState(e.ctx, stateOf(mb-int(msgSize)), nil), "the same size again")
	require.NoError(t, a.SetSessionState(e.ctx, stateOf(5), nil), "shrinking")
	e.sendSession(q, "b", "room again")

	top := e.topic("t", &minibus.TopicProperties{MaxSizeInMegabytes: 1, MaxMessageSizeInKilobytes: 1024})
	s1 := e.subscription(top, "s1", &minibus.SubscriptionProperties{RequiresSession: true})
	s2 := e.subscription(top, "s2", &minibus.SubscriptionProperties{RequiresSession: true})
	require.NoError(t, e.accept(s1, "x").SetSessionState(e.ctx, stateOf(mb-100), nil))
	y := e.accept(s2, "y")
	requireSentinel(t, y.SetSessionState(e.ctx, stateOf(101), nil), minibus.ErrQuotaExceeded, `subscription "t/Subscriptions/s2"`)
	require.NoError(t, y.SetSessionState(e.ctx, stateOf(100), nil))
	require.EqualValues(t, mb, top.RuntimeProperties().SizeInBytes)
}

// SS9: a state larger than MaxMessageSizeInKilobytes is ErrMessageTooLarge
// and changes nothing; a subscription's limit is its topic's.
func TestSS9_StateLargerThanAMessage(t *testing.T) {
	e := newEnv(t)
	q := e.sessionQueue("q", &minibus.QueueProperties{MaxMessageSizeInKilobytes: 1})
	a := e.accept(q, "a")
	require.NoError(t, a.SetSessionState(e.ctx, stateOf(1024), nil))
	err := a.SetSessionState(e.ctx, stateOf(1025), nil)
	requireSentinel(t, err, minibus.ErrMessageTooLarge, `queue "q": session "a": state is 1025 bytes, more than MaxMessageSizeInKilobytes (1024 bytes)`)
	got, err := a.GetSessionState(e.ctx, nil)
	require.NoError(t, err)
	require.Len(t, got, 1024)
	require.EqualValues(t, 1024, q.RuntimeProperties().SizeInBytes)

	top := e.topic("t", &minibus.TopicProperties{MaxMessageSizeInKilobytes: 1})
	sub := e.subscription(top, "s", &minibus.SubscriptionProperties{RequiresSession: true})
	requireSentinel(t, e.accept(sub, "x").SetSessionState(e.ctx, stateOf(1025), nil), minibus.ErrMessageTooLarge, `subscription "t/Subscriptions/s"`)
	require.Zero(t, top.RuntimeProperties().SizeInBytes)
}

// SS9 in a durable namespace: after a clean close (a snapshot) and after a
// crash (the log) the states count as before, and the quota they fill
// still refuses a send.
func TestSS9_StateSizeAfterOpen(t *testing.T) {
	const mb = 1 << 20
	for _, how := range []string{"crash", "close"} {
		t.Run(how, func(t *testing.T) {
			d := newDurableEnv(t)
			q := d.sessionQueue("q", &minibus.QueueProperties{MaxSizeInMegabytes: 1, MaxMessageSizeInKilobytes: 1024})
			d.sendSession(q, "a", "m")
			a := d.accept(q, "a")
			require.NoError(t, a.SetSessionState(d.ctx, stateOf(300), nil))
			b := d.accept(q, "b")
			require.NoError(t, b.SetSessionState(d.ctx, stateOf(mb-1000), nil))
			require.NoError(t, b.SetSessionState(d.ctx, stateOf(mb-2000), nil))
			top := d.topic("t", nil)
			sub := d.subscription(top, "s", &minibus.SubscriptionProperties{RequiresSession: true})
			require.NoError(t, d.accept(sub, "x").SetSessionState(d.ctx, stateOf(70), nil))
			size := q.RuntimeProperties().SizeInBytes
			require.Greater(t, size, int64(mb-2000+300))
			if how == "crash" {
				d.crash()
			} else {
				d.reopen()
			}

			q = d.q("q")
			require.Equal(t, size, q.RuntimeProperties().SizeInBytes)
			top, err := d.ns.Topic("t")
			require.NoError(t, err)
			require.EqualValues(t, 70, top.RuntimeProperties().SizeInBytes)
			requireSentinel(t, q.SendMessage(d.ctx, &minibus.Message{SessionID: "c", Body: stateOf(2000)}, nil), minibus.ErrQuotaExceeded, `queue "q"`)
			b = d.accept(q, "b")
			require.NoError(t, b.SetSessionState(d.ctx, nil, nil))
			require.Equal(t, size-(mb-2000), q.RuntimeProperties().SizeInBytes)
			d.sendSession(q, "c", string(stateOf(2000)))
		})
	}
}
