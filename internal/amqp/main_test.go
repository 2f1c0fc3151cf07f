package amqp_test

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fmtType names a value's Go type, for subtest names.
func fmtType(v any) string { return fmt.Sprintf("%T", v) }
