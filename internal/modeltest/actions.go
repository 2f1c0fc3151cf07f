package modeltest

// The actions of the state machine: the table, the step, the setup, and the
// actions on entities, rules and the clock. actions_messages.go holds the
// sends and receives, actions_settle.go the settlements, actions_sessions.go
// the sessions.

import (
	"fmt"
	"strings"
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
	{"forwardUpdate", 2, (*machine).forwardUpdate},
	{"rule", 3, (*machine).rule},
	{"lookup", 1, (*machine).lookup},
	{"closeReceiver", 2, (*machine).closeReceiver},
	{"send", 8, (*machine).send},
	{"sendTopic", 8, (*machine).sendTopic},
	{"sendSession", 4, (*machine).sendSession},
	{"fill", 4, (*machine).fill},
	{"schedule", 4, (*machine).schedule},
	{"cancel", 4, (*machine).cancel},
	{"receive", 4, (*machine).receive},
	{"receiveMain", 12, (*machine).receiveMain},
	{"settle", 14, (*machine).settle},
	{"settleStranger", 2, (*machine).settleStranger},
	{"receiveDeferred", 7, (*machine).receiveDeferred},
	{"peek", 4, (*machine).peek},
	{"blockedReceive", 2, (*machine).blockedReceive},
	{"acceptSession", 3, (*machine).acceptSession},
	{"acceptNextSession", 2, (*machine).acceptNextSession},
	{"blockedAcceptNext", 1, (*machine).blockedAcceptNext},
	{"sessionState", 4, (*machine).sessionState},
	{"closeSession", 4, (*machine).closeSession},
	{"renewSession", 2, (*machine).renewSession},
	{"listSessions", 1, (*machine).listSessions},
	{"advance", 9, (*machine).advance},
}

