package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
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

// startServe runs the command on free ports and returns its connection
// string, its HTTP base URL and a stop function giving its exit code.
func startServe(t *testing.T, args ...string) (conn, base string, stop func() int) {
	t.Helper()
	var stdout, stderr syncBuffer
	sig := make(chan os.Signal, 1)
	done := make(chan int, 1)
	args = append([]string{"serve", "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0"}, args...)
	go func() { done <- run(args, &stdout, &stderr, sig) }()
	httpLine := regexp.MustCompile(`minibus serve: HTTP on (http://127\.0\.0\.1:[0-9]+)\n`)
	require.Eventually(t, func() bool {
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d: %s", code, stderr.String())
		default:
		}
		m := httpLine.FindStringSubmatch(stderr.String())
		if m == nil || !strings.HasSuffix(stdout.String(), "\n") {
			return false
		}
		base = m[1]
		return true
	}, 10*time.Second, 5*time.Millisecond, "stderr: %s", stderr.String())
	return strings.TrimSpace(stdout.String()), base, func() int {
		sig <- syscall.SIGTERM
		select {
		case code := <-done:
			return code
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not stop within 10 s of SIGTERM")
			return -1
		}
	}
}

// getJSON reads a JSON reply of the HTTP endpoint.
func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var m map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	return m
}

// TestServeBadStart: a bad flag, an unreadable or bad config, a bad clock
// or sync mode, or an address in use exits 2 with one line naming the
// culprit, and nothing keeps running.
func TestServeBadStart(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"UserConfig":{"Namespaces":[{"Name":"sbemulatorns","Queues":[{"Name":"q","Properties":{"LockDuration":"PT1X"}}],"Topics":[]}]}}`), 0o644))
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "usage: minibus serve"},
		{[]string{"run"}, "usage: minibus serve"},
		{[]string{"serve", "--nope"}, "-nope"},
		{[]string{"serve", "extra"}, `"extra"`},
		{[]string{"serve", "--http", "", "--config", filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"serve", "--http", "", "--config", bad}, "LockDuration"},
		{[]string{"serve", "--http", "", "--clock", "sometimes"}, `--clock "sometimes"`},
		{[]string{"serve", "--http", "", "--clock", "mock:yesterday"}, "RFC 3339"},
		{[]string{"serve", "--http", "", "--data", dir, "--sync", "often"}, `--sync "often"`},
		{[]string{"serve", "--http", "", "--addr", busy.Addr().String()}, busy.Addr().String()},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--http", busy.Addr().String()}, busy.Addr().String()},
	} {
		var stdout, stderr syncBuffer
		code := run(tt.args, &stdout, &stderr, make(chan os.Signal))
		require.Equal(t, 2, code, "%v: %s", tt.args, stderr.String())
		require.Contains(t, stderr.String(), tt.want, "%v", tt.args)
		require.Empty(t, stdout.String(), "%v", tt.args)
		if tt.args != nil && tt.args[0] == "serve" {
			require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr.String()), "\n")+1, "one line: %q", stderr.String())
		}
	}
}

// TestServeMockClockAndConfig: --clock mock:<instant> starts the mock
// there and the test-control API moves it; --config creates the file's
// entities, which a client reaches over the connection string's port.
func TestServeMockClockAndConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "Config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{"UserConfig":{"Namespaces":[{"Name":"sbemulatorns",
		"Queues":[{"Name":"orders"}],"Topics":[]}],"Logging":{"Type":"File"}}}`), 0o644))
	conn, base, stop := startServe(t, "--clock", "mock:2030-01-02T03:04:05Z", "--config", cfg)
	require.Contains(t, conn, "Endpoint=sb://127.0.0.1:")
	require.Equal(t, map[string]any{"now": "2030-01-02T03:04:05.000000000Z", "mock": true}, getJSON(t, base+"/minibus/clock"))
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Post(base+"/minibus/clock/advance?by=1h", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	client.CloseIdleConnections()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "2030-01-02T04:04:05.000000000Z", getJSON(t, base+"/minibus/clock")["now"])
	require.Equal(t, 0, stop())
}

// TestServeDataSurvives: with --data, what a run created is there at the
// next run on the same directory; SIGTERM closes the namespace cleanly.
func TestServeDataSurvives(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "Config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{"UserConfig":{"Namespaces":[{"Name":"sbemulatorns",
		"Queues":[{"Name":"kept"}],"Topics":[]}],"Logging":{"Type":"File"}}}`), 0o644))
	_, _, stop := startServe(t, "--data", dir, "--sync", "none", "--config", cfg)
	require.Equal(t, 0, stop())

	ns, err := minibus.Open(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"kept"}, ns.Queues())
	require.NoError(t, ns.Close())
	_, _, stop = startServe(t, "--data", dir)
	require.Equal(t, 0, stop())
}
