package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// BodySize is the size of every message body: 1 KiB, freshly allocated by
// the producer for each message.
const BodySize = 1024

// Metrics are a run's figures, keyed by [Column.Key].
type Metrics map[string]float64

// Workload is one benchmark of the matrix (W1 … W7).
type Workload struct {
	// ID is "W1" … "W7".
	ID string
	// Title says in a few words what the workload does.
	Title string
	// Method says how it is measured, for the report.
	Method string
	// N is the message count of a full run; scaled runs use N times the scale,
	// but at least MinN.
	N, MinN int
	// Columns are the figures the report shows, in order.
	Columns []Column
	// Duration, when set, makes the workload timed: a run measures for
	// Duration times the scale, but at least MinDuration (Env.Duration),
	// and N is not used.
	Duration, MinDuration time.Duration
	// Peers are the peers the workload runs when [RunOptions.Peers] is
	// nil; nil means [Peers].
	Peers []Peer
	// MinibusOnly workloads run minibus and no peer.
	MinibusOnly bool
	// Reducible workloads run a [Reducer] peer with fewer messages. Their
	// figures are rates or costs per message, which the count changes
	// little.
	Reducible bool
	// Run runs the workload once on a fresh instance of p with env.N
	// messages. It returns ErrNotSupported or ErrNotBuilt (wrapped or not)
	// when p cannot do it.
	Run func(ctx context.Context, env *Env, p Peer) (Metrics, error)
}

// Column is one figure of a workload's table.
type Column struct {
	Key    string // the key in Metrics
	Header string // the table header
	Kind   Kind   // how to print it
	// LowerIsBetter is set for costs (latency, bytes, time): the report
	// says which way a minibus/peer ratio is good.
	LowerIsBetter bool
}

// Kind says how a figure prints.
type Kind int

const (
	// Rate prints a per-second figure with k/M suffixes: 1.24M.
	Rate Kind = iota
	// Bytes prints whole bytes.
	Bytes
	// Micros prints microseconds with one decimal (three significant
	// figures above 100).
	Micros
	// Seconds prints seconds with two decimals.
	Seconds
	// Ratio prints a factor: 1.42x.
	Ratio
	// Millis prints milliseconds with one decimal (three significant
	// figures above 100).
	Millis
	// Mebibytes prints a size in MiB with one decimal (three significant
	// figures above 100).
	Mebibytes
)

// Env is what one run of a workload shares with the runner: its message
// count and a progress counter that the runner's stall watchdog watches.
type Env struct {
	// N is the number of messages of this run.
	N int
	// Duration is how long a timed workload measures in this run.
	Duration time.Duration
	// Dir is where durable peers make their directories ([Config.Dir]).
	Dir string

	progress atomic.Int64
	idle     atomic.Int32 // > 0 while a phase makes no progress on purpose
	warmth   uint64       // the heap a scaling phase warms first; 0: heapWarmth
	onPhase  func(name string)
}

// NewEnv returns an Env for a run of n messages.
func NewEnv(n int) *Env { return &Env{N: n} }

// tick records that k more messages went through.
func (e *Env) tick(k int) { e.progress.Add(int64(k)) }

// phase says that the measured part called name begins ("" when it
// ends): [RunOptions.OnPhase] hears of it.
func (e *Env) phase(name string) {
	if e.onPhase != nil {
		e.onPhase(name)
	}
}

// quiet runs f, a phase without message progress (a GC, the W7 jump), with
// the stall watchdog looking away.
func (e *Env) quiet(f func()) {
	e.idle.Add(1)
	defer e.idle.Add(-1)
	f()
}

// newBody allocates a fresh 1 KiB body carrying its index i.
func newBody(i int) []byte {
	b := make([]byte, BodySize)
	binary.LittleEndian.PutUint64(b, uint64(i))
	return b
}

// bodyIndex reads back the index newBody wrote.
func bodyIndex(b []byte) int {
	if len(b) < 8 {
		return -1
	}
	return int(binary.LittleEndian.Uint64(b))
}

// tracker counts the distinct messages a subscription or queue delivered,
// from any number of consumers, and closes done when it has seen all n.
// A strided tracker expects the indices offset, offset+stride, ... below
// some total, the messages of one filtered subscription.
type tracker struct {
	n        int64
	stride   int
	offset   int
	bits     []uint64
	distinct atomic.Int64
	dups     atomic.Int64
	done     chan struct{}
	once     sync.Once
}

func newTracker(n int) *tracker {
	return &tracker{n: int64(n), stride: 1, bits: make([]uint64, (n+63)/64), done: make(chan struct{})}
}

// newStridedTracker expects the indices below total that are offset modulo
// stride.
func newStridedTracker(total, stride, offset int) *tracker {
	n := 0
	if offset < total {
		n = (total - offset + stride - 1) / stride
	}
	t := newTracker(n)
	t.stride, t.offset = stride, offset
	return t
}

