package minibus_test

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// L11: a receive that has passed its first check of the receiver's closed
// flag, and is held in its own catch-up (here: an observer handed an
// expiry of another queue, as the catch-up delivers its events before the
// receive takes its entity's lock) while Receiver.Close completes,
// returns ErrClosed and takes nothing, though a message is available: the
// receive checks again under the entity's lock. Without that check it
// would take the message for a closed receiver (issue 42).
func TestL11_ReceiveClosedDuringItsCatchUp(t *testing.T) {
	ctx := context.Background()
	mock := clock.NewMock()
	mock.Set(epoch)
	reached, release := make(chan struct{}), make(chan struct{})
	var delivered []string
	ns := minibus.NewNamespace(minibus.WithClock(mock), minibus.WithObserver(func(ev minibus.Event) {
		switch {
		case ev.Kind == minibus.EventExpired && ev.Entity == "other":
			close(reached)
			<-release
		case ev.Kind == minibus.EventDelivered:
			delivered = append(delivered, ev.MessageID) // one receive at a time here
		}
	}))
	defer ns.Close()
	q, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	other, err := ns.CreateQueue("other", nil)
	require.NoError(t, err)
	require.NoError(t, other.SendMessage(ctx, &minibus.Message{MessageID: "x", TimeToLive: time.Minute}, nil))
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "a"}, nil))
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	mock.Add(time.Minute) // x is due to expire: the next call's catch-up does it

	type result struct {
		msgs []*minibus.ReceivedMessage
		err  error
	}
	got := make(chan result, 1)
	go func() {
		msgs, err := r.ReceiveMessages(ctx, 1, nil)
		got <- result{msgs, err}
	}()
	select {
	case <-reached: // the receive is in its catch-up, past its first check
	case <-time.After(resultTimeout):
		t.Fatal("the receive did not catch up")
	}
	require.NoError(t, r.Close(ctx))
	close(release)
	var res result
	select {
	case res = <-got:
	case <-time.After(resultTimeout):
		t.Fatal("the receive did not return")
	}
	requireSentinel(t, res.err, minibus.ErrClosed, `receiver of queue "q"`)
	require.Nil(t, res.msgs)
	require.Empty(t, delivered, "nothing was taken")

	r2, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer r2.Close(ctx)
	msgs, err := r2.ReceiveMessages(ctx, 1, &minibus.ReceiveMessagesOptions{NoWait: true})
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, "a", msgs[0].MessageID)
	require.EqualValues(t, 1, msgs[0].DeliveryCount, "its first delivery")
}
