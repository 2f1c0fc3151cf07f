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

// Messages: their fields, their size limits and quotas (SEMANTICS V3) and
// the copies the broker keeps and hands out (V4).

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

// V3: a settlement whose PropertiesToModify would make the message larger
// than MaxMessageSizeInKilobytes (ErrMessageTooLarge) or its entity pass
// MaxSizeInMegabytes (ErrQuotaExceeded; a subscription's messages count
// against its topic's) is refused and changes nothing: the message stays
// locked with its properties, the counts and sizes stay, and its lock token
// still settles it. Abandon, defer and dead-letter; queue and subscription.
func TestV3_PropertiesToModifyTooLarge(t *testing.T) {
	const (
		maxMessage = 64 << 10
		quota      = 1 << 20
		target     = 4 // body "a", MessageID "m", property "k": "v"
	)
	settlements := []struct {
		name   string
		settle func(r *minibus.Receiver, m *minibus.ReceivedMessage, mod map[string]any) error
	}{
		{"abandon", func(r *minibus.Receiver, m *minibus.ReceivedMessage, mod map[string]any) error {
			return r.AbandonMessage(context.Background(), m, &minibus.AbandonMessageOptions{PropertiesToModify: mod})
		}},
		{"defer", func(r *minibus.Receiver, m *minibus.ReceivedMessage, mod map[string]any) error {
			return r.DeferMessage(context.Background(), m, &minibus.DeferMessageOptions{PropertiesToModify: mod})
		}},
		{"deadletter", func(r *minibus.Receiver, m *minibus.ReceivedMessage, mod map[string]any) error {
			return r.DeadLetterMessage(context.Background(), m, &minibus.DeadLetterOptions{Reason: "r", PropertiesToModify: mod})
		}},
	}
	limits := []struct {
		name string
		want error
		// fill is how many bytes of other messages the entity holds.
		fill int
		// grow is the size of the property value PropertiesToModify adds
		// (key "big": 3 more bytes).
		grow int
	}{
		// The message would be 65543 bytes; the entity stays far below 1 MiB.
		{"message too large", minibus.ErrMessageTooLarge, 0, maxMessage},
		// The message would be 2007 bytes; the entity, 1006 bytes over.
		{"quota exceeded", minibus.ErrQuotaExceeded, quota - target - 1000, 2000},
	}
	for _, sub := range []bool{false, true} {
		kind := "queue"
		if sub {
			kind = "subscription"
		}
		for _, s := range settlements {
			for _, l := range limits {
				t.Run(kind+"/"+s.name+"/"+l.name, func(t *testing.T) {
					p := newSizedPlace(t, sub)
					p.send(&minibus.Message{MessageID: "m", Body: []byte("a"), ApplicationProperties: map[string]any{"k": "v"}})
					// Fill with messages of at most 64 KiB (MessageID "m": one byte).
					for left := l.fill; left > 0; left -= maxMessage {
						p.send(&minibus.Message{MessageID: "m", Body: make([]byte, min(left, maxMessage)-1)})
					}
					before := p.counts()
					require.EqualValues(t, target+l.fill, before[2], "SizeInBytes before the settlement")
					m := p.e.receive(p.r, 1)[0]
					require.EqualValues(t, 1, m.SequenceNumber)

					err := s.settle(p.r, m, map[string]any{"big": strings.Repeat("x", l.grow)})
					requireSentinel(t, err, l.want, "")

					require.Equal(t, before, p.counts(), "counts and size unchanged")
					peeked := p.e.peekAll(p.r)[0]
					require.EqualValues(t, 1, peeked.SequenceNumber)
					require.Equal(t, minibus.MessageStateActive, peeked.State, "not deferred")
					require.Equal(t, map[string]any{"k": "v"}, peeked.ApplicationProperties, "properties unchanged")
					// Still locked under the same token: it settles.
					require.NoError(t, p.r.AbandonMessage(p.e.ctx, m, nil), "the message stayed locked")
					again := p.e.receive(p.r, 1)[0]
					require.EqualValues(t, 1, again.SequenceNumber)
					require.EqualValues(t, 2, again.DeliveryCount)
					require.Equal(t, map[string]any{"k": "v"}, again.ApplicationProperties, "properties unchanged")
					require.NoError(t, p.r.CompleteMessage(p.e.ctx, again, nil))
					require.Equal(t, [3]int64{before[0] - 1, 0, before[2] - target}, p.counts())
				})
			}
		}
	}
}

