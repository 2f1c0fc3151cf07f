package server_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus/internal/amqp"
)

// FuzzServerFrames feeds the server random frame sequences after a valid
// handshake: performatives built from the input with small handles,
// channels and ids (so that they often name what exists), messages and
// $management requests, and raw frames of arbitrary octets. Whatever it
// gets, the server must not panic, every frame it sends must decode, and
// the connection must end in a clean close (the socket closed, after the
// server's close frame unless the stream ended inside a frame) once the
// client closes, or when the input broke the protocol;
// a healthy connection then still round-trips a message. The package's
// goleak check shows the server leaves no goroutine after its Close.
func FuzzServerFrames(f *testing.F) {
	// Seeds: programs of the op codes below.
	f.Add([]byte{opBegin, 0, opAttachSender, 0, 0, 0, opTransfer, 0, 0, 0, 0, 0})
	f.Add([]byte{opBegin, 0, opAttachReceiver, 0, 1, 0, 1, opFlow, 0, 1, 0, 5, 0, opTransfer, 0, 3, 1, 0, 0, opDisposition, 0, 1, 0, 0, 1})
	f.Add([]byte{opBegin, 1, opAttachSender, 1, 2, 2, opAttachReceiver, 1, 3, 2, 0, opFlow, 1, 3, 0, 9, 0, opTransfer, 1, 2, 0, 0, 2, 7})
	f.Add([]byte{opBegin, 0, opAttachSender, 0, 0, 0, opTransfer, 0, 0, 0, 1, 0, opTransfer, 0, 0, 0, 0, 0, opDetach, 0, 0, 1, opEnd, 0})
	f.Add([]byte{opRawFrame, 0, 0, 4, 0x00, 0x53, 0x11, 0x45})
	f.Add([]byte{opBegin, 0, opAttachReceiver, 0, 0, 0, 0, opFlow, 0, 0, 0, 3, 3, opDetach, 0, 0, 0, opEmpty, opOpen})
	f.Add([]byte{0x80 | opBegin, 0, opAttachSender, 0, 0, 0, opTransfer, 0, 0, 0, 1, 0, opRawBytes, 3, 1, 2, 3})
	f.Add([]byte{opBegin, 0, opAttachSender, 0, 0, 1, opTransfer, 0, 0, 0, 0, 2, 0, 5, opDisposition, 0, 0, 0, 3, 0})

	e := newWireEnv(f, nil)
	f.Fuzz(func(t *testing.T, prog []byte) {
		nc, err := net.DialTimeout("tcp", e.srv.Addr().String(), wireTimeout)
		require.NoError(t, err)
		defer nc.Close()
		w := &wire{t: t, nc: nc, maxIn: wireMaxFrame}
		w.handshake(wireMaxFrame, 0)

		// Read everything the server sends while the program is written.
		done := make(chan error, 1)
		go func() {
			var buf []byte
			for {
				if err := nc.SetReadDeadline(time.Now().Add(wireTimeout)); err != nil {
					done <- err
					return
				}
				fr, err := amqp.ReadFrame(nc, &buf, wireMaxFrame)
				if err != nil {
					done <- err
					return
				}
				if c, ok := fr.Body.(*amqp.Close); ok && c.Error != nil && c.Error.Condition == "amqp:internal-error" {
					done <- errors.New(c.Error.Description)
					return
				}
			}
		}()

		vanish := len(prog) > 0 && prog[0]&0x80 != 0
		p := &fuzzProg{b: prog}
		for n := 0; n < 64 && !p.done(); n++ {
			b := p.frame(t)
			if _, err := nc.Write(b); err != nil {
				break // the server closed the connection: the reader sees why
			}
		}
		if vanish {
			nc.Close()
			<-done
		} else {
			// A close, then the end of the stream: raw octets may have
			// left the server inside a frame that will never be whole.
			nc.Write(frame(t, amqp.FrameAMQP, 0, &amqp.Close{}))
			nc.(*net.TCPConn).CloseWrite()
			err := <-done
			require.True(t, isClosed(err), "the connection must end in a clean close, got %v", err)
		}
		(&wireEnv{t: t, srv: e.srv}).healthy().roundTrip("after a fuzzed connection")
	})
}

// The fuzz program's op codes.
const (
	opBegin = iota
	opAttachSender
	opAttachReceiver
	opFlow
	opTransfer
	opDisposition
	opDetach
	opEnd
	opClose
	opRawFrame
	opEmpty
	opOpen
	opRawBytes
	opCount
)

// fuzzAddresses are what attaches name: entities, missing ones, nodes.
var fuzzAddresses = []string{wireQueue, "nope", wireQueue + "/$management", "$cbs", "", wireQueue + "/$DeadLetterQueue", "nope/$management", "q/Subscriptions/x"}

// fuzzOperations are what $management requests ask for.
var fuzzOperations = []string{
	"com.microsoft:peek-message", "com.microsoft:renew-lock", "com.microsoft:update-disposition",
	"com.microsoft:receive-by-sequence-number", "com.microsoft:schedule-message", "com.microsoft:get-session-state",
	"com.microsoft:no-such-operation", "",
}

