package e2e_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"
	"github.com/stretchr/testify/require"

	codec "github.com/minibus-go/minibus/internal/amqp"
)

// The checks in this file hold minibus's codec to what a real client
// accepts and sends: go-amqp (the client under azservicebus) dials a
// scripted server that speaks only through internal/amqp.

const (
	testTimeout = 20 * time.Second
	// serverMaxFrame is what the scripted server announces: the client
	// splits its large transfers at it.
	serverMaxFrame = 32 << 10
	// clientMaxFrame is what the client announces: the server splits its
	// large transfers at it.
	clientMaxFrame = 16 << 10
	sessionFilter  = "com.microsoft:session-filter"
	// sessionFilterCode is the Service Bus descriptor of the session
	// filter (domain 0x137, id 0xc), as go-amqp sends it.
	sessionFilterCode = 0x000001370000000c
)

// Events the scripted server reports, in the order they happen.
type (
	attachEvent  struct{ attach *codec.Attach }
	messageEvent struct {
		msg     codec.Message
		tag     []byte
		frames  int
		settled bool
	}
	sentEvent        struct{ frames int }
	dispositionEvent struct{ disposition *codec.Disposition }
	detachEvent      struct{ detach *codec.Detach }
	endEvent         struct{}
	closeEvent       struct{}
)

// delivery is a message the test has the server send to the client.
type delivery struct {
	payload []byte
	tag     []byte
}

// scriptServer is a minimal AMQP 1.0 peer for one connection: the SASL and
// AMQP handshakes, one session, links attached as asked, transfers both
// ways (split at the peer's max-frame-size), dispositions, detach, end and
// close. Everything it sees goes to events.
type scriptServer struct {
	addr    string
	events  chan any
	deliver chan delivery
	done    chan error

	// Seen in the handshake; read by the test after Dial returns (the
	// handshake happens-before the client's Dial returns).
	mu       sync.Mutex
	saslInit *codec.SASLInit
	open     *codec.Open
}

func startScriptServer(t *testing.T) *scriptServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &scriptServer{
		addr:    ln.Addr().String(),
		events:  make(chan any, 64),
		deliver: make(chan delivery, 8),
		done:    make(chan error, 1),
	}
	go func() {
		defer ln.Close()
		if err := ln.(*net.TCPListener).SetDeadline(time.Now().Add(testTimeout)); err != nil {
			s.done <- err
			return
		}
		c, err := ln.Accept()
		if err != nil {
			s.done <- err
			return
		}
		s.done <- s.serve(c)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		case <-time.After(testTimeout):
			t.Error("the scripted server did not finish")
		}
	})
	return s
}

// writeFrame encodes and writes one frame.
func writeFrame(c net.Conn, typ uint8, channel uint16, p codec.Performative) error {
	b, err := codec.AppendFrame(nil, typ, channel, p)
	if err != nil {
		return err
	}
	_, err = c.Write(b)
	return err
}

// readHeader reads a protocol header and checks it.
func readHeader(c net.Conn, want [8]byte) error {
	var h [8]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return err
	}
	if h != want {
		return fmt.Errorf("protocol header % x, want % x", h, want)
	}
	return nil
}

func (s *scriptServer) serve(c net.Conn) error {
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		return err
	}
	var buf []byte

	// SASL: the client's header first, then ours and the mechanisms the
	// server offers every SDK (W1).
	if err := readHeader(c, codec.ProtoSASL); err != nil {
		return err
	}
	out := append([]byte(nil), codec.ProtoSASL[:]...)
	out, err := codec.AppendFrame(out, codec.FrameSASL, 0, &codec.SASLMechanisms{
		Mechanisms: []codec.Symbol{"MSSBCBS", "ANONYMOUS", "PLAIN", "EXTERNAL"},
	})
	if err != nil {
		return err
	}
	if _, err := c.Write(out); err != nil {
		return err
	}
	f, err := codec.ReadFrame(c, &buf, codec.MinMaxFrameSize)
	if err != nil {
		return err
	}
	init, ok := f.Body.(*codec.SASLInit)
	if !ok || f.Type != codec.FrameSASL {
		return fmt.Errorf("want sasl-init, got %#v", f)
	}
	init.InitialResponse = bytes.Clone(init.InitialResponse)
	if err := writeFrame(c, codec.FrameSASL, 0, &codec.SASLOutcome{Code: codec.SASLOK}); err != nil {
		return err
	}

	// AMQP: wait for the client's header before sending ours (W1).
	if err := readHeader(c, codec.ProtoAMQP); err != nil {
		return err
	}
	if _, err := c.Write(codec.ProtoAMQP[:]); err != nil {
		return err
	}
	f, err = codec.ReadFrame(c, &buf, codec.MinMaxFrameSize)
	if err != nil {
		return err
	}
	open, ok := f.Body.(*codec.Open)
	if !ok {
		return fmt.Errorf("want open, got %#v", f)
	}
	s.mu.Lock()
	s.saslInit, s.open = init, open
	s.mu.Unlock()
	if err := writeFrame(c, codec.FrameAMQP, 0, &codec.Open{
		ContainerID: "minibus-e2e", Hostname: "localhost", MaxFrameSize: serverMaxFrame, ChannelMax: 0,
		Properties: codec.Map{{Key: codec.Symbol("product"), Value: "minibus"}},
	}); err != nil {
		return err
	}
	return s.loop(c, open.MaxFrameSize)
}

