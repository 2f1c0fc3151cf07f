package minibus

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/minibus-go/minibus/internal/store"
)

// lockLocked locks m, in q's stream, until now + LockDuration under a fresh
// token (SEMANTICS L1, L2).
func (e *entity) lockLocked(q *subQueue, m *store.Message, now int64) {
	q.hold(m)
	e.grantLocked(m, now)
}

// grantLocked gives m, held in State Locked, its lock: LockedUntil, a token
// and its place in the list of locks. Any other deadline of m goes.
func (e *entity) grantLocked(m *store.Message, now int64) {
	e.setDueLocked(m, store.Never)
	m.FromDeferral = false
	m.LockedUntil = addSat(now, e.cfg.lockDuration)
	m.Token = e.newToken(m)
	e.locks.insert(e.arena, m)
	e.noteDueLocked(m.LockedUntil)
}

// newToken returns a lock token for m: its arena slot, masked, then 96
// random bits. The slot makes the token unique among the entity's locked
// messages and finds the message without a map (lockedBy); the random bits
// make every delivery's token new and unguessable.
func (e *entity) newToken(m *store.Message) [16]byte {
	var t [16]byte
	putUint32(t[:4], m.Slot^e.tokenMask)
	putUint32(t[4:8], rand.Uint32()|1) // never all zero
	putUint64(t[8:], rand.Uint64())
	return t
}

// lockedBy returns the message of q locked under token, or nil (SEMANTICS
// L4, L10).
func (e *entity) lockedBy(q *subQueue, token [16]byte) *store.Message {
	m := e.arena.Lookup(getUint32(token[:4]) ^ e.tokenMask)
	if m == nil || m.State != store.Locked || m.Sub != uint8(q.kind) || m.Token != token {
		return nil
	}
	return m
}

func putUint32(b []byte, v uint32) {
	for i := range 4 {
		b[i] = byte(v >> (8 * i))
	}
}

func getUint32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// unlockLocked drops m's lock; m stays held in State Locked until the
// caller moves it on.
func (e *entity) unlockLocked(m *store.Message) {
	e.locks.remove(e.arena, m)
	m.Token = [16]byte{}
	m.LockedUntil = 0
}

// lockEndedLocked applies SEMANTICS L6 to m, whose lock ended unsettled at
// instant at (an abandon, or the lock's expiry): dead-letter it after
// MaxDeliveryCount deliveries, else return it to Deferred if it was fetched
// from deferral, else expire it if it is past ExpiresAt, else make it
// available again at its own position (Q4). In a dead-letter queue only the
// deferral rule applies (D3).
func (e *entity) lockEndedLocked(q *subQueue, m *store.Message, at int64) {
	e.unlockLocked(m)
	main := q.kind == SubQueueNone
	switch {
	case main && m.Deliveries >= e.cfg.maxDelivery:
		e.deadLetterLocked(q, m, reasonMaxDelivery, maxDeliveryDescription(e.cfg.maxDelivery))
	case m.FromDeferral:
		m.FromDeferral = false
		q.release(m, store.Deferred)
	case main && at >= m.Expires:
		e.expireLocked(q, m, at)
	default:
		q.release(m, store.Available)
		if main && m.Expires != store.Never {
			e.setDueLocked(m, m.Expires)
		}
		q.waiters.wake(1)
	}
}

type settleOp uint8

const (
	opComplete settleOp = iota
	opAbandon
	opDeadLetter
	opDefer
	opRenew
)

// CompleteMessage removes a locked message (SEMANTICS L3). It returns
// ErrLockLost if the lock has expired, the message was already settled or
// the token is unknown (L4), and ErrInvalidArgument for a nil message, a
// peeked message, one received in receive-and-delete mode, one received
// from another entity or sub-queue, or any message on a receive-and-delete
// receiver (L7). On error nothing changed.
func (r *Receiver) CompleteMessage(ctx context.Context, msg *ReceivedMessage, opts *CompleteMessageOptions) error {
	return r.settle(ctx, msg, opComplete, nil, nil)
}

// AbandonMessage releases a message's lock at once, merging
// opts.PropertiesToModify into its ApplicationProperties (SEMANTICS L3). The
// message is then dead-lettered, deferred again, expired or made available
// as SEMANTICS L6 says. Errors as CompleteMessage.
func (r *Receiver) AbandonMessage(ctx context.Context, msg *ReceivedMessage, opts *AbandonMessageOptions) error {
	var props map[string]any
	if opts != nil {
		props = opts.PropertiesToModify
	}
	return r.settle(ctx, msg, opAbandon, props, nil)
}

