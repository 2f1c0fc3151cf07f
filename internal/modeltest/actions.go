package modeltest

// The actions of the state machine: the table, the step, the setup, and the
// actions on entities, rules and the clock. actions_messages.go holds the
// sends and receives, actions_settle.go the settlements.

import (
	"fmt"
	"time"

	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

// skipped is the panic of an action that cannot run in this state; the
// step then draws another action.
type skipped struct{ why string }

func skip(why string) { panic(skipped{why}) }

// action is one kind of step with its weight.
type action struct {
	name   string
	weight int
	run    func(*machine, *rapid.T)
}

var machineActions = []action{
	{"createQueue", 2, (*machine).createQueue},
	{"createTopic", 1, (*machine).createTopic},
	{"createSub", 2, (*machine).createSub},
	{"delete", 1, (*machine).delete},
	{"update", 2, (*machine).update},
	{"rule", 3, (*machine).rule},
	{"lookup", 1, (*machine).lookup},
	{"closeReceiver", 1, (*machine).closeReceiver},
	{"send", 8, (*machine).send},
	{"sendTopic", 8, (*machine).sendTopic},
	{"fill", 2, (*machine).fill},
	{"schedule", 4, (*machine).schedule},
	{"cancel", 4, (*machine).cancel},
	{"receive", 4, (*machine).receive},
	{"receiveMain", 10, (*machine).receiveMain},
	{"settle", 12, (*machine).settle},
	{"settleStranger", 2, (*machine).settleStranger},
	{"receiveDeferred", 6, (*machine).receiveDeferred},
	{"peek", 4, (*machine).peek},
	{"blockedReceive", 2, (*machine).blockedReceive},
	{"advance", 8, (*machine).advance},
}

// step runs one action drawn by weight; an action that cannot run in this
// state is replaced by another draw.
func (h *machine) step(t *rapid.T) {
	total := 0
	for _, a := range machineActions {
		total += a.weight
	}
	for range 100 {
		n := uniform(t, "action", total)
		var a action
		for _, a = range machineActions {
			if n < a.weight {
				break
			}
			n -= a.weight
		}
		if h.try(t, a) {
			h.ops[a.name]++
			t.Logf("step %s done at +%v", a.name, time.Duration(h.m.now-epoch.UnixNano()))
			return
		}
	}
	t.Skip("no action can run")
}

func (h *machine) try(t *rapid.T, a action) (ran bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(skipped); !ok {
				panic(r)
			}
			ran = false
		}
	}()
	a.run(h, t)
	return true
}

func (h *machine) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){"": h.Check, "step": h.step}
}

// setup creates a queue and a topic with subscriptions, so that a run starts
// where the interesting things happen.
func (h *machine) setup(t *rapid.T) {
	for range Between(t, "queues", 1, 2) {
		h.try(t, action{run: (*machine).createQueue})
	}
	h.try(t, action{run: func(h *machine, t *rapid.T) { h.createTopicNamed(t, Pick(t, "topic", "t1", "t2")) }})
	for range Between(t, "subs", 1, 3) {
		h.try(t, action{run: (*machine).createSub})
	}
	if chance(t, "strictSub", 2) {
		// A subscription that dead-letters the messages its SQL rule fails
		// on (SEMANTICS R5).
		h.try(t, action{run: func(h *machine, t *rapid.T) {
			he := h.entity(t, mTopic)
			params := map[string]any{}
			r := &mRule{name: "strict", kind: "sql", node: drawNode(t, 1, params)}
			if len(params) == 0 {
				params = nil
			}
			f := minibus.SQLFilter{Expression: r.node.sql(), Parameters: params}
			r.props = &minibus.RuleProperties{Name: "strict", Filter: f}
			r.public = minibus.Rule{Name: "strict", Filter: f}
			p := &minibus.SubscriptionProperties{DeadLetteringOnFilterEvaluationExceptions: true, DefaultRule: r.props}
			s, err := he.t.CreateSubscription("strict", p)
			me, merr := h.m.createSub(he.m, "strict", p, r)
			h.errs(t, "CreateSubscription strict", err, merr)
			if err == nil {
				h.ents = append(h.ents, &hEnt{m: me, s: s})
			}
		}})
	}
}

func (h *machine) createQueue(t *rapid.T) {
	name, p := drawEntityName(t), drawQueueProps(t)
	q, err := h.ns.CreateQueue(name, p)
	me, merr := h.m.createQueue(name, p)
	h.errs(t, fmt.Sprintf("CreateQueue(%q, %+v)", name, p), err, merr)
	if err != nil {
		return
	}
	if q.Name() != name {
		t.Fatalf("queue %q reads its name as %q", name, q.Name())
	}
	got := q.Properties()
	c := me.cfg
	if int64(got.LockDuration) != c.lock || uint32(got.MaxDeliveryCount) != c.maxDelivery ||
		int64(got.MaxSizeInMegabytes)<<20 != c.maxSize || got.MaxMessageSizeInKilobytes<<10 != c.maxMsgSize ||
		got.Status != c.status || got.DuplicateDetectionHistoryTimeWindow != 10*time.Minute {
		t.Fatalf("queue %q: Properties() = %+v, model defaults %+v", name, got, c)
	}
	h.ents = append(h.ents, &hEnt{m: me, q: q})
}

