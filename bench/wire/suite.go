package wire

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"time"
)

// Kinds of run.
const (
	KindLayer = "layer" // go-amqp sends and receives through one broker
	KindIdle  = "idle"  // connections opened, one message each, then idle
	KindSDK   = "sdk"   // azservicebus end to end through minibus
	KindStart = "start" // exec of `minibus serve` (and of the floor, healthfloor) to /health 200, Runs times each, taking turns
)

// Spec is one run of the suite, run in a process of its own.
type Spec struct {
	Kind       string `json:"kind"`
	Broker     string `json:"broker"`
	Rep        int    `json:"rep"`
	Credit     int    `json:"credit,omitempty"`
	Presettled bool   `json:"presettled,omitempty"`
	N          int    `json:"n,omitempty"`
	Warmup     int    `json:"warmup,omitempty"`
	Conns      int    `json:"conns,omitempty"`
	Completers int    `json:"completers,omitempty"`
	Runs       int    `json:"runs,omitempty"`
	Paced      int    `json:"paced,omitempty"` // layer: messages of the paced phase, one per PaceInterval
	// PaceInterval is a Go duration ("1ms").
	PaceInterval string `json:"pace_interval,omitempty"`
	// Profile: minibus is wirebench's own serve (the same server.Listen
	// as `minibus serve`) writing a CPU profile, and this process
	// profiles itself over the measured phase (SDK runs) or the whole run,
	// both into the results directory.
	Profile bool `json:"profile,omitempty"`
}

// Name is a short label of the spec, unique within a repetition.
func (s Spec) Name() string {
	switch s.Kind {
	case KindLayer:
		mode := "confirmed"
		if s.Presettled {
			mode = "presettled"
		}
		p := ""
		if s.Profile {
			p = "-profiled"
		}
		return fmt.Sprintf("layer-%s-%s-credit%d%s", s.Broker, mode, s.Credit, p)
	case KindIdle:
		return fmt.Sprintf("idle-%s-%d", s.Broker, s.Conns)
	case KindSDK:
		p := ""
		if s.Profile {
			p = "-profiled"
		}
		return fmt.Sprintf("sdk-complete%d%s", s.Completers, p)
	}
	return s.Kind
}

// Record is a run's spec and what it measured, or why it failed.
type Record struct {
	Spec  Spec          `json:"spec"`
	Layer *LayerResult  `json:"layer,omitempty"`
	Idle  *IdleResult   `json:"idle,omitempty"`
	SDK   *SDKResult    `json:"sdk,omitempty"`
	Start []StartResult `json:"start,omitempty"`
	Floor []StartResult `json:"floor,omitempty"` // the same for healthfloor
	Err   string        `json:"error,omitempty"`
	// LoadAfter is the machine's load averages when the run ended.
	LoadAfter string  `json:"load_after"`
	Seconds   float64 `json:"seconds"` // the whole run, broker start to stop
}

// Scale sets the sizes of a suite.
type Scale struct {
	Reps         int
	LayerSettled int // messages of a pre-settled layer run
	LayerConfirm int // messages of a confirmed layer run
	Paced        int // messages of a layer run's paced phase, one a millisecond
	Conns        int // connections of an idle run
	SDK          int // messages of an SDK run
	StartRuns    int
}

// FullScale is the suite's full size: a few seconds per run.
var FullScale = Scale{Reps: 3, LayerSettled: 50000, LayerConfirm: 10000, Paced: 2000, Conns: 1000, SDK: 20000, StartRuns: 20}

// SmokeScale runs everything once at its smallest: does the command work?
var SmokeScale = Scale{Reps: 1, LayerSettled: 200, LayerConfirm: 100, Paced: 20, Conns: 10, SDK: 200, StartRuns: 2}

// Credits are the receiver link credits of the layer runs.
var Credits = []int{1, 100, 1000}

// Plan lists the suite's runs in the order they run: each repetition
// runs every layer configuration on both brokers, alternating which goes
// first, then the idle runs, then the SDK runs; then one profiled SDK run
// per mode; then the starts. brokers lists the brokers to run (Proton may
// be missing).
func Plan(sc Scale, brokers []string) []Spec {
	var specs []Spec
	pair := func(i, rep int, s Spec) {
		order := slices.Clone(brokers)
		if (i+rep)%2 == 1 {
			slices.Reverse(order)
		}
		for _, b := range order {
			s.Broker = b
			specs = append(specs, s)
		}
	}
	for rep := range sc.Reps {
		i := 0
		for _, pre := range []bool{true, false} {
			for _, credit := range Credits {
				n := sc.LayerConfirm
				if pre {
					n = sc.LayerSettled
				}
				pair(i, rep, Spec{Kind: KindLayer, Rep: rep, Credit: credit, Presettled: pre, N: n, Warmup: max(n/20, 10), Paced: sc.Paced, PaceInterval: "1ms"})
				i++
			}
		}
		pair(i, rep, Spec{Kind: KindIdle, Rep: rep, Conns: sc.Conns})
		for _, c := range []int{1, 8} {
			specs = append(specs, Spec{Kind: KindSDK, Broker: Minibus, Rep: rep, N: sc.SDK, Warmup: 200, Completers: c})
		}
	}
	for _, c := range []int{1, 8} {
		specs = append(specs, Spec{Kind: KindSDK, Broker: Minibus, N: sc.SDK, Warmup: 200, Completers: c, Profile: true})
	}
	specs = append(specs, Spec{Kind: KindStart, Broker: Minibus, Runs: sc.StartRuns})
	return specs
}