// fuzzProg reads a program: each frame's op code, then its fields.
type fuzzProg struct{ b []byte }

func (p *fuzzProg) done() bool { return len(p.b) == 0 }

func (p *fuzzProg) byte() byte {
	if len(p.b) == 0 {
		return 0
	}
	c := p.b[0]
	p.b = p.b[1:]
	return c
}

func (p *fuzzProg) bytes(n int) []byte {
	n = min(n, len(p.b))
	b := p.b[:n]
	p.b = p.b[n:]
	return b
}

// small is a channel, handle or id: mostly one that exists.
func (p *fuzzProg) small() uint32 { return uint32(p.byte() % 4) }

func (p *fuzzProg) flag() bool { return p.byte()&1 != 0 }

// frame builds the next frame of the program.
func (p *fuzzProg) frame(t *testing.T) []byte {
	op := p.byte() & 0x7f % opCount
	ch := uint16(p.small())
	var body amqp.Performative
	switch op {
	case opBegin:
		body = &amqp.Begin{IncomingWindow: 1 << 20, OutgoingWindow: 1 << 20, HandleMax: 1 << 16}
	case opAttachSender, opAttachReceiver:
		h := p.small()
		addr := fuzzAddresses[int(p.byte())%len(fuzzAddresses)]
		a := &amqp.Attach{Name: string(rune('a' + h)), Handle: h, Role: amqp.RoleSender,
			Source: &amqp.Source{Address: addr}, Target: &amqp.Target{Address: addr}}
		if op == opAttachSender {
			a.InitialDeliveryCount = new(uint32)
		} else {
			a.Role = amqp.RoleReceiver
			a.Target.Address = "reply-" + addr
			if p.flag() {
				a.RcvSettleMode = amqp.RcvSecond
			} else {
				a.SndSettleMode = amqp.SndSettled
			}
		}
		body = a
	case opFlow:
		h, dc, credit := p.small(), p.small(), uint32(p.byte())
		f := &amqp.Flow{IncomingWindow: 1 << 20, OutgoingWindow: 1 << 20, LinkCredit: &credit, DeliveryCount: &dc}
		if h != 3 {
			f.Handle = &h
		}
		f.Drain, f.Echo = p.flag(), p.flag()
		body = f
	case opTransfer:
		h, id := p.small(), p.small()
		more, settled := p.flag(), p.flag()
		format := uint32(0)
		tr := &amqp.Transfer{Handle: h, DeliveryID: &id, DeliveryTag: []byte{byte(id)}, MessageFormat: &format, Settled: &settled, More: more}
		switch p.byte() % 3 {
		case 0:
			tr.Payload = message(t, "fuzz")
		case 1:
			tr.Payload = p.bytes(int(p.byte()))
		case 2:
			op := fuzzOperations[int(p.byte())%len(fuzzOperations)]
			m := &amqp.Message{
				Properties:            &amqp.Properties{MessageID: uint64(id), ReplyTo: "reply-" + wireQueue + "/$management"},
				ApplicationProperties: amqp.Map{{Key: "operation", Value: op}},
				HasValue:              true,
				Value:                 amqp.Map{{Key: "message-count", Value: int32(p.byte())}, {Key: "from-sequence-number", Value: int64(p.byte())}},
			}
			b, err := m.AppendBinary(nil)
			require.NoError(t, err)
			tr.Payload = b
		}
		if p.flag() {
			tr.DeliveryID, tr.DeliveryTag, tr.MessageFormat = nil, nil, nil // a continuation
		}
		tr.Aborted = p.byte() == 0xff
		body = tr
	case opDisposition:
		first, last := p.small(), p.small()
		d := &amqp.Disposition{Role: amqp.Role(p.flag()), First: first, Settled: p.flag()}
		if last >= first {
			d.Last = &last
		}
		switch p.byte() % 6 {
		case 0:
			d.State = &amqp.Accepted{}
		case 1:
			d.State = &amqp.Released{}
		case 2:
			d.State = &amqp.Modified{DeliveryFailed: true, MessageAnnotations: amqp.Map{{Key: amqp.Symbol("k"), Value: "v"}}}
		case 3:
			d.State = &amqp.Rejected{Error: &amqp.Error{Condition: "com.microsoft:dead-letter", Info: amqp.Map{{Key: "DeadLetterReason", Value: "fuzz"}}}}
		case 4:
			d.State = &amqp.Received{}
		}
		body = d
	case opDetach:
		body = &amqp.Detach{Handle: p.small(), Closed: p.flag()}
	case opEnd:
		body = &amqp.End{}
	case opClose:
		body = &amqp.Close{}
	case opRawFrame:
		typ := p.byte() % 3
		return rawFrame(typ, ch, p.bytes(int(p.byte())))
	case opEmpty:
		body = nil
	case opOpen:
		body = &amqp.Open{ContainerID: "again", MaxFrameSize: wireMaxFrame}
	case opRawBytes:
		return p.bytes(int(p.byte()))
	}
	return frame(t, amqp.FrameAMQP, ch, body)
}
