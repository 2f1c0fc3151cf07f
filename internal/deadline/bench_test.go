package deadline

import (
	"testing"

	"github.com/minibus-go/minibus/internal/store"
)

// BenchmarkAddRemove keeps n deadlines in the index, adding one at the end
// and removing the earliest, as locks come and go.
func BenchmarkAddRemove(b *testing.B) {
	for _, n := range []int{100, 100000} {
		b.Run(itoa(n), func(b *testing.B) {
			x := New()
			var due int64
			for i := range n {
				due++
				x.Add(due, store.Key{Seq: int64(i)}, 1)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				due++
				x.Add(due, store.Key{Seq: int64(n + i)}, 1)
				it, _ := x.Min()
				x.Remove(it.Due, it.Key())
			}
		})
	}
}

func itoa(n int) string {
	s := ""
	for n > 0 {
		s = string(rune('0'+n%10)) + s
		n /= 10
	}
	return "n=" + s
}
