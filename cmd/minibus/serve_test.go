package main

import (
	"bytes"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for the command's writes and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServePortZero: with --addr and --http on port 0 the connection string
// (stdout) and the HTTP address (stderr) name the ports picked, /health
// answers there, and SIGTERM ends the command with 0.
func TestServePortZero(t *testing.T) {
	var stdout, stderr syncBuffer
	stop := make(chan os.Signal, 1)
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"serve", "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0", "--clock", "mock"}, &stdout, &stderr, stop)
	}()
	httpLine := regexp.MustCompile(`minibus serve: HTTP on (http://127\.0\.0\.1:[0-9]+)\n`)
	var base string
	require.Eventually(t, func() bool {
		m := httpLine.FindStringSubmatch(stderr.String())
		if m == nil {
			return false
		}
		base = m[1]
		return true
	}, 10*time.Second, 5*time.Millisecond, "stderr: %s", stderr.String())
	require.Regexp(t, `^Endpoint=sb://127\.0\.0\.1:[1-9][0-9]*;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;\n$`, stdout.String())
	require.False(t, strings.Contains(stdout.String(), "HTTP"), "stdout holds the connection string only")

	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(base + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	client.CloseIdleConnections()

	stop <- syscall.SIGTERM
	select {
	case code := <-done:
		require.Equal(t, 0, code, "stderr: %s", stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10 s of SIGTERM")
	}
}
