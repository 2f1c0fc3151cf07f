package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"time"
)

// Status says how one run ended.
type Status string

// The ways a run ends.
const (
	StatusOK       Status = "ok"
	StatusNA       Status = "n/a"           // the peer cannot do this workload
	StatusNotBuilt Status = "not built yet" // minibus does not have the feature yet
	StatusStall    Status = "stall"         // no progress for RunOptions.StallAfter
	StatusTimeout  Status = "timeout"       // longer than RunOptions.RunTimeout
	StatusError    Status = "error"
	StatusSkipped  Status = "skipped" // the peer lacks something here ([Needy]); Error says what
)

// Failed says whether a run with this status failed: a stall, a timeout or
// an error, as opposed to a figure, a peer that cannot do the workload, a
// feature not built, or a peer skipped for what it lacks.
func (s Status) Failed() bool {
	return s == StatusStall || s == StatusTimeout || s == StatusError
}

// Result is one run of one workload on one peer.
type Result struct {
	Workload string  `json:"workload"`
	Peer     string  `json:"peer"`
	Rep      int     `json:"rep"` // 1-based
	N        int     `json:"n"`
	Status   Status  `json:"status"`
	Error    string  `json:"error,omitempty"`
	Metrics  Metrics `json:"metrics,omitempty"`
	Seconds  float64 `json:"seconds"` // wall time of the run, setup included
	// LongestPause is the longest stretch in seconds without any message
	// going through, outside deliberate quiet phases (GC, the W7 jump).
	LongestPause float64 `json:"longest_pause"`
	// OtherCPU is how many CPUs other processes kept busy on average during
	// the run (-1 if unknown): the machine may be shared.
	OtherCPU float64 `json:"other_cpu"`
	// Abandoned is set when the run did not return after being cancelled:
	// its goroutines were left running in the process.
	Abandoned bool `json:"abandoned,omitempty"`
}

// RunOptions say how to run a workload.
type RunOptions struct {
	// Reps is the number of repetitions; each runs every peer in turn.
	// Default 3.
	Reps int
	// Scale multiplies each workload's full message count. Default 1.
	Scale float64
	// Peers are the peers to run. Default: the workload's
	// ([Workload.Peers]), else all of [Peers].
	Peers []Peer
	// RunTimeout bounds one run. Default 5 minutes.
	RunTimeout time.Duration
	// StallAfter cancels a run in which no message went through for this
	// long. Default 60 s (beyond NATS's 30 s ack wait, so that a redelivery
	// can still rescue a run).
	StallAfter time.Duration
	// Log receives a line per run; nil discards.
	Log io.Writer
	// Dir is where durable peers make their directories ([Config.Dir]);
	// empty means os.TempDir().
	Dir string
	// Isolate, if set, does each run in place of [RunOnce]: minibench does
	// it in a process of its own, so that what one peer leaves in the Go
	// runtime cannot slow the peers that run after it in the process.
	// (The runtime keeps every goroutine it ever made for reuse, and each
	// collection walks them all: after watermill's W6, some 70,000 of
	// them slowed minibus's W6, which collects often, by about a sixth, and
	// the btree queue, which seldom does, not at all.)
	Isolate func(ctx context.Context, w *Workload, p Peer, n int) Result
	// HeapWarmth, if set, is the most heap a scaling phase warms before
	// it measures, in place of 1 GiB (what the largest phase allocates):
	// a run that measures nothing (BENCH_SMOKE) need not warm it.
	HeapWarmth uint64
	// OnPhase, if set, is called when a measured part of a run begins (W1
	// and W6: "run"; W3: "enqueue", then "drain") and with phase "" when it
	// ends, from the run's goroutine: a profiler can cover that part alone.
	OnPhase func(workload, peer, phase string)
}

// cancelGrace is how long a cancelled run has to return before it is
// abandoned.
const cancelGrace = 30 * time.Second

