package wire

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/bench"
	"github.com/minibus-go/minibus/server"
)

// inProcess serves a namespace with the bench queue over AMQP in this
// process; the runs below are driven against it (pid 0: no process to
// read CPU or memory from).
func inProcess(t *testing.T) *server.Server {
	t.Helper()
	ns := minibus.NewNamespace()
	t.Cleanup(func() { ns.Close() })
	require.NoError(t, server.ApplyConfig(ns, []byte(ConfigJSON)))
	srv, err := server.Listen(ns, "127.0.0.1:0", nil)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestLayerMovesEveryMessage(t *testing.T) {
	srv := inProcess(t)
	for _, pre := range []bool{true, false} {
		for _, credit := range []int{1, 100} {
			res, err := RunLayer(testCtx(t), LayerConfig{Broker: Minibus, Addr: srv.Addr().String(), Credit: credit, Presettled: pre, N: 300, Warmup: 20}, 0)
			require.NoError(t, err, "presettled %v, credit %d", pre, credit)
			require.Equal(t, 300, res.Msgs)
			require.Greater(t, res.Rate, 0.0)
			require.Greater(t, res.P99us, 0.0)
			require.LessOrEqual(t, res.P50us, res.P99us)
			require.LessOrEqual(t, res.P99us, res.MaxUs)
			require.Zero(t, res.BrokerCPUus, "no broker process to measure")
		}
	}
}

func TestIdleOpensEveryConnectionAndExchanges(t *testing.T) {
	srv := inProcess(t)
	res, err := RunIdle(testCtx(t), IdleConfig{Broker: Minibus, Addr: srv.Addr().String(), Conns: 20, Parallel: 4}, 0)
	require.NoError(t, err)
	require.Equal(t, 20, res.Conns)
	require.Zero(t, res.Refused)
	require.Equal(t, 20, res.Exchanged)
}

func TestIdleCountsRefusals(t *testing.T) {
	srv := inProcess(t)
	addr := srv.Addr().String()
	require.NoError(t, srv.Close())
	res, err := RunIdle(testCtx(t), IdleConfig{Broker: Minibus, Addr: addr, Conns: 3, Parallel: 3}, 0)
	require.Error(t, err)
	require.Equal(t, 3, res.Refused)
}

func TestSDKCompletesEveryMessage(t *testing.T) {
	srv := inProcess(t)
	for _, c := range []int{1, 8} {
		res, err := RunSDK(testCtx(t), SDKConfig{ConnStr: srv.ConnectionString(), N: 250, Batch: 100, Completers: c, Warmup: 100}, 0)
		require.NoError(t, err, "completers %d", c)
		require.Equal(t, 250, res.Msgs)
		require.Greater(t, res.Rate, 0.0)
		require.Greater(t, res.ClientCPUus, 0.0)
	}
}

func TestConnectionStringAsTheServerPrintsIt(t *testing.T) {
	srv := inProcess(t)
	require.Equal(t, srv.ConnectionString(), ConnectionString(srv.Addr().String()))
	addr, ok := parseReady(Minibus, srv.ConnectionString()+"\n")
	require.True(t, ok)
	require.Equal(t, srv.Addr().String(), addr)
}

func TestParseReady(t *testing.T) {
	addr, ok := parseReady(Proton, "listening on 40123\n")
	require.True(t, ok)
	require.Equal(t, "127.0.0.1:40123", addr)
	_, ok = parseReady(Proton, "something else")
	require.False(t, ok)
	_, ok = parseReady(Minibus, "level=WARN msg=x")
	require.False(t, ok)
}

func TestProcReadsThisProcess(t *testing.T) {
	rss, err := ProcRSS(os.Getpid())
	require.NoError(t, err)
	require.Greater(t, rss, int64(1<<20))
	_, err = ProcCPU(os.Getpid())
	require.NoError(t, err)
	_, err = ProcCPU(-1)
	require.Error(t, err)
	require.NotEmpty(t, LoadAvg())
}

func TestPlanAlternatesTheFirstBroker(t *testing.T) {
	specs := Plan(FullScale, []string{Minibus, Proton})
	firsts := map[string]int{}
	names := map[string]bool{}
	for i := 0; i+1 < len(specs); i++ {
		a, b := specs[i], specs[i+1]
		if a.Kind == KindLayer && b.Kind == KindLayer && a.Rep == b.Rep && a.Credit == b.Credit && a.Presettled == b.Presettled {
			require.NotEqual(t, a.Broker, b.Broker)
			firsts[a.Broker]++
			i++
		}
	}
	require.Equal(t, firsts[Minibus], firsts[Proton], "each goes first as often")
	for _, s := range specs {
		key := s.Name() + "/" + itoa(s.Rep)
		require.False(t, names[key], "%s twice", key)
		names[key] = true
	}
	require.Len(t, Plan(SmokeScale, []string{Minibus}), 6+1+2+2+1)
}

func TestReportVerdicts(t *testing.T) {
	f := File{Date: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC), Rev: "abc", Machine: bench.ThisMachine(), LoadBefore: "1.00 1.00 1.00", LoadAfter: "1.00 1.00 1.00"}
	for _, br := range []string{Minibus, Proton} {
		rate := 40000.0
		if br == Proton {
			rate = 30000
		}
		f.Records = append(f.Records,
			Record{Spec: Spec{Kind: KindLayer, Broker: br, Credit: 1000, Presettled: true, N: 1000}, Layer: &LayerResult{Rate: rate, P50us: 100, P99us: 1000, MaxUs: 2000}},
			Record{Spec: Spec{Kind: KindIdle, Broker: br, Conns: 1000}, Idle: &IdleResult{Conns: 1000, PerConn: 50 << 10, RSSBefore: 10 << 20, RSSAfter: 60 << 20}},
		)
	}
	f.Records = append(f.Records,
		Record{Spec: Spec{Kind: KindSDK, Broker: Minibus, N: 100, Completers: 1}, SDK: &SDKResult{Rate: 5000, ServerCPUus: 50, ClientCPUus: 100}},
		Record{Spec: Spec{Kind: KindStart, Broker: Minibus, Runs: 2}, Start: []StartResult{{Ms: 20}, {Ms: 150}}},
		Record{Spec: Spec{Kind: KindSDK, Broker: Minibus, N: 100, Completers: 8}, Err: "boom"},
	)
	var b strings.Builder
	WriteReport(&b, f, "bench/amqp.sh")
	md := b.String()
	require.True(t, strings.HasPrefix(md, bench.AMQPBegin))
	require.True(t, strings.HasSuffix(md, bench.AMQPEnd+"\n"))
	require.Contains(t, md, "| pre-settled, credit 1000: msgs/s at least 1.0x Proton's | 40.0k vs 30.0k: 1.33x | meets |")
	require.Contains(t, md, "| moonshot: pre-settled, credit 1000: 100k msgs/s | 40.0k | **misses** |")
	require.Contains(t, md, "| 1000 connections: at most 64 KiB per idle connection | 50.0 KiB | meets |")
	require.Contains(t, md, "| `minibus serve` exec to /health 200: at most 100 ms (median; max) | 85.0 ms; 150.0 ms | meets; **misses** |")
	require.Contains(t, md, "- sdk-complete8, repetition 1: boom")
	require.Equal(t, 1, f.Failed())

	// Spliced into a RESULTS.md, the section replaces its old self only.
	doc := bench.SpliceAMQP("# minibus benchmarks\n\nmatrix\n", strings.TrimSuffix(md, "\n"))
	require.Equal(t, strings.TrimSuffix(md, "\n"), bench.AMQPSection(doc))
	again := bench.SpliceAMQP(doc, bench.AMQPBegin+"\nnew\n"+bench.AMQPEnd)
	require.True(t, strings.HasPrefix(again, "# minibus benchmarks\n\nmatrix\n"))
	require.Equal(t, bench.AMQPBegin+"\nnew\n"+bench.AMQPEnd, bench.AMQPSection(again))
}

func TestServePrintsTheConnectionStringAndWritesItsProfile(t *testing.T) {
	dir := t.TempDir()
	config := dir + "/config.json"
	require.NoError(t, os.WriteFile(config, []byte(ConfigJSON), 0o644))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	stop := make(chan os.Signal, 1)
	code := make(chan int, 1)
	go func() {
		defer w.Close()
		code <- Serve([]string{"--addr", "127.0.0.1:0", "--config", config, "--cpuprofile", dir + "/cpu.pprof"}, w, os.Stderr, stop)
	}()
	line := make([]byte, 256)
	n, err := r.Read(line)
	require.NoError(t, err)
	addr, ok := parseReady(Minibus, string(line[:n]))
	require.True(t, ok, "%q", line[:n])
	res, err := RunLayer(testCtx(t), LayerConfig{Broker: Minibus, Addr: addr, Credit: 10, Presettled: true, N: 50}, 0)
	require.NoError(t, err)
	require.Equal(t, 50, res.Msgs)
	stop <- os.Interrupt
	require.Equal(t, 0, <-code)
	st, err := os.Stat(dir + "/cpu.pprof")
	require.NoError(t, err)
	require.Positive(t, st.Size())
}
