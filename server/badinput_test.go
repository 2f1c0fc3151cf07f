package server_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus/internal/amqp"
	"github.com/minibus-go/minibus/server"
)

// A client that speaks garbage gets the error the AMQP 1.0 specification
// names (part 2, 2.8.15 to 2.8.18) on a closed connection, an ended session
// or a detached link; nothing panics, and another connection keeps working
// through it (SEMANTICS W1, issue "Bad input"). The package's goleak check
// shows no goroutine outlives the server's Close.

// rawFrame is a frame of type typ on channel ch whose body is given as
// octets, however wrong.
func rawFrame(typ uint8, ch uint16, body []byte) []byte {
	b := make([]byte, 8, 8+len(body))
	binary.BigEndian.PutUint32(b, uint32(8+len(body)))
	b[4], b[5] = 2, typ
	binary.BigEndian.PutUint16(b[6:], ch)
	return append(b, body...)
}

// A header the server does not speak is answered with the one it does
// (SASL, which it requires of no one but offers first), then the socket
// closes (part 2, 2.2).
func TestBadInput_ProtocolHeader(t *testing.T) {
	e := newWireEnv(t, nil)
	h := e.healthy()
	h.roundTrip("before")
	for name, header := range map[string]string{
		"HTTP":          "GET / HT",
		"AMQP 0-9-1":    "AMQP\x00\x00\x09\x01",
		"AMQP 2.0":      "AMQP\x00\x02\x00\x00",
		"TLS":           string(amqp.ProtoTLS[:]),
		"unknown proto": "AMQP\x07\x01\x00\x00",
	} {
		t.Run(name, func(t *testing.T) {
			w := e.dial()
			w.raw([]byte(header))
			require.Equal(t, amqp.ProtoSASL, w.readHeader())
			w.expectEOF()
		})
	}
	t.Run("after SASL", func(t *testing.T) {
		w := e.dial()
		w.raw(amqp.ProtoSASL[:])
		require.Equal(t, amqp.ProtoSASL, w.readHeader())
		mechs := w.next()
		require.IsType(t, &amqp.SASLMechanisms{}, mechs.Body)
		w.raw(frame(t, amqp.FrameSASL, 0, &amqp.SASLInit{Mechanism: "ANONYMOUS"}))
		out := w.next()
		require.Equal(t, &amqp.SASLOutcome{Code: amqp.SASLOK}, out.Body)
		w.raw(amqp.ProtoSASL[:]) // SASL again where AMQP must follow
		require.Equal(t, amqp.ProtoAMQP, w.readHeader())
		w.expectEOF()
	})
	h.roundTrip("after")
}

// A frame larger than the max-frame-size the server announced, or whose
// header cannot be valid, closes the connection with
// amqp:connection:framing-error (part 2, 2.7.1 max-frame-size: "a peer that
// receives an oversized frame MUST close the connection with the
// framing-error error-code"; 2.8.16).
func TestBadInput_Framing(t *testing.T) {
	e := newWireEnv(t, nil)
	h := e.healthy()
	h.roundTrip("before")
	header := func(size uint32, doff, typ uint8) []byte {
		b := make([]byte, 8)
		binary.BigEndian.PutUint32(b, size)
		b[4], b[5] = doff, typ
		return b
	}
	t.Run("larger than negotiated", func(t *testing.T) {
		w := e.open()
		// The header alone: the server reads no further.
		w.raw(header(w.peer.MaxFrameSize+1, 2, amqp.FrameAMQP))
		err := w.expectClose("amqp:connection:framing-error")
		require.Contains(t, err.Description, "exceeds the max-frame-size")
	})
	t.Run("larger than negotiated, during the open exchange", func(t *testing.T) {
		w := e.dial()
		w.raw(amqp.ProtoAMQP[:])
		w.raw(header(1<<31, 2, amqp.FrameAMQP))
		require.Equal(t, amqp.ProtoAMQP, w.readHeader())
		expect[*amqp.Open](w) // an open first: a close may only follow one (2.4.1)
		w.expectClose("amqp:connection:framing-error")
	})
	t.Run("size below the header", func(t *testing.T) {
		w := e.open()
		w.raw(header(4, 2, amqp.FrameAMQP))
		w.expectClose("amqp:connection:framing-error")
	})
	t.Run("data offset below 2", func(t *testing.T) {
		w := e.open()
		w.raw(header(8, 1, amqp.FrameAMQP))
		w.expectClose("amqp:connection:framing-error")
	})
	t.Run("unknown frame type", func(t *testing.T) {
		w := e.open()
		w.raw(header(8, 2, 7))
		w.expectClose("amqp:connection:framing-error")
	})
	h.roundTrip("after")
}