func (o RunOptions) withDefaults() RunOptions {
	if o.Reps <= 0 {
		o.Reps = 3
	}
	if o.Scale <= 0 {
		o.Scale = 1
	}
	if o.RunTimeout <= 0 {
		o.RunTimeout = 5 * time.Minute
	}
	if o.StallAfter <= 0 {
		o.StallAfter = 60 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// Count is w's message count at scale.
func (w *Workload) Count(scale float64) int {
	return max(int(float64(w.N)*scale), w.MinN)
}

// DurationAt is how long a timed workload measures at scale: Duration
// times scale, but at least MinDuration; 0 for a workload that is not
// timed.
func (w *Workload) DurationAt(scale float64) time.Duration {
	if w.Duration == 0 {
		return 0
	}
	return max(time.Duration(float64(w.Duration)*scale), w.MinDuration)
}

// PeersFor are the peers a run of w with opts runs: opts.Peers, else w's,
// else all of [Peers]; for a MinibusOnly workload only MinibusPeer among
// them.
func (w *Workload) PeersFor(opts RunOptions) []Peer {
	peers := opts.Peers
	if peers == nil {
		peers = w.Peers
	}
	if peers == nil {
		peers = Peers()
	}
	if !w.MinibusOnly {
		return peers
	}
	var out []Peer
	for _, p := range peers {
		if _, ok := p.(MinibusPeer); ok {
			out = append(out, p)
		}
	}
	return out
}

// CountFor is w's message count at scale for peer p: Count, divided by the
// peer's reduction where w is reducible and p a [Reducer].
func (w *Workload) CountFor(p Peer, scale float64) int {
	n := w.Count(scale)
	if r, ok := p.(Reducer); ok && w.Reducible && r.Reduction() > 1 {
		n = max(n/r.Reduction(), w.MinN)
	}
	return n
}

// RunWorkload runs w opts.Reps times; each repetition runs every peer in
// turn, starting one peer further along the list each time so that no peer
// always runs first. A peer that lacks something here ([Needy]) is not
// run: its result is [StatusSkipped], with what it lacks as the error. It
// calls emit after every run, and returns when all have run or ctx ends.
func RunWorkload(ctx context.Context, w *Workload, opts RunOptions, emit func(Result)) {
	opts = opts.withDefaults()
	peers := w.PeersFor(opts)
	for rep := range opts.Reps {
		for i := range peers {
			if ctx.Err() != nil {
				return
			}
			p := peers[(i+rep)%len(peers)]
			var res Result
			if why := missing(p); why != "" {
				res = Result{Workload: w.ID, Peer: p.Name(), N: w.CountFor(p, opts.Scale), Status: StatusSkipped, Error: why, OtherCPU: -1}
			} else if opts.Isolate != nil {
				res = opts.Isolate(ctx, w, p, w.CountFor(p, opts.Scale))
			} else {
				res = RunOnce(ctx, w, p, w.CountFor(p, opts.Scale), opts)
			}
			res.Rep = rep + 1
			fmt.Fprintf(opts.Log, "%s rep %d %-9s %-13s %6.1fs others %4.2f CPUs  %s%s\n", w.ID, res.Rep, p.Name(), res.Status, res.Seconds, res.OtherCPU, formatMetrics(w, res.Metrics), res.Error)
			emit(res)
			if res.Status != StatusSkipped {
				settle()
			}
		}
	}
}

// settle returns the memory of the last run to the OS so that the next run
// starts from a small heap.
func settle() {
	runtime.GC()
	debug.FreeOSMemory()
}

// RunOnce runs w once on p with n messages, under a hard timeout and a stall
// watchdog.
func RunOnce(ctx context.Context, w *Workload, p Peer, n int, opts RunOptions) Result {
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.RunTimeout)
	defer cancel()

	env := NewEnv(n)
	env.Duration = w.DurationAt(opts.Scale)
	env.Dir = opts.Dir
	env.warmth = opts.HeapWarmth
	if opts.OnPhase != nil {
		env.onPhase = func(name string) { opts.OnPhase(w.ID, p.Name(), name) }
	}
	done := make(chan outcome, 1)
	rw := &runWatch{
		res:   Result{Workload: w.ID, Peer: p.Name(), N: n},
		ctx:   ctx,
		env:   env,
		opts:  opts,
		cpu0:  sampleCPU(),
		start: time.Now(),
	}
	go func() {
		m, err := w.Run(ctx, env, p)
		done <- outcome{m, err}
	}()
	if o, ok := rw.watch(done, cancel); ok {
		return rw.finish(o)
	}
	// Cancelled by the watchdog or the timeout: give the run a grace period
	// to return.
	select {
	case o := <-done:
		return rw.finish(o)
	case <-time.After(cancelGrace):
		res := rw.finish(outcome{err: ctx.Err()})
		res.Abandoned = true
		res.Error += fmt.Sprintf("; did not return within %v of the cancel: abandoned", cancelGrace)
		return res
	}
}

// outcome is what a workload's Run returned.
type outcome struct {
	m   Metrics
	err error
}

// runWatch is the bookkeeping of one run under RunOnce's watchdog.
type runWatch struct {
	res     Result
	ctx     context.Context
	env     *Env
	opts    RunOptions
	cpu0    cpuSample
	start   time.Time
	longest time.Duration // the longest stretch without progress so far
	stalled bool
}

// watch waits for the run to end, checking its progress every 100 ms. It
// returns the run's outcome and true if the run ended by itself, or false
// once it cancelled the run (a stall) or the run's context ended.
func (rw *runWatch) watch(done <-chan outcome, cancel context.CancelFunc) (outcome, bool) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last, lastChange := rw.env.progress.Load(), rw.start
	for {
		select {
		case o := <-done:
			return o, true
		case now := <-tick.C:
			cur := rw.env.progress.Load()
			if cur != last || rw.env.idle.Load() > 0 {
				if cur != last {
					rw.longest = max(rw.longest, now.Sub(lastChange))
				}
				last, lastChange = cur, now
				continue
			}
			if now.Sub(lastChange) < rw.opts.StallAfter {
				continue
			}
			rw.stalled = true
			rw.longest = max(rw.longest, now.Sub(lastChange))
			cancel()
			return outcome{}, false
		case <-rw.ctx.Done():
			return outcome{}, false
		}
	}
}

