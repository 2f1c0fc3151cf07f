package modeltest

import (
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// T5: a call blocked on an entity wakes when a forward brings it a message
// through time, as for a send (TestRegressionT5_ForwardWakesReceiver in the
// root), so the harness's blocked calls must move the clock no further than
// that arrival. wakeDeadline used to look at the entity's own deadlines
// only: here it said +1m, where dest's locks end (L6, Q4: then m1 and m2
// are next again), and the harness compared a receive the broker had
// answered at +1s with "later", the only message available then, with the
// model's answer at +1m, m1 and m2 (found by TestModelDurable's soak).
func TestWakeDeadline_T5_ForwardArrival(t *testing.T) {
	m := newRefModel(epoch.UnixNano())
	dest, err := m.createQueue("dest", &minibus.QueueProperties{LockDuration: time.Minute})
	require.NoError(t, err)
	src, err := m.createQueue("src", &minibus.QueueProperties{ForwardTo: "dest"})
	require.NoError(t, err)
	_, err = m.send(dest, []*minibus.Message{{Body: []byte("m1")}, {Body: []byte("m2")}}, mUnset)
	require.NoError(t, err)
	_, err = m.send(src, []*minibus.Message{{Body: []byte("later"), ScheduledEnqueueTime: epoch.Add(time.Second)}}, mUnset)
	require.NoError(t, err)
	r, err := m.newReceiver(dest, false, sqMain)
	require.NoError(t, err)
	got, wouldBlock, err := m.receive(r, 2)
	require.NoError(t, err)
	require.False(t, wouldBlock)
	require.Len(t, got, 2)
	require.True(t, m.receiveBlocks(r))

	require.Equal(t, epoch.Add(time.Minute).UnixNano(), m.entityWake(dest), "dest's own first deadline: its locks end")
	at := m.wakeDeadline(dest)
	require.Equal(t, epoch.Add(time.Second).UnixNano(), at, "the forward from src arrives at +1s")
	m.advance(at)
	got, wouldBlock, err = m.receive(r, 2)
	require.NoError(t, err)
	require.False(t, wouldBlock)
	require.Equal(t, []string{"later#3/1"}, describeWant(got))
}

// SS3, T5: AcceptNextSession blocked on a session queue wakes when a
// forward brings a message of a free session, before the queue's own first
// deadline (here the end of session a's lock).
func TestWakeDeadline_T5_ForwardWakesAcceptNext(t *testing.T) {
	m := newRefModel(epoch.UnixNano())
	dest, err := m.createQueue("dest", &minibus.QueueProperties{LockDuration: time.Minute, RequiresSession: true})
	require.NoError(t, err)
	src, err := m.createQueue("src", &minibus.QueueProperties{ForwardTo: "dest"})
	require.NoError(t, err)
	_, err = m.acceptSession(dest, "a", false)
	require.NoError(t, err)
	_, err = m.send(src, []*minibus.Message{{Body: []byte("later"), SessionID: "b", ScheduledEnqueueTime: epoch.Add(time.Second)}}, mUnset)
	require.NoError(t, err)
	require.True(t, m.acceptBlocks(dest))

	require.Equal(t, epoch.Add(time.Minute).UnixNano(), m.entityWake(dest), "dest's own first deadline: session a's lock ends")
	at := m.wakeDeadline(dest)
	require.Equal(t, epoch.Add(time.Second).UnixNano(), at, "the forward from src arrives at +1s")
	m.advance(at)
	require.False(t, m.acceptBlocks(dest), "session b has a message now")
}

// T5: with nothing forwarded on the way, the wake-up is the entity's own
// first deadline; another entity's deadlines that forward nothing to it do
// not stop the clock.
func TestWakeDeadline_T5_OwnDeadline(t *testing.T) {
	m := newRefModel(epoch.UnixNano())
	dest, err := m.createQueue("dest", &minibus.QueueProperties{LockDuration: time.Minute})
	require.NoError(t, err)
	other, err := m.createQueue("other", nil)
	require.NoError(t, err)
	_, err = m.send(dest, []*minibus.Message{{Body: []byte("m1")}}, mUnset)
	require.NoError(t, err)
	_, err = m.send(other, []*minibus.Message{{Body: []byte("elsewhere"), ScheduledEnqueueTime: epoch.Add(time.Second)}}, mUnset)
	require.NoError(t, err)
	r, err := m.newReceiver(dest, false, sqMain)
	require.NoError(t, err)
	_, _, err = m.receive(r, 1)
	require.NoError(t, err)
	require.Equal(t, epoch.Add(time.Minute).UnixNano(), m.wakeDeadline(dest))
}
