package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// States is where the time of a traced run went, from a runtime/trace
// (see [GoroutineStates]): for each P, running or idle; for each goroutine,
// running, runnable (ready to run, waiting for a P) or waiting, by reason.
type States struct {
	// Span is the time from the trace's first event to its last.
	Span time.Duration
	// ProcRunning and ProcIdle sum the Ps' time in either state; a P runs
	// while its thread looks for work too, so ProcRunning exceeds the sum
	// of the goroutines' Running.
	ProcRunning, ProcIdle time.Duration
	// Goroutines are the goroutines that ran or were readied, the longest
	// running first.
	Goroutines []GoStates
}

// GoStates is where one goroutine's time went.
type GoStates struct {
	ID int64
	// Func is the function the goroutine started in (past wrappers such as
	// sync.(*WaitGroup).Go's), when the trace saw it start or block; empty
	// otherwise. BlocksIn is the call it blocked in most often (preemptions
	// aside), outside the runtime and sync.
	Func     string
	BlocksIn string
	blocks   map[string]int
	Running  time.Duration
	Runnable time.Duration
	// Waiting is the time blocked, by the runtime's reason ("sync" for a
	// mutex, "select", "chan receive", "GC mark assist wait for work", ...).
	Waiting map[string]time.Duration
	// Readied counts the times it became runnable; ReadyWaits counts how
	// long each of those waits for a P was, by [ReadyWaitBounds].
	Readied    int
	ReadyWaits [5]int
}

// ReadyWaitBounds are the upper bounds of GoStates.ReadyWaits' buckets;
// the last bucket counts the longer waits.
var ReadyWaitBounds = []time.Duration{4 * time.Microsecond, 64 * time.Microsecond, 256 * time.Microsecond, time.Millisecond}

// GoroutineStates reads a runtime/trace (as written by runtime/trace.Start
// or by minibench's -trace) and sums every goroutine's and every P's time
// in each state.
func GoroutineStates(r io.Reader) (States, error) {
	tr, err := xtrace.NewReader(r)
	if err != nil {
		return States{}, err
	}
	type since struct {
		at    xtrace.Time
		state string
	}
	var out States
	gs := map[xtrace.GoID]*GoStates{}
	gnow := map[xtrace.GoID]since{}
	pnow := map[xtrace.ProcID]since{}
	var first, last xtrace.Time
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return States{}, err
		}
		if first == 0 {
			first = ev.Time()
		}
		last = ev.Time()
		if ev.Kind() != xtrace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		switch st.Resource.Kind {
		case xtrace.ResourceProc:
			p := st.Resource.Proc()
			_, to := st.Proc()
			if s, ok := pnow[p]; ok {
				out.addProc(s.state, time.Duration(ev.Time()-s.at))
			}
			pnow[p] = since{ev.Time(), procState(to)}
		case xtrace.ResourceGoroutine:
			id := st.Resource.Goroutine()
			g := gs[id]
			if g == nil {
				g = &GoStates{ID: int64(id), Waiting: map[string]time.Duration{}}
				gs[id] = g
			}
			from, to := st.Goroutine()
			if s, ok := gnow[id]; ok {
				g.add(s.state, time.Duration(ev.Time()-s.at), true)
			}
			switch to {
			case xtrace.GoRunning:
				gnow[id] = since{ev.Time(), "running"}
			case xtrace.GoRunnable:
				gnow[id] = since{ev.Time(), "runnable"}
				if from != xtrace.GoRunnable {
					g.Readied++
				}
			case xtrace.GoWaiting:
				if site := blockSite(ev); from == xtrace.GoRunning && site != "" && st.Reason != "preempted" {
					if g.blocks == nil {
						g.blocks = map[string]int{}
					}
					g.blocks[site]++
				}
				reason := st.Reason
				if reason == "" {
					reason = "(no reason given)"
				}
				gnow[id] = since{ev.Time(), "waiting:" + reason}
			default:
				delete(gnow, id)
			}
			if g.Func == "" || wrapper(g.Func) {
				if fn := startFunc(from, st, ev); fn != "" {
					g.Func = fn
				}
			}
		}
	}
	out.Span = time.Duration(last - first)
	// What is still on at the end lasted until the last event.
	for _, s := range pnow {
		out.addProc(s.state, time.Duration(last-s.at))
	}
	for id, s := range gnow {
		gs[id].add(s.state, time.Duration(last-s.at), false)
	}
	for _, g := range gs {
		for site, n := range g.blocks {
			if n > g.blocks[g.BlocksIn] || (n == g.blocks[g.BlocksIn] && site < g.BlocksIn) {
				g.BlocksIn = site
			}
		}
		g.blocks = nil
		if g.Running > 0 || g.Readied > 0 {
			out.Goroutines = append(out.Goroutines, *g)
		}
	}
	slices.SortFunc(out.Goroutines, func(a, b GoStates) int { return int(b.Running - a.Running) })
	return out, nil
}

