package bench

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// The markers around the durable section of RESULTS.md: bench/durable.sh
// rewrites what lies between them, bench/run.sh keeps it as it is.
const (
	durableBegin = "<!-- durable: begin. Written by bench/durable.sh, kept by bench/run.sh. -->"
	durableEnd   = "<!-- durable: end -->"
)

// DurableSection returns the durable section of a RESULTS.md, markers
// included, or "" if it has none.
func DurableSection(md string) string {
	i := strings.Index(md, durableBegin)
	if i < 0 {
		return ""
	}
	j := strings.Index(md[i:], durableEnd)
	if j < 0 {
		return ""
	}
	return md[i : i+j+len(durableEnd)]
}

// SpliceDurable returns md with its durable section replaced by section,
// or with section appended if md has none.
func SpliceDurable(md, section string) string {
	old := DurableSection(md)
	if old == "" {
		if md != "" && !strings.HasSuffix(md, "\n") {
			md += "\n"
		}
		if md != "" {
			md += "\n"
		}
		return md + section + "\n"
	}
	return strings.Replace(md, old, section, 1)
}

// DescribeStoreDir says where durable peers keep their files: the
// directory (os.TempDir() for "") and its file system.
func DescribeStoreDir(dir string) string {
	if dir == "" {
		dir = os.TempDir()
	}
	return fmt.Sprintf("%s (%s)", dir, fsType(dir))
}

// durablePair is a like-for-like comparison of the durable set: a minibus
// mode and a peer whose acknowledged sends survive as much or less.
type durablePair struct{ minibus, peer string }

var durablePairs = []durablePair{
	{"minibus-always", "nats-file-always"},
	{"minibus-always", "nats-file-always-async"},
	{"minibus-always", "goqite-file-full"},
	{"minibus-none", "nats-file"},
	{"minibus-none", "nats-file-async"},
	{"minibus-none", "goqite-file"},
	{"minibus-batched", "nats-file"},
	{"minibus-batched", "nats-file-async"},
	{"minibus-batched", "goqite-file"},
}

// durableTarget is one target of the durable set: a figure of one peer in
// one workload, at least min or at most max (zero: no bound), or at least
// factor times the same figure of each peer in vs.
type durableTarget struct {
	text                   string
	workload, peer, key    string
	kind                   Kind
	min, max               float64
	factor                 float64
	vs                     string
	fullCountOnly, noBound bool
}

var durableTargets = []durableTarget{
	{text: "SyncAlways, 1 producer, single sends: at least 5k msgs/s", workload: "D1", peer: "minibus-always", key: "msgs/s", kind: Rate, min: 5_000},
	{text: "SyncAlways, 4 producers, single sends: at least 9k msgs/s", workload: "D2", peer: "minibus-always", key: "msgs/s", kind: Rate, min: 9_000},
	{text: "SyncAlways, 4 producers, single sends: at least 2x nats-file-always", workload: "D2", peer: "minibus-always", key: "msgs/s", kind: Rate, factor: 2, vs: "nats-file-always"},
	{text: "SyncAlways, 4 producers, single sends: at least 2x goqite-file-full", workload: "D2", peer: "minibus-always", key: "msgs/s", kind: Rate, factor: 2, vs: "goqite-file-full"},
	{text: "SyncAlways, 64 producers, single sends: at least 80k msgs/s", workload: "D3", peer: "minibus-always", key: "msgs/s", kind: Rate, min: 80_000},
	{text: "SyncAlways, SendMessages of 32, 1 producer: at least 100k msgs/s", workload: "D4", peer: "minibus-always", key: "msgs/s", kind: Rate, min: 100_000},
	{text: "SyncAlways, SendMessages of 32, 4 producers: at least 100k msgs/s", workload: "D5", peer: "minibus-always", key: "msgs/s", kind: Rate, min: 100_000},
	{text: "SyncAlways, SendMessages of 32, 64 producers: at least 100k msgs/s", workload: "D6", peer: "minibus-always", key: "msgs/s", kind: Rate, min: 100_000},
	{text: "SyncBatched, 1 producer, single sends: at least 150k msgs/s", workload: "D1", peer: "minibus-batched", key: "msgs/s", kind: Rate, min: 150_000},
	{text: "Open of 1M 1 KiB messages, page cache warm: at most 3 s", workload: "D7", peer: "minibus-none", key: "open ms", kind: Millis, max: 3_000, fullCountOnly: true},
	{text: "Open of 1M 1 KiB messages, cold: at most 3 s", workload: "D7", peer: "minibus-none", key: "cold ms", kind: Millis, max: 3_000, fullCountOnly: true},
	{text: "Open of 1M 1 KiB messages after a crash (log replay): no target, for reference", workload: "D7", peer: "minibus-none", key: "crash ms", kind: Millis, fullCountOnly: true, noBound: true},
	{text: "Open of a namespace emptied by its traffic, closed cleanly: at most 100 ms", workload: "D7", peer: "minibus-none", key: "empty open ms", kind: Millis, max: 100},
	{text: "Same, cold: at most 100 ms", workload: "D7", peer: "minibus-none", key: "empty cold ms", kind: Millis, max: 100},
	{text: "Open of the 1M store drained by a later session, closed cleanly: at most 100 ms", workload: "D7", peer: "minibus-none", key: "drained open ms", kind: Millis, max: 100},
}

