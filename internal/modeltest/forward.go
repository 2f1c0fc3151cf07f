package modeltest

// The model's auto-forwarding (SEMANTICS F1–F3, D4): messages leave a
// forwarding entity as they become active, or as they are dead-lettered,
// and wait in the outbox; flush delivers them, in the order they left, as
// new enqueues in their destinations, or to the source's transfer
// dead-letter queue.

import (
	"slices"
	"strings"
)

// Reasons and descriptions of F3.
const (
	reasonMaxHops     = "MaxTransferHopCountExceeded"
	descMaxHops       = "The maximum number of allowed hops was exceeded when forwarding between queues. Value is set to 4."
	reasonTransfer    = "TransferFailed"
	maxForwardingHops = 4
)

// mForward is a message on its way from one entity to another.
type mForward struct {
	from *mEntity
	key  mKey // its key in from, for its transfer dead-letter queue
	to   string
	x    *mMsg
	at   int64 // the instant it left
	// entered: x had been enqueued in from (from was its home) before it
	// left, so that if it comes back to from's transfer dead-letter queue it
	// keeps that EnqueuedTime (D2); one that only passed through is
	// enqueued there at the instant it left (F2).
	entered bool
	// by is the entity whose event made it leave while the clock runs
	// (firing, nil in a call), or made the forward whose delivery sent it
	// on (deliver), for the ties (noteTie).
	by *mEntity
}

// forwardOut sends x, which left e's main queue (or never entered it) under
// its key at instant at, on to e's ForwardTo: a hop (F2). The first hop
// records where it entered (EnqueuedSequenceNumber). A fifth hop sends it
// to e's dead-letter queue instead, where it stays (F3).
func (m *refModel) forwardOut(e *mEntity, x *mMsg, at int64) {
	x.fromDeferral = false
	if x.hops >= maxForwardingHops {
		m.hits.HopLimit++
		x.dlReason, x.dlDesc, x.dlDescPrefix, x.dlSource = reasonMaxHops, descMaxHops, false, ""
		m.putUnstamped(e, x, sqDLQ, at)
		return
	}
	x.hops++
	if x.enqSeq == 0 {
		x.enqSeq = x.key.seq
	}
	m.outbox = append(m.outbox, mForward{from: e, key: x.key, to: e.cfg.forwardTo, x: x, at: at, entered: m.leave(e, x), by: m.firing})
}

// forwardsDeadLetters reports whether x, dead-lettered in e for reason,
// leaves it (D4); one past the hop limit, or that has made its four hops,
// stays (F3).
func forwardsDeadLetters(e *mEntity, x *mMsg, reason string) bool {
	return e.cfg.forwardDLTo != "" && reason != reasonMaxHops && x.hops < maxForwardingHops
}

// dlForward sends x, dead-lettered in e at instant at, to e's
// ForwardDeadLetteredMessagesTo with DeadLetterSource set (D4): a hop (F2).
func (m *refModel) dlForward(e *mEntity, x *mMsg, at int64) {
	m.hits.DeadLetterForwarded++
	x.hops++
	x.dlSource = e.path()
	if x.enqSeq == 0 {
		x.enqSeq = x.key.seq
	}
	m.outbox = append(m.outbox, mForward{from: e, key: x.key, to: e.cfg.forwardDLTo, x: x, at: at, entered: m.leave(e, x), by: m.firing})
}

// leave notes that x leaves e on a forward, and reports whether e was its
// home: a message that comes back to e later is a new enqueue there (F2).
func (m *refModel) leave(e *mEntity, x *mMsg) (entered bool) {
	entered = x.home == e
	x.home = nil
	return entered
}

// forwardAll forwards the available messages of e's main queue at instant
// at, in key order: ForwardTo was just set (F2).
func (m *refModel) forwardAll(e *mEntity, at int64) {
	for _, x := range slices.Clone(e.main) {
		if x.state != mAvail {
			continue
		}
		m.hits.ForwardOnUpdate++
		remove(&e.main, x)
		m.forwardOut(e, x, at)
	}
}

// flush delivers the outbox in the order the messages left, and what those
// deliveries forward further. Nested calls (a delivery's own catch-up)
// leave the work to the outer one.
func (m *refModel) flush() {
	if m.flushing {
		return
	}
	m.flushing = true
	for len(m.outbox) > 0 {
		f := m.outbox[0]
		m.outbox = m.outbox[1:]
		m.deliver(f)
	}
	m.flushing = false
}

// deliver enqueues f's message in its destination as a new message there,
// at the instant it left (F2), or puts it in its source's transfer
// dead-letter queue (F3). What it forwards further was made by f.by's
// event too: a subscription's, say, that its topic's catch-up fired, whose
// forwards the outer flush delivers once the topic's event is back in
// firing.
func (m *refModel) deliver(f mForward) {
	was := m.firing
	defer func() { m.firing = was }()
	m.firing = f.by
	d := m.names[strings.ToLower(f.to)]
	if m.catchingUp {
		m.noteTie(d, f)
	}
	why := refusal(d, f.x)
	if why == "" {
		why = m.take(d, f)
	}
	if why != "" {
		m.transferFailed(f, why)
	}
}

