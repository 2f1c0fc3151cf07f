package amqp_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/minibus-go/minibus/internal/amqp"
)

// seedValues are encoded as the fuzzers' starting corpus.
func seedValues() []any {
	return []any{
		nil, true, uint8(1), uint16(2), uint32(300), uint64(1 << 40), int8(-1), int16(-300), int32(-70000), int64(-1 << 40),
		float32(1.5), 2.5, amqp.Decimal32{}, amqp.Char('x'), time.UnixMilli(1).UTC(), amqp.UUID{1}, []byte("b"),
		"s", amqp.Symbol("y"), []any{uint32(1), "a", []any{}}, amqp.Map{{Key: amqp.Symbol("k"), Value: []byte{1}}},
		[]amqp.Symbol{"a", "b"}, []int32{1, 1000}, []bool{true}, []amqp.Map{{}},
		amqp.Array{Code: 0x50, Elems: []any{uint8(1)}}, amqp.Array{Code: 0xc0, Elems: []any{[]any{nil}}},
		amqp.Described{Descriptor: uint64(0x0000013700000006), Value: "1=1"},
		&amqp.Rejected{Error: &amqp.Error{Condition: "c", Info: amqp.Map{{Key: "k", Value: int64(1)}}}},
		&amqp.Source{Address: "q", Filter: amqp.Map{{Key: amqp.Symbol("f"), Value: "plain"}}},
		&amqp.Header{Priority: 4, Durable: true},
	}
}

func seedFrames() [][]byte {
	var out [][]byte
	add := func(typ uint8, p amqp.Performative) {
		b, err := amqp.AppendFrame(nil, typ, 1, p)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	add(amqp.FrameAMQP, &amqp.Open{ContainerID: "c", MaxFrameSize: 512, Properties: amqp.Map{{Key: amqp.Symbol("p"), Value: "v"}}})
	add(amqp.FrameAMQP, &amqp.Begin{RemoteChannel: u16(1), IncomingWindow: 5})
	add(amqp.FrameAMQP, &amqp.Attach{Name: "l", Role: amqp.RoleReceiver, Source: &amqp.Source{Address: "q",
		Filter: amqp.Map{{Key: amqp.Symbol("com.microsoft:session-filter"), Value: amqp.Described{Descriptor: uint64(0x000001370000000c), Value: "s"}}}},
		Target: &amqp.Target{Address: "t"}, InitialDeliveryCount: u32(0)})
	add(amqp.FrameAMQP, &amqp.Flow{Handle: u32(1), LinkCredit: u32(100), Drain: true})
	add(amqp.FrameAMQP, &amqp.Transfer{Handle: 1, DeliveryID: u32(1), DeliveryTag: []byte{1}, MessageFormat: u32(0), Payload: []byte("x")})
	add(amqp.FrameAMQP, &amqp.Disposition{Role: amqp.RoleReceiver, First: 1, Settled: true, State: &amqp.Modified{DeliveryFailed: true}})
	add(amqp.FrameAMQP, &amqp.Detach{Handle: 1, Closed: true, Error: &amqp.Error{Condition: "amqp:not-found"}})
	add(amqp.FrameAMQP, &amqp.End{})
	add(amqp.FrameAMQP, &amqp.Close{})
	add(amqp.FrameSASL, &amqp.SASLMechanisms{Mechanisms: []amqp.Symbol{"MSSBCBS", "ANONYMOUS"}})
	add(amqp.FrameSASL, &amqp.SASLInit{Mechanism: "PLAIN", InitialResponse: []byte("\x00a\x00b"), Hostname: "h"})
	add(amqp.FrameSASL, &amqp.SASLOutcome{Code: amqp.SASLOK})
	out = append(out, amqp.AppendEmptyFrame(nil))
	return out
}

func seedMessages() [][]byte {
	var out [][]byte
	for _, m := range []*amqp.Message{
		{Properties: &amqp.Properties{MessageID: "id"}, Data: [][]byte{[]byte("hello")}},
		{Header: &amqp.Header{Priority: 4, DeliveryCount: 1}, MessageAnnotations: amqp.Map{{Key: amqp.Symbol("x-opt-sequence-number"), Value: int64(1)}},
			ApplicationProperties: amqp.Map{{Key: "k", Value: int32(1)}}, Value: amqp.Map{{Key: "a", Value: []any{}}}, HasValue: true},
		{Sequence: [][]any{{true}}, Footer: amqp.Map{}},
	} {
		b, err := m.AppendBinary(nil)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzDecodeValue: no input panics; whatever decodes re-encodes, and the
// re-encoding decodes to a value that encodes the same.
func FuzzDecodeValue(f *testing.F) {
	for _, v := range seedValues() {
		b, err := amqp.AppendValue(nil, v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, n, err := amqp.DecodeValue(in)
		if err != nil {
			return
		}
		if n < 1 || n > len(in) {
			t.Fatalf("took %d of %d octets", n, len(in))
		}
		enc, err := amqp.AppendValue(nil, v)
		if err != nil {
			t.Fatalf("decoded %#v does not re-encode: %v", v, err)
		}
		v2, n2, err := amqp.DecodeValue(enc)
		if err != nil {
			t.Fatalf("re-encoding % x does not decode: %v", enc, err)
		}
		if n2 != len(enc) {
			t.Fatalf("re-encoding took %d of %d octets", n2, len(enc))
		}
		enc2, err := amqp.AppendValue(nil, v2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("unstable: % x then % x (%v)", enc, enc2, err)
		}
	})
}

// FuzzReadFrame: no stream panics ReadFrame; every frame read re-encodes,
// and the re-encoding parses to a frame that encodes the same.
func FuzzReadFrame(f *testing.F) {
	frames := seedFrames()
	for _, b := range frames {
		f.Add(b)
	}
	f.Add(bytes.Join(frames, nil))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		var buf []byte
		for {
			fr, err := amqp.ReadFrame(r, &buf, 1<<16)
			if err != nil {
				if err == io.EOF && r.Len() != 0 {
					t.Fatalf("io.EOF with %d octets unread", r.Len())
				}
				return
			}
			enc, err := amqp.AppendFrame(nil, fr.Type, fr.Channel, fr.Body)
			if err != nil {
				t.Fatalf("frame %#v does not re-encode: %v", fr, err)
			}
			fr2, n, err := amqp.ParseFrame(enc, 1<<32-1)
			if err != nil || n != len(enc) {
				t.Fatalf("re-encoding % x does not parse: %v", enc, err)
			}
			enc2, err := amqp.AppendFrame(nil, fr2.Type, fr2.Channel, fr2.Body)
			if err != nil || !bytes.Equal(enc, enc2) {
				t.Fatalf("unstable: % x then % x (%v)", enc, enc2, err)
			}
		}
	})
}

// FuzzMessage: no input panics UnmarshalBinary; whatever decodes
// re-encodes, and the re-encoding decodes to a message that encodes the
// same.
func FuzzMessage(f *testing.F) {
	for _, b := range seedMessages() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var m amqp.Message
		if err := m.UnmarshalBinary(in); err != nil {
			return
		}
		enc, err := m.AppendBinary(nil)
		if err != nil {
			t.Fatalf("message %#v does not re-encode: %v", m, err)
		}
		var m2 amqp.Message
		if err := m2.UnmarshalBinary(enc); err != nil {
			t.Fatalf("re-encoding % x does not decode: %v", enc, err)
		}
		enc2, err := m2.AppendBinary(nil)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("unstable: % x then % x (%v)", enc, enc2, err)
		}
	})
}