// addProc counts d of a P's time in state.
func (s *States) addProc(state string, d time.Duration) {
	switch state {
	case "running":
		s.ProcRunning += d
	case "idle":
		s.ProcIdle += d
	}
}

// add counts d of g's time in state ("running", "runnable" or
// "waiting:reason"); ended says the state ended there (a wait for a P
// still on when the trace stopped is not a complete wait).
func (g *GoStates) add(state string, d time.Duration, ended bool) {
	switch {
	case state == "running":
		g.Running += d
	case state == "runnable":
		g.Runnable += d
		if ended {
			g.ReadyWaits[bucket(d, ReadyWaitBounds)]++
		}
	case strings.HasPrefix(state, "waiting:"):
		g.Waiting[strings.TrimPrefix(state, "waiting:")] += d
	}
}

func procState(s xtrace.ProcState) string {
	switch s {
	case xtrace.ProcRunning:
		return "running"
	case xtrace.ProcIdle:
		return "idle"
	}
	return ""
}

// startFunc names goroutine st: the outermost frame of its own stack that
// is not the runtime's, sync's or testing's (a wrapper such as
// sync.(*WaitGroup).Go's), when it blocks or yields; else the function it
// started in, when the trace sees it created.
func startFunc(from xtrace.GoState, st xtrace.StateTransition, ev xtrace.Event) string {
	if from == xtrace.GoNotExist {
		for f := range st.Stack.Frames() {
			return f.Func
		}
		return ""
	}
	if from != xtrace.GoRunning {
		return ""
	}
	outer, last := "", ""
	for f := range ev.Stack().Frames() {
		if !wrapper(f.Func) {
			outer = f.Func
		}
		last = f.Func
	}
	if outer == "" {
		return last // the runtime's own goroutines
	}
	return outer
}

// blockSite is the innermost frame of the blocking goroutine's stack that
// is not the runtime's or sync's: the call it blocked in.
func blockSite(ev xtrace.Event) string {
	for f := range ev.Stack().Frames() {
		if !wrapper(f.Func) {
			return f.Func
		}
	}
	return ""
}

func wrapper(fn string) bool {
	for _, p := range []string{"runtime.", "sync.", "testing.", "internal/"} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// bucket is the index of the first bound d is below, or len(bounds).
func bucket(d time.Duration, bounds []time.Duration) int {
	for i, b := range bounds {
		if d < b {
			return i
		}
	}
	return len(bounds)
}

// Format prints s: the Ps' time, then for each of the top goroutines its
// time in each state, per message when perMsg > 0, and how long it waited
// for a P each time it was readied.
func (s States) Format(top, perMsg int) string {
	var b strings.Builder
	per := func(d time.Duration) string {
		if perMsg > 0 {
			return fmt.Sprintf("%v (%.0f ns/msg)", d.Round(time.Microsecond), float64(d.Nanoseconds())/float64(perMsg))
		}
		return d.Round(time.Microsecond).String()
	}
	fmt.Fprintf(&b, "span %v; Ps running %v, idle %v\n", s.Span.Round(time.Microsecond), s.ProcRunning.Round(time.Microsecond), s.ProcIdle.Round(time.Microsecond))
	for _, g := range s.Goroutines[:min(top, len(s.Goroutines))] {
		fmt.Fprintf(&b, "G%d %s", g.ID, g.Func)
		if g.BlocksIn != "" {
			fmt.Fprintf(&b, ", blocks most in %s", g.BlocksIn)
		}
		b.WriteString("\n")
		fmt.Fprintf(&b, "  running   %s\n", per(g.Running))
		fmt.Fprintf(&b, "  runnable  %s, readied %d times, waits for a P <4µs/<64µs/<256µs/<1ms/longer: %v\n", per(g.Runnable), g.Readied, g.ReadyWaits)
		for _, reason := range slices.Sorted(maps.Keys(g.Waiting)) {
			if g.Waiting[reason] < time.Microsecond {
				continue
			}
			fmt.Fprintf(&b, "  waiting   %s: %s\n", per(g.Waiting[reason]), reason)
		}
	}
	return b.String()
}
