package engine

import (
	"github.com/minibus-go/minibus/internal/store"
)

// Duplicate detection (SEMANTICS DD1): an entity's dupHistory (its type is
// with the entity's state, entity.go) remembers the MessageIDs accepted
// within the window, pruned as the catch-up passes their ends.

// seen reports whether id was accepted within the window at now: at the
// window's end a resend is new (T2).
func (h *dupHistory) seen(id string, now int64) bool {
	u, ok := h.until[id]
	return ok && now < u
}

// add remembers id until until.
func (h *dupHistory) add(id string, until int64) {
	h.until[id] = until
	h.order = append(h.order, dupEntry{id, until})
}

// prune forgets the ids whose window ended at or before now.
func (h *dupHistory) prune(now int64) {
	for h.head < len(h.order) && h.order[h.head].until <= now {
		x := h.order[h.head]
		if h.until[x.id] == x.until {
			delete(h.until, x.id)
		}
		h.order[h.head] = dupEntry{}
		h.head++
	}
	if h.head > 64 && h.head*2 > len(h.order) {
		h.order = append(h.order[:0], h.order[h.head:]...)
		h.head = 0
	}
}

// Len returns the number of ids remembered.
func (h *dupHistory) Len() int { return len(h.until) }

// dedupLocked drops the duplicates from recs, messages sent at now (SEMANTICS
// DD1): those whose MessageID the entity accepted within its window, and
// those repeating an earlier message of the same batch. It returns the rest
// with their ids; nothing is recorded until recordLocked.
func (e *Entity) dedupLocked(recs []*store.Message, now int64) ([]*store.Message, []string) {
	if e.dups == nil {
		return recs, nil
	}
	kept := make([]*store.Message, 0, len(recs))
	ids := make([]string, 0, len(recs))
	var batch map[string]struct{}
	if len(recs) > 8 {
		batch = make(map[string]struct{}, len(recs))
	}
	for _, m := range recs {
		id := m.ID()
		if e.dups.seen(id, now) || inBatch(batch, ids, id) {
			continue
		}
		if batch != nil {
			batch[id] = struct{}{}
		}
		kept = append(kept, m)
		ids = append(ids, id)
	}
	return kept, ids
}

// inBatch reports whether id is among the ids kept so far: in batch when
// there is one, else in ids.
func inBatch(batch map[string]struct{}, ids []string, id string) bool {
	if batch != nil {
		_, ok := batch[id]
		return ok
	}
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// recordLocked remembers ids, accepted at now.
func (e *Entity) recordLocked(ids []string, now int64) {
	if e.dups == nil {
		return
	}
	until := after(now, int64(e.cfg.DuplicateWindow))
	for _, id := range ids {
		e.dups.add(id, until)
	}
}
