// Package deadline is the ordered index of the pending expiries and
// scheduled activations of one minibus entity. (Lock ends, which come and
// go on every receive, are in the entity's list of locks, in the same
// order.)
//
// Deadlines are ordered by (instant, key): two deadlines at the same instant
// are both kept and come out in key order, which is sequence order (STYLE.md
// practice 10; SEMANTICS T3). Items name their message by its slot in the
// entity's store.Arena and hold no pointer, so the btree costs the garbage
// collector nothing. An Index is not safe for concurrent use; its entity's
// mutex guards it.
package deadline

import (
	"github.com/google/btree"
	"github.com/minibus-go/minibus/internal/store"
)

// Item is one deadline: at instant Due, something happens to the message
// with key Key in arena slot Slot.
type Item struct {
	Due  int64
	Seq  int64
	Copy uint32
	Slot uint32
}

// Key returns the item's message key.
func (it Item) Key() store.Key { return store.Key{Seq: it.Seq, Copy: it.Copy} }

func less(a, b Item) bool {
	if a.Due != b.Due {
		return a.Due < b.Due
	}
	return a.Seq < b.Seq || (a.Seq == b.Seq && a.Copy < b.Copy)
}

// Index orders deadlines by (Due, Key). The pair must be unique.
type Index struct {
	t *btree.BTreeG[Item]
}

// New returns an empty index.
func New() *Index {
	return &Index{t: btree.NewG(32, less)}
}

// Add inserts the deadline due for the message with key k in slot. An
// existing deadline with the same (due, key) is replaced.
func (x *Index) Add(due int64, k store.Key, slot uint32) {
	x.t.ReplaceOrInsert(Item{Due: due, Seq: k.Seq, Copy: k.Copy, Slot: slot})
}

// Remove deletes the deadline (due, k) and reports whether it was there.
func (x *Index) Remove(due int64, k store.Key) bool {
	_, ok := x.t.Delete(Item{Due: due, Seq: k.Seq, Copy: k.Copy})
	return ok
}

// Min returns the earliest deadline; ok is false when the index is empty.
func (x *Index) Min() (it Item, ok bool) {
	return x.t.Min()
}

// Next returns the earliest deadline's instant, or store.Never when the index
// is empty.
func (x *Index) Next() int64 {
	it, ok := x.t.Min()
	if !ok {
		return store.Never
	}
	return it.Due
}

// Len returns the number of deadlines.
func (x *Index) Len() int { return x.t.Len() }
