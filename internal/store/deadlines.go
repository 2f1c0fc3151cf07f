package store

import "github.com/google/btree"

// deadline is one pending expiry or activation: at instant due, something
// happens to the message with key (seq, cp) in arena slot slot. Items hold
// no pointer, so the btree costs the garbage collector nothing.
type deadline struct {
	due  int64
	seq  int64
	cp   uint32
	slot uint32
}

// lessDeadline orders deadlines by (instant, key): two deadlines at the same
// instant are both kept and come out in key order, which is sequence order
// (SEMANTICS T3). A btree keeps only one of two items that compare equal.
func lessDeadline(a, b deadline) bool {
	if a.due != b.due {
		return a.due < b.due
	}
	return a.seq < b.seq || (a.seq == b.seq && a.cp < b.cp)
}

// deadlines indexes the pending expiries and activations of a store's
// messages by (instant, key). (Lock ends are in the list of locks, in the
// same order.)
type deadlines struct {
	t *btree.BTreeG[deadline]
}

func newDeadlines() deadlines { return deadlines{t: btree.NewG(degree, lessDeadline)} }

// set gives m the pending deadline due, replacing the one it had (Never:
// none).
func (d *deadlines) set(m *Message, due int64) {
	if m.due == due {
		return
	}
	if m.due != Never {
		d.t.Delete(deadline{due: m.due, seq: m.key.Seq, cp: m.key.Copy})
	}
	m.due = due
	if due != Never {
		d.t.ReplaceOrInsert(deadline{due: due, seq: m.key.Seq, cp: m.key.Copy, slot: m.slot})
	}
}

// min returns the earliest deadline; ok is false when there is none.
func (d *deadlines) min() (deadline, bool) { return d.t.Min() }
