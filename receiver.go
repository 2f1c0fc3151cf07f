package minibus

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/minibus-go/minibus/internal/store"
)

// Receiver receives, peeks and settles the messages of one queue or
// subscription, or of its dead-letter or transfer dead-letter queue. Get one
// from NewReceiver. A Receiver is safe for concurrent use; any receiver of
// the same entity and sub-queue can settle a message by its lock token
// (SEMANTICS L10).
type Receiver struct {
	e    *entity
	sq   SubQueue
	mode ReceiveMode

	closed    atomic.Bool
	done      chan struct{} // closed by Close
	closeOnce sync.Once

	// spare is a waiter kept for the next blocking receive.
	spare atomic.Pointer[waiter]

	// cursor is where the next PeekMessages without FromSequenceNumber
	// starts (SEMANTICS L12). Guarded by e.mu.
	cursor store.Key
}

// newReceiver checks opts and that e can be received from.
func (e *entity) newReceiver(opts *ReceiverOptions) (*Receiver, error) {
	var o ReceiverOptions
	if opts != nil {
		o = *opts
	}
	if o.ReceiveMode != ReceiveModePeekLock && o.ReceiveMode != ReceiveModeReceiveAndDelete {
		return nil, errorf(ErrInvalidArgument, e.describe(), "ReceiveMode %v is not a receive mode", o.ReceiveMode)
	}
	if o.SubQueue < SubQueueNone || o.SubQueue > SubQueueTransfer {
		return nil, errorf(ErrInvalidArgument, e.describe(), "SubQueue %v is not a sub-queue", o.SubQueue)
	}
	if e.kind == kindTopic {
		return nil, errorf(ErrInvalidArgument, e.describe(), "a topic has no receiver: receive from a subscription")
	}
	if _, err := e.lock(); err != nil {
		return nil, err
	}
	e.mu.Unlock()
	return &Receiver{e: e, sq: o.SubQueue, mode: o.ReceiveMode, done: make(chan struct{})}, nil
}

// describe names what the receiver reads, for error texts.
func (r *Receiver) describe() string { return "receiver of " + r.e.describeSub(r.sq) }

func (r *Receiver) check() error {
	if r == nil || r.e == nil {
		return errorf(ErrInvalidArgument, "receiver", "nil *Receiver")
	}
	if r.closed.Load() {
		return errorf(ErrClosed, r.describe(), "")
	}
	return nil
}

// enterReceive starts a receive-side call: ctx, namespace and receiver
// checks, catch-up, the entity's lock and its status (SEMANTICS V5). On
// success e.mu is held and the sub-queue is returned.
func (r *Receiver) enterReceive(ctx context.Context) (*subQueue, int64, error) {
	if err := r.check(); err != nil {
		return nil, 0, err
	}
	e := r.e
	now, err := e.begin(ctx)
	if err != nil {
		return nil, 0, err
	}
	if err := e.enter(now); err != nil {
		return nil, 0, err
	}
	q := e.sub[r.sq]
	if r.closed.Load() {
		e.mu.Unlock()
		return nil, 0, errorf(ErrClosed, r.describe(), "")
	}
	if !e.cfg.status.canReceive() {
		e.mu.Unlock()
		return nil, 0, errorf(ErrEntityDisabled, e.describe(), "status %v refuses receives", e.cfg.status)
	}
	return q, now, nil
}

// ReceiveMessages waits until at least one message is available, then
// returns at once with up to maxMessages of them, in sequence order
// (SEMANTICS L8). In peek-lock mode each is locked for LockDuration (L1); in
// receive-and-delete mode each is removed (L7). If ctx ends first it returns
// nil and ctx.Err(), having taken nothing. It returns ErrClosed if the
// receiver or namespace is closed while it waits, ErrNotFound if the entity
// is deleted, and ErrEntityDisabled if its status refuses receives.
// maxMessages < 1 is ErrInvalidArgument.
func (r *Receiver) ReceiveMessages(ctx context.Context, maxMessages int, opts *ReceiveMessagesOptions) ([]*ReceivedMessage, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if maxMessages < 1 {
		return nil, errorf(ErrInvalidArgument, r.describe(), "maxMessages %d is less than 1", maxMessages)
	}
	e := r.e
	for {
		q, now, err := r.enterReceive(ctx)
		if err != nil {
			return nil, err
		}
		if q.stream.Available() > 0 {
			var room [32]snapshot
			snaps := e.takeLocked(q, maxMessages, r.mode, now, room[:0])
			e.touchLocked(now)
			e.accessed = now
			e.mu.Unlock()
			return e.ns.build(snaps), nil
		}
		w := r.waiter()
		q.waiters.add(w)
		e.mu.Unlock()
		woken, err := e.ns.wait(ctx, e, w, r.done)
		if !woken {
			e.mu.Lock()
			if !q.waiters.remove(w) {
				// Woken meanwhile: take the wake-up and pass it on.
				<-w.ch
				q.waiters.wake(1)
			}
			e.mu.Unlock()
		}
		r.spare.Store(w)
		if err != nil {
			if err == errReceiverClosed {
				err = errorf(ErrClosed, r.describe(), "")
			}
			return nil, err
		}
	}
}