// see records one delivered body; it returns an error for a body that was
// never sent.
func (t *tracker) see(body []byte) error {
	i := bodyIndex(body)
	if t.stride != 1 {
		if i < t.offset || (i-t.offset)%t.stride != 0 {
			return fmt.Errorf("bench: received a body with index %d, want one of %d modulo %d", i, t.offset, t.stride)
		}
		i = (i - t.offset) / t.stride
	}
	if i < 0 || int64(i) >= t.n {
		return fmt.Errorf("bench: received a body with index %d, want 0..%d", i, t.n-1)
	}
	mask := uint64(1) << (i % 64)
	if atomic.OrUint64(&t.bits[i/64], mask)&mask != 0 {
		t.dups.Add(1)
		return nil
	}
	if t.distinct.Add(1) == t.n {
		t.once.Do(func() { close(t.done) })
	}
	return nil
}

func (t *tracker) complete() bool { return t.distinct.Load() == t.n }

// consume receives batches of up to batch messages from r and completes
// each until t has seen every message. It returns nil once t is complete,
// even if that happened in another consumer while this one waited.
func consume(ctx context.Context, env *Env, r Receiver, t *tracker, batch int) error {
	// Stop waiting once t is complete, whichever consumer completed it.
	ctx, stop := untilComplete(ctx, t)
	defer stop()
	buf := make([]Delivery, 0, batch)
	for !t.complete() {
		ds, err := r.Receive(ctx, batch, buf)
		if err != nil {
			if t.complete() {
				return nil
			}
			return err
		}
		for _, d := range ds {
			if err := r.Complete(ctx, d); err != nil {
				return err
			}
			if err := t.see(d.Body); err != nil {
				return err
			}
		}
		env.tick(len(ds))
		buf = ds
	}
	return nil
}

// untilComplete returns a context that ends when ctx does or when t is
// complete, and the function that releases it (and waits for its watcher).
func untilComplete(ctx context.Context, t *tracker) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	var watcher sync.WaitGroup
	watcher.Go(func() {
		select {
		case <-t.done:
			cancel()
		case <-ctx.Done():
		}
	})
	return ctx, func() {
		cancel()
		watcher.Wait()
	}
}

// group runs goroutines and keeps the first error; the first error cancels
// the group's context.
type group struct {
	wg     sync.WaitGroup
	once   sync.Once
	err    error
	cancel context.CancelFunc
}

func newGroup(ctx context.Context) (*group, context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	return &group{cancel: cancel}, ctx
}

func (g *group) Go(f func() error) {
	g.wg.Go(func() {
		if err := f(); err != nil {
			g.once.Do(func() {
				g.err = err
				g.cancel()
			})
		}
	})
}

func (g *group) Wait() error {
	g.wg.Wait()
	g.cancel()
	return g.err
}

// memory is a snapshot of what the process holds, after a full GC.
type memory struct {
	heap, stack, offHeap int64
}

// measureMemory collects garbage and reads the live heap, the goroutine
// stacks and, where q keeps messages outside the Go heap, those bytes.
func measureMemory(ctx context.Context, env *Env, q any) (memory, error) {
	var m memory
	var ms runtime.MemStats
	env.quiet(func() {
		runtime.GC()
		runtime.ReadMemStats(&ms)
	})
	m.heap, m.stack = int64(ms.HeapAlloc), int64(ms.StackInuse)
	if oh, ok := q.(OffHeap); ok {
		b, err := oh.OffHeapBytes(ctx)
		if err != nil {
			return m, err
		}
		m.offHeap = b
	}
	return m, nil
}

// perMessage is the heap and the other memory (stacks, off-heap) that the
// messages between two snapshots took, per message.
func perMessage(before, after memory, n int) (heap, other float64) {
	heap = float64(after.heap-before.heap) / float64(n)
	other = float64((after.stack-before.stack)+(after.offHeap-before.offHeap)) / float64(n)
	return heap, other
}

// checkCount compares what q says it holds with want, where q can count.
func checkCount(ctx context.Context, q any, want int) error {
	c, ok := q.(Counter)
	if !ok {
		return nil
	}
	got, err := c.Count(ctx)
	if err != nil {
		return err
	}
	if got != int64(want) {
		return fmt.Errorf("bench: the queue holds %d messages, want %d", got, want)
	}
	return nil
}

// rate is n per elapsed second.
func rate(n int, elapsed time.Duration) float64 {
	return float64(n) / elapsed.Seconds()
}

// Workloads returns W1 … W7 in order.
func Workloads() []*Workload {
	return []*Workload{W1(), W2(), W3(), W4(), W5(), W6(), W7()}
}

// WorkloadByID returns the workload of the matrix or of the durable set
// with that ID ("W3", "D1"), or nil.
func WorkloadByID(id string) *Workload {
	for _, w := range append(Workloads(), DurableWorkloads()...) {
		if w.ID == id {
			return w
		}
	}
	return nil
}
