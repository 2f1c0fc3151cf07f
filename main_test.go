package minibus_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind (STYLE.md
// practice 13).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