// V3, S5: a topic's quota counts its scheduled messages: with scheduled
// messages filling all but 1 KiB of it, a send or a schedule of 2 KiB is
// ErrQuotaExceeded, and one of 1 KiB fits exactly. (One subscription with a
// TrueFilter: a message's copies are the size of the message.)
func TestV3_TopicQuotaCountsScheduledMessages(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", &minibus.TopicProperties{MaxSizeInMegabytes: 1, MaxMessageSizeInKilobytes: 1})
	s := e.subscription(top, "s", nil)
	kib := func() *minibus.Message { return &minibus.Message{MessageID: "m", Body: make([]byte, 1023)} } // 1024 bytes
	batch := func(n int) []*minibus.Message {
		out := make([]*minibus.Message, n)
		for i := range out {
			out[i] = kib()
		}
		return out
	}
	for left := 1023; left > 0; left -= 100 {
		_, err := top.ScheduleMessages(e.ctx, batch(min(left, 100)), at(time.Hour), nil)
		require.NoError(t, err)
	}
	rp := top.RuntimeProperties()
	require.EqualValues(t, 1023, rp.ScheduledMessageCount)
	require.EqualValues(t, 1023*1024, rp.SizeInBytes, "the scheduled messages count")

	requireSentinel(t, top.SendMessages(e.ctx, batch(2), nil), minibus.ErrQuotaExceeded, `topic "t"`)
	_, err := top.ScheduleMessages(e.ctx, batch(2), at(time.Hour), nil)
	requireSentinel(t, err, minibus.ErrQuotaExceeded, `topic "t"`)
	require.Zero(t, s.RuntimeProperties().TotalMessageCount, "nothing enqueued")
	require.EqualValues(t, 1023, top.RuntimeProperties().ScheduledMessageCount, "nothing scheduled")

	require.NoError(t, top.SendMessages(e.ctx, batch(1), nil), "exactly 1 MiB fits")
	require.EqualValues(t, 1<<20, top.RuntimeProperties().SizeInBytes)
	requireSentinel(t, top.SendMessages(e.ctx, batch(1), nil), minibus.ErrQuotaExceeded, `topic "t"`)
}

