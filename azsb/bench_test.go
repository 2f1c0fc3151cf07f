package azsb_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/azsb"
)

// BenchmarkSendReceiveCompleteRatio measures send → receive → complete
// through minibus's own API and through azsb, in the same run, on fresh
// queues, with the workload of minibus's BenchmarkSendReceiveComplete
// (tests/bench): one producer sends b.N messages of 1 KiB one by one, one
// consumer receives them in batches of up to batch (peek-lock) and
// completes each. It reports both throughputs and their ratio,
// azsb/minibus (target: at least 0.5).
// The two run in alternating rounds, each on a fresh namespace, so that
// neither gets the other's garbage or a quieter moment of the machine.
//
//	go test -run '^$' -bench SendReceiveCompleteRatio -benchtime 200000x
func BenchmarkSendReceiveCompleteRatio(b *testing.B) {
	for _, batch := range []int{1, 32} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			b.ReportAllocs()
			const rounds = 4
			var mb, az time.Duration
			for i := range rounds {
				n := b.N/rounds + min(1, max(0, b.N%rounds-i))
				mb += benchMinibus(b, batch, n)
				az += benchAzsb(b, batch, n)
			}
			b.ReportMetric(float64(b.N)/mb.Seconds(), "minibus-msgs/s")
			b.ReportMetric(float64(b.N)/az.Seconds(), "azsb-msgs/s")
			b.ReportMetric(mb.Seconds()/az.Seconds(), "azsb/minibus")
		})
	}
}

const benchBody = 1024

func benchNamespace(b *testing.B) (*minibus.Namespace, *minibus.Queue) {
	b.Helper()
	ns := minibus.NewNamespace()
	b.Cleanup(func() { ns.Close() })
	q, err := ns.CreateQueue("bench", &minibus.QueueProperties{MaxSizeInMegabytes: 81920})
	if err != nil {
		b.Fatal(err)
	}
	return ns, q
}

// benchMinibus runs the workload through minibus and returns its time.
func benchMinibus(b *testing.B, batch, n int) time.Duration {
	_, q := benchNamespace(b)
	r, err := q.NewReceiver(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close(context.Background())
	msg := &minibus.Message{Body: make([]byte, benchBody)}
	return workload(b, n, func(ctx context.Context) error { return q.SendMessage(ctx, msg, nil) },
		func(ctx context.Context) (int, error) {
			rms, err := r.ReceiveMessages(ctx, batch, nil)
			for _, m := range rms {
				if err := r.CompleteMessage(ctx, m, nil); err != nil {
					return 0, err
				}
			}
			return len(rms), err
		})
}

// benchAzsb runs the workload through azsb and returns its time.
func benchAzsb(b *testing.B, batch, n int) time.Duration {
	ns, _ := benchNamespace(b)
	c := azsb.NewClient(ns)
	defer c.Close(context.Background())
	s, err := c.NewSender("bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	r, err := c.NewReceiverForQueue("bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	msg := &azservicebus.Message{Body: make([]byte, benchBody)}
	return workload(b, n, func(ctx context.Context) error { return s.SendMessage(ctx, msg, nil) },
		func(ctx context.Context) (int, error) {
			rms, err := r.ReceiveMessages(ctx, batch, nil)
			for _, m := range rms {
				if err := r.CompleteMessage(ctx, m, nil); err != nil {
					return 0, err
				}
			}
			return len(rms), err
		})
}

// workload sends n messages from one goroutine while this one receives
// and completes them, and returns how long that took.
func workload(b *testing.B, n int, send func(context.Context) error, receive func(context.Context) (int, error)) time.Duration {
	ctx := context.Background()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		for range n {
			if err := send(ctx); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for got := 0; got < n; {
		n, err := receive(ctx)
		if err != nil {
			b.Fatal(err)
		}
		got += n
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