func (h *machine) createTopic(t *rapid.T) { h.createTopicNamed(t, drawEntityName(t)) }

func (h *machine) createTopicNamed(t *rapid.T, name string) {
	p := drawTopicProps(t)
	top, err := h.ns.CreateTopic(name, p)
	me, merr := h.m.createTopic(name, p)
	h.errs(t, fmt.Sprintf("CreateTopic(%q, %+v)", name, p), err, merr)
	if err == nil {
		h.ents = append(h.ents, &hEnt{m: me, t: top})
	}
}

func (h *machine) createSub(t *rapid.T) {
	he := h.entity(t, mTopic)
	name, p := drawSubName(t), drawSubProps(t)
	def := &mRule{name: "$Default", kind: "true", public: minibus.Rule{Name: "$Default", Filter: minibus.TrueFilter{}}}
	if chance(t, "defaultRule", 2) {
		rn := Pick(t, "defaultRuleName", "", "r1", "$Default", "$bad$")
		def = drawRule(t, rn, true)
		if rn == "" {
			def.name, def.public.Name = "$Default", "$Default"
		}
		if p == nil {
			p = &minibus.SubscriptionProperties{}
		}
		p.DefaultRule = def.props
	}
	s, err := he.t.CreateSubscription(name, p)
	me, merr := h.m.createSub(he.m, name, p, def)
	h.errs(t, fmt.Sprintf("CreateSubscription(%q, %+v) on %v", name, p, he.m), err, merr)
	if err == nil {
		if s.Name() != name || s.Topic() != he.m.name {
			t.Fatalf("subscription %q of %q reads %q of %q", name, he.m.name, s.Name(), s.Topic())
		}
		h.ents = append(h.ents, &hEnt{m: me, s: s})
	}
}

func (h *machine) delete(t *rapid.T) {
	switch Pick(t, "deleteKind", "queue", "topic", "sub", "sub") {
	case "queue":
		name := Pick(t, "name", mEntityNames...)
		h.errs(t, "DeleteQueue "+name, h.ns.DeleteQueue(name), h.m.delete(mQueue, name))
	case "topic":
		name := Pick(t, "name", mEntityNames...)
		h.errs(t, "DeleteTopic "+name, h.ns.DeleteTopic(name), h.m.delete(mTopic, name))
	case "sub":
		he := h.entity(t, mTopic)
		name := Pick(t, "name", mSubNames...)
		h.errs(t, "DeleteSubscription "+name, he.t.DeleteSubscription(name), h.m.deleteSub(he.m, name))
	}
}

// update is UpdateQueue, UpdateTopic or UpdateSubscription by name: new
// settings apply to later locks and messages, locks are kept, and it is
// activity.
func (h *machine) update(t *rapid.T) {
	switch Pick(t, "updateKind", "queue", "topic", "sub") {
	case "queue":
		name := Pick(t, "name", mEntityNames...)
		p := drawQueueProps(t)
		if p == nil {
			p = &minibus.QueueProperties{}
		}
		_, err := h.ns.UpdateQueue(name, *p)
		var merr error
		e, merr := h.m.lookup(mQueue, name)
		if merr == nil {
			if c, ok := queueCfg(*p); !ok {
				merr = minibus.ErrInvalidArgument
			} else {
				h.m.update(e, c)
			}
		}
		h.errs(t, fmt.Sprintf("UpdateQueue(%q, %+v)", name, p), err, merr)
	case "topic":
		name := Pick(t, "name", mEntityNames...)
		p := drawTopicProps(t)
		if p == nil {
			p = &minibus.TopicProperties{}
		}
		_, err := h.ns.UpdateTopic(name, *p)
		e, merr := h.m.lookup(mTopic, name)
		if merr == nil {
			if c, ok := topicCfg(*p); !ok {
				merr = minibus.ErrInvalidArgument
			} else {
				h.m.update(e, c)
			}
		}
		h.errs(t, fmt.Sprintf("UpdateTopic(%q, %+v)", name, p), err, merr)
	case "sub":
		he := h.entity(t, mTopic)
		name := Pick(t, "name", mSubNames...)
		p := drawSubProps(t)
		if p == nil {
			p = &minibus.SubscriptionProperties{}
		}
		_, err := he.t.UpdateSubscription(name, *p)
		s, merr := h.m.lookupSub(he.m, name)
		if merr == nil {
			if c, ok := subCfg(*p); !ok {
				merr = minibus.ErrInvalidArgument
			} else {
				h.m.update(s, c)
			}
		}
		h.errs(t, fmt.Sprintf("UpdateSubscription(%q, %+v) on %v", name, p, he.m), err, merr)
	}
}

