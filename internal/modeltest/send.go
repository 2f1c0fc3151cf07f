package modeltest

// The model's sending side: sizes, sends and schedules, fan-out to
// subscriptions, cancellation.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/minibus-go/minibus"
)

// mMessageSize is the size counted against the limits (SEMANTICS V3): the
// body, the string properties and the application properties' keys and
// values, as the broker documents it.
func mMessageSize(body []byte, msgID string, h mHeaders, props map[string]any) int64 {
	n := int64(len(body) + len(msgID))
	n += int64(len(h.ContentType) + len(h.CorrelationID) + len(h.Subject) + len(h.To) +
		len(h.ReplyTo) + len(h.ReplyToSessionID) + len(h.PartitionKey))
	for k, v := range props {
		n += int64(len(k))
		switch v := v.(type) {
		case nil:
		case string:
			n += int64(len(v))
		case []byte:
			n += int64(len(v))
		case bool, int8, uint8:
			n++
		case int16, uint16:
			n += 2
		case int32, uint32, float32:
			n += 4
		default:
			n += 8
		}
	}
	return n
}

// MessageSize is the size SEMANTICS V3 counts against
// MaxMessageSizeInKilobytes and the entity's quota, as the model computes
// it, for a message with a body, a MessageID and application properties
// and no other header.
func MessageSize(body []byte, msgID string, props map[string]any) int64 {
	return mMessageSize(body, msgID, mHeaders{}, props)
}

func (x *mMsg) resize() {
	id := x.msgID
	if id == "" {
		id = strings.Repeat("0", 32) // the broker's random ids are 32 characters
	}
	x.size = mMessageSize(x.body, id, x.headers, x.props)
}

func validValue(v any) bool {
	switch v.(type) {
	case nil, string, bool, []byte, time.Time, time.Duration,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return true
	}
	return false
}

func copyMap(p map[string]any) map[string]any {
	if len(p) == 0 {
		return nil
	}
	out := make(map[string]any, len(p))
	for k, v := range p {
		if b, ok := v.([]byte); ok {
			v = slices.Clone(b)
		}
		out[k] = v
	}
	return out
}

// effTTL is SEMANTICS E1: the smallest of the message's TTL (if set) and the
// cap, 0 standing for "not set" in both and in the result for "none".
func effTTL(sent, cap int64) int64 {
	if sent > 0 && (cap == 0 || sent < cap) {
		return sent
	}
	return cap
}

