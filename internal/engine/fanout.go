package engine

import (
	"fmt"
	"maps"
	"time"

	"github.com/minibus-go/minibus/internal/sqlfilter"
	"github.com/minibus-go/minibus/internal/store"
)

// RuleNameProperty is the application property that a copy made by a rule
// with an action carries, naming the rule.
const RuleNameProperty = "RuleName"

// copyPlan is one copy of a topic message bound for a subscription.
type copyPlan struct {
	sub *Entity
	m   *store.Message
	key store.Key
	// dl, when set, sends the copy to the dead-letter queue: a filter failed
	// (SEMANTICS R5).
	dl *store.DeadLetter
}

// isScheduled reports whether m, sent at now, waits for a later time (S1).
func isScheduled(m *store.Message, now int64) bool {
	return m.Scheduled != store.Unset && m.Scheduled > now
}

// publishLocked accepts a batch sent to the topic, all or none: it numbers
// the messages (SEMANTICS Q1), schedules the future ones (S5) and plans
// every subscription's copies of the others, checks the topic's quota
// against the plan (V3), then applies it. A scheduled message counts as
// the copies its subscriptions' rules would make now, or as itself when
// that is more: it waits in the topic until it activates. Once the batch
// is accepted it appends enc, the call's record (nil: none), before it
// unlocks the subscriptions: a receive of a copy, which a subscription's
// lock orders after the copy's arrival, then comes after the send in the
// log too, or the replay would take a message not yet sent.
func (e *Entity) publishLocked(recs []*store.Message, now int64, seqs []int64, enc *encoder) error {
	subs := e.enterSubsLocked(now)
	defer leaveAll(subs)
	// Room for a copy per subscription and message, so that the plan does
	// not grow by doubling, each time in new memory; on the stack when
	// that is little.
	var room [16]copyPlan
	plan := room[:0]
	if n := len(subs) * len(recs); n > len(room) {
		plan = make([]copyPlan, 0, min(n, maxPlanRoom))
	}
	// The batch's sequence numbers, first and on, one a message: the plan
	// numbers the copies by them and the batch takes them once it fits.
	first := e.seq + 1
	var total int64
	for i, m := range recs {
		k := store.Key{Seq: first + int64(i)}
		start := len(plan)
		plan = e.planLocked(plan, subs, m, k, now)
		var copies int64
		for _, c := range plan[start:] {
			copies += c.m.Size()
		}
		if isScheduled(m, now) {
			copies = max(copies, m.Size())
			plan = plan[:start]
		}
		total += copies
	}
	if !e.quota.Fits(total) {
		return errQuota(e, total, "messages and copies")
	}
	e.seq += int64(len(recs))
	for i, m := range recs {
		k := store.Key{Seq: first + int64(i)}
		if seqs != nil {
			seqs[i] = k.Seq
		}
		if isScheduled(m, now) {
			e.scheduleLocked(m, k)
			e.emitLocked(EventScheduled, m, store.Main, now, "")
		} else {
			e.emitKeyed(EventSent, m, k, store.Main, now, "")
		}
	}
	e.applyLocked(plan, now)
	e.commit(enc)
	return nil
}

// fanOutLocked copies m, activating under key k at instant at, to the
// subscriptions (SEMANTICS S5). Its quota was checked when it was scheduled.
func (e *Entity) fanOutLocked(m *store.Message, k store.Key, at int64) {
	subs := e.enterSubsLocked(at)
	e.applyLocked(e.planLocked(make([]copyPlan, 0, len(subs)), subs, m, k, at), at)
	leaveAll(subs)
}

// maxPlanRoom bounds the room publishLocked makes for its plan in advance.
const maxPlanRoom = 4096

// planLocked appends to plan the copies of m, under key k, that each
// subscription's rules make at instant at (SEMANTICS R1, R2, R5). The
// subscriptions' locks are held.
func (e *Entity) planLocked(plan []copyPlan, subs []*Entity, m *store.Message, k store.Key, at int64) []copyPlan {
	// The topic's own view, reused under its lock: one made here would go
	// to the heap for every message, as the filters take it by pointer.
	if e.view == nil {
		e.view = new(sqlfilter.Message)
	}
	view := e.view
	*view = filterView(m, k, at, effectiveTTL(m.TTL, e.ttlCapLocked()), e.b)
	for _, s := range subs {
		if !s.cfg.Status.canSend() {
			continue // a disabled subscription gets no copies
		}
		plan = s.matchLocked(plan, m, k, view)
	}
	*view = sqlfilter.Message{} // holds nothing of m once planned
	return plan
}

