package amqp_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus/internal/amqp"
)

// messageRoundTrip encodes m, checks the bytes when want is not nil, and
// decodes them back.
func messageRoundTrip(t *testing.T, m *amqp.Message, want []byte) {
	t.Helper()
	b, err := m.AppendBinary([]byte{0xee})
	require.NoError(t, err)
	require.Equal(t, byte(0xee), b[0])
	b = b[1:]
	if want != nil {
		require.Equal(t, want, b)
	}
	var got amqp.Message
	require.NoError(t, got.UnmarshalBinary(b))
	require.Equal(t, *m, got)
}

// TestMessageBytes checks sections against encodings written out by hand
// from part 3 section 3.2.
func TestMessageBytes(t *testing.T) {
	enq := time.UnixMilli(1704067200123).UTC()
	cases := []struct {
		name string
		m    *amqp.Message
		want []byte
	}{
		{
			"properties and data",
			&amqp.Message{Properties: &amqp.Properties{MessageID: "id"}, Data: [][]byte{[]byte("hello")}},
			h(`00 53 73 c0 05 01 a1 02 "id"  00 53 75 a0 05 "hello"`),
		},
		{
			"header",
			&amqp.Message{Header: &amqp.Header{Durable: true, Priority: 4, TTL: 60000, DeliveryCount: 2}},
			h(`00 53 70 c0 0b 05 41 40 70 00 00 ea 60 40 52 02`),
		},
		{
			"header at defaults: delivery-count written all the same (W5: rhea reads an absent one as undefined)",
			&amqp.Message{Header: &amqp.Header{Priority: 4}},
			h(`00 53 70 c0 06 05 40 40 40 40 43`),
		},
		{
			"application properties",
			&amqp.Message{ApplicationProperties: amqp.Map{{Key: "k", Value: int32(5)}}},
			h(`00 53 74 c1 06 02 a1 01 "k" 54 05`),
		},
		{
			"message annotations: a timestamp and a long",
			&amqp.Message{MessageAnnotations: amqp.Map{
				{Key: amqp.Symbol("x-opt-enqueued-time"), Value: enq},
				{Key: amqp.Symbol("x-opt-sequence-number"), Value: int64(1000)},
			}},
			h(`00 53 72 c1 3f 04
				a3 13 "x-opt-enqueued-time" 83 00 00 01 8c c2 51 f4 7b
				a3 15 "x-opt-sequence-number" 81 00 00 00 00 00 00 03 e8`),
		},
		{
			"amqp-value null",
			&amqp.Message{HasValue: true},
			h(`00 53 77 40`),
		},
		{
			"amqp-sequence and footer",
			&amqp.Message{Sequence: [][]any{{true}, {}}, Footer: amqp.Map{}},
			h(`00 53 76 c0 02 01 41  00 53 76 45  00 53 78 c1 01 00`),
		},
		{
			"properties with times, ids and group fields",
			&amqp.Message{Properties: &amqp.Properties{
				MessageID: uint64(7), To: "q", CorrelationID: amqp.UUID{}, ContentType: "text/plain",
				CreationTime: enq, GroupID: "g", GroupSequence: 3,
			}},
			cat(h(`00 53 73 c0 36 0c 53 07 40 a1 01 "q" 40 40 98`), rep(0, 16),
				h(`a3 0a "text/plain" 40 40 83 00 00 01 8c c2 51 f4 7b a1 01 "g" 52 03`)),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { messageRoundTrip(t, c.m, c.want) })
	}
}

// TestMessageEverySection round-trips a message holding every section.
func TestMessageEverySection(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_000).UTC()
	m := &amqp.Message{
		Header:              &amqp.Header{Durable: true, Priority: 9, TTL: 1000, FirstAcquirer: true, DeliveryCount: 3},
		DeliveryAnnotations: amqp.Map{{Key: amqp.Symbol("x-opt-lock-token"), Value: amqp.UUID{1}}},
		MessageAnnotations: amqp.Map{
			{Key: amqp.Symbol("x-opt-sequence-number"), Value: int64(42)},
			{Key: amqp.Symbol("x-opt-enqueued-time"), Value: ts},
			{Key: uint64(5), Value: "ulong key"},
		},
		Properties: &amqp.Properties{
			MessageID: amqp.UUID{2}, UserID: []byte("u"), To: "q1", Subject: "s", ReplyTo: "r",
			CorrelationID: []byte{1, 2}, ContentType: "application/json", ContentEncoding: "gzip",
			AbsoluteExpiryTime: ts.Add(time.Hour), CreationTime: ts, GroupID: "session-1", GroupSequence: 9,
			ReplyToGroupID: "rs",
		},
		ApplicationProperties: amqp.Map{
			{Key: "string", Value: "v"}, {Key: "int", Value: int32(-1)}, {Key: "long", Value: int64(1 << 40)},
			{Key: "bool", Value: true}, {Key: "double", Value: 1.5}, {Key: "time", Value: ts}, {Key: "null", Value: nil},
		},
		Data:   [][]byte{[]byte("part one"), {}, bytes.Repeat([]byte{7}, 70000)},
		Footer: amqp.Map{{Key: amqp.Symbol("f"), Value: []byte{0}}},
	}
	messageRoundTrip(t, m, nil)

	seq := &amqp.Message{Sequence: [][]any{{uint8(1), "two", []any{nil}}, {amqp.Map{{Key: "k", Value: "v"}}}}}
	messageRoundTrip(t, seq, nil)

	val := &amqp.Message{
		Properties: &amqp.Properties{MessageID: "m"},
		Value:      amqp.Map{{Key: "expirations", Value: []time.Time{ts}}, {Key: "lock-tokens", Value: []amqp.UUID{{3}}}},
		HasValue:   true,
	}
	messageRoundTrip(t, val, nil)
	messageRoundTrip(t, &amqp.Message{}, []byte{})
}

