package modeltest

// The setup of a case, and the clock.

import (
	"time"

	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

// setup creates queues and a topic with subscriptions, so that a run starts
// where the interesting things happen, and now and then an arrangement of
// sessions, duplicate detection or forwarding that random creation seldom
// makes.
func (h *machine) setup(t *rapid.T) {
	for range Between(t, "queues", 1, 2) {
		h.try(t, action{run: (*machine).createQueue})
	}
	h.try(t, action{run: func(h *machine, t *rapid.T) { h.createTopicWith(t, Pick(t, "topic", "t1", "t2"), drawTopicProps(t)) }})
	for range Between(t, "subs", 1, 3) {
		h.try(t, action{run: (*machine).createSub})
	}
	if chance(t, "strictSub", 2) {
		h.try(t, action{run: (*machine).strictSub})
	}
	arrangements := []func(*machine, *rapid.T){(*machine).sessionSetup, (*machine).dupSetup,
		(*machine).forwardSetup, (*machine).loopSetup}
	for _, f := range arrangements {
		if uniform(t, "arrangement", 5) < 2 {
			h.try(t, action{run: f})
		}
	}
}

// strictSub is a subscription that dead-letters the messages its SQL rule
// fails on (SEMANTICS R5).
func (h *machine) strictSub(t *rapid.T) {
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
	h.createSubWith(t, he, "strict", p, r)
}

// sessionSetup is a session-enabled queue or subscription (SS1).
func (h *machine) sessionSetup(t *rapid.T) {
	lock := Pick(t, "lock", 5*time.Second, 30*time.Second, time.Minute)
	maxDelivery := int32(Between(t, "maxDelivery", 1, 3))
	if flip(t, "sessionSub") {
		p := &minibus.SubscriptionProperties{RequiresSession: true, LockDuration: lock, MaxDeliveryCount: maxDelivery}
		h.createSubWith(t, h.entity(t, mTopic), Pick(t, "name", mSubNames...), p, trueRule())
		return
	}
	p := &minibus.QueueProperties{RequiresSession: true, LockDuration: lock, MaxDeliveryCount: maxDelivery}
	h.createQueueWith(t, Pick(t, "name", "q1", "q2"), p)
}

// dupSetup is a queue or topic with duplicate detection (DD1).
func (h *machine) dupSetup(t *rapid.T) {
	w := Pick(t, "dupWindow", dupWindows...)
	if flip(t, "dupTopic") {
		h.createTopicWith(t, Pick(t, "name", "t1", "t2"), &minibus.TopicProperties{RequiresDuplicateDetection: true, DuplicateDetectionHistoryTimeWindow: w})
		return
	}
	h.createQueueWith(t, Pick(t, "name", "q1", "q2"), &minibus.QueueProperties{RequiresDuplicateDetection: true, DuplicateDetectionHistoryTimeWindow: w})
}

// forwardSetup is a queue, or a subscription, that forwards its messages or
// its dead letters to an existing queue or topic (F2, D4).
func (h *machine) forwardSetup(t *rapid.T) {
	dest := h.entityWhere(t, func(he *hEnt) bool { return he.m.kind != mSub && !he.m.deleted })
	to := dest.m.name
	var fwd, dl string
	switch Pick(t, "forwardKind", "messages", "deadLetters", "both") {
	case "messages":
		fwd = to
	case "deadLetters":
		dl = to
	default:
		fwd, dl = to, to
	}
	maxDelivery := int32(Between(t, "maxDelivery", 1, 2))
	if flip(t, "forwardSub") {
		p := &minibus.SubscriptionProperties{ForwardTo: fwd, ForwardDeadLetteredMessagesTo: dl, MaxDeliveryCount: maxDelivery,
			DefaultMessageTimeToLive: Pick(t, "ttl", forwardTTLs...), DeadLetteringOnMessageExpiration: true}
		h.createSubWith(t, h.entity(t, mTopic), Pick(t, "name", mSubNames...), p, trueRule())
		return
	}
	p := &minibus.QueueProperties{ForwardTo: fwd, ForwardDeadLetteredMessagesTo: dl, MaxDeliveryCount: maxDelivery,
		DefaultMessageTimeToLive: Pick(t, "ttl", forwardTTLs...), DeadLetteringOnMessageExpiration: true}
	h.createQueueWith(t, Pick(t, "name", mEntityNames...), p)
}

// forwardTTLs are the time to live of a forwarding source: mostly short,
// so that its messages expire and are dead-lettered on (D4).
var forwardTTLs = []time.Duration{0, 10 * time.Second, time.Minute, 5 * time.Minute}

// loopSetup is a subscription that forwards to its own topic: every
// message it takes goes round until the hop limit (F3).
func (h *machine) loopSetup(t *rapid.T) {
	he := h.entity(t, mTopic)
	p := &minibus.SubscriptionProperties{ForwardTo: he.m.name}
	h.createSubWith(t, he, Pick(t, "name", mSubNames...), p, trueRule())
}

// advance moves the clock: onto a pending deadline of a kind drawn first (a
// lock end, an expiry, an activation, a session lock's end, an idle
// deletion, the end of a duplicate detection window), 1ns before or after
// it, a configured duration from now (±1ns), a small step, or far ahead
// across many deadlines.
func (h *machine) advance(t *rapid.T) {
	now := h.m.now
	pending := h.m.deadlines()
	kinds := []string{"duration", "small", "big"}
	for _, k := range []string{"lock", "expire", "activate", "session", "idle", "dup"} {
		if len(pending[k]) > 0 {
			kinds = append(kinds, k, k)
		}
	}
	var to int64
	switch kind := Pick(t, "jump", kinds...); kind {
	case "duration":
		to = now + Pick(t, "duration", h.durations()...) + Pick[int64](t, "nudge", -1, 0, 1)
	case "small":
		to = now + Pick[int64](t, "small", 0, 1, int64(time.Second))
	case "big":
		to = now + int64(Pick(t, "big", time.Hour, 24*time.Hour, 30*24*time.Hour))
	default:
		to = Pick(t, "deadline", pending[kind]...) + Pick[int64](t, "nudge", -1, 0, 1)
	}
	h.jump(max(to, now))
}

// durations are the configured durations of the live entities, and a few
// others.
func (h *machine) durations() []int64 {
	out := []int64{int64(5 * time.Second), int64(time.Minute), int64(5 * time.Minute)}
	for _, e := range h.m.all {
		if e.deleted {
			continue
		}
		for _, d := range []int64{e.cfg.lock, e.cfg.ttl, e.cfg.autoDelete, e.cfg.dupWindow} {
			if d > 0 && d < int64(24*time.Hour) {
				out = append(out, d)
			}
		}
	}
	return out
}