// DeadLetterMessage moves a locked message to the dead-letter queue with
// opts.Reason and opts.ErrorDescription, merging opts.PropertiesToModify
// (SEMANTICS L3, D2). A message of a dead-letter queue cannot be
// dead-lettered again (ErrInvalidArgument, D1). Errors as CompleteMessage.
func (r *Receiver) DeadLetterMessage(ctx context.Context, msg *ReceivedMessage, opts *DeadLetterOptions) error {
	var o DeadLetterOptions
	if opts != nil {
		o = *opts
	}
	return r.settle(ctx, msg, opDeadLetter, o.PropertiesToModify, &store.DeadLetter{Reason: o.Reason, Description: o.ErrorDescription})
}

// DeferMessage sets a locked message aside in State Deferred, merging
// opts.PropertiesToModify (SEMANTICS L3): only ReceiveDeferredMessages
// returns it. Deferring does not count as a failed delivery (L6) and a
// deferred message does not expire (E7). Errors as CompleteMessage.
func (r *Receiver) DeferMessage(ctx context.Context, msg *ReceivedMessage, opts *DeferMessageOptions) error {
	var props map[string]any
	if opts != nil {
		props = opts.PropertiesToModify
	}
	return r.settle(ctx, msg, opDefer, props, nil)
}

// RenewMessageLock extends a message's lock to now + LockDuration, in the
// broker and in msg.LockedUntil (SEMANTICS L5). Errors as CompleteMessage.
func (r *Receiver) RenewMessageLock(ctx context.Context, msg *ReceivedMessage, opts *RenewMessageLockOptions) error {
	return r.settle(ctx, msg, opRenew, nil, nil)
}

// settle finds msg's lock and applies op to the message.
func (r *Receiver) settle(ctx context.Context, msg *ReceivedMessage, op settleOp, mod map[string]any, dl *store.DeadLetter) error {
	if err := r.check(); err != nil {
		return err
	}
	if err := r.checkSettle(msg, op); err != nil {
		return err
	}
	add, err := copyProps(mod)
	if err != nil {
		return errorf(ErrInvalidArgument, r.describe(), "PropertiesToModify: %v", err)
	}
	q, now, err := r.enterReceive(ctx)
	if err != nil {
		return err
	}
	e := r.e
	defer e.mu.Unlock()
	m := e.lockedBy(q, msg.LockToken)
	if m == nil || now >= m.LockedUntil {
		return errorf(ErrLockLost, q.describe(), "%s", tokenString(msg.LockToken))
	}
	if len(add) > 0 {
		m.Props, _ = mergeProps(m.Props, add)
		old := m.Size
		m.Size = messageSize(m)
		q.bytes += m.Size - old
	}
	switch op {
	case opComplete:
		e.unlockLocked(m)
		q.remove(m)
		store.Recycle(m)
	case opAbandon:
		e.lockEndedLocked(q, m, now)
	case opDeadLetter:
		e.unlockLocked(m)
		e.deadLetterLocked(q, m, dl.Reason, dl.Description)
	case opDefer:
		e.unlockLocked(m)
		m.FromDeferral = false
		q.release(m, store.Deferred)
	case opRenew:
		e.locks.remove(e.arena, m)
		m.LockedUntil = addSat(now, e.cfg.lockDuration)
		e.locks.insert(e.arena, m)
		e.noteDueLocked(m.LockedUntil)
		msg.LockedUntil = e.ns.toTime(m.LockedUntil)
		return nil // a renewal is not activity (SEMANTICS A2)
	}
	e.touchLocked(now)
	return nil
}

// checkSettle rejects what can never be settled by this receiver.
func (r *Receiver) checkSettle(msg *ReceivedMessage, op settleOp) error {
	bad := func(format string, args ...any) error {
		return errorf(ErrInvalidArgument, r.describe(), format, args...)
	}
	switch {
	case msg == nil:
		return bad("message is nil")
	case r.mode == ReceiveModeReceiveAndDelete:
		return bad("a receive-and-delete receiver cannot settle messages")
	case msg.how == obtainedDeleted:
		return bad("message %d was received in receive-and-delete mode and has no lock", msg.SequenceNumber)
	case msg.how == obtainedPeeked:
		return bad("message %d was peeked and has no lock", msg.SequenceNumber)
	case msg.origin != nil && msg.origin.e != r.e:
		return bad("message %d was received from %s", msg.SequenceNumber, msg.origin.describe())
	case msg.origin != nil && msg.origin.kind != r.sq:
		return bad("message %d was received from %s", msg.SequenceNumber, msg.origin.describe())
	case msg.LockToken == [16]byte{}:
		return bad("message %d has no lock token", msg.SequenceNumber)
	case op == opDeadLetter && r.sq != SubQueueNone:
		return bad("a message of a dead-letter queue cannot be dead-lettered")
	}
	return nil
}

func durationOf(ns int64) time.Duration { return time.Duration(ns) }
