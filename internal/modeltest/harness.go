package modeltest

// The state machine of the root's TestModel and FuzzModel: random
// operations applied to the broker and to the reference model (model.go)
// side by side, and everything the broker returns compared with what the
// model says.

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

// hEnt pairs a broker handle with its model instance.
type hEnt struct {
	m *mEntity
	q *minibus.Queue
	t *minibus.Topic
	s *minibus.Subscription
}

// hRecv pairs a broker receiver with the model's.
type hRecv struct {
	r *minibus.Receiver
	m *mReceiver
}

// hTok is a lock token the broker handed out.
type hTok struct {
	obj  *minibus.ReceivedMessage // the message as returned, for settling by object
	recv *hRecv
	item int
}

type machine struct {
	ctx   context.Context
	mock  *clock.Mock
	ns    *minibus.Namespace
	m     *refModel
	ents  []*hEnt // by model entity id
	recvs []*hRecv
	// tokens are every lock token seen; none may come twice (I3). seen
	// keeps them in the order seen: the draws must not depend on their
	// random values, or a failing case would not replay.
	tokens map[[16]byte]*hTok
	seen   [][16]byte
	peeked []*minibus.ReceivedMessage
	rad    []*minibus.ReceivedMessage
	// kept are returned messages with a copy of what they read then: the
	// broker must never change them (V4). Every other returned message is
	// scribbled on instead, which must not change the broker.
	kept     []keptMsg
	returned int
	bodies   int
	ops      map[string]int // actions run, by name
	tally    map[string]int // what the broker answered, by outcome
}

func newMachine() *machine {
	mock := clock.NewMock()
	mock.Set(epoch)
	return &machine{
		ctx:    context.Background(),
		mock:   mock,
		ns:     minibus.NewNamespace(minibus.WithClock(mock)),
		m:      newRefModel(epoch.UnixNano()),
		tokens: map[[16]byte]*hTok{},
		ops:    map[string]int{},
		tally:  map[string]int{},
	}
}

func (h *machine) close() { _ = h.ns.Close() }

type keptMsg struct {
	msg   *minibus.ReceivedMessage
	body  []byte
	props map[string]any
}

// own is SEMANTICS V4 both ways for a message the broker returned: keep a
// copy to check it never changes, or scribble on it (in place, and by
// appending, which must not reach a neighbour's body).
func (h *machine) own(g *minibus.ReceivedMessage) {
	h.returned++
	if h.returned%2 == 0 {
		h.kept = append(h.kept, keptMsg{g, bytes.Clone(g.Body), copyMap(g.ApplicationProperties)})
		return
	}
	for i := range g.Body {
		g.Body[i] ^= 0xff
	}
	g.Body = append(g.Body, "scribbled"...)
	for k, v := range g.ApplicationProperties {
		if b, ok := v.([]byte); ok && len(b) > 0 {
			b[0]++
		}
		g.ApplicationProperties[k] = "scribbled"
	}
	if g.ApplicationProperties != nil {
		g.ApplicationProperties["scribbled"] = true
	}
}

// epoch is where every case's mock clock starts, as in the root's tests: a
// round instant, so that times in failures read well.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func tm(n int64) time.Time { return time.Unix(0, n) }

// ---------------------------------------------------------------- comparing

var sentinels = []error{
	minibus.ErrNotFound, minibus.ErrAlreadyExists, minibus.ErrInvalidArgument,
	minibus.ErrLockLost, minibus.ErrSessionLockLost, minibus.ErrSessionCannotBeLocked,
	minibus.ErrMessageNotFound, minibus.ErrMessageTooLarge, minibus.ErrQuotaExceeded,
	minibus.ErrEntityDisabled, minibus.ErrClosed, context.DeadlineExceeded, context.Canceled,
}

// sameErr reports whether got wraps want (nil: got is nil) and no other
// sentinel.
func sameErr(got, want error) bool {
	if want == nil || got == nil {
		return got == want
	}
	for _, s := range sentinels {
		if errors.Is(got, s) != (s == want) {
			return false
		}
	}
	return true
}

func (h *machine) errs(t *rapid.T, what string, got, want error) {
	t.Helper()
	if !sameErr(got, want) {
		t.Fatalf("%s: broker returned %v, model says %v", what, got, want)
	}
}

// PropsEqual reports whether two application property maps hold the same
// keys with values of the same type and value: byte slices by content,
// times by instant, a NaN equal to a NaN.
func PropsEqual(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || reflect.TypeOf(av) != reflect.TypeOf(bv) {
			return false
		}
		switch av := av.(type) {
		case []byte:
			if !bytes.Equal(av, bv.([]byte)) {
				return false
			}
		case time.Time:
			if !av.Equal(bv.(time.Time)) {
				return false
			}
		case float64:
			if !(av == bv.(float64) || math.IsNaN(av) && math.IsNaN(bv.(float64))) {
				return false
			}
		case float32:
			if !(av == bv.(float32) || math.IsNaN(float64(av)) && math.IsNaN(float64(bv.(float32)))) {
				return false
			}
		default:
			if av != bv {
				return false
			}
		}
	}
	return true
}

