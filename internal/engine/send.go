package engine

import (
	"context"
	"strconv"

	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
)

// Send enqueues or schedules recs, the caller's checked copies of the
// messages of one call, all or none (SEMANTICS V3): at is the time
// ScheduleMessages gives, or store.Unset to use each message's own
// ScheduledEnqueueTime. It returns their sequence numbers when seqs is set.
func (e *Entity) Send(ctx context.Context, recs []*store.Message, at int64, seqs bool) (_ []int64, err error) {
	op := OpSend
	if at != store.Unset {
		op = OpSchedule
	}
	c := e.call(op)
	c.need = needSend
	defer c.exit(&err)
	now, err := c.enter(ctx)
	if err != nil {
		return nil, err
	}
	if at != store.Unset {
		for _, m := range recs {
			m.Scheduled = at
		}
	}
	if err := e.checkSizesLocked(recs); err != nil {
		return nil, err
	}
	enc, err := e.sendRecLocked(recs, now)
	if err != nil {
		return nil, err
	}
	var out []int64
	if seqs {
		out = make([]int64, len(recs))
	}
	if err := e.sendLocked(recs, now, out, enc); err != nil {
		return nil, err
	}
	return out, nil
}

// sendRecLocked returns the record of a send of recs at now (nil when the
// broker keeps no journal), built before sendLocked changes them, or
// ErrMessageTooLarge when it would pass the journal's limit: then nothing
// changed (SEMANTICS V3). Bodies are kept in the record as they are, so
// their sum is a bound that refuses a batch far over the limit before
// any of it is encoded.
func (e *Entity) sendRecLocked(recs []*store.Message, now int64) (*encoder, error) {
	if !e.journaled() {
		return nil, nil
	}
	what := func() string {
		if len(recs) == 1 {
			return "the message"
		}
		return "the batch of " + strconv.Itoa(len(recs)) + " messages"
	}
	var bodies int64
	for _, m := range recs {
		bodies += int64(len(m.Body))
	}
	if bodies > int64(e.b.dur.maxRecord) {
		return nil, e.errRecord(errs.ErrMessageTooLarge, what()+" (their bodies alone)", bodies, true)
	}
	r := sendRecord{at: now, msgs: recs}
	var encoded int
	enc := e.begin(r.kind(), func(enc *encoder) { encoded = r.encodeWithin(enc, e.b.dur.maxRecord) })
	if n := len(enc.b); n > e.b.dur.maxRecord {
		enc.drop()
		return nil, e.errRecord(errs.ErrMessageTooLarge, what(), int64(n), encoded < len(recs))
	}
	return enc, nil
}

// sendLocked accepts recs, sent at now, all or none: duplicates dropped
// (SEMANTICS DD1), the rest enqueued or scheduled, their sequence numbers
// in seqs when it is not nil (0 for a duplicate). Once they are accepted it
// appends enc, the call's record (nil: none); for a topic before the
// subscriptions are unlocked (publishLocked).
func (e *Entity) sendLocked(recs []*store.Message, now int64, seqs []int64, enc *encoder) error {
	kept, ids := e.dedupLocked(recs, now)
	out := seqs
	if seqs != nil && len(kept) < len(recs) {
		out = make([]int64, len(kept))
	}
	var err error
	if e.kind == KindTopic {
		if err = e.publishLocked(kept, now, out, enc); err == nil {
			for _, m := range kept {
				store.Recycle(m) // the topic's hold on what its copies share, unless it keeps m (scheduled)
			}
		}
	} else if err = e.acceptAllLocked(kept, now, out); err == nil {
		e.commit(enc)
	}
	if err != nil {
		return err
	}
	e.recordLocked(ids, now)
	if seqs != nil && len(kept) < len(recs) {
		copy(seqs, spread(recs, kept, out))
	}
	e.touchLocked(now)
	e.accessed = now
	e.rescheduleIdleLocked()
	return nil
}

// spread gives each of recs its number in seqs, the numbers of kept, a
// subsequence of recs: 0 for a dropped duplicate (SEMANTICS DD1).
func spread(recs, kept []*store.Message, seqs []int64) []int64 {
	out := make([]int64, len(recs))
	j := 0
	for i, m := range recs {
		if j < len(kept) && kept[j] == m {
			out[i] = seqs[j]
			j++
		}
	}
	return out
}

// checkSizesLocked checks the message sizes of a batch (SEMANTICS V3).
func (e *Entity) checkSizesLocked(recs []*store.Message) error {
	for i, m := range recs {
		if size := m.Size(); size > e.cfg.maxMessageSize() {
			return errTooLarge(e, "message "+strconv.Itoa(i), size, m.MessageID == "")
		}
		if e.sessions != nil && m.SessionID == "" {
			return errs.Errorf(errs.ErrInvalidArgument, e.describe(), "message %d has no SessionID and the %s requires sessions", i, e.kind)
		}
	}
	return nil
}

// acceptAllLocked accepts a batch sent to a queue within its quota.
func (e *Entity) acceptAllLocked(recs []*store.Message, now int64, seqs []int64) error {
	var total int64
	for _, m := range recs {
		total += m.Size()
	}
	if !e.quota.Fits(total) {
		return errQuota(e, total, "")
	}
	for i, m := range recs {
		seq := e.acceptLocked(m, now)
		if seqs != nil {
			seqs[i] = seq
		}
	}
	return nil
}

// Cancel deletes pending scheduled messages, all or none (SEMANTICS S3): a
// number that is not one is ErrMessageNotFound. The caller has checked the
// numbers.
func (e *Entity) Cancel(ctx context.Context, seqs []int64) (err error) {
	c := e.call(OpCancelScheduled)
	c.need = needSend
	defer c.exit(&err)
	now, err := c.enter(ctx)
	if err != nil {
		return err
	}
	found := make([]*store.Message, len(seqs))
	for i, seq := range seqs {
		m := e.st.Get(store.Main, store.Key{Seq: seq})
		if m == nil || m.State() != store.Scheduled {
			return errs.Errorf(errs.ErrMessageNotFound, e.describe(), "sequence number %d is not a pending scheduled message", seq)
		}
		found[i] = m
	}
	rec := cancelRecord{at: now, seqs: seqs}
	if enc := e.begin(rec.kind(), rec.encode); enc != nil {
		if err := e.recordTooLarge(enc, errs.ErrInvalidArgument, strconv.Itoa(len(seqs))+" sequence numbers"); err != nil {
			return err
		}
		e.commit(enc)
	}
	e.cancelAllLocked(found, now)
	return nil
}

// cancelAllLocked deletes the scheduled messages found at now (SEMANTICS
// S3).
func (e *Entity) cancelAllLocked(found []*store.Message, now int64) {
	for _, m := range found {
		e.cancelLocked(m, now)
	}
	e.touchLocked(now)
	e.rescheduleLocked() // the idle deadline may return (SEMANTICS A2)
}

// DuplicateHistory returns how many MessageIDs the entity remembers for
// duplicate detection, as of now.
func (e *Entity) DuplicateHistory() int {
	c := e.call(noFault)
	c.end = endLeave
	defer c.exit(nil)
	if _, err := c.enter(noContext); err != nil {
		return 0
	}
	if e.dups == nil {
		return 0
	}
	return e.dups.Len()
}