// A frame whose body does not decode, or whose descriptor names no
// performative, closes the connection with amqp:decode-error (2.8.15).
func TestBadInput_Undecodable(t *testing.T) {
	e := newWireEnv(t, nil)
	h := e.healthy()
	h.roundTrip("before")
	for name, body := range map[string][]byte{
		"not a described type":        {0xa1, 0x03, 'a', 'b', 'c'},
		"garbage":                     {0xff, 0xff, 0xff, 0xff},
		"begin without its fields":    {0x00, 0x53, 0x11, 0x45},
		"truncated list":              {0x00, 0x53, 0x12, 0xc0, 0x20, 0x05, 0xa1},
		"mistyped field":              {0x00, 0x53, 0x11, 0xc0, 0x05, 0x03, 0xa1, 0x01, 'x', 0x43, 0x43},
		"octets after the body":       {0x00, 0x53, 0x17, 0x45, 0x00},
		"unknown descriptor":          {0x00, 0x53, 0x30, 0x45},
		"unknown symbolic":            append([]byte{0x00, 0xa3, 13}, append([]byte("amqp:foo:list"), 0x45)...),
		"SASL descriptor, AMQP frame": {0x00, 0x53, 0x41, 0xc0, 0x05, 0x01, 0xa3, 0x02, 'x', 'y'},
	} {
		t.Run(name, func(t *testing.T) {
			w := e.open()
			w.raw(rawFrame(amqp.FrameAMQP, 0, body))
			err := w.expectClose("amqp:decode-error")
			require.NotEmpty(t, err.Description)
		})
	}
	h.roundTrip("after")
}

// Frames the connection's state does not allow close it with
// amqp:illegal-state, "the peer sent a frame that is not permitted in the
// current state" (2.8.15): a second open, a SASL frame after the open, a
// frame on a channel with no session, a begin on a channel in use, and a
// first frame that is not an open (answered with an open, then the close:
// 2.4.1).
func TestBadInput_IllegalState(t *testing.T) {
	e := newWireEnv(t, nil)
	h := e.healthy()
	h.roundTrip("before")
	t.Run("second open", func(t *testing.T) {
		w := e.open()
		w.send(0, &amqp.Open{ContainerID: "again", MaxFrameSize: wireMaxFrame, ChannelMax: 1})
		err := w.expectClose("amqp:illegal-state")
		require.Contains(t, err.Description, "open")
	})
	t.Run("SASL frame after open", func(t *testing.T) {
		w := e.open()
		w.raw(frame(t, amqp.FrameSASL, 0, &amqp.SASLInit{Mechanism: "PLAIN", InitialResponse: []byte("\x00a\x00b")}))
		err := w.expectClose("amqp:illegal-state")
		require.Contains(t, err.Description, "SASL")
	})
	t.Run("frame on a channel with no session", func(t *testing.T) {
		w := e.open()
		w.begin(0)
		zero := uint32(0)
		w.send(3, &amqp.Attach{Name: "x", Handle: 0, Role: amqp.RoleSender, Target: &amqp.Target{Address: wireQueue}, InitialDeliveryCount: &zero})
		err := w.expectClose("amqp:illegal-state")
		require.Contains(t, err.Description, "channel 3")
	})
	t.Run("begin on a channel in use", func(t *testing.T) {
		w := e.open()
		w.begin(2)
		w.send(2, &amqp.Begin{IncomingWindow: 10, OutgoingWindow: 10, HandleMax: 10})
		err := w.expectClose("amqp:illegal-state")
		require.Contains(t, err.Description, "channel 2")
	})
	t.Run("first frame not an open", func(t *testing.T) {
		w := e.dial()
		w.raw(amqp.ProtoAMQP[:])
		w.send(0, &amqp.Begin{IncomingWindow: 10, OutgoingWindow: 10, HandleMax: 10})
		require.Equal(t, amqp.ProtoAMQP, w.readHeader())
		expect[*amqp.Open](w)
		err := w.expectClose("amqp:illegal-state")
		require.Contains(t, err.Description, "open")
	})
	h.roundTrip("after")
}

