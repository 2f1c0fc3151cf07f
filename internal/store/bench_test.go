package store

import (
	"strconv"
	"testing"
)

// BenchmarkLockComplete keeps n messages in a store and takes and
// completes the first one, as a receive and a complete do.
func BenchmarkLockComplete(b *testing.B) {
	for _, n := range []int{100, 100000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			s := newStore()
			for i := range n {
				s.Put(NewMessage(), Key{Seq: int64(i + 1)}, Main, Available, int64(i+1))
			}
			next := int64(n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				next++
				s.Put(NewMessage(), Key{Seq: next}, Main, Available, next)
				m := s.LockFirst(Main, int64(i))
				s.Remove(m)
			}
		})
	}
}
