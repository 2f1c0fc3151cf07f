package modeltest

// Drawing: unbiased choices, and the names, properties, rules and messages
// the actions use.

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

// ---------------------------------------------------------------- generators

// uniform draws 0..n-1 uniformly. rapid's own integer and SampledFrom
// generators lean towards small values and first elements (good for
// shrinking, bad for "one in 40"), so the harness draws unbiased bits and
// takes them modulo n; they still shrink towards 0. A failing case logs
// the raw number drawn.
func uniform(t *rapid.T, label string, n int) int {
	if n <= 1 {
		return 0
	}
	k := 3
	for v := n - 1; v > 0; v >>= 1 {
		k++
	}
	return int(bitsGen(k).Draw(t, label) % uint64(n))
}

var bitsGens sync.Map // bit count -> *rapid.Generator[uint64]

// bitsGen draws k unbiased bits as a number.
func bitsGen(k int) *rapid.Generator[uint64] {
	if g, ok := bitsGens.Load(k); ok {
		return g.(*rapid.Generator[uint64])
	}
	g := rapid.Custom(func(t *rapid.T) uint64 {
		var v uint64
		for _, b := range rapid.SliceOfN(rapid.Bool(), k, k).Draw(t, "bits") {
			v <<= 1
			if b {
				v |= 1
			}
		}
		return v
	})
	bitsGens.Store(k, g)
	return g
}

// chance is true one time in oneIn.
func chance(t *rapid.T, label string, oneIn int) bool { return uniform(t, label, oneIn) == 0 }

// Pick draws one of xs uniformly (see uniform: rapid's SampledFrom leans
// towards the first elements), under label in a failing case's log.
func Pick[T any](t *rapid.T, label string, xs ...T) T { return xs[uniform(t, label, len(xs))] }

// Between draws an int in lo..hi uniformly, under label in a failing
// case's log.
func Between(t *rapid.T, label string, lo, hi int) int { return lo + uniform(t, label, hi-lo+1) }

func flip(t *rapid.T, label string) bool { return uniform(t, label, 2) == 1 }

func drawNode(t *rapid.T, depth int, params map[string]any) *fNode {
	op := "num"
	if depth > 0 {
		op = Pick(t, "op", "num", "num", "str", "str", "exists", "label", "not", "and", "or")
	} else {
		op = Pick(t, "op", "num", "str", "exists", "label")
	}
	switch op {
	case "num":
		prop := Pick(t, "prop", "n", "N", "user.n")
		f := &fNode{op: op, key: strings.TrimPrefix(prop, "user."), prop: prop,
			cmp: Pick(t, "cmp", ">", "<", "=", ">=", "<=", "<>", "!="), n: int64(Between(t, "k", -1, 4))}
		if chance(t, "param", 4) {
			f.param = fmt.Sprintf("@p%d", len(params)+1)
			params[f.param] = f.n
		}
		return f
	case "str":
		prop := Pick(t, "prop", "color", "Color", "user.color")
		return &fNode{op: op, key: strings.TrimPrefix(prop, "user."), prop: prop,
			cmp: Pick(t, "cmp", "=", "<>"), s: Pick(t, "s", "red", "blue")}
	case "exists":
		k := Pick(t, "exists", "x", "color", "n", "tag")
		return &fNode{op: op, key: k, prop: k}
	case "label":
		return &fNode{op: op, prop: Pick(t, "sys", "sys.Label", "sys.Subject"), s: Pick(t, "label", "a", "b", "lbl")}
	case "not":
		return &fNode{op: op, l: drawNode(t, depth-1, params)}
	}
	return &fNode{op: op, l: drawNode(t, depth-1, params), r: drawNode(t, depth-1, params)}
}

func drawAction(t *rapid.T) *mAction {
	n := Between(t, "statements", 1, 2)
	a := &mAction{}
	for range n {
		a.stmts = append(a.stmts, Pick(t, "statement", "tag", "inc", "remove", "label"))
	}
	return a
}

