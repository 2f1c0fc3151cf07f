package wal

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkAppendWait appends 100-byte records and waits for each, from
// 1, 4 and 64 goroutines, in each sync mode, on the OS file system in a
// temporary directory: with SyncAlways, group commit makes 64 writers
// share each fsync.
//
//	go test ./internal/wal -run '^$' -bench AppendWait -benchtime 2s
func BenchmarkAppendWait(b *testing.B) {
	for _, mode := range []SyncMode{SyncAlways, SyncBatched, SyncNone} {
		for _, writers := range []int{1, 4, 64} {
			b.Run(fmt.Sprintf("%s/writers=%d", mode, writers), func(b *testing.B) {
				l, _, err := Open(b.TempDir(), Options{Sync: mode})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				rec := make([]byte, 100)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for range writers {
					wg.Go(func() {
						for next.Add(1) <= int64(b.N) {
							if err := l.Wait(l.Append(rec)); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
			})
		}
	}
}

// BenchmarkOpen1M opens a log of 1M records of 1 KiB (16 segments of
// 64 MiB, no snapshot; the page cache is warm), with and without
// replaying the records.
//
//	go test ./internal/wal -run '^$' -bench Open1M -benchtime 5x
func BenchmarkOpen1M(b *testing.B) {
	dir := b.TempDir()
	l, _, err := Open(dir, Options{Sync: SyncNone})
	if err != nil {
		b.Fatal(err)
	}
	rec := make([]byte, 1024)
	for i := range 1 << 20 {
		rec[0], rec[1], rec[2] = byte(i), byte(i>>8), byte(i>>16)
		lsn := l.Append(rec)
		if i%10000 == 0 {
			if err := l.Wait(lsn); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	for _, replay := range []bool{false, true} {
		b.Run(fmt.Sprintf("replay=%v", replay), func(b *testing.B) {
			for range b.N {
				l, rec, err := Open(dir, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if rec.LastLSN != 1<<20 {
					b.Fatalf("recovered %d records", rec.LastLSN)
				}
				if replay {
					var n int
					if err := rec.Replay(func(uint64, []byte) error { n++; return nil }); err != nil || n != 1<<20 {
						b.Fatal(n, err)
					}
				}
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/open")
		})
	}
}
