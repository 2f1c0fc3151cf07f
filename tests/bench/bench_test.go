package bench

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// Benchmarks of the hot paths (see the package doc for the command).
// Throughput figures are reported as
// msgs/s; the channel benchmarks carry the same messages through a buffered
// channel, the floor to compare against in the same run.

const benchBody = 1024

// benchMessage is what the producers of the throughput benchmarks send: one
// message, reused, as the broker copies what it is sent (SEMANTICS V4). So
// allocs/op counts the broker's allocations only.
func benchMessage() *minibus.Message { return &minibus.Message{Body: make([]byte, benchBody)} }

// benchMessages makes n messages with 1 KiB bodies.
func benchMessages(n int) []*minibus.Message {
	msgs := make([]*minibus.Message, n)
	for i := range msgs {
		msgs[i] = &minibus.Message{Body: make([]byte, benchBody)}
	}
	return msgs
}

func newBenchQueue(b *testing.B, opts ...minibus.Option) (*minibus.Namespace, *minibus.Queue) {
	b.Helper()
	ns := minibus.NewNamespace(opts...)
	b.Cleanup(func() { ns.Close() })
	q, err := ns.CreateQueue("bench", &minibus.QueueProperties{MaxSizeInMegabytes: 81920})
	if err != nil {
		b.Fatal(err)
	}
	return ns, q
}

