package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/minibus-go/minibus/server"
)

// serve runs one request through h and returns the recorded reply, which
// must be JSON.
func serve(t *testing.T, h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, "application/json", w.Header().Get("Content-Type"))
	return w
}

func get(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	return serve(t, h, httptest.NewRequest(http.MethodGet, target, nil))
}

func post(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	return serve(t, h, httptest.NewRequest(http.MethodPost, target, nil))
}

// body decodes a JSON object reply.
func body(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &m), w.Body.String())
	return m
}

// The emulator's health check, byte for byte, with or without a mock clock.
func TestHTTPHealth(t *testing.T) {
	env := minibustest.New(t)
	for _, h := range []http.Handler{
		server.NewHTTPHandler(env.Namespace(), env.Clock()),
		server.NewHTTPHandler(env.Namespace(), nil),
	} {
		w := get(t, h, "/health")
		require.Equal(t, http.StatusOK, w.Code)
		require.Equal(t, `{"status":"healthy","message":"Service is healthy."}`, w.Body.String())

		w = serve(t, h, httptest.NewRequest(http.MethodHead, "/health", nil))
		require.Equal(t, http.StatusOK, w.Code)

		w = post(t, h, "/health")
		require.Equal(t, http.StatusMethodNotAllowed, w.Code)
		require.Equal(t, "GET, HEAD", w.Header().Get("Allow"))
		require.Contains(t, body(t, w)["error"], "POST /health")
	}
}

func TestHTTPClockRead(t *testing.T) {
	env := minibustest.New(t)
	h := server.NewHTTPHandler(env.Namespace(), env.Clock())
	w := get(t, h, "/minibus/clock")
	require.Equal(t, http.StatusOK, w.Code)
	require.JSONEq(t, `{"now":"2026-01-01T00:00:00.000000000Z","mock":true}`, w.Body.String())

	env.Clock().Add(1500 * time.Millisecond)
	require.JSONEq(t, `{"now":"2026-01-01T00:00:01.500000000Z","mock":true}`, get(t, h, "/minibus/clock").Body.String())

	// Without a mock the namespace runs on the real clock, which GET reads.
	wall := minibus.NewNamespace()
	defer wall.Close()
	real := server.NewHTTPHandler(wall, nil)
	before := time.Now()
	w = get(t, real, "/minibus/clock")
	after := time.Now()
	require.Equal(t, http.StatusOK, w.Code)
	m := body(t, w)
	require.Equal(t, false, m["mock"])
	now, err := time.Parse(time.RFC3339Nano, m["now"].(string))
	require.NoError(t, err)
	require.Equal(t, time.UTC, now.Location())
	require.False(t, now.Before(before.Truncate(time.Nanosecond)) || now.After(after), "%v not in [%v, %v]", now, before, after)
}

// An advance moves the mock clock by a Go duration and returns the new
// time (W9).
func TestHTTPClockAdvance(t *testing.T) {
	env := minibustest.New(t)
	h := server.NewHTTPHandler(env.Namespace(), env.Clock())
	w := post(t, h, "/minibus/clock/advance?by=90s")
	require.Equal(t, http.StatusOK, w.Code)
	require.JSONEq(t, `{"now":"2026-01-01T00:01:30.000000000Z"}`, w.Body.String())
	require.Equal(t, time.Date(2026, 1, 1, 0, 1, 30, 0, time.UTC), env.Clock().Now().UTC())

	w = post(t, h, "/minibus/clock/advance?by=1h2m3.5s")
	require.JSONEq(t, `{"now":"2026-01-01T01:03:33.500000000Z"}`, w.Body.String())
	w = post(t, h, "/minibus/clock/advance?by=0s")
	require.Equal(t, http.StatusOK, w.Code, "0 waits for idle without moving")
	require.JSONEq(t, `{"now":"2026-01-01T01:03:33.500000000Z"}`, w.Body.String())
}

