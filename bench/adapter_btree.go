package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/btree"
)

// BtreePeer is what a lean but correct peek-lock queue costs: one mutex, the
// available messages in a google/btree BTreeG by sequence number, the locked
// ones in a second BTreeG by lock token, and scheduled ones in a third by
// (due time, sequence number). No TTL, no dead-letter queue, no delivery
// count, no copy of the body (the queue keeps the sender's slice).
//
// Locks last one minute (Service Bus's default). Tokens are issued in increasing order and
// every lock lasts as long, so token order is lock-deadline order on the
// monotonic clock: the smallest token is the next lock to expire, and one
// tree serves both complete-by-token and expiry. Every call first returns
// expired locks to the available tree and activates due scheduled messages.
// A receive waits on a per-receiver channel that a send signals; when locks
// or schedules are pending it also wakes at the earliest of their deadlines.
//
// Its topic is one such queue per subscription, a send inserting the same
// body into each; its filtered topic (the scaling set) calls a Go func per
// subscription to choose them. Many queues (the scaling set) are that many
// such queues in a map by name.
type BtreePeer struct{}

// btreeLockDuration is the lock duration of the btree baseline, Service Bus's
// default.
const btreeLockDuration = time.Minute

// Name implements [Peer].
func (BtreePeer) Name() string { return "btree" }

// OpenQueue implements [Peer].
func (BtreePeer) OpenQueue(ctx context.Context, cfg Config) (Queue, error) {
	return newBtreeQueue(), nil
}

// OpenTopic implements [TopicPeer].
func (BtreePeer) OpenTopic(ctx context.Context, cfg Config, subs int) (Topic, error) {
	t := &btreeTopic{subs: make([]*btreeQueue, subs)}
	for i := range t.subs {
		t.subs[i] = newBtreeQueue()
	}
	return t, nil
}

// btreeEntry keys a message in the available tree (by sequence number) or the
// locked tree (by lock token). Values, not pointers, so that a lookup key
// costs no allocation.
type btreeEntry struct {
	key uint64
	msg *btreeMsg
}

// btreeDue keys a scheduled message by due time, then sequence number, so
// that two messages due at once are two entries.
type btreeDue struct {
	due int64 // nanoseconds since the queue's epoch
	seq uint64
	msg *btreeMsg
}

type btreeMsg struct {
	body        []byte
	lockedUntil int64 // nanoseconds since the queue's epoch; 0 unless locked
}

func lessEntry(a, b btreeEntry) bool { return a.key < b.key }

func lessDue(a, b btreeDue) bool {
	if a.due != b.due {
		return a.due < b.due
	}
	return a.seq < b.seq
}

type btreeQueue struct {
	epoch        time.Time     // monotonic base of every deadline
	lockDuration time.Duration // btreeLockDuration; shorter in tests

	mu        sync.Mutex
	seq       uint64
	token     uint64
	available *btree.BTreeG[btreeEntry] // by sequence number
	locked    *btree.BTreeG[btreeEntry] // by lock token = by lock deadline
	scheduled *btree.BTreeG[btreeDue]   // by (due, sequence number)
	waiters   []chan struct{}           // receivers blocked in Receive, oldest first
	closed    bool
}

func newBtreeQueue() *btreeQueue {
	return &btreeQueue{
		epoch:        time.Now(),
		lockDuration: btreeLockDuration,
		available:    btree.NewG(32, lessEntry),
		locked:       btree.NewG(32, lessEntry),
		scheduled:    btree.NewG(32, lessDue),
	}
}

func (q *btreeQueue) now() int64 { return int64(time.Since(q.epoch)) }

