package modeltest

// The model's topics: the copies a topic message makes in its
// subscriptions (SEMANTICS R1, R2, R5, SS1, S5).

import (
	"fmt"
	"slices"
	"strings"
)

// planned is one copy a topic message makes in a subscription.
type planned struct {
	sub    *mEntity
	msg    *mMsg
	action bool // made by a rule's action
}

// sortedSubs is the topic's live subscriptions in the order the broker
// visits them: by lower-case name.
func sortedSubs(t *mEntity) []*mEntity {
	subs := slices.Clone(t.subs)
	slices.SortFunc(subs, func(a, b *mEntity) int { return strings.Compare(strings.ToLower(a.name), strings.ToLower(b.name)) })
	return subs
}

// plan returns the copies of x that the topic's subscriptions' rules make at
// instant at, subscription by subscription (by lower-case name), each in
// the deliberate order: copy 0 for the plain matching rules, then one per
// matching rule with an action in rule-name order, then one dead-letter
// copy if a rule failed and the subscription says so (SEMANTICS R1, R2,
// R5). A Disabled or SendDisabled subscription gets no copies.
func (m *refModel) plan(t *mEntity, x *mMsg, at int64) []planned {
	var out []planned
	for _, s := range sortedSubs(t) {
		if !canSend(s.cfg.status) {
			continue
		}
		for i, p := range planSub(s, x) {
			p.msg.key = mKey{x.key.seq, uint32(i)}
			out = append(out, p)
		}
	}
	return out
}

// planSize is the size of the copies x makes now.
func (m *refModel) planSize(t *mEntity, x *mMsg, at int64) int64 {
	var n int64
	for _, c := range m.plan(t, x, at) {
		n += c.msg.size
	}
	return n
}

// planSub is the copies of x one subscription's rules make.
func planSub(s *mEntity, x *mMsg) []planned {
	plain := false
	var actions []*mMsg
	failed := ""
	for _, r := range s.rules {
		ok, err := r.match(x)
		if !err && ok && r.action != nil {
			var c *mMsg
			if c, err = actionCopy(r, x); !err {
				actions = append(actions, c)
			}
		}
		if err && failed == "" {
			failed = r.name
		}
		plain = plain || (!err && ok && r.action == nil)
	}
	var copies []planned
	if plain {
		c := x.clone()
		c.q = sqMain
		copies = append(copies, planned{s, c, false})
	}
	for _, c := range actions {
		copies = append(copies, planned{s, c, true})
	}
	if failed != "" && s.cfg.dlOnFilter {
		c := x.clone()
		c.q = sqDLQ
		c.dlSource = ""
		c.dlReason = "FilterEvaluationException"
		c.dlDesc = fmt.Sprintf("rule %q: ", failed)
		c.dlDescPrefix = true
		copies = append(copies, planned{s, c, false})
	}
	return copies
}

// actionCopy is the copy rule r's action makes of x; true is an
// evaluation error.
func actionCopy(r *mRule, x *mMsg) (*mMsg, bool) {
	c := x.clone()
	c.q = sqMain
	if !r.action.apply(c) {
		return nil, true
	}
	if c.props == nil {
		c.props = map[string]any{}
	}
	c.props["RuleName"] = r.name // a copy made by an action names its rule (R2)
	c.resize()
	return c, false
}

func (x *mMsg) clone() *mMsg {
	c := *x
	c.body = slices.Clone(x.body)
	c.props = copyMap(x.props)
	return &c
}

// fanOut copies x, numbered, to the topic's subscriptions at instant at
// (SEMANTICS R1, S5); x itself ends there. The subscriptions are brought
// up to that instant first (T3). A copy without SessionID for a
// session-enabled subscription goes to its dead-letter queue (SS1).
func (m *refModel) fanOut(t *mEntity, x *mMsg, at int64) {
	m.catchUpSubs(t, at)
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
		if p.action {
			m.hits.ActionCopy++
		}
		if c.q != sqDLQ && s.cfg.session && c.headers.SessionID == "" {
			m.hits.SessionNullDLQ++
			c.q = sqDLQ
			c.dlSource = ""
			c.dlReason = "Session id is null."
			c.dlDesc = "Session enabled entity doesn't allow a message whose session identifier is null."
		}
		if c.q == sqDLQ {
			if c.dlReason == "FilterEvaluationException" {
				m.hits.FilterErrorDLQ++
			}
			m.putDeadLetterCopy(s, c, at)
			continue
		}
		m.enqueue(s, c, at, ttlCap(s))
	}
}

// putDeadLetterCopy puts a copy that goes straight to s's dead-letter queue
// there, stamped as an enqueue (E2; it never expires there, E6), or
// forwards it (D4).
func (m *refModel) putDeadLetterCopy(s *mEntity, c *mMsg, at int64) {
	if forwardsDeadLetters(s, c, c.dlReason) {
		m.dlForward(s, c, at)
		return
	}
	m.stampAt(s, c, at, ttlCap(s))
	c.state = mAvail
	insert(&s.dlq, c)
}

// catchUpSubs brings the topic's subscriptions, one by one in the order the
// broker visits them, up to instant at: what is due in them happens before
// a copy arrives (T3). While the clock runs, what their events forward is
// theirs (firing): the broker may have visited a subscription with an
// event at that very instant before the topic, so that its forwards
// arrive before the topic's own event, not after (noteTie).
func (m *refModel) catchUpSubs(t *mEntity, at int64) {
	was := m.firing
	defer func() { m.firing = was }()
	for _, s := range sortedSubs(t) {
		for {
			ev, ok := m.firstEvent(s, at)
			if !ok {
				break
			}
			if m.catchingUp {
				m.firing = s
			}
			m.fire(ev)
		}
	}
}
