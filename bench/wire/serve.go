package wire

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/server"
)

// Serve is what `minibus serve --addr --http --config` does, in memory,
// plus --cpuprofile: a CPU profile of the whole serve, written when stop
// receives. Profiled SDK runs use it for the server's side, since the
// command itself writes no profile. It prints the connection string once
// it listens and returns the exit code.
func Serve(args []string, stdout, stderr io.Writer, stop <-chan os.Signal) int {
	fs := flag.NewFlagSet("wirebench serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:5672", "the AMQP address")
	httpAddr := fs.String("http", "", "the HTTP address; empty: none")
	config := fs.String("config", "", "an emulator Config.json")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the serve to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "wirebench serve: %v\n", err)
		return 2
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	ns := minibus.NewNamespace()
	defer ns.Close()
	if *config != "" {
		b, err := os.ReadFile(*config)
		if err != nil {
			return fail(err)
		}
		if err := server.ApplyConfig(ns, b); err != nil {
			return fail(err)
		}
	}
	srv, err := server.Listen(ns, *addr, &server.Options{HTTPAddr: *httpAddr})
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(stdout, srv.ConnectionString())
	<-stop
	srv.Close()
	return 0
}
