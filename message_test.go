package minibus_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// DD2, V4: a message sent without MessageID gets a random one; fields come
// back as sent; the broker copied the body and properties.
func TestMessageFieldsRoundTrip(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	body := []byte("body")
	props := map[string]any{"s": "x", "i": 1, "f": 1.5, "b": true, "t": epoch, "d": time.Second, "raw": []byte("r"), "nil": nil}
	sent := &minibus.Message{
		MessageID: "id-1", Body: body, ContentType: "text/plain", CorrelationID: "corr", Subject: "subj",
		To: "to", ReplyTo: "reply", ReplyToSessionID: "rs", PartitionKey: "pk",
		TimeToLive: time.Hour, ApplicationProperties: props,
	}
	require.NoError(t, q.SendMessage(e.ctx, sent, nil))
	body[0] = 'X'
	props["s"] = "changed"
	props["raw"].([]byte)[0] = 'X'
	require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{}, nil))

	r := e.receiver(q, nil)
	got := e.receive(r, 2)
	m := got[0]
	require.Equal(t, "body", string(m.Body))
	require.Equal(t, "id-1", m.MessageID)
	require.Equal(t, "text/plain", m.ContentType)
	require.Equal(t, "corr", m.CorrelationID)
	require.Equal(t, "subj", m.Subject)
	require.Equal(t, "to", m.To)
	require.Equal(t, "reply", m.ReplyTo)
	require.Equal(t, "rs", m.ReplyToSessionID)
	require.Equal(t, "pk", m.PartitionKey)
	require.Equal(t, time.Hour, m.TimeToLive)
	require.True(t, m.ExpiresAt.Equal(at(time.Hour)))
	require.Equal(t, "x", m.ApplicationProperties["s"])
	require.Equal(t, []byte("r"), m.ApplicationProperties["raw"])
	require.Len(t, m.ApplicationProperties, len(props))

	require.Len(t, got[1].MessageID, 32, "DD2: a random id")
	require.NotEqual(t, got[1].MessageID, e.receiveAllAfterSend(q, r).MessageID)
}

// receiveAllAfterSend sends an empty message and receives it.
func (e *env) receiveAllAfterSend(q *minibus.Queue, r *minibus.Receiver) *minibus.ReceivedMessage {
	e.t.Helper()
	require.NoError(e.t, q.SendMessage(e.ctx, &minibus.Message{}, nil))
	return e.receive(r, 1)[0]
}

// requireBodies asserts each message's body against want: nil stays nil,
// empty stays empty and non-nil.
func requireBodies(t *testing.T, want [][]byte, got []*minibus.ReceivedMessage) {
	t.Helper()
	require.Len(t, got, len(want))
	for i, w := range want {
		if w == nil {
			require.Nil(t, got[i].Body, "message %d: a nil Body reads back nil", i)
			continue
		}
		require.NotNil(t, got[i].Body, "message %d: an empty Body reads back non-nil", i)
		require.Equal(t, string(w), string(got[i].Body), "message %d", i)
	}
}

