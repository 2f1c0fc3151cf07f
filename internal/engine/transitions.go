package engine

import (
	"maps"
	"strconv"
	"time"

	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
)

// The life of a message, every transition in one place (SEMANTICS Q, E, L,
// S, D); each takes its instant and reads no clock (I3):
//
//	send ─┬─ accept ──────────────────────▶ Available ◀─── lock ends (L6) ──┐
//	      └─ schedule ─▶ Scheduled ─ activate (S4) ─┘   │                    │
//	                        └─ cancel (S3) ─▶ gone      ├─ take (L1) ─▶ Locked
//	                                                    ├─ remove (L7) ─▶ gone
//	                                                    └─ expire (E5) ─▶ dead-letter queue, or gone
//	Locked ─┬─ complete (L3) ─▶ gone
//	        ├─ abandon (L3) ─▶ lock ends (L6)
//	        ├─ defer (L3) ─▶ Deferred ─ fetch (L9) ─▶ Locked
//	        ├─ dead-letter (D2) ─▶ dead-letter queue (Available there)
//	        ├─ release (L15) ─▶ as before the delivery: Available, or Deferred
//	        └─ renew (L5) ─▶ Locked
//
// Each transition is a method called with the entity's mutex held. It takes
// the instant it happens at as an argument and reads no clock: given the
// same arguments it makes the same change. That makes these methods the
// seam for a write-ahead log (see the package documentation).

// Dead-letter reasons and descriptions the broker sets (SEMANTICS L6, E5,
// R5, SS1, F3).
const (
	ReasonMaxDelivery        = "MaxDeliveryCountExceeded"
	ReasonTTLExpired         = "TTLExpiredException"
	DescriptionTTLExpired    = "The message expired and was dead lettered."
	ReasonFilterEvaluation   = "FilterEvaluationException"
	ReasonSessionIDNull      = "Session id is null."
	DescriptionSessionIDNull = "Session enabled entity doesn't allow a message whose session identifier is null."
	ReasonMaxHops            = "MaxTransferHopCountExceeded"
	DescriptionMaxHops       = "The maximum number of allowed hops was exceeded when forwarding between queues. Value is set to 4."
	ReasonTransferFailed     = "TransferFailed"
	maxDeliveryDescriptionAt = "Message could not be consumed after "
)

func maxDeliveryDescription(n int32) string {
	return maxDeliveryDescriptionAt + strconv.FormatInt(int64(n), 10) + " delivery attempts."
}

// effectiveTTL is a message's time to live (SEMANTICS E1): the smaller of
// the one it was sent with and ttlCap, the entity's DefaultMessageTimeToLive
// (for a subscription, also its topic's); 0 stands for "not set" in both,
// and in the result for "never expires".
func effectiveTTL(sent, ttlCap int64) int64 {
	if sent > 0 && (ttlCap == 0 || sent < ttlCap) {
		return sent
	}
	return ttlCap
}

