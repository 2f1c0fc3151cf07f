package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// Benchmarks of sessions, duplicate detection and forwarding, each beside
// the plain case it is measured against in the same run.

// BenchmarkSessionDrain: 1,000 sessions of 100 messages each, drained by 8
// concurrent session receivers (AcceptNextSession, receive the session's
// 100 in batches of 32, complete each, close), against the same 100,000
// messages drained from a plain queue by 8 receivers. Each iteration fills
// (untimed) and drains once. The session case also checks that every
// session came out in order.
func BenchmarkSessionDrain(b *testing.B) {
	const sessions, perSession, receivers = 1000, 100, 8
	ctx := context.Background()
	fill := func(b *testing.B, q *minibus.Queue, session bool) {
		msgs := make([]*minibus.Message, 0, perSession)
		for s := range sessions {
			msgs = msgs[:0]
			for range perSession {
				m := &minibus.Message{Body: make([]byte, 64)}
				if session {
					m.SessionID = strconv.Itoa(s)
				}
				msgs = append(msgs, m)
			}
			if err := q.SendMessages(ctx, msgs, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	drainSessions := func(b *testing.B, q *minibus.Queue) {
		var left atomic.Int64
		left.Store(sessions)
		var wg sync.WaitGroup
		for range receivers {
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					s, err := q.AcceptNextSession(ctx, nil)
					if err != nil {
						b.Error(err)
						return
					}
					last := int64(0)
					for got := 0; got < perSession; {
						ms, err := s.ReceiveMessages(ctx, 32, nil)
						if err != nil {
							b.Error(err)
							return
						}
						for _, m := range ms {
							if m.SequenceNumber <= last {
								b.Errorf("session %s out of order: %d after %d", s.SessionID(), m.SequenceNumber, last)
							}
							last = m.SequenceNumber
							if err := s.CompleteMessage(ctx, m, nil); err != nil {
								b.Error(err)
							}
						}
						got += len(ms)
					}
					_ = s.Close(ctx)
				}
			})
		}
		wg.Wait()
	}
	drainPlain := func(b *testing.B, q *minibus.Queue) {
		var left atomic.Int64
		left.Store(sessions * perSession)
		var wg sync.WaitGroup
		for range receivers {
			wg.Go(func() {
				r, err := q.NewReceiver(nil)
				if err != nil {
					b.Error(err)
					return
				}
				defer r.Close(ctx)
				for left.Load() > 0 {
					rctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
					ms, err := r.ReceiveMessages(rctx, 32, nil)
					cancel()
					if err != nil {
						continue // the others took the last ones
					}
					for _, m := range ms {
						if err := r.CompleteMessage(ctx, m, nil); err != nil {
							b.Error(err)
						}
					}
					left.Add(-int64(len(ms)))
				}
			})
		}
		wg.Wait()
	}
	for _, c := range []struct {
		name    string
		session bool
		drain   func(*testing.B, *minibus.Queue)
	}{{"plain", false, drainPlain}, {"sessions", true, drainSessions}} {
		b.Run(c.name, func(b *testing.B) {
			ns := minibus.NewNamespace()
			defer ns.Close()
			q, err := ns.CreateQueue("q", &minibus.QueueProperties{RequiresSession: c.session, MaxSizeInMegabytes: 81920})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var elapsed time.Duration
			for range b.N {
				b.StopTimer()
				fill(b, q, c.session)
				start := time.Now()
				b.StartTimer()
				c.drain(b, q)
				elapsed += time.Since(start)
			}
			if n := q.RuntimeProperties().TotalMessageCount; n != 0 {
				b.Fatalf("%d messages left", n)
			}
			b.ReportMetric(float64(b.N*sessions*perSession)/elapsed.Seconds(), "msgs/s")
		})
	}
}

// BenchmarkDuplicateDetection: send with unique MessageIDs to a queue
// without and with duplicate detection, sending for ten windows of a mock
// clock (TestDD1_HistoryBounded, in the root, checks that the ids
// remembered stay within one window).
func BenchmarkDuplicateDetection(b *testing.B) {
	ctx := context.Background()
	ids := make([]string, 1<<16)
	for i := range ids {
		ids[i] = fmt.Sprintf("id-%08d", i)
	}
	for _, dd := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[dd], func(b *testing.B) {
			mock := clock.NewMock()
			ns := minibus.NewNamespace(minibus.WithClock(mock))
			defer ns.Close()
			q, err := ns.CreateQueue("q", &minibus.QueueProperties{RequiresDuplicateDetection: dd, MaxSizeInMegabytes: 81920,
				DuplicateDetectionHistoryTimeWindow: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			msg := &minibus.Message{Body: make([]byte, benchBody)}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				msg.MessageID = ids[i%len(ids)] + strconv.Itoa(i/len(ids))
				if err := q.SendMessage(ctx, msg, nil); err != nil {
					b.Fatal(err)
				}
				if i%1000 == 999 {
					mock.Add(time.Second) // ten windows every 600,000 sends
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkForwardChain: send -> receive (batches of 32) -> complete through
// one queue, and through a chain of 4 forwarding hops to the same kind of
// queue, one producer and one consumer.
func BenchmarkForwardChain(b *testing.B) {
	ctx := context.Background()
	for _, hops := range []int{0, 4} {
		b.Run(fmt.Sprintf("hops=%d", hops), func(b *testing.B) {
			ns := minibus.NewNamespace()
			defer ns.Close()
			last, err := ns.CreateQueue("q0", &minibus.QueueProperties{MaxSizeInMegabytes: 81920})
			if err != nil {
				b.Fatal(err)
			}
			first := last
			for i := 1; i <= hops; i++ {
				first, err = ns.CreateQueue(fmt.Sprint("q", i), &minibus.QueueProperties{ForwardTo: fmt.Sprint("q", i-1)})
				if err != nil {
					b.Fatal(err)
				}
			}
			r, err := last.NewReceiver(nil)
			if err != nil {
				b.Fatal(err)
			}
			msg := benchMessage()
			b.ReportAllocs()
			b.ResetTimer()
			done := make(chan error, 1)
			go func() {
				for range b.N {
					if err := first.SendMessage(ctx, msg, nil); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			for got := 0; got < b.N; {
				ms, err := r.ReceiveMessages(ctx, 32, nil)
				if err != nil {
					b.Fatal(err)
				}
				for _, m := range ms {
					if err := r.CompleteMessage(ctx, m, nil); err != nil {
						b.Fatal(err)
					}
				}
				got += len(ms)
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