// V4: a nil Body reads back nil; an empty non-nil Body reads back empty and
// non-nil, from PeekMessages, ReceiveMessages (peek-lock and
// receive-and-delete, one message and a batch) and ReceiveDeferredMessages,
// on a queue and on a subscription.
func TestV4_EmptyBodyStaysNonNil(t *testing.T) {
	batch := [][]byte{{}, nil, []byte("x"), {}}
	for _, sub := range []bool{false, true} {
		kind := "queue"
		if sub {
			kind = "subscription"
		}
		// setup returns a function that sends messages with these bodies,
		// and a receiver factory.
		setup := func(t *testing.T) (*env, func(...[]byte), func(minibus.ReceiveMode) *minibus.Receiver) {
			e := newEnv(t)
			var s sender
			var recv interface {
				NewReceiver(*minibus.ReceiverOptions) (*minibus.Receiver, error)
			}
			if sub {
				top := e.topic("t", nil)
				s, recv = top, e.subscription(top, "s", nil)
			} else {
				q := e.queue("q", nil)
				s, recv = q, q
			}
			put := func(bs ...[]byte) {
				msgs := make([]*minibus.Message, len(bs))
				for i, b := range bs {
					msgs[i] = &minibus.Message{Body: b}
				}
				require.NoError(t, s.SendMessages(e.ctx, msgs, nil))
			}
			return e, put, func(mode minibus.ReceiveMode) *minibus.Receiver {
				return e.receiver(recv, &minibus.ReceiverOptions{ReceiveMode: mode})
			}
		}
		t.Run(kind+"/peek", func(t *testing.T) {
			e, put, newReceiver := setup(t)
			put(batch...)
			r := newReceiver(minibus.ReceiveModePeekLock)
			requireBodies(t, batch, e.peekAll(r))
			for i, b := range batch {
				one, err := r.PeekMessages(e.ctx, 1, &minibus.PeekMessagesOptions{FromSequenceNumber: int64(i + 1)})
				require.NoError(t, err)
				requireBodies(t, [][]byte{b}, one)
			}
		})
		for _, mode := range []minibus.ReceiveMode{minibus.ReceiveModePeekLock, minibus.ReceiveModeReceiveAndDelete} {
			name := "peeklock"
			if mode == minibus.ReceiveModeReceiveAndDelete {
				name = "receiveanddelete"
			}
			t.Run(kind+"/receive/"+name+"/one", func(t *testing.T) {
				e, put, newReceiver := setup(t)
				r := newReceiver(mode)
				for _, b := range batch {
					put(b)
					requireBodies(t, [][]byte{b}, e.receive(r, 1))
				}
			})
			t.Run(kind+"/receive/"+name+"/batch", func(t *testing.T) {
				e, put, newReceiver := setup(t)
				r := newReceiver(mode)
				put(batch...)
				requireBodies(t, batch, e.receive(r, len(batch)))
				put([]byte{}, []byte{})
				requireBodies(t, [][]byte{{}, {}}, e.receive(r, 2))
			})
			t.Run(kind+"/deferred/"+name, func(t *testing.T) {
				e, put, newReceiver := setup(t)
				pl := newReceiver(minibus.ReceiveModePeekLock)
				put(batch...)
				got := e.receive(pl, len(batch))
				for _, m := range got {
					require.NoError(t, pl.DeferMessage(e.ctx, m, nil))
				}
				r := newReceiver(mode)
				for i, b := range batch {
					one, err := r.ReceiveDeferredMessages(e.ctx, []int64{got[i].SequenceNumber}, nil)
					require.NoError(t, err)
					requireBodies(t, [][]byte{b}, one)
					if mode == minibus.ReceiveModePeekLock {
						require.NoError(t, r.AbandonMessage(e.ctx, one[0], nil), "stays deferred")
					}
				}
				if mode == minibus.ReceiveModePeekLock {
					all, err := r.ReceiveDeferredMessages(e.ctx, seqs(got), nil)
					require.NoError(t, err)
					requireBodies(t, batch, all)
				}
			})
		}
	}
}

// V4 under concurrency: the broker recycles the records and bodies of
// messages that are gone. While receivers complete, peekers peek, a
// receive-and-delete receiver drains and the clock makes unsettled locks
// expire, every message any of them gets must carry its own body, never
// another's.
func TestV4_RecycledBodiesNeverLeak(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{LockDuration: 5 * time.Second, MaxDeliveryCount: 100})
	const n = 2000
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	check := func(ms []*minibus.ReceivedMessage) {
		for _, m := range ms {
			if string(m.Body) != m.MessageID {
				t.Errorf("message %s has body %q", m.MessageID, m.Body)
			}
		}
	}
	sent := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(sent)
		for i := range n {
			id := strconv.Itoa(i)
			if err := q.SendMessage(ctx, &minibus.Message{MessageID: id, Body: []byte(id)}, nil); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for c := range 3 {
		mode := minibus.ReceiveModePeekLock
		if c == 2 {
			mode = minibus.ReceiveModeReceiveAndDelete
		}
		r := e.receiver(q, &minibus.ReceiverOptions{ReceiveMode: mode})
		wg.Go(func() {
			for {
				ms, err := r.ReceiveMessages(ctx, 16, nil)
				if err != nil {
					return // cancelled at the end
				}
				check(ms)
				for i, m := range ms {
					if mode == minibus.ReceiveModeReceiveAndDelete || i%7 == 3 {
						continue // gone already, or left for its lock to expire
					}
					_ = r.CompleteMessage(ctx, m, nil) // its lock may have expired: fine
				}
			}
		})
	}
	for range 2 {
		p := e.receiver(q, nil)
		wg.Go(func() {
			for ctx.Err() == nil {
				ms, err := p.PeekMessages(ctx, 50, &minibus.PeekMessagesOptions{FromSequenceNumber: 1})
				if err != nil {
					return
				}
				check(ms)
			}
		})
	}
	// This goroutine alone moves the clock, until everything is settled.
	drained := false
	for range 100000 {
		e.mock.Add(time.Second)
		select {
		case <-sent:
			drained = q.RuntimeProperties().ActiveMessageCount == 0
		default:
		}
		if drained {
			break
		}
	}
	cancel()
	wg.Wait()
	require.True(t, drained, "the queue was not drained")
	require.Zero(t, q.RuntimeProperties().TotalMessageCount, "nothing was dead-lettered")
}

