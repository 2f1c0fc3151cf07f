package minibus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// Entities' names (SEMANTICS V1), properties (V2) and status (V5).

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

// V1: a name with a character that is not allowed names that character,
// not the first byte of its UTF-8 encoding.
func TestV1_BadNameErrorNamesTheCharacter(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	s := e.subscription(top, "s", nil)
	_, errQ := e.ns.CreateQueue("café", nil)
	_, errT := e.ns.CreateTopic("café", nil)
	_, errS := top.CreateSubscription("café", nil)
	errR := s.CreateRule("café", nil)
	for _, err := range []error{errQ, errT, errS, errR} {
		requireSentinel(t, err, minibus.ErrInvalidArgument, "'é'")
		require.NotContains(t, err.Error(), "Ã", "the text names the character, not its first byte")
	}
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

// V1: creating a queue or topic whose name the other kind holds is
// ErrAlreadyExists naming the entity being created and the one holding the
// name.
func TestV1_NameTakenErrorNamesBoth(t *testing.T) {
	e := newEnv(t)
	e.queue("x", nil)
	_, err := e.ns.CreateTopic("x", nil)
	requireSentinel(t, err, minibus.ErrAlreadyExists, `topic "x"`)
	require.Contains(t, err.Error(), `queue "x"`, "says which entity holds the name")

	e.topic("y", nil)
	_, err = e.ns.CreateQueue("y", nil)
	requireSentinel(t, err, minibus.ErrAlreadyExists, `queue "y"`)
	require.Contains(t, err.Error(), `topic "y"`, "says which entity holds the name")
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

// V5: a disabled subscription gets no copies; a receive-disabled one keeps
// getting them but cannot be read.
func TestV5_SubscriptionStatus(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	off := e.subscription(top, "off", &minibus.SubscriptionProperties{Status: minibus.EntityStatusDisabled})
	noRecv := e.subscription(top, "norecv", &minibus.SubscriptionProperties{Status: minibus.EntityStatusReceiveDisabled})
	e.send(top, "a")
	require.Zero(t, off.RuntimeProperties().TotalMessageCount)
	require.EqualValues(t, 1, noRecv.RuntimeProperties().ActiveMessageCount)
	r := e.receiver(noRecv, nil)
	_, err := r.ReceiveMessages(e.ctx, 1, nil)
	requireSentinel(t, err, minibus.ErrEntityDisabled, `subscription "t/Subscriptions/norecv"`)
	_, err = e.ns.UpdateTopic("t", minibus.TopicProperties{Status: minibus.EntityStatusSendDisabled})
	require.NoError(t, err)
	requireSentinel(t, top.SendMessage(e.ctx, &minibus.Message{}, nil), minibus.ErrEntityDisabled, `topic "t"`)
}
