package engine

import (
	"fmt"

	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
)

// Auto-forwarding (SEMANTICS F1–F3, D4). A message that becomes active in
// an entity with ForwardTo, or is dead-lettered in one with
// ForwardDeadLetteredMessagesTo, leaves its store under the entity's lock
// and waits in the broker's outbox; the call that made it delivers it to
// its destination once it holds no entity lock (flush), as a new enqueue
// there at the instant it left. A destination that cannot take it sends it
// back to the source's transfer dead-letter queue: nothing is lost. The
// catch-up delivers after each event that forwarded, before any later
// event anywhere, so time runs in order across entities (T3).

// maxHops is the most ForwardTo moves a message makes (SEMANTICS F3).
const maxHops = 4

func (o *outbox) push(f forward) {
	o.mu.Lock()
	o.order++
	f.order = o.order
	o.waiting = append(o.waiting, &f)
	o.n.Add(1)
	o.mu.Unlock()
}

// take takes the waiting messages for a flush, which lands them.
func (o *outbox) take() []*forward {
	o.mu.Lock()
	defer o.mu.Unlock()
	batch := o.waiting
	o.waiting = nil
	if o.track {
		for _, f := range batch {
			o.flying[f] = struct{}{}
		}
	}
	return batch
}

// taking sets f.taken: f's message encoded as it left while its
// destination takes it, nil once it is as it left again.
func (o *outbox) taking(f *forward, enc []byte) {
	o.mu.Lock()
	f.taken = enc
	o.mu.Unlock()
}

// landed forgets f, delivered or returned to its source.
func (o *outbox) landed(f *forward) {
	if !o.track {
		return
	}
	o.mu.Lock()
	delete(o.flying, f)
	o.mu.Unlock()
}

// flushForwards delivers the messages waiting to be forwarded, and those
// their deliveries forward further. o.n counts the messages pushed and not
// yet landed, in flight with another flush included: a call that forwarded
// finds it above zero until its messages have landed, and then waits for
// flushMu, which the flush delivering them holds until it has.
func (b *Broker) flushForwards() {
	o := &b.outbox
	if o.n.Load() == 0 {
		return
	}
	o.flushMu.Lock()
	defer o.flushMu.Unlock()
	for {
		batch := o.take()
		if len(batch) == 0 {
			return
		}
		for _, f := range batch {
			b.deliver(f)
			o.n.Add(-1)
		}
	}
}

// forwardLocked sends m, which left e's store (entered) or never entered
// it, under key k at instant at, on to e's ForwardTo: a hop (SEMANTICS
// F2). Past maxHops it goes to e's dead-letter queue instead (F3),
// enqueued there at that instant unless it had entered e before.
func (e *Entity) forwardLocked(m *store.Message, k store.Key, at int64, entered bool) {
	if m.Hops >= maxHops {
		if !entered {
			stamp(m, at, e.enqueueCapLocked())
		}
		m.DL = &store.DeadLetter{Reason: ReasonMaxHops, Description: DescriptionMaxHops}
		e.st.Put(m, k, store.DeadLetterQueue, store.Available, store.Never)
		e.emitLocked(EventDeadLettered, m, store.Main, at, ReasonMaxHops)
		e.wakeForLocked(m)
		return
	}
	m.Hops++
	if m.EnqueuedSeq == 0 {
		m.EnqueuedSeq = k.Seq // where it entered (F2)
	}
	e.emitKeyed(EventForwarded, m, k, store.Main, at, e.cfg.ForwardTo)
	e.b.outbox.push(forward{from: e, key: k, to: e.cfg.ForwardTo, m: m, at: at, entered: entered})
}

// forwardDeadLetterLocked sends m, dead-lettered in e at instant at, on to
// e's ForwardDeadLetteredMessagesTo with DeadLetterSource set (SEMANTICS
// D4): a hop, like any forward (F2), or a subscription forwarding its dead
// letters to its own topic would pass a message that its filter fails
// around for ever. entered is as for forwardLocked.
func (e *Entity) forwardDeadLetterLocked(m *store.Message, k store.Key, at int64, entered bool) {
	m.Hops++
	m.DL.Source = e.Path()
	if m.EnqueuedSeq == 0 {
		m.EnqueuedSeq = k.Seq
	}
	e.emitKeyed(EventForwarded, m, k, store.DeadLetterQueue, at, e.cfg.ForwardDeadLetteredTo)
	e.b.outbox.push(forward{from: e, key: k, to: e.cfg.ForwardDeadLetteredTo, m: m, at: at, entered: entered})
}