// loop serves the session: frames from a reader goroutine, deliveries from
// the test.
func (s *scriptServer) loop(c net.Conn, peerMax uint32) error {
	frames := make(chan codec.Frame)
	readErr := make(chan error, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			var buf []byte // a buffer per frame: frames cross goroutines
			f, err := codec.ReadFrame(c, &buf, serverMaxFrame)
			if err != nil {
				readErr <- err
				return
			}
			select {
			case frames <- f:
			case <-stop:
				return
			}
		}
	}()
	defer func() {
		close(stop)
		c.Close()
		wg.Wait()
	}()

	var (
		channel        uint16
		clientNextOut  uint32 // the next transfer-id the client will send
		ourNextOut     uint32 // the next transfer-id we send
		ourDeliveryID  uint32
		sendHandle     *uint32 // the client's receiver link, which we send on
		deliveryCount  uint32  // on sendHandle
		credit         uint32  // on sendHandle
		queue          []delivery
		first          *codec.Transfer // the first frame of the delivery coming in
		payload        []byte
		inFrames       int
		settled        bool
		zero, falseVal = uint32(0), false
	)
	write := func(p codec.Performative) error { return writeFrame(c, codec.FrameAMQP, channel, p) }
	for {
		select {
		case err := <-readErr:
			return fmt.Errorf("read: %w", err)
		case d := <-s.deliver:
			queue = append(queue, d)
		case f := <-frames:
			switch b := f.Body.(type) {
			case nil: // keep-alive
			case *codec.Begin:
				channel, clientNextOut = f.Channel, b.NextOutgoingID
				remote := f.Channel
				if err := write(&codec.Begin{RemoteChannel: &remote, NextOutgoingID: ourNextOut,
					IncomingWindow: 5000, OutgoingWindow: 5000, HandleMax: 63}); err != nil {
					return err
				}
			case *codec.Attach:
				s.events <- attachEvent{b}
				reply := &codec.Attach{Name: b.Name, Handle: b.Handle, Role: !b.Role, SndSettleMode: b.SndSettleMode,
					RcvSettleMode: b.RcvSettleMode, Source: b.Source, Target: b.Target, MaxMessageSize: 1 << 20}
				if b.Role == codec.RoleReceiver {
					reply.InitialDeliveryCount = &zero
					h := b.Handle
					sendHandle = &h
				}
				if err := write(reply); err != nil {
					return err
				}
				if b.Role == codec.RoleSender {
					h, dc, lc, nin := b.Handle, uint32(0), uint32(100), clientNextOut
					if b.InitialDeliveryCount != nil {
						dc = *b.InitialDeliveryCount
					}
					if err := write(&codec.Flow{NextIncomingID: &nin, IncomingWindow: 5000, NextOutgoingID: ourNextOut,
						OutgoingWindow: 5000, Handle: &h, DeliveryCount: &dc, LinkCredit: &lc}); err != nil {
						return err
					}
				}
			case *codec.Flow:
				if b.Handle != nil && sendHandle != nil && *b.Handle == *sendHandle && b.LinkCredit != nil {
					rcvCount := deliveryCount
					if b.DeliveryCount != nil {
						rcvCount = *b.DeliveryCount
					}
					credit = rcvCount + *b.LinkCredit - deliveryCount
				}
			case *codec.Transfer:
				clientNextOut++
				if first == nil {
					first, payload, inFrames, settled = b, nil, 0, false
					first.DeliveryTag = bytes.Clone(b.DeliveryTag)
				}
				payload = append(payload, b.Payload...)
				inFrames++
				settled = settled || (b.Settled != nil && *b.Settled)
				if b.More {
					break
				}
				var m codec.Message
				if err := m.UnmarshalBinary(payload); err != nil {
					return fmt.Errorf("message from the client: %w", err)
				}
				s.events <- messageEvent{msg: m, tag: first.DeliveryTag, frames: inFrames, settled: settled}
				if !settled {
					var state codec.DeliveryState = &codec.Accepted{}
					if m.Properties != nil && m.Properties.Subject == "reject" {
						state = &codec.Rejected{Error: &codec.Error{Condition: "amqp:precondition-failed",
							Description: "rejected by the scripted server", Info: codec.Map{{Key: codec.Symbol("n"), Value: int32(1)}}}}
					}
					if err := write(&codec.Disposition{Role: codec.RoleReceiver, First: *first.DeliveryID, Settled: true, State: state}); err != nil {
						return err
					}
				}
				first = nil
			case *codec.Disposition:
				s.events <- dispositionEvent{b}
			case *codec.Detach:
				s.events <- detachEvent{b}
				if sendHandle != nil && *sendHandle == b.Handle {
					sendHandle = nil
				}
				if err := write(&codec.Detach{Handle: b.Handle, Closed: b.Closed}); err != nil {
					return err
				}
			case *codec.End:
				s.events <- endEvent{}
				if err := write(&codec.End{}); err != nil {
					return err
				}
			case *codec.Close:
				s.events <- closeEvent{}
				return write(&codec.Close{})
			default:
				return fmt.Errorf("unexpected %T", b)
			}
		}
		// Send what the test queued, as credit allows.
		for len(queue) > 0 && credit > 0 && sendHandle != nil {
			d := queue[0]
			queue = queue[1:]
			id := ourDeliveryID
			ourDeliveryID++
			out, err := codec.AppendTransferFrames(nil, channel, &codec.Transfer{Handle: *sendHandle, DeliveryID: &id,
				DeliveryTag: d.tag, MessageFormat: &zero, Settled: &falseVal, Payload: d.payload}, peerMax)
			if err != nil {
				return err
			}
			n := 0
			for rest := out; len(rest) > 0; n++ {
				rest = rest[binary.BigEndian.Uint32(rest):]
			}
			if _, err := c.Write(out); err != nil {
				return err
			}
			ourNextOut += uint32(n)
			credit--
			deliveryCount++
			s.events <- sentEvent{frames: n}
		}
	}
}

