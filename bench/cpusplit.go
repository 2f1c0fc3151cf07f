package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// A CPU split sorts the samples of a CPU profile into where the time goes
// per message: the first category whose pattern some frame of the sample's
// stack contains takes the sample, so the order of cpuCategories matters
// (a 1 KiB copy inside an allocation is "body copy out", an allocation in
// the engine is "allocation"). Each sample also goes to a side: the
// consumer's calls, the producer's, or the runtime's own goroutines (the
// collector's workers, the scavenger, the scheduler's idle loop).

// cpuCategory names a kind of work and the frames that give it away.
type cpuCategory struct {
	name   string
	frames []string
}

var cpuCategories = []cpuCategory{
	{"bench harness (the producer's fresh body, counting)", []string{"bench.newBody", "bench.(*tracker)", "bench.pacedSend"}},
	{"GC: background mark", []string{"runtime.gcBgMarkWorker"}},
	{"GC: scavenger (memory back to the OS)", []string{"runtime.bgscavenge"}},
	{"GC: sweep", []string{"runtime.bgsweep", "runtime.sweepone"}},
	{"GC: assist", []string{"runtime.gcAssistAlloc"}},
	{"body copy out (V4), with its allocation", []string{"bytes.Join", "bytes.Clone"}},
	{"allocation", []string{"runtime.mallocgc", "runtime.newobject", "runtime.makeslice", "runtime.growslice"}},
	{"body copy in (V4)", []string{"minibus.copyBody", "minibus.toRecord"}},
	{"parking and waking (scheduler, futex)", []string{"runtime.mcall", "runtime.park_m", "runtime.schedule", "runtime.findRunnable",
		"runtime.futex", "runtime.notewakeup", "runtime.wakep", "runtime.ready", "runtime.goready", "runtime.selectgo",
		"runtime.selectnbsend", "runtime.chansend", "runtime.semrelease", "runtime.semacquire"}},
	{"mutexes", []string{"sync.(*Mutex)", "internal/sync.(*Mutex)", "sync.(*RWMutex)"}},
	{"recycling records (sync.Pool)", []string{"sync.(*Pool)"}},
	{"clock reads", []string{"runtime.nanotime", "time.Now", "clockNow", "clock.(*clock)"}},
	{"store: indexes, arenas, size accounting", []string{"minibus/internal/store."}},
	{"engine: transitions, events, waiting", []string{"minibus/internal/engine."}},
	{"root: checks and conversion (fill, build)", []string{"minibus-go/minibus."}},
	{"other runtime", []string{"runtime."}},
}

// cpuSides tell the consumer's calls from the producer's.
var cpuSides = []cpuCategory{
	{"consumer", []string{"ReceiveMessages", "CompleteMessage", "(*minibusReceiver)", "bench.consume"}},
	{"producer", []string{"SendMessage", "(*minibusQueue).Send", "(*minibusTopic).Send", "bench.pacedSend"}},
}

// CPUSplit is a CPU profile sorted by category and by side.
type CPUSplit struct {
	Total      time.Duration
	Categories []CPUShare // largest first
	Sides      []CPUShare // largest first
}

// CPUShare is the CPU time of one category or side.
type CPUShare struct {
	Name string
	CPU  time.Duration
}

// SplitCPU sorts the samples of p, a CPU profile.
func SplitCPU(p *profile.Profile) (CPUSplit, error) {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return CPUSplit{}, fmt.Errorf("not a CPU profile: no cpu/nanoseconds sample type")
	}
	cats, sides := map[string]time.Duration{}, map[string]time.Duration{}
	var split CPUSplit
	for _, s := range p.Sample {
		d := time.Duration(s.Value[idx])
		var frames []string
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				if l.Function != nil {
					frames = append(frames, l.Function.Name)
				}
			}
		}
		split.Total += d
		cats[classify(frames, cpuCategories, "other")] += d
		sides[classify(frames, cpuSides, "runtime's own goroutines")] += d
	}
	split.Categories, split.Sides = shares(cats), shares(sides)
	return split, nil
}

// classify returns the name of the first of cs with a pattern that one of
// frames contains, or def.
func classify(frames []string, cs []cpuCategory, def string) string {
	for _, c := range cs {
		for _, pat := range c.frames {
			for _, f := range frames {
				if strings.Contains(f, pat) {
					return c.name
				}
			}
		}
	}
	return def
}

func shares(m map[string]time.Duration) []CPUShare {
	var out []CPUShare
	for name, d := range m {
		out = append(out, CPUShare{name, d})
	}
	slices.SortFunc(out, func(a, b CPUShare) int {
		if a.CPU != b.CPU {
			return int(b.CPU - a.CPU)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// WriteMarkdown writes the split as two tables, in ns of CPU per message
// over n messages and in shares of the total.
func (s CPUSplit) WriteMarkdown(w io.Writer, n int) error {
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }
	pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(max(s.Total, 1)) }
	var b strings.Builder
	fmt.Fprintf(&b, "CPU %.2f s over %d messages: %.0f ns a message.\n\n", s.Total.Seconds(), n, per(s.Total))
	b.WriteString("| where | ns/msg | share |\n|---|---:|---:|\n")
	for _, c := range s.Categories {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f%% |\n", c.Name, per(c.CPU), pct(c.CPU))
	}
	b.WriteString("\n| whose | ns/msg | share |\n|---|---:|---:|\n")
	for _, c := range s.Sides {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f%% |\n", c.Name, per(c.CPU), pct(c.CPU))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
