package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/minibus-go/minibus/server"
)

// The tests of this file and of badinput_test.go speak to the server over a
// socket through the project's own codec, frame by frame, so that they can
// send what no real client sends (SEMANTICS W1, issue "Bad input").

const (
	// wireTimeout bounds every wait for the server.
	wireTimeout = 5 * time.Second
	// wireMaxFrame is the max-frame-size the raw client announces.
	wireMaxFrame = 64 << 10
	// wireQueue is the queue every wire environment has.
	wireQueue = "q"
	// healthyQueue is the queue of the healthy connections.
	healthyQueue = "healthy"
)

// wireEnv is a namespace on a mock clock with the queue "q", served on a
// loopback port.
type wireEnv struct {
	t   testing.TB
	env *minibustest.Env
	ns  *minibus.Namespace
	q   *minibus.Queue
	srv *server.Server
}

func newWireEnv(t testing.TB, opts *server.Options) *wireEnv {
	t.Helper()
	env := minibustest.New(t)
	q, err := env.Namespace().CreateQueue(wireQueue, &minibus.QueueProperties{MaxMessageSizeInKilobytes: 1024})
	require.NoError(t, err)
	_, err = env.Namespace().CreateQueue(healthyQueue, nil)
	require.NoError(t, err)
	srv, err := server.Listen(env.Namespace(), "127.0.0.1:0", opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	return &wireEnv{t: t, env: env, ns: env.Namespace(), q: q, srv: srv}
}

// dial connects a raw client that has sent nothing yet.
func (e *wireEnv) dial() *wire {
	e.t.Helper()
	nc, err := net.DialTimeout("tcp", e.srv.Addr().String(), wireTimeout)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { nc.Close() })
	return &wire{t: e.t, nc: nc, maxIn: wireMaxFrame}
}

// open connects a raw client through the AMQP header and open exchange
// (no SASL), announcing max-frame-size maxFrame and no idle-time-out.
func (e *wireEnv) open() *wire {
	e.t.Helper()
	w := e.dial()
	w.handshake(wireMaxFrame, 0)
	return w
}

// activeCount is the queue's active message count.
func (e *wireEnv) activeCount() int64 { return e.q.RuntimeProperties().ActiveMessageCount }

// bodies peeks at the queue's messages and returns their bodies, oldest
// first.
func (e *wireEnv) bodies() []string {
	e.t.Helper()
	r, err := e.q.NewReceiver(nil)
	require.NoError(e.t, err)
	defer r.Close(context.Background())
	msgs, err := r.PeekMessages(context.Background(), 1000, nil)
	require.NoError(e.t, err)
	out := []string{}
	for _, m := range msgs {
		out = append(out, string(m.Body))
	}
	return out
}

// wire is a raw AMQP client: it writes frames as told and reads the
// server's, each read bounded by wireTimeout.
type wire struct {
	t     testing.TB
	nc    net.Conn
	buf   []byte
	maxIn uint32 // the largest frame this client accepts
	peer  *amqp.Open
}

// raw writes b, failing the test if the socket takes it not.
func (w *wire) raw(b []byte) {
	w.t.Helper()
	require.NoError(w.t, w.nc.SetWriteDeadline(time.Now().Add(wireTimeout)))
	_, err := w.nc.Write(b)
	require.NoError(w.t, err)
}

// frame encodes one frame.
func frame(t testing.TB, typ uint8, ch uint16, body amqp.Performative) []byte {
	t.Helper()
	b, err := amqp.AppendFrame(nil, typ, ch, body)
	require.NoError(t, err)
	return b
}

// send writes one AMQP frame on channel ch.
func (w *wire) send(ch uint16, body amqp.Performative) {
	w.t.Helper()
	w.raw(frame(w.t, amqp.FrameAMQP, ch, body))
}

// read reads the next frame, empty frames included.
func (w *wire) read() (amqp.Frame, error) {
	if err := w.nc.SetReadDeadline(time.Now().Add(wireTimeout)); err != nil {
		return amqp.Frame{}, err
	}
	return amqp.ReadFrame(w.nc, &w.buf, w.maxIn)
}

// next is the next frame that is not empty.
func (w *wire) next() amqp.Frame {
	w.t.Helper()
	for {
		fr, err := w.read()
		require.NoError(w.t, err, "reading a frame")
		if fr.Body != nil {
			return fr
		}
	}
}

