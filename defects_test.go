package minibus_test

// Tests for the defects listed in the architecture issue, one test per item
// (to be spread over the files they belong to). Items 1–6 fail on the code
// before their fix; item 7 closes test gaps and passes on a correct broker.

import (
	"context"
	"math"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// ---------------------------------------------------------------------------
// Item 1. V3: PropertiesToModify on abandon, defer and dead-letter obey
// MaxMessageSizeInKilobytes and MaxSizeInMegabytes.

// sizedPlace is a queue or a subscription with MaxMessageSizeInKilobytes 64
// and MaxSizeInMegabytes 1 (a subscription's: its topic's).
type sizedPlace struct {
	e *env
	// send sends messages to the queue or the topic.
	send func(msgs ...*minibus.Message)
	r    *minibus.Receiver
	// counts reads the place's active and dead-letter counts and the size
	// counted against MaxSizeInMegabytes (for a subscription, its topic's
	// SizeInBytes).
	counts func() [3]int64
}

func newSizedPlace(t *testing.T, sub bool) *sizedPlace {
	e := newEnv(t)
	p := &sizedPlace{e: e}
	if sub {
		top := e.topic("t", &minibus.TopicProperties{MaxMessageSizeInKilobytes: 64, MaxSizeInMegabytes: 1})
		s := e.subscription(top, "s", nil)
		p.send = func(msgs ...*minibus.Message) { require.NoError(t, top.SendMessages(e.ctx, msgs, nil)) }
		p.r = e.receiver(s, nil)
		p.counts = func() [3]int64 {
			rp := s.RuntimeProperties()
			return [3]int64{rp.ActiveMessageCount, rp.DeadLetterMessageCount, top.RuntimeProperties().SizeInBytes}
		}
	} else {
		q := e.queue("q", &minibus.QueueProperties{MaxMessageSizeInKilobytes: 64, MaxSizeInMegabytes: 1})
		p.send = func(msgs ...*minibus.Message) { require.NoError(t, q.SendMessages(e.ctx, msgs, nil)) }
		p.r = e.receiver(q, nil)
		p.counts = func() [3]int64 {
			rp := q.RuntimeProperties()
			return [3]int64{rp.ActiveMessageCount, rp.DeadLetterMessageCount, rp.SizeInBytes}
		}
	}
	return p
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

// ---------------------------------------------------------------------------
// Item 2. V3: a topic checks a schedule against the copies its
// subscriptions' rules would make now.

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

// ---------------------------------------------------------------------------
// Item 3. V4: an empty non-nil Body reads back empty and non-nil.

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

// ---------------------------------------------------------------------------
// Item 4. S1: ScheduleMessages with a zero time is ErrInvalidArgument.

// S1, Q1: ScheduleMessages with a zero time.Time is ErrInvalidArgument and
// schedules, enqueues and numbers nothing, on a queue and on a topic.
func TestS1_ScheduleAtZeroTimeIsInvalid(t *testing.T) {
	t.Run("queue", func(t *testing.T) {
		e := newEnv(t)
		q := e.queue("q", nil)
		got, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("zero")}}, time.Time{}, nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, `queue "q"`)
		require.Nil(t, got)
		require.Zero(t, q.RuntimeProperties().TotalMessageCount, "nothing scheduled or enqueued")
		e.send(q, "next")
		m := e.receive(e.receiver(q, nil), 1)[0]
		require.Equal(t, "next", string(m.Body))
		require.EqualValues(t, 1, m.SequenceNumber, "no number was taken")
	})
	t.Run("topic", func(t *testing.T) {
		e := newEnv(t)
		top := e.topic("t", nil)
		s := e.subscription(top, "s", nil)
		got, err := top.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("zero")}}, time.Time{}, nil)
		requireSentinel(t, err, minibus.ErrInvalidArgument, `topic "t"`)
		require.Nil(t, got)
		require.Zero(t, top.RuntimeProperties().ScheduledMessageCount, "nothing scheduled")
		require.Zero(t, s.RuntimeProperties().TotalMessageCount, "nothing enqueued")
		e.send(top, "next")
		m := e.receive(e.receiver(s, nil), 1)[0]
		require.Equal(t, "next", string(m.Body))
		require.EqualValues(t, 1, m.SequenceNumber, "no number was taken")
	})
}

