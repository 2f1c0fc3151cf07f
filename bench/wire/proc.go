package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Broker names, as the results and the report name them.
const (
	Minibus = "minibus"
	Proton  = "proton"
)

// QueueName is the queue every run sends to and receives from: created by
// the Config.json given to minibus, created on first use by the Proton
// broker.
const QueueName = "bench"

// ConfigJSON is the emulator Config.json that gives minibus the queue.
const ConfigJSON = `{"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [{"Name": "` + QueueName + `"}]}]}}`

// BrokerCommand says how to start a broker: its binary and, for minibus,
// the Config.json to give it. A minibus binary is anything that takes
// `serve --addr --http --config` as cmd/minibus does (the real command, or
// wirebench's own serve, which can also write a CPU profile).
type BrokerCommand struct {
	Name   string   // Minibus or Proton
	Bin    string   // the binary
	Config string   // minibus: the Config.json path
	Extra  []string // more arguments (wirebench serve: -cpuprofile PATH)
	HTTP   string   // minibus: the --http address; "" for none
}

// Process is a broker running in a process of its own.
type Process struct {
	Name string
	Addr string // host:port of its AMQP listener
	Pid  int

	cmd    *exec.Cmd
	waited chan struct{}
	err    error
}

// Start starts the broker and returns once it listens: minibus prints its
// connection string, the Proton example broker "listening on PORT". Both
// listen on a port the kernel picks. stderr receives the broker's own
// output after that line.
func (b BrokerCommand) Start(stderr io.Writer) (*Process, error) {
	var args []string
	switch b.Name {
	case Minibus:
		args = append([]string{"serve", "--addr", "127.0.0.1:0", "--http", b.HTTP, "--config", b.Config}, b.Extra...)
	case Proton:
		args = []string{"127.0.0.1", "0"}
	default:
		return nil, fmt.Errorf("unknown broker %q", b.Name)
	}
	cmd := exec.Command(b.Bin, args...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", b.Bin, err)
	}
	p := &Process{Name: b.Name, Pid: cmd.Process.Pid, cmd: cmd, waited: make(chan struct{})}
	lines := bufio.NewReader(out)
	ready := make(chan error, 1)
	go func() {
		for {
			line, err := lines.ReadString('\n')
			if err != nil {
				ready <- fmt.Errorf("%s exited before it listened: %w", b.Name, err)
				return
			}
			if addr, ok := parseReady(b.Name, line); ok {
				p.Addr = addr
				ready <- nil
				break
			}
		}
		io.Copy(stderr, lines) // the rest: the broker's log lines, if any
	}()
	select {
	case err = <-ready:
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("%s did not say it listens within 30 s", b.Name)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.waited)
	}()
	if err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// parseReady reads the broker's ready line: the address it listens on.
func parseReady(name, line string) (string, bool) {
	line = strings.TrimSpace(line)
	switch name {
	case Minibus:
		rest, ok := strings.CutPrefix(line, "Endpoint=sb://")
		if !ok {
			return "", false
		}
		addr, _, _ := strings.Cut(rest, ";")
		return addr, true
	case Proton:
		port, ok := strings.CutPrefix(line, "listening on ")
		if !ok {
			return "", false
		}
		return "127.0.0.1:" + port, true
	}
	return "", false
}

// Stop ends the broker: SIGTERM (minibus closes cleanly and writes its
// profile), then SIGKILL after 10 s (the Proton example broker does not
// handle signals: SIGTERM ends it).
func (p *Process) Stop() error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.waited:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.waited
		return fmt.Errorf("%s did not stop within 10 s of SIGTERM: killed", p.Name)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
		return nil // ended by the SIGTERM
	}
	return p.err
}

// userHZ is the unit of /proc/<pid>/stat's times: USER_HZ, 100 on every
// Linux in use.
const userHZ = 100

// ProcCPU is the CPU time (user + system) process pid has used, from
// /proc/<pid>/stat, in 10 ms ticks.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// after its closing parenthesis, field 3 (state) first.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// SelfCPU is this process's CPU time (user + system), from getrusage.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ProcRSS is the resident set size of process pid in bytes, from
// /proc/<pid>/status (VmRSS).
func ProcRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		v, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status: VmRSS %q: %w", pid, v, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// LoadAvg is the machine's load averages over 1, 5 and 15 minutes, as
// uptime prints them ("" if unreadable).
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
