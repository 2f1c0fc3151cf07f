package minibus

import (
	"context"

	"github.com/minibus-go/minibus/internal/store"
)

// send enqueues or schedules msgs, all or none (SEMANTICS V3). at is the
// ScheduleMessages time, or store.Unset to use each message's own
// ScheduledEnqueueTime. With wantSeqs it returns the sequence numbers.
func (e *entity) send(ctx context.Context, msgs []*Message, at int64, wantSeqs bool) ([]int64, error) {
	if len(msgs) == 0 {
		return nil, errorf(ErrInvalidArgument, e.describe(), "no messages")
	}
	// Copy and check every message before taking the lock (SEMANTICS V4).
	var one [1]*store.Message
	recs := one[:]
	if len(msgs) > 1 {
		recs = make([]*store.Message, len(msgs))
	}
	for i, msg := range msgs {
		m, err := newRecord(e, msg, i)
		if err != nil {
			return nil, err
		}
		if at != store.Unset {
			m.Scheduled = at
		}
		recs[i] = m
	}
	now, err := e.begin(ctx)
	if err != nil {
		return nil, err
	}
	if err := e.enter(now); err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	if err := e.checkSendLocked(recs); err != nil {
		return nil, err
	}
	var seqs []int64
	if e.kind == kindTopic {
		if seqs, err = e.publishLocked(recs, now, wantSeqs); err != nil {
			return nil, err
		}
	} else {
		if wantSeqs {
			seqs = make([]int64, len(recs))
		}
		if size := e.sizeLocked(); size+batchSize(recs) > e.cfg.maxSize {
			return nil, errorf(ErrQuotaExceeded, e.describe(), "size %d bytes plus %d bytes would pass MaxSizeInMegabytes (%d bytes)", size, batchSize(recs), e.cfg.maxSize)
		}
		for i, m := range recs {
			e.acceptLocked(m, now)
			if wantSeqs {
				seqs[i] = m.Key.Seq
			}
		}
	}
	e.touchLocked(now)
	e.accessed = now
	e.rescheduleIdleLocked()
	return seqs, nil
}

func batchSize(recs []*store.Message) int64 {
	var n int64
	for _, m := range recs {
		n += m.Size
	}
	return n
}

// checkSendLocked checks status and message sizes for a batch (SEMANTICS
// V3, V5); the quota check is the queue's or the topic's own.
func (e *entity) checkSendLocked(recs []*store.Message) error {
	if !e.cfg.status.canSend() {
		return errorf(ErrEntityDisabled, e.describe(), "status %v refuses sends", e.cfg.status)
	}
	for i, m := range recs {
		if m.Size > e.cfg.maxMessageSize {
			return errorf(ErrMessageTooLarge, e.describe(), "message %d is %d bytes, more than MaxMessageSizeInKilobytes (%d bytes)", i, m.Size, e.cfg.maxMessageSize)
		}
	}
	return nil
}

// acceptLocked numbers m, sent to a queue (SEMANTICS Q1), and either
// schedules it (S1) or enqueues it now.
func (e *entity) acceptLocked(m *store.Message, now int64) {
	e.seq++
	m.Key = store.Key{Seq: e.seq}
	if m.Scheduled != store.Unset && m.Scheduled > now {
		e.scheduleLocked(m)
		return
	}
	e.enqueueLocked(e.sub[SubQueueNone], m, now, e.cfg.ttl)
}

// enqueueLocked makes m available in q at instant at: EnqueuedTime = at
// (Q3), ExpiresAt = at + effective TTL (E1, E2), and wakes one receiver.
// ttlCap is the entity's (and topic's) DefaultMessageTimeToLive.
func (e *entity) enqueueLocked(q *subQueue, m *store.Message, at, ttlCap int64) {
	ttl := effectiveTTL(m.TTL, ttlCap)
	m.Enqueued = at
	m.Expires = addSat(at, ttl)
	m.TTL = 0
	if ttl != store.Never {
		m.TTL = ttl
	}
	m.State = store.Available
	q.add(m)
	if m.Expires != store.Never {
		e.setDueLocked(m, m.Expires)
	}
	q.waiters.wake(1)
}

// rescheduleIdleLocked moves the idle deadline after an activity. The
// scheduler's bound is a lower bound, so a later idle deadline needs no
// registration; only a first one does (an entity with nothing else due).
func (e *entity) rescheduleIdleLocked() {
	if e.cfg.autoDelete != store.Never && e.localNext == store.Never {
		e.rescheduleLocked()
	}
}
