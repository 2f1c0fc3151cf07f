package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// stackProfile is a CPU profile with one sample per stack, each of d; a
// stack lists function names from the leaf up.
func stackProfile(d time.Duration, stacks ...[]string) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	fns := map[string]*profile.Function{}
	for _, st := range stacks {
		s := &profile.Sample{Value: []int64{1, int64(d)}}
		for _, name := range st {
			f := fns[name]
			if f == nil {
				f = &profile.Function{ID: uint64(len(fns) + 1), Name: name}
				fns[name] = f
				p.Function = append(p.Function, f)
			}
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
			p.Location = append(p.Location, loc)
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

func TestSplitCPUTakesTheFirstCategoryThatMatches(t *testing.T) {
	p := stackProfile(10*time.Millisecond,
		// A copy's allocation is the copy's, not the allocator's.
		[]string{"runtime.mallocgc", "bytes.Join", "github.com/minibus-go/minibus.build", "github.com/minibus-go/minibus.(*Receiver).ReceiveMessages"},
		[]string{"runtime.memmove", "bytes.Join", "github.com/minibus-go/minibus.build", "github.com/minibus-go/minibus.(*Receiver).ReceiveMessages"},
		[]string{"runtime.mallocgc", "github.com/minibus-go/minibus/internal/store.NewMessage", "github.com/minibus-go/minibus.(*Queue).SendMessage"},
		[]string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"},
		[]string{"github.com/minibus-go/minibus/internal/store.(*Store).Put", "github.com/minibus-go/minibus.(*Queue).SendMessage"},
		[]string{"main.elsewhere"},
	)
	s, err := SplitCPU(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Total != 60*time.Millisecond {
		t.Errorf("total %v, want 60ms", s.Total)
	}
	want := map[string]time.Duration{
		"body copy out (V4), with its allocation": 20 * time.Millisecond,
		"allocation":          10 * time.Millisecond,
		"GC: background mark": 10 * time.Millisecond,
		"store: indexes, arenas, size accounting": 10 * time.Millisecond,
		"other": 10 * time.Millisecond,
	}
	if len(s.Categories) != len(want) {
		t.Errorf("categories %v, want %v", s.Categories, want)
	}
	for _, c := range s.Categories {
		if want[c.Name] != c.CPU {
			t.Errorf("%s: %v, want %v", c.Name, c.CPU, want[c.Name])
		}
	}
	if s.Categories[0].Name != "body copy out (V4), with its allocation" {
		t.Errorf("largest first: got %q first", s.Categories[0].Name)
	}
	sides := map[string]time.Duration{}
	for _, c := range s.Sides {
		sides[c.Name] = c.CPU
	}
	if sides["consumer"] != 20*time.Millisecond || sides["producer"] != 20*time.Millisecond || sides["runtime's own goroutines"] != 20*time.Millisecond {
		t.Errorf("sides %v, want 20ms each", sides)
	}

	var b strings.Builder
	if err := s.WriteMarkdown(&b, 1000); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"CPU 0.06 s over 1000 messages: 60000 ns a message.", "| body copy out (V4), with its allocation | 20000 | 33% |", "| consumer | 20000 | 33% |"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("markdown lacks %q:\n%s", line, b.String())
		}
	}
}

func TestSplitCPURefusesOtherProfiles(t *testing.T) {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}}}
	if _, err := SplitCPU(p); err == nil {
		t.Error("a heap profile was split as CPU")
	}
}
