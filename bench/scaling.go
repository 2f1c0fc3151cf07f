package bench

import (
	"cmp"
	"context"
	"encoding/binary"
	"math"
	"runtime"
	"runtime/debug"
	"time"
)

// SmallBodySize is the size of every message body in the scaling set:
// 32 bytes carrying the message's index. Ten million 1 KiB messages would
// take some 13 GB in minibus; with small bodies a point measures the
// broker's bookkeeping, not the copying of bodies (W1–W7 use 1 KiB).
const SmallBodySize = 32

// newSmallBody allocates a fresh 32-byte body carrying its index i.
func newSmallBody(i int) []byte {
	b := make([]byte, SmallBodySize)
	binary.LittleEndian.PutUint64(b, uint64(i))
	return b
}

// Scaling is one variable of the scaling set: one kind of work measured at
// several sizes, everything else held still, so that a reader sees how the
// cost grows with that size. Each point (one size) runs in a process of its
// own, like each workload of the matrix; within it each repetition runs
// every applicable peer in turn.
type Scaling struct {
	// ID names the variable in file names and flags: "depth", "fanout",
	// "entities", "blocked", "jump".
	ID string
	// Title says in a few words what varies.
	Title string
	// Variable is the x axis: what the points count ("messages held").
	Variable string
	// Method says how a point is measured, for the report.
	Method string
	// Points are the sizes of a full run, smallest first; Quick those of a
	// quick run (bench/scaling.sh with BENCH_QUICK=1).
	Points, Quick []int
	// Ops is the measured work of one point at scale 1 (operations or
	// messages, as Method says); a run at scale s does Ops*s, at least
	// MinOps. Zero: the work is the point's size itself (jump).
	Ops, MinOps int
	// MinibusOnly variables run minibus and no peer.
	MinibusOnly bool
	// Columns are the figures of the report's table, in order.
	Columns []Column
	// Panels are the charts of the variable's PNG, left to right.
	Panels []Panel
	// Growth are the figures whose growth the report spells out.
	Growth []Growth
	// Run measures one point: x is the size, env.N the measured work.
	Run func(ctx context.Context, env *Env, p Peer, x int) (Metrics, error)
}

// Panel is one chart of a scaling PNG: a y axis and its lines.
type Panel struct {
	Title  string
	YLabel string
	LogY   bool
	Lines  []Line
}

// Line is one line of a panel: the medians of one figure of one peer over
// the points.
type Line struct {
	Peer, Key string
	Label     string // the legend
}

// Workload is the point x of s as a [Workload] that [RunWorkload] and
// [RunOnce] can run: its ID is s.ID, its count the measured work.
func (s *Scaling) Workload(x int) *Workload {
	n, minN := s.Ops, s.MinOps
	if n == 0 {
		n, minN = x, x
	}
	return &Workload{
		ID:          s.ID,
		Title:       s.Title,
		Method:      s.Method,
		N:           n,
		MinN:        minN,
		Columns:     s.Columns,
		MinibusOnly: s.MinibusOnly,
		Run: func(ctx context.Context, env *Env, p Peer) (Metrics, error) {
			if s.Ops > 0 { // a smaller run allocates less: warm less
				env.warmth = max(min(cmp.Or(env.warmth, heapWarmth), heapWarmth/uint64(s.Ops)*uint64(env.N)), 16<<20)
			}
			return s.Run(ctx, env, p, x)
		},
	}
}

// Scalings returns the variables of the scaling set in report order.
func Scalings() []*Scaling {
	return []*Scaling{ScalingDepth(), ScalingFanout(), ScalingEntities(), ScalingBlocked(), ScalingJump()}
}

// ScalingByID returns the variable with that ID ("depth"), or nil.
func ScalingByID(id string) *Scaling {
	for _, s := range Scalings() {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// ScalingPeers are the peers of the scaling set: minibus beside the
// mutex+btree baseline, the lean queue whose costs are known to grow as
// O(log n).
func ScalingPeers() []Peer { return []Peer{MinibusPeer{}, BtreePeer{}} }

// measured runs f, a measured phase, after a full GC and with the collector
// off (debug.SetGCPercent(-1)), a memory limit of the live heap plus 4 GiB
// standing guard. With GOGC's default the collector runs once per live heap
// allocated, so a phase of fixed length would pay for a collection at a
// small size and none at a large one; with it off every size pays the
// same: the broker's own work, allocation included, without marking.
//
// With the collector off a phase allocates from fresh pages, and the first
// phase after the runner's FreeOSMemory would pay the page faults that the
// next ones, reusing its freed pages, do not (some 900 ns per message of a
// topic send at one subscription): so the heap is first warmed to
// heapWarmth bytes of resident free pages, more than any phase allocates
// (env.warmth where the run does less work than a full one, or
// [RunOptions.HeapWarmth] lowers it).
func measured(env *Env, f func() error) error {
	var ms runtime.MemStats
	env.quiet(func() {
		warmHeap(cmp.Or(env.warmth, heapWarmth))
		runtime.GC()
		runtime.ReadMemStats(&ms)
	})
	oldLimit := debug.SetMemoryLimit(int64(ms.HeapAlloc) + 4<<30)
	oldPercent := debug.SetGCPercent(-1)
	defer func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}()
	return f()
}

// perOp is the mean duration of one of n operations in nanoseconds.
func perOp(d time.Duration, n int) float64 {
	return float64(d.Nanoseconds()) / float64(n)
}

// log2 is the base-2 logarithm of n, at least 1.
func log2(n int) float64 { return max(math.Log2(float64(n)), 1) }

// heapWarmth is how many bytes of resident free pages measured makes sure
// the heap has: 1 GiB, what the largest phase (fan-out to 100
// subscriptions, a million deliveries) allocates. The tests lower it.
var heapWarmth uint64 = 1 << 30

// warmHeap makes sure the heap holds at least n bytes of free pages that
// are resident, by allocating and touching what is missing, to be
// collected by the caller's runtime.GC.
func warmHeap(n uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	free := ms.HeapIdle - ms.HeapReleased
	if free >= n {
		return
	}
	const chunk = 1 << 20
	var keep [][]byte
	for range (n - free) / chunk {
		b := make([]byte, chunk)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	runtime.KeepAlive(keep)
}