// ---------------------------------------------------------------------------
// Item 5. T2, E2: instants near the int64 nanosecond limit.

// limitInstant is the last instant int64 nanoseconds since 1970 hold
// (2262-04-11T23:47:16.854775807Z).
var limitInstant = time.Unix(0, math.MaxInt64).UTC()

// farFuture is well past limitInstant.
var farFuture = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)

// T2, E2: finite deadlines stay finite. A clock past year 2262 clamps
// rather than wrapping to 1677, so a lock taken before ends (its token is
// lost, the message is receivable again); a finite TTL whose ExpiresAt
// would pass the int64 limit gives a non-zero ExpiresAt (clamped), and the
// message expires when the clock reaches it. Only "no TTL anywhere" never
// expires.
func TestT2_E2_FiniteDeadlinesStayFinite(t *testing.T) {
	t.Run("lock, clock moved past 2262", func(t *testing.T) {
		e := newEnv(t)
		q := e.queue("q", nil)
		e.send(q, "a")
		r := e.receiver(q, nil)
		m := e.receive(r, 1)[0]
		e.mock.Set(farFuture)
		requireSentinel(t, r.CompleteMessage(e.ctx, m, nil), minibus.ErrLockLost, "")
		again := e.receive(r, 1)[0]
		require.Equal(t, m.SequenceNumber, again.SequenceNumber, "receivable again once its lock ended")
		require.EqualValues(t, 2, again.DeliveryCount)
	})

	// requireExpiresAt asserts that q's one message expires exactly at its
	// ExpiresAt (T2): it is dead-lettered then (DeadLetteringOnMessageExpiration).
	requireExpiresAt := func(t *testing.T, e *env, q *minibus.Queue) {
		t.Helper()
		r := e.receiver(q, nil)
		p := e.peekAll(r)
		require.Len(t, p, 1)
		exp := p[0].ExpiresAt
		require.False(t, exp.IsZero(), "a finite TTL gives a finite ExpiresAt")
		require.True(t, exp.After(e.mock.Now()), "ExpiresAt %v is after now %v", exp, e.mock.Now())
		require.False(t, exp.After(limitInstant), "ExpiresAt %v is clamped to what int64 holds", exp)
		e.mock.Set(exp.Add(-time.Nanosecond))
		require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount, "1ns before ExpiresAt")
		e.mock.Set(exp)
		rp := q.RuntimeProperties()
		require.Zero(t, rp.ActiveMessageCount, "expired at ExpiresAt")
		require.EqualValues(t, 1, rp.DeadLetterMessageCount)
		d := e.receive(e.receiver(q, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}), 1)[0]
		require.Equal(t, "TTLExpiredException", d.DeadLetterReason)
	}

	t.Run("TimeToLive MaxInt64", func(t *testing.T) {
		e := newEnv(t)
		q := e.queue("q", &minibus.QueueProperties{DeadLetteringOnMessageExpiration: true}) // no default TTL
		require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{Body: []byte("a"), TimeToLive: time.Duration(math.MaxInt64)}, nil))
		requireExpiresAt(t, e, q)
	})

	t.Run("clock near the limit", func(t *testing.T) {
		e := newEnv(t)
		e.mock.Set(limitInstant.Add(-time.Hour))
		q := e.queue("q", &minibus.QueueProperties{DeadLetteringOnMessageExpiration: true})
		require.NoError(t, q.SendMessage(e.ctx, &minibus.Message{Body: []byte("a"), TimeToLive: 2 * time.Hour}, nil))
		requireExpiresAt(t, e, q)
	})

	t.Run("clock near the limit, then far past it", func(t *testing.T) {
		e := newEnv(t)
		e.mock.Set(limitInstant.Add(-time.Hour))
		q := e.queue("q", &minibus.QueueProperties{DefaultMessageTimeToLive: 2 * time.Hour, DeadLetteringOnMessageExpiration: true})
		e.send(q, "a")
		require.False(t, e.peekAll(e.receiver(q, nil))[0].ExpiresAt.IsZero(), "a finite TTL gives a finite ExpiresAt")
		e.mock.Set(farFuture)
		rp := q.RuntimeProperties()
		require.Zero(t, rp.ActiveMessageCount, "expired once the clock passed ExpiresAt")
		require.EqualValues(t, 1, rp.DeadLetterMessageCount)
	})
}