// Env is where a run finds its brokers and puts its files.
type Env struct {
	MinibusBin string // cmd/minibus, built
	FloorBin   string // cmd/healthfloor, built; "" for none
	ProtonBin  string // the Proton example broker, built; "" if skipped
	SelfBin    string // wirebench, for its serve (profiled SDK runs)
	Results    string // the results directory: Config.json, profiles
	Log        io.Writer
}

// configPath writes the Config.json into the results directory once.
func (e Env) configPath() (string, error) {
	p := filepath.Join(e.Results, "amqp-config.json")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return p, os.WriteFile(p, []byte(ConfigJSON), 0o644)
}

// RunSpec runs one spec: starts its broker, measures, stops the broker.
func RunSpec(ctx context.Context, s Spec, env Env) Record {
	rec := Record{Spec: s}
	start := time.Now()
	err := runSpec(ctx, s, env, &rec)
	rec.Seconds = time.Since(start).Seconds()
	rec.LoadAfter = LoadAvg()
	if err != nil {
		rec.Err = err.Error()
	}
	return rec
}

func runSpec(ctx context.Context, s Spec, env Env, rec *Record) error {
	config, err := env.configPath()
	if err != nil {
		return err
	}
	if s.Kind == KindStart {
		for range s.Runs {
			r, err := RunStart(ctx, env.MinibusBin, config)
			if err != nil {
				return err
			}
			rec.Start = append(rec.Start, r)
			if env.FloorBin != "" {
				r, err := RunStart(ctx, env.FloorBin, config)
				if err != nil {
					return fmt.Errorf("healthfloor: %w", err)
				}
				rec.Floor = append(rec.Floor, r)
			}
		}
		return nil
	}
	bc := BrokerCommand{Name: s.Broker, Bin: env.MinibusBin, Config: config}
	if s.Broker == Proton {
		bc.Bin = env.ProtonBin
	}
	var clientProfile *os.File
	if s.Profile && s.Broker == Minibus {
		bc.Bin = env.SelfBin
		bc.Extra = []string{"--cpuprofile", filepath.Join(env.Results, "amqp-"+s.Name()+"-server.pprof")}
	}
	if s.Profile {
		if clientProfile, err = os.Create(filepath.Join(env.Results, "amqp-"+s.Name()+"-client.pprof")); err != nil {
			return err
		}
		defer clientProfile.Close()
		if s.Kind != KindSDK {
			if err := pprof.StartCPUProfile(clientProfile); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
		}
	}
	p, err := bc.Start(env.Log)
	if err != nil {
		return err
	}
	var runErr error
	switch s.Kind {
	case KindLayer:
		var r LayerResult
		cfg := LayerConfig{Broker: s.Broker, Addr: p.Addr, Credit: s.Credit, Presettled: s.Presettled, N: s.N, Warmup: s.Warmup, Paced: s.Paced}
		if s.PaceInterval != "" {
			if cfg.PaceInterval, runErr = time.ParseDuration(s.PaceInterval); runErr != nil {
				cfg.Paced = 0
			}
		}
		if runErr == nil {
			r, runErr = RunLayer(ctx, cfg, p.Pid)
		}
		rec.Layer = &r
	case KindIdle:
		var r IdleResult
		r, runErr = RunIdle(ctx, IdleConfig{Broker: s.Broker, Addr: p.Addr, Conns: s.Conns, Parallel: 16, Settle: time.Second}, p.Pid)
		rec.Idle = &r
	case KindSDK:
		cfg := SDKConfig{ConnStr: ConnectionString(p.Addr), N: s.N, Batch: 100, Completers: s.Completers, Warmup: s.Warmup}
		if clientProfile != nil {
			cfg.ClientProfile = clientProfile
		}
		var r SDKResult
		r, runErr = RunSDK(ctx, cfg, p.Pid)
		rec.SDK = &r
	default:
		runErr = fmt.Errorf("unknown kind %q", s.Kind)
	}
	if err := p.Stop(); err != nil && runErr == nil {
		runErr = fmt.Errorf("stop %s: %w", s.Broker, err)
	}
	return runErr
}

// ConnectionString is the emulator's connection string for a server at
// addr (host:port), as `minibus serve` prints it.
func ConnectionString(addr string) string {
	return "Endpoint=sb://" + addr + ";SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;"
}

// itoa is strconv.Itoa, short.
func itoa(n int) string { return strconv.Itoa(n) }
