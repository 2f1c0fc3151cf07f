package wire

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// connection, client and server a test opens is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
