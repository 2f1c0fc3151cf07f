package minibus

import (
	"context"

	"github.com/minibus-go/minibus/internal/store"
)

// scheduleLocked stores m, already numbered, as Scheduled until m.Scheduled
// (SEMANTICS S1, S2). Its EnqueuedTime and ExpiresAt read as they will be at
// activation (Q3, E2).
func (e *entity) scheduleLocked(m *store.Message) {
	m.State = store.Scheduled
	m.Enqueued = m.Scheduled
	m.Expires = addSat(m.Scheduled, effectiveTTL(m.TTL, e.cfg.ttl))
	e.sub[SubQueueNone].add(m)
	e.setDueLocked(m, m.Scheduled)
}

// activateLocked enqueues the scheduled message m at its time at (SEMANTICS
// S4): it gets a new sequence number (Q1), EnqueuedTime = at and ExpiresAt
// counted from at.
// A topic copies it to its subscriptions then (S5).
func (e *entity) activateLocked(m *store.Message, at int64) {
	q := e.sub[SubQueueNone]
	q.remove(m)
	e.lastActivation = at
	e.seq++
	m.Key = store.Key{Seq: e.seq}
	if e.kind == kindTopic {
		e.fanOutLocked(m, at)
		return
	}
	e.enqueueLocked(q, m, at, e.cfg.ttl)
}

// cancelScheduled deletes pending scheduled messages, all or none
// (SEMANTICS S3).
func (e *entity) cancelScheduled(ctx context.Context, seqs []int64) error {
	if err := checkSeqs(seqs, e.describe()); err != nil {
		return err
	}
	now, err := e.begin(ctx)
	if err != nil {
		return err
	}
	if err := e.enter(now); err != nil {
		return err
	}
	defer e.mu.Unlock()
	if !e.cfg.status.canSend() {
		return errorf(ErrEntityDisabled, e.describe(), "status %v refuses sends", e.cfg.status)
	}
	q := e.sub[SubQueueNone]
	found := make([]*store.Message, len(seqs))
	for i, seq := range seqs {
		m := q.stream.Get(store.Key{Seq: seq})
		if m == nil || m.State != store.Scheduled {
			return errorf(ErrMessageNotFound, e.describe(), "sequence number %d is not a pending scheduled message", seq)
		}
		found[i] = m
	}
	for _, m := range found {
		e.setDueLocked(m, store.Never)
		q.remove(m)
		store.Recycle(m)
	}
	e.touchLocked(now)
	e.rescheduleLocked() // the idle deadline may return (SEMANTICS A2)
	return nil
}