// drawRule draws a rule; withInvalid lets it be one the broker must refuse.
func drawRule(t *rapid.T, name string, withInvalid bool) *mRule {
	r := &mRule{name: name, props: &minibus.RuleProperties{Name: name}}
	kinds := []string{"true", "false", "sql", "sql", "sql", "sql", "sql", "corr", "corr", "nil"}
	if withInvalid {
		kinds = append(kinds, "badsql", "badcorr", "badaction")
	}
	switch k := Pick(t, "filter", kinds...); k {
	case "nil":
		r.kind = "true"
		r.public.Filter = minibus.TrueFilter{}
	case "true":
		r.kind = k
		r.props.Filter = minibus.TrueFilter{}
		r.public.Filter = minibus.TrueFilter{}
	case "false":
		r.kind = k
		r.props.Filter = &minibus.FalseFilter{}
		r.public.Filter = minibus.FalseFilter{}
	case "sql":
		r.kind = k
		params := map[string]any{}
		r.node = drawNode(t, Between(t, "depth", 0, 2), params)
		if len(params) == 0 {
			params = nil
		}
		f := minibus.SQLFilter{Expression: r.node.sql(), Parameters: params}
		r.props.Filter = f
		r.public.Filter = f
	case "corr":
		r.kind = k
		var f minibus.CorrelationFilter
		for !corrSets(f) {
			if chance(t, "corrSubject", 2) {
				f.Subject = Pick(t, "subject", "a", "b")
			}
			if chance(t, "corrCorrelation", 3) {
				f.CorrelationID = "c1"
			}
			if chance(t, "corrContentType", 4) {
				f.ContentType = "text/plain"
			}
			if chance(t, "corrProps", 2) {
				f.ApplicationProperties = map[string]any{
					Pick(t, "corrKey", "color", "n", "N"): Pick[any](t, "corrValue", "red", "blue", 1, int64(2), 2.0, true),
				}
			}
		}
		r.corr = f
		r.props.Filter = f
		r.public.Filter = f
	case "badsql":
		r.kind, r.invalid = "sql", true
		r.props.Filter = minibus.SQLFilter{Expression: Pick(t, "badsql", "n >", "color = = 'x'", "sys.Nope = 1", "(n > 1", "")}
	case "badcorr":
		r.kind, r.invalid = "corr", true
		r.props.Filter = minibus.CorrelationFilter{}
	case "badaction":
		r.kind, r.invalid = "true", true
		r.props.Action = minibus.SQLAction{Expression: Pick(t, "badaction", "SET", "SET sys.SequenceNumber = 1", "DROP x")}
		return r
	}
	if chance(t, "hasAction", 3) {
		r.action = drawAction(t)
		a := minibus.SQLAction{Expression: r.action.sql()}
		r.props.Action = a
		r.public.Action = a
	}
	r.public.Name = name
	return r
}

func corrSets(f minibus.CorrelationFilter) bool {
	return f.Subject != "" || f.CorrelationID != "" || f.ContentType != "" || len(f.ApplicationProperties) > 0
}

// drawProps draws application properties over the names the rules read,
// with values of every type the rules treat differently.
func drawProps(t *rapid.T) map[string]any {
	p := map[string]any{}
	if chance(t, "hasN", 2) {
		p["n"] = Pick[any](t, "n", 0, 1, 2, 3, 4, int64(3), 2.5, "3", true, nil, int32(1))
	}
	if chance(t, "hasBigN", 8) {
		p["N"] = Pick[any](t, "N", 1, 9)
	}
	if chance(t, "hasColor", 2) {
		p["color"] = Pick[any](t, "color", "red", "blue", "red", 7, nil, false)
	}
	if chance(t, "hasX", 4) {
		p["x"] = true
	}
	if chance(t, "hasTag", 5) {
		p["tag"] = "t"
	}
	if len(p) == 0 {
		return nil
	}
	return p
}

// ---------------------------------------------------------------- drawing

var (
	mEntityNames = []string{"q1", "Q1", "q2", "t1", "T1", "t2", "orders/eu-1.x_y"}
	mSubNames    = []string{"s1", "S1", "s2", "s3"}
	// Rule names are matched case-insensitively too (SEMANTICS V1).
	mRuleNames = []string{"$Default", "$DEFAULT", "r1", "R1", "r2", "a1", "zz"}
)

func drawEntityName(t *rapid.T) string {
	if chance(t, "badName", 25) {
		return Pick(t, "name", "", "-q", "q-", "q q", "q$", strings.Repeat("q", 261))
	}
	return Pick(t, "name", mEntityNames...)
}

func drawSubName(t *rapid.T) string {
	if chance(t, "badName", 25) {
		return Pick(t, "name", "", "s/1", "$s", strings.Repeat("s", 51))
	}
	return Pick(t, "name", mSubNames...)
}