// V3, S5: ScheduleMessages on a topic, and SendMessage with a future
// ScheduledEnqueueTime, are checked against the copies the subscriptions'
// rules would make now, as an immediate send is: refused with
// ErrQuotaExceeded when those copies would pass MaxSizeInMegabytes. A
// schedule whose copies fit is accepted (a FalseFilter subscription makes
// no copy) and copied at activation.
func TestV3_ScheduledTopicMessageQuotaCountsCopies(t *testing.T) {
	const kib = 1024
	// msg is a message of exactly n KiB.
	msg := func(n int, at time.Time) *minibus.Message {
		return &minibus.Message{MessageID: "m", Body: make([]byte, n*kib-1), ScheduledEnqueueTime: at}
	}
	setup := func(t *testing.T) (*env, *minibus.Topic, []*minibus.Subscription) {
		e := newEnv(t)
		top := e.topic("t", &minibus.TopicProperties{MaxSizeInMegabytes: 1})
		var subs []*minibus.Subscription
		for _, name := range []string{"a", "b", "c"} {
			subs = append(subs, e.subscription(top, name, nil))
		}
		subs = append(subs, e.subscription(top, "none", &minibus.SubscriptionProperties{
			DefaultRule: &minibus.RuleProperties{Filter: minibus.FalseFilter{}},
		}))
		return e, top, subs
	}
	totals := func(subs []*minibus.Subscription) []int64 {
		out := make([]int64, len(subs))
		for i, s := range subs {
			out[i] = s.RuntimeProperties().TotalMessageCount
		}
		return out
	}

	t.Run("ScheduleMessages", func(t *testing.T) {
		e, top, subs := setup(t)
		// 2 messages of 200 KiB: 6 copies, 1200 KiB, in an empty 1 MiB topic.
		seqs, err := top.ScheduleMessages(e.ctx, []*minibus.Message{msg(200, time.Time{}), msg(200, time.Time{})}, at(time.Hour), nil)
		requireSentinel(t, err, minibus.ErrQuotaExceeded, `topic "t"`)
		require.Nil(t, seqs)
		require.Zero(t, top.RuntimeProperties().ScheduledMessageCount, "nothing scheduled")
		require.Zero(t, top.RuntimeProperties().SizeInBytes)
		e.advanceTo(2 * time.Hour)
		require.Equal(t, []int64{0, 0, 0, 0}, totals(subs), "nothing activated")
	})

	t.Run("SendMessage with ScheduledEnqueueTime", func(t *testing.T) {
		e, top, subs := setup(t)
		require.NoError(t, top.SendMessage(e.ctx, msg(200, time.Time{}), nil))
		require.EqualValues(t, 600*kib, top.RuntimeProperties().SizeInBytes, "3 copies")
		// 200 KiB more, scheduled: 3 copies would make 1200 KiB.
		err := top.SendMessage(e.ctx, msg(200, at(time.Hour)), nil)
		requireSentinel(t, err, minibus.ErrQuotaExceeded, `topic "t"`)
		_, err = top.ScheduleMessages(e.ctx, []*minibus.Message{msg(200, time.Time{})}, at(time.Hour), nil)
		requireSentinel(t, err, minibus.ErrQuotaExceeded, `topic "t"`)
		require.Zero(t, top.RuntimeProperties().ScheduledMessageCount, "nothing scheduled")
		require.EqualValues(t, 600*kib, top.RuntimeProperties().SizeInBytes)

		// 130 KiB: the rules make 3 copies (990 KiB in all), not 4 (1120).
		_, err = top.ScheduleMessages(e.ctx, []*minibus.Message{msg(130, time.Time{})}, at(time.Hour), nil)
		require.NoError(t, err, "copies that fit are accepted")
		e.advanceTo(time.Hour)
		require.Equal(t, []int64{2, 2, 2, 0}, totals(subs), "copied at activation")
		require.EqualValues(t, 990*kib, top.RuntimeProperties().SizeInBytes)
	})
}

// V3: a message larger than MaxMessageSizeInKilobytes is
// ErrMessageTooLarge; a send that would pass MaxSizeInMegabytes is
// ErrQuotaExceeded; a batch is all or nothing.
func TestV3_SizeLimits(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{MaxMessageSizeInKilobytes: 1, MaxSizeInMegabytes: 1})
	require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{MessageID: "m", Body: make([]byte, 1023)}, nil), "1 KiB exactly")
	err := q.SendMessage(e.ctx, &minibus.Message{MessageID: "m", Body: make([]byte, 1024)}, nil)
	requireSentinel(t, err, minibus.ErrMessageTooLarge, "message 0 is 1025 bytes")
	err = q.SendMessage(e.ctx, &minibus.Message{MessageID: "m", Body: make([]byte, 1000), ApplicationProperties: map[string]any{"p": strings.Repeat("x", 30)}}, nil)
	requireSentinel(t, err, minibus.ErrMessageTooLarge, "1032 bytes")
	require.EqualValues(t, 1024, q.RuntimeProperties().SizeInBytes)

	// Fill to exactly 1 MiB, in batches of 64 messages of 1 KiB.
	batch := make([]*minibus.Message, 64)
	for i := range batch {
		batch[i] = &minibus.Message{MessageID: "m", Body: make([]byte, 1023)}
	}
	for range 15 {
		require.NoError(t, q.SendMessages(e.ctx, batch, nil))
	}
	require.NoError(t, q.SendMessages(e.ctx, batch[:63], nil))
	require.EqualValues(t, 1<<20, q.RuntimeProperties().SizeInBytes)
	err = q.SendMessage(e.ctx, &minibus.Message{MessageID: "m"}, nil)
	requireSentinel(t, err, minibus.ErrQuotaExceeded, "MaxSizeInMegabytes")
	require.EqualValues(t, 1024, q.RuntimeProperties().ActiveMessageCount, "nothing was enqueued")

	r := e.receiver(q, &minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
	e.receive(r, 2)
	err = q.SendMessages(e.ctx, batch[:3], nil)
	requireSentinel(t, err, minibus.ErrQuotaExceeded, "plus 3072 bytes")
	require.NoError(t, q.SendMessages(e.ctx, batch[:2], nil))
}

