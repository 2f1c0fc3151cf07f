// Command healthfloor is the floor of a start to /health 200 on this
// machine: a Go program that does nothing but answer GET /health with 200
// on the address given as `serve --http ADDR` (the other flags of `minibus
// serve` are taken and ignored). wirebench times its exec to the first 200
// beside `minibus serve`'s.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: healthfloor serve --http ADDR")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("healthfloor serve", flag.ExitOnError)
	addr := fs.String("http", "127.0.0.1:5300", "the HTTP address")
	fs.String("addr", "", "ignored")
	fs.String("config", "", "ignored")
	fs.Parse(os.Args[2:])
	http.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"status":"healthy","message":"Service is healthy."}`))
	})
	if err := http.ListenAndServe(*addr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "healthfloor:", err)
		os.Exit(2)
	}
}