func drawRuleName(t *rapid.T) string {
	if chance(t, "badName", 25) {
		return Pick(t, "name", "", "r/1", "$", "r.", strings.Repeat("r", 51))
	}
	return Pick(t, "name", mRuleNames...)
}

var (
	lockDurations = []time.Duration{0, 5 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute}
	entityTTLs    = []time.Duration{0, 0, 0, 0, 10 * time.Second, time.Minute, 5 * time.Minute, time.Hour, math.MaxInt64}
	idleTimes     = []time.Duration{0, 0, 0, 5 * time.Minute, 10 * time.Minute}
	messageTTLs   = []time.Duration{0, 0, 0, 0, 0, 0, 1, 5 * time.Second, time.Minute, 10 * time.Minute, math.MaxInt64 - 1}
	offsets       = []time.Duration{-time.Minute, 0, 1, 10 * time.Second, time.Minute, 5 * time.Minute, time.Hour}
)

func drawStatus(t *rapid.T) minibus.EntityStatus {
	if chance(t, "statusChange", 10) {
		return Pick(t, "status", minibus.EntityStatusDisabled, minibus.EntityStatusSendDisabled, minibus.EntityStatusReceiveDisabled)
	}
	return minibus.EntityStatusActive
}

func drawQueueProps(t *rapid.T) *minibus.QueueProperties {
	if chance(t, "nilProps", 10) {
		return nil
	}
	p := &minibus.QueueProperties{
		LockDuration:                     Pick(t, "lock", lockDurations...),
		MaxDeliveryCount:                 int32(Between(t, "maxDelivery", 0, 5)),
		DefaultMessageTimeToLive:         Pick(t, "ttl", entityTTLs...),
		DeadLetteringOnMessageExpiration: flip(t, "dlOnExpiry"),
		AutoDeleteOnIdle:                 Pick(t, "idle", idleTimes...),
		MaxSizeInMegabytes:               Pick[int32](t, "maxSize", 0, 0, 0, 1),
		MaxMessageSizeInKilobytes:        Pick[int64](t, "maxMsgSize", 0, 0, 0, 1),
		Status:                           drawStatus(t),
	}
	if chance(t, "badProps", 15) {
		switch Pick(t, "bad", "lock", "delivery", "ttl", "idle", "size", "status") {
		case "lock":
			p.LockDuration = Pick(t, "badLock", time.Second, 6*time.Minute, -time.Second)
		case "delivery":
			p.MaxDeliveryCount = -1
		case "ttl":
			p.DefaultMessageTimeToLive = -1
		case "idle":
			p.AutoDeleteOnIdle = Pick(t, "badIdle", time.Minute, 5*time.Minute-1, -time.Hour)
		case "size":
			p.MaxSizeInMegabytes = -1
		case "status":
			p.Status = 9
		}
	}
	return p
}

func drawTopicProps(t *rapid.T) *minibus.TopicProperties {
	q := drawQueueProps(t)
	if q == nil {
		return nil
	}
	return &minibus.TopicProperties{
		DefaultMessageTimeToLive:            q.DefaultMessageTimeToLive,
		AutoDeleteOnIdle:                    q.AutoDeleteOnIdle,
		RequiresDuplicateDetection:          q.RequiresDuplicateDetection,
		DuplicateDetectionHistoryTimeWindow: q.DuplicateDetectionHistoryTimeWindow,
		MaxSizeInMegabytes:                  q.MaxSizeInMegabytes,
		MaxMessageSizeInKilobytes:           q.MaxMessageSizeInKilobytes,
		Status:                              q.Status,
	}
}

func drawSubProps(t *rapid.T) *minibus.SubscriptionProperties {
	q := drawQueueProps(t)
	if q == nil {
		return nil
	}
	return &minibus.SubscriptionProperties{
		LockDuration:                              q.LockDuration,
		MaxDeliveryCount:                          q.MaxDeliveryCount,
		DefaultMessageTimeToLive:                  q.DefaultMessageTimeToLive,
		DeadLetteringOnMessageExpiration:          q.DeadLetteringOnMessageExpiration,
		DeadLetteringOnFilterEvaluationExceptions: flip(t, "dlOnFilter"),
		AutoDeleteOnIdle:                          q.AutoDeleteOnIdle,
		RequiresSession:                           q.RequiresSession,
		ForwardTo:                                 q.ForwardTo,
		Status:                                    q.Status,
	}
}

