package minibus

import (
	"context"
	"strconv"
	"time"

	"github.com/minibus-go/minibus/internal/store"
)

// Queue is a handle to a queue. Get one from [Namespace.CreateQueue] or
// [Namespace.Queue]. Handles stay valid until the queue is deleted (by
// DeleteQueue or on idle, SEMANTICS A3); then every call returns ErrNotFound,
// even if a new queue of the same name is created. A Queue is safe for
// concurrent use.
type Queue struct {
	e *entity
}

// QueueRuntimeProperties are a queue's counts and times (SEMANTICS L13).
// Counts are exact at the instant they are read (SEMANTICS T3).
type QueueRuntimeProperties struct {
	// ActiveMessageCount counts available, locked and deferred messages.
	ActiveMessageCount int64
	// ScheduledMessageCount counts scheduled messages not yet active.
	ScheduledMessageCount int64
	// DeadLetterMessageCount counts the dead-letter queue's messages.
	DeadLetterMessageCount int64
	// TransferMessageCount counts messages waiting to be forwarded: always 0,
	// as minibus forwards at once.
	TransferMessageCount int64
	// TransferDeadLetterMessageCount counts the transfer dead-letter queue's
	// messages.
	TransferDeadLetterMessageCount int64
	// TotalMessageCount is the sum of the counts above.
	TotalMessageCount int64
	// SizeInBytes is the total size of the queue's messages (SEMANTICS V3).
	SizeInBytes int64
	// CreatedAt is when the queue was created, UpdatedAt when its properties
	// last changed, AccessedAt when it last took a send or a receive.
	CreatedAt, UpdatedAt, AccessedAt time.Time
}

func queueCulprit(name string) string { return "queue " + strconv.Quote(name) }

// CreateQueue creates a queue. props may be nil: every property then has its
// default. It returns ErrInvalidArgument for a bad name (SEMANTICS V1) or
// property (V2), and ErrAlreadyExists when a queue or topic has the name
// already (names are case-insensitive and shared by queues and topics).
func (ns *Namespace) CreateQueue(name string, props *QueueProperties) (*Queue, error) {
	if err := checkEntityName("queue", name); err != nil {
		return nil, err
	}
	var p QueueProperties
	if props != nil {
		p = *props
	}
	p, err := p.withDefaults(queueCulprit(name))
	if err != nil {
		return nil, err
	}
	e, err := ns.create(kindQueue, name, p.cfg(), p)
	if err != nil {
		return nil, err
	}
	return &Queue{e}, nil
}

