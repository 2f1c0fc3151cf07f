// Command minibus serves a minibus namespace to Azure Service Bus clients
// over AMQP 1.0: a drop-in for the official Service Bus emulator, with the
// same connection string, port and Config.json, without a container or its
// limits, durable on request and on a clock a test can move.
//
// Usage:
//
//	minibus serve [--addr 127.0.0.1:5672] [--http 127.0.0.1:5300]
//	              [--config Config.json] [--data DIR] [--sync always|batched|none]
//	              [--clock real|mock|mock:2026-01-01T00:00:00Z]
//
// It prints the connection string once it listens:
//
//	Endpoint=sb://127.0.0.1:5672;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;
//
// and serves until SIGINT or SIGTERM, then closes the server and the
// namespace and exits 0. --http serves GET /health as the emulator does
// (an empty value turns it off; port 0 picks a free port, and the address
// is printed on stderr: "minibus serve: HTTP on http://127.0.0.1:PORT");
// with --clock mock it also serves the test-control API: GET
// /minibus/clock, POST /minibus/clock/advance?by=90s.
// --data keeps the namespace in a directory that survives restarts; --sync
// says when a change counts as written (minibus.WithSync). A bad flag, an
// unreadable or bad config, or an address in use exits 2 with one line
// naming the culprit.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/server"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, stop))
}

// usage is printed for a missing or unknown command.
const usage = `usage: minibus serve [--addr 127.0.0.1:5672] [--http 127.0.0.1:5300]
                     [--config Config.json] [--data DIR] [--sync always|batched|none]
                     [--clock real|mock|mock:2026-01-01T00:00:00Z] [--verbose]`

// run is the command: it returns the exit code once stop receives (or at
// once on a bad start).
func run(args []string, stdout, stderr io.Writer, stop <-chan os.Signal) int {
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("minibus serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "127.0.0.1:5672", "the AMQP address")
	httpAddr := fs.String("http", "127.0.0.1:5300", "the HTTP address (/health, the test-control API); empty: none")
	config := fs.String("config", "", "an emulator Config.json to create entities from")
	data := fs.String("data", "", "a directory for a durable namespace; empty: memory only")
	syncMode := fs.String("sync", "always", "with --data: always, batched or none")
	clockFlag := fs.String("clock", "real", "real, mock, or mock:<RFC 3339 instant>")
	verbose := fs.Bool("verbose", false, "log connections and links")
	if err := fs.Parse(args[1:]); err != nil {
		fmt.Fprintf(stderr, "minibus serve: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "minibus serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	srv, ns, err := start(*addr, *httpAddr, *config, *data, *syncMode, *clockFlag, *verbose, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "minibus serve: %v\n", err)
		return 2
	}
	fmt.Fprintln(stdout, srv.ConnectionString())
	if a := srv.HTTPAddr(); a != nil {
		fmt.Fprintf(stderr, "minibus serve: HTTP on http://%s\n", a)
	}
	<-stop
	srv.Close()
	if err := ns.Close(); err != nil {
		fmt.Fprintf(stderr, "minibus serve: closing the namespace: %v\n", err)
		return 1
	}
	return 0
}

// start opens the namespace, applies the config and listens.
func start(addr, httpAddr, config, data, syncMode, clockFlag string, verbose bool, stderr io.Writer) (*server.Server, *minibus.Namespace, error) {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	opts := []minibus.Option{minibus.WithLogger(logger)}
	mock, err := parseClock(clockFlag)
	if err != nil {
		return nil, nil, err
	}
	if mock != nil {
		opts = append(opts, minibus.WithClock(mock))
	}
	var cfg []byte
	if config != "" {
		if cfg, err = os.ReadFile(config); err != nil {
			return nil, nil, fmt.Errorf("--config: %w", err)
		}
	}
	var ns *minibus.Namespace
	if data != "" {
		mode, err := parseSync(syncMode)
		if err != nil {
			return nil, nil, err
		}
		if ns, err = minibus.Open(data, append(opts, minibus.WithSync(mode))...); err != nil {
			return nil, nil, fmt.Errorf("--data %s: %w", data, err)
		}
	} else {
		ns = minibus.NewNamespace(opts...)
	}
	if cfg != nil {
		if err := server.ApplyConfig(ns, cfg); err != nil {
			ns.Close()
			return nil, nil, fmt.Errorf("--config %s: %w", config, err)
		}
	}
	srv, err := server.Listen(ns, addr, &server.Options{HTTPAddr: httpAddr, Clock: mock, Logger: logger})
	if err != nil {
		ns.Close()
		return nil, nil, err
	}
	return srv, ns, nil
}

// parseClock reads --clock: nil for the real clock, else a mock at the
// given instant, or at the real time of the start to the second.
func parseClock(v string) (*clock.Mock, error) {
	switch {
	case v == "real":
		return nil, nil
	case v == "mock":
		m := clock.NewMock()
		m.Set(clock.New().Now().Truncate(time.Second))
		return m, nil
	case strings.HasPrefix(v, "mock:"):
		at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(v, "mock:"))
		if err != nil {
			return nil, fmt.Errorf("--clock %q: the instant is not RFC 3339 (mock:2026-01-01T00:00:00Z)", v)
		}
		m := clock.NewMock()
		m.Set(at)
		return m, nil
	}
	return nil, fmt.Errorf("--clock %q: want real, mock or mock:<RFC 3339 instant>", v)
}

// parseSync reads --sync.
func parseSync(v string) (minibus.SyncMode, error) {
	switch v {
	case "always":
		return minibus.SyncAlways, nil
	case "batched":
		return minibus.SyncBatched, nil
	case "none":
		return minibus.SyncNone, nil
	}
	return 0, errors.New("--sync " + fmt.Sprintf("%q", v) + ": want always, batched or none")
}