// WriteDurableReport writes the durable section of RESULTS.md, markers
// included, from the files of one run of the durable set (D1–D7).
func WriteDurableReport(w io.Writer, files []RunFile, opts ReportOptions) error {
	var b strings.Builder
	slices.SortFunc(files, func(x, y RunFile) int { return strings.Compare(x.Workload, y.Workload) })
	byID := map[string]RunFile{}
	for _, f := range files {
		byID[f.Workload] = f
	}
	b.WriteString(durableBegin + "\n")
	b.WriteString("## Durable\n\n")
	b.WriteString("Generated by `bench/durable.sh` (also `BENCH_DURABLE=1 bench/run.sh`); do not edit by hand. `bench/run.sh` keeps this section as it is.\n\n")
	fmt.Fprintf(&b, "- Command: `%s`\n", opts.Command)
	fmt.Fprintf(&b, "- Date: %s\n", opts.Date.UTC().Format("2006-01-02 15:04 MST"))
	if len(files) > 0 {
		f := files[0]
		m := f.Machine
		fmt.Fprintf(&b, "- Machine: GOMAXPROCS=%d (%d CPUs), %s %s, CPU %q (from /proc/cpuinfo)\n", m.GOMAXPROCS, m.NumCPU, m.GoVersion, m.OSArch, m.CPU)
		if f.Store != "" {
			fmt.Fprintf(&b, "- Stores: fresh directories under %s\n", f.Store)
		}
		window := durableSendWorkload(durableSends[0]).DurationAt(f.Scale)
		fmt.Fprintf(&b, "- Repetitions: %d; each send run measures %v after %v of warm-up; D7 at %s messages\n", f.Reps, window, durableWarmUp(window), groupDigits(D7().Count(f.Scale)))
		if med, hi, ok := otherCPUStats(files); ok {
			fmt.Fprintf(&b, "- Other processes' CPU use during the runs (the machine may be shared): median %.2f CPUs, highest %.2f\n", med, hi)
		}
		if f.MinibusRev != "" {
			fmt.Fprintf(&b, "- minibus: %s\n", f.MinibusRev)
		}
		var vs []string
		for _, p := range []string{"github.com/nats-io/nats-server/v2", "github.com/nats-io/nats.go", "maragu.dev/goqite", "github.com/mattn/go-sqlite3"} {
			if v, ok := m.Versions[p]; ok {
				vs = append(vs, p+" "+v)
			}
		}
		fmt.Fprintf(&b, "- Peers: %s\n", strings.Join(vs, ", "))
	}
	b.WriteString(durableIntro)

	b.WriteString("\n### Sends: msgs/s (D1–D6)\n\n")
	b.WriteString("Medians over the repetitions, min–max in brackets.\n\n")
	writeDurableSends(&b, byID)
	b.WriteString("\n### minibus / peer, like for like\n\n")
	b.WriteString("Ratios of the medians above; above 1 favours minibus. minibus-batched is set beside the peers that fsync later: its acknowledged sends survive more than theirs.\n\n")
	writeDurableRatios(&b, byID)
	b.WriteString("\n### Targets\n\n")
	writeDurableTargets(&b, byID)

	d7 := D7()
	fmt.Fprintf(&b, "\n### D7 — %s\n\n", d7.Title)
	if f, ok := byID["D7"]; ok {
		fmt.Fprintf(&b, "%s messages, %d repetitions. %s\n\n", groupDigits(f.N), f.Reps, d7.Method)
		if f.Finished.IsZero() {
			b.WriteString("**The process did not finish: the figures below are the runs it completed.**\n\n")
		}
		writeHeader(&b, d7.Columns, true)
		for _, p := range peerOrder(f) {
			fmt.Fprintf(&b, "| %s |", p)
			for _, c := range d7.Columns {
				fmt.Fprintf(&b, " %s |", collect(f, p, c.Key).cell(c.Kind))
			}
			fmt.Fprintf(&b, " %s |\n", runsText(f, p))
		}
	} else {
		b.WriteString("No results.\n")
	}

	writeIncidents(&b, "###", files, opts.Missing)
	b.WriteString("\n" + durableEnd + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// durableIntro says how the durable set runs and what each peer promises.
const durableIntro = `
D1–D6 send 1 KiB messages, freshly allocated per message, to one queue in
a fresh directory on disk, from 1, 4 or 64 producers, one message a call
or 32; every producer waits for the acknowledgement of each call before
the next. A run sends for a quarter of its measured time unmeasured (files
created, SQLite's WAL grown), then counts what is acknowledged in the
measured window; afterwards the queue must hold every message
acknowledged. Each workload runs in a process of its own, and each run
in a child process of it, rotating which peer goes first, as the matrix
above. D7 times minibus.Open of a store of a million messages.

What an acknowledged send survives, and how each peer is set up
(bench/adapter_*.go says more):

| peer | an acknowledged send survives | set up |
|---|---|---|
| minibus-always | a crash of the machine | minibus.Open with SyncAlways (the default): fsynced before the call returns; concurrent calls share one fsync (group commit) |
| minibus-batched | a crash of the process; a crash of the machine loses about the last 10 ms | SyncBatched with the default SyncInterval, 10 ms |
| minibus-none | a crash of the process | SyncNone: written to the log before the call returns; fsynced when a 64 MiB segment fills and at snapshots |
| nats-file-always | a crash of the machine | JetStream file store, embedded, server option SyncAlways (sync_interval: always): every write fsynced before the PubAck, one message at a time under the stream's lock |
| nats-file | a crash of the process; a crash of the machine loses up to 2 minutes | the same with the server's default sync_interval, 2 minutes: each message written to its block file before the PubAck |
| goqite-file-full | a crash of the machine | goqite on a SQLite file with the README's DSN (WAL, one connection) plus _sync=FULL: the WAL fsynced at every commit |
| goqite-file | a crash of the process; a crash of the machine loses the commits since the last checkpoint | the README's DSN on a file: WAL, with which mattn/go-sqlite3 sets synchronous=NORMAL, the WAL fsynced only at checkpoints |

So minibus-always compares with nats-file-always and goqite-file-full, and
minibus-none with nats-file and goqite-file; nats-file's default is not
comparable in durability with minibus-always or minibus-batched. Sends are
settled everywhere: NATS's Publish waits for the PubAck, goqite's Send for
its commit.

Batches of 32 (D4–D6) are all or none: minibus's Queue.SendMessages;
JetStream's atomic batch publish (Nats-Batch-Id, -Sequence and -Commit
headers, nats-server 2.12+; the first message and the commit are requests,
as in the reference client, orbit.go's jetstreamext), which the server
stages in a store of its own per batch (files, for a file stream) and then
stores with one fsync under sync_interval: always, up to 256 open batches
per stream allowed (the default is 50) for the 64 producers; goqite's
Queue.SendTx for each message in one SQL transaction, one commit. The
-async rows are the same NATS servers sending each batch as 32
PublishAsync calls and then waiting for the 32 PubAcks, the usual way to
send many messages with nats.go: not atomic, and under sync_interval:
always one fsync per message. SQLite has one writer and no group commit:
goqite's producers take turns on its one connection.
`

// writeDurableSends writes the msgs/s table of D1–D6: a row per peer, a
// column per workload.
func writeDurableSends(b *strings.Builder, byID map[string]RunFile) {
	b.WriteString("| peer |")
	for _, d := range durableSends {
		fmt.Fprintf(b, " %s %d × %s |", d.id, d.producers, batchLabel(d.batch))
	}
	b.WriteString("\n|---|")
	for range durableSends {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, p := range DurableBatchPeers() {
		fmt.Fprintf(b, "| %s |", p.Name())
		for _, d := range durableSends {
			cell := "—"
			if f, ok := byID[d.id]; ok {
				cell = collect(f, p.Name(), "msgs/s").cell(Rate)
			}
			fmt.Fprintf(b, " %s |", cell)
		}
		b.WriteString("\n")
	}
}

// batchLabel is "single" or the batch size, for column headers.
func batchLabel(batch int) string {
	if batch == 1 {
		return "single"
	}
	return fmt.Sprint(batch)
}

func writeDurableRatios(b *strings.Builder, byID map[string]RunFile) {
	b.WriteString("| minibus / peer |")
	for _, d := range durableSends {
		fmt.Fprintf(b, " %s |", d.id)
	}
	b.WriteString("\n|---|")
	for range durableSends {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, pr := range durablePairs {
		fmt.Fprintf(b, "| %s / %s |", pr.minibus, pr.peer)
		for _, d := range durableSends {
			cell := "—"
			if f, ok := byID[d.id]; ok {
				cell = ratioText(Rate, collect(f, pr.minibus, "msgs/s"), collect(f, pr.peer, "msgs/s"))
			}
			fmt.Fprintf(b, " %s |", cell)
		}
		b.WriteString("\n")
	}
}

// writeDurableTargets writes the table of targets: each one's median
// figure and whether it meets it.
func writeDurableTargets(b *strings.Builder, byID map[string]RunFile) {
	b.WriteString("| target | median | verdict |\n|---|---:|---|\n")
	for _, t := range durableTargets {
		f, ok := byID[t.workload]
		s := stats{}
		if ok {
			s = collect(f, t.peer, t.key)
		}
		if len(s.vals) == 0 {
			fmt.Fprintf(b, "| %s | — | no figure |\n", t.text)
			continue
		}
		v := median(s.vals)
		figure := formatValue(t.kind, v)
		verdict := ""
		switch {
		case t.fullCountOnly && f.N != D7().N:
			verdict = fmt.Sprintf("none at %s messages", groupDigits(f.N))
		case t.noBound:
			verdict = "—"
		case t.vs != "":
			peer := collect(f, t.vs, t.key)
			if len(peer.vals) == 0 {
				verdict = "no figure for " + t.vs
				break
			}
			ratio := v / median(peer.vals)
			figure = fmt.Sprintf("%s vs %s: %s", figure, formatValue(t.kind, median(peer.vals)), formatRatio(ratio))
			verdict = meetsText(ratio >= t.factor)
		case t.min > 0:
			verdict = meetsText(v >= t.min)
		case t.max > 0:
			verdict = meetsText(v <= t.max)
		}
		if math.IsNaN(v) {
			verdict = "no figure"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", t.text, figure, verdict)
	}
}

func meetsText(ok bool) string {
	if ok {
		return "meets"
	}
	return "**misses**"
}
