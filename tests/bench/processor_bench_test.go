package bench

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
)

// Benchmarks of the processor, WaitIdle and the observer. Run them with
//
//	go test -run '^$' -bench 'ProcessorVsLoop|WaitIdle|ObserverOverhead' -benchtime=1s -count=3

// benchFill sends n small messages to q, then collects the garbage, with
// the timer stopped.
func benchFill(b *testing.B, q *minibus.Queue, n int) {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	defer runtime.GC()
	const batch = 1000
	body := make([]byte, 64)
	msgs := make([]*minibus.Message, 0, batch)
	for sent := 0; sent < n; {
		msgs = msgs[:0]
		for range min(batch, n-sent) {
			msgs = append(msgs, &minibus.Message{Body: body})
		}
		if err := q.SendMessages(context.Background(), msgs, nil); err != nil {
			b.Fatal(err)
		}
		sent += len(msgs)
	}
}

// BenchmarkProcessorVsLoop: a processor with 8 concurrent handlers that do
// nothing, against a hand-written receive(32)/complete loop, each draining
// b.N messages in the same run. It reports msgs/s of each and their ratio
// (target: processor/loop >= 0.8).
func BenchmarkProcessorVsLoop(b *testing.B) {
	ns := minibus.NewNamespace()
	defer ns.Close()
	q, err := ns.CreateQueue("bench", &minibus.QueueProperties{MaxSizeInMegabytes: 81920})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	ctx := context.Background()

	// The hand-written loop.
	benchFill(b, q, b.N)
	r, err := q.NewReceiver(nil)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for got := 0; got < b.N; {
		msgs, err := r.ReceiveMessages(ctx, 32, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range msgs {
			if err := r.CompleteMessage(ctx, m, nil); err != nil {
				b.Fatal(err)
			}
		}
		got += len(msgs)
	}
	loop := time.Since(start)
	r.Close(ctx)

	// The processor.
	benchFill(b, q, b.N)
	var handled atomic.Int64
	all := make(chan struct{})
	n := int64(b.N)
	p, err := q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error {
		if handled.Add(1) == n {
			close(all)
		}
		return nil
	}, &minibus.ProcessorOptions{MaxConcurrentCalls: 8})
	if err != nil {
		b.Fatal(err)
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start = time.Now()
	go func() { done <- p.Run(pctx) }()
	<-all
	proc := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if err := ns.WaitIdle(ctx); err != nil {
		b.Fatal(err)
	}
	if c := q.RuntimeProperties().TotalMessageCount; c != 0 {
		b.Fatalf("%d messages left", c)
	}
	loopRate := float64(b.N) / loop.Seconds()
	procRate := float64(b.N) / proc.Seconds()
	b.ReportMetric(loopRate, "loop-msgs/s")
	b.ReportMetric(procRate, "proc-msgs/s")
	b.ReportMetric(procRate/loopRate, "proc/loop")
}

// BenchmarkWaitIdle: WaitIdle on an idle namespace of 1,000 queues, without
// processors and with one idle processor per queue (target: < 1 ms a call).
func BenchmarkWaitIdle(b *testing.B) {
	for _, procs := range []int{0, 1000} {
		b.Run("entities=1000/processors="+strconv.Itoa(procs), func(b *testing.B) {
			mock := clock.NewMock()
			mock.Set(minibustest.Epoch)
			ns := minibus.NewNamespace(minibus.WithClock(mock))
			defer ns.Close()
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			for i := range 1000 {
				q, err := ns.CreateQueue("q"+strconv.Itoa(i), nil)
				if err != nil {
					b.Fatal(err)
				}
				// A message far in the future gives each queue a deadline.
				if _, err := q.ScheduleMessages(ctx, []*minibus.Message{{}}, minibustest.Epoch.Add(time.Hour), nil); err != nil {
					b.Fatal(err)
				}
				if i < procs {
					p, err := q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error { return nil }, nil)
					if err != nil {
						b.Fatal(err)
					}
					started := p.Started()
					wg.Go(func() { _ = p.Run(ctx) })
					<-started
				}
			}
			if err := ns.WaitIdle(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := ns.WaitIdle(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkObserverOverhead: send, receive and complete one message, without
// an observer and with one that counts events, alternating in the same run
// (target: at most 10% apart). It reports ns/msg of each and their ratio.
func BenchmarkObserverOverhead(b *testing.B) {
	var count atomic.Int64
	setups := []struct {
		name string
		opts []minibus.Option
	}{
		{"none", nil},
		{"counting", []minibus.Option{minibus.WithObserver(func(minibus.Event) { count.Add(1) })}},
	}
	type rig struct {
		ns *minibus.Namespace
		q  *minibus.Queue
		r  *minibus.Receiver
	}
	rigs := make([]rig, len(setups))
	for i, s := range setups {
		ns := minibus.NewNamespace(s.opts...)
		defer ns.Close()
		q, err := ns.CreateQueue("bench", nil)
		if err != nil {
			b.Fatal(err)
		}
		r, err := q.NewReceiver(nil)
		if err != nil {
			b.Fatal(err)
		}
		rigs[i] = rig{ns, q, r}
	}
	ctx := context.Background()
	msg := &minibus.Message{Body: make([]byte, 64)}
	var took [2]time.Duration
	const round = 256
	b.ReportAllocs()
	for done := 0; done < b.N; {
		n := min(round, b.N-done)
		for i, x := range rigs {
			start := time.Now()
			for range n {
				if err := x.q.SendMessage(ctx, msg, nil); err != nil {
					b.Fatal(err)
				}
				msgs, err := x.r.ReceiveMessages(ctx, 1, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := x.r.CompleteMessage(ctx, msgs[0], nil); err != nil {
					b.Fatal(err)
				}
			}
			took[i] += time.Since(start)
		}
		done += n
	}
	if got, want := count.Load(), int64(1+3*b.N); got != want { // EntityCreated, then 3 a message
		b.Fatalf("observed %d events, want %d", got, want)
	}
	none := float64(took[0].Nanoseconds()) / float64(b.N)
	counting := float64(took[1].Nanoseconds()) / float64(b.N)
	b.ReportMetric(none, "ns/msg-none")
	b.ReportMetric(counting, "ns/msg-observed")
	b.ReportMetric(counting/none, "observed/none")
}

// BenchmarkObserverOverheadPipelined is BenchmarkObserverOverhead in the
// shape of BenchmarkSendReceiveComplete: a producer sends 1 KiB messages
// while the consumer receives batches of up to 32 and completes each, the
// two namespaces alternating in rounds. It reports msgs/s of each and the
// ratio of their times.
func BenchmarkObserverOverheadPipelined(b *testing.B) {
	var count atomic.Int64
	qs := make([]*minibus.Queue, 2)
	rs := make([]*minibus.Receiver, 2)
	for i, opts := range [][]minibus.Option{nil, {minibus.WithObserver(func(minibus.Event) { count.Add(1) })}} {
		_, q := newBenchQueue(b, opts...)
		r, err := q.NewReceiver(nil)
		if err != nil {
			b.Fatal(err)
		}
		qs[i], rs[i] = q, r
	}
	ctx := context.Background()
	msg := benchMessage()
	var took [2]time.Duration
	const round = 4096
	b.ReportAllocs()
	for done := 0; done < b.N; {
		n := min(round, b.N-done)
		for i := range qs {
			start := time.Now()
			sent := make(chan error, 1)
			go func() {
				for range n {
					if err := qs[i].SendMessage(ctx, msg, nil); err != nil {
						sent <- err
						return
					}
				}
				sent <- nil
			}()
			for got := 0; got < n; {
				rms, err := rs[i].ReceiveMessages(ctx, 32, nil)
				if err != nil {
					b.Fatal(err)
				}
				for _, m := range rms {
					if err := rs[i].CompleteMessage(ctx, m, nil); err != nil {
						b.Fatal(err)
					}
				}
				got += len(rms)
			}
			if err := <-sent; err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(start)
		}
		done += n
	}
	if got, want := count.Load(), int64(1+3*b.N); got != want { // EntityCreated, then 3 a message
		b.Fatalf("observed %d events, want %d", got, want)
	}
	b.ReportMetric(float64(b.N)/took[0].Seconds(), "msgs/s-none")
	b.ReportMetric(float64(b.N)/took[1].Seconds(), "msgs/s-observed")
	b.ReportMetric(float64(took[1])/float64(took[0]), "observed/none")
}
