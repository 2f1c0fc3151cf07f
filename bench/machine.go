package bench

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Machine describes where a run happened.
type Machine struct {
	GOMAXPROCS int               `json:"gomaxprocs"`
	NumCPU     int               `json:"num_cpu"`
	GoVersion  string            `json:"go_version"`
	OSArch     string            `json:"os_arch"`
	CPU        string            `json:"cpu"`      // "model name" of /proc/cpuinfo
	Versions   map[string]string `json:"versions"` // module path → version, for the peers
}

// peerModules are the modules whose versions the report names.
var peerModules = []string{
	"github.com/minibus-go/minibus",
	"github.com/nats-io/nats-server/v2",
	"github.com/nats-io/nats.go",
	"github.com/ThreeDotsLabs/watermill",
	"maragu.dev/goqite",
	"github.com/mattn/go-sqlite3",
	"github.com/google/btree",
}

// ThisMachine describes the running process's machine.
func ThisMachine() Machine {
	m := Machine{
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		NumCPU:     runtime.NumCPU(),
		GoVersion:  runtime.Version(),
		OSArch:     runtime.GOOS + "/" + runtime.GOARCH,
		CPU:        cpuModel(),
		Versions:   map[string]string{},
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			v := d.Version
			if d.Replace != nil {
				v = "replaced by " + d.Replace.Path
			}
			for _, p := range peerModules {
				if d.Path == p {
					m.Versions[p] = v
				}
			}
		}
	}
	return m
}

// cpuModel is the first "model name" of /proc/cpuinfo, or "unknown".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// cpuSample is the machine's busy CPU time (all CPUs, stolen time included)
// and this process's CPU time, at one instant.
type cpuSample struct {
	busy, self time.Duration
	ok         bool
}

// userHZ is the unit of /proc/stat: USER_HZ, 100 on every Linux in use.
const userHZ = 100

// sampleCPU reads /proc/stat and getrusage; ok is false where either fails.
func sampleCPU() cpuSample {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuSample{}
	}
	self := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuSample{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuSample{}
	}
	var ticks int64
	// user nice system idle iowait irq softirq steal: all but idle and iowait.
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return cpuSample{}
		}
		ticks += v
	}
	return cpuSample{busy: time.Duration(ticks) * time.Second / userHZ, self: self, ok: true}
}

// otherCores is how many CPUs, on average, processes other than this one
// (and the hypervisor's other guests) kept busy between a and b; -1 if
// unknown or if wall is too short for /proc/stat's 10 ms ticks.
func otherCores(a, b cpuSample, wall time.Duration) float64 {
	if !a.ok || !b.ok || wall < 200*time.Millisecond {
		return -1
	}
	other := (b.busy - a.busy) - (b.self - a.self)
	return max(float64(other)/float64(wall), 0)
}
