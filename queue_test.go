package minibus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// V1: names; case-insensitive lookup keeping the created spelling.
func TestV1_QueueNames(t *testing.T) {
	e := newEnv(t)
	for _, good := range []string{"a", "Orders", "site1/my.queue-2_x", strings.Repeat("q", 260)} {
		_, err := e.ns.CreateQueue(good, nil)
		require.NoError(t, err, good)
	}
	for name, why := range map[string]string{
		"":                        "empty",
		strings.Repeat("q", 261):  "longer than 260",
		"bad name":                "character ' '",
		"q@1":                     "character '@'",
		"-q":                      "must start",
		"q/":                      "must end",
		"$q":                      "character '$'",
		"/q":                      "must start",
		"q\x00":                   "character",
		"\u00e9t\u00e9":           "character",
		"ok?":                     "character '?'",
		"trailing.":               "must end",
		"_lead":                   "must start",
		"x*y":                     "character '*'",
		"has#hash":                "character '#'",
		"tab\tname":               "character",
		"a/b/c/d/e/f/g/h/i/j/k/.": "must end",
	} {
		_, err := e.ns.CreateQueue(name, nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, why)
	}
	q, err := e.ns.Queue("ORDERS")
	require.NoError(t, err)
	require.Equal(t, "Orders", q.Name())
	_, err = e.ns.CreateQueue("orders", nil)
	requireSentinel(t, err, minibus.ErrAlreadyExists, `queue "Orders"`)
	require.Contains(t, e.ns.Queues(), "Orders")
}

// V2: defaults and ranges of queue properties.
func TestV2_QueueProperties(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	require.Equal(t, minibus.QueueProperties{
		LockDuration:                        time.Minute,
		MaxDeliveryCount:                    10,
		DuplicateDetectionHistoryTimeWindow: 10 * time.Minute,
		MaxSizeInMegabytes:                  1024,
		MaxMessageSizeInKilobytes:           256,
	}, q.Properties())

	for _, c := range []struct {
		p   minibus.QueueProperties
		why string
	}{
		{minibus.QueueProperties{LockDuration: 4 * time.Second}, "LockDuration 4s"},
		{minibus.QueueProperties{LockDuration: 5*time.Minute + 1}, "LockDuration"},
		{minibus.QueueProperties{LockDuration: -time.Second}, "LockDuration"},
		{minibus.QueueProperties{MaxDeliveryCount: -1}, "MaxDeliveryCount -1"},
		{minibus.QueueProperties{DefaultMessageTimeToLive: -1}, "DefaultMessageTimeToLive"},
		{minibus.QueueProperties{AutoDeleteOnIdle: 5*time.Minute - 1}, "AutoDeleteOnIdle"},
		{minibus.QueueProperties{AutoDeleteOnIdle: -time.Hour}, "AutoDeleteOnIdle"},
		{minibus.QueueProperties{DuplicateDetectionHistoryTimeWindow: 19 * time.Second}, "DuplicateDetectionHistoryTimeWindow"},
		{minibus.QueueProperties{DuplicateDetectionHistoryTimeWindow: 8 * 24 * time.Hour}, "DuplicateDetectionHistoryTimeWindow"},
		{minibus.QueueProperties{MaxSizeInMegabytes: -1}, "MaxSizeInMegabytes"},
		{minibus.QueueProperties{MaxMessageSizeInKilobytes: 102401}, "MaxMessageSizeInKilobytes"},
		{minibus.QueueProperties{Status: 7}, "Status"},
		{minibus.QueueProperties{RequiresSession: true, ForwardTo: "q"}, "cannot forward"}, // F1
	} {
		_, err := e.ns.CreateQueue("bad", &c.p)
		requireSentinel(t, err, minibus.ErrInvalidArgument, c.why)
		_, err = e.ns.UpdateQueue("q", c.p)
		requireSentinel(t, err, minibus.ErrInvalidArgument, c.why)
	}
	require.NotContains(t, e.ns.Queues(), "bad")
	// V2: RequiresSession and RequiresDuplicateDetection are fixed at creation.
	_, err := e.ns.UpdateQueue("q", minibus.QueueProperties{RequiresSession: true})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "RequiresSession cannot change")
	_, err = e.ns.UpdateQueue("q", minibus.QueueProperties{RequiresDuplicateDetection: true})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "RequiresDuplicateDetection cannot change")

	for _, ok := range []minibus.QueueProperties{
		{LockDuration: 5 * time.Second}, {LockDuration: 5 * time.Minute}, {MaxDeliveryCount: 1},
		{AutoDeleteOnIdle: 5 * time.Minute}, {DuplicateDetectionHistoryTimeWindow: 20 * time.Second},
		{DuplicateDetectionHistoryTimeWindow: 7 * 24 * time.Hour}, {DefaultMessageTimeToLive: time.Nanosecond},
	} {
		_, err := e.ns.UpdateQueue("q", ok)
		require.NoError(t, err, "%+v", ok)
	}
}