// step runs one action drawn by weight; an action that cannot run in this
// state is replaced by another draw.
func (h *machine) step(t *rapid.T) {
	total := 0
	for _, a := range h.table {
		total += a.weight
	}
	for range 100 {
		n := uniform(t, "action", total)
		var a action
		for _, a = range h.table {
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

// ---------------------------------------------------------------- entities

func (h *machine) createQueue(t *rapid.T) { h.createQueueWith(t, drawEntityName(t), drawQueueProps(t)) }

func (h *machine) createQueueWith(t *rapid.T, name string, p *minibus.QueueProperties) *hEnt {
	if p != nil {
		h.guard(func(g fwdGraph) {
			if key := strings.ToLower(name); g[key] == nil {
				g[key] = &gEnt{forwardTo: p.ForwardTo, forwardDLTo: p.ForwardDeadLetteredMessagesTo}
			}
		})
	}
	q, err := h.ns.CreateQueue(name, p)
	me, merr := h.m.createQueue(name, p)
	h.errs(t, fmt.Sprintf("CreateQueue(%q, %+v)", name, p), err, merr)
	if err != nil {
		return nil
	}
	if q.Name() != name {
		t.Fatalf("queue %q reads its name as %q", name, q.Name())
	}
	got := q.Properties()
	c := me.cfg
	if int64(got.LockDuration) != c.lock || uint32(got.MaxDeliveryCount) != c.maxDelivery ||
		int64(got.MaxSizeInMegabytes)<<20 != c.maxSize || got.MaxMessageSizeInKilobytes<<10 != c.maxMsgSize ||
		got.Status != c.status || int64(got.DuplicateDetectionHistoryTimeWindow) != c.dupWindow {
		t.Fatalf("queue %q: Properties() = %+v, model defaults %+v", name, got, c)
	}
	he := &hEnt{m: me, q: q}
	h.ents = append(h.ents, he)
	return he
}

func (h *machine) createTopic(t *rapid.T) { h.createTopicWith(t, drawEntityName(t), drawTopicProps(t)) }

func (h *machine) createTopicWith(t *rapid.T, name string, p *minibus.TopicProperties) *hEnt {
	h.guard(func(g fwdGraph) {
		if key := strings.ToLower(name); g[key] == nil {
			g[key] = &gEnt{topic: true, subs: map[string]*gEnt{}}
		}
	})
	top, err := h.ns.CreateTopic(name, p)
	me, merr := h.m.createTopic(name, p)
	h.errs(t, fmt.Sprintf("CreateTopic(%q, %+v)", name, p), err, merr)
	if err != nil {
		return nil
	}
	he := &hEnt{m: me, t: top}
	h.ents = append(h.ents, he)
	return he
}

func (h *machine) createSub(t *rapid.T) {
	he := h.entity(t, mTopic)
	name, p := drawSubName(t), drawSubProps(t)
	def := trueRule()
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
	h.createSubWith(t, he, name, p, def)
}

func (h *machine) createSubWith(t *rapid.T, he *hEnt, name string, p *minibus.SubscriptionProperties, def *mRule) *hEnt {
	if p != nil {
		h.guard(func(g fwdGraph) {
			if n := g.node(he.m); n != nil && n.subs[strings.ToLower(name)] == nil {
				c, _ := subCfg(*p)
				n.subs[strings.ToLower(name)] = subGEnt(c, []*mRule{def})
			}
		})
	}
	s, err := he.t.CreateSubscription(name, p)
	me, merr := h.m.createSub(he.m, name, p, def)
	h.errs(t, fmt.Sprintf("CreateSubscription(%q, %+v) on %v", name, p, he.m), err, merr)
	if err != nil {
		return nil
	}
	if s.Name() != name || s.Topic() != he.m.name {
		t.Fatalf("subscription %q of %q reads %q of %q", name, he.m.name, s.Name(), s.Topic())
	}
	hs := &hEnt{m: me, s: s}
	h.ents = append(h.ents, hs)
	return hs
}

// trueRule is the default rule: $Default, a TrueFilter.
func trueRule() *mRule {
	return &mRule{name: "$Default", kind: "true", public: minibus.Rule{Name: "$Default", Filter: minibus.TrueFilter{}}}
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
// activity. Mostly it keeps RequiresSession and RequiresDuplicateDetection,
// which cannot change (V2).
func (h *machine) update(t *rapid.T) {
	switch Pick(t, "updateKind", "queue", "topic", "sub") {
	case "queue":
		p := drawQueueProps(t)
		if p == nil {
			p = &minibus.QueueProperties{}
		}
		h.updateQueue(t, Pick(t, "name", mEntityNames...), p)
	case "topic":
		p := drawTopicProps(t)
		if p == nil {
			p = &minibus.TopicProperties{}
		}
		h.updateTopic(t, Pick(t, "name", mEntityNames...), p)
	case "sub":
		p := drawSubProps(t)
		if p == nil {
			p = &minibus.SubscriptionProperties{}
		}
		h.updateSub(t, h.entity(t, mTopic), Pick(t, "name", mSubNames...), p)
	}
}

// guardUpdate guards an update of e (nil: none) to these forward targets.
func (h *machine) guardUpdate(e *mEntity, to, dlTo string) {
	if e == nil {
		return
	}
	h.guard(func(g fwdGraph) {
		if n := g.node(e); n != nil {
			n.forwardTo, n.forwardDLTo = to, dlTo
		}
	})
}

// keepFixed keeps the settings that cannot change, mostly.
func keepFixed(t *rapid.T, e *mEntity, session, dup *bool) {
	if e != nil && !chance(t, "changeFixed", 8) {
		*session, *dup = e.cfg.session, e.cfg.dupDetect
	}
}

func (h *machine) updateQueue(t *rapid.T, name string, p *minibus.QueueProperties) {
	e, merr := h.m.lookup(mQueue, name)
	keepFixed(t, e, &p.RequiresSession, &p.RequiresDuplicateDetection)
	h.guardUpdate(e, p.ForwardTo, p.ForwardDeadLetteredMessagesTo)
	_, err := h.ns.UpdateQueue(name, *p)
	if merr == nil {
		c, ok := queueCfg(*p)
		merr = h.m.update(e, c, ok)
	}
	h.errs(t, fmt.Sprintf("UpdateQueue(%q, %+v)", name, p), err, merr)
}

func (h *machine) updateTopic(t *rapid.T, name string, p *minibus.TopicProperties) {
	e, merr := h.m.lookup(mTopic, name)
	var session bool
	keepFixed(t, e, &session, &p.RequiresDuplicateDetection)
	_, err := h.ns.UpdateTopic(name, *p)
	if merr == nil {
		c, ok := topicCfg(*p)
		merr = h.m.update(e, c, ok)
	}
	h.errs(t, fmt.Sprintf("UpdateTopic(%q, %+v)", name, p), err, merr)
}

func (h *machine) updateSub(t *rapid.T, he *hEnt, name string, p *minibus.SubscriptionProperties) {
	s, merr := h.m.lookupSub(he.m, name)
	var dup bool
	if merr == nil {
		keepFixed(t, s, &p.RequiresSession, &dup)
		h.guardUpdate(s, p.ForwardTo, p.ForwardDeadLetteredMessagesTo)
	}
	_, err := he.t.UpdateSubscription(name, *p)
	if merr == nil {
		c, ok := subCfg(*p)
		merr = h.m.update(s, c, ok)
	}
	h.errs(t, fmt.Sprintf("UpdateSubscription(%q, %+v) on %v", name, p, he.m), err, merr)
}

// forwardUpdate sets ForwardTo on a live queue or subscription, keeping its
// other settings: the messages available then move on (F2).
func (h *machine) forwardUpdate(t *rapid.T) {
	he := h.entityWhere(t, func(he *hEnt) bool { return he.m.kind != mTopic && !he.m.deleted })
	to := drawForwardName(t)
	if chance(t, "stopForwarding", 4) {
		to = ""
	}
	p := publicQueueProps(he.m.cfg)
	p.ForwardTo = to
	if he.m.kind == mQueue {
		h.updateQueue(t, he.m.name, &p)
		return
	}
	sp := publicSubProps(he.m.cfg)
	sp.ForwardTo = to
	h.updateSub(t, h.ents[he.m.topic.id], he.m.name, &sp)
}

// publicQueueProps are the QueueProperties that give c.
func publicQueueProps(c mCfg) minibus.QueueProperties {
	p := minibus.QueueProperties{LockDuration: time.Duration(c.lock), MaxDeliveryCount: int32(c.maxDelivery),
		DefaultMessageTimeToLive: time.Duration(c.ttl), DeadLetteringOnMessageExpiration: c.dlOnExpiry,
		RequiresSession: c.session, RequiresDuplicateDetection: c.dupDetect,
		DuplicateDetectionHistoryTimeWindow: time.Duration(c.dupWindow), ForwardTo: c.forwardTo,
		ForwardDeadLetteredMessagesTo: c.forwardDLTo, Status: c.status}
	if c.autoDelete != mNever {
		p.AutoDeleteOnIdle = time.Duration(c.autoDelete)
	}
	if c.maxSize != mNever {
		p.MaxSizeInMegabytes, p.MaxMessageSizeInKilobytes = int32(c.maxSize>>20), c.maxMsgSize>>10
	}
	return p
}

// publicSubProps are the SubscriptionProperties that give c.
func publicSubProps(c mCfg) minibus.SubscriptionProperties {
	q := publicQueueProps(c)
	return minibus.SubscriptionProperties{LockDuration: q.LockDuration, MaxDeliveryCount: q.MaxDeliveryCount,
		DefaultMessageTimeToLive: q.DefaultMessageTimeToLive, DeadLetteringOnMessageExpiration: q.DeadLetteringOnMessageExpiration,
		DeadLetteringOnFilterEvaluationExceptions: c.dlOnFilter, AutoDeleteOnIdle: q.AutoDeleteOnIdle,
		RequiresSession: c.session, ForwardTo: c.forwardTo, ForwardDeadLetteredMessagesTo: c.forwardDLTo, Status: c.status}
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
	if r.action != nil {
		h.guard(func(g fwdGraph) {
			if n := g.node(he.m); n != nil {
				n.actions++
			}
		})
	}
	err := he.s.CreateRule(name, props)
	h.errs(t, fmt.Sprintf("CreateRule(%q, %+v) on %v", name, props, he.m), err, h.m.createRule(he.m, r))
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

// closeReceiver closes a receiver: its calls return ErrClosed from then on;
// a plain receiver's locks stay (L11), a session receiver releases its
// session and its locked messages (SS5).
func (h *machine) closeReceiver(t *rapid.T) {
	if len(h.recvs) == 0 {
		skip("no receiver")
	}
	r := Pick(t, "receiver", h.recvs...)
	if err := r.r.Close(h.ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	h.m.closeReceiver(r.m)
	_, err := r.r.PeekMessages(h.ctx, 1, nil)
	h.errs(t, "peek on a closed receiver", err, minibus.ErrClosed)
}
