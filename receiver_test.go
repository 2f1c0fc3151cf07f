package minibus_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

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

// L8: ReceiveMessages returns min(maxMessages, available) messages in one
// call, in sequence order: 150 of 200, then the other 50 (no cap below
// maxMessages), in both receive modes.
func TestL8_ReceiveReturnsMinOfMaxAndAvailable(t *testing.T) {
	for _, mode := range []minibus.ReceiveMode{minibus.ReceiveModePeekLock, minibus.ReceiveModeReceiveAndDelete} {
		e := newEnv(t)
		q := e.queue("q", nil)
		all := make([]string, 200)
		for i := range all {
			all[i] = "m"
		}
		e.send(q, all...)
		r := e.receiver(q, &minibus.ReceiverOptions{ReceiveMode: mode})
		want := make([]int64, 200)
		for i := range want {
			want[i] = int64(i + 1)
		}
		first, err := r.ReceiveMessages(e.ctx, 150, nil)
		require.NoError(t, err)
		require.Equal(t, want[:150], seqs(first), "mode %v: exactly 150 of 200 in one call", mode)
		rest, err := r.ReceiveMessages(e.ctx, 150, nil)
		require.NoError(t, err)
		require.Equal(t, want[150:], seqs(rest), "mode %v: the 50 left", mode)
	}
}

// L11: Receiver.Close wakes that receiver's own blocked ReceiveMessages,
// which returns ErrClosed; another receiver's blocked call stays blocked.
// In a synctest bubble, so that "blocked" is exact.
func TestL11_ReceiverCloseWakesItsBlockedReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mock := clock.NewMock()
		ns := minibus.NewNamespace(minibus.WithClock(mock))
		defer ns.Close() // also wakes a receive a broken Close left blocked
		q, err := ns.CreateQueue("q", nil)
		require.NoError(t, err)
		closing, err := q.NewReceiver(nil)
		require.NoError(t, err)
		other, err := q.NewReceiver(nil)
		require.NoError(t, err)
		type result struct {
			msgs []*minibus.ReceivedMessage
			err  error
		}
		closingDone := make(chan result, 1)
		otherDone := make(chan result, 1)
		go func() {
			msgs, err := closing.ReceiveMessages(ctx, 1, nil)
			closingDone <- result{msgs, err}
		}()
		go func() {
			msgs, err := other.ReceiveMessages(ctx, 1, nil)
			otherDone <- result{msgs, err}
		}()
		synctest.Wait()
		require.Empty(t, closingDone, "blocked: the queue is empty")
		require.Empty(t, otherDone, "blocked: the queue is empty")

		require.NoError(t, closing.Close(ctx))
		synctest.Wait()
		select {
		case res := <-closingDone:
			require.Nil(t, res.msgs)
			requireSentinel(t, res.err, minibus.ErrClosed, "receiver")
		default:
			t.Fatal("Receiver.Close did not wake its blocked ReceiveMessages")
		}
		require.Empty(t, otherDone, "another receiver's blocked call is not woken")

		require.NoError(t, q.SendMessage(ctx, &minibus.Message{Body: []byte("a")}, nil))
		synctest.Wait()
		select {
		case res := <-otherDone:
			require.NoError(t, res.err)
			require.Equal(t, []string{"a"}, bodies(res.msgs))
		default:
			t.Fatal("the other receiver did not get the message")
		}
	})
}