func TestQueueLifecycle(t *testing.T) {
	e := newEnv(t)
	q := e.queue("b", nil)
	e.queue("a", nil)
	require.Equal(t, []string{"a", "b"}, e.ns.Queues())
	e.send(q, "x")
	r := e.receiver(q, nil)

	updated, err := e.ns.UpdateQueue("B", minibus.QueueProperties{MaxDeliveryCount: 3})
	require.NoError(t, err)
	require.EqualValues(t, 3, updated.Properties().MaxDeliveryCount)
	require.EqualValues(t, 3, q.Properties().MaxDeliveryCount, "handles share the queue")
	require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount, "update keeps messages")

	require.NoError(t, e.ns.DeleteQueue("b"))
	requireSentinel(t, e.ns.DeleteQueue("b"), minibus.ErrNotFound, `queue "b"`)
	_, err = e.ns.Queue("b")
	requireSentinel(t, err, minibus.ErrNotFound, `queue "b"`)
	_, err = e.ns.UpdateQueue("b", minibus.QueueProperties{})
	requireSentinel(t, err, minibus.ErrNotFound, `queue "b"`)
	requireSentinel(t, q.SendMessage(e.ctx, &minibus.Message{}, nil), minibus.ErrNotFound, `queue "b"`)
	_, err = r.ReceiveMessages(e.ctx, 1, nil)
	requireSentinel(t, err, minibus.ErrNotFound, `queue "b"`)
	_, err = q.NewReceiver(nil)
	requireSentinel(t, err, minibus.ErrNotFound, `queue "b"`)
	require.Equal(t, []string{"a"}, e.ns.Queues())

	again := e.queue("b", nil)
	require.Zero(t, again.RuntimeProperties().TotalMessageCount, "a new queue of the old name is empty")
	requireSentinel(t, q.SendMessage(e.ctx, &minibus.Message{}, nil), minibus.ErrNotFound, `queue "b"`)
}

// A receive blocked on a queue that is deleted returns ErrNotFound.
func TestDeleteWakesBlockedReceivers(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	r := e.receiver(q, nil)
	errc := make(chan error)
	go func() {
		_, err := r.ReceiveMessages(e.ctx, 1, nil)
		errc <- err
	}()
	require.NoError(t, e.ns.DeleteQueue("q"))
	requireSentinel(t, <-errc, minibus.ErrNotFound, `queue "q"`)
}

