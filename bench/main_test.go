package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind. The
// peers are shut down properly by every test (Queue.Close, Topic.Close), so
// no goroutine is expected to survive.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