// next waits for the server's next event, which must be a T.
func next[T any](ctx context.Context, t *testing.T, s *scriptServer) T {
	t.Helper()
	var e any
	select {
	case e = <-s.events:
	case err := <-s.done:
		s.done <- err
		// The server reports an event before it can finish: look again.
		select {
		case e = <-s.events:
		default:
			t.Fatalf("the scripted server stopped waiting for a %T: %v", *new(T), err)
		}
	case <-ctx.Done():
		t.Fatalf("no %T before the deadline", *new(T))
	}
	v, ok := e.(T)
	require.True(t, ok, "want a %T, got %#v", *new(T), e)
	return v
}

func ptr[T any](v T) *T { return &v }

// pattern returns n octets that differ frame to frame, so a misplaced
// split shows.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i/251)
	}
	return b
}

// TestGoAMQPClient drives go-amqp, as a client, against a server that
// speaks only through internal/amqp: handshakes, a session, a sender and a
// receiver link (with a described session filter), messages both ways
// (one frame and 200 KiB across many, split at each side's
// max-frame-size), dispositions both ways, detach, end and close.
func TestGoAMQPClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := startScriptServer(t)

	conn, err := amqp.Dial(ctx, "amqp://"+srv.addr, &amqp.ConnOptions{
		SASLType: amqp.SASLTypeAnonymous(), ContainerID: "e2e-client", MaxFrameSize: clientMaxFrame,
		HostName: "localhost", Properties: map[string]any{"product": "e2e"},
	})
	require.NoError(t, err)

	srv.mu.Lock()
	init, open := srv.saslInit, srv.open
	srv.mu.Unlock()
	require.Equal(t, &codec.SASLInit{Mechanism: "ANONYMOUS", InitialResponse: []byte("anonymous")}, init)
	require.Equal(t, "e2e-client", open.ContainerID)
	require.Equal(t, "localhost", open.Hostname)
	require.Equal(t, uint32(clientMaxFrame), open.MaxFrameSize)
	product, ok := open.Properties.GetSymbol("product")
	require.True(t, ok)
	require.Equal(t, "e2e", product)

	sess, err := conn.NewSession(ctx, nil)
	require.NoError(t, err)

	sender, err := sess.NewSender(ctx, "q1", nil)
	require.NoError(t, err)
	sa := next[attachEvent](ctx, t, srv).attach
	require.Equal(t, codec.RoleSender, sa.Role)
	require.Equal(t, "q1", sa.Target.Address)
	require.NotNil(t, sa.InitialDeliveryCount)

	receiver, err := sess.NewReceiver(ctx, "q1", &amqp.ReceiverOptions{
		Credit:  5,
		Filters: []amqp.LinkFilter{amqp.NewLinkFilter(sessionFilter, sessionFilterCode, "sess-A")},
	})
	require.NoError(t, err)
	ra := next[attachEvent](ctx, t, srv).attach
	require.Equal(t, codec.RoleReceiver, ra.Role)
	require.Equal(t, "q1", ra.Source.Address)
	filter, ok := ra.Source.Filter.GetSymbol(sessionFilter)
	require.True(t, ok)
	require.Equal(t, codec.Described{Descriptor: uint64(sessionFilterCode), Value: "sess-A"}, filter,
		"go-amqp sends the session filter described; the server echoed it so, and the client accepted the echo")

	t.Run("client to server, one frame", func(t *testing.T) {
		created := time.UnixMilli(1_700_000_000_123)
		err := sender.Send(ctx, &amqp.Message{
			Properties: &amqp.MessageProperties{MessageID: "m-1", Subject: ptr("subject"), ContentType: ptr("text/plain"),
				CorrelationID: uint64(7), CreationTime: &created, To: ptr("q1")},
			ApplicationProperties: map[string]any{"k": "v", "n": int64(5), "i": int32(-3), "b": true},
			Annotations:           amqp.Annotations{"x-opt-partition-key": "pk"},
			Data:                  [][]byte{[]byte("hello")},
		}, nil)
		require.NoError(t, err)
		me := next[messageEvent](ctx, t, srv)
		require.Equal(t, 1, me.frames)
		require.False(t, me.settled)
		require.Len(t, me.tag, 8, "go-amqp's own delivery tags are 8 octets")
		m := me.msg
		require.Equal(t, [][]byte{[]byte("hello")}, m.Data)
		require.Equal(t, "m-1", m.Properties.MessageID)
		require.Equal(t, uint64(7), m.Properties.CorrelationID)
		require.Equal(t, "subject", m.Properties.Subject)
		require.Equal(t, codec.Symbol("text/plain"), m.Properties.ContentType)
		require.Equal(t, "q1", m.Properties.To)
		require.True(t, created.Equal(m.Properties.CreationTime))
		for key, want := range map[string]any{"k": "v", "n": int64(5), "i": int32(-3), "b": true} {
			v, ok := m.ApplicationProperties.GetString(key)
			require.True(t, ok, key)
			require.Equal(t, want, v, key)
		}
		pk, ok := m.MessageAnnotations.GetSymbol("x-opt-partition-key")
		require.True(t, ok)
		require.Equal(t, "pk", pk)
	})

	t.Run("client to server, 200 KiB across frames", func(t *testing.T) {
		body := pattern(200 << 10)
		require.NoError(t, sender.Send(ctx, &amqp.Message{Data: [][]byte{body}}, nil))
		me := next[messageEvent](ctx, t, srv)
		require.GreaterOrEqual(t, me.frames, (200<<10)/serverMaxFrame+1, "split at the server's max-frame-size")
		require.Equal(t, [][]byte{body}, me.msg.Data)
	})

	t.Run("client to server, rejected", func(t *testing.T) {
		err := sender.Send(ctx, &amqp.Message{Properties: &amqp.MessageProperties{Subject: ptr("reject")}, Value: "v"}, nil)
		var amqpErr *amqp.Error
		require.ErrorAs(t, err, &amqpErr)
		require.Equal(t, amqp.ErrCond("amqp:precondition-failed"), amqpErr.Condition)
		require.Equal(t, "rejected by the scripted server", amqpErr.Description)
		require.Equal(t, map[string]any{"n": int32(1)}, amqpErr.Info)
		me := next[messageEvent](ctx, t, srv)
		require.True(t, me.msg.HasValue)
		require.Equal(t, "v", me.msg.Value)
	})

	enqueued := time.UnixMilli(1_700_000_123_456).UTC()
	lockToken := []byte{0xde, 0xad, 0xbe, 0xef, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	correlation := codec.UUID{1, 2, 3}
	serverMessage := func(body []byte) []byte {
		b, err := (&codec.Message{
			Header: &codec.Header{Durable: true, Priority: 4, DeliveryCount: 2, TTL: 60000},
			MessageAnnotations: codec.Map{
				{Key: codec.Symbol("x-opt-sequence-number"), Value: int64(1 << 40)},
				{Key: codec.Symbol("x-opt-enqueued-time"), Value: enqueued},
				{Key: codec.Symbol("x-opt-locked-until"), Value: enqueued.Add(time.Minute)},
				{Key: codec.Symbol("x-opt-message-state"), Value: int32(0)},
			},
			Properties: &codec.Properties{MessageID: "srv-1", CorrelationID: correlation, ContentType: "application/json",
				CreationTime: enqueued, GroupID: "sess-A", ReplyTo: "r"},
			ApplicationProperties: codec.Map{{Key: "status-code", Value: int32(200)}, {Key: "statusCode", Value: int32(200)}},
			Data:                  [][]byte{body},
		}).AppendBinary(nil)
		require.NoError(t, err)
		return b
	}
	checkServerMessage := func(t *testing.T, msg *amqp.Message, body []byte) {
		t.Helper()
		require.Equal(t, lockToken, msg.DeliveryTag)
		require.Equal(t, [][]byte{body}, msg.Data)
		require.Equal(t, &amqp.MessageHeader{Durable: true, Priority: 4, DeliveryCount: 2, TTL: time.Minute}, msg.Header)
		require.Equal(t, int64(1<<40), msg.Annotations["x-opt-sequence-number"])
		require.Equal(t, int32(0), msg.Annotations["x-opt-message-state"])
		got, ok := msg.Annotations["x-opt-enqueued-time"].(time.Time)
		require.True(t, ok, "a timestamp: %#v", msg.Annotations["x-opt-enqueued-time"])
		require.True(t, enqueued.Equal(got))
		got, ok = msg.Annotations["x-opt-locked-until"].(time.Time)
		require.True(t, ok)
		require.True(t, enqueued.Add(time.Minute).Equal(got))
		require.Equal(t, "srv-1", msg.Properties.MessageID)
		require.Equal(t, amqp.UUID(correlation), msg.Properties.CorrelationID)
		require.Equal(t, ptr("application/json"), msg.Properties.ContentType)
		require.Equal(t, ptr("sess-A"), msg.Properties.GroupID)
		require.Equal(t, ptr("r"), msg.Properties.ReplyTo)
		require.True(t, enqueued.Equal(*msg.Properties.CreationTime))
		require.Equal(t, map[string]any{"status-code": int32(200), "statusCode": int32(200)}, msg.ApplicationProperties)
	}

	t.Run("server to client, one frame, accepted", func(t *testing.T) {
		body := []byte(`{"hello":"world"}`)
		srv.deliver <- delivery{payload: serverMessage(body), tag: lockToken}
		require.Equal(t, 1, next[sentEvent](ctx, t, srv).frames)
		msg, err := receiver.Receive(ctx, nil)
		require.NoError(t, err)
		checkServerMessage(t, msg, body)
		require.NoError(t, receiver.AcceptMessage(ctx, msg))
		d := next[dispositionEvent](ctx, t, srv).disposition
		require.Equal(t, &codec.Disposition{Role: codec.RoleReceiver, First: 0, Settled: true, State: &codec.Accepted{}}, d)
	})

	t.Run("server to client, 200 KiB across frames, modified", func(t *testing.T) {
		body := pattern(200 << 10)
		srv.deliver <- delivery{payload: serverMessage(body), tag: lockToken}
		require.GreaterOrEqual(t, next[sentEvent](ctx, t, srv).frames, (200<<10)/clientMaxFrame+1, "split at the client's max-frame-size")
		msg, err := receiver.Receive(ctx, nil)
		require.NoError(t, err)
		checkServerMessage(t, msg, body)
		require.NoError(t, receiver.ModifyMessage(ctx, msg, &amqp.ModifyMessageOptions{
			UndeliverableHere: true, Annotations: amqp.Annotations{"x-opt-k": "v"},
		}))
		d := next[dispositionEvent](ctx, t, srv).disposition
		require.Equal(t, uint32(1), d.First)
		require.True(t, d.Settled)
		require.Equal(t, &codec.Modified{UndeliverableHere: true, MessageAnnotations: codec.Map{{Key: codec.Symbol("x-opt-k"), Value: "v"}}}, d.State)
	})

	t.Run("server to client, rejected by the client", func(t *testing.T) {
		srv.deliver <- delivery{payload: serverMessage([]byte("x")), tag: lockToken}
		next[sentEvent](ctx, t, srv)
		msg, err := receiver.Receive(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, receiver.RejectMessage(ctx, msg, &amqp.Error{Condition: "com.microsoft:dead-letter", Description: "bad",
			Info: map[string]any{"DeadLetterReason": "r"}}))
		d := next[dispositionEvent](ctx, t, srv).disposition
		// go-amqp writes the info map's keys as strings where the
		// specification has symbols: GetSymbol matches either.
		require.Equal(t, &codec.Rejected{Error: &codec.Error{Condition: "com.microsoft:dead-letter", Description: "bad",
			Info: codec.Map{{Key: "DeadLetterReason", Value: "r"}}}}, d.State)
		reason, ok := d.State.(*codec.Rejected).Error.Info.GetSymbol("DeadLetterReason")
		require.True(t, ok)
		require.Equal(t, "r", reason)
	})

	require.NoError(t, sender.Close(ctx))
	require.Equal(t, &codec.Detach{Handle: sa.Handle, Closed: true}, next[detachEvent](ctx, t, srv).detach)
	require.NoError(t, receiver.Close(ctx))
	require.Equal(t, &codec.Detach{Handle: ra.Handle, Closed: true}, next[detachEvent](ctx, t, srv).detach)
	require.NoError(t, sess.Close(ctx))
	next[endEvent](ctx, t, srv)
	require.NoError(t, conn.Close())
	next[closeEvent](ctx, t, srv)
	select {
	case err := <-srv.done:
		srv.done <- err
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the scripted server did not finish")
	}
}