// expect reads frames up to one of type T and returns it, skipping empty
// frames and (unless T is *amqp.Flow) flows; any other frame fails the
// test.
func expect[T amqp.Performative](w *wire) T {
	w.t.Helper()
	for {
		fr := w.next()
		if b, ok := fr.Body.(T); ok {
			return b
		}
		if _, ok := fr.Body.(*amqp.Flow); ok {
			continue
		}
		var want T
		require.FailNow(w.t, "unexpected frame", "want %T, got %s", want, describe(fr.Body))
	}
}

// describe formats a frame body for a failure message.
func describe(b amqp.Performative) string {
	switch b := b.(type) {
	case *amqp.Close:
		return fmt.Sprintf("close %v", b.Error)
	case *amqp.End:
		return fmt.Sprintf("end %v", b.Error)
	case *amqp.Detach:
		return fmt.Sprintf("detach handle %d %v", b.Handle, b.Error)
	case *amqp.Transfer:
		return fmt.Sprintf("transfer handle %d (%d octets)", b.Handle, len(b.Payload))
	}
	return fmt.Sprintf("%T %+v", b, b)
}

// readHeader reads a protocol header.
func (w *wire) readHeader() [8]byte {
	w.t.Helper()
	var h [8]byte
	require.NoError(w.t, w.nc.SetReadDeadline(time.Now().Add(wireTimeout)))
	_, err := io.ReadFull(w.nc, h[:])
	require.NoError(w.t, err, "reading a protocol header")
	return h
}

// handshake exchanges AMQP headers and open frames.
func (w *wire) handshake(maxFrame, idle uint32) *amqp.Open {
	w.t.Helper()
	w.maxIn = maxFrame
	w.raw(amqp.ProtoAMQP[:])
	w.send(0, &amqp.Open{ContainerID: "wire-test", MaxFrameSize: maxFrame, ChannelMax: 65535, IdleTimeOut: idle})
	require.Equal(w.t, amqp.ProtoAMQP, w.readHeader())
	w.peer = expect[*amqp.Open](w)
	return w.peer
}

// begin begins a session on channel ch.
func (w *wire) begin(ch uint16) *amqp.Begin {
	w.t.Helper()
	w.send(ch, &amqp.Begin{NextOutgoingID: 0, IncomingWindow: 1 << 20, OutgoingWindow: 1 << 20, HandleMax: 1 << 16})
	b := expect[*amqp.Begin](w)
	require.NotNil(w.t, b.RemoteChannel)
	require.Equal(w.t, ch, *b.RemoteChannel)
	return b
}

// attachSender attaches a link the client sends on to target and returns
// the server's attach (its flow follows).
func (w *wire) attachSender(ch uint16, handle uint32, target string) *amqp.Attach {
	w.t.Helper()
	zero := uint32(0)
	w.send(ch, &amqp.Attach{
		Name: fmt.Sprintf("sender-%d-%d", ch, handle), Handle: handle, Role: amqp.RoleSender,
		SndSettleMode: amqp.SndMixed, RcvSettleMode: amqp.RcvFirst,
		Source: &amqp.Source{Address: "wire-test"}, Target: &amqp.Target{Address: target},
		InitialDeliveryCount: &zero,
	})
	return expect[*amqp.Attach](w)
}

// attachReceiver attaches a link the server sends on from source: under
// peek-lock (rcv-settle-mode second) or receive-and-delete (snd-settle-mode
// settled). It returns the server's attach.
func (w *wire) attachReceiver(ch uint16, handle uint32, source string, peekLock bool) *amqp.Attach {
	w.t.Helper()
	a := &amqp.Attach{
		Name: fmt.Sprintf("receiver-%d-%d", ch, handle), Handle: handle, Role: amqp.RoleReceiver,
		SndSettleMode: amqp.SndUnsettled, RcvSettleMode: amqp.RcvSecond,
		Source: &amqp.Source{Address: source}, Target: &amqp.Target{Address: "wire-test"},
	}
	if !peekLock {
		a.SndSettleMode, a.RcvSettleMode = amqp.SndSettled, amqp.RcvFirst
	}
	w.send(ch, a)
	return expect[*amqp.Attach](w)
}

