package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// The HTTP endpoint beside the AMQP listener: the emulator's /health, and
// the test-control API that lets a test in any language read and move the
// namespace's mock clock (SEMANTICS W9).
//
//	GET  /health                        200 {"status":"healthy","message":"Service is healthy."}
//	GET  /minibus/clock                 200 {"now":"<RFC 3339, 9 fraction digits, UTC>","mock":true|false}
//	POST /minibus/clock/advance?by=90s  moves the mock clock by a Go duration (0 allowed),
//	                                    waits until ns is idle, 200 {"now":"..."}
//
// A missing, bad or negative by is 400; advance without a mock clock is
// 409; a known path with another method 405 (with Allow); any other path
// 404. Every reply is application/json; errors are {"error":"..."}.

// healthReply is the official emulator's answer to GET /health, byte for
// byte.
const healthReply = `{"status":"healthy","message":"Service is healthy."}`

// clockFormat is RFC 3339 with every nanosecond digit, so that all replies
// have the same width and sort as text.
const clockFormat = "2006-01-02T15:04:05.000000000Z07:00"

// httpHandler serves the endpoint; see above.
type httpHandler struct {
	ns   *minibus.Namespace
	mock *clock.Mock // nil: the namespace runs on the real clock
	wall clock.Clock // what GET /minibus/clock reads without a mock
}

// newHTTPHandler returns the handler of the HTTP endpoint for ns. mock is
// the clock ns runs on, or nil when ns runs on the real clock: GET
// /minibus/clock then reads the namespace's clock and reports
// "mock":false, and POST /minibus/clock/advance is 409. The handler starts no goroutine; an advance waits for ns with the
// request's context, so a client that goes away ends its wait.
func newHTTPHandler(ns *minibus.Namespace, mock *clock.Mock) http.Handler {
	h := &httpHandler{ns: ns, mock: mock, wall: ns.Clock()}
	if mock != nil {
		h.wall = mock
	}
	return h
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var (
		method string
		serve  func(http.ResponseWriter, *http.Request)
	)
	switch r.URL.Path {
	case "/health":
		method, serve = http.MethodGet, h.health
	case "/minibus/clock":
		method, serve = http.MethodGet, h.clock
	case "/minibus/clock/advance":
		method, serve = http.MethodPost, h.advance
	default:
		replyError(w, http.StatusNotFound, "no such path: "+r.URL.Path)
		return
	}
	if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
		if method == http.MethodGet {
			w.Header().Set("Allow", "GET, HEAD")
		} else {
			w.Header().Set("Allow", method)
		}
		replyError(w, http.StatusMethodNotAllowed, r.Method+" "+r.URL.Path+": only "+method+" is allowed")
		return
	}
	serve(w, r)
}

func (h *httpHandler) health(w http.ResponseWriter, _ *http.Request) {
	replyRaw(w, http.StatusOK, []byte(healthReply))
}

func (h *httpHandler) clock(w http.ResponseWriter, _ *http.Request) {
	reply(w, http.StatusOK, struct {
		Now  string `json:"now"`
		Mock bool   `json:"mock"`
	}{formatTime(h.wall.Now()), h.mock != nil})
}

func (h *httpHandler) advance(w http.ResponseWriter, r *http.Request) {
	if h.mock == nil {
		replyError(w, http.StatusConflict, "the namespace runs on the real clock: only a mock clock can be advanced")
		return
	}
	by, ok := r.URL.Query()["by"]
	if !ok || len(by) == 0 {
		replyError(w, http.StatusBadRequest, `missing query parameter "by" (a Go duration, such as 90s or 1h30m)`)
		return
	}
	d, err := time.ParseDuration(by[0])
	switch {
	case err != nil:
		replyError(w, http.StatusBadRequest, "by="+strconv.Quote(by[0])+" is not a Go duration (such as 90s or 1h30m)")
		return
	case d < 0:
		replyError(w, http.StatusBadRequest, "by="+strconv.Quote(by[0])+" is negative: the clock only moves forward")
		return
	}
	h.mock.Add(d)
	if err := h.ns.WaitIdle(r.Context()); err != nil {
		status := http.StatusServiceUnavailable // the namespace closed, or the client left
		if errors.Is(err, minibus.ErrInvalidArgument) {
			status = http.StatusInternalServerError
		}
		replyError(w, status, "the clock moved to "+formatTime(h.mock.Now())+", then waiting for the namespace to be idle: "+err.Error())
		return
	}
	reply(w, http.StatusOK, struct {
		Now string `json:"now"`
	}{formatTime(h.mock.Now())})
}

func formatTime(t time.Time) string { return t.UTC().Format(clockFormat) }

// reply writes v as the JSON body of a status reply.
func reply(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil { // only the handler's own structs are replied
		status, body = http.StatusInternalServerError, []byte(`{"error":"encoding the reply failed"}`)
	}
	replyRaw(w, status, body)
}

func replyError(w http.ResponseWriter, status int, msg string) {
	reply(w, status, struct {
		Error string `json:"error"`
	}{msg})
}

func replyRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body) // a client that left gets nothing either way
}