// waiter returns the receiver's spare waiter, or a new one when another call
// of this receiver is blocked with it.
func (r *Receiver) waiter() *waiter {
	if w := r.spare.Swap(nil); w != nil {
		return w
	}
	return newWaiter()
}

var errReceiverClosed = errorf(ErrClosed, "receiver", "")

// wait blocks until w is woken, a deadline of e is due (the caller then
// catches up), ctx ends, done is closed or the namespace closes.
// woken reports that the waiter was taken off its list by a wake-up; when
// false, the caller must take it off. err is nil when the caller should look
// again.
func (ns *Namespace) wait(ctx context.Context, e *entity, w *waiter, done <-chan struct{}) (woken bool, err error) {
	due := ns.watch(e)
	defer ns.unwatch(e)
	if due {
		return false, nil
	}
	select {
	case <-w.ch:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-done:
		return false, errReceiverClosed
	case <-ns.done:
		return false, errClosed
	}
}

// takeLocked takes up to max available messages from q, in sequence order:
// locked in peek-lock mode (SEMANTICS L1), removed in receive-and-delete mode
// (L7). It appends their snapshots to snaps; build makes the messages after
// the lock is released.
func (e *entity) takeLocked(q *subQueue, max int, mode ReceiveMode, now int64, snaps []snapshot) []snapshot {
	n := min(max, q.stream.Available())
	for range n {
		if mode == ReceiveModePeekLock {
			m := q.takeHeld()
			m.Deliveries++
			e.grantLocked(m, now)
			snaps = append(snaps, snap(m, MessageStateActive, obtainedLocked, q))
		} else {
			m := q.take()
			m.Deliveries++
			e.setDueLocked(m, store.Never)
			snaps = append(snaps, snap(m, MessageStateActive, obtainedDeleted, nil))
		}
	}
	return snaps
}

// snapshot is what a receive or peek reads of a stored message under the
// entity's lock: the message, pinned so that it is not recycled, and every
// field that can change while the message is in the broker (an activation
// gives a new key and times; settlement, lock ends and dead-lettering change
// the rest). The other fields never change once a message is stored, so
// build reads them without the lock.
type snapshot struct {
	m           *store.Message
	key         store.Key
	enqueued    int64
	expires     int64
	ttl         int64
	props       map[string]any
	dl          *store.DeadLetter
	lockedUntil int64
	token       [16]byte
	deliveries  uint32
	state       MessageState
	how         obtained
	origin      *subQueue
}

// snap takes a snapshot of m; call it under the entity's lock.
func snap(m *store.Message, state MessageState, how obtained, origin *subQueue) snapshot {
	m.Pin()
	ttl := m.TTL
	if m.State == store.Scheduled && m.Expires != store.Never {
		// Until it activates, a scheduled message holds the TTL it was sent
		// with; show the effective one its ExpiresAt counts (SEMANTICS E1).
		ttl = m.Expires - m.Enqueued
	}
	return snapshot{
		m: m, key: m.Key, enqueued: m.Enqueued, expires: m.Expires, ttl: ttl,
		props: m.Props, dl: m.DL, lockedUntil: m.LockedUntil, token: m.Token,
		deliveries: m.Deliveries, state: state, how: how, origin: origin,
	}
}