func sameInstant(got time.Time, want int64) bool {
	if want == mNever || want == 0 || want == mUnset {
		return got.IsZero()
	}
	return got.Equal(tm(want))
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
		bad := func(field string, gv, wv any) {
			t.Fatalf("%s: message %d (seq %d, item %d): %s is %v, model says %v", what, i, w.seq, w.item, field, gv, wv)
		}
		if !bytes.Equal(g.Body, w.body) {
			bad("Body", string(g.Body), string(w.body))
		}
		switch id, known := h.m.learned[w.origin]; {
		case w.msgID != "":
			if g.MessageID != w.msgID {
				bad("MessageID", g.MessageID, w.msgID)
			}
		case known:
			if g.MessageID != id {
				bad("MessageID", g.MessageID, id)
			}
		default:
			if b, err := hex.DecodeString(g.MessageID); err != nil || len(b) != 16 {
				bad("MessageID", g.MessageID, "a random 32-character hex id (DD2)")
			}
			h.m.learned[w.origin] = g.MessageID
		}
		gh := mHeaders{g.ContentType, g.CorrelationID, g.Subject, g.To, g.ReplyTo, g.ReplyToSessionID, g.PartitionKey}
		if gh != w.headers {
			bad("headers", gh, w.headers)
		}
		if g.SessionID != "" || g.DeadLetterSource != "" || g.EnqueuedSequenceNumber != 0 {
			bad("SessionID/DeadLetterSource/EnqueuedSequenceNumber", []any{g.SessionID, g.DeadLetterSource, g.EnqueuedSequenceNumber}, "unset")
		}
		if int64(g.TimeToLive) != w.ttl {
			bad("TimeToLive", g.TimeToLive, time.Duration(w.ttl))
		}
		if !sameInstant(g.ScheduledEnqueueTime, w.sched) {
			bad("ScheduledEnqueueTime", g.ScheduledEnqueueTime, tm(w.sched))
		}
		if !PropsEqual(g.ApplicationProperties, w.props) {
			bad("ApplicationProperties", g.ApplicationProperties, w.props)
		}
		if g.SequenceNumber != w.seq {
			bad("SequenceNumber", g.SequenceNumber, w.seq)
		}
		if !g.EnqueuedTime.Equal(tm(w.enqueued)) {
			bad("EnqueuedTime", g.EnqueuedTime, tm(w.enqueued))
		}
		if !sameInstant(g.ExpiresAt, w.expires) {
			bad("ExpiresAt", g.ExpiresAt, tm(w.expires))
		}
		if !sameInstant(g.LockedUntil, w.lockedUntil) {
			bad("LockedUntil", g.LockedUntil, tm(w.lockedUntil))
		}
		if g.DeliveryCount != w.deliveries {
			bad("DeliveryCount", g.DeliveryCount, w.deliveries)
		}
		if g.State != w.state {
			bad("State", g.State, w.state)
		}
		if g.DeadLetterReason != w.dlReason {
			bad("DeadLetterReason", g.DeadLetterReason, w.dlReason)
		}
		if w.descPrefix && !strings.HasPrefix(g.DeadLetterErrorDescription, w.dlDesc) ||
			!w.descPrefix && g.DeadLetterErrorDescription != w.dlDesc {
			bad("DeadLetterErrorDescription", g.DeadLetterErrorDescription, w.dlDesc)
		}
		locked := w.lockedUntil != 0
		if !locked {
			if g.LockToken != ([16]byte{}) {
				bad("LockToken", g.LockToken, "none")
			}
			h.own(g)
			continue
		}
		defer h.own(g)
		if g.LockToken == ([16]byte{}) {
			bad("LockToken", "none", "a fresh token")
		}
		if _, seen := h.tokens[g.LockToken]; seen {
			bad("LockToken", fmt.Sprintf("%x", g.LockToken), "a token never seen before (I3)")
		}
		h.tokens[g.LockToken] = &hTok{obj: g, recv: recv, item: w.item}
		h.seen = append(h.seen, g.LockToken)
		x := h.findItem(w.item)
		if x == nil || x.state != mLocked {
			t.Fatalf("%s: model lost item %d", what, w.item)
		}
		x.token = g.LockToken
	}
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

func (h *machine) findItem(item int) *mMsg {
	for _, e := range h.m.all {
		for _, l := range [][]*mMsg{e.main, e.dlq} {
			for _, x := range l {
				if x.item == item {
					return x
				}
			}
		}
	}
	return nil
}