// TestGoAMQPClientRefused: a SASL outcome other than ok reaches go-amqp
// as the failure it is, with its code and additional data.
func TestGoAMQPClientRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		served <- func() error {
			if err := ln.(*net.TCPListener).SetDeadline(time.Now().Add(testTimeout)); err != nil {
				return err
			}
			c, err := ln.Accept()
			if err != nil {
				return err
			}
			defer c.Close()
			if err := c.SetDeadline(time.Now().Add(testTimeout)); err != nil {
				return err
			}
			if err := readHeader(c, codec.ProtoSASL); err != nil {
				return err
			}
			out, _ := codec.AppendFrame(append([]byte(nil), codec.ProtoSASL[:]...), codec.FrameSASL, 0,
				&codec.SASLMechanisms{Mechanisms: []codec.Symbol{"ANONYMOUS"}})
			if _, err := c.Write(out); err != nil {
				return err
			}
			var buf []byte
			if _, err := codec.ReadFrame(c, &buf, codec.MinMaxFrameSize); err != nil {
				return err
			}
			if err := writeFrame(c, codec.FrameSASL, 0, &codec.SASLOutcome{Code: codec.SASLAuth, AdditionalData: []byte("denied")}); err != nil {
				return err
			}
			// The client hangs up.
			if _, err := codec.ReadFrame(c, &buf, codec.MinMaxFrameSize); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !isReset(err) {
				return fmt.Errorf("want the client to hang up, got %v", err)
			}
			return nil
		}()
	}()
	_, err = amqp.Dial(ctx, "amqp://"+ln.Addr().String(), &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})
	require.Error(t, err)
	require.Contains(t, err.Error(), "code 0x1: denied", "go-amqp names the SASL code and shows the additional data")
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the scripted server did not finish")
	}
}

func isReset(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr)
}
