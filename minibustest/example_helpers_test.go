package minibustest_test

import (
	"fmt"
	"runtime"
	"testing"
)

// asTest runs test with a testing.TB of its own, as go test gives one to a
// test function, for the examples: its cleanups run when test returns (an
// Env's namespace closes), and Fatalf prints the failure and ends test.
func asTest(test func(t testing.TB)) {
	t := &exampleTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer t.cleanup()
		test(t)
	}()
	<-done
}

// exampleTB is the testing.TB of asTest. Only what minibustest calls is
// implemented; the embedded interface is nil.
type exampleTB struct {
	testing.TB
	cleanups []func()
}

func (t *exampleTB) Helper()           {}
func (t *exampleTB) Cleanup(fn func()) { t.cleanups = append(t.cleanups, fn) }

func (t *exampleTB) Fatalf(format string, args ...any) {
	fmt.Printf("FAIL: "+format+"\n", args...)
	runtime.Goexit()
}

func (t *exampleTB) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
