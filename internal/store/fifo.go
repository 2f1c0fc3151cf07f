package store

import (
	"sort"

	"github.com/google/btree"
)

// fifo indexes a queue's available messages by key: a btree, and in front
// of it a run of the newest keys in fixed chunks. Messages mostly arrive
// with keys above every other and leave lowest first; those arrivals
// append to the run and those departures take from its front, without the
// descent, the shifting within a node and the rebalancing of a btree, and
// without ever copying the run: it grows and shrinks a chunk at a time, so
// that one send or receive costs the same at any depth. A key that arrives
// below the run's last goes to the btree (a message whose lock ended, or
// one that an abandon made available again), after the part of the run
// below it, so that every key in the btree stays below every key in the
// run. The methods are those of the btree they stand for.
//
// A key taken from the middle of the run leaves a hole, its slot 0 (no
// message has slot 0), which keeps its key so that the run stays in order;
// holes leave the run when they reach its front.
type fifo struct {
	tree *btree.BTreeG[item]
	// chunks hold the run: its keys, holes included, are at positions 0
	// to n-1, position p in chunks[(first+p)/chunkLen] at (first+p)%chunkLen.
	chunks []*[chunkLen]item
	first  int
	n      int
	holes  int
	// spare is the last chunk let go, kept for the next.
	spare *[chunkLen]item
}

// chunkLen is the number of keys in a chunk of the run: 4 KiB.
const chunkLen = 256

func newFIFO() fifo { return fifo{tree: btree.NewG(degree, lessItem)} }

// at returns the run's key at position p.
func (f *fifo) at(p int) *item {
	p += f.first
	return &f.chunks[p/chunkLen][p%chunkLen]
}

// push appends it to the run.
func (f *fifo) push(it item) {
	if (f.first+f.n)/chunkLen == len(f.chunks) {
		c := f.spare
		if c == nil {
			c = new([chunkLen]item)
		}
		f.spare = nil
		f.chunks = append(f.chunks, c)
	}
	*f.at(f.n) = it
	f.n++
}

// pop takes the run's first key, hole or not.
func (f *fifo) pop() item {
	it := *f.at(0)
	f.first++
	f.n--
	if f.n == 0 {
		f.first = 0
		f.chunks = f.chunks[:1] // its one chunk stays
		return it
	}
	if f.first == chunkLen {
		f.spare = f.chunks[0]
		f.chunks[0] = nil
		f.chunks = f.chunks[1:]
		f.first = 0
	}
	return it
}

// Len returns the number of keys.
func (f *fifo) Len() int { return f.tree.Len() + f.n - f.holes }

// ReplaceOrInsert adds it, replacing an equal key.
func (f *fifo) ReplaceOrInsert(it item) {
	switch {
	case f.n == 0 && (f.tree.Len() == 0 || maxOf(f.tree, it)):
		f.push(it)
	case f.n > 0 && lessItem(*f.at(f.n - 1), it):
		f.push(it)
	default:
		i := f.search(it)
		if i < f.n && !lessItem(it, *f.at(i)) { // equal: in the run
			x := f.at(i)
			if x.slot == 0 {
				f.holes--
			}
			*x = it
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

// search returns the position in the run of the first key at or above it.
func (f *fifo) search(it item) int {
	return sort.Search(f.n, func(p int) bool { return !lessItem(*f.at(p), it) })
}

// spill moves the run's first i keys into the btree.
func (f *fifo) spill(i int) {
	for range i {
		if x := f.pop(); x.slot != 0 {
			f.tree.ReplaceOrInsert(x)
		} else {
			f.holes--
		}
	}
	f.settle()
}

// Delete removes the key equal to it, if there is one.
func (f *fifo) Delete(it item) {
	if i := f.search(it); i < f.n && !lessItem(it, *f.at(i)) {
		if x := f.at(i); x.slot != 0 {
			x.slot = 0
			f.holes++
			f.settle()
		}
		return
	}
	f.tree.Delete(it)
}

// Get returns the key equal to it.
func (f *fifo) Get(it item) (item, bool) {
	if i := f.search(it); i < f.n && !lessItem(it, *f.at(i)) {
		x := *f.at(i)
		return x, x.slot != 0
	}
	return f.tree.Get(it)
}

// Min returns the lowest key.
func (f *fifo) Min() (item, bool) {
	if f.tree.Len() > 0 {
		return f.tree.Min()
	}
	if f.n > 0 {
		return *f.at(0), true // settle keeps a hole from the front
	}
	return item{}, false
}

// DeleteMin removes and returns the lowest key.
func (f *fifo) DeleteMin() (item, bool) {
	if f.tree.Len() > 0 {
		return f.tree.DeleteMin()
	}
	if f.n == 0 {
		return item{}, false
	}
	it := f.pop()
	f.settle()
	return it, true
}

// settle lets the holes at the run's front go.
func (f *fifo) settle() {
	for f.n > 0 && f.at(0).slot == 0 {
		f.pop()
		f.holes--
	}
}

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
	for p := f.search(from); p < f.n; p++ {
		x := *f.at(p)
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
	for p := f.search(from); p < f.n; p++ {
		if x := *f.at(p); x.slot != 0 && !fn(x) {
			return
		}
	}
}