// ---------------------------------------------------------------------------
// Item 6. Error texts that name the right thing.

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

// L4: a lock-lost error names the message by its sequence number, for
// every delivery of it (a lock token's printed prefix is the same for every
// redelivery of a message and says nothing).
func TestL4_LockLostErrorNamesSequenceNumber(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	e.send(q, "a", "b", "c")
	r := e.receiver(q, nil)
	got := e.receive(r, 3)
	require.NoError(t, r.CompleteMessage(e.ctx, got[0], nil))
	require.NoError(t, r.CompleteMessage(e.ctx, got[1], nil))
	first := got[2]
	require.EqualValues(t, 3, first.SequenceNumber)
	names := regexp.MustCompile(`(message|sequence number) 3\b`)

	e.mock.Add(time.Minute) // the first delivery's lock expired
	err1 := r.CompleteMessage(e.ctx, first, nil)
	requireSentinel(t, err1, minibus.ErrLockLost, `queue "q"`)
	require.Regexp(t, names, err1.Error(), "the first delivery's lock-lost error names message 3")

	second := e.receive(r, 1)[0]
	require.Equal(t, first.SequenceNumber, second.SequenceNumber)
	require.NoError(t, r.AbandonMessage(e.ctx, second, nil))
	err2 := r.CompleteMessage(e.ctx, second, nil) // already settled
	requireSentinel(t, err2, minibus.ErrLockLost, `queue "q"`)
	require.Regexp(t, names, err2.Error(), "the second delivery's lock-lost error names message 3")
}