// catchUpLocked returns expired locks to the available tree and activates
// due scheduled messages, each with a new sequence number.
func (q *btreeQueue) catchUpLocked(now int64) {
	for {
		e, ok := q.locked.Min()
		if !ok || e.msg.lockedUntil > now {
			break
		}
		q.locked.DeleteMin()
		e.msg.lockedUntil = 0
		q.seq++
		q.available.ReplaceOrInsert(btreeEntry{key: q.seq, msg: e.msg})
	}
	for {
		d, ok := q.scheduled.Min()
		if !ok || d.due > now {
			break
		}
		q.scheduled.DeleteMin()
		q.seq++
		q.available.ReplaceOrInsert(btreeEntry{key: q.seq, msg: d.msg})
	}
}

// nextDeadlineLocked is the earliest lock expiry or due time, or 0 if none.
func (q *btreeQueue) nextDeadlineLocked() int64 {
	var next int64
	if e, ok := q.locked.Min(); ok {
		next = e.msg.lockedUntil
	}
	if d, ok := q.scheduled.Min(); ok && (next == 0 || d.due < next) {
		next = d.due
	}
	return next
}

// signalLocked wakes the oldest blocked receiver, if any.
func (q *btreeQueue) signalLocked() {
	if len(q.waiters) == 0 {
		return
	}
	w := q.waiters[0]
	q.waiters[0] = nil
	q.waiters = q.waiters[1:]
	select {
	case w <- struct{}{}:
	default:
	}
}

func (q *btreeQueue) removeWaiterLocked(w chan struct{}) {
	for i, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			return
		}
	}
}

func (q *btreeQueue) Send(ctx context.Context, body []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errClosed
	}
	q.catchUpLocked(q.now())
	q.seq++
	q.available.ReplaceOrInsert(btreeEntry{key: q.seq, msg: &btreeMsg{body: body}})
	q.signalLocked()
	return nil
}

// Schedule implements [Scheduler].
func (q *btreeQueue) Schedule(ctx context.Context, body []byte, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errClosed
	}
	now := q.now()
	q.catchUpLocked(now)
	q.seq++
	m := &btreeMsg{body: body}
	due := int64(at.Sub(q.epoch))
	if due <= now {
		q.available.ReplaceOrInsert(btreeEntry{key: q.seq, msg: m})
		q.signalLocked()
		return nil
	}
	q.scheduled.ReplaceOrInsert(btreeDue{due: due, seq: q.seq, msg: m})
	return nil
}

// Count implements [Counter].
func (q *btreeQueue) Count(ctx context.Context) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.catchUpLocked(q.now())
	return int64(q.available.Len() + q.locked.Len() + q.scheduled.Len()), nil
}

func (q *btreeQueue) NewReceiver(ctx context.Context) (Receiver, error) {
	return &btreeReceiver{q: q, wake: make(chan struct{}, 1)}, nil
}

func (q *btreeQueue) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for len(q.waiters) > 0 {
		q.signalLocked()
	}
	return nil
}

type btreeReceiver struct {
	q     *btreeQueue
	wake  chan struct{} // signalled by a send while this receiver waits
	timer *time.Timer   // wakes a wait at the next lock expiry or due time
}

func (r *btreeReceiver) Receive(ctx context.Context, max int, buf []Delivery) ([]Delivery, error) {
	q := r.q
	buf = buf[:0]
	q.mu.Lock()
	for {
		if q.closed {
			q.mu.Unlock()
			return buf, errClosed
		}
		now := q.now()
		q.catchUpLocked(now)
		if q.available.Len() > 0 {
			until := now + int64(q.lockDuration)
			for len(buf) < max {
				e, ok := q.available.DeleteMin()
				if !ok {
					break
				}
				q.token++
				e.msg.lockedUntil = until
				q.locked.ReplaceOrInsert(btreeEntry{key: q.token, msg: e.msg})
				buf = append(buf, Delivery{Body: e.msg.body, id: q.token})
			}
			if q.available.Len() > 0 {
				q.signalLocked() // leave the rest to the next waiter
			}
			q.mu.Unlock()
			return buf, nil
		}
		var timeout <-chan time.Time
		if next := q.nextDeadlineLocked(); next != 0 {
			if r.timer == nil {
				r.timer = time.NewTimer(time.Duration(next - now))
			} else {
				r.timer.Reset(time.Duration(next - now))
			}
			timeout = r.timer.C
		}
		q.waiters = append(q.waiters, r.wake)
		q.mu.Unlock()
		select {
		case <-r.wake:
		case <-timeout:
		case <-ctx.Done():
			q.mu.Lock()
			q.removeWaiterLocked(r.wake)
			select {
			case <-r.wake: // a send chose us as we gave up: pass it on
				q.signalLocked()
			default:
			}
			q.mu.Unlock()
			return buf, ctx.Err()
		}
		if r.timer != nil {
			r.timer.Stop()
		}
		q.mu.Lock()
		q.removeWaiterLocked(r.wake) // woken by the timer: still listed
		select {
		case <-r.wake:
		default:
		}
	}
}