// Frames naming a handle no link is attached on end their session with
// amqp:session:unattached-handle (2.8.17; part 2, 2.7.5 and 2.6.1: "the
// recipient MUST respond by ending the session with an unattached-handle
// session error"), an attach on a handle in use with
// amqp:session:handle-in-use; the connection stays open and serves a new
// session.
func TestBadInput_SessionErrors(t *testing.T) {
	e := newWireEnv(t, nil)
	h := e.healthy()
	h.roundTrip("before")
	one, seven := uint32(1), uint32(7)
	for name, tc := range map[string]struct {
		attach bool // attach handle 4 first
		frames []amqp.Performative
		cond   amqp.Symbol
	}{
		"transfer": {false, []amqp.Performative{&amqp.Transfer{Handle: 7, DeliveryID: &one, DeliveryTag: []byte("t"), MessageFormat: new(uint32), Payload: message(t, "x")}},
			"amqp:session:unattached-handle"},
		"flow":   {false, []amqp.Performative{&amqp.Flow{IncomingWindow: 10, OutgoingWindow: 10, Handle: &seven, DeliveryCount: new(uint32), LinkCredit: &one}}, "amqp:session:unattached-handle"},
		"detach": {false, []amqp.Performative{&amqp.Detach{Handle: 7, Closed: true}}, "amqp:session:unattached-handle"},
		"handle in use": {true, []amqp.Performative{
			&amqp.Attach{Name: "b", Handle: 4, Role: amqp.RoleSender, Target: &amqp.Target{Address: wireQueue}, InitialDeliveryCount: new(uint32)},
		}, "amqp:session:handle-in-use"},
	} {
		t.Run(name, func(t *testing.T) {
			w := e.open()
			w.begin(0)
			if tc.attach {
				require.NotNil(t, w.attachSender(0, 4, wireQueue).Target)
			}
			for _, f := range tc.frames {
				w.send(0, f)
			}
			end := expect[*amqp.End](w)
			require.NotNil(t, end.Error)
			require.Equal(t, tc.cond, end.Error.Condition, "%v", end.Error)
			require.Contains(t, end.Error.Description, "handle")
			w.send(0, &amqp.End{})
			// The connection is fine: a new session on the same channel works.
			w.begin(0)
			require.NotNil(t, w.attachSender(0, 7, wireQueue).Target)
			w.transfer(0, 7, 0, message(t, "still here"), false)
			require.IsType(t, &amqp.Accepted{}, expect[*amqp.Disposition](w).State)
			w.closeConn()
		})
	}
	require.Equal(t, int64(len([]string{"transfer", "flow", "detach", "handle in use"})), e.activeCount())
	h.roundTrip("after")
}

// A transfer beyond the link credit the server gave detaches the link with
// amqp:link:transfer-limit-exceeded (2.8.18; part 2, 2.6.7); the session
// and the connection stay. The server is made to grant one delivery per
// link and never more (its default credit is topped up as transfers are
// read, so that no peer reaches it).
func TestBadInput_TransferLimitExceeded(t *testing.T) {
	e := newWireEnv(t, server.WithFlowLimits(&server.Options{}, 1, 1<<20))
	h := e.healthy()
	h.roundTrip("before")
	w := e.open()
	w.begin(0)
	require.NotNil(t, w.attachSender(0, 0, wireQueue).Target)
	w.transfer(0, 0, 0, message(t, "within credit"), false)
	require.IsType(t, &amqp.Accepted{}, expect[*amqp.Disposition](w).State)
	w.transfer(0, 0, 1, message(t, "beyond credit"), false)
	d := expect[*amqp.Detach](w)
	require.Equal(t, uint32(0), d.Handle)
	require.True(t, d.Closed)
	require.NotNil(t, d.Error)
	require.Equal(t, amqp.Symbol("amqp:link:transfer-limit-exceeded"), d.Error.Condition)
	require.Contains(t, d.Error.Description, "credit")
	w.send(0, &amqp.Detach{Handle: 0, Closed: true})
	// The session goes on: a new link on it has its credit.
	require.NotNil(t, w.attachSender(0, 1, wireQueue).Target)
	w.transfer(0, 1, 2, message(t, "new link"), false)
	require.IsType(t, &amqp.Accepted{}, expect[*amqp.Disposition](w).State)
	w.closeConn()
	h.roundTrip("after")
	require.Equal(t, []string{"within credit", "new link"}, e.bodies(), "the message beyond credit was not enqueued")
}

