package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"

	"github.com/benbjohnson/clock"

	"github.com/minibus-go/minibus"
)

// Options configures [Listen]. The zero value (or nil) serves AMQP only, on
// the namespace's logger.
type Options struct {
	// HTTPAddr, when set, serves GET /health on it with the official
	// emulator's reply: 200 {"status":"healthy","message":"Service is healthy."}.
	// Default "": no HTTP endpoint.
	HTTPAddr string
	// Clock, when set, is the mock clock the namespace runs on, and HTTPAddr
	// also serves the test-control API, so a test in any language can
	// travel in time:
	//
	//	GET  /minibus/clock                 200 {"now":"<RFC 3339, ns>","mock":true}
	//	POST /minibus/clock/advance?by=90s  moves the clock by a Go duration,
	//	     returns once the namespace is idle (WaitIdle) with
	//	     200 {"now":"..."}; a bad or negative duration is 400.
	//
	// Without Clock, GET answers {"now":...,"mock":false} and POST is 409.
	// Default nil.
	Clock *clock.Mock
	// Logger receives connections, links and protocol errors (Debug for
	// the ordinary, Warn for a peer's protocol error). Default: the
	// namespace's logger ([minibus.WithLogger]).
	Logger *slog.Logger

	// flow, when set, replaces the link credit and the session window
	// this side grants a sending peer: for the tests of the flow-control
	// checks (a peer that sends beyond them), which the defaults, topped up
	// as the peer's transfers are read, never let a peer reach.
	flow *flowLimits
}

// flowLimits is what this side grants a sending peer.
type flowLimits struct{ credit, window uint32 }

// Server serves a [minibus.Namespace] over AMQP 1.0 to Azure Service Bus
// clients (SEMANTICS group W). Create one with [Listen]; it is safe for
// concurrent use.
type Server struct {
	ns    *minibus.Namespace
	log   *slog.Logger
	clock clock.Clock // real time: keep-alives and accept timeouts belong to the connection (W9)
	ln    net.Listener
	flow  flowLimits // the link credit and session window this side grants
	http  *http.Server
	hln   net.Listener

	// ctx is cancelled by Close; every connection's context derives from it.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	conns  map[*conn]struct{} // open connections
	closed bool
	wg     sync.WaitGroup // the accept loop, the HTTP server and every connection
}

// Listen serves ns on addr ("127.0.0.1:0" picks a free port) until Close.
// Every SASL mechanism the SDKs offer is accepted (ANONYMOUS, MSSBCBS,
// PLAIN, EXTERNAL) and every $cbs token; nothing is limited but memory. A
// nil namespace, or an address that cannot be listened on, is
// ErrInvalidArgument naming it.
func Listen(ns *minibus.Namespace, addr string, opts *Options) (*Server, error) {
	if ns == nil {
		return nil, fmt.Errorf("minibus server: nil *Namespace: %w", minibus.ErrInvalidArgument)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("minibus server: listen on %q: %w: %w", addr, minibus.ErrInvalidArgument, err)
	}
	s := &Server{ns: ns, log: o.Logger, clock: clock.New(), ln: ln, conns: map[*conn]struct{}{},
		flow: flowLimits{credit: linkCredit, window: incomingWindow}}
	if o.flow != nil {
		s.flow = *o.flow
	}
	if s.log == nil {
		s.log = ns.Logger()
	}
	if o.HTTPAddr != "" {
		hln, err := net.Listen("tcp", o.HTTPAddr)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("minibus server: listen on %q (HTTP): %w: %w", o.HTTPAddr, minibus.ErrInvalidArgument, err)
		}
		s.hln = hln
		s.http = &http.Server{Handler: newHTTPHandler(ns, o.Clock), ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.accept()
	if s.http != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.http.Serve(s.hln) // returns http.ErrServerClosed at Close
		}()
	}
	s.log.Debug("minibus server: listening", "addr", ln.Addr().String(), "http", o.HTTPAddr)
	return s, nil
}

// Addr is the AMQP listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// HTTPAddr is the HTTP listener's address, or nil without
// [Options.HTTPAddr].
func (s *Server) HTTPAddr() net.Addr {
	if s.hln == nil {
		return nil
	}
	return s.hln.Addr()
}

// ConnectionString is what an SDK client is given: the official emulator's
// connection string, with this server's address:
//
//	Endpoint=sb://127.0.0.1:PORT;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;
//
// A server listening on every interface is named by 127.0.0.1.
func (s *Server) ConnectionString() string {
	host, port := "127.0.0.1", "5672"
	if a, ok := s.ln.Addr().(*net.TCPAddr); ok {
		port = strconv.Itoa(a.Port)
		if !a.IP.IsUnspecified() {
			host = a.IP.String()
			if a.IP.To4() == nil {
				host = "[" + host + "]"
			}
		}
	}
	return "Endpoint=sb://" + host + ":" + port +
		";SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;"
}

// Close stops accepting, closes every connection (clients see the
// connection closed with amqp:connection:forced, not a hang) and returns
// once no goroutine of the server is left. The namespace stays open: its
// owner closes it. Close is idempotent and returns nil.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	s.ln.Close()
	if s.http != nil {
		s.http.Close()
	}
	for _, c := range conns {
		c.shutdown(errServerClosing)
	}
	s.cancel()
	s.wg.Wait()
	return nil
}

// accept runs until the listener is closed, serving each connection on
// goroutines of its own.
func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed
		}
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}