// build makes the caller's messages from snapshots, outside the entity's
// lock (SEMANTICS V4): each gets its own body and properties (the bodies of
// one call share one allocation, each capped at its own length, so that no
// body can grow into another), and the broker-made message ids are written.
// It unpins the stored messages, and recycles those that were received and
// deleted: nobody else has them.
func (ns *Namespace) build(snaps []snapshot) []*ReceivedMessage {
	backing := make([]ReceivedMessage, len(snaps))
	out := make([]*ReceivedMessage, len(snaps))
	parts := make([][]byte, len(snaps))
	ids := 0
	for i := range snaps {
		s := &snaps[i]
		ns.fill(&backing[i], s)
		out[i] = &backing[i]
		parts[i] = s.m.Body
		if backing[i].idSeed != 0 {
			ids++
		}
	}
	// bytes.Join allocates without zeroing what it then overwrites.
	buf := bytes.Join(parts, nil)
	for i, rm := range out {
		if rm.Body != nil {
			n := len(rm.Body)
			rm.Body, buf = buf[:n:n], buf[n:]
		}
		rm.ApplicationProperties = cloneProps(rm.ApplicationProperties)
		m := snaps[i].m
		snaps[i].m = nil
		m.Unpin()
		if rm.how == obtainedDeleted {
			store.Recycle(m)
		}
	}
	if ids > 0 {
		idBuf := make([]byte, 0, ids*idLength)
		for _, rm := range out {
			if rm.idSeed != 0 {
				idBuf = appendID(idBuf, rm.idSeed)
			}
		}
		all := string(idBuf)
		for _, rm := range out {
			if rm.idSeed != 0 {
				rm.MessageID, all = all[:idLength], all[idLength:]
			}
		}
	}
	return out
}

// fill sets rm from a snapshot and the unchanging fields of its message,
// sharing Body and ApplicationProperties with the store until build copies
// them.
func (ns *Namespace) fill(rm *ReceivedMessage, s *snapshot) {
	m := s.m
	if m.MessageID == "" {
		rm.idSeed = m.IDSeed
	}
	rm.Message = Message{
		MessageID:             m.MessageID,
		Body:                  m.Body,
		SessionID:             m.SessionID,
		TimeToLive:            durationOf(s.ttl),
		ApplicationProperties: s.props,
	}
	if m.Scheduled != store.Unset {
		rm.ScheduledEnqueueTime = ns.toTime(m.Scheduled)
	}
	if h := m.Headers; h != nil {
		rm.ContentType = h.ContentType
		rm.CorrelationID = h.CorrelationID
		rm.Subject = h.Subject
		rm.To = h.To
		rm.ReplyTo = h.ReplyTo
		rm.ReplyToSessionID = h.ReplyToSessionID
		rm.PartitionKey = h.PartitionKey
	}
	rm.SequenceNumber = s.key.Seq
	rm.EnqueuedSequenceNumber = m.EnqueuedSeq
	rm.EnqueuedTime = ns.toTime(s.enqueued)
	rm.ExpiresAt = ns.toTime(s.expires)
	rm.DeliveryCount = s.deliveries
	rm.State = s.state
	rm.how = s.how
	rm.origin = s.origin
	if s.how == obtainedLocked {
		rm.LockedUntil = ns.toTime(s.lockedUntil)
		rm.LockToken = s.token
	}
	if dl := s.dl; dl != nil {
		rm.DeadLetterReason = dl.Reason
		rm.DeadLetterErrorDescription = dl.Description
		rm.DeadLetterSource = dl.Source
	}
}

// PeekMessages returns up to maxMessages messages in sequence order without
// locking or changing anything (SEMANTICS L12): available, locked, deferred
// and (queues) scheduled messages, never expired ones (E3). It starts at
// opts.FromSequenceNumber, or, when that is 0, after the last message this
// receiver peeked without it. Peeked messages have no lock token. An empty
// result is an empty slice. maxMessages < 1 or a negative
// FromSequenceNumber is ErrInvalidArgument.
func (r *Receiver) PeekMessages(ctx context.Context, maxMessages int, opts *PeekMessagesOptions) ([]*ReceivedMessage, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	var from int64
	if opts != nil {
		from = opts.FromSequenceNumber
	}
	if maxMessages < 1 {
		return nil, errorf(ErrInvalidArgument, r.describe(), "maxMessages %d is less than 1", maxMessages)
	}
	if from < 0 {
		return nil, errorf(ErrInvalidArgument, r.describe(), "FromSequenceNumber %d is negative", from)
	}
	q, now, err := r.enterReceive(ctx)
	if err != nil {
		return nil, err
	}
	e := r.e
	start := store.Key{Seq: from}
	if from == 0 {
		start = r.cursor
	}
	// Locked messages are in the list of locks, not in the stream: merge
	// them in, in key order (SEMANTICS L12).
	var locked []*store.Message
	for m := e.locks.first(e.arena); m != nil; m = e.locks.next(e.arena, m) {
		if m.Sub == uint8(q.kind) && !m.Key.Less(start) {
			locked = append(locked, m)
		}
	}
	slices.SortFunc(locked, func(a, b *store.Message) int { return compareKeys(a.Key, b.Key) })
	var snaps []snapshot
	add := func(m *store.Message) bool {
		snaps = append(snaps, snap(m, peekState(m.State), obtainedPeeked, nil))
		return len(snaps) < maxMessages
	}
	more := true
	q.stream.Ascend(start, func(m *store.Message) bool {
		for len(locked) > 0 && locked[0].Key.Less(m.Key) {
			more, locked = add(locked[0]), locked[1:]
			if !more {
				return false
			}
		}
		more = add(m)
		return more
	})
	for more && len(locked) > 0 {
		more, locked = add(locked[0]), locked[1:]
	}
	if from == 0 && len(snaps) > 0 {
		r.cursor = nextKey(snaps[len(snaps)-1].key)
	}
	e.touchLocked(now)
	e.mu.Unlock()
	return e.ns.build(snaps), nil
}