// V3, DD2: a message refused as too large when the sender gave no
// MessageID says that the MessageID the broker made counted.
func TestV3_TooLargeErrorMentionsBrokerMessageID(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{MaxMessageSizeInKilobytes: 1})
	top := e.topic("t", &minibus.TopicProperties{MaxMessageSizeInKilobytes: 1})
	// 1000 bytes of body plus the 32 of the broker-made id: 1032 > 1024.
	for _, s := range []sender{q, top} {
		err := s.SendMessages(e.ctx, []*minibus.Message{{Body: make([]byte, 1000)}}, nil)
		requireSentinel(t, err, minibus.ErrMessageTooLarge, "1032 bytes")
		require.Contains(t, err.Error(), "MessageID", "the broker-made MessageID counted")
	}
	require.Zero(t, q.RuntimeProperties().TotalMessageCount)
}

// V3: a topic's quota counts its scheduled messages and every copy in its
// subscriptions; a batch is all or nothing.
func TestV3_TopicQuota(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", &minibus.TopicProperties{MaxSizeInMegabytes: 1, MaxMessageSizeInKilobytes: 1})
	e.subscription(top, "a", nil)
	e.subscription(top, "b", nil)
	big := func() *minibus.Message { return &minibus.Message{MessageID: "m", Body: make([]byte, 1023)} }
	batch := make([]*minibus.Message, 512)
	for i := range batch {
		batch[i] = big()
	}
	require.NoError(t, top.SendMessages(e.ctx, batch[:511], nil))
	_, err := top.ScheduleMessages(e.ctx, []*minibus.Message{big()}, at(time.Hour), nil)
	require.NoError(t, err)
	require.EqualValues(t, 1<<20-1024, top.RuntimeProperties().SizeInBytes)
	err = top.SendMessage(e.ctx, big(), nil)
	requireSentinel(t, err, minibus.ErrQuotaExceeded, "2048 bytes of messages and copies")
	require.EqualValues(t, 1<<20-1024, top.RuntimeProperties().SizeInBytes, "nothing was enqueued")
	err = top.SendMessage(e.ctx, &minibus.Message{MessageID: "m", Body: make([]byte, 1024)}, nil)
	requireSentinel(t, err, minibus.ErrMessageTooLarge, "1025 bytes")
}

// V4: the broker copies bodies and properties both ways.
func TestV4_Copies(t *testing.T) {
	forEachKind(t, settings{}, func(t *testing.T, f *fixture) {
		f.put("abc")
		r := f.receiver(minibus.ReceiveModePeekLock)
		m := f.receive(r, 1)[0]
		m.Body[0] = 'X'
		require.NoError(t, r.AbandonMessage(f.ctx, m, &minibus.AbandonMessageOptions{PropertiesToModify: map[string]any{"b": []byte("x")}}))
		m2 := f.receive(r, 1)[0]
		require.Equal(t, "abc", string(m2.Body))
		m2.ApplicationProperties["b"].([]byte)[0] = 'Y'
		m2.ApplicationProperties["new"] = 1
		p := f.peekAll(r)[0]
		require.Equal(t, map[string]any{"b": []byte("x")}, p.ApplicationProperties)

		// Bodies received together do not share room: appending to one does
		// not reach the next.
		f.put("one", "two")
		both := f.receiveAll(r, 10)
		require.Equal(t, []string{"one", "two"}, bodies(both))
		_ = append(both[0].Body, "XXX"...)
		require.Equal(t, "two", string(both[1].Body))
	})
}