// V5: Status. Disabled refuses sends and receives, SendDisabled sends,
// ReceiveDisabled receives and peeks; messages are kept and time runs.
func TestV5_Status(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{DefaultMessageTimeToLive: time.Hour})
	e.send(q, "a", "b")
	r := e.receiver(q, nil)
	m := e.receive(r, 1)[0]

	set := func(s minibus.EntityStatus) {
		t.Helper()
		_, err := e.ns.UpdateQueue("q", minibus.QueueProperties{DefaultMessageTimeToLive: time.Hour, Status: s})
		require.NoError(t, err)
	}
	sendErr := func() error { return q.SendMessage(e.ctx, &minibus.Message{}, nil) }
	recvErr := func() error { _, err := r.ReceiveMessages(e.ctx, 1, nil); return err }
	peekErr := func() error { _, err := r.PeekMessages(e.ctx, 1, nil); return err }

	set(minibus.EntityStatusDisabled)
	requireSentinel(t, sendErr(), minibus.ErrEntityDisabled, "Disabled")
	requireSentinel(t, recvErr(), minibus.ErrEntityDisabled, "Disabled")
	requireSentinel(t, peekErr(), minibus.ErrEntityDisabled, "Disabled")
	requireSentinel(t, r.CompleteMessage(e.ctx, m, nil), minibus.ErrEntityDisabled, "Disabled")
	_, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{}}, at(time.Hour), nil)
	requireSentinel(t, err, minibus.ErrEntityDisabled, "Disabled")

	set(minibus.EntityStatusSendDisabled)
	requireSentinel(t, sendErr(), minibus.ErrEntityDisabled, "SendDisabled")
	require.Len(t, e.receive(r, 1), 1)

	set(minibus.EntityStatusReceiveDisabled)
	require.NoError(t, sendErr())
	requireSentinel(t, recvErr(), minibus.ErrEntityDisabled, "ReceiveDisabled")
	requireSentinel(t, peekErr(), minibus.ErrEntityDisabled, "ReceiveDisabled")

	set(minibus.EntityStatusDisabled)
	e.mock.Add(time.Hour) // time runs: everything expires while disabled
	require.Zero(t, q.RuntimeProperties().ActiveMessageCount)
	set(minibus.EntityStatusActive)
	e.requireNothing(r)
}

// V5: a receiver blocked when its queue is disabled returns
// ErrEntityDisabled.
func TestV5_DisableWakesBlockedReceivers(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	r := e.receiver(q, nil)
	errc := make(chan error)
	go func() {
		_, err := r.ReceiveMessages(e.ctx, 1, nil)
		errc <- err
	}()
	// The update can land before the receive blocks; either way it fails.
	_, err := e.ns.UpdateQueue("q", minibus.QueueProperties{Status: minibus.EntityStatusReceiveDisabled})
	require.NoError(t, err)
	requireSentinel(t, <-errc, minibus.ErrEntityDisabled, "ReceiveDisabled")
}

// V2: RuntimeProperties times.
func TestQueueRuntimeTimes(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	rp := q.RuntimeProperties()
	require.True(t, rp.CreatedAt.Equal(epoch))
	require.True(t, rp.UpdatedAt.Equal(epoch))
	e.mock.Add(time.Minute)
	e.send(q, "a")
	e.mock.Add(time.Minute)
	_, err := e.ns.UpdateQueue("q", minibus.QueueProperties{})
	require.NoError(t, err)
	rp = q.RuntimeProperties()
	require.True(t, rp.AccessedAt.Equal(at(time.Minute)), "AccessedAt %v", rp.AccessedAt)
	require.True(t, rp.UpdatedAt.Equal(at(2*time.Minute)), "UpdatedAt %v", rp.UpdatedAt)
	require.True(t, rp.CreatedAt.Equal(epoch))
}

func TestNewReceiverBadOptions(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	_, err := q.NewReceiver(&minibus.ReceiverOptions{ReceiveMode: 5})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "ReceiveMode")
	_, err = q.NewReceiver(&minibus.ReceiverOptions{SubQueue: -1})
	requireSentinel(t, err, minibus.ErrInvalidArgument, "SubQueue")
	_, err = q.AcceptSession(e.ctx, "s", nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "does not require sessions")
	_, err = q.AcceptNextSession(e.ctx, nil)
	requireSentinel(t, err, minibus.ErrInvalidArgument, "does not require sessions")
	var nilQ *minibus.Queue
	requireSentinel(t, nilQ.SendMessage(e.ctx, &minibus.Message{}, nil), minibus.ErrInvalidArgument, "nil *Queue")
	//lint:ignore SA1012 a nil context is bad input that must not panic
	requireSentinel(t, q.SendMessage(nil, &minibus.Message{}, nil), minibus.ErrInvalidArgument, "nil context")
}