// noteTie records an instant at which the broker's order of simultaneous
// events in different entities shows: a forward arriving at an instant at
// which its destination, or for a topic one of its subscriptions (whose
// catch-up the copies wait for), has an event of its own (or was deleted
// for idleness), or at which another entity's event forwarded to it too. The
// broker orders such events by its scheduler's bookkeeping, not by a rule
// (TestRegressionT3_ForwardAtDestinationDeadline); the harness does not
// move its clock across them (jump). The entity whose event made the
// forward is f.by: a subscription's event that its topic's catch-up fired
// (catchUpSubs) counts as the subscription's, as the broker may as well
// have visited the subscription first.
func (m *refModel) noteTie(d *mEntity, f mForward) {
	tie := false
	switch {
	case d == nil:
		g, ok := m.idleGone[strings.ToLower(f.to)]
		tie = ok && g.at == f.at && g.e != f.by
	case d != f.by && m.busyAt(d, f.at, f.by):
		tie = true
	case d.lastDelivery == f.at && d.lastDeliveryBy != f.by:
		tie = true
	}
	if d != nil {
		d.lastDelivery, d.lastDeliveryBy = f.at, f.by
	}
	if tie {
		m.tieAt = min(m.tieAt, f.at)
	}
}

// noteSubsTie records a tie when topic t, deleted for idleness at instant
// at, has a subscription that forwards and has an event of its own at that
// instant: the model deletes the topic first, with its subscriptions, while
// the broker may visit the subscription first (its scheduler bound can be
// earlier than the deadline) and forward what the event moves, a
// dead-lettered message to ForwardDeadLetteredMessagesTo for one.
func (m *refModel) noteSubsTie(t *mEntity, at int64) {
	for _, s := range t.subs {
		if !s.deleted && (s.cfg.forwardTo != "" || s.cfg.forwardDLTo != "") && m.hasEventAt(s, at) {
			m.tieAt = min(m.tieAt, at)
			return
		}
	}
}

// busyAt reports whether d has an event of its own at instant at, fired or
// pending, or, for a topic, one of its subscriptions other than by, the
// entity whose event forwarded: the broker may order it before or after
// that event.
func (m *refModel) busyAt(d *mEntity, at int64, by *mEntity) bool {
	if d.lastFired == at || m.hasEventAt(d, at) {
		return true
	}
	for _, s := range d.subs {
		if s != by && (s.lastFired == at || m.hasEventAt(s, at)) {
			return true
		}
	}
	return false
}

// refusal is why d cannot take x at all, or "".
func refusal(d *mEntity, x *mMsg) string {
	switch {
	case d == nil:
		return "it does not exist"
	case !canSend(d.cfg.status):
		return "its status is " + d.cfg.status.String()
	case d.cfg.session && x.headers.SessionID == "":
		return "it requires a SessionID and the message has none"
	case x.size > d.cfg.maxMsgSize:
		return "the message is larger than its MaxMessageSizeInKilobytes"
	}
	return ""
}

// take enqueues (or fans out) f's message in d at the instant it left: its
// DeliveryCount starts again, d's duplicate detection applies (DD1), and
// it counts against d's quota (V3); "it is full" when it does not fit, and
// then it keeps its DeliveryCount (D2).
func (m *refModel) take(d *mEntity, f mForward) string {
	x := f.x
	id := dupKey(x)
	if dupSeen(d, id, f.at) {
		m.hits.DuplicateDropped++
		m.terminate(x.item, termDuplicate)
		return ""
	}
	if d.kind == mTopic {
		m.catchUpSubs(d, f.at)
	}
	x.key = mKey{seq: d.seq + 1}
	if m.forwardSize(d, x, f.at) > d.cfg.maxSize {
		return "it is full"
	}
	x.deliveries = 0
	x.fromDeferral = false
	d.seq++
	d.seqLog = append(d.seqLog, x.item)
	m.hits.Forwarded++
	if d.kind == mTopic {
		m.fanOut(d, x, f.at)
	} else {
		m.enqueue(d, x, f.at, d.cfg.ttl)
	}
	m.recordDup(d, id, f.at)
	m.touchAt(d, f.at)
	d.accessed = max(d.accessed, f.at)
	return ""
}

// forwardSize is d's size with x in it: for a topic, with the copies x
// makes.
func (m *refModel) forwardSize(d *mEntity, x *mMsg, at int64) int64 {
	if d.kind == mTopic {
		return m.topicSize(d) + m.planSize(d, x, at)
	}
	return m.entitySize(d) + x.size
}

// transferFailed puts f's message in its source's transfer dead-letter
// queue with reason TransferFailed (F3), keeping any DeadLetterSource.
func (m *refModel) transferFailed(f mForward, why string) {
	x, e := f.x, f.from
	if e.deleted {
		m.terminate(x.item, termEntityGone)
		return
	}
	m.hits.TransferDeadLetter++
	x.key = f.key
	x.dlReason, x.dlDesc, x.dlDescPrefix = reasonTransfer, "could not forward to "+f.to+": "+why, false
	if f.entered {
		x.home = e // back where it was enqueued: it keeps that stamp (D2)
	}
	m.putUnstamped(e, x, sqTransfer, f.at)
}

// putUnstamped puts x, which came to e at instant at, in e's dead-letter
// or transfer dead-letter queue, available, with no deadline (E6). A
// message enqueued in e before keeps its EnqueuedTime and ExpiresAt (D2);
// one that never was is enqueued there at that instant (Q3, E1, E2, F2).
func (m *refModel) putUnstamped(e *mEntity, x *mMsg, q subQ, at int64) {
	if x.home != e {
		m.stampAt(e, x, at, ttlCap(e))
	}
	x.q = q
	x.state = mAvail
	insert(e.list(q), x)
}
