package bench

import (
	"strings"
	"testing"
	"time"
)

func fakeFile(id string, results ...Result) RunFile {
	return RunFile{
		Workload: id, Reps: 3, Scale: 1, N: 1000,
		Machine: Machine{GOMAXPROCS: 2, NumCPU: 2, GoVersion: "go1.26", CPU: "Test CPU"},
		Started: time.Unix(0, 0), Finished: time.Unix(10, 0),
		Results: results,
	}
}

func ok(w, peer string, rep int, m Metrics) Result {
	return Result{Workload: w, Peer: peer, Rep: rep, N: 1000, Status: StatusOK, Metrics: m}
}

func TestWriteReport(t *testing.T) {
	files := []RunFile{
		fakeFile("W1",
			ok("W1", "minibus", 1, Metrics{"msgs/s": 100}),
			ok("W1", "minibus", 2, Metrics{"msgs/s": 300}),
			ok("W1", "minibus", 3, Metrics{"msgs/s": 200}),
			ok("W1", "nats", 1, Metrics{"msgs/s": 50}),
			ok("W1", "nats", 2, Metrics{"msgs/s": 100}),
			Result{Workload: "W1", Peer: "goqite", Rep: 1, N: 100, Status: StatusOK, Metrics: Metrics{"msgs/s": 10}},
			Result{Workload: "W1", Peer: "nats", Rep: 3, Status: StatusStall, Error: "no message went through"},
		),
		fakeFile("W6",
			Result{Workload: "W6", Peer: "minibus", Rep: 1, Status: StatusNotBuilt},
			ok("W6", "chan", 1, Metrics{"msgs/s": 1e6, "deliveries/s": 1e7}),
		),
		fakeFile("W7", ok("W7", "minibus", 1, Metrics{"schedule s": 2, "add+call s": 1, "ratio": 0.5})),
	}
	files[2].Finished = time.Time{} // as if killed
	var b strings.Builder
	if err := WriteReport(&b, files, ReportOptions{Command: "bench/run.sh", Date: time.Unix(0, 0), Missing: []string{"W3: no file"}}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"`bench/run.sh`",
		"GOMAXPROCS=2",
		`"Test CPU"`,
		"| minibus | 200 (100–300) | 3 ok |",
		"| nats | 75 (50–100) | 2 ok, 1 stall |",
		"| nats | 2.67x |", // 200 / 75
		"| goqite | 10 | 1 ok (100 messages) |",
		"| goqite | 20x |",
		"W1 nats rep 3: **stall**",
		"| minibus | not built yet | not built yet | 1 not built yet |",
		"meets the target",
		"W7: the process did not finish",
		"W3: no file",
		"[SCALING.md](SCALING.md)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(md)
	}
}

func TestFormatValue(t *testing.T) {
	for _, c := range []struct {
		k    Kind
		v    float64
		want string
	}{
		{Rate, 2_480_000, "2.48M"},
		{Rate, 195_000, "195k"},
		{Rate, 16_400, "16.4k"},
		{Rate, 1_240, "1.24k"},
		{Rate, 352, "352"},
		{Bytes, 1107.4, "1107"},
		{Micros, 9.64, "9.6"},
		{Micros, 430.2, "430"},
		{Seconds, 1.234, "1.23"},
		{Ratio, 0.456, "0.46x"},
		{Ratio, 0.0123, "0.012x"},
		{Ratio, 25, "25x"},
	} {
		if got := formatValue(c.k, c.v); got != c.want {
			t.Errorf("formatValue(%v, %v) = %q, want %q", c.k, c.v, got, c.want)
		}
	}
	if got := groupDigits(1000000); got != "1,000,000" {
		t.Errorf("groupDigits = %q", got)
	}
}