// flow gives the server credit on a link it sends on.
func (w *wire) flow(ch uint16, handle, deliveryCount, credit uint32, drain bool) {
	w.t.Helper()
	next := uint32(0)
	w.send(ch, &amqp.Flow{
		NextIncomingID: &next, IncomingWindow: 1 << 20, NextOutgoingID: 0, OutgoingWindow: 1 << 20,
		Handle: &handle, DeliveryCount: &deliveryCount, LinkCredit: &credit, Drain: drain,
	})
}

// transfer sends payload as one delivery in one frame.
func (w *wire) transfer(ch uint16, handle, id uint32, payload []byte, settled bool) {
	w.t.Helper()
	format := uint32(0)
	tag := []byte(fmt.Sprint(id))
	w.send(ch, &amqp.Transfer{Handle: handle, DeliveryID: &id, DeliveryTag: tag, MessageFormat: &format, Settled: &settled, Payload: payload})
}

// expectClose reads up to the server's close, checks its condition, then
// expects the socket closed; it returns the close's error.
func (w *wire) expectClose(cond amqp.Symbol) *amqp.Error {
	w.t.Helper()
	c := expect[*amqp.Close](w)
	require.NotNil(w.t, c.Error, "close without an error")
	require.Equal(w.t, cond, c.Error.Condition, "close: %v", c.Error)
	w.expectEOF()
	return c.Error
}

// expectEOF reads until the server closes the socket; only empty frames
// may come first.
func (w *wire) expectEOF() {
	w.t.Helper()
	for {
		fr, err := w.read()
		if err != nil {
			require.True(w.t, isClosed(err), "want the socket closed, got %v", err)
			return
		}
		require.Nil(w.t, fr.Body, "want the socket closed, got %s", describe(fr.Body))
	}
}

// isClosed tells an end of stream or a reset from a timeout.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}

// closeConn closes the connection cleanly: close, the server's close, EOF.
func (w *wire) closeConn() {
	w.t.Helper()
	w.send(0, &amqp.Close{})
	c := expect[*amqp.Close](w)
	require.Nil(w.t, c.Error)
	w.expectEOF()
}

// message encodes a message with body as its one data section.
func message(t testing.TB, body string) []byte {
	t.Helper()
	b, err := (&amqp.Message{Data: [][]byte{[]byte(body)}}).AppendBinary(nil)
	require.NoError(t, err)
	return b
}

// decode decodes a delivered message.
func decode(t testing.TB, payload []byte) *amqp.Message {
	t.Helper()
	var m amqp.Message
	require.NoError(t, m.UnmarshalBinary(payload))
	return &m
}

// bodyOf is a delivered message's body.
func bodyOf(t testing.TB, payload []byte) string {
	t.Helper()
	m := decode(t, payload)
	require.Len(t, m.Data, 1)
	return string(m.Data[0])
}

// healthy is a connection that keeps working while another one misbehaves:
// each round trip sends a message to its queue and receives it back on a
// session and links of its own (so that it works too on a server that
// grants one delivery per link or one transfer per session window).
type healthy struct {
	w  *wire
	ch uint16
}

func (e *wireEnv) healthy() *healthy {
	e.t.Helper()
	return &healthy{w: e.open()}
}

// roundTrip sends a message through the queue and receives it back, under
// receive-and-delete.
func (h *healthy) roundTrip(body string) {
	h.w.t.Helper()
	w, ch := h.w, h.ch
	h.ch++
	w.begin(ch)
	require.NotNil(w.t, w.attachSender(ch, 0, healthyQueue).Target)
	w.transfer(ch, 0, 0, message(w.t, body), false)
	d := expect[*amqp.Disposition](w)
	require.Equal(w.t, amqp.RoleReceiver, d.Role)
	require.IsType(w.t, &amqp.Accepted{}, d.State)
	require.NotNil(w.t, w.attachReceiver(ch, 1, healthyQueue, false).Source)
	w.flow(ch, 1, 0, 1, false)
	tr := expect[*amqp.Transfer](w)
	require.Equal(w.t, uint32(1), tr.Handle)
	require.Equal(w.t, body, bodyOf(w.t, tr.Payload))
	w.send(ch, &amqp.End{})
	e := expect[*amqp.End](w)
	require.Nil(w.t, e.Error)
}