// forwardsDeadLetters reports whether m, dead-lettered for reason, leaves e
// (SEMANTICS D4); one that passed the hop limit, or that has made its four
// hops (F3), stays, with the reason it was dead-lettered for, so that no
// loop of entities can pass it around for ever.
func (e *Entity) forwardsDeadLetters(m *store.Message, reason string) bool {
	return e.cfg.ForwardDeadLetteredTo != "" && reason != ReasonMaxHops && m.Hops < maxHops
}

// deliver enqueues f's message in its destination, or, when the destination
// cannot take it, in its source's transfer dead-letter queue (SEMANTICS F3).
func (b *Broker) deliver(f *forward) {
	if b.life.closed() {
		return // a durable broker's log still has it: the next Open delivers it
	}
	if b.dur.j != nil {
		// The record of what sent it is appended under its source's lock
		// once the whole call is accepted, after the message was pushed
		// (sendLocked): the record of where it went must come after, or
		// the replay would land it, then send it and land it again.
		f.from.mu.Lock()
		f.from.mu.Unlock() //nolint:staticcheck // waits for that record
	}
	b.mu.Lock()
	d := b.lookupLocked(f.to)
	b.mu.Unlock()
	why := "it does not exist"
	if d != nil {
		why = d.takeForwardLocked(f)
	}
	if why == "" {
		return
	}
	s := f.from
	s.mu.Lock()
	defer s.mu.Unlock()
	s.landing = f // commit lands it
	defer func() {
		s.landing = nil
		b.outbox.landed(f) // without a record
	}()
	if s.deleted.Load() {
		// Gone with its source. The log says so: the replay has the
		// forward on its way, and Open would deliver it to a destination
		// that can take it by then.
		r := transferLostRecord{key: f.key}
		s.log(r.kind(), r.encode)
		return
	}
	r := transferFailedRecord{key: f.key, why: why}
	s.log(r.kind(), r.encode)
	s.transferFailedLocked(f, why)
}

// transferFailedLocked puts f's message, which its destination could not
// take for the reason why, in its source s's transfer dead-letter queue
// (SEMANTICS F3): enqueued there at the instant it left, unless it had
// entered s before (D2).
func (e *Entity) transferFailedLocked(f *forward, why string) {
	m := f.m
	if !f.entered {
		stamp(m, f.at, e.enqueueCapLocked())
	}
	dl := &store.DeadLetter{Reason: ReasonTransferFailed, Description: "could not forward to " + f.to + ": " + why}
	if m.DL != nil {
		dl.Source = m.DL.Source
	}
	m.DL = dl
	e.st.Put(m, f.key, store.TransferQueue, store.Available, store.Never)
	e.emitLocked(EventDeadLettered, m, store.Main, f.at, ReasonTransferFailed)
	e.wakeForLocked(m)
}

// takeForwardLocked enqueues a forwarded message at the instant it left its
// source, as a new message of d (SEMANTICS F2), or says why d cannot take
// it; at d's latest instant if d acted later meanwhile (a call beside it
// read the clock later, see instant), so that d's times never go back. It
// locks d, and a topic's subscriptions. d is already caught up to before
// that instant, but the catch-up may not have reached d's own events at
// it. When d's idle deletion is due then, d goes first (T2, T3): its
// messages' and sessions' deadlines at that instant, then the deletion
// (advanceLocked), and the message finds d gone. Unless d has acted at
// that instant already: then its catch-up stopped at one of its own
// deadlines there to deliver the forwards it made, this one perhaps among
// them (a dead letter forwarded and forwarded back), and its idle
// deletion, which comes after its deadlines at that instant, has not come
// yet; the message is taken, activity that keeps d (A2).
func (e *Entity) takeForwardLocked(f *forward) (why string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	at := f.at
	if e.b.replay == nil { // the log holds the instant it took
		at = max(at, e.instant)
	}
	if idle := e.idleDueLocked(); idle <= at && e.instant < at && e.b.replay == nil {
		e.advanceLocked(at, false)
	}
	if why := e.refusesLocked(f.m); why != "" {
		return why
	}
	var enc *encoder
	if e.journaled() { // before acceptForwardLocked changes the message
		top, sub := f.from, ""
		if top.topic != nil {
			top, sub = top.topic, top.name
		}
		r := transferRecord{fromName: top.name, fromSub: sub, key: f.key, at: at, msg: f.m}
		enc = e.begin(r.kind(), r.encode)
		if size := len(enc.b); size > e.b.dur.maxRecord {
			enc.drop()
			return fmt.Sprintf("its log record would be %d bytes, more than the %d bytes a durable namespace stores for one call", size, e.b.dur.maxRecord)
		}
		e.b.outbox.taking(f, enc.b[r.msgAt:])
	}
	e.instant = at
	e.landing = f // commit lands it
	why = e.acceptForwardLocked(f.m, at, enc)
	e.landing = nil
	if why != "" {
		e.b.outbox.taking(f, nil) // the message is as it was again
		return why
	}
	e.b.outbox.landed(f)
	return ""
}

