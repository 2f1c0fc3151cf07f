package engine

import (
	"context"
	"strconv"
	"time"

	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
)

// NewReceiver returns a plain receiver of queue q of e, a queue or
// subscription. The main queue of a session-enabled entity is read through
// sessions (SEMANTICS SS1) and that of a forwarding one is never receivable
// (F2): both ErrInvalidArgument.
func (e *Entity) NewReceiver(q store.Queue, mode Mode) (*Receiver, error) {
	if e.kind == KindTopic {
		return nil, errs.Errorf(errs.ErrInvalidArgument, e.describe(), "a topic has no receiver: receive from a subscription")
	}
	c := e.call(noFault)
	c.end = endLeave
	defer c.exit(nil)
	if _, err := c.enter(noContext); err != nil {
		return nil, err
	}
	switch {
	case q == store.Main && e.sessions != nil:
		return nil, errs.Errorf(errs.ErrInvalidArgument, e.describe(), "the %s requires sessions: accept a session to receive", e.kind)
	case q == store.Main && e.cfg.ForwardTo != "":
		return nil, errs.Errorf(errs.ErrInvalidArgument, e.describe(), "the %s forwards its messages to %q and cannot be received from", e.kind, e.cfg.ForwardTo)
	}
	return &Receiver{e: e, q: q, mode: mode}, nil
}

// Close closes the receiver: its blocked calls wake and return ErrClosed,
// and so do later calls (SEMANTICS L11). A session receiver releases its
// session and its locked messages, without counting a delivery (SS5).
// Idempotent.
func (r *Receiver) Close() {
	if !r.isClosed.CompareAndSwap(false, true) {
		return
	}
	e := r.e
	if r.sess == nil || e.b.life.closed() {
		e.mu.Lock()
		r.waitList().wakeOwned(r)
		e.mu.Unlock()
		return
	}
	// Releasing the session is a call's change, which its exit delivers;
	// but the call enters on its own: on a deleted entity, or after the
	// broker's journal failed, the receiver closes all the same.
	c := e.call(noFault)
	c.end = endObserved
	defer c.exit(nil)
	now := e.b.now() // a session lock that ended by now ended first
	e.mu.Lock()
	c.held = true
	r.waitList().wakeOwned(r)
	if r.sess.holder == r && !e.deleted.Load() {
		e.releaseSessionLocked(r.sess, now, false)
	}
}

// Receive waits until at least one message is available, then takes up to
// max of them at once (SEMANTICS L8), appending their views to views. If
// ctx ends first it returns ctx.Err(), having taken nothing. maxWait bounds
// the wait on the namespace clock: after it, or at once when it is
// negative, Receive returns what it took, possibly nothing; 0 waits as long
// as ctx allows.
func (r *Receiver) Receive(ctx context.Context, max int, views []store.View, maxWait time.Duration) (_ []store.View, err error) {
	c := r.call(OpReceive)
	defer c.exit(&err)
	e := r.e
	var timeout <-chan time.Time
	deadline := store.Never
	for {
		now, err := c.enter(ctx)
		if err != nil {
			return nil, err
		}
		if r.available() > 0 {
			n := len(views)
			views = e.takeLocked(r, max, now, views)
			c.waited.tookLocked() // for WaitQuiet, if the call waited (SEMANTICS P2)
			if r.taken != nil {
				r.taken(len(views) - n)
			}
			e.touchLocked(now)
			e.accessed = now
			c.yield = true
			return views, nil
		}
		if maxWait > 0 && deadline == store.Never {
			deadline = after(now, int64(maxWait))
			t := e.b.clock.Timer(maxWait)
			defer t.Stop()
			timeout = t.C
		}
		if maxWait < 0 || now >= deadline {
			e.touchRecLocked(now)
			return views, nil
		}
		w := r.spare.Swap(nil)
		if w == nil {
			w = newWaiter(r) // another call of this receiver has the spare
		}
		list := r.waitList()
		again := c.waited != nil
		if !again {
			c.waited = e.blockLocked(r)
		}
		list.add(w)
		c.leave()
		if again {
			e.b.WorkChanged() // woken, it found nothing: quiet again
		}
		err = e.waitOn(ctx, list, w, timeout)
		r.spare.Store(w)
		if err != nil {
			return nil, err
		}
		c.since = e.b.events.mark() // what others did meanwhile is not this call's
	}
}

// Peek returns up to max messages from sequence number from (0: after the
// last message this receiver peeked without one) in sequence order, locking
// and changing nothing (SEMANTICS L12): available, locked, deferred and
// scheduled messages, never expired ones (E3). A session receiver sees its
// session's available, locked and deferred messages.
func (r *Receiver) Peek(ctx context.Context, max int, from int64) (_ []store.View, err error) {
	c := r.call(OpPeek)
	defer c.exit(&err) // what it shows is durable
	now, err := c.enter(ctx)
	if err != nil {
		return nil, err
	}
	e := r.e
	start := store.Key{Seq: from}
	if from == 0 {
		start = r.cursor
	}
	var views []store.View
	each := func(m *store.Message) bool {
		views = append(views, e.peekViewLocked(m))
		return len(views) < max
	}
	if r.sess != nil {
		e.st.AscendIn(r.sess.id, start, true, each)
	} else {
		e.st.Ascend(r.q, start, true, each)
	}
	if from == 0 && len(views) > 0 {
		r.cursor = views[len(views)-1].Key.Next()
	}
	e.touchRecLocked(now)
	return views, nil
}

