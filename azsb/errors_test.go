package azsb_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/go-amqp"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// requireCode checks that err is an *azservicebus.Error with code, found
// with errors.As as the SDK's documentation does, and still the minibus
// sentinel.
func requireCode(t *testing.T, err error, code azservicebus.Code, sentinel error) {
	t.Helper()
	var sbErr *azservicebus.Error
	require.ErrorAs(t, err, &sbErr)
	require.Equal(t, code, sbErr.Code)
	require.ErrorIs(t, err, sentinel)
	require.True(t, strings.HasPrefix(err.Error(), "("+string(code)+"): "), err.Error())
	require.NotContains(t, err.Error(), "): (", "mapped once")
}

// requireCondition checks that err carries the service's *amqp.Error with
// cond, is no *azservicebus.Error (the SDK returns these unwrapped), and is
// still the minibus sentinel.
func requireCondition(t *testing.T, err error, cond amqp.ErrCond, sentinel error) {
	t.Helper()
	var amqpErr *amqp.Error
	require.ErrorAs(t, err, &amqpErr)
	require.Equal(t, cond, amqpErr.Condition)
	var sbErr *azservicebus.Error
	require.False(t, errors.As(err, &sbErr))
	require.ErrorIs(t, err, sentinel)
}

func TestErrorLockLost(t *testing.T) {
	e := newEnv(t)
	e.queue("q", &minibus.QueueProperties{LockDuration: 10 * time.Second})
	require.NoError(t, e.sender("q").SendMessage(e.ctx, &azservicebus.Message{}, nil))
	r := e.receiver("q", nil)
	m := e.receive(r, 1)[0]
	e.mock.Add(10 * time.Second)
	requireCode(t, r.CompleteMessage(e.ctx, m, nil), azservicebus.CodeLockLost, minibus.ErrLockLost)
	requireCode(t, r.RenewMessageLock(e.ctx, m, nil), azservicebus.CodeLockLost, minibus.ErrLockLost)
	m = e.receive(r, 1)[0]
	require.NoError(t, r.CompleteMessage(e.ctx, m, nil))
	requireCode(t, r.CompleteMessage(e.ctx, m, nil), azservicebus.CodeLockLost, minibus.ErrLockLost)
	requireCode(t, r.AbandonMessage(e.ctx, &azservicebus.ReceivedMessage{LockToken: [16]byte{1}}, nil), azservicebus.CodeLockLost, minibus.ErrLockLost)
}

func TestErrorNotFound(t *testing.T) {
	e := newEnv(t)
	// Senders and receivers open nothing: the first call reports the
	// missing entity.
	s := e.sender("missing")
	err := s.SendMessage(e.ctx, &azservicebus.Message{}, nil)
	requireCode(t, err, azservicebus.CodeNotFound, minibus.ErrNotFound)
	// A sender's name may be a queue's or a topic's: the error says neither
	// exists, not that a topic does not.
	require.EqualError(t, err, `(notfound): azsb: sender for "missing": no queue or topic of that name: not found`)
	r := e.receiver("missing", nil)
	_, err = r.ReceiveMessages(e.ctx, 1, nil)
	requireCode(t, err, azservicebus.CodeNotFound, minibus.ErrNotFound)
	rs, err := e.c.NewReceiverForSubscription("no-topic", "sub", nil)
	require.NoError(t, err)
	_, err = rs.PeekMessages(e.ctx, 1, nil)
	requireCode(t, err, azservicebus.CodeNotFound, minibus.ErrNotFound)
	require.NoError(t, rs.Close(e.ctx))

	// A sequence number that is no deferred or scheduled message: the
	// service's 404.
	e.queue("q", nil)
	_, err = e.receiver("q", nil).ReceiveDeferredMessages(e.ctx, []int64{7}, nil)
	requireCode(t, err, azservicebus.CodeNotFound, minibus.ErrMessageNotFound)
	requireCode(t, e.sender("q").CancelScheduledMessages(e.ctx, []int64{7}, nil), azservicebus.CodeNotFound, minibus.ErrMessageNotFound)

	// A queue deleted and created anew is found again.
	qs := e.sender("q")
	require.NoError(t, qs.SendMessage(e.ctx, &azservicebus.Message{}, nil))
	require.NoError(t, e.ns.DeleteQueue("q"))
	err = qs.SendMessage(e.ctx, &azservicebus.Message{}, nil)
	requireCode(t, err, azservicebus.CodeNotFound, minibus.ErrNotFound)
	require.ErrorContains(t, err, `sender for "q": no queue or topic of that name`)
	e.queue("q", nil)
	require.NoError(t, qs.SendMessage(e.ctx, &azservicebus.Message{Body: []byte("new")}, nil))
	require.Equal(t, "new", string(e.receive(e.receiver("q", nil), 1)[0].Body))
}

