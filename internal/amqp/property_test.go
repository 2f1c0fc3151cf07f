package amqp_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/minibus-go/minibus/internal/amqp"
)

func genTime() *rapid.Generator[time.Time] {
	return rapid.Custom(func(t *rapid.T) time.Time {
		return time.UnixMilli(rapid.Int64().Draw(t, "ms")).UTC()
	})
}

func genUUID() *rapid.Generator[amqp.UUID] {
	return rapid.Custom(func(t *rapid.T) amqp.UUID {
		var u amqp.UUID
		copy(u[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "uuid"))
		return u
	})
}

func genSymbol() *rapid.Generator[amqp.Symbol] {
	return rapid.Map(rapid.String(), func(s string) amqp.Symbol { return amqp.Symbol(s) })
}

// genBytes makes binaries of every width: mostly short, sometimes past 255.
func genBytes() *rapid.Generator[[]byte] {
	return rapid.OneOf(rapid.SliceOfN(rapid.Byte(), 0, 20), rapid.SliceOfN(rapid.Byte(), 250, 300))
}

// genPrimitive draws any primitive of the type mapping, at any width.
func genPrimitive() *rapid.Generator[any] {
	return rapid.OneOf(
		rapid.Just[any](nil),
		rapid.Bool().AsAny(),
		rapid.Uint8().AsAny(),
		rapid.Uint16().AsAny(),
		rapid.OneOf(rapid.Uint32Range(0, 300), rapid.Uint32()).AsAny(),
		rapid.OneOf(rapid.Uint64Range(0, 300), rapid.Uint64()).AsAny(),
		rapid.Int8().AsAny(),
		rapid.Int16().AsAny(),
		rapid.OneOf(rapid.Int32Range(-200, 200), rapid.Int32()).AsAny(),
		rapid.OneOf(rapid.Int64Range(-200, 200), rapid.Int64()).AsAny(),
		rapid.Float32().AsAny(),
		rapid.Float64().AsAny(),
		rapid.Map(rapid.SliceOfN(rapid.Byte(), 4, 4), func(b []byte) any { return amqp.Decimal32(b) }),
		rapid.Map(rapid.SliceOfN(rapid.Byte(), 8, 8), func(b []byte) any { return amqp.Decimal64(b) }),
		rapid.Map(rapid.SliceOfN(rapid.Byte(), 16, 16), func(b []byte) any { return amqp.Decimal128(b) }),
		rapid.Map(rapid.Int32Range(0, 0x10ffff), func(r int32) any { return amqp.Char(r) }),
		genTime().AsAny(),
		genUUID().AsAny(),
		genBytes().AsAny(),
		rapid.String().AsAny(),
		rapid.Map(rapid.StringN(250, 300, -1), func(s string) any { return s }),
		genSymbol().AsAny(),
	)
}

// genValue draws any value of the type mapping, compound values nested up
// to depth levels.
func genValue(depth int) *rapid.Generator[any] {
	if depth == 0 {
		return genPrimitive()
	}
	inner := genValue(depth - 1)
	return rapid.OneOf(
		genPrimitive(),
		rapid.SliceOfN(inner, 0, 5).AsAny(),
		genMap(inner).AsAny(),
		genArray(depth-1).AsAny(),
		rapid.Custom(func(t *rapid.T) any {
			var d any
			if rapid.Bool().Draw(t, "ulong descriptor") {
				d = rapid.Uint64Min(0x100).Draw(t, "code")
			} else {
				d = amqp.Symbol("test:" + rapid.String().Draw(t, "name"))
			}
			return amqp.Described{Descriptor: d, Value: inner.Draw(t, "value")}
		}),
	)
}

func genMap(v *rapid.Generator[any]) *rapid.Generator[amqp.Map] {
	return rapid.Custom(func(t *rapid.T) amqp.Map {
		n := rapid.IntRange(0, 5).Draw(t, "n")
		m := make(amqp.Map, n)
		for i := range m {
			m[i] = amqp.KV{Key: v.Draw(t, "key"), Value: v.Draw(t, "value")}
		}
		return m
	})
}