// BenchmarkSendReceiveComplete: one producer sends b.N messages one by one;
// one consumer receives them in batches of up to batch (peek-lock) and
// completes each.
func BenchmarkSendReceiveComplete(b *testing.B) {
	for _, batch := range []int{1, 32} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			_, q := newBenchQueue(b)
			r, err := q.NewReceiver(nil)
			if err != nil {
				b.Fatal(err)
			}
			msg := benchMessage()
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			done := make(chan error, 1)
			go func() {
				for range b.N {
					if err := q.SendMessage(ctx, msg, nil); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			for got := 0; got < b.N; {
				rms, err := r.ReceiveMessages(ctx, batch, nil)
				if err != nil {
					b.Fatal(err)
				}
				for _, m := range rms {
					if err := r.CompleteMessage(ctx, m, nil); err != nil {
						b.Fatal(err)
					}
				}
				got += len(rms)
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkSendReceiveCompleteParallel: four producers and four consumers
// (batches of 32) on one queue.
func BenchmarkSendReceiveCompleteParallel(b *testing.B) {
	const producers, consumers = 4, 4
	_, q := newBenchQueue(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			msg := benchMessage()
			for i := p; i < b.N; i += producers {
				if err := q.SendMessage(ctx, msg, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	var mu sync.Mutex
	received := 0
	var cwg sync.WaitGroup
	for range consumers {
		r, err := q.NewReceiver(nil)
		if err != nil {
			b.Fatal(err)
		}
		cwg.Go(func() {
			for {
				rms, err := r.ReceiveMessages(ctx, 32, nil)
				if err != nil {
					return // cancelled once everything arrived
				}
				for _, m := range rms {
					if err := r.CompleteMessage(ctx, m, nil); err != nil {
						b.Error(err)
					}
				}
				mu.Lock()
				received += len(rms)
				if received == b.N {
					cancel()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	cwg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkChannel is the floor: the same messages through a buffered
// channel, one producer and one consumer, no acknowledgement. A channel
// does not copy, so the producer allocates each message's body: the one
// allocation per message of this baseline.
func BenchmarkChannel(b *testing.B) {
	ch := make(chan *minibus.Message, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for range b.N {
			ch <- &minibus.Message{Body: make([]byte, benchBody)}
		}
		close(ch)
	}()
	n := 0
	for m := range ch {
		n += len(m.Body)
	}
	if n != b.N*benchBody {
		b.Fatal(n)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkRoundTrip sends one message at a time and waits until the
// consumer, back in ReceiveMessages after each, has received and completed
// it: one message in flight, as at W4's rate in bench/. Against a channel
// round trip, alternated with it in rounds of 256; it reports ns/trip of
// each and their ratio. allocs/op are minibus's.
func BenchmarkRoundTrip(b *testing.B) {
	_, q := newBenchQueue(b)
	r, err := q.NewReceiver(nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	acked := make(chan error)
	consumed := make(chan struct{})
	go func() { // the minibus consumer
		defer close(consumed)
		for {
			msgs, err := r.ReceiveMessages(ctx, 32, nil)
			if ctx.Err() != nil {
				return
			}
			for _, m := range msgs {
				if err == nil {
					err = r.CompleteMessage(ctx, m, nil)
				}
			}
			acked <- err
		}
	}()
	ch, chAcked := make(chan []byte, 1), make(chan struct{})
	go func() { // the channel consumer
		for range ch {
			chAcked <- struct{}{}
		}
		close(chAcked)
	}()
	defer func() {
		cancel()
		<-consumed
		close(ch)
		<-chAcked
	}()
	msg, body := benchMessage(), make([]byte, benchBody)
	var took [2]time.Duration
	const round = 256
	b.ReportAllocs()
	for done := 0; done < b.N; {
		n := min(round, b.N-done)
		start := time.Now()
		for range n {
			if err := q.SendMessage(ctx, msg, nil); err != nil {
				b.Fatal(err)
			}
			if err := <-acked; err != nil {
				b.Fatal(err)
			}
		}
		took[0] += time.Since(start)
		start = time.Now()
		for range n {
			ch <- body
			<-chAcked
		}
		took[1] += time.Since(start)
		done += n
	}
	trip := float64(took[0].Nanoseconds()) / float64(b.N)
	chTrip := float64(took[1].Nanoseconds()) / float64(b.N)
	b.ReportMetric(trip, "ns/trip")
	b.ReportMetric(chTrip, "ns/trip-chan")
	b.ReportMetric(trip/chTrip, "minibus/chan")
}

// BenchmarkQueuedHeap enqueues b.N messages of 1 KiB and reports the heap
// each queued message takes (target: at most 1.3 KiB). Run it with
// -benchtime=1000000x for the 1,000,000-message figure.
func BenchmarkQueuedHeap(b *testing.B) {
	_, q := newBenchQueue(b)
	ctx := context.Background()
	batch := benchMessages(64)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for sent := 0; sent < b.N; sent += len(batch) {
		n := min(len(batch), b.N-sent)
		if err := q.SendMessages(ctx, batch[:n], nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "heap-B/msg")
	if got := q.RuntimeProperties().ActiveMessageCount; got != int64(b.N) {
		b.Fatal(got)
	}
}

// BenchmarkScheduleThenJump schedules b.N messages at distinct instants
// within the next hour, then makes them all due with one mock.Add and one
// call. It reports both phases per message and their ratio (target: the
// jump at most 2x the scheduling), and the clock timers the namespace
// created (SEMANTICS T4: at most one; none here, as nobody is blocked in a
// receive). Run it with -benchtime=1000000x.
func BenchmarkScheduleThenJump(b *testing.B) {
	mock := clock.NewMock()
	cc := &countingClock{Clock: mock}
	_, q := newBenchQueue(b, minibus.WithClock(cc))
	ctx := context.Background()
	msgs := benchMessages(b.N)
	start := mock.Now()
	b.ResetTimer()
	t0 := time.Now()
	for i, m := range msgs {
		when := start.Add(time.Duration(i+1) * time.Hour / time.Duration(b.N+1))
		if _, err := q.ScheduleMessages(ctx, []*minibus.Message{m}, when, nil); err != nil {
			b.Fatal(err)
		}
	}
	schedule := time.Since(t0)
	t1 := time.Now()
	mock.Add(time.Hour)
	rp := q.RuntimeProperties()
	jump := time.Since(t1)
	b.StopTimer()
	if rp.ActiveMessageCount != int64(b.N) || rp.ScheduledMessageCount != 0 {
		b.Fatalf("%+v", rp)
	}
	b.ReportMetric(float64(schedule.Nanoseconds())/float64(b.N), "schedule-ns/msg")
	b.ReportMetric(float64(jump.Nanoseconds())/float64(b.N), "jump-ns/msg")
	b.ReportMetric(jump.Seconds()/schedule.Seconds(), "jump/schedule")
	b.ReportMetric(float64(cc.timers.Load()), "clock-timers")
}

// BenchmarkExpireJump sends b.N messages with TTLs spread over an hour, then
// expires them all with one mock.Add and one call, reporting both phases
// per message and their ratio. Run it with -benchtime=1000000x.
func BenchmarkExpireJump(b *testing.B) {
	mock := clock.NewMock()
	_, q := newBenchQueue(b, minibus.WithClock(mock))
	ctx := context.Background()
	msgs := benchMessages(b.N)
	for i, m := range msgs {
		m.TimeToLive = time.Duration(i+1) * time.Hour / time.Duration(b.N+1)
	}
	b.ResetTimer()
	t0 := time.Now()
	for _, m := range msgs {
		if err := q.SendMessage(ctx, m, nil); err != nil {
			b.Fatal(err)
		}
	}
	send := time.Since(t0)
	t1 := time.Now()
	mock.Add(time.Hour)
	rp := q.RuntimeProperties()
	jump := time.Since(t1)
	b.StopTimer()
	if rp.TotalMessageCount != 0 {
		b.Fatalf("%+v", rp)
	}
	b.ReportMetric(float64(send.Nanoseconds())/float64(b.N), "send-ns/msg")
	b.ReportMetric(float64(jump.Nanoseconds())/float64(b.N), "jump-ns/msg")
	b.ReportMetric(jump.Seconds()/send.Seconds(), "jump/send")
}

// BenchmarkTopicFanOut sends to a topic with 10 subscriptions, each with a
// correlation filter on a user property; every message matches one of them
// (target: at least 300,000 messages/s). Nobody receives: this measures the
// send and the fan-out.
func BenchmarkTopicFanOut(b *testing.B) {
	ns := minibus.NewNamespace()
	b.Cleanup(func() { ns.Close() })
	top, err := ns.CreateTopic("bench", &minibus.TopicProperties{MaxSizeInMegabytes: 81920})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10 {
		_, err := top.CreateSubscription("s"+strconv.Itoa(i), &minibus.SubscriptionProperties{
			DefaultRule: &minibus.RuleProperties{Filter: minibus.CorrelationFilter{
				ApplicationProperties: map[string]any{"shard": i},
			}},
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	msgs := make([]*minibus.Message, 10)
	for i := range msgs {
		msgs[i] = &minibus.Message{Body: make([]byte, benchBody), ApplicationProperties: map[string]any{"shard": i}}
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := top.SendMessage(ctx, msgs[i%10], nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkOps measures each operation on its own, per message: the queue is
// prepared outside the timer (with b.N messages where the operation needs
// them) and only the operation is timed. Compare with BenchmarkChannel in
// the same run.
func BenchmarkOps(b *testing.B) {
	ctx := context.Background()
	prepare := func(b *testing.B, locked bool) (*minibus.Queue, *minibus.Receiver, []*minibus.ReceivedMessage) {
		b.Helper()
		_, q := newBenchQueue(b)
		r, err := q.NewReceiver(nil)
		if err != nil {
			b.Fatal(err)
		}
		msg := benchMessage()
		for range b.N {
			if err := q.SendMessage(ctx, msg, nil); err != nil {
				b.Fatal(err)
			}
		}
		var held []*minibus.ReceivedMessage
		for locked && len(held) < b.N {
			got, err := r.ReceiveMessages(ctx, 1024, nil)
			if err != nil {
				b.Fatal(err)
			}
			held = append(held, got...)
		}
		return q, r, held
	}
	b.Run("send", func(b *testing.B) {
		_, q := newBenchQueue(b)
		msg := benchMessage()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := q.SendMessage(ctx, msg, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, mode := range []minibus.ReceiveMode{minibus.ReceiveModePeekLock, minibus.ReceiveModeReceiveAndDelete} {
		b.Run("receive-32/"+mode.String(), func(b *testing.B) {
			q, _, _ := prepare(b, false)
			r, err := q.NewReceiver(&minibus.ReceiverOptions{ReceiveMode: mode})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for got := 0; got < b.N; {
				msgs, err := r.ReceiveMessages(ctx, 32, nil)
				if err != nil {
					b.Fatal(err)
				}
				got += len(msgs)
			}
		})
	}
	b.Run("complete", func(b *testing.B) {
		_, r, held := prepare(b, true)
		b.ReportAllocs()
		b.ResetTimer()
		for _, m := range held {
			if err := r.CompleteMessage(ctx, m, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("abandon", func(b *testing.B) {
		_, r, held := prepare(b, true)
		b.ReportAllocs()
		b.ResetTimer()
		for _, m := range held {
			if err := r.AbandonMessage(ctx, m, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("peek-32", func(b *testing.B) {
		_, q := newBenchQueue(b)
		msg := benchMessage()
		for range 1000 {
			if err := q.SendMessage(ctx, msg, nil); err != nil {
				b.Fatal(err)
			}
		}
		r, err := q.NewReceiver(nil)
		if err != nil {
			b.Fatal(err)
		}
		from := &minibus.PeekMessagesOptions{FromSequenceNumber: 1}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := r.PeekMessages(ctx, 32, from); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/32, "ns/msg")
	})
}
