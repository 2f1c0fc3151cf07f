package wire

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"syscall"
	"time"
)

// StartResult is one start of `minibus serve`: from exec to the first 200
// of GET /health.
type StartResult struct {
	Ms    float64 `json:"ms"`
	Polls int     `json:"polls"` // GETs sent, the last one answered 200
	// CPUms is the CPU time (user + system) the process used in its whole
	// life, from exec to its exit after the SIGTERM that followed the 200:
	// what the start costs, whatever the machine's load.
	CPUms float64 `json:"cpu_ms"`
}

// PollInterval is the pause between two GETs of /health while a start is
// timed.
const PollInterval = time.Millisecond

// RunStart execs bin (`minibus serve`, in memory, the Config.json at
// config) and polls GET /health until it answers 200, then stops it with
// SIGTERM.
func RunStart(ctx context.Context, bin, config string) (res StartResult, err error) {
	httpAddr, err := freePort()
	if err != nil {
		return res, err
	}
	client := &http.Client{
		Timeout:   100 * time.Millisecond,
		Transport: &http.Transport{DisableKeepAlives: true},
	}
	url := "http://" + httpAddr + "/health"
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--http", httpAddr, "--config", config)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if ps := cmd.ProcessState; ps != nil {
			res.CPUms = float64(ps.UserTime()+ps.SystemTime()) / float64(time.Millisecond)
		}
	}()
	deadline := start.Add(10 * time.Second)
	for {
		res.Polls++
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				res.Ms = float64(time.Since(start)) / float64(time.Millisecond)
				return res, nil
			}
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("no 200 from %s within 10 s (last: %v)", url, err)
		}
		select {
		case <-time.After(PollInterval):
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
}

// freePort is a loopback address whose port was free a moment ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
