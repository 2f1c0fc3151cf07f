package modeltest

// The harness keeps forwarding finite. A loop of ForwardTo moves ends at
// the hop limit (F3), but a loop through a topic whose forwarding
// subscriptions make several copies per pass multiplies them at every
// hop, and a loop of dead-letter forwards (not hops, D4) with a short time
// to live goes round as long as the clock runs. Both are allowed, and
// both would make a case run for ever: the harness does not make them.
//
// At the end of time (the clamped clock) every new deadline is due at
// once, so events of different entities tie all the time, and the broker
// orders ties by its own bookkeeping (noteTie): the harness forwards
// nothing there, and does not move the clock there while anything
// forwards (jump).

import "strings"

// gEnt is a queue's, topic's or subscription's forwarding settings.
type gEnt struct {
	forwardTo, forwardDLTo string
	actions                int // a subscription's rules with an action
	topic                  bool
	subs                   map[string]*gEnt // a topic's, by lower-case name
}

// fwdGraph is the forwarding settings of the namespace's live entities,
// queues and topics by lower-case name.
type fwdGraph map[string]*gEnt

func (m *refModel) fwdGraph() fwdGraph {
	g := fwdGraph{}
	for key, e := range m.names {
		n := &gEnt{forwardTo: e.cfg.forwardTo, forwardDLTo: e.cfg.forwardDLTo, topic: e.kind == mTopic, subs: map[string]*gEnt{}}
		for _, s := range e.subs {
			n.subs[strings.ToLower(s.name)] = subGEnt(s.cfg, s.rules)
		}
		g[key] = n
	}
	return g
}

func subGEnt(c mCfg, rules []*mRule) *gEnt {
	n := &gEnt{forwardTo: c.forwardTo, forwardDLTo: c.forwardDLTo}
	for _, r := range rules {
		if r.action != nil {
			n.actions++
		}
	}
	return n
}

// node returns the entity of a model entity, or nil.
func (g fwdGraph) node(e *mEntity) *gEnt {
	if e.kind != mSub {
		return g[strings.ToLower(e.name)]
	}
	if t := g[strings.ToLower(e.topic.name)]; t != nil {
		return t.subs[strings.ToLower(e.name)]
	}
	return nil
}

// safe reports whether no topic's forwarding subscriptions make more than
// two copies a pass, and no loop is made of dead-letter forwards and
// topics' copies alone.
func (g fwdGraph) safe() bool {
	for _, n := range g {
		copies := 0
		for _, s := range n.subs {
			if s.forwardTo != "" && g[strings.ToLower(s.forwardTo)] != nil {
				copies += 1 + s.actions
			}
		}
		if copies > 2 {
			return false
		}
	}
	state := map[*gEnt]int{} // 1: on the path, 2: done
	for _, n := range g {
		if g.dlCycle(n, state) {
			return false
		}
	}
	return true
}

// dlCycle reports whether a loop of dead-letter forwards and topics'
// copies passes through n (depth first).
func (g fwdGraph) dlCycle(n *gEnt, state map[*gEnt]int) bool {
	switch state[n] {
	case 1:
		return true
	case 2:
		return false
	}
	state[n] = 1
	next := []*gEnt{g[strings.ToLower(n.forwardDLTo)]}
	for _, s := range n.subs {
		next = append(next, s)
	}
	for _, x := range next {
		if x != nil && g.dlCycle(x, state) {
			return true
		}
	}
	state[n] = 2
	return false
}

// forwards reports whether any entity forwards its messages or its dead
// letters.
func (g fwdGraph) forwards() bool {
	for _, n := range g {
		if n.forwardTo != "" || n.forwardDLTo != "" {
			return true
		}
		for _, s := range n.subs {
			if s.forwardTo != "" || s.forwardDLTo != "" {
				return true
			}
		}
	}
	return false
}

// guard skips an action that would make forwarding run away: change makes
// the proposed settings.
func (h *machine) guard(change func(g fwdGraph)) {
	g := h.m.fwdGraph()
	change(g)
	if h.m.now == mNever-1 && g.forwards() {
		skip("no forwarding at the end of time")
	}
	if !g.safe() {
		h.tally["forwarding loops not made"]++
		skip("forwarding would run away")
	}
}