func (h *machine) rule(t *rapid.T) {
	he := h.entity(t, mSub)
	name := drawRuleName(t)
	if chance(t, "deleteRule", 3) {
		h.errs(t, fmt.Sprintf("DeleteRule(%q) on %v", name, he.m), he.s.DeleteRule(name), h.m.deleteRule(he.m, name))
		return
	}
	r := drawRule(t, name, true)
	props := r.props
	if r.kind == "true" && r.props.Filter == nil && r.props.Action == nil && chance(t, "nilRuleProps", 2) {
		props = nil
	}
	err := he.s.CreateRule(name, props)
	h.errs(t, fmt.Sprintf("CreateRule(%q, %+v) on %v", name, props, he.m), err, h.m.createRule(he.m, r))
}

// a kind drawn first (a lock end, an expiry, an activation, an idle
// deletion), 1ns before or after it, a configured duration from now
// (±1ns), a small step, or far ahead across many deadlines.
func (h *machine) advance(t *rapid.T) {
	now := h.m.now
	pending := h.m.deadlines()
	kinds := []string{"duration", "small", "big"}
	for _, k := range []string{"lock", "expire", "activate", "idle"} {
		if len(pending[k]) > 0 {
			kinds = append(kinds, k, k)
		}
	}
	var to int64
	switch kind := Pick(t, "jump", kinds...); kind {
	case "duration":
		durations := []int64{int64(5 * time.Second), int64(time.Minute), int64(5 * time.Minute)}
		for _, e := range h.m.all {
			if !e.deleted {
				for _, d := range []int64{e.cfg.lock, e.cfg.ttl, e.cfg.autoDelete} {
					if d > 0 && d < int64(24*time.Hour) {
						durations = append(durations, d)
					}
				}
			}
		}
		to = now + Pick(t, "duration", durations...) + Pick[int64](t, "nudge", -1, 0, 1)
	case "small":
		to = now + Pick[int64](t, "small", 0, 1, int64(time.Second))
	case "big":
		to = now + int64(Pick(t, "big", time.Hour, 24*time.Hour, 30*24*time.Hour))
	default:
		to = Pick(t, "deadline", pending[kind]...) + Pick[int64](t, "nudge", -1, 0, 1)
	}
	to = max(to, now)
	h.mock.Add(time.Duration(to - now))
	h.m.advance(to)
}

func (h *machine) lookup(t *rapid.T) {
	switch Pick(t, "lookupKind", "queue", "topic", "sub") {
	case "queue":
		name := Pick(t, "name", mEntityNames...)
		q, err := h.ns.Queue(name)
		e, merr := h.m.lookup(mQueue, name)
		h.errs(t, "Queue "+name, err, merr)
		if err == nil && q.Name() != e.name {
			t.Fatalf("Queue(%q).Name() = %q, model says %q", name, q.Name(), e.name)
		}
	case "topic":
		name := Pick(t, "name", mEntityNames...)
		top, err := h.ns.Topic(name)
		e, merr := h.m.lookup(mTopic, name)
		h.errs(t, "Topic "+name, err, merr)
		if err == nil && top.Name() != e.name {
			t.Fatalf("Topic(%q).Name() = %q, model says %q", name, top.Name(), e.name)
		}
	case "sub":
		he := h.entity(t, mTopic)
		name := Pick(t, "name", mSubNames...)
		s, err := he.t.Subscription(name)
		e, merr := h.m.lookupSub(he.m, name)
		h.errs(t, "Subscription "+name, err, merr)
		if err == nil && s.Name() != e.name {
			t.Fatalf("Subscription(%q).Name() = %q, model says %q", name, s.Name(), e.name)
		}
	}
}

// closeReceiver closes a receiver: its calls return ErrClosed from then on,
// and its locks stay (L11).
func (h *machine) closeReceiver(t *rapid.T) {
	if len(h.recvs) == 0 {
		skip("no receiver")
	}
	r := Pick(t, "receiver", h.recvs...)
	if err := r.r.Close(h.ctx); err != nil {
		t.Fatalf("Receiver.Close: %v", err)
	}
	r.m.closed = true
	_, err := r.r.PeekMessages(h.ctx, 1, nil)
	h.errs(t, "peek on a closed receiver", err, minibus.ErrClosed)
}

// run is one rapid test case: the setup, then random actions.
func (h *machine) run(t *rapid.T) {
	h.setup(t)
	t.Repeat(h.actions())
}