// genArray draws a typed slice or an Array.
func genArray(depth int) *rapid.Generator[any] {
	gens := []*rapid.Generator[any]{
		rapid.SliceOfN(genSymbol(), 0, 4).AsAny(),
		rapid.SliceOfN(rapid.String(), 0, 4).AsAny(),
		rapid.SliceOfN(rapid.Int32(), 0, 4).AsAny(),
		rapid.SliceOfN(rapid.Int32Range(-128, 127), 0, 4).AsAny(),
		rapid.SliceOfN(rapid.Int64(), 0, 4).AsAny(),
		rapid.SliceOfN(rapid.Uint32(), 0, 4).AsAny(),
		rapid.SliceOfN(rapid.Uint64Range(0, 255), 0, 4).AsAny(),
		rapid.SliceOfN(genUUID(), 0, 4).AsAny(),
		rapid.SliceOfN(genTime(), 0, 4).AsAny(),
		rapid.SliceOfN(rapid.Bool(), 0, 4).AsAny(),
		rapid.SliceOfN(rapid.Float64(), 0, 4).AsAny(),
		rapid.SliceOfN(genMap(genPrimitive()), 0, 3).AsAny(),
		rapid.Map(rapid.SliceOfN(rapid.Uint8(), 0, 4), func(s []uint8) any {
			return amqp.Array{Code: 0x50, Elems: anys(s)}
		}),
		rapid.Map(rapid.SliceOfN(rapid.Int16(), 0, 4), func(s []int16) any {
			return amqp.Array{Code: 0x61, Elems: anys(s)}
		}),
		rapid.Map(rapid.SliceOfN(genBytes(), 0, 3), func(s [][]byte) any {
			return amqp.Array{Code: 0xa0, Elems: anys(s)}
		}),
		rapid.Custom(func(t *rapid.T) any {
			s := rapid.SliceOfN(rapid.String(), 0, 3).Draw(t, "elems")
			return amqp.Array{Descriptor: rapid.Uint64Min(0x100).Draw(t, "d"), Code: 0xa1, Elems: anys(s)}
		}),
	}
	if depth > 0 {
		gens = append(gens, rapid.Map(rapid.SliceOfN(rapid.SliceOfN(genValue(depth-1), 0, 3), 0, 3), func(s [][]any) any {
			return amqp.Array{Code: 0xc0, Elems: anys(s)}
		}))
	}
	return rapid.OneOf(gens...)
}

func anys[T any](s []T) []any {
	out := make([]any, len(s))
	for i, e := range s {
		out[i] = e
	}
	return out
}

// TestRapidValueRoundTrip: any value decodes to itself, and its encoding
// is stable across a round trip.
func TestRapidValueRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(3).Draw(t, "v")
		b, err := amqp.AppendValue(nil, v)
		require.NoError(t, err)
		got, n, err := amqp.DecodeValue(b)
		require.NoError(t, err)
		require.Equal(t, len(b), n)
		require.Equal(t, v, got)
		again, err := amqp.AppendValue(nil, got)
		require.NoError(t, err)
		require.Equal(t, b, again)
	})
}

func genOptString() *rapid.Generator[string] {
	return rapid.OneOf(rapid.Just(""), rapid.String())
}

func genOptMap() *rapid.Generator[amqp.Map] {
	return rapid.OneOf(rapid.Just(amqp.Map(nil)), genMap(genValue(1)))
}

func genOptTime() *rapid.Generator[time.Time] {
	return rapid.OneOf(rapid.Just(time.Time{}), genTime())
}

func genMessage() *rapid.Generator[*amqp.Message] {
	return rapid.Custom(func(t *rapid.T) *amqp.Message {
		m := &amqp.Message{}
		if rapid.Bool().Draw(t, "header") {
			m.Header = &amqp.Header{
				Durable: rapid.Bool().Draw(t, "durable"), Priority: rapid.Uint8().Draw(t, "priority"),
				TTL: rapid.Uint32().Draw(t, "ttl"), FirstAcquirer: rapid.Bool().Draw(t, "first"),
				DeliveryCount: rapid.Uint32().Draw(t, "count"),
			}
		}
		m.DeliveryAnnotations = genOptMap().Draw(t, "delivery annotations")
		m.MessageAnnotations = genOptMap().Draw(t, "message annotations")
		if rapid.Bool().Draw(t, "properties") {
			id := rapid.OneOf(rapid.Just[any](nil), rapid.String().AsAny(), genUUID().AsAny(), rapid.Uint64().AsAny(), genBytes().AsAny())
			m.Properties = &amqp.Properties{
				MessageID: id.Draw(t, "message-id"), UserID: rapid.OneOf(rapid.Just([]byte(nil)), genBytes()).Draw(t, "user-id"),
				To: genOptString().Draw(t, "to"), Subject: genOptString().Draw(t, "subject"), ReplyTo: genOptString().Draw(t, "reply-to"),
				CorrelationID: id.Draw(t, "correlation-id"), ContentType: amqp.Symbol(genOptString().Draw(t, "content-type")),
				ContentEncoding:    amqp.Symbol(genOptString().Draw(t, "content-encoding")),
				AbsoluteExpiryTime: genOptTime().Draw(t, "expiry"), CreationTime: genOptTime().Draw(t, "creation"),
				GroupID: genOptString().Draw(t, "group-id"), GroupSequence: rapid.Uint32().Draw(t, "group-sequence"),
				ReplyToGroupID: genOptString().Draw(t, "reply-to-group-id"),
			}
		}
		m.ApplicationProperties = rapid.OneOf(rapid.Just(amqp.Map(nil)), rapid.Custom(func(t *rapid.T) amqp.Map {
			n := rapid.IntRange(0, 6).Draw(t, "n")
			ap := make(amqp.Map, n)
			for i := range ap {
				ap[i] = amqp.KV{Key: rapid.String().Draw(t, "key"), Value: genPrimitive().Draw(t, "value")}
			}
			return ap
		})).Draw(t, "application properties")
		switch rapid.IntRange(0, 3).Draw(t, "body") {
		case 1:
			m.Data = rapid.SliceOfN(genBytes(), 1, 3).Draw(t, "data")
		case 2:
			m.Sequence = rapid.SliceOfN(rapid.SliceOfN(genValue(1), 0, 3), 1, 3).Draw(t, "sequence")
		case 3:
			m.Value, m.HasValue = genValue(2).Draw(t, "value"), true
		}
		m.Footer = genOptMap().Draw(t, "footer")
		return m
	})
}