func (h *machine) drawMessage(t *rapid.T) *minibus.Message {
	if chance(t, "nilMessage", 60) {
		return nil
	}
	h.bodies++
	body := []byte(fmt.Sprintf("m%d", h.bodies))
	switch Pick(t, "size", "small", "small", "small", "small", "small", "small", "small", "small", "1000", "1100") {
	case "1000":
		body = append(body, bytes.Repeat([]byte{'.'}, 1000-len(body))...)
	case "1100":
		body = append(body, bytes.Repeat([]byte{'.'}, 1100-len(body))...)
	}
	msg := &minibus.Message{
		Body:                  body,
		Subject:               Pick(t, "subject", "", "", "a", "b"),
		CorrelationID:         Pick(t, "correlation", "", "", "c1"),
		ContentType:           Pick(t, "contentType", "", "", "text/plain"),
		TimeToLive:            Pick(t, "msgTTL", messageTTLs...),
		ApplicationProperties: drawProps(t),
	}
	if chance(t, "msgID", 2) {
		msg.MessageID = fmt.Sprintf("id-%d", h.bodies)
	}
	if chance(t, "moreHeaders", 8) {
		msg.To, msg.ReplyTo, msg.ReplyToSessionID, msg.PartitionKey = "to", "reply", "rs", "pk"
	}
	if chance(t, "scheduled", 5) {
		msg.ScheduledEnqueueTime = tm(h.m.now).Add(Pick(t, "offset", offsets...))
	}
	if chance(t, "badMessage", 40) {
		switch Pick(t, "bad", "id", "ttl", "prop", "session") {
		case "id":
			msg.MessageID = strings.Repeat("i", 129)
		case "ttl":
			msg.TimeToLive = -1
		case "prop":
			msg.ApplicationProperties = map[string]any{"bad": struct{}{}}
		case "session":
			msg.PartitionKey = strings.Repeat("p", 129)
		}
	}
	return msg
}

// entity draws an instance of the kinds given: mostly a live one, now and
// then a deleted one (its handles must answer ErrNotFound).
func (h *machine) entity(t *rapid.T, kinds ...mKind) *hEnt {
	var live, dead []*hEnt
	for _, he := range h.ents {
		if slices.Contains(kinds, he.m.kind) {
			if he.m.deleted {
				dead = append(dead, he)
			} else {
				live = append(live, he)
			}
		}
	}
	if len(live) == 0 && len(dead) == 0 {
		skip("no entity of that kind")
	}
	if len(dead) > 0 && (len(live) == 0 || chance(t, "deadEntity", 12)) {
		return Pick(t, "entity", dead...)
	}
	return Pick(t, "entity", live...)
}

// receiver draws a receiver of a queue or subscription: an existing one, or
// a new one.
func (h *machine) receiver(t *rapid.T) *hRecv {
	he := h.entity(t, mQueue, mSub)
	rad := chance(t, "rad", 4)
	dlq := chance(t, "dlq", 3)
	var have []*hRecv
	for _, r := range h.recvs {
		if r.m.e == he.m && r.m.rad == rad && r.m.dlq == dlq && !r.m.closed {
			have = append(have, r)
		}
	}
	if len(have) > 0 && !chance(t, "freshReceiver", 8) {
		return Pick(t, "receiver", have...)
	}
	return h.newReceiver(t, he, rad, dlq)
}

func (h *machine) newReceiver(t *rapid.T, he *hEnt, rad, dlq bool) *hRecv {
	opts := &minibus.ReceiverOptions{SubQueue: minibus.SubQueueNone}
	if rad {
		opts.ReceiveMode = minibus.ReceiveModeReceiveAndDelete
	}
	if dlq {
		opts.SubQueue = minibus.SubQueueDeadLetter
	}
	var r *minibus.Receiver
	var err error
	if he.m.kind == mQueue {
		r, err = he.q.NewReceiver(opts)
	} else {
		r, err = he.s.NewReceiver(opts)
	}
	mr, merr := h.m.newReceiver(he.m, rad, dlq)
	h.errs(t, "NewReceiver", err, merr)
	if err != nil {
		skip("no receiver")
	}
	hr := &hRecv{r: r, m: mr}
	h.recvs = append(h.recvs, hr)
	return hr
}