func TestHTTPClockAdvanceRefused(t *testing.T) {
	env := minibustest.New(t)
	h := server.NewHTTPHandler(env.Namespace(), env.Clock())
	start := env.Clock().Now()
	cases := []struct {
		target, text string
	}{
		{"/minibus/clock/advance", `missing query parameter "by"`},
		{"/minibus/clock/advance?by=", `by="" is not a Go duration`},
		{"/minibus/clock/advance?by=abc", `by="abc" is not a Go duration`},
		{"/minibus/clock/advance?by=PT1M", `by="PT1M" is not a Go duration`},
		{"/minibus/clock/advance?by=90", `by="90" is not a Go duration`},
		{"/minibus/clock/advance?by=-5s", `by="-5s" is negative`},
	}
	for _, tc := range cases {
		w := post(t, h, tc.target)
		require.Equal(t, http.StatusBadRequest, w.Code, tc.target)
		require.Contains(t, body(t, w)["error"], tc.text, tc.target)
	}
	require.Equal(t, start, env.Clock().Now(), "a refused advance does not move the clock")

	w := get(t, h, "/minibus/clock/advance?by=1s")
	require.Equal(t, http.StatusMethodNotAllowed, w.Code)
	require.Equal(t, "POST", w.Header().Get("Allow"))
	w = post(t, h, "/minibus/clock")
	require.Equal(t, http.StatusMethodNotAllowed, w.Code)
	for _, path := range []string{"/", "/minibus", "/minibus/clock/", "/minibus/clock/advance/x", "/Health"} {
		w := get(t, h, path)
		require.Equal(t, http.StatusNotFound, w.Code, path)
		require.Contains(t, body(t, w)["error"], path)
	}

	// Without a mock clock there is nothing to advance.
	real := server.NewHTTPHandler(env.Namespace(), nil)
	w = post(t, real, "/minibus/clock/advance?by=1s")
	require.Equal(t, http.StatusConflict, w.Code)
	require.Contains(t, body(t, w)["error"], "real clock")
}

// A scheduled message is due once an advance passes its time, and the
// advance has returned by then: the next receive finds it (S1, W9).
func TestHTTPAdvanceMakesScheduledMessageDue_S1_W9(t *testing.T) {
	env := minibustest.New(t)
	ns := env.Namespace()
	h := server.NewHTTPHandler(ns, env.Clock())
	q, err := ns.CreateQueue("later", nil)
	require.NoError(t, err)
	ctx := context.Background()
	at := env.Clock().Now().Add(time.Minute)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{MessageID: "m", ScheduledEnqueueTime: at}, nil))
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(ctx)
	noWait := &minibus.ReceiveMessagesOptions{NoWait: true}

	require.Equal(t, http.StatusOK, post(t, h, "/minibus/clock/advance?by=59s").Code)
	msgs, err := r.ReceiveMessages(ctx, 1, noWait)
	require.NoError(t, err)
	require.Empty(t, msgs, "not due before its time")

	require.Equal(t, http.StatusOK, post(t, h, "/minibus/clock/advance?by=31s").Code)
	msgs, err = r.ReceiveMessages(ctx, 1, noWait)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, "m", msgs[0].MessageID)
	require.Equal(t, at, msgs[0].EnqueuedTime)
}

// An advance returns once the namespace is idle: a processor has handled
// the message the advance made due (W9).
func TestHTTPAdvanceWaitsForProcessors_W9(t *testing.T) {
	env := minibustest.New(t)
	ns := env.Namespace()
	h := server.NewHTTPHandler(ns, env.Clock())
	q, err := ns.CreateQueue("work", nil)
	require.NoError(t, err)
	var handled atomic.Int32
	p, err := q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error {
		handled.Add(1)
		return nil
	}, nil)
	require.NoError(t, err)
	stop := env.Start(p)
	defer func() { require.NoError(t, stop()) }()
	_, err = q.ScheduleMessages(context.Background(), []*minibus.Message{{MessageID: "a"}, {MessageID: "b"}},
		env.Clock().Now().Add(time.Hour), nil)
	require.NoError(t, err)

	require.Equal(t, http.StatusOK, post(t, h, "/minibus/clock/advance?by=1h").Code)
	require.Equal(t, int32(2), handled.Load())
	require.Zero(t, q.RuntimeProperties().ActiveMessageCount)
}

// A client that goes away while the namespace is busy ends the wait: 503,
// and the clock has moved.
func TestHTTPAdvanceCancelled(t *testing.T) {
	env := minibustest.New(t)
	ns := env.Namespace()
	h := server.NewHTTPHandler(ns, env.Clock())
	q, err := ns.CreateQueue("slow", nil)
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	p, err := q.NewProcessor(func(context.Context, *minibus.ReceivedMessage) error {
		close(entered)
		<-release
		return nil
	}, nil)
	require.NoError(t, err)
	stop := env.Start(p)
	defer func() { require.NoError(t, stop()) }()
	require.NoError(t, q.SendMessage(context.Background(), &minibus.Message{MessageID: "m"}, nil))
	<-entered

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := serve(t, h, httptest.NewRequestWithContext(ctx, http.MethodPost, "/minibus/clock/advance?by=1s", nil))
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.Contains(t, body(t, w)["error"], "the clock moved to 2026-01-01T00:00:01.000000000Z")
	close(release)
	env.WaitIdle()
}
