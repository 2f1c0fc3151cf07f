package modeltest

// A deep copy of the model, for looking ahead: jump (harness.go) runs the
// clock forward on a copy first, to find the instants where the broker's
// order of simultaneous events in different entities shows (ties).

import "maps"

// clone returns a deep copy of m: entities, messages and ledger. Receivers
// and rules are shared: advancing the copy changes neither.
func (m *refModel) clone() *refModel {
	c := *m
	c.items, c.term, c.learned = maps.Clone(m.items), maps.Clone(m.term), maps.Clone(m.learned)
	c.idleGone = maps.Clone(m.idleGone)
	c.outbox = nil
	ents := make(map[*mEntity]*mEntity, len(m.all))
	c.all = make([]*mEntity, len(m.all))
	for i, e := range m.all {
		ne := *e
		c.all[i] = &ne
		ents[e] = &ne
	}
	c.names = make(map[string]*mEntity, len(m.names))
	for k, e := range m.names {
		c.names[k] = ents[e]
	}
	for _, e := range c.all {
		cloneEntity(e, ents)
	}
	return &c
}

// cloneEntity gives e, a shallow copy, its own messages, maps and links
// into the copy's entities.
func cloneEntity(e *mEntity, ents map[*mEntity]*mEntity) {
	if e.topic != nil {
		e.topic = ents[e.topic]
	}
	subs := make([]*mEntity, len(e.subs))
	for i, s := range e.subs {
		subs[i] = ents[s]
	}
	e.subs = subs
	e.main, e.dlq, e.tdlq = cloneMsgs(e.main, ents), cloneMsgs(e.dlq, ents), cloneMsgs(e.tdlq, ents)
	e.seqLog = append([]int(nil), e.seqLog...)
	e.held = make(map[string]*mHold, len(e.held))
	for id, h := range e.held {
		nh := *h
		e.held[id] = &nh
	}
	e.state, e.dups = maps.Clone(e.state), maps.Clone(e.dups)
}

func cloneMsgs(l []*mMsg, ents map[*mEntity]*mEntity) []*mMsg {
	out := make([]*mMsg, len(l))
	for i, x := range l {
		nx := *x
		if nx.home != nil {
			nx.home = ents[nx.home]
		}
		out[i] = &nx
	}
	return out
}