// create adds a queue or topic whose name and properties were checked.
func (ns *Namespace) create(kind entityKind, name string, c cfg, props any) (*entity, error) {
	now, err := ns.begin()
	if err != nil {
		return nil, err
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.closed.Load() {
		return nil, errClosed
	}
	if old := ns.lookupLocked(name); old != nil {
		return nil, errorf(ErrAlreadyExists, old.describe(), "")
	}
	e := newEntity(ns, kind, name, c, now)
	e.props = props
	ns.entities[nameKey(name)] = e
	ns.log.Info("minibus: created", "entity", e.describe())
	return e, nil
}

// Queue returns a handle to the queue named name (case-insensitive), or
// ErrNotFound.
func (ns *Namespace) Queue(name string) (*Queue, error) {
	e, err := ns.find(kindQueue, name)
	if err != nil {
		return nil, err
	}
	return &Queue{e}, nil
}

// find returns the live entity of kind named name, or ErrNotFound.
func (ns *Namespace) find(kind entityKind, name string) (*entity, error) {
	if _, err := ns.begin(); err != nil {
		return nil, err
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	e := ns.lookupLocked(name)
	if e == nil || e.kind != kind {
		return nil, errorf(ErrNotFound, kind.String()+" "+strconv.Quote(name), "")
	}
	return e, nil
}

// UpdateQueue replaces the properties of the queue named name with props,
// defaults filled in for zero fields, and returns its handle. Messages and
// locks are kept; a new LockDuration or DefaultMessageTimeToLive applies to
// later locks and messages. RequiresSession and RequiresDuplicateDetection
// cannot change (ErrInvalidArgument, SEMANTICS V2). An update is activity
// (A2). Receivers blocked on the queue wake and see a new Status.
func (ns *Namespace) UpdateQueue(name string, props QueueProperties) (*Queue, error) {
	e, err := ns.find(kindQueue, name)
	if err != nil {
		return nil, err
	}
	p, err := props.withDefaults(e.describe())
	if err != nil {
		return nil, err
	}
	now, err := ns.begin()
	if err != nil {
		return nil, err
	}
	if err := e.enter(now); err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	old := e.props.(QueueProperties)
	if p.RequiresSession != old.RequiresSession {
		return nil, errorf(ErrInvalidArgument, e.describe(), "RequiresSession cannot change after creation")
	}
	if p.RequiresDuplicateDetection != old.RequiresDuplicateDetection {
		return nil, errorf(ErrInvalidArgument, e.describe(), "RequiresDuplicateDetection cannot change after creation")
	}
	e.props = p
	e.updateLocked(p.cfg(), now)
	return &Queue{e}, nil
}

// updateLocked applies new settings: an update is activity (A2), and blocked
// receivers wake to see a new status.
func (e *entity) updateLocked(c cfg, now int64) {
	e.cfg = c
	e.updated = now
	e.touchLocked(now)
	for _, q := range e.sub {
		if q != nil {
			q.waiters.wakeAll()
		}
	}
	e.rescheduleLocked()
	e.ns.log.Info("minibus: updated", "entity", e.describe())
}

// DeleteQueue deletes the queue named name and all its messages. Its handles
// and receivers return ErrNotFound from then on; blocked receives return
// ErrNotFound at once. The name is free again.
func (ns *Namespace) DeleteQueue(name string) error {
	return ns.deleteEntity(kindQueue, name)
}

func (ns *Namespace) deleteEntity(kind entityKind, name string) error {
	if _, err := ns.begin(); err != nil {
		return err
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	e := ns.lookupLocked(name)
	if e == nil || e.kind != kind {
		return errorf(ErrNotFound, kind.String()+" "+strconv.Quote(name), "")
	}
	e.mu.Lock()
	e.deleteLocked()
	e.mu.Unlock()
	delete(ns.entities, nameKey(name))
	ns.log.Info("minibus: deleted", "entity", e.describe())
	return nil
}

// Queues returns the names of the namespace's queues, sorted, as they were
// created.
func (ns *Namespace) Queues() []string { return ns.names(kindQueue) }

// Name returns the queue's name as it was created.
func (q *Queue) Name() string {
	if q == nil || q.e == nil {
		return ""
	}
	return q.e.name
}

// Properties returns the queue's properties with defaults filled in.
func (q *Queue) Properties() QueueProperties {
	if q == nil || q.e == nil {
		return QueueProperties{}
	}
	q.e.mu.Lock()
	defer q.e.mu.Unlock()
	return q.e.props.(QueueProperties)
}

// RuntimeProperties returns the queue's counts as of now (SEMANTICS L13,
// T3). A deleted queue reads all zero counts.
func (q *Queue) RuntimeProperties() QueueRuntimeProperties {
	if q == nil || q.e == nil {
		return QueueRuntimeProperties{}
	}
	e := q.e
	if _, err := e.lock(); err != nil {
		return QueueRuntimeProperties{}
	}
	defer e.mu.Unlock()
	main, dlq, tdlq := e.sub[SubQueueNone], e.sub[SubQueueDeadLetter], e.sub[SubQueueTransfer]
	rp := QueueRuntimeProperties{
		ActiveMessageCount:             main.count[store.Available] + main.count[store.Locked] + main.count[store.Deferred],
		ScheduledMessageCount:          main.count[store.Scheduled],
		DeadLetterMessageCount:         dlq.total(),
		TransferDeadLetterMessageCount: tdlq.total(),
		SizeInBytes:                    e.sizeLocked(),
		CreatedAt:                      e.ns.toTime(e.created),
		UpdatedAt:                      e.ns.toTime(e.updated),
		AccessedAt:                     e.ns.toTime(e.accessed),
	}
	rp.TotalMessageCount = rp.ActiveMessageCount + rp.ScheduledMessageCount + rp.DeadLetterMessageCount +
		rp.TransferMessageCount + rp.TransferDeadLetterMessageCount
	return rp
}

// entity returns the queue's entity, or an error for a nil handle.
func (q *Queue) entity() (*entity, error) {
	if q == nil || q.e == nil {
		return nil, errorf(ErrInvalidArgument, "queue", "nil *Queue")
	}
	return q.e, nil
}

// SendMessage sends one message (SEMANTICS Q1, S1). It returns once the
// message is in the queue, or an error and the queue is unchanged:
// ErrInvalidArgument for a bad message, ErrMessageTooLarge, ErrQuotaExceeded,
// ErrEntityDisabled, ErrNotFound, ErrClosed, or ctx's error if ctx is done
// before the call starts. A message with ScheduledEnqueueTime after now is
// scheduled.
func (q *Queue) SendMessage(ctx context.Context, msg *Message, opts *SendMessageOptions) error {
	e, err := q.entity()
	if err != nil {
		return err
	}
	one := [1]*Message{msg}
	_, err = e.send(ctx, one[:], store.Unset, false)
	return err
}

// SendMessages sends msgs in order, all or none (SEMANTICS V3): on any error
// nothing was enqueued. An empty slice is ErrInvalidArgument.
func (q *Queue) SendMessages(ctx context.Context, msgs []*Message, opts *SendMessageOptions) error {
	e, err := q.entity()
	if err != nil {
		return err
	}
	_, err = e.send(ctx, msgs, store.Unset, false)
	return err
}

// ScheduleMessages schedules msgs for at, all or none, and returns their
// sequence numbers, valid for CancelScheduledMessages while the messages are
// scheduled (SEMANTICS S1, Q1). A time at or before now enqueues them at
// once. An empty slice is ErrInvalidArgument.
func (q *Queue) ScheduleMessages(ctx context.Context, msgs []*Message, at time.Time, opts *ScheduleMessagesOptions) ([]int64, error) {
	e, err := q.entity()
	if err != nil {
		return nil, err
	}
	return e.send(ctx, msgs, nanos(at), true)
}

// CancelScheduledMessages deletes pending scheduled messages (SEMANTICS S3).
// If any number is not a pending scheduled message of this queue it returns
// ErrMessageNotFound and cancels nothing. An empty slice is
// ErrInvalidArgument.
func (q *Queue) CancelScheduledMessages(ctx context.Context, seqs []int64, opts *CancelScheduledMessagesOptions) error {
	e, err := q.entity()
	if err != nil {
		return err
	}
	return e.cancelScheduled(ctx, seqs)
}

// NewReceiver returns a receiver for the queue, or for its dead-letter or
// transfer dead-letter queue (opts.SubQueue). opts may be nil: a peek-lock
// receiver on the queue itself.
func (q *Queue) NewReceiver(opts *ReceiverOptions) (*Receiver, error) {
	e, err := q.entity()
	if err != nil {
		return nil, err
	}
	return e.newReceiver(opts)
}

// AcceptSession is for session-enabled queues, which minibus does not
// support yet: it returns ErrInvalidArgument (SEMANTICS SS1).
func (q *Queue) AcceptSession(ctx context.Context, sessionID string, opts *SessionReceiverOptions) (*SessionReceiver, error) {
	e, err := q.entity()
	if err != nil {
		return nil, err
	}
	return nil, errorf(ErrInvalidArgument, e.describe(), "the queue does not require sessions")
}

// AcceptNextSession is for session-enabled queues, which minibus does not
// support yet: it returns ErrInvalidArgument (SEMANTICS SS1).
func (q *Queue) AcceptNextSession(ctx context.Context, opts *SessionReceiverOptions) (*SessionReceiver, error) {
	e, err := q.entity()
	if err != nil {
		return nil, err
	}
	return nil, errorf(ErrInvalidArgument, e.describe(), "the queue does not require sessions")
}

func (q *subQueue) total() int64 {
	var n int64
	for _, c := range q.count {
		n += c
	}
	return n
}