// finish fills in the result of a run that ended with o.
func (rw *runWatch) finish(o outcome) Result {
	res := rw.res
	wall := time.Since(rw.start)
	res.Seconds = wall.Seconds()
	res.OtherCPU = otherCores(rw.cpu0, sampleCPU(), wall)
	res.LongestPause = rw.longest.Seconds()
	switch {
	case o.err == nil:
		res.Status, res.Metrics = StatusOK, o.m
	case rw.stalled:
		res.Status = StatusStall
		res.Error = fmt.Sprintf("no message went through for %v (after %d); cancelled", rw.opts.StallAfter, rw.env.progress.Load())
	case errors.Is(o.err, ErrNotBuilt):
		res.Status = StatusNotBuilt
	case errors.Is(o.err, ErrNotSupported):
		res.Status = StatusNA
	case errors.Is(rw.ctx.Err(), context.DeadlineExceeded):
		res.Status = StatusTimeout
		res.Error = fmt.Sprintf("longer than %v; cancelled", rw.opts.RunTimeout)
	default:
		res.Status, res.Error = StatusError, o.err.Error()
	}
	return res
}

// formatMetrics prints a run's figures for the log.
func formatMetrics(w *Workload, m Metrics) string {
	s := ""
	for _, c := range w.Columns {
		if v, ok := m[c.Key]; ok {
			s += fmt.Sprintf("%s=%s ", c.Header, formatValue(c.Kind, v))
		}
	}
	if d := m["dups"]; d > 0 {
		s += fmt.Sprintf("dups=%.0f ", d)
	}
	return s
}
