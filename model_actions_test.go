package minibus_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

// ---------------------------------------------------------------- actions

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
	for range between(t, "queues", 1, 2) {
		h.try(t, action{run: (*machine).createQueue})
	}
	h.try(t, action{run: func(h *machine, t *rapid.T) { h.createTopicNamed(t, pick(t, "topic", "t1", "t2")) }})
	for range between(t, "subs", 1, 3) {
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
		rn := pick(t, "defaultRuleName", "", "r1", "$Default", "$bad$")
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
	switch pick(t, "deleteKind", "queue", "topic", "sub", "sub") {
	case "queue":
		name := pick(t, "name", mEntityNames...)
		h.errs(t, "DeleteQueue "+name, h.ns.DeleteQueue(name), h.m.delete(mQueue, name))
	case "topic":
		name := pick(t, "name", mEntityNames...)
		h.errs(t, "DeleteTopic "+name, h.ns.DeleteTopic(name), h.m.delete(mTopic, name))
	case "sub":
		he := h.entity(t, mTopic)
		name := pick(t, "name", mSubNames...)
		h.errs(t, "DeleteSubscription "+name, he.t.DeleteSubscription(name), h.m.deleteSub(he.m, name))
	}
}

// update is UpdateQueue, UpdateTopic or UpdateSubscription by name: new
// settings apply to later locks and messages, locks are kept, and it is
// activity.
func (h *machine) update(t *rapid.T) {
	switch pick(t, "updateKind", "queue", "topic", "sub") {
	case "queue":
		name := pick(t, "name", mEntityNames...)
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
		name := pick(t, "name", mEntityNames...)
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
		name := pick(t, "name", mSubNames...)
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

func (h *machine) sendTo(t *rapid.T, he *hEnt) {
	var msgs []*minibus.Message
	n := between(t, "batch", 1, 3)
	if chance(t, "emptyBatch", 40) {
		n = 0
	}
	for range n {
		msgs = append(msgs, h.drawMessage(t))
	}
	var err error
	single := len(msgs) == 1 && chance(t, "single", 2)
	switch {
	case he.m.kind == mQueue && single:
		err = he.q.SendMessage(h.ctx, msgs[0], nil)
	case he.m.kind == mQueue:
		err = he.q.SendMessages(h.ctx, msgs, nil)
	case single:
		err = he.t.SendMessage(h.ctx, msgs[0], nil)
	default:
		err = he.t.SendMessages(h.ctx, msgs, nil)
	}
	_, merr := h.m.send(he.m, msgs, mUnset)
	h.errs(t, fmt.Sprintf("send %d messages to %v", len(msgs), he.m), err, merr)
	if merr != nil {
		h.tally["send error: "+merr.Error()]++
	} else {
		h.tally[fmt.Sprintf("messages sent to a %v", he.m.kind)] += len(msgs)
	}
}

func (h *machine) send(t *rapid.T) { h.sendTo(t, h.entity(t, mQueue, mTopic)) }

// fill sends big messages to an entity with a 1 MB quota (SEMANTICS V3).
func (h *machine) fill(t *rapid.T) {
	var full []*hEnt
	for _, he := range h.ents {
		if !he.m.deleted && he.m.kind != mSub && he.m.cfg.maxSize == 1<<20 {
			full = append(full, he)
		}
	}
	if len(full) == 0 {
		skip("no entity with a 1 MB quota")
	}
	he := pick(t, "entity", full...)
	var msgs []*minibus.Message
	// 250 KB passes the default 256 KB message limit; the fifth in 1 MB
	// does not fit.
	for range between(t, "batch", 1, 5) {
		h.bodies++
		body := append([]byte(fmt.Sprintf("m%d", h.bodies)), bytes.Repeat([]byte{'.'}, 250<<10)...)
		msgs = append(msgs, &minibus.Message{MessageID: fmt.Sprintf("id-%d", h.bodies), Body: body})
	}
	var err error
	if he.m.kind == mQueue {
		err = he.q.SendMessages(h.ctx, msgs, nil)
	} else {
		err = he.t.SendMessages(h.ctx, msgs, nil)
	}
	_, merr := h.m.send(he.m, msgs, mUnset)
	h.errs(t, fmt.Sprintf("send %d big messages to %v", len(msgs), he.m), err, merr)
}
func (h *machine) sendTopic(t *rapid.T) { h.sendTo(t, h.entity(t, mTopic)) }

func (h *machine) schedule(t *rapid.T) {
	he := h.entity(t, mQueue, mTopic)
	var msgs []*minibus.Message
	for range between(t, "batch", 1, 2) {
		msgs = append(msgs, h.drawMessage(t))
	}
	at := tm(h.m.now).Add(pick(t, "offset", offsets...))
	var seqs []int64
	var err error
	if he.m.kind == mQueue {
		seqs, err = he.q.ScheduleMessages(h.ctx, msgs, at, nil)
	} else {
		seqs, err = he.t.ScheduleMessages(h.ctx, msgs, at, nil)
	}
	mseqs, merr := h.m.send(he.m, msgs, mInstant(at))
	h.errs(t, fmt.Sprintf("ScheduleMessages(%d) on %v at %v", len(msgs), he.m, at), err, merr)
	if err == nil && !slices.Equal(seqs, mseqs) {
		t.Fatalf("ScheduleMessages on %v returned %v, model says %v (Q1)", he.m, seqs, mseqs)
	}
}

func (h *machine) cancel(t *rapid.T) {
	he := h.entity(t, mQueue, mTopic)
	var pending []int64
	for _, x := range he.m.main {
		if x.state == mScheduled {
			pending = append(pending, x.key.seq)
		}
	}
	var seqs []int64
	switch pick(t, "cancelKind", "valid", "valid", "valid", "used", "unknown", "invalid") {
	case "valid":
		if len(pending) == 0 {
			skip("nothing scheduled")
		}
		seqs = []int64{pick(t, "seq", pending...)}
		if len(pending) > 1 && chance(t, "two", 2) {
			if other := pick(t, "seq2", pending...); other != seqs[0] {
				seqs = append(seqs, other)
			}
		}
	case "used":
		// A number no longer scheduled (activated, cancelled or never
		// scheduled): S3 says ErrMessageNotFound.
		if he.m.seq == 0 {
			skip("no number used")
		}
		seqs = []int64{int64(between(t, "seq", 1, int(he.m.seq)))}
	case "unknown":
		seqs = []int64{he.m.seq + 1 + int64(between(t, "ahead", 0, 3))}
	case "invalid":
		seqs = pick(t, "badSeqs", []int64{}, []int64{0}, []int64{-1}, []int64{1, 1})
	}
	var err error
	if he.m.kind == mQueue {
		err = he.q.CancelScheduledMessages(h.ctx, seqs, nil)
	} else {
		err = he.t.CancelScheduledMessages(h.ctx, seqs, nil)
	}
	h.errs(t, fmt.Sprintf("CancelScheduledMessages(%v) on %v", seqs, he.m), err, h.m.cancel(he.m, seqs))
}

func (h *machine) receive(t *rapid.T) { h.receiveFrom(t, h.receiver(t)) }

// receiveMain receives from a queue or subscription, or its dead-letter
// queue, that the model says has a message available, mostly in peek-lock
// mode, where the settling happens.
func (h *machine) receiveMain(t *rapid.T) {
	h.receiveFrom(t, h.receiverWith(t, func(x *mMsg) bool { return x.state == mAvail }))
}

// receiverWith returns a receiver, existing or new, of a queue,
// subscription or dead-letter queue holding a message that has the
// property; mostly peek-lock.
func (h *machine) receiverWith(t *rapid.T, has func(*mMsg) bool) *hRecv {
	type src struct {
		he  *hEnt
		dlq bool
	}
	var srcs []src
	for _, he := range h.ents {
		if he.m.kind == mTopic || he.m.deleted {
			continue
		}
		for _, dlq := range []bool{false, true} {
			if slices.ContainsFunc(*he.m.list(dlq), has) {
				srcs = append(srcs, src{he, dlq})
			}
		}
	}
	if len(srcs) == 0 {
		skip("no such message")
	}
	s := pick(t, "source", srcs...)
	rad := chance(t, "rad", 5)
	for _, r := range h.recvs {
		if r.m.e == s.he.m && r.m.rad == rad && r.m.dlq == s.dlq && !r.m.closed && !chance(t, "fresh", 10) {
			return r
		}
	}
	return h.newReceiver(t, s.he, rad, s.dlq)
}

func (h *machine) receiveFrom(t *rapid.T, r *hRecv) {
	max := between(t, "max", 1, 4)
	if chance(t, "badMax", 30) {
		max = 0
	}
	want, wouldBlock, merr := h.m.receive(r.m, max)
	what := fmt.Sprintf("ReceiveMessages(%d) rad=%v dlq=%v on %v", max, r.m.rad, r.m.dlq, r.m.e)
	if merr != nil {
		h.tally["receive error: "+merr.Error()]++
	}
	if wouldBlock {
		h.tally["receive with nothing available"]++
		// Nothing is receivable: the counts (Check) show it; now and then a
		// receive with a very short real deadline shows it too (L8).
		if !chance(t, "probeEmpty", 6) {
			return
		}
		ctx, cancel := context.WithTimeout(h.ctx, 2*time.Millisecond)
		got, err := r.r.ReceiveMessages(ctx, max, nil)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || got != nil {
			t.Fatalf("%s: nothing is receivable, broker returned %v %v", what, describeGot(got), err)
		}
		return
	}
	// A generous hang guard: the model says a message is available, so the
	// broker must return at once.
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	got, err := r.r.ReceiveMessages(ctx, max, nil)
	cancel()
	h.errs(t, what, err, merr)
	for _, g := range got {
		if !r.m.dlq && !g.ExpiresAt.IsZero() && !g.ExpiresAt.After(tm(h.m.now)) {
			t.Fatalf("%s: returned seq %d expired at %v, now %v (I7)", what, g.SequenceNumber, g.ExpiresAt, tm(h.m.now))
		}
	}
	h.msgs(t, what, r, got, want)
	if len(got) > 0 {
		h.tally["messages received"] += len(got)
	}
	if r.m.rad {
		h.rad = append(h.rad, got...)
	}
}

// blockedReceive blocks a receive where nothing is available, moves the
// clock onto the first deadline that can change what the receiver sees,
// and expects the receive to wake with what became available there, or with
// the error the entity gives now (T5, I14); if nothing did, it must still
// wait. Jumping no further keeps the answer exact: benbjohnson/clock runs
// timer callbacks while its time steps through them.
func (h *machine) blockedReceive(t *rapid.T) {
	r := h.receiver(t)
	if r.m.closed || r.m.e.deleted || !canReceive(r.m.e.cfg.status) || len(h.m.available(r.m)) > 0 {
		skip("the receive would not block")
	}
	to := h.m.wakeDeadline(r.m)
	if to == mNever {
		skip("nothing pending")
	}
	max := between(t, "max", 1, 4)
	type result struct {
		got []*minibus.ReceivedMessage
		err error
	}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	done := make(chan result, 1)
	go func() {
		got, err := r.r.ReceiveMessages(ctx, max, nil)
		done <- result{got, err}
	}()
	h.mock.Add(time.Duration(to - h.m.now))
	h.m.advance(to)
	want, wouldBlock, merr := h.m.receive(r.m, max)
	what := fmt.Sprintf("blocked ReceiveMessages(%d) rad=%v dlq=%v on %v, clock moved to its deadline +%v",
		max, r.m.rad, r.m.dlq, r.m.e, time.Duration(to-epoch.UnixNano()))
	if wouldBlock {
		cancel()
	}
	var res result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked after 10 s, the model says %d messages or error %v (T5)", what, len(want), merr)
	}
	if wouldBlock {
		if !errors.Is(res.err, context.Canceled) || res.got != nil {
			t.Fatalf("%s: nothing became available, broker returned %v %v", what, describeGot(res.got), res.err)
		}
		return
	}
	h.errs(t, what, res.err, merr)
	h.msgs(t, what, r, res.got, want)
	if r.m.rad {
		h.rad = append(h.rad, res.got...)
	}
	h.tally["blocked receives woken by time"]++
}

func (h *machine) peek(t *rapid.T) {
	r := h.receiver(t)
	max := between(t, "max", 0, 5)
	var from int64
	if chance(t, "from", 2) {
		from = int64(between(t, "fromSeq", -1, int(max64(max64(r.m.e.seq, r.m.e.topicSeq()), 1)+1)))
	}
	var opts *minibus.PeekMessagesOptions
	if from != 0 || chance(t, "zeroOpts", 2) {
		opts = &minibus.PeekMessagesOptions{FromSequenceNumber: from}
	}
	got, err := r.r.PeekMessages(h.ctx, max, opts)
	want, merr := h.m.peek(r.m, max, from)
	what := fmt.Sprintf("PeekMessages(%d, from %d) dlq=%v on %v", max, from, r.m.dlq, r.m.e)
	h.errs(t, what, err, merr)
	if err == nil && got == nil {
		t.Fatalf("%s: an empty peek is an empty slice, not nil (L12)", what)
	}
	h.msgs(t, what, r, got, want)
	h.peeked = append(h.peeked, got...)
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func (h *machine) receiveDeferred(t *rapid.T) {
	kind := pick(t, "deferKind", "valid", "valid", "valid", "valid", "other", "invalid")
	var r *hRecv
	if kind == "valid" {
		r = h.receiverWith(t, func(x *mMsg) bool { return x.state == mDeferred })
	} else {
		r = h.receiver(t)
	}
	var deferred []int64
	for _, x := range *r.m.e.list(r.m.dlq) {
		if x.state == mDeferred {
			deferred = append(deferred, x.key.seq)
		}
	}
	var seqs []int64
	switch kind {
	case "valid":
		seqs = []int64{pick(t, "seq", deferred...)}
		if o := pick(t, "seq2", deferred...); o != seqs[0] {
			seqs = append(seqs, o)
		}
	case "other":
		seqs = []int64{int64(between(t, "seq", 1, int(max64(r.m.e.seq, r.m.e.topicSeq())+2)))}
	case "invalid":
		seqs = pick(t, "badSeqs", []int64{}, []int64{0}, []int64{2, 2})
	}
	got, err := r.r.ReceiveDeferredMessages(h.ctx, seqs, nil)
	want, merr := h.m.receiveDeferred(r.m, seqs)
	what := fmt.Sprintf("ReceiveDeferredMessages(%v) rad=%v dlq=%v on %v", seqs, r.m.rad, r.m.dlq, r.m.e)
	h.errs(t, what, err, merr)
	h.msgs(t, what, r, got, want)
}

func (e *mEntity) topicSeq() int64 {
	if e.topic != nil {
		return e.topic.seq
	}
	return 0
}

// settleTarget draws the message a settlement names: a current lock, a
// stale or forged token, a peeked or receive-and-delete message, or one
// with no token. It returns the broker's argument and the model's view.
func (h *machine) settleTarget(t *rapid.T) (*minibus.ReceivedMessage, settleMsg, *hRecv, string) {
	var current, stale [][16]byte
	for _, tok := range h.seen {
		if x := h.findItem(h.tokens[tok].item); x != nil && x.state == mLocked && x.token == tok {
			current = append(current, tok)
		} else {
			stale = append(stale, tok)
		}
	}
	kind := pick(t, "target", "current", "current", "current", "current", "current", "current", "stale", "stale", "forged", "peeked", "rad", "zero")
	switch kind {
	case "current", "stale":
		toks := current
		if kind == "stale" {
			toks = stale
		}
		if len(toks) == 0 {
			skip("no such token")
		}
		tok := pick(t, "token", toks...)
		info := h.tokens[tok]
		if chance(t, "bare", 3) {
			return &minibus.ReceivedMessage{LockToken: tok}, settleMsg{how: "token", token: tok}, info.recv, kind
		}
		return info.obj, settleMsg{how: "locked", origin: info.recv.m.e, odlq: info.recv.m.dlq, token: tok}, info.recv, kind
	case "forged":
		var tok [16]byte
		for i := range tok {
			tok[i] = byte(between(t, "byte", 0, 255))
		}
		if tok == ([16]byte{}) {
			tok[0] = 1
		}
		if _, ok := h.tokens[tok]; ok {
			skip("forged a real token")
		}
		return &minibus.ReceivedMessage{LockToken: tok}, settleMsg{how: "token", token: tok}, nil, kind
	case "peeked":
		if len(h.peeked) == 0 {
			skip("nothing peeked")
		}
		return pick(t, "peeked", h.peeked...), settleMsg{how: "peeked"}, nil, kind
	case "rad":
		if len(h.rad) == 0 {
			skip("nothing received and deleted")
		}
		return pick(t, "rad", h.rad...), settleMsg{how: "deleted"}, nil, kind
	}
	return &minibus.ReceivedMessage{}, settleMsg{how: "token"}, nil, kind
}

// settle settles through the receiver that got the message, another
// receiver of the same entity and sub-queue (L10), or any receiver.
func (h *machine) settle(t *rapid.T) {
	obj, sm, origin, kind := h.settleTarget(t)
	var r *hRecv
	switch {
	case origin != nil && chance(t, "sameReceiver", 2):
		r = origin
	case origin != nil && !chance(t, "anyReceiver", 5):
		var peers []*hRecv
		for _, x := range h.recvs {
			if x.m.e == origin.m.e && x.m.dlq == origin.m.dlq && !x.m.rad && !x.m.closed {
				peers = append(peers, x)
			}
		}
		if len(peers) == 0 {
			r = origin
		} else {
			r = pick(t, "peer", peers...)
		}
	default:
		r = h.receiver(t)
	}
	h.settleWith(t, r, obj, sm, kind)
}

// settleStranger settles a current lock through a receiver of another
// entity or sub-queue: ErrInvalidArgument for the delivered object,
// ErrLockLost for a bare token.
func (h *machine) settleStranger(t *rapid.T) {
	obj, sm, _, kind := h.settleTarget(t)
	h.settleWith(t, h.receiver(t), obj, sm, kind)
}

func (h *machine) settleWith(t *rapid.T, r *hRecv, obj *minibus.ReceivedMessage, sm settleMsg, kind string) {
	op := pick(t, "op", opComplete, opComplete, opComplete, opAbandon, opAbandon, opDeadLetter, opDefer, opDefer, opRenew, opRenew, opRenew)
	var mod map[string]any
	if op == opAbandon || op == opDeadLetter || op == opDefer {
		switch pick(t, "mod", "none", "none", "some", "bad") {
		case "some":
			mod = map[string]any{"tag": "mod", pick(t, "modKey", "n", "color"): pick[any](t, "modValue", 5, "red", nil)}
		case "bad":
			mod = map[string]any{"bad": []int{1}}
		}
	}
	reason, desc := pick(t, "reason", "app-bad", ""), pick(t, "desc", "it broke", "")
	if x := h.findItem(h.itemOf(sm.token)); op == opRenew && kind == "current" && x != nil && chance(t, "renewLater", 2) {
		// Renew halfway through the lock, later than the delivery.
		half := (x.lockedUntil - h.m.now) / 2
		h.mock.Add(time.Duration(half))
		h.m.advance(h.m.now + half)
	}
	var err error
	before := obj.LockedUntil
	switch op {
	case opComplete:
		err = r.r.CompleteMessage(h.ctx, obj, nil)
	case opAbandon:
		err = r.r.AbandonMessage(h.ctx, obj, &minibus.AbandonMessageOptions{PropertiesToModify: mod})
	case opDeadLetter:
		err = r.r.DeadLetterMessage(h.ctx, obj, &minibus.DeadLetterOptions{Reason: reason, ErrorDescription: desc, PropertiesToModify: mod})
	case opDefer:
		err = r.r.DeferMessage(h.ctx, obj, &minibus.DeferMessageOptions{PropertiesToModify: mod})
	case opRenew:
		err = r.r.RenewMessageLock(h.ctx, obj, nil)
	}
	renewed, merr := h.m.settle(r.m, op, sm, mod, reason, desc)
	what := fmt.Sprintf("%v of a %s %s message (item %v) through rad=%v dlq=%v %v", op, kind, sm.how, h.itemOf(sm.token), r.m.rad, r.m.dlq, r.m.e)
	h.errs(t, what, err, merr)
	if kind == "stale" && errors.Is(err, minibus.ErrLockLost) {
		h.m.hits.StaleTokenRejected++
	}
	if op == opRenew && err == nil && chance(t, "idleAfterRenew", 2) {
		// A renewal is not activity (A2): jump onto the idle deadline it
		// must not have moved.
		if due := h.m.idleDue(r.m.e); due != mNever && due > h.m.now {
			h.mock.Add(time.Duration(due - h.m.now))
			h.m.advance(due)
		}
	}
	if op == opRenew {
		switch {
		case err == nil && !obj.LockedUntil.Equal(tm(renewed)):
			t.Fatalf("%s: the caller's LockedUntil reads %v, model says %v (L5)", what, obj.LockedUntil, tm(renewed))
		case err != nil && !obj.LockedUntil.Equal(before):
			t.Fatalf("%s: failed, but changed the caller's LockedUntil", what)
		}
	}
}

// itemOf is the ledger item a token was handed out for, or 0.
func (h *machine) itemOf(tok [16]byte) int {
	if info, ok := h.tokens[tok]; ok {
		return info.item
	}
	return 0
}

// advance moves the mock clock, boundary-biased: onto a pending deadline of
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
	switch kind := pick(t, "jump", kinds...); kind {
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
		to = now + pick(t, "duration", durations...) + pick[int64](t, "nudge", -1, 0, 1)
	case "small":
		to = now + pick[int64](t, "small", 0, 1, int64(time.Second))
	case "big":
		to = now + int64(pick(t, "big", time.Hour, 24*time.Hour, 30*24*time.Hour))
	default:
		to = pick(t, "deadline", pending[kind]...) + pick[int64](t, "nudge", -1, 0, 1)
	}
	to = max(to, now)
	h.mock.Add(time.Duration(to - now))
	h.m.advance(to)
}

func (h *machine) lookup(t *rapid.T) {
	switch pick(t, "lookupKind", "queue", "topic", "sub") {
	case "queue":
		name := pick(t, "name", mEntityNames...)
		q, err := h.ns.Queue(name)
		e, merr := h.m.lookup(mQueue, name)
		h.errs(t, "Queue "+name, err, merr)
		if err == nil && q.Name() != e.name {
			t.Fatalf("Queue(%q).Name() = %q, model says %q", name, q.Name(), e.name)
		}
	case "topic":
		name := pick(t, "name", mEntityNames...)
		top, err := h.ns.Topic(name)
		e, merr := h.m.lookup(mTopic, name)
		h.errs(t, "Topic "+name, err, merr)
		if err == nil && top.Name() != e.name {
			t.Fatalf("Topic(%q).Name() = %q, model says %q", name, top.Name(), e.name)
		}
	case "sub":
		he := h.entity(t, mTopic)
		name := pick(t, "name", mSubNames...)
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
	r := pick(t, "receiver", h.recvs...)
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