// capTTL is the smaller of two caps on time to live, 0 standing for none.
func capTTL(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// expiry is ExpiresAt for a message enqueued at instant at with the
// effective time to live ttl (SEMANTICS E2): store.Never for none; a finite
// TTL gives a finite instant, however large.
func expiry(at, ttl int64) int64 {
	if ttl == 0 {
		return store.Never
	}
	return after(at, ttl)
}

// ttlCapLocked is the entity's cap on time to live, 0 for none.
func (e *Entity) ttlCapLocked() int64 { return int64(e.cfg.TTL) }

// enqueueCapLocked is the cap on time to live of an enqueue in e: a
// subscription's is also capped by its topic's (SEMANTICS E1), read without
// the topic's lock.
func (e *Entity) enqueueCapLocked() int64 {
	if e.topic != nil {
		return capTTL(e.ttlCapLocked(), e.topic.ttlCap.Load())
	}
	return e.ttlCapLocked()
}

// stamp sets what enqueueing m at instant at with this ttlCap makes of it:
// EnqueuedTime (Q3), its effective TTL (E1) and ExpiresAt (E2).
func stamp(m *store.Message, at, ttlCap int64) {
	m.TTL = effectiveTTL(m.TTL, ttlCap)
	m.Enqueued = at
	m.Expires = expiry(at, m.TTL)
}

// acceptLocked numbers m, sent to a queue at now (SEMANTICS Q1), and either
// schedules it (S1) or enqueues it. It returns its sequence number.
func (e *Entity) acceptLocked(m *store.Message, now int64) int64 {
	e.seq++
	k := store.Key{Seq: e.seq}
	if m.Scheduled != store.Unset && m.Scheduled > now {
		e.scheduleLocked(m, k)
		e.emitLocked(EventScheduled, m, store.Main, now, "")
	} else {
		e.enqueueLocked(m, k, store.Main, now, e.ttlCapLocked())
	}
	return e.seq
}

// enqueueLocked makes m available in queue q under key k at instant at
// (SEMANTICS Q3, E1, E2) and wakes one receiver. Only the main queue's
// messages expire (E6). A forwarding entity's main queue passes m on at
// once (F2), as a dead-letter-forwarding one does its dead letters (D4).
func (e *Entity) enqueueLocked(m *store.Message, k store.Key, q store.Queue, at, ttlCap int64) {
	kind, reason := EventSent, ""
	if q == store.DeadLetterQueue {
		kind, reason = EventDeadLettered, m.DL.Reason
	}
	switch {
	case q == store.Main && e.cfg.ForwardTo != "":
		e.emitKeyed(kind, m, k, store.Main, at, reason)
		e.forwardLocked(m, k, at, false)
		return
	case q == store.DeadLetterQueue && e.forwardsDeadLetters(m, m.DL.Reason):
		e.emitKeyed(kind, m, k, store.Main, at, reason)
		e.forwardDeadLetterLocked(m, k, at, false)
		return
	}
	stamp(m, at, ttlCap)
	due := store.Never
	if q == store.Main {
		due = m.Expires
	}
	e.st.Put(m, k, q, store.Available, due)
	e.arrived = at
	e.emitLocked(kind, m, store.Main, at, reason)
	if due != store.Never {
		e.noteDueLocked(due)
	}
	e.wakeForLocked(m)
}

// wakeForLocked wakes one receive that can take m, just made available:
// one of its queue's, or of its session's holder, or one waiting to accept
// a session.
func (e *Entity) wakeForLocked(m *store.Message) {
	q := m.Queue()
	if e.sessions != nil && q == store.Main {
		if s := e.sessions.byID[m.SessionID]; s != nil && s.holder != nil {
			s.waiters.wake(1)
			return
		}
	}
	e.waiters[q].wake(1)
}

// scheduleLocked stores m as Scheduled under key k until m.Scheduled
// (SEMANTICS S1, S2). Its EnqueuedTime reads as it will be at activation
// (Q3); it keeps the TTL it was sent with until then.
func (e *Entity) scheduleLocked(m *store.Message, k store.Key) {
	m.Enqueued = m.Scheduled
	e.st.Put(m, k, store.Main, store.Scheduled, m.Scheduled)
	e.noteDueLocked(m.Scheduled)
}

// activateLocked enqueues the scheduled message m at its time at (SEMANTICS
// S4): it gets a new sequence number (Q1), EnqueuedTime = at and ExpiresAt
// counted from at. A topic copies it to its subscriptions then (S5).
func (e *Entity) activateLocked(m *store.Message, at int64) {
	e.lastActivation = at
	e.seq++
	k := store.Key{Seq: e.seq}
	e.emitKeyed(EventActivated, m, k, store.Main, at, "")
	if e.kind == KindTopic {
		e.fanOutLocked(m, k, at)
		e.st.Remove(m)
		return
	}
	if e.cfg.ForwardTo != "" {
		e.st.Detach(m)
		e.forwardLocked(m, k, at, false)
		return
	}
	stamp(m, at, e.ttlCapLocked())
	e.st.Rekey(m, k, store.Available, m.Expires)
	if m.Expires != store.Never {
		e.noteDueLocked(m.Expires)
	}
	e.wakeForLocked(m)
}

// cancelLocked deletes the scheduled message m at now (SEMANTICS S3).
func (e *Entity) cancelLocked(m *store.Message, now int64) {
	e.emitLocked(EventCanceled, m, store.Main, now, "")
	e.st.Remove(m)
}

// takeLocked takes up to max of the messages available to r at now, in
// sequence order, and appends their views to views: locked until now +
// LockDuration (in a session, until the session's lock ends) in peek-lock
// mode (SEMANTICS L1, L2, SS8), removed in receive-and-delete mode (L7).
// Each is a delivery.
func (e *Entity) takeLocked(r *Receiver, max int, now int64, views []store.View) []store.View {
	n := min(max, r.available())
	until := e.lockEndLocked(r, now)
	journaled := e.journaled()
	var rec takeRecord
	if journaled {
		var buf [8]store.Key // zeroed only for a journal
		rec = takeRecord{q: r.q, mode: r.mode, session: r.SessionID(), at: now, until: until, keys: buf[:0]}
		enc := e.begin(rec.kind(), rec.encode)
		n = min(n, e.b.keyRoom(len(enc.b)-1)) // no more than the record can name (its count of none is a byte)
	}
	renew := r.renewUntil(now)
	for range n {
		var m *store.Message
		switch {
		case r.mode == PeekLock && r.sess != nil:
			m = e.st.LockFirstIn(r.sess.id, until)
		case r.mode == PeekLock:
			m = e.st.LockFirst(r.q, until)
		case r.sess != nil:
			m = e.st.RemoveFirstIn(r.sess.id)
		default:
			m = e.st.RemoveFirst(r.q)
		}
		if journaled {
			rec.keys = append(rec.keys, m.Key())
		}
		e.deliveredLocked(m, r.q, r.mode, now, renew)
		views = append(views, m.View(store.Available, r.mode == ReceiveAndDelete))
	}
	if n > 0 && r.mode == PeekLock {
		e.noteDueLocked(until)
	}
	if r.available() > 0 && after(e.arrived, drainQuiet) <= now {
		// A backlog that nothing has been sent to for a while: the copies
		// out may take the room of settled messages' bodies, which no send
		// is waiting for (store.TakeRoom).
		for i := len(views) - n; i < len(views); i++ {
			views[i].Drain = true
		}
	}
	if journaled {
		e.log(rec.kind(), rec.encode)
	}
	return views
}

// drainQuiet is how long, on the namespace clock, an entity must have had
// nothing enqueued for its receivers to be draining a backlog (takeLocked).
// A shorter gap is as likely a producer that lost its turn for the entity's
// lock to a consumer's settlements.
const drainQuiet = int64(10 * time.Millisecond)

// deliveredLocked counts the delivery of m, just locked (peek-lock, its
// lock renewed automatically until renewUntil) or taken out of the store
// (receive-and-delete) at now.
func (e *Entity) deliveredLocked(m *store.Message, q store.Queue, mode Mode, now, renewUntil int64) {
	m.Deliveries++
	if mode == PeekLock {
		m.RenewUntil = renewUntil
		e.emitLocked(EventDelivered, m, q, now, "")
		return
	}
	e.emitKeyed(EventDelivered, m, m.Key(), q, now, "")
}

// lockEndLocked is when a lock r takes at now ends: now + LockDuration, or
// its session's lock end (SEMANTICS L1, SS8).
func (e *Entity) lockEndLocked(r *Receiver, now int64) int64 {
	if r.sess != nil {
		return r.sess.lockedUntil
	}
	return after(now, int64(e.cfg.LockDuration))
}

// fetchDeferredLocked delivers the deferred message m from queue q at now
// (SEMANTICS L9): in peek-lock mode locked until until (renewed
// automatically until renewUntil) and marked to return to Deferred when its
// lock ends (L6); removed in receive-and-delete mode.
func (e *Entity) fetchDeferredLocked(m *store.Message, q store.Queue, mode Mode, now, until, renewUntil int64) store.View {
	m.Deliveries++
	e.emitLocked(EventDelivered, m, q, now, "")
	if mode == ReceiveAndDelete {
		s := m.View(store.Deferred, true)
		e.st.Remove(m)
		return s
	}
	e.st.Lock(m, until)
	m.RenewUntil = renewUntil
	m.FromDeferral = true
	e.noteDueLocked(until)
	return m.View(store.Deferred, false)
}

// renewLocked extends m's lock to now + LockDuration (SEMANTICS L5) and
// returns its new end.
func (e *Entity) renewLocked(m *store.Message, now int64) int64 {
	until := after(now, int64(e.cfg.LockDuration))
	e.relockLocked(m, until)
	return until
}

// relockLocked moves m's lock end to until, and records it: a renewal
// acknowledged before a crash holds at Open, so that the lock does not end
// at its earlier end in the catch-up (SEMANTICS L6 then ends it at Open, as
// every lock).
func (e *Entity) relockLocked(m *store.Message, until int64) {
	if e.journaled() {
		r := renewRecord{q: m.Queue(), key: m.Key(), until: until}
		e.log(r.kind(), r.encode)
	}
	e.st.Renew(m, until)
	e.noteDueLocked(until)
}

// lockEndedLocked applies SEMANTICS L6 to m, whose lock ended unsettled at
// instant at (an abandon, or the lock's expiry): dead-letter it after
// MaxDeliveryCount deliveries, else return it to Deferred if it was fetched
// from deferral, else expire it if it is past ExpiresAt, else make it
// available again at its own position (Q4). In a dead-letter queue only the
// deferral rule applies (D3).
func (e *Entity) lockEndedLocked(m *store.Message, at int64) {
	e.releaseLocked(m, at, 0)
}

// releaseLocked is lockEndedLocked for a lock abandoned at instant at with
// a retry instant: past L6's dead-lettering, deferral and expiry, the
// message waits Delayed until retry (expiring meanwhile at ExpiresAt) when
// retry is after at, instead of being available at once.
func (e *Entity) releaseLocked(m *store.Message, at, retry int64) {
	m.RenewUntil = 0
	if m.Queue() == store.Main && m.Deliveries >= uint32(e.cfg.MaxDeliveryCount) {
		e.deadLetterLocked(m, ReasonMaxDelivery, maxDeliveryDescription(e.cfg.MaxDeliveryCount), at)
		return
	}
	e.returnLocked(m, at, retry)
}

// unreceiveLocked ends m's lock at instant at without counting its
// delivery (SEMANTICS L15): its DeliveryCount is back to what it was
// before, and L6 applies without its MaxDeliveryCount rule, so a message
// fetched from deferral is deferred again, one past ExpiresAt expires and
// any other is available again at its own position (Q4).
func (e *Entity) unreceiveLocked(m *store.Message, at int64) {
	m.Deliveries--
	m.RenewUntil = 0
	e.returnLocked(m, at, 0)
}

// returnLocked is SEMANTICS L6 past its MaxDeliveryCount rule, for m whose
// lock ended at instant at (releaseLocked).
func (e *Entity) returnLocked(m *store.Message, at, retry int64) {
	q := m.Queue()
	main := q == store.Main
	switch {
	case m.FromDeferral:
		e.deferLocked(m)
	case main && at >= m.Expires:
		e.expireLocked(m, at)
	case main && e.cfg.ForwardTo != "":
		e.st.Detach(m) // forwarding began while it was locked (F2)
		e.forwardLocked(m, m.Key(), at, true)
	case retry > at:
		due := retry
		if main {
			due = min(retry, m.Expires)
		}
		e.st.Move(m, q, store.Delayed, due)
		e.noteDueLocked(due)
	default:
		due := store.Never
		if main {
			due = m.Expires
		}
		e.st.Move(m, q, store.Available, due)
		if due != store.Never {
			e.noteDueLocked(due)
		}
		e.wakeForLocked(m)
	}
}

// deferLocked sets m aside in State Deferred (SEMANTICS L3): no expiry (E7),
// no delivery counted.
func (e *Entity) deferLocked(m *store.Message) {
	m.FromDeferral = false
	e.st.Move(m, m.Queue(), store.Deferred, store.Never)
}

// deadLetterLocked moves m to the dead-letter queue at instant at with
// reason and description (SEMANTICS D2): it keeps its body, properties,
// sequence number, EnqueuedTime and DeliveryCount, and it never expires
// there (E6). With ForwardDeadLetteredMessagesTo it goes there instead (D4).
func (e *Entity) deadLetterLocked(m *store.Message, reason, description string, at int64) {
	e.emitLocked(EventDeadLettered, m, m.Queue(), at, reason)
	m.FromDeferral = false
	m.DL = &store.DeadLetter{Reason: reason, Description: description}
	if e.b.debugging() {
		e.b.log.Debug("minibus: dead-lettered", "entity", e.describe(), "seq", m.Key().Seq, "reason", reason)
	}
	if e.forwardsDeadLetters(m, reason) {
		e.st.Detach(m)
		e.forwardDeadLetterLocked(m, m.Key(), at, true)
		return
	}
	e.st.Move(m, store.DeadLetterQueue, store.Available, store.Never)
	e.wakeForLocked(m)
}

// expireLocked applies expiry to m at instant at (SEMANTICS E5): with
// DeadLetteringOnMessageExpiration it moves to the dead-letter queue with
// reason TTLExpiredException, otherwise it is dropped. Only available
// messages of the main queue expire (E4, E6, E7): the callers see to that.
func (e *Entity) expireLocked(m *store.Message, at int64) {
	e.emitLocked(EventExpired, m, m.Queue(), at, "")
	if e.cfg.DeadLetterOnExpiry {
		e.deadLetterLocked(m, ReasonTTLExpired, DescriptionTTLExpired, at)
		return
	}
	e.st.Remove(m)
}

// completeLocked removes the locked message m at now (SEMANTICS L3).
func (e *Entity) completeLocked(m *store.Message, now int64) {
	e.emitLocked(EventCompleted, m, m.Queue(), now, "")
	e.st.Remove(m)
}

// deadlineLocked applies a deadline from the store: a lock's end (L6), an
// expiry (E3, E5), a scheduled activation (S4) or a retry delay's end. Each
// is recorded.
func (e *Entity) deadlineLocked(d store.Deadline) {
	m := d.M
	switch {
	case d.LockEnd && m.RenewUntil > d.At:
		// Renewed automatically at its end, as a processor asked (the
		// session's message locks follow the session's renewal).
		until := after(d.At, int64(e.cfg.LockDuration))
		if m.Queue() == store.Main && e.sessions != nil {
			until = e.sessions.byID[m.SessionID].lockedUntil
			if until <= d.At {
				until = after(d.At, int64(e.cfg.LockDuration))
			}
		}
		e.relockLocked(m, until)
	case d.LockEnd:
		e.lockLostLocked(m, d.At)
	case m.State() == store.Scheduled:
		if e.kind == KindTopic {
			// The subscriptions' own events at this instant come first,
			// and so do their records, which the replay applies before the
			// activation's: one deleted for idleness now gets no copy, in
			// the log as it did live.
			leaveAll(e.enterSubsLocked(d.At))
		}
		e.deadlineRecLocked(dlActivate, m, d.At)
		e.activateLocked(m, d.At)
	case m.State() == store.Delayed && d.At < m.Expires:
		e.deadlineRecLocked(dlReady, m, d.At)
		e.readyLocked(m)
	default:
		e.deadlineRecLocked(dlExpire, m, d.At)
		e.expireLocked(m, d.At)
	}
}

// deadlineRecLocked records that deadline what of m came at instant at.
func (e *Entity) deadlineRecLocked(what uint8, m *store.Message, at int64) {
	if e.journaled() {
		r := deadlineRecord{what: what, q: m.Queue(), key: m.Key(), session: m.SessionID, at: at}
		e.log(r.kind(), r.encode)
	}
}

// lockLostLocked ends m's lock unsettled at instant at (SEMANTICS L6):
// it expired, or the process that held it stopped.
func (e *Entity) lockLostLocked(m *store.Message, at int64) {
	e.deadlineRecLocked(dlLockEnd, m, at)
	e.emitLocked(EventLockLost, m, m.Queue(), at, "")
	e.lockEndedLocked(m, at)
}

// readyLocked makes the delayed message m available again at its own
// position (Q4): its retry delay is over.
func (e *Entity) readyLocked(m *store.Message) {
	due := store.Never
	if m.Queue() == store.Main {
		due = m.Expires
	}
	e.st.Move(m, m.Queue(), store.Available, due)
	e.wakeForLocked(m)
}

// modifyLocked merges add, a validated copy of PropertiesToModify, into m's
// application properties (SEMANTICS L3) within the entity's limits (V3): a
// message that would pass MaxMessageSize or an entity its quota is refused
// and nothing changes.
func (e *Entity) modifyLocked(m *store.Message, add map[string]any) error {
	props := make(map[string]any, len(m.Props)+len(add))
	maps.Copy(props, m.Props)
	maps.Copy(props, add)
	if e.b.replay != nil {
		// The live call was allowed. A subscription shares its topic's
		// quota and records under its own lock: a completion on another
		// that freed the room may be recorded after this.
		e.st.PutProps(m, props)
		return nil
	}
	if size := m.SizeWith(props); size > e.cfg.maxMessageSize() {
		return errTooLarge(e, "message "+strconv.FormatInt(m.Key().Seq, 10)+" with PropertiesToModify", size, m.MessageID == "")
	}
	if !e.st.SetProps(m, props) {
		return errQuota(e, m.SizeWith(props)-m.Size(), "PropertiesToModify")
	}
	return nil
}

// removeLocked removes doomed, messages of queue q, at now without
// delivering them.
func (e *Entity) removeLocked(doomed []*store.Message, q store.Queue, now int64) {
	for _, m := range doomed {
		e.emitLocked(EventRemoved, m, q, now, "")
		e.st.Remove(m)
	}
	e.touchLocked(now)
}

// deleteRecLocked is deleteLocked, recorded. A topic's subscriptions go
// first, each under its own lock: a call on a subscription appends its
// records under that lock alone, and one appended after the topic's delete
// record would name a subscription the replay has deleted with its topic
// (Open would fail, "no such entity").
func (e *Entity) deleteRecLocked(at int64) {
	for _, s := range e.subs {
		s.mu.Lock()
		s.deleteLocked(at)
		s.mu.Unlock()
	}
	r := deleteRecord{at: at}
	e.log(r.kind(), r.encode)
	e.deleteLocked(at)
}

// deleteLocked deletes e and everything in it: explicitly, on idle, or with
// its topic (SEMANTICS A3, A5). Blocked receivers wake and return
// ErrNotFound.
func (e *Entity) deleteLocked(at int64) {
	if e.deleted.Load() {
		return
	}
	e.deleted.Store(true)
	e.wakeAllLocked()
	for _, s := range e.subs {
		s.mu.Lock()
		s.deleteLocked(at)
		s.mu.Unlock()
	}
	e.emitEntity(EventEntityDeleted, at)
	e.subs = nil
	e.st.Clear()
	if e.sessions != nil {
		for _, x := range e.sessions.byID {
			x.waiters.wakeAll()
		}
		e.sessions.clear(e.quota)
	}
}

// wakeAllLocked wakes every receive blocked on e, to see a change of state:
// deletion, a new status, a closed broker.
func (e *Entity) wakeAllLocked() {
	for i := range e.waiters {
		e.waiters[i].wakeAll()
	}
}

// errTooLarge is the error for a message of size bytes; madeID says that
// the broker made its MessageID, which counts (SEMANTICS V3, DD2).
func errTooLarge(e *Entity, what string, size int64, madeID bool) error {
	made := ""
	if madeID {
		made = " (counting the 32-character MessageID the broker made for it)"
	}
	return errs.Errorf(errs.ErrMessageTooLarge, e.describe(), "%s is %d bytes%s, more than MaxMessageSizeInKilobytes (%d bytes)",
		what, size, made, e.cfg.maxMessageSize())
}

// errQuota is the error for adding n bytes (of what) to the entity's quota.
func errQuota(e *Entity, n int64, what string) error {
	if what != "" {
		what = " of " + what
	}
	return errs.Errorf(errs.ErrQuotaExceeded, e.describe(), "size %d bytes plus %d bytes%s would pass MaxSizeInMegabytes (%d bytes)",
		e.quota.Used(), n, what, e.quota.Limit())
}
