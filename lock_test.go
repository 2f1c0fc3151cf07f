package minibus_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

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

// L1: lock tokens are random: a token is new at every delivery, of the
// same message or of another, and 95 of its bits are random. The broker
// gives each token 96 random bits, one of them fixed to 1 so that no token
// is all zero; the rest (the message's place in the store) may repeat. So
// over 1024 deliveries of one message, and over 1024 messages locked at
// once, at least 95 bit positions must each be set in 40%–60% of the
// tokens (a fair bit leaves that band with a chance below 1e-9), and no
// token may come twice. A token that lost 32 or 64 of its random bits
// fails (issue 42).
func TestL1_LockTokensAreRandom(t *testing.T) {
	const n = 1024
	e := newEnv(t)
	q := e.queue("q", nil)
	r := e.receiver(q, nil)
	seen := map[[16]byte]bool{}
	check := func(what string, tokens [][16]byte) {
		t.Helper()
		for _, tok := range tokens {
			require.False(t, seen[tok], "%s: token %x twice", what, tok)
			seen[tok] = true
		}
		fair := 0
		for bit := range 128 {
			ones := 0
			for _, tok := range tokens {
				ones += int(tok[bit/8] >> (bit % 8) & 1)
			}
			if ones >= 4*n/10 && ones <= 6*n/10 {
				fair++
			}
		}
		require.GreaterOrEqual(t, fair, 95, "%s: bit positions set in 40%%-60%% of %d tokens", what, n)
	}

	e.send(q, "one")
	var tokens [][16]byte
	for range n {
		m := e.receive(r, 1)[0]
		tokens = append(tokens, m.LockToken)
		require.NoError(t, r.ReleaseMessage(e.ctx, m, nil))
	}
	check("one message delivered again and again", tokens)

	msgs := make([]*minibus.Message, n-1)
	for i := range msgs {
		msgs[i] = &minibus.Message{}
	}
	require.NoError(t, q.SendMessages(e.ctx, msgs, nil))
	tokens = tokens[:0]
	for _, m := range e.receive(r, n) {
		tokens = append(tokens, m.LockToken)
	}
	check("many messages locked at once", tokens)
}
