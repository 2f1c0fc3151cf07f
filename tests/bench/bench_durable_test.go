package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/minibus-go/minibus"
)

// BenchmarkDurableSend sends 1 KiB messages to a durable namespace on disk
// from 1, 4 and 64 producers, one message a call or 32 a call, in each sync
// mode; bench/ compares the same workloads with NATS and goqite.
func BenchmarkDurableSend(b *testing.B) {
	for _, mode := range []minibus.SyncMode{minibus.SyncAlways, minibus.SyncBatched} {
		for _, producers := range []int{1, 4, 64} {
			for _, batch := range []int{1, 32} {
				b.Run(fmt.Sprintf("%v/producers=%d/batch=%d", mode, producers, batch), func(b *testing.B) {
					benchDurableSend(b, mode, producers, batch)
				})
			}
		}
	}
}

func benchDurableSend(b *testing.B, mode minibus.SyncMode, producers, batch int) {
	ns, err := minibus.Open(b.TempDir(), minibus.WithSync(mode))
	if err != nil {
		b.Fatal(err)
	}
	defer ns.Close()
	q, err := ns.CreateQueue("q", &minibus.QueueProperties{MaxSizeInMegabytes: 80 << 10})
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]*minibus.Message, batch)
	for i := range msgs {
		msgs[i] = &minibus.Message{Body: make([]byte, 1024)}
	}
	calls := b.N/batch + 1
	b.SetBytes(1024)
	b.ResetTimer()
	var wg sync.WaitGroup
	per := calls/producers + 1
	for range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				if err := q.SendMessages(context.Background(), msgs, nil); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(per*producers*batch)/b.Elapsed().Seconds(), "msgs/s")
}
