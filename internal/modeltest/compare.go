package modeltest

// Comparing what the broker returns with what the model says, field by
// field.

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

// PropsEqual reports whether two application property maps hold the same
// keys with values of the same type and value: byte slices by content,
// times by instant, a NaN equal to a NaN.
func PropsEqual(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || reflect.TypeOf(av) != reflect.TypeOf(bv) || !sameProp(av, bv) {
			return false
		}
	}
	return true
}

// sameProp compares two property values of the same type.
func sameProp(av, bv any) bool {
	switch av := av.(type) {
	case []byte:
		return bytes.Equal(av, bv.([]byte))
	case time.Time:
		return av.Equal(bv.(time.Time))
	case float64:
		return av == bv.(float64) || math.IsNaN(av) && math.IsNaN(bv.(float64))
	case float32:
		b := bv.(float32)
		return av == b || math.IsNaN(float64(av)) && math.IsNaN(float64(b))
	}
	return av == bv
}

func sameInstant(got time.Time, want int64) bool {
	if want == mNever || want == 0 || want == mUnset {
		return got.IsZero()
	}
	return got.Equal(tm(want))
}

// fieldCheck is one field of a returned message: what the broker says,
// what the model says, and whether they agree.
type fieldCheck struct {
	name      string
	got, want any
	ok        bool
}

// msgs compares what the broker returned with the model's views, field by
// field, and learns the lock tokens of peek-lock deliveries.
func (h *machine) msgs(t *rapid.T, what string, recv *hRecv, got []*minibus.ReceivedMessage, want []mView) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: broker returned %d messages %v, model says %d %v", what, len(got), describeGot(got), len(want), describeWant(want))
	}
	for i, g := range got {
		w := want[i]
		for _, f := range h.fields(g, w) {
			if !f.ok {
				x := h.findItem(w.item)
				t.Fatalf("%s: message %d (seq %d, item %d): %s is %v, model says %v; model: %+v", what, i, w.seq, w.item, f.name, f.got, f.want, x)
			}
		}
		if w.lockedUntil == 0 {
			h.own(g)
			continue
		}
		defer h.own(g)
		h.learnToken(t, what, recv, g, w)
	}
}

// fields compares one message.
func (h *machine) fields(g *minibus.ReceivedMessage, w mView) []fieldCheck {
	gh := mHeaders{ContentType: g.ContentType, CorrelationID: g.CorrelationID, Subject: g.Subject, To: g.To,
		ReplyTo: g.ReplyTo, ReplyToSessionID: g.ReplyToSessionID, PartitionKey: g.PartitionKey, SessionID: g.SessionID}
	descOK := g.DeadLetterErrorDescription == w.dlDesc || w.descPrefix && strings.HasPrefix(g.DeadLetterErrorDescription, w.dlDesc)
	out := []fieldCheck{
		{"Body", string(g.Body), string(w.body), bytes.Equal(g.Body, w.body)},
		h.messageID(g, w),
		{"headers", gh, w.headers, gh == w.headers},
		{"ScheduledEnqueueTime", g.ScheduledEnqueueTime, tm(w.sched), sameInstant(g.ScheduledEnqueueTime, w.sched)},
		{"ApplicationProperties", g.ApplicationProperties, w.props, PropsEqual(g.ApplicationProperties, w.props)},
		{"SequenceNumber", g.SequenceNumber, w.seq, g.SequenceNumber == w.seq},
		{"EnqueuedSequenceNumber", g.EnqueuedSequenceNumber, w.enqSeq, g.EnqueuedSequenceNumber == w.enqSeq},
		{"LockedUntil", g.LockedUntil, tm(w.lockedUntil), sameInstant(g.LockedUntil, w.lockedUntil)},
		h.deliveryCount(g, w),
		{"State", g.State, w.state, g.State == w.state},
		{"DeadLetterReason", g.DeadLetterReason, w.dlReason, g.DeadLetterReason == w.dlReason},
		{"DeadLetterErrorDescription", g.DeadLetterErrorDescription, w.dlDesc, descOK},
		{"DeadLetterSource", g.DeadLetterSource, w.dlSource, g.DeadLetterSource == w.dlSource},
		{"LockToken", fmt.Sprintf("%x", g.LockToken), "a token iff locked", (g.LockToken != [16]byte{}) == (w.lockedUntil != 0)},
	}
	return append(out, h.stamps(g, w)...)
}

// stamps compares what an enqueue sets: EnqueuedTime, TimeToLive and
// ExpiresAt.
func (h *machine) stamps(g *minibus.ReceivedMessage, w mView) []fieldCheck {
	return []fieldCheck{
		{"EnqueuedTime", g.EnqueuedTime, tm(w.enqueued), g.EnqueuedTime.Equal(tm(w.enqueued))},
		{"TimeToLive", g.TimeToLive, time.Duration(w.ttl), int64(g.TimeToLive) == w.ttl},
		{"ExpiresAt", g.ExpiresAt, tm(w.expires), sameInstant(g.ExpiresAt, w.expires)},
	}
}

// deliveryCount compares DeliveryCount.
func (h *machine) deliveryCount(g *minibus.ReceivedMessage, w mView) fieldCheck {
	return fieldCheck{"DeliveryCount", g.DeliveryCount, w.deliveries, g.DeliveryCount == w.deliveries}
}

// messageID compares MessageID: the sender's, or a random one made by the
// broker, the same in every copy (DD2), which the model learns.
func (h *machine) messageID(g *minibus.ReceivedMessage, w mView) fieldCheck {
	f := fieldCheck{name: "MessageID", got: g.MessageID, want: w.msgID, ok: g.MessageID == w.msgID}
	if w.msgID != "" {
		return f
	}
	if id, known := h.m.learned[w.origin]; known {
		f.want, f.ok = id, g.MessageID == id
		return f
	}
	b, err := hex.DecodeString(g.MessageID)
	f.want, f.ok = "a random 32-character hex id (DD2)", err == nil && len(b) == 16
	if f.ok {
		h.m.learned[w.origin] = g.MessageID
	}
	return f
}

// learnToken records the lock token of a peek-lock delivery: new, never
// seen before (I3).
func (h *machine) learnToken(t *rapid.T, what string, recv *hRecv, g *minibus.ReceivedMessage, w mView) {
	t.Helper()
	if _, seen := h.tokens[g.LockToken]; seen {
		t.Fatalf("%s: seq %d: LockToken %x was seen before (I3)", what, w.seq, g.LockToken)
	}
	h.tokens[g.LockToken] = &hTok{obj: g, recv: recv, item: w.item}
	h.seen = append(h.seen, g.LockToken)
	x := h.findItem(w.item)
	if x == nil || x.state != mLocked {
		t.Fatalf("%s: model lost item %d", what, w.item)
	}
	x.token = g.LockToken
}

func describeGot(got []*minibus.ReceivedMessage) []string {
	out := make([]string, len(got))
	for i, g := range got {
		out[i] = fmt.Sprintf("%s#%d/%d", g.Body, g.SequenceNumber, g.DeliveryCount)
	}
	return out
}

func describeWant(want []mView) []string {
	out := make([]string, len(want))
	for i, w := range want {
		out[i] = fmt.Sprintf("%s#%d/%d", w.body, w.seq, w.deliveries)
	}
	return out
}
