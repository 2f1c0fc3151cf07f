// Package deadline is the ordered index of pending deadlines of one minibus
// entity: lock ends, expiries, scheduled activations and session lock ends.
//
// Deadlines are ordered by (instant, key): two deadlines at the same instant
// are both kept and come out in key order, which is sequence order (STYLE.md
// practice 10; SEMANTICS T3). An Index is not safe for concurrent use; its
// entity's mutex guards it.
package deadline

import (
	"github.com/google/btree"
	"github.com/minibus-go/minibus/internal/store"
)

// Item is one deadline: at instant Due, something happens to Val, which is
// identified by Key.
type Item[V any] struct {
	Due int64
	Key store.Key
	Val V
}

func less[V any](a, b Item[V]) bool {
	if a.Due != b.Due {
		return a.Due < b.Due
	}
	return a.Key.Less(b.Key)
}

// Index orders deadlines by (Due, Key). The pair must be unique.
type Index[V any] struct {
	t *btree.BTreeG[Item[V]]
}

// New returns an empty index.
func New[V any]() *Index[V] {
	return &Index[V]{t: btree.NewG(32, less[V])}
}

// Add inserts a deadline. An existing deadline with the same (due, key) is
// replaced.
func (x *Index[V]) Add(due int64, k store.Key, v V) {
	x.t.ReplaceOrInsert(Item[V]{Due: due, Key: k, Val: v})
}

// Remove deletes the deadline (due, k) and reports whether it was there.
func (x *Index[V]) Remove(due int64, k store.Key) bool {
	_, ok := x.t.Delete(Item[V]{Due: due, Key: k})
	return ok
}

// Min returns the earliest deadline; ok is false when the index is empty.
func (x *Index[V]) Min() (it Item[V], ok bool) {
	return x.t.Min()
}

// Next returns the earliest deadline's instant, or store.Never when the index
// is empty.
func (x *Index[V]) Next() int64 {
	it, ok := x.t.Min()
	if !ok {
		return store.Never
	}
	return it.Due
}

// Len returns the number of deadlines.
func (x *Index[V]) Len() int { return x.t.Len() }