func (r *btreeReceiver) Complete(ctx context.Context, d Delivery) error {
	q := r.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errClosed
	}
	q.catchUpLocked(q.now())
	if _, ok := q.locked.Delete(btreeEntry{key: d.id}); !ok {
		return fmt.Errorf("bench: btree: lock token %d: lock lost", d.id)
	}
	return nil
}

func (r *btreeReceiver) Close() error {
	if r.timer != nil {
		r.timer.Stop()
	}
	return nil
}

type btreeTopic struct{ subs []*btreeQueue }

func (t *btreeTopic) Send(ctx context.Context, body []byte) error {
	for _, s := range t.subs {
		if err := s.Send(ctx, body); err != nil {
			return err
		}
	}
	return nil
}

func (t *btreeTopic) NewReceiver(ctx context.Context, sub int) (Receiver, error) {
	return t.subs[sub].NewReceiver(ctx)
}

func (t *btreeTopic) Close() error {
	for _, s := range t.subs {
		s.Close()
	}
	return nil
}

// OpenFilteredTopic implements [FilteredTopicPeer]: subs btree queues, each
// with a Go func(k int) bool as its filter (true for MatchAll, k == i for
// MatchOneCorrelation); a send calls every filter in turn and inserts the
// body into each queue whose filter matches. It has no filter language:
// MatchOneSQL is ErrNotSupported.
func (BtreePeer) OpenFilteredTopic(ctx context.Context, subs int, m Match) (FilteredTopic, error) {
	if m == MatchOneSQL {
		return nil, fmt.Errorf("btree has no SQL filters: %w", ErrNotSupported)
	}
	t := &btreeFilteredTopic{btreeTopic: btreeTopic{subs: make([]*btreeQueue, subs)}, filters: make([]func(int) bool, subs)}
	for i := range t.subs {
		t.subs[i] = newBtreeQueue()
		if m == MatchAll {
			t.filters[i] = func(int) bool { return true }
		} else {
			t.filters[i] = func(k int) bool { return k == i }
		}
	}
	return t, nil
}

type btreeFilteredTopic struct {
	btreeTopic
	filters []func(k int) bool
}

func (t *btreeFilteredTopic) Send(ctx context.Context, body []byte, k int) error {
	for i, s := range t.subs {
		if !t.filters[i](k) {
			continue
		}
		if err := s.Send(ctx, body); err != nil {
			return err
		}
	}
	return nil
}

// OpenQueues implements [QueueSetPeer]: n btree queues in a map by name, as
// a namespace would hold them.
func (BtreePeer) OpenQueues(ctx context.Context, n int) (QueueSet, error) {
	s := &btreeQueueSet{byName: make(map[string]*btreeQueue, n), qs: make([]*btreeQueue, n)}
	for i := range s.qs {
		q := newBtreeQueue()
		s.byName[fmt.Sprintf("q%d", i)] = q
		s.qs[i] = q
	}
	return s, nil
}

type btreeQueueSet struct {
	byName map[string]*btreeQueue
	qs     []*btreeQueue
}

func (s *btreeQueueSet) Queue(i int) Queue { return s.qs[i] }

func (s *btreeQueueSet) Close() error {
	for _, q := range s.qs {
		q.Close()
	}
	return nil
}
