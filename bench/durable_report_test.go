package bench

import (
	"strings"
	"testing"
	"time"
)

func TestWriteDurableReport(t *testing.T) {
	d1 := func(peer string, v float64) Result { return ok("D1", peer, 1, Metrics{"msgs/s": v}) }
	d2 := func(peer string, v float64) Result { return ok("D2", peer, 1, Metrics{"msgs/s": v}) }
	files := []RunFile{
		fakeFile("D1", d1("minibus-always", 6000), d1("minibus-batched", 100_000), d1("nats-file", 20_000)),
		fakeFile("D2", d2("minibus-always", 10_000), d2("nats-file-always", 4000), d2("goqite-file-full", 6000)),
		fakeFile("D7", ok("D7", "minibus-none", 1, Metrics{"open ms": 2500, "empty open ms": 40})),
	}
	files[2].N = 1_000_000
	var b strings.Builder
	if err := WriteDurableReport(&b, files, ReportOptions{Command: "bench/durable.sh", Date: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		durableBegin,
		"`bench/durable.sh`",
		"| minibus-always | 6.00k | 10.0k | — |",
		"| minibus-none / nats-file | — |",
		"| minibus-batched / nats-file | 5.00x | — |",
		"| minibus-always / nats-file-always | — | 2.50x |",
		"| SyncAlways, 1 producer, single sends: at least 5k msgs/s | 6.00k | meets |",
		"| SyncAlways, 4 producers, single sends: at least 2x goqite-file-full | 10.0k vs 6.00k: 1.67x | **misses** |",
		"| SyncBatched, 1 producer, single sends: at least 150k msgs/s | 100k | **misses** |",
		"| Open of 1M 1 KiB messages, page cache warm: at most 3 s | 2500 | meets |",
		"| Open of a namespace emptied by its traffic, closed cleanly: at most 100 ms | 40.0 | meets |",
		"| SyncAlways, 64 producers, single sends: at least 80k msgs/s | — | no figure |",
		durableEnd,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(md)
	}
}

func TestSpliceDurable(t *testing.T) {
	section := durableBegin + "\nnew\n" + durableEnd
	got := SpliceDurable("# report\n", section)
	if want := "# report\n\n" + section + "\n"; got != want {
		t.Fatalf("appended:\n%q\nwant\n%q", got, want)
	}
	if DurableSection(got) != section {
		t.Fatalf("DurableSection = %q", DurableSection(got))
	}
	old := "# report\n\n" + durableBegin + "\nold\n" + durableEnd + "\n"
	if got, want := SpliceDurable(old, section), "# report\n\n"+section+"\n"; got != want {
		t.Fatalf("replaced:\n%q\nwant\n%q", got, want)
	}
	if DurableSection("# report\n"+durableBegin+"\nno end") != "" {
		t.Fatal("a section without its end marker was found")
	}
}