// capTTL is the smaller of two caps on TTL, 0 standing for none.
func capTTL(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// record validates a message to send and makes the model's copy of it.
func (m *refModel) record(msg *minibus.Message) (*mMsg, error) {
	if msg == nil || len(msg.MessageID) > 128 || len(msg.SessionID) > 128 || len(msg.PartitionKey) > 128 || msg.TimeToLive < 0 {
		return nil, minibus.ErrInvalidArgument
	}
	for _, v := range msg.ApplicationProperties {
		if !validValue(v) {
			return nil, minibus.ErrInvalidArgument
		}
	}
	x := &mMsg{
		body:    slices.Clone(msg.Body),
		msgID:   msg.MessageID,
		headers: mHeaders{msg.ContentType, msg.CorrelationID, msg.Subject, msg.To, msg.ReplyTo, msg.ReplyToSessionID, msg.PartitionKey},
		props:   copyMap(msg.ApplicationProperties),
		sentTTL: int64(msg.TimeToLive),
		sched:   mUnset,
		expires: mNever,
	}
	if !msg.ScheduledEnqueueTime.IsZero() {
		x.sched = mInstant(msg.ScheduledEnqueueTime)
	}
	x.resize()
	return x, nil
}

// send is SendMessages (at == mUnset) and ScheduleMessages (at the
// schedule instant): all or nothing (SEMANTICS V3).
func (m *refModel) send(e *mEntity, msgs []*minibus.Message, at int64) ([]int64, error) {
	if len(msgs) == 0 {
		return nil, minibus.ErrInvalidArgument
	}
	recs := make([]*mMsg, len(msgs))
	for i, msg := range msgs {
		x, err := m.record(msg)
		if err != nil {
			return nil, err
		}
		if at != mUnset {
			x.sched = at
		}
		recs[i] = x
	}
	if e.deleted {
		return nil, minibus.ErrNotFound
	}
	if !canSend(e.cfg.status) {
		return nil, minibus.ErrEntityDisabled
	}
	var batch int64
	for _, x := range recs {
		if x.size > e.cfg.maxMsgSize {
			m.hits.TooLarge++
			return nil, minibus.ErrMessageTooLarge
		}
		batch += x.size
	}
	future := func(x *mMsg) bool { return x.sched != mUnset && x.sched > m.now }
	if e.kind == mTopic {
		// The quota counts the scheduled messages and every copy the send
		// makes (SEMANTICS V3: a topic's quota counts its subscriptions).
		var total int64
		for i, x := range recs {
			if future(x) {
				total += x.size
				continue
			}
			x.key = mKey{seq: e.seq + int64(i) + 1}
			for _, c := range m.plan(e, x, m.now) {
				total += c.msg.size
			}
		}
		if m.topicSize(e)+total > e.cfg.maxSize {
			m.hits.QuotaExceeded++
			return nil, minibus.ErrQuotaExceeded
		}
	} else if m.entitySize(e)+batch > e.cfg.maxSize {
		m.hits.QuotaExceeded++
		return nil, minibus.ErrQuotaExceeded
	}
	seqs := make([]int64, len(recs))
	for i, x := range recs {
		x.item = m.newItem(e.kind.String() + " message")
		x.origin = x.item
		e.seq++
		e.seqLog = append(e.seqLog, x.item)
		seqs[i] = e.seq
		x.key = mKey{seq: e.seq}
		switch {
		case future(x):
			x.state = mScheduled
			x.enqueued = x.sched
			insert(&e.main, x)
		case e.kind == mTopic:
			m.fanOut(e, x, m.now)
		default:
			m.enqueue(e, x, m.now, e.cfg.ttl)
		}
	}
	m.touch(e)
	e.accessed = m.now
	return seqs, nil
}

// enqueue makes x available in e at instant at (SEMANTICS Q3, E1, E2).
func (m *refModel) enqueue(e *mEntity, x *mMsg, at, cap int64) {
	eff := effTTL(x.sentTTL, cap)
	x.state = mAvail
	x.enqueued = at
	x.expires = mExpiry(at, eff)
	x.ttl = eff
	insert(&e.main, x)
}

func (m *refModel) entitySize(e *mEntity) int64 {
	var n int64
	for _, l := range [][]*mMsg{e.main, e.dlq} {
		for _, x := range l {
			n += x.size
		}
	}
	return n
}

func (m *refModel) topicSize(t *mEntity) int64 {
	n := m.entitySize(t)
	for _, s := range t.subs {
		n += m.entitySize(s)
	}
	return n
}

// planned is one copy a topic message makes in a subscription.
type planned struct {
	sub    *mEntity
	msg    *mMsg
	action bool // made by a rule's action
}

// plan returns the copies of x that the topic's subscriptions' rules make at
// instant at, in the deliberate order: copy 0 for the plain matching rules,
// then one per matching rule with an action in rule-name order, then one
// dead-letter copy if a rule failed and the subscription says so
// (SEMANTICS R1, R2, R5). A Disabled or SendDisabled subscription gets no
// copies.
func (m *refModel) plan(t *mEntity, x *mMsg, at int64) []planned {
	var out []planned
	for _, s := range t.subs {
		if !canSend(s.cfg.status) {
			continue
		}
		plain := false
		var actions []*mMsg
		failed := ""
		for _, r := range s.rules {
			ok, err := r.match(x)
			if !err && ok && r.action != nil {
				c := x.clone()
				if err = !r.action.apply(c); !err {
					if c.props == nil {
						c.props = map[string]any{}
					}
					c.props["RuleName"] = r.name // a copy made by an action names its rule (R2)
					c.resize()
					actions = append(actions, c)
				}
			}
			if err {
				if failed == "" {
					failed = r.name
				}
				continue
			}
			if ok && r.action == nil {
				plain = true
			}
		}
		var copies []planned
		if plain {
			copies = append(copies, planned{s, x.clone(), false})
		}
		for _, c := range actions {
			copies = append(copies, planned{s, c, true})
		}
		if failed != "" && s.cfg.dlOnFilter {
			c := x.clone()
			c.dlq = true
			c.dlReason = "FilterEvaluationException"
			c.dlDesc = fmt.Sprintf("rule %q: ", failed)
			c.dlDescPrefix = true
			copies = append(copies, planned{s, c, false})
		}
		for i, p := range copies {
			p.msg.key = mKey{x.key.seq, uint32(i)}
			out = append(out, p)
		}
	}
	return out
}

func (x *mMsg) clone() *mMsg {
	c := *x
	c.body = slices.Clone(x.body)
	c.props = copyMap(x.props)
	return &c
}

// fanOut copies x, numbered, to the topic's subscriptions at instant at
// (SEMANTICS R1, S5); x itself ends there.
func (m *refModel) fanOut(t *mEntity, x *mMsg, at int64) {
	copies := m.plan(t, x, at)
	if len(copies) == 0 {
		m.hits.FilterNoMatchDrop++
		m.terminate(x.item, termNoMatch)
		return
	}
	m.terminate(x.item, termFannedOut)
	for _, p := range copies {
		c, s := p.msg, p.sub
		c.item = m.newItem("subscription copy")
		c.origin = x.origin
		cap := capTTL(s.cfg.ttl, t.cfg.ttl)
		if p.action {
			m.hits.ActionCopy++
		}
		if c.dlq {
			m.hits.FilterErrorDLQ++
			eff := effTTL(c.sentTTL, cap)
			c.state = mAvail
			c.enqueued = at
			c.expires = mExpiry(at, eff)
			c.ttl = eff
			insert(&s.dlq, c)
			continue
		}
		m.enqueue(s, c, at, cap)
	}
}

func (m *refModel) cancel(e *mEntity, seqs []int64) error {
	if err := checkSeqs(seqs); err != nil {
		return err
	}
	if e.deleted {
		return minibus.ErrNotFound
	}
	if !canSend(e.cfg.status) {
		return minibus.ErrEntityDisabled
	}
	var found []*mMsg
	for _, s := range seqs {
		i := slices.IndexFunc(e.main, func(x *mMsg) bool { return x.key == mKey{seq: s} && x.state == mScheduled })
		if i < 0 {
			return minibus.ErrMessageNotFound
		}
		found = append(found, e.main[i])
	}
	for _, x := range found {
		remove(&e.main, x)
		m.terminate(x.item, termCancelled)
		m.hits.Cancel++
	}
	m.touch(e)
	return nil
}

func checkSeqs(seqs []int64) error {
	if len(seqs) == 0 {
		return minibus.ErrInvalidArgument
	}
	for i, s := range seqs {
		if s < 1 || slices.Contains(seqs[:i], s) {
			return minibus.ErrInvalidArgument
		}
	}
	return nil
}