func compareKeys(a, b store.Key) int {
	switch {
	case a.Less(b):
		return -1
	case b.Less(a):
		return 1
	}
	return 0
}

func peekState(s store.State) MessageState {
	switch s {
	case store.Deferred:
		return MessageStateDeferred
	case store.Scheduled:
		return MessageStateScheduled
	}
	return MessageStateActive
}

// nextKey is the smallest key after k.
func nextKey(k store.Key) store.Key {
	if k.Copy == ^uint32(0) {
		return store.Key{Seq: k.Seq + 1}
	}
	return store.Key{Seq: k.Seq, Copy: k.Copy + 1}
}

// ReceiveDeferredMessages fetches the deferred messages with the given
// sequence numbers, in the order given (SEMANTICS L9): locked in peek-lock
// mode, removed in receive-and-delete mode. Each fetch is a delivery. If any
// number is not a deferred message of this sub-queue, or is locked right
// now, it returns ErrMessageNotFound and fetches nothing. An empty slice, a
// number < 1 or a number given twice is ErrInvalidArgument.
func (r *Receiver) ReceiveDeferredMessages(ctx context.Context, seqs []int64, opts *ReceiveDeferredMessagesOptions) ([]*ReceivedMessage, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if err := checkSeqs(seqs, r.describe()); err != nil {
		return nil, err
	}
	q, now, err := r.enterReceive(ctx)
	if err != nil {
		return nil, err
	}
	e := r.e
	var found []*store.Message
	for _, seq := range seqs {
		n := len(found)
		q.stream.Ascend(store.Key{Seq: seq}, func(m *store.Message) bool {
			if m.Key.Seq != seq {
				return false
			}
			if m.State == store.Deferred {
				found = append(found, m)
			}
			return true
		})
		if len(found) == n {
			e.mu.Unlock()
			return nil, errorf(ErrMessageNotFound, q.describe(), "sequence number %d is not a deferred message", seq)
		}
	}
	snaps := make([]snapshot, 0, len(found))
	for _, m := range found {
		m.Deliveries++
		if r.mode == ReceiveModePeekLock {
			e.lockLocked(q, m, now)
			m.FromDeferral = true
			snaps = append(snaps, snap(m, MessageStateDeferred, obtainedLocked, q))
		} else {
			q.remove(m)
			snaps = append(snaps, snap(m, MessageStateDeferred, obtainedDeleted, nil))
		}
	}
	e.touchLocked(now)
	e.accessed = now
	e.mu.Unlock()
	return e.ns.build(snaps), nil
}

// checkSeqs checks a list of sequence numbers: not empty, each >= 1, none
// twice.
func checkSeqs(seqs []int64, culprit string) error {
	if len(seqs) == 0 {
		return errorf(ErrInvalidArgument, culprit, "no sequence numbers")
	}
	seen := make(map[int64]struct{}, len(seqs))
	for _, s := range seqs {
		if s < 1 {
			return errorf(ErrInvalidArgument, culprit, "sequence number %d is less than 1", s)
		}
		if _, dup := seen[s]; dup {
			return errorf(ErrInvalidArgument, culprit, "sequence number %d is given twice", s)
		}
		seen[s] = struct{}{}
	}
	return nil
}

// Close closes the receiver: its blocked calls return ErrClosed, and so do
// later calls. Its locks are kept and expire normally (SEMANTICS L11); other
// receivers of the entity can still settle them. Close is idempotent and
// returns nil; ctx is not used.
func (r *Receiver) Close(ctx context.Context) error {
	if r == nil || r.e == nil {
		return nil
	}
	r.closeOnce.Do(func() {
		r.closed.Store(true)
		close(r.done)
	})
	return nil
}
