package store

import (
	"sort"

	"github.com/google/btree"
)

// fifo indexes a queue's available messages by key: a btree, and in front
// of it a run of the newest keys in a slice. Messages mostly arrive with
// keys above every other and leave lowest first; those arrivals append to
// the run and those departures take from its front, without the descent,
// the shifting within a node and the rebalancing of a btree. A key that
// arrives below the run's last goes to the btree (a message whose lock
// ended, or one that an abandon made available again), after the part of
// the run below it, so that every key in the btree stays below every key
// in the run. The methods are those of the btree they stand for.
//
// A key taken from the middle of the run leaves a hole, its slot 0 (no
// message has slot 0), which its neighbours keep in order; holes at the
// run's front are skipped, and the run is compacted once half of it is
// holes or taken, in place.
type fifo struct {
	tree *btree.BTreeG[item]
	run  []item // ascending; run[head:] holds the live keys and the holes
	head int
	// holes counts the holes in run[head:].
	holes int
}

func newFIFO() fifo { return fifo{tree: btree.NewG(degree, lessItem)} }

// Len returns the number of keys.
func (f *fifo) Len() int { return f.tree.Len() + len(f.run) - f.head - f.holes }

// ReplaceOrInsert adds it, replacing an equal key.
func (f *fifo) ReplaceOrInsert(it item) {
	n := len(f.run)
	switch {
	case n == f.head && (f.tree.Len() == 0 || maxOf(f.tree, it)):
		f.run = append(f.run[:0], it)
		f.head, f.holes = 0, 0
	case n > f.head && lessItem(f.run[n-1], it):
		f.run = append(f.run, it)
	default:
		i := f.search(it)
		if i < n && !lessItem(it, f.run[i]) { // equal: in the run
			if f.run[i].slot == 0 {
				f.holes--
			}
			f.run[i] = it
			return
		}
		f.spill(i)
		f.tree.ReplaceOrInsert(it)
	}
}

// maxOf reports whether it is above every key of t, which is not empty.
func maxOf(t *btree.BTreeG[item], it item) bool {
	top, _ := t.Max()
	return lessItem(top, it)
}

// search returns the index in the run of the first key at or above it.
func (f *fifo) search(it item) int {
	return f.head + sort.Search(len(f.run)-f.head, func(i int) bool { return !lessItem(f.run[f.head+i], it) })
}

// spill moves the run's keys before index i into the btree.
func (f *fifo) spill(i int) {
	for _, x := range f.run[f.head:i] {
		if x.slot != 0 {
			f.tree.ReplaceOrInsert(x)
		} else {
			f.holes--
		}
	}
	f.head = i
	f.settle()
}

// Delete removes the key equal to it, if there is one.
func (f *fifo) Delete(it item) {
	if i := f.search(it); i < len(f.run) && !lessItem(it, f.run[i]) {
		if f.run[i].slot != 0 {
			f.run[i].slot = 0
			f.holes++
			f.settle()
		}
		return
	}
	f.tree.Delete(it)
}

// Get returns the key equal to it.
func (f *fifo) Get(it item) (item, bool) {
	if i := f.search(it); i < len(f.run) && !lessItem(it, f.run[i]) {
		return f.run[i], f.run[i].slot != 0
	}
	return f.tree.Get(it)
}

// Min returns the lowest key.
func (f *fifo) Min() (item, bool) {
	if f.tree.Len() > 0 {
		return f.tree.Min()
	}
	if f.head < len(f.run) {
		return f.run[f.head], true // settle keeps a hole from the front
	}
	return item{}, false
}

// DeleteMin removes and returns the lowest key.
func (f *fifo) DeleteMin() (item, bool) {
	if f.tree.Len() > 0 {
		return f.tree.DeleteMin()
	}
	if f.head == len(f.run) {
		return item{}, false
	}
	it := f.run[f.head]
	f.head++
	f.settle()
	return it, true
}

// settle skips the holes at the run's front, and compacts the run once
// half of it is holes or taken.
func (f *fifo) settle() {
	for f.head < len(f.run) && f.run[f.head].slot == 0 {
		f.head++
		f.holes--
	}
	n := len(f.run)
	switch {
	case f.head == n:
		f.run, f.head, f.holes = f.run[:0], 0, 0
		if cap(f.run) > maxIdleRun {
			f.run = nil
		}
	case n >= minCompact && 2*(f.head+f.holes) >= n:
		w := 0
		for _, x := range f.run[f.head:] { // in place: w never passes the read
			if x.slot != 0 {
				f.run[w] = x
				w++
			}
		}
		f.run, f.head, f.holes = f.run[:w], 0, 0
		if c := cap(f.run); c > maxIdleRun && 4*w < c {
			f.run = append(make([]item, 0, 2*w), f.run...) // give back room a backlog left
		}
	}
}

const (
	// minCompact is the shortest run that settle compacts.
	minCompact = 64
	// maxIdleRun is the room an empty run keeps, in keys (16 KiB).
	maxIdleRun = 1024
)

// AscendRange calls fn with each key from from up to before to, in order,
// until fn returns false.
func (f *fifo) AscendRange(from, to item, fn func(item) bool) {
	stop := false
	f.tree.AscendRange(from, to, func(it item) bool {
		stop = !fn(it)
		return !stop
	})
	if stop {
		return
	}
	for _, x := range f.run[f.search(from):] {
		if !lessItem(x, to) {
			return
		}
		if x.slot != 0 && !fn(x) {
			return
		}
	}
}

// AscendGreaterOrEqual calls fn with each key from from on, in order,
// until fn returns false.
func (f *fifo) AscendGreaterOrEqual(from item, fn func(item) bool) {
	stop := false
	f.tree.AscendGreaterOrEqual(from, func(it item) bool {
		stop = !fn(it)
		return !stop
	})
	if stop {
		return
	}
	for _, x := range f.run[f.search(from):] {
		if x.slot != 0 && !fn(x) {
			return
		}
	}
}