func TestErrorClosed(t *testing.T) {
	e := newEnv(t)
	e.queue("q", nil)
	s := e.sender("q")
	require.NoError(t, s.Close(e.ctx))
	requireCode(t, s.SendMessage(e.ctx, &azservicebus.Message{}, nil), azservicebus.CodeClosed, minibus.ErrClosed)

	r := e.receiver("q", nil)
	blocked := make(chan error, 1)
	go func() {
		_, err := r.ReceiveMessages(e.ctx, 1, nil)
		blocked <- err
	}()
	require.NoError(t, e.c.Close(e.ctx)) // closes r, blocked or not yet
	requireCode(t, <-blocked, azservicebus.CodeClosed, minibus.ErrClosed)
	_, err := r.PeekMessages(e.ctx, 1, nil)
	requireCode(t, err, azservicebus.CodeClosed, minibus.ErrClosed)

	_, err = e.c.NewSender("q", nil)
	require.EqualError(t, err, "client has been closed by user")
	require.ErrorIs(t, err, minibus.ErrClosed)

	// A closed namespace.
	c := azsb_newClient(e)
	require.NoError(t, e.ns.Close())
	s2, err := c.NewSender("q", nil)
	require.NoError(t, err)
	requireCode(t, s2.SendMessage(e.ctx, &azservicebus.Message{}, nil), azservicebus.CodeClosed, minibus.ErrClosed)
}

func TestErrorSizeAndQuota(t *testing.T) {
	e := newEnv(t)
	e.queue("q", &minibus.QueueProperties{MaxSizeInMegabytes: 1})
	s := e.sender("q")
	err := s.SendMessage(e.ctx, &azservicebus.Message{Body: make([]byte, 300*1024)}, nil)
	require.ErrorIs(t, err, azservicebus.ErrMessageTooLarge, "as the SDK's SendMessage")
	require.ErrorIs(t, err, minibus.ErrMessageTooLarge)
	var sbErr *azservicebus.Error
	require.False(t, errors.As(err, &sbErr))

	for i := range 5 {
		err = s.SendMessage(e.ctx, &azservicebus.Message{Body: make([]byte, 250*1024)}, nil)
		if err != nil {
			require.Equal(t, 4, i)
			break
		}
	}
	requireCondition(t, err, amqp.ErrCondResourceLimitExceeded, minibus.ErrQuotaExceeded)
}

func TestErrorEntityDisabled(t *testing.T) {
	e := newEnv(t)
	e.queue("q", &minibus.QueueProperties{Status: minibus.EntityStatusDisabled})
	requireCondition(t, e.sender("q").SendMessage(e.ctx, &azservicebus.Message{}, nil), "com.microsoft:entity-disabled", minibus.ErrEntityDisabled)
	_, err := e.receiver("q", nil).ReceiveMessages(e.ctx, 1, nil)
	requireCondition(t, err, "com.microsoft:entity-disabled", minibus.ErrEntityDisabled)
}

func TestErrorContext(t *testing.T) {
	e := newEnv(t)
	e.queue("q", nil)
	r := e.receiver("q", nil)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err := r.ReceiveMessages(ctx, 1, nil)
	require.Equal(t, context.Canceled, err, "the raw ctx error, as the SDK returns it")
	ctx, cancel = context.WithTimeout(e.ctx, time.Millisecond)
	defer cancel()
	_, err = r.ReceiveMessages(ctx, 1, nil)
	require.Equal(t, context.DeadlineExceeded, err)
}

