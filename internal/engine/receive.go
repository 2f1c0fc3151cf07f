package engine

import (
	"context"
	"sync/atomic"

	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
)

// Mode says how a receiver takes messages.
type Mode uint8

const (
	PeekLock Mode = iota
	ReceiveAndDelete
)

// Receiver receives, peeks and settles the messages of one queue of a queue
// or subscription. Safe for concurrent use.
type Receiver struct {
	e    *Entity
	q    store.Queue
	mode Mode

	// isClosed is set by Close: the one record that the receiver is closed.
	isClosed atomic.Bool

	// spare is a waiter kept for the next blocking receive.
	spare atomic.Pointer[waiter]

	// cursor is where the next Peek without a start begins (SEMANTICS L12).
	// Guarded by e.mu.
	cursor store.Key
}

// NewReceiver returns a receiver of queue q of e, a queue or subscription.
func (e *Entity) NewReceiver(q store.Queue, mode Mode) (*Receiver, error) {
	if e.kind == KindTopic {
		return nil, errs.Errorf(errs.ErrInvalidArgument, e.describe(), "a topic has no receiver: receive from a subscription")
	}
	if _, err := e.lock(); err != nil {
		return nil, err
	}
	e.mu.Unlock()
	return &Receiver{e: e, q: q, mode: mode}, nil
}

// Entity returns the receiver's entity.
func (r *Receiver) Entity() *Entity { return r.e }

// Queue returns the queue the receiver reads.
func (r *Receiver) Queue() store.Queue { return r.q }

// Mode returns the receiver's mode.
func (r *Receiver) Mode() Mode { return r.mode }

// Describe names what the receiver reads, for error texts.
func (r *Receiver) Describe() string { return "receiver of " + r.e.Describe(r.q) }

// Close closes the receiver: its blocked calls wake and return ErrClosed,
// and so do later calls (SEMANTICS L11). Idempotent.
func (r *Receiver) Close() {
	if !r.isClosed.CompareAndSwap(false, true) {
		return
	}
	r.e.mu.Lock()
	r.e.waiters[r.q].wakeOwned(r)
	r.e.mu.Unlock()
}

// Closed reports whether Close was called.
func (r *Receiver) Closed() bool { return r.isClosed.Load() }

// ErrClosed is the error of calls on the closed receiver.
func (r *Receiver) ErrClosed() error { return errs.Errorf(errs.ErrClosed, r.Describe(), "") }

// enter starts a receive-side call: receiver, ctx and broker checks,
// catch-up, the entity's lock and its status (SEMANTICS V5). On success
// e.mu is held.
func (r *Receiver) enter(ctx context.Context) (int64, error) {
	if r.Closed() {
		return 0, r.ErrClosed()
	}
	e := r.e
	now, err := e.begin(ctx)
	if err != nil {
		return 0, err
	}
	if err := e.enter(now); err != nil {
		return 0, err
	}
	if r.Closed() {
		e.mu.Unlock()
		return 0, r.ErrClosed()
	}
	if !e.cfg.Status.canReceive() {
		e.mu.Unlock()
		return 0, errs.Errorf(errs.ErrEntityDisabled, e.describe(), "status %v refuses receives", e.cfg.Status)
	}
	return now, nil
}

// Receive waits until at least one message is available, then takes up to
// max of them at once (SEMANTICS L8), appending their snapshots to snaps. If
// ctx ends first it returns ctx.Err(), having taken nothing.
func (r *Receiver) Receive(ctx context.Context, max int, snaps []store.Snapshot) ([]store.Snapshot, error) {
	e := r.e
	for {
		now, err := r.enter(ctx)
		if err != nil {
			return nil, err
		}
		if e.st.Available(r.q) > 0 {
			snaps = e.takeLocked(r.q, max, r.mode, now, snaps)
			e.touchLocked(now)
			e.accessed = now
			e.mu.Unlock()
			return snaps, nil
		}
		w := r.spare.Swap(nil)
		if w == nil {
			w = newWaiter(r) // another call of this receiver has the spare
		}
		e.waiters[r.q].add(w)
		e.mu.Unlock()
		woken, err := e.b.wait(ctx, e, w)
		if !woken {
			e.mu.Lock()
			if !e.waiters[r.q].remove(w) {
				// Woken meanwhile: take the wake-up and pass it on.
				<-w.ch
				e.waiters[r.q].wake(1)
			}
			e.mu.Unlock()
		}
		r.spare.Store(w)
		if err != nil {
			return nil, err
		}
	}
}

// Peek returns up to max messages from sequence number from (0: after the
// last message this receiver peeked without one) in sequence order, locking
// and changing nothing (SEMANTICS L12): available, locked, deferred and
// scheduled messages, never expired ones (E3).
func (r *Receiver) Peek(ctx context.Context, max int, from int64) ([]store.Snapshot, error) {
	now, err := r.enter(ctx)
	if err != nil {
		return nil, err
	}
	e := r.e
	defer e.mu.Unlock()
	start := store.Key{Seq: from}
	if from == 0 {
		start = r.cursor
	}
	var snaps []store.Snapshot
	e.st.Ascend(r.q, start, true, func(m *store.Message) bool {
		snaps = append(snaps, e.peekSnapshotLocked(m))
		return len(snaps) < max
	})
	if from == 0 && len(snaps) > 0 {
		r.cursor = snaps[len(snaps)-1].Key.Next()
	}
	e.touchLocked(now)
	return snaps, nil
}

// peekSnapshotLocked shows m as a peek does (SEMANTICS L14): Deferred,
// Scheduled or Active. Until it activates, a scheduled message holds the
// TTL it was sent with; a peek shows the TimeToLive and ExpiresAt it would
// get if it activated with today's settings (E1, E2).
func (e *Entity) peekSnapshotLocked(m *store.Message) store.Snapshot {
	shown := m.State()
	if shown == store.Locked {
		shown = store.Available
	}
	s := m.Snapshot(shown, false)
	if shown == store.Scheduled {
		s.TTL = effectiveTTL(m.TTL, e.ttlCapLocked())
		s.Expires = expiry(m.Scheduled, s.TTL)
	}
	return s
}

// ReceiveDeferred fetches the deferred messages with the given sequence
// numbers, in the order given (SEMANTICS L9). If any is not a deferred
// message of the receiver's queue, or is locked now, it returns
// ErrMessageNotFound and fetches nothing. The caller has checked the
// numbers.
func (r *Receiver) ReceiveDeferred(ctx context.Context, seqs []int64) ([]store.Snapshot, error) {
	now, err := r.enter(ctx)
	if err != nil {
		return nil, err
	}
	e := r.e
	defer e.mu.Unlock()
	var found []*store.Message
	for _, seq := range seqs {
		n := len(found)
		e.st.Ascend(r.q, store.Key{Seq: seq}, false, func(m *store.Message) bool {
			if m.Key().Seq != seq {
				return false
			}
			if m.State() == store.Deferred {
				found = append(found, m)
			}
			return true
		})
		if len(found) == n {
			return nil, errs.Errorf(errs.ErrMessageNotFound, e.Describe(r.q), "sequence number %d is not a deferred message", seq)
		}
	}
	snaps := make([]store.Snapshot, len(found))
	for i, m := range found {
		snaps[i] = e.fetchDeferredLocked(m, r.mode, now)
	}
	e.touchLocked(now)
	e.accessed = now
	return snaps, nil
}