// TestMessageLenient: sections in any order, symbolic section descriptors,
// and a null annotations map decode.
func TestMessageLenient(t *testing.T) {
	in := cat(
		h(`00 53 75 a0 01 "b"`),
		h(`00 a3 10 "amqp:header:list" 45`),
		h(`00 53 72 40`),
		h(`00 53 74 c1 06 02 a3 01 "k" 54 05`), // a symbol key where a string is due
		h(`00 53 73 c0 04 01 a1 01 "i"`),
	)
	var m amqp.Message
	require.NoError(t, m.UnmarshalBinary(in))
	require.Equal(t, amqp.Message{
		Header:                &amqp.Header{Priority: 4},
		Properties:            &amqp.Properties{MessageID: "i"},
		ApplicationProperties: amqp.Map{{Key: amqp.Symbol("k"), Value: int32(5)}},
		Data:                  [][]byte{[]byte("b")},
	}, m)
	v, ok := m.ApplicationProperties.GetString("k")
	require.True(t, ok)
	require.Equal(t, int32(5), v)

	// UnmarshalBinary replaces what m held.
	require.NoError(t, m.UnmarshalBinary(h(`00 53 77 41`)))
	require.Equal(t, amqp.Message{Value: true, HasValue: true}, m)
}

// TestMessageDataAliases: data sections alias the input.
func TestMessageDataAliases(t *testing.T) {
	in := h(`00 53 75 a0 02 "ab"`)
	var m amqp.Message
	require.NoError(t, m.UnmarshalBinary(in))
	in[5] = 'z'
	require.Equal(t, []byte("zb"), m.Data[0])
}

// TestMessageErrors: what is not a message is a DecodeError naming the
// section.
func TestMessageErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"not described", h(`a1 01 "x"`), "expected a section"},
		{"unknown section", h(`00 53 79 40`), "unknown section descriptor 0x79"},
		{"a performative is not a section", h(`00 53 10 45`), "unknown section descriptor 0x10"},
		{"repeated header", h(`00 53 70 45 00 53 70 45`), "header"},
		{"repeated properties", h(`00 53 73 45 00 53 73 45`), "section repeated"},
		{"data then value", h(`00 53 75 a0 00 00 53 77 40`), "mixes"},
		{"sequence then data", h(`00 53 76 45 00 53 75 a0 00`), "mixes"},
		{"two values", h(`00 53 77 40 00 53 77 40`), "section repeated"},
		{"data not binary", h(`00 53 75 a1 01 "x"`), "data"},
		{"sequence not a list", h(`00 53 76 41`), "amqp-sequence"},
		{"annotations not a map", h(`00 53 72 45`), "message-annotations"},
		{"truncated", h(`00 53 75 a0 05 "ab"`), "truncated"},
		{"bad header field", h(`00 53 70 c0 03 02 40 a1 00`), "header.priority"},
		{"bad properties field", h(`00 53 73 c0 04 02 40 52 01`), "properties.user-id"},
		{"creation-time not a timestamp", h(`00 53 73 c0 0c 0a 40 40 40 40 40 40 40 40 40 52 01`), "properties.creation-time"},
		{"creation-time truncated", h(`00 53 73 c0 0c 0a 40 40 40 40 40 40 40 40 40 83 01`), "properties.creation-time"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var m amqp.Message
			err := m.UnmarshalBinary(c.in)
			require.ErrorIs(t, err, amqp.ErrMalformed)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// TestMessageEncodeError: a section that cannot be encoded fails and
// leaves dst as it was.
func TestMessageEncodeError(t *testing.T) {
	m := &amqp.Message{ApplicationProperties: amqp.Map{{Key: "k", Value: map[string]any{}}}}
	b, err := m.AppendBinary([]byte{1})
	require.ErrorIs(t, err, amqp.ErrEncode)
	require.Equal(t, []byte{1}, b)
}