// TestErrorClientSide: what the SDK refuses itself, with its text.
func TestErrorClientSide(t *testing.T) {
	e := newEnv(t)
	e.queue("q", nil)
	r := e.receiver("q", nil)
	_, err := r.ReceiveMessages(e.ctx, 0, nil)
	require.EqualError(t, err, "maxMessages should be greater than 0")
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
	_, err = r.ReceiveMessages(e.ctx, 5001, nil)
	require.EqualError(t, err, "maxMessages cannot exceed 5000")

	_, err = e.c.NewReceiverForQueue("q", &azservicebus.ReceiverOptions{SubQueue: 9})
	require.EqualError(t, err, "unknown SubQueue 9")
	_, err = e.c.NewReceiverForQueue("q", &azservicebus.ReceiverOptions{ReceiveMode: 7})
	require.ErrorContains(t, err, "invalid receive mode 7")
	_, err = e.c.NewReceiverForQueue("", nil)
	require.EqualError(t, err, "a queue or subscription was not specified")
	_, err = e.c.NewReceiverForSubscription("t", "", nil)
	require.EqualError(t, err, "a queue or subscription was not specified")

	_, err = e.sender("q").ScheduleMessages(e.ctx, nil, epoch, nil)
	require.EqualError(t, err, "expected one or more messages")

	require.NoError(t, e.sender("q").SendMessage(e.ctx, &azservicebus.Message{}, nil))
	rd := e.receiver("q", &azservicebus.ReceiverOptions{ReceiveMode: azservicebus.ReceiveModeReceiveAndDelete})
	m := e.receive(rd, 1)[0]
	require.Zero(t, m.LockToken)
	require.Nil(t, m.LockedUntil)
	require.EqualError(t, rd.CompleteMessage(e.ctx, m, nil), "messages that are received in `ReceiveModeReceiveAndDelete` mode are not settleable")

	// Nil messages, which the SDK dereferences, are errors.
	require.ErrorIs(t, e.sender("q").SendMessage(e.ctx, nil, nil), minibus.ErrInvalidArgument)
	require.ErrorIs(t, e.sender("q").SendAMQPAnnotatedMessage(e.ctx, nil, nil), minibus.ErrInvalidArgument)
	require.ErrorIs(t, r.CompleteMessage(e.ctx, nil, nil), minibus.ErrInvalidArgument)
}

// TestErrorConcurrentReceive: a second ReceiveMessages on one Receiver
// while the first waits is the SDK's error.
func TestErrorConcurrentReceive(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	r := e.receiver("q", nil)
	const refused = "receiver is already receiving messages. ReceiveMessages() cannot be called concurrently"
	first := make(chan error, 1)
	go func() {
		for { // refused only while the probe below holds the receiver
			_, err := r.ReceiveMessages(e.ctx, 1, nil)
			if err == nil || err.Error() != refused {
				first <- err
				return
			}
		}
	}()
	// Probe with a done ctx until a probe is refused: the goroutine is then
	// in its waiting ReceiveMessages.
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	done, stop := context.WithCancel(ctx)
	stop()
	for {
		_, err := r.ReceiveMessages(done, 1, nil)
		if err != nil && err.Error() == refused {
			break
		}
		require.NoError(t, ctx.Err(), "the concurrent receive was never refused")
	}
	require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{}, nil))
	require.NoError(t, <-first)
}

// TestErrorSessionEntities: using a session entity without sessions, and
// the reverse, give the service's amqp:not-allowed.
func TestErrorSessionEntities(t *testing.T) {
	e := newEnv(t)
	e.queue("plain", nil)
	_, err := e.c.AcceptSessionForQueue(e.ctx, "plain", "s", nil)
	requireCondition(t, err, amqp.ErrCondNotAllowed, minibus.ErrInvalidArgument)
	require.ErrorContains(t, err, "does not require sessions")
	_, err = e.c.AcceptNextSessionForQueue(e.ctx, "plain", nil)
	requireCondition(t, err, amqp.ErrCondNotAllowed, minibus.ErrInvalidArgument)
	_, err = e.c.AcceptSessionForQueue(e.ctx, "missing", "s", nil)
	requireCode(t, err, azservicebus.CodeNotFound, minibus.ErrNotFound)
}
