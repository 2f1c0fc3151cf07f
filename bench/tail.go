package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/trace"
	"slices"
	"strings"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// TailReport is what [TraceTail] found: W4's latencies on one peer, and
// which of them overlapped a garbage collection.
type TailReport struct {
	Peer          string
	P50, P99, Max time.Duration
	// GCs is the number of the collector's concurrent mark phases and
	// stop-the-world pauses in the run; GCShare the fraction of the run
	// they cover.
	GCs     int
	GCShare float64
	// SlowInGC of the Slowest (the slowest 1% of messages) were in flight,
	// between send and receive, while one of those ranges ran; AllInGC is
	// the fraction of all messages that were.
	SlowInGC, Slowest int
	AllInGC           float64
	// Hist counts latencies below 10 µs, 100 µs, 1 ms, 10 ms and above,
	// for messages in flight during a GC range (Hist[0]) and the others.
	Hist [2][5]int
	// Excerpt is the trace around the slowest message: goroutine state
	// changes (without the producer's spinning) and GC ranges.
	Excerpt []string
	// Wakes counts the consumer's wake-ups (the goroutine readied most
	// often) and Running the time it ran, stalls aside. Stalls counts the times it
	// waited 1 ms or more from readied to running (Stalls[0]) or from
	// running to waiting again (Stalls[1]: its thread was off the CPU while
	// it ran), and LongestStall is the longest.
	Wakes        int
	Running      time.Duration
	Stalls       [2]int
	LongestStall time.Duration
}

// tailBounds are the upper bounds of TailReport.Hist's buckets.
var tailBounds = []time.Duration{10 * time.Microsecond, 100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond}