// A transfer beyond the session's incoming window ends the session with
// amqp:session:window-violation (2.8.17; part 2, 2.5.6); the connection
// stays. The server is made to grant a window of one transfer and never
// widen it.
func TestBadInput_WindowViolation(t *testing.T) {
	e := newWireEnv(t, server.WithFlowLimits(&server.Options{}, 1000, 1))
	h := e.healthy()
	h.roundTrip("before")
	w := e.open()
	b := w.begin(0)
	require.Equal(t, uint32(1), b.IncomingWindow)
	require.NotNil(t, w.attachSender(0, 0, wireQueue).Target)
	w.transfer(0, 0, 0, message(t, "within the window"), false)
	require.IsType(t, &amqp.Accepted{}, expect[*amqp.Disposition](w).State)
	w.transfer(0, 0, 1, message(t, "beyond the window"), false)
	end := expect[*amqp.End](w)
	require.NotNil(t, end.Error)
	require.Equal(t, amqp.Symbol("amqp:session:window-violation"), end.Error.Condition)
	w.send(0, &amqp.End{})
	// The connection goes on: a new session has its window.
	w.begin(1)
	require.NotNil(t, w.attachSender(1, 0, wireQueue).Target)
	w.transfer(1, 0, 0, message(t, "new session"), false)
	require.IsType(t, &amqp.Accepted{}, expect[*amqp.Disposition](w).State)
	w.closeConn()
	h.roundTrip("after")
	require.Equal(t, []string{"within the window", "new session"}, e.bodies(), "the message beyond the window was not enqueued")
}

// An attach to an address that names no entity is answered with a null
// terminus and a detach carrying amqp:not-found naming the address (W2);
// so is one to the $management node of a missing entity. The session
// stays.
func TestBadInput_MissingNode(t *testing.T) {
	e := newWireEnv(t, nil)
	w := e.open()
	w.begin(0)
	for i, tc := range []struct{ addr, culprit string }{
		{"nope", `queue or topic "nope"`},
		{"nope/$management", `"nope"`},
		{"q/Subscriptions/s", `topic "q"`},
		{"amqps://host/nope/$DeadLetterQueue", `"nope"`},
	} {
		addr := tc.addr
		handle := uint32(2 * i)
		a := w.attachReceiver(0, handle, addr, true)
		require.Nil(t, a.Source, addr)
		d := expect[*amqp.Detach](w)
		require.Equal(t, handle, d.Handle)
		require.NotNil(t, d.Error, addr)
		require.Equal(t, amqp.Symbol("amqp:not-found"), d.Error.Condition, "%s: %v", addr, d.Error)
		require.Contains(t, d.Error.Description, tc.culprit, addr)
		w.send(0, &amqp.Detach{Handle: handle, Closed: true})

		a = w.attachSender(0, handle+1, addr)
		require.Nil(t, a.Target, addr)
		d = expect[*amqp.Detach](w)
		require.Equal(t, amqp.Symbol("amqp:not-found"), d.Error.Condition, "%s: %v", addr, d.Error)
		w.send(0, &amqp.Detach{Handle: handle + 1, Closed: true})
	}
	require.NotNil(t, w.attachSender(0, 100, wireQueue).Target)
	w.closeConn()
}