// Check compares every count, list and rule, and runs the model's own
// invariants. It runs before and after every action.
func (h *machine) Check(t *rapid.T) {
	if h.m.now == mNever-1 {
		// At the end of time a deadline made by the last step is due at
		// once: the broker's next call processes it first (SEMANTICS T3).
		h.m.advance(h.m.now)
	}
	if err := h.m.check(); err != nil {
		t.Fatalf("model invariant: %v", err)
	}
	for _, k := range h.kept {
		if !bytes.Equal(k.msg.Body, k.body) || !PropsEqual(k.msg.ApplicationProperties, k.props) {
			t.Fatalf("a returned message (seq %d) changed after the call: body %q props %v, was %q %v (V4)",
				k.msg.SequenceNumber, k.msg.Body, k.msg.ApplicationProperties, k.body, k.props)
		}
	}
	var queues, topics []string
	for _, e := range h.m.names {
		if e.kind == mQueue {
			queues = append(queues, e.name)
		} else {
			topics = append(topics, e.name)
		}
	}
	sort.Strings(queues)
	sort.Strings(topics)
	if got := h.ns.Queues(); !slices.Equal(got, queues) {
		t.Fatalf("Queues() = %v, model says %v", got, queues)
	}
	if got := h.ns.Topics(); !slices.Equal(got, topics) {
		t.Fatalf("Topics() = %v, model says %v", got, topics)
	}
	for _, he := range h.ents {
		e := he.m
		c := h.m.counts(e)
		if !e.deleted {
			var got mCfg
			var ok bool
			switch e.kind {
			case mQueue:
				got, ok = queueCfg(he.q.Properties())
			case mTopic:
				got, ok = topicCfg(he.t.Properties())
			case mSub:
				got, ok = subCfg(he.s.Properties())
			}
			if !ok || got != e.cfg {
				t.Fatalf("%v: Properties() give %+v, model says %+v", e, got, e.cfg)
			}
		}
		switch e.kind {
		case mQueue:
			rp := he.q.RuntimeProperties()
			got := mCounts{rp.ActiveMessageCount, rp.ScheduledMessageCount, rp.DeadLetterMessageCount, rp.TotalMessageCount, rp.SizeInBytes, 0}
			if got != c || rp.TransferDeadLetterMessageCount != 0 || rp.TransferMessageCount != 0 {
				t.Fatalf("%v: RuntimeProperties %+v, model says %+v", e, got, c)
			}
			h.times(t, e, rp.CreatedAt, rp.UpdatedAt, rp.AccessedAt)
		case mTopic:
			rp := he.t.RuntimeProperties()
			got := mCounts{scheduled: rp.ScheduledMessageCount, size: rp.SizeInBytes, subs: rp.SubscriptionCount}
			want := mCounts{scheduled: c.scheduled, size: c.size, subs: c.subs}
			if got != want {
				t.Fatalf("%v: RuntimeProperties %+v, model says %+v", e, got, want)
			}
			h.times(t, e, rp.CreatedAt, rp.UpdatedAt, rp.AccessedAt)
			if !e.deleted {
				var subs []string
				for _, s := range e.subs {
					subs = append(subs, s.name)
				}
				sort.Strings(subs)
				if got := he.t.Subscriptions(); !slices.Equal(got, subs) {
					t.Fatalf("%v: Subscriptions() = %v, model says %v", e, got, subs)
				}
			}
		case mSub:
			rp := he.s.RuntimeProperties()
			got := mCounts{active: rp.ActiveMessageCount, dead: rp.DeadLetterMessageCount, total: rp.TotalMessageCount}
			want := mCounts{active: c.active, dead: c.dead, total: c.total}
			if got != want {
				t.Fatalf("%v: RuntimeProperties %+v, model says %+v", e, got, want)
			}
			h.times(t, e, rp.CreatedAt, rp.UpdatedAt, rp.AccessedAt)
			if !e.deleted {
				got := he.s.Rules()
				want := make([]minibus.Rule, len(e.rules))
				for i, r := range e.rules {
					want[i] = r.public
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%v: Rules() = %+v, model says %+v", e, got, want)
				}
			}
		}
	}
}

// times compares CreatedAt, UpdatedAt and AccessedAt: a deleted entity reads
// zero.
func (h *machine) times(t *rapid.T, e *mEntity, created, updated, accessed time.Time) {
	t.Helper()
	if e.deleted {
		if !created.IsZero() {
			t.Fatalf("%v: deleted, but RuntimeProperties has CreatedAt %v", e, created)
		}
		return
	}
	if !created.Equal(tm(e.created)) || !updated.Equal(tm(e.updated)) || !accessed.Equal(tm(e.accessed)) {
		t.Fatalf("%v: Created/Updated/AccessedAt %v %v %v, model says %v %v %v", e, created, updated, accessed,
			tm(e.created), tm(e.updated), tm(e.accessed))
	}
}
