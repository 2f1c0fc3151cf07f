package amqp_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/minibus-go/minibus/internal/amqp"
)

// benchMessage is a received Service Bus message as the server sends it: a
// header, the broker's annotations, properties, three application
// properties and a 1 KiB body.
func benchMessage() *amqp.Message {
	now := time.UnixMilli(1_700_000_000_000).UTC()
	return &amqp.Message{
		Header: &amqp.Header{Durable: true, Priority: 4, DeliveryCount: 1, TTL: 60000},
		MessageAnnotations: amqp.Map{
			{Key: amqp.Symbol("x-opt-sequence-number"), Value: int64(123456)},
			{Key: amqp.Symbol("x-opt-enqueued-time"), Value: now},
			{Key: amqp.Symbol("x-opt-locked-until"), Value: now.Add(time.Minute)},
			{Key: amqp.Symbol("x-opt-enqueue-sequence-number"), Value: int64(123456)},
		},
		Properties: &amqp.Properties{MessageID: "0f5c3f4e-6a1b-4c2d-8e9f-0a1b2c3d4e5f", ContentType: "application/json", CreationTime: now},
		ApplicationProperties: amqp.Map{
			{Key: "tenant", Value: "contoso"}, {Key: "attempt", Value: int32(3)}, {Key: "priority", Value: int64(7)},
		},
		Data: [][]byte{bytes.Repeat([]byte("x"), 1024)},
	}
}

func BenchmarkMessageEncode1KiB(b *testing.B) {
	m := benchMessage()
	buf, _ := m.AppendBinary(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = m.AppendBinary(buf[:0])
	}
}

func BenchmarkMessageDecode1KiB(b *testing.B) {
	enc, err := benchMessage().AppendBinary(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	var m amqp.Message
	for b.Loop() {
		if err := m.UnmarshalBinary(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func benchTransfer(payload []byte) *amqp.Transfer {
	return &amqp.Transfer{Handle: 1, DeliveryID: u32(77), DeliveryTag: bytes.Repeat([]byte{1}, 16), MessageFormat: u32(0),
		Settled: bptr(false), Payload: payload}
}

func BenchmarkTransferFrameEncode(b *testing.B) {
	enc, _ := benchMessage().AppendBinary(nil)
	t := benchTransfer(enc)
	buf, _ := amqp.AppendFrame(nil, amqp.FrameAMQP, 0, t)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = amqp.AppendFrame(buf[:0], amqp.FrameAMQP, 0, t)
	}
}

func BenchmarkTransferFrameDecode(b *testing.B) {
	enc, _ := benchMessage().AppendBinary(nil)
	frame, _ := amqp.AppendFrame(nil, amqp.FrameAMQP, 0, benchTransfer(enc))
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	r := bytes.NewReader(frame)
	buf := make([]byte, 0, 4096)
	for b.Loop() {
		r.Reset(frame)
		if _, err := amqp.ReadFrame(r, &buf, 1<<16); err != nil {
			b.Fatal(err)
		}
	}
}

func benchFlow() *amqp.Flow {
	return &amqp.Flow{NextIncomingID: u32(1000), IncomingWindow: 5000, NextOutgoingID: 77, OutgoingWindow: 5000,
		Handle: u32(1), DeliveryCount: u32(77), LinkCredit: u32(100)}
}

func BenchmarkFlowFrameEncode(b *testing.B) {
	f := benchFlow()
	buf, _ := amqp.AppendFrame(nil, amqp.FrameAMQP, 0, f)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = amqp.AppendFrame(buf[:0], amqp.FrameAMQP, 0, f)
	}
}

func BenchmarkFlowFrameDecode(b *testing.B) {
	frame, _ := amqp.AppendFrame(nil, amqp.FrameAMQP, 0, benchFlow())
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := amqp.ParseFrame(frame, 512); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDispositionFrameDecode(b *testing.B) {
	frame, _ := amqp.AppendFrame(nil, amqp.FrameAMQP, 0, &amqp.Disposition{Role: amqp.RoleReceiver, First: 7, Settled: true, State: &amqp.Accepted{}})
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := amqp.ParseFrame(frame, 512); err != nil {
			b.Fatal(err)
		}
	}
}