// peekViewLocked shows m as a peek does (SEMANTICS L14): Deferred,
// Scheduled or Active. Until it activates, a scheduled message holds the
// TTL it was sent with; a peek shows the TimeToLive and ExpiresAt it would
// get if it activated with today's settings (E1, E2).
func (e *Entity) peekViewLocked(m *store.Message) store.View {
	shown := m.State()
	if shown == store.Locked {
		shown = store.Available
	}
	s := m.View(shown, false)
	if shown == store.Scheduled {
		s.TTL = effectiveTTL(m.TTL, e.ttlCapLocked())
		s.Expires = expiry(m.Scheduled, s.TTL)
	}
	return s
}

// ReceiveDeferred fetches the deferred messages with the given sequence
// numbers, in the order given (SEMANTICS L9). If any is not a deferred
// message of the receiver's queue (of its session, SS8), or is locked now,
// it returns ErrMessageNotFound and fetches nothing. The caller has checked
// the numbers.
func (r *Receiver) ReceiveDeferred(ctx context.Context, seqs []int64) (_ []store.View, err error) {
	c := r.call(OpReceive)
	defer c.exit(&err)
	now, err := c.enter(ctx)
	if err != nil {
		return nil, err
	}
	e := r.e
	var found []*store.Message
	for _, seq := range seqs {
		n := len(found)
		each := func(m *store.Message) bool {
			if m.Key().Seq != seq {
				return false
			}
			if m.State() == store.Deferred {
				found = append(found, m)
			}
			return true
		}
		if r.sess != nil {
			e.st.AscendIn(r.sess.id, store.Key{Seq: seq}, false, each)
		} else {
			e.st.Ascend(r.q, store.Key{Seq: seq}, false, each)
		}
		if len(found) == n {
			return nil, errs.Errorf(errs.ErrMessageNotFound, e.Describe(r.q), "sequence number %d is not a deferred message", seq)
		}
	}
	until := e.lockEndLocked(r, now)
	if e.journaled() {
		var buf [8]store.Key
		rec := fetchRecord{takeRecord{q: r.q, mode: r.mode, session: r.SessionID(), at: now, until: until, keys: keysOf(buf[:0], found)}}
		enc := e.begin(rec.kind(), rec.encode)
		if err := e.recordTooLarge(enc, errs.ErrInvalidArgument, strconv.Itoa(len(found))+" sequence numbers"); err != nil {
			return nil, err
		}
		e.commit(enc)
	}
	views := make([]store.View, len(found))
	for i, m := range found {
		views[i] = e.fetchDeferredLocked(m, r.q, r.mode, now, until, r.renewUntil(now))
	}
	e.touchLocked(now)
	e.accessed = now
	return views, nil
}

// Delete removes up to max available, delayed or deferred messages of the
// receiver's queue (of its session) enqueued at or before before (Never: no
// limit), oldest first, without delivering them, and returns how many. A
// delete is activity (SEMANTICS A2).
func (r *Receiver) Delete(ctx context.Context, max int, before int64) (_ int, err error) {
	c := r.call(OpReceive)
	defer c.exit(&err)
	now, err := c.enter(ctx)
	if err != nil {
		return 0, err
	}
	e := r.e
	rec := removeRecord{q: r.q, session: r.SessionID(), at: now}
	if enc := e.begin(rec.kind(), rec.encode); enc != nil {
		max = min(max, e.b.keyRoom(len(enc.b)-1)) // no more than the record can name (its count of none is a byte)
	}
	var doomed []*store.Message
	each := func(m *store.Message) bool {
		if st := m.State(); st != store.Scheduled && m.Enqueued <= before {
			doomed = append(doomed, m)
		}
		return len(doomed) < max
	}
	if r.sess != nil {
		e.st.AscendIn(r.sess.id, store.Key{}, false, each)
	} else {
		e.st.Ascend(r.q, store.Key{}, false, each)
	}
	if e.journaled() {
		var buf [8]store.Key
		rec.keys = keysOf(buf[:0], doomed)
		e.log(rec.kind(), rec.encode)
	}
	e.removeLocked(doomed, r.q, now)
	return len(doomed), nil
}

// wait blocks, holding no mutex (I10), until w is woken (by a message, a change of the entity, or a
// close of the receiver or the broker: the caller then looks again), a
// deadline of e is due (the caller then catches up), timeout fires (the
// caller looks again and finds its own deadline passed) or ctx ends. woken
// reports that the waiter was taken off its list by a wake-up; when false,
// the caller must take it off.
func (b *Broker) wait(ctx context.Context, e *Entity, w *waiter, timeout <-chan time.Time) (woken bool, err error) {
	due := b.watch(e)
	defer b.unwatch(e)
	if due {
		return false, nil
	}
	select {
	case <-w.ch:
		return true, nil
	case <-timeout:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// waitOn waits on w, which the caller added to list under e.mu and then
// released e.mu: until a wake-up (the caller then looks again: nil), a due
// deadline of e (nil too) or the end of ctx. When w was not woken it is
// taken off list; a wake-up that raced with that is passed on.
func (e *Entity) waitOn(ctx context.Context, list *waitList, w *waiter, timeout <-chan time.Time) error {
	woken, err := e.b.wait(ctx, e, w, timeout)
	if !woken {
		e.mu.Lock()
		if !list.remove(w) {
			<-w.ch
			list.wake(1)
		}
		e.mu.Unlock()
	}
	return err
}