// V4 on a drain: a receive that drains a backlog nothing has been sent to
// for a while copies the bodies into the room of bodies settled before it.
// Each message still owns its body, capped at its length; what earlier
// receives returned is untouched; and scribbling on a received body and
// abandoning the message changes nothing inside the broker.
func TestV4_DrainedBodiesAreOwnCopies(t *testing.T) {
	for _, mode := range []minibus.ReceiveMode{minibus.ReceiveModePeekLock, minibus.ReceiveModeReceiveAndDelete} {
		t.Run(strconv.Itoa(int(mode)), func(t *testing.T) {
			e := newEnv(t)
			q := e.queue("q", &minibus.QueueProperties{MaxDeliveryCount: 100})
			r := e.receiver(q, &minibus.ReceiverOptions{ReceiveMode: mode})
			const n = 320
			body := func(id string) string { return strings.Repeat(id+".", 1024/(len(id)+1)) }
			for i := range n {
				id := strconv.Itoa(i)
				require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{MessageID: id, Body: []byte(body(id))}, nil))
			}
			e.mock.Add(time.Second) // nothing sent for a while: the receives below drain
			var held []*minibus.ReceivedMessage
			done := map[string]bool{}
			for len(done) < n {
				ms, err := r.ReceiveMessages(e.ctx, 32, &minibus.ReceiveMessagesOptions{NoWait: true})
				require.NoError(t, err)
				require.NotEmpty(t, ms)
				for i, m := range ms {
					require.Equal(t, body(m.MessageID), string(m.Body), "delivery %d", m.DeliveryCount)
					require.Equal(t, len(m.Body), cap(m.Body), "a body that could grow into another")
					if mode == minibus.ReceiveModePeekLock && i == 0 && m.DeliveryCount == 1 {
						copy(m.Body, "scribbled")
						require.NoError(t, r.AbandonMessage(e.ctx, m, nil)) // back, as sent (V4)
						continue
					}
					if mode == minibus.ReceiveModePeekLock {
						require.NoError(t, r.CompleteMessage(e.ctx, m, nil))
					}
					done[m.MessageID] = true
					held = append(held, m)
				}
				for _, m := range held {
					require.Equal(t, body(m.MessageID), string(m.Body), "a body received before changed")
				}
			}
			require.Zero(t, q.RuntimeProperties().TotalMessageCount)
		})
	}
}

// V4, R1: the copies a topic makes share one stored body; completing a copy
// in one subscription, which recycles what it can, leaves the others'
// bodies intact.
func TestV4_TopicCopiesKeepTheirBodies(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	a := e.receiver(e.subscription(top, "a", nil), nil)
	b := e.receiver(e.subscription(top, "b", nil), nil)
	for round := range 20 {
		bodies := make([]string, 20)
		for i := range bodies {
			bodies[i] = strconv.Itoa(round*100 + i)
			require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{Body: []byte(bodies[i])}, nil))
		}
		for _, m := range e.receive(a, 20) {
			require.NoError(t, a.CompleteMessage(e.ctx, m, nil))
		}
		// New sends would reuse any recycled body.
		require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{Body: []byte("overwrite!")}, nil))
		got := e.receive(b, 21)
		for i, want := range bodies {
			require.Equal(t, want, string(got[i].Body))
		}
		for _, m := range got {
			require.NoError(t, b.CompleteMessage(e.ctx, m, nil))
		}
		for _, m := range e.receive(a, 1) {
			require.NoError(t, a.CompleteMessage(e.ctx, m, nil))
		}
	}
}

// V4, R1, F2: the body a topic's copies share is reused only once every
// copy has been settled, wherever it went: completing the copies of one
// subscription, then sending more of the same size (which would take any
// room given back too early), leaves the bodies that another subscription
// and a queue fed by a third's ForwardTo deliver later as they were sent.
func TestV4_SharedBodyOutlivesEveryCopy(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	q := e.queue("q", nil)
	a := e.receiver(e.subscription(top, "a", nil), nil)
	b := e.receiver(e.subscription(top, "b", nil), nil)
	e.subscription(top, "c", &minibus.SubscriptionProperties{ForwardTo: "q"})
	fromQ := e.receiver(q, nil)
	body := func(id string) string { return fmt.Sprintf("%064s", id) }
	const n = 32
	var held []*minibus.ReceivedMessage // never settled: their bodies stay theirs
	check := func(r *minibus.Receiver, want int, settle bool) {
		t.Helper()
		for _, m := range e.receive(r, want) {
			require.Equal(t, body(m.MessageID), string(m.Body))
			if settle {
				require.NoError(t, r.CompleteMessage(e.ctx, m, nil))
			} else {
				held = append(held, m)
			}
		}
	}
	for round := range 10 {
		for i := range n {
			id := strconv.Itoa(round*n + i)
			require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{MessageID: id, Body: []byte(body(id))}, nil))
		}
		check(a, n, true)
		check(b, n, round%2 == 0) // every other round's copies stay locked
		for i := range n {
			id := "scribble" + strconv.Itoa(i)
			require.NoError(t, top.SendMessage(e.ctx, &minibus.Message{MessageID: id, Body: []byte(body(id))}, nil))
		}
		check(fromQ, 2*n, true)
		check(a, n, true)
		check(b, n, true)
		for _, m := range held {
			require.Equal(t, body(m.MessageID), string(m.Body), "a body received before changed")
		}
	}
}