// R3: a missing SQL parameter is ErrInvalidArgument naming the parameter,
// not a syntax error.
func TestR3_MissingParameterIsNotASyntaxError(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	s := e.subscription(top, "s", nil)
	filter := minibus.SQLFilter{Expression: "a = @p"}
	errRule := s.CreateRule("r", &minibus.RuleProperties{Filter: filter})
	_, errSub := top.CreateSubscription("s2", &minibus.SubscriptionProperties{DefaultRule: &minibus.RuleProperties{Filter: filter}})
	for _, err := range []error{errRule, errSub} {
		requireSentinel(t, err, minibus.ErrInvalidArgument, "@p")
		require.False(t, strings.Contains(strings.ToLower(err.Error()), "syntax"), "a missing parameter is not a syntax error: %v", err)
	}
	require.Len(t, s.Rules(), 1, "nothing created")
	require.Equal(t, []string{"s"}, top.Subscriptions())
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

// ---------------------------------------------------------------------------
// Item 7. Test gaps: these pass on a correct broker and fail, rather than
// hang, on a broken one.

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

// T2, L1: a lock ends exactly at LockedUntil. One nanosecond before, the
// messages locked together are still locked: not receivable, and their
// tokens settle. At LockedUntil the old token is ErrLockLost and the
// message is receivable again.
func TestT2_L1_LockEndsExactlyAtLockedUntil(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
	e.send(q, "a", "b")
	r := e.receiver(q, nil)
	got := e.receive(r, 2)
	a, b := got[0], got[1]
	require.True(t, a.LockedUntil.Equal(at(30*time.Second)), "LockedUntil %v", a.LockedUntil)
	require.True(t, b.LockedUntil.Equal(a.LockedUntil))

	e.mock.Set(a.LockedUntil.Add(-time.Nanosecond))
	e.requireNothing(r)
	require.NoError(t, r.CompleteMessage(e.ctx, a, nil), "1ns before LockedUntil the lock is held")
	require.EqualValues(t, 1, q.RuntimeProperties().ActiveMessageCount, "b is still locked")

	e.mock.Set(b.LockedUntil)
	requireSentinel(t, r.CompleteMessage(e.ctx, b, nil), minibus.ErrLockLost, "")
	again := e.receive(r, 1)[0]
	require.Equal(t, b.SequenceNumber, again.SequenceNumber)
	require.EqualValues(t, 2, again.DeliveryCount)
	require.True(t, again.LockedUntil.Equal(b.LockedUntil.Add(30*time.Second)))
}

// resultTimeout bounds how long a test waits for a woken receiver: a hang
// detector, never a wait for the broker to act.
const resultTimeout = 10 * time.Second

// T5: a receiver blocked in ReceiveMessages wakes when a lock ends and
// receives the message, not before.
func TestT5_BlockedReceiverWakesAtLockEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mock := clock.NewMock()
		ns := minibus.NewNamespace(minibus.WithClock(mock))
		defer ns.Close() // also wakes a receive a broken broker left blocked
		q, err := ns.CreateQueue("q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
		require.NoError(t, err)
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{Body: []byte("a")}, nil))
		holder, err := q.NewReceiver(nil)
		require.NoError(t, err)
		held, err := holder.ReceiveMessages(ctx, 1, nil)
		require.NoError(t, err)
		waiting, err := q.NewReceiver(nil)
		require.NoError(t, err)
		type result struct {
			msgs []*minibus.ReceivedMessage
			err  error
		}
		got := make(chan result, 1)
		go func() {
			msgs, err := waiting.ReceiveMessages(ctx, 10, nil)
			got <- result{msgs, err}
		}()
		synctest.Wait()
		require.Empty(t, got, "blocked: the message is locked")
		mock.Add(30*time.Second - 1)
		synctest.Wait()
		require.Empty(t, got, "1ns before the lock ends")
		mock.Add(1)
		select {
		case res := <-got:
			require.NoError(t, res.err)
			msgs := res.msgs
			require.Len(t, msgs, 1)
			require.Equal(t, held[0].SequenceNumber, msgs[0].SequenceNumber)
			require.EqualValues(t, 2, msgs[0].DeliveryCount)
		case <-time.After(resultTimeout):
			t.Fatal("the blocked receiver did not wake when the lock ended")
		}
	})
}

// L11, Close: Namespace.Close wakes a blocked receiver, which returns
// ErrClosed.
func TestL11_NamespaceCloseWakesBlockedReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mock := clock.NewMock()
		ns := minibus.NewNamespace(minibus.WithClock(mock))
		q, err := ns.CreateQueue("q", nil)
		require.NoError(t, err)
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		defer r.Close(ctx) // also wakes a receive a broken Close left blocked
		type result struct {
			msgs []*minibus.ReceivedMessage
			err  error
		}
		done := make(chan result, 1)
		go func() {
			msgs, err := r.ReceiveMessages(ctx, 1, nil)
			done <- result{msgs, err}
		}()
		synctest.Wait()
		require.Empty(t, done, "blocked: the queue is empty")
		require.NoError(t, ns.Close())
		select {
		case res := <-done:
			require.Nil(t, res.msgs)
			requireSentinel(t, res.err, minibus.ErrClosed, "")
		case <-time.After(resultTimeout):
			t.Fatal("Namespace.Close did not wake the blocked receiver")
		}
	})
}