// refusesLocked says why d cannot take the forwarded message m, or "".
func (e *Entity) refusesLocked(m *store.Message) string {
	switch {
	case e.deleted.Load():
		return "it does not exist"
	case !e.cfg.Status.canSend():
		return "its status is " + e.cfg.Status.String()
	case e.sessions != nil && m.SessionID == "":
		return "it requires a SessionID and the message has none"
	case m.Size() > e.cfg.maxMessageSize():
		return "the message is larger than its MaxMessageSizeInKilobytes"
	}
	return ""
}

// acceptForwardLocked enqueues the forwarded message m in d at the instant
// at it left its source, or says why d cannot take it: it is full. Once m
// is accepted it appends enc, the record of the forward (nil: none), as
// sendLocked does.
func (e *Entity) acceptForwardLocked(m *store.Message, at int64, enc *encoder) (why string) {
	deliveries, fromDeferral := m.Deliveries, m.FromDeferral
	m.Deliveries = 0
	m.FromDeferral = false
	kept, ids := e.dedupLocked([]*store.Message{m}, at)
	if len(kept) == 0 {
		e.commit(enc)
		return "" // a duplicate there: accepted and dropped (DD1)
	}
	var err error
	if e.kind == KindTopic {
		err = e.publishLocked(kept, at, nil, enc)
	} else if err = e.acceptAllLocked(kept, at, nil); err == nil {
		e.commit(enc)
	}
	if err != nil {
		// Refused whole: its source keeps it as it was (SEMANTICS D2).
		m.Deliveries, m.FromDeferral = deliveries, fromDeferral
		return "it is full"
	}
	e.recordLocked(ids, at)
	e.touchLocked(at)
	e.accessed = max(e.accessed, at)
	return ""
}

// checkForwardTargets checks c's ForwardTo and ForwardDeadLetteredTo for an
// entity named name (SEMANTICS F1): each must name a queue or topic that
// exists, other than the entity itself.
func (b *Broker) checkForwardTargets(name string, c Config, culprit string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.checkForwardTargetsLocked(name, c, culprit)
}

func (b *Broker) checkForwardTargetsLocked(name string, c Config, culprit string) error {
	for _, t := range []struct{ field, to string }{{"ForwardTo", c.ForwardTo}, {"ForwardDeadLetteredMessagesTo", c.ForwardDeadLetteredTo}} {
		switch {
		case t.to == "":
		case nameKey(t.to) == nameKey(name):
			return errs.Errorf(errs.ErrInvalidArgument, culprit, "%s names the entity itself", t.field)
		case b.lookupLocked(t.to) == nil:
			return errs.Errorf(errs.ErrNotFound, culprit, "%s %q: no queue or topic of that name", t.field, t.to)
		}
	}
	return nil
}

// forwardAllLocked forwards the available messages of e's main queue, at
// instant at: ForwardTo was just set.
func (e *Entity) forwardAllLocked(at int64) {
	var avail []*store.Message
	e.st.Ascend(store.Main, store.Key{}, false, func(m *store.Message) bool {
		if m.State() == store.Available {
			avail = append(avail, m)
		}
		return true
	})
	for _, m := range avail {
		e.st.Detach(m)
		e.forwardLocked(m, m.Key(), at, true)
	}
}