// TraceTail runs W4 (n messages, one per 100 µs, to a consumer waiting in
// Receive) on p under runtime/trace, writing the trace to a temporary file
// (so that tracing adds no heap), and reads the trace back to tell which
// latencies overlapped the collector's work.
func TraceTail(ctx context.Context, p Peer, n int) (TailReport, error) {
	f, err := os.CreateTemp("", "tailtrace-*.trace")
	if err != nil {
		return TailReport{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	env := NewEnv(n)
	warm := max(n/10, 1)
	total := n + warm
	q, err := p.OpenQueue(ctx, Config{Capacity: total})
	if err != nil {
		return TailReport{}, err
	}
	defer q.Close()
	r, err := q.NewReceiver(ctx)
	if err != nil {
		return TailReport{}, err
	}
	defer r.Close()
	sent := make([]time.Duration, total)
	recv := make([]time.Duration, total)
	t := newTracker(total)
	g, gctx := newGroup(ctx)
	if err := trace.Start(f); err != nil {
		return TailReport{}, err
	}
	t0 := time.Now()
	g.Go(func() error { return timedConsume(gctx, env, r, t, recv, t0) })
	g.Go(func() error {
		time.Sleep(10 * time.Millisecond) // let the consumer block in Receive
		return pacedSend(total, sent, t0, newBody, func(b []byte) error { return q.Send(gctx, b) })
	})
	err = g.Wait()
	trace.Stop()
	if err != nil {
		return TailReport{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return TailReport{}, err
	}
	msgs := make([]span, 0, n)
	for i := warm; i < total; i++ {
		msgs = append(msgs, span{sent[i], recv[i]})
	}
	return analyzeTail(p.Name(), f, t0, msgs)
}

// span is an interval of a run, from its start.
type span struct{ from, to time.Duration }

func (s span) overlaps(o span) bool { return s.from < o.to && o.from < s.to }

// gcRange names the trace ranges that are the collector's.
func gcRange(name string) bool {
	return name == "GC concurrent mark phase" || strings.HasPrefix(name, "stop-the-world (GC")
}

// analyzeTail reads the trace in r, whose run began at wall time t0, and
// reports on the messages' spans.
func analyzeTail(peer string, r io.Reader, t0 time.Time, msgs []span) (TailReport, error) {
	events, err := readTrace(r, t0)
	if err != nil {
		return TailReport{}, err
	}
	var gcs []span
	open := map[string]time.Duration{}
	for _, e := range events {
		switch {
		case e.begin != "":
			open[e.begin] = e.at
		case e.end != "":
			if from, ok := open[e.end]; ok && gcRange(e.end) {
				gcs = append(gcs, span{from, e.at})
			}
			delete(open, e.end)
		}
	}
	inGC := func(m span) bool {
		return slices.ContainsFunc(gcs, m.overlaps)
	}
	rep := TailReport{Peer: peer, GCs: len(gcs)}
	lat := make([]time.Duration, len(msgs))
	var gcTime time.Duration
	for _, g := range gcs {
		gcTime += g.to - g.from
	}
	if run := msgs[len(msgs)-1].to - msgs[0].from; run > 0 {
		rep.GCShare = float64(gcTime) / float64(run)
	}
	all := 0
	for i, m := range msgs {
		lat[i] = m.to - m.from
		k, _ := slices.BinarySearch(tailBounds, lat[i]+1)
		if inGC(m) {
			all++
			rep.Hist[0][k]++
		} else {
			rep.Hist[1][k]++
		}
	}
	rep.AllInGC = float64(all) / float64(len(msgs))
	order := make([]int, len(msgs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(lat[a] - lat[b]) })
	rep.P50 = lat[order[len(order)/2]]
	rep.P99 = lat[order[len(order)*99/100]]
	rep.Max = lat[order[len(order)-1]]
	slow := order[len(order)*99/100:]
	rep.Slowest = len(slow)
	for _, i := range slow {
		if inGC(msgs[i]) {
			rep.SlowInGC++
		}
	}
	rep.Wakes, rep.Running, rep.Stalls, rep.LongestStall = consumerStalls(events)
	worst := msgs[order[len(order)-1]]
	for _, e := range events {
		if e.at >= worst.from-20*time.Microsecond && e.at <= worst.to+5*time.Microsecond && e.text != "" {
			rep.Excerpt = append(rep.Excerpt, fmt.Sprintf("%10.1f µs  %s", float64(e.at)/1e3, e.text))
		}
	}
	return rep, nil
}

// consumerStalls finds the consumer, the goroutine readied most often, and
// reads its wake-ups and runs: how many times it was readied, the time it
// spent running (from running to waiting again, stalls aside), and its
// stalls, the
// spans of 1 ms or more from readied to running or from running to waiting
// (a consumer's work on one batch takes microseconds: a stall is its thread
// off the CPU), with the longest.
func consumerStalls(events []traceEvent) (wakes int, running time.Duration, stalls [2]int, longest time.Duration) {
	readied := map[xtrace.GoID]int{}
	for _, e := range events {
		if e.to == xtrace.GoRunnable && e.from == xtrace.GoWaiting {
			readied[e.g]++
		}
	}
	var consumer xtrace.GoID
	for g, n := range readied {
		if n > readied[consumer] {
			consumer = g
		}
	}
	wakes = readied[consumer]
	var since time.Duration
	for _, e := range events {
		if e.g != consumer || consumer == 0 {
			continue
		}
		d := e.at - since
		switch {
		case e.from == xtrace.GoWaiting && e.to == xtrace.GoRunnable:
			since = e.at
			continue
		case e.from == xtrace.GoRunnable && e.to == xtrace.GoRunning:
			if d >= time.Millisecond {
				stalls[0]++
				longest = max(longest, d)
			}
		case e.from == xtrace.GoRunning:
			if d >= time.Millisecond {
				stalls[1]++
				longest = max(longest, d)
			} else {
				running += d
			}
		}
		since = e.at
	}
	return wakes, running, stalls, longest
}

// traceEvent is one event of a trace that analyzeTail looks at.
type traceEvent struct {
	at         time.Duration // from the run's start
	begin, end string        // a range that begins or ends here
	text       string        // for the excerpt; empty: not shown
	// For a goroutine's change of state: which, on which P, from and to.
	g        xtrace.GoID
	proc     xtrace.ProcID
	from, to xtrace.GoState
}

// readTrace reads the trace in r, placing its events in time from t0 by
// the trace's first clock snapshot.
func readTrace(r io.Reader, t0 time.Time) ([]traceEvent, error) {
	tr, err := xtrace.NewReader(r)
	if err != nil {
		return nil, err
	}
	var out []traceEvent
	var sync0 xtrace.Time
	var wall0 time.Time
	yielded := map[xtrace.GoID]bool{}
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if ev.Kind() == xtrace.EventSync {
			if s := ev.Sync(); s.ClockSnapshot != nil && wall0.IsZero() {
				sync0, wall0 = s.ClockSnapshot.Trace, s.ClockSnapshot.Wall
			}
			continue
		}
		if wall0.IsZero() {
			continue
		}
		e := traceEvent{at: wall0.Add(time.Duration(ev.Time() - sync0)).Sub(t0)}
		switch ev.Kind() {
		case xtrace.EventRangeBegin:
			e.begin = ev.Range().Name
			e.text = fmt.Sprintf("P%d begin %s", ev.Proc(), e.begin)
		case xtrace.EventRangeEnd:
			e.end = ev.Range().Name
			e.text = fmt.Sprintf("P%d end %s", ev.Proc(), e.end)
		case xtrace.EventStateTransition:
			e.text = describeTransition(ev, yielded)
			if st := ev.StateTransition(); st.Resource.Kind == xtrace.ResourceGoroutine {
				e.g, e.proc = st.Resource.Goroutine(), ev.Proc()
				e.from, e.to = st.Goroutine()
			}
		default:
			continue
		}
		out = append(out, e)
	}
}

// describeTransition describes a goroutine's change of state, with the
// function it blocked in; empty for a goroutine yielding (the producer's
// pacing) or running again after it, which yielded tracks.
func describeTransition(ev xtrace.Event, yielded map[xtrace.GoID]bool) string {
	st := ev.StateTransition()
	if st.Resource.Kind != xtrace.ResourceGoroutine {
		return ""
	}
	g := st.Resource.Goroutine()
	from, to := st.Goroutine()
	switch {
	case st.Reason == "runtime.Gosched":
		yielded[g] = true
		return ""
	case yielded[g] && from == xtrace.GoRunnable && to == xtrace.GoRunning:
		delete(yielded, g)
		return ""
	}
	s := fmt.Sprintf("P%d G%d %v -> %v %s", ev.Proc(), g, from, to, st.Reason)
	if stk := ev.Stack(); stk != xtrace.NoStack {
		for fr := range stk.Frames() {
			s += " in " + fr.Func
			break
		}
	}
	return strings.TrimSpace(s)
}

// String prints the report: a line of figures and the histogram.
func (r TailReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: p50 %v, p99 %v, max %v; %d GC ranges over %.1f%% of the run; %.1f%% of messages in flight during one; of the slowest %d, %d were\n",
		r.Peer, r.P50, r.P99, r.Max, r.GCs, 100*r.GCShare, 100*r.AllInGC, r.Slowest, r.SlowInGC)
	fmt.Fprintf(&b, "  latency     <10µs <100µs   <1ms  <10ms >=10ms\n")
	for i, name := range []string{"during GC", "otherwise"} {
		fmt.Fprintf(&b, "  %-9s", name)
		for _, c := range r.Hist[i] {
			fmt.Fprintf(&b, " %6d", c)
		}
		b.WriteByte('\n')
	}
	if r.Wakes > 0 {
		fmt.Fprintf(&b, "  consumer: woken %d times, running %v a wake-up; stalled 1 ms or more %d times runnable, %d running, at most %v\n",
			r.Wakes, r.Running/time.Duration(r.Wakes), r.Stalls[0], r.Stalls[1], r.LongestStall)
	}
	return b.String()
}