// TestRapidMessageRoundTrip: any message decodes to itself.
func TestRapidMessageRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := genMessage().Draw(t, "m")
		b, err := m.AppendBinary(nil)
		require.NoError(t, err)
		var got amqp.Message
		require.NoError(t, got.UnmarshalBinary(b))
		require.Equal(t, *m, got)
	})
}

// TestRapidTransferSplit: any payload split at any max-frame-size joins
// up again, every frame within the limit.
func TestRapidTransferSplit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		payload := rapid.SliceOfN(rapid.Byte(), 0, 5000).Draw(t, "payload")
		max := rapid.Uint32Range(512, 3000).Draw(t, "max")
		tr := &amqp.Transfer{
			Handle: rapid.Uint32().Draw(t, "handle"), DeliveryID: u32(rapid.Uint32().Draw(t, "id")),
			DeliveryTag: rapid.SliceOfN(rapid.Byte(), 0, 32).Draw(t, "tag"), MessageFormat: u32(0),
			Settled: bptr(rapid.Bool().Draw(t, "settled")), Payload: payload,
		}
		b, err := amqp.AppendTransferFrames(nil, 0, tr, max)
		require.NoError(t, err)
		var joined []byte
		frames := 0
		for len(b) > 0 {
			f, n, err := amqp.ParseFrame(b, max)
			require.NoError(t, err)
			x := f.Body.(*amqp.Transfer)
			joined = append(joined, x.Payload...)
			b = b[n:]
			frames++
			require.Equal(t, len(b) > 0, x.More)
		}
		require.True(t, bytes.Equal(payload, joined))
		overhead, err := amqp.TransferOverhead(tr)
		require.NoError(t, err)
		if overhead+len(payload) <= int(max) {
			require.Equal(t, 1, frames)
		}
	})
}

// TestRapidFlowRoundTrip: flows with any mix of optional fields.
func TestRapidFlowRoundTrip(t *testing.T) {
	opt := func(t *rapid.T, name string) *uint32 {
		if rapid.Bool().Draw(t, name+" set") {
			return u32(rapid.Uint32().Draw(t, name))
		}
		return nil
	}
	rapid.Check(t, func(t *rapid.T) {
		f := &amqp.Flow{
			NextIncomingID: opt(t, "next-incoming-id"), IncomingWindow: rapid.Uint32().Draw(t, "iw"),
			NextOutgoingID: rapid.Uint32().Draw(t, "noi"), OutgoingWindow: rapid.Uint32().Draw(t, "ow"),
			Handle: opt(t, "handle"), DeliveryCount: opt(t, "delivery-count"), LinkCredit: opt(t, "link-credit"),
			Available: opt(t, "available"), Drain: rapid.Bool().Draw(t, "drain"), Echo: rapid.Bool().Draw(t, "echo"),
			Properties: genOptMap().Draw(t, "properties"),
		}
		b, err := amqp.AppendFrame(nil, amqp.FrameAMQP, rapid.Uint16().Draw(t, "channel"), f)
		require.NoError(t, err)
		got, _, err := amqp.ParseFrame(b, uint32(len(b)+512))
		require.NoError(t, err)
		require.Equal(t, f, got.Body)
	})
}