// applyLocked enqueues planned copies at instant at, capped by the topic's
// time to live and the subscription's (SEMANTICS E1). The topic's and the
// subscriptions' locks are held. The bytes of the copies go to the
// subscriptions' shared quota at once, before any lock is let go.
func (e *Entity) applyLocked(plan []copyPlan, at int64) {
	for _, c := range plan {
		c.sub.st.Tally()
	}
	defer func() {
		var n int64
		for _, c := range plan {
			n += c.sub.st.TakeTally()
		}
		e.quota.Add(n)
	}()
	for _, c := range plan {
		s := c.sub
		ttlCap := capTTL(s.ttlCapLocked(), e.ttlCapLocked())
		if c.dl == nil && s.sessions != nil && c.m.SessionID == "" {
			c.dl = &store.DeadLetter{Reason: ReasonSessionIDNull, Description: DescriptionSessionIDNull} // SEMANTICS SS1
		}
		q := store.Main
		if c.dl != nil {
			c.m.DL = c.dl
			q = store.DeadLetterQueue
		}
		s.enqueueLocked(c.m, c.key, q, at, ttlCap)
	}
}

// matchLocked appends the copies of m that s's rules make (SEMANTICS R1,
// R2): one for all matching rules without an action together, one per
// matching rule with an action, changed by it. A rule that fails to
// evaluate does not match; with DeadLetteringOnFilterEvaluationExceptions
// the message also goes, once, to the dead-letter queue (R5). The copies
// share the body, which is never changed.
func (e *Entity) matchLocked(plan []copyPlan, m *store.Message, k store.Key, view *sqlfilter.Message) []copyPlan {
	plain := false
	var actions []*store.Message
	var failure error
	for _, r := range e.rules {
		ok, err := r.match(view)
		if err == nil && ok && r.action != nil {
			v := *view
			v.Properties = maps.Clone(view.Properties)
			if err = r.action.Apply(&v); err == nil {
				if v.Properties == nil {
					v.Properties = make(map[string]any, 1)
				}
				v.Properties[RuleNameProperty] = r.Spec.Name // a copy made by an action names its rule
				actions = append(actions, applyView(m, view, &v))
			}
		}
		if err != nil {
			if failure == nil {
				failure = fmt.Errorf("rule %q: %w", r.Spec.Name, err)
			}
			continue
		}
		if ok && r.action == nil {
			plain = true
		}
	}
	add := func(c *store.Message, dl *store.DeadLetter) {
		plan = append(plan, copyPlan{sub: e, m: c, key: k, dl: dl})
		k.Copy++
	}
	if plain {
		add(m.Copy(), nil)
	}
	for _, c := range actions {
		add(c, nil)
	}
	if failure != nil && e.cfg.DeadLetterOnFilterError {
		add(m.Copy(), &store.DeadLetter{Reason: ReasonFilterEvaluation, Description: failure.Error()})
	}
	return plan
}

// filterView is the view filters and actions read of m, fanned out under
// key k at instant at; ttl is its effective time to live at the topic
// (0: none).
func filterView(m *store.Message, k store.Key, at, ttl int64, b *Broker) sqlfilter.Message {
	v := sqlfilter.Message{
		MessageID:               m.ID(),
		SessionID:               m.SessionID,
		SequenceNumber:          k.Seq,
		EnqueuedSequenceNumber:  m.EnqueuedSeq,
		DeliveryCount:           int64(m.Deliveries),
		Size:                    m.Size(),
		EnqueuedTimeUtc:         b.Time(at),
		ExpiresAtUtc:            b.Time(expiry(at, ttl)),
		ScheduledEnqueueTimeUtc: b.Time(m.Scheduled),
		Properties:              m.Props,
	}
	v.TimeToLive = time.Duration(ttl)
	if h := m.Headers; h != nil {
		v.Headers = sqlfilter.Headers(*h)
	}
	return v
}

// applyView returns a copy of m changed as an action changed its view from
// orig to v.
func applyView(m *store.Message, orig, v *sqlfilter.Message) *store.Message {
	c := m.Copy()
	if v.MessageID != orig.MessageID {
		c.MessageID, c.IDSeed = v.MessageID, 0
	}
	c.SessionID = v.SessionID
	c.Props = v.Properties
	if len(c.Props) == 0 {
		c.Props = nil
	}
	c.Headers = nil
	if h := store.Headers(v.Headers); h != (store.Headers{}) {
		c.Headers = &h
	}
	return c
}
