package amqp_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus/internal/amqp"
)

func u32(v uint32) *uint32 { return &v }
func u16(v uint16) *uint16 { return &v }
func bptr(v bool) *bool    { return &v }

// l8 builds a list8 from already-encoded items: the test's own tiny
// encoder, so expected bytes do not come from the code under test.
func l8(items ...[]byte) []byte {
	body := cat(items...)
	return cat([]byte{0xc0, byte(len(body) + 1), byte(len(items))}, body)
}

// desc prefixes a smallulong descriptor.
func desc(code byte, v []byte) []byte { return cat([]byte{0x00, 0x53, code}, v) }

// frame wraps a body in a frame header (doff 2).
func frame(typ byte, channel uint16, body []byte) []byte {
	return cat(be32(len(body)+8), []byte{2, typ, byte(channel >> 8), byte(channel)}, body)
}

// frameRoundTrip encodes p in a frame, checks the bytes when want is not
// nil, and decodes it back with ParseFrame and ReadFrame.
func frameRoundTrip(t *testing.T, typ uint8, channel uint16, p amqp.Performative, want []byte) amqp.Frame {
	t.Helper()
	b, err := amqp.AppendFrame(nil, typ, channel, p)
	require.NoError(t, err)
	if want != nil {
		require.Equal(t, want, b)
	}
	f, n, err := amqp.ParseFrame(b, math.MaxUint32)
	require.NoError(t, err)
	require.Equal(t, len(b), n)
	require.Equal(t, amqp.Frame{Type: typ, Channel: channel, Body: p}, f)

	var buf []byte
	f2, err := amqp.ReadFrame(bytes.NewReader(b), &buf, math.MaxUint32)
	require.NoError(t, err)
	require.Equal(t, f, f2)
	return f
}

// TestPerformativeBytes checks frames against encodings written out by hand
// from part 2 section 2.7 (field order, types, defaults) and part 1 (type
// codes).
func TestPerformativeBytes(t *testing.T) {
	cases := []struct {
		name string
		typ  uint8
		p    amqp.Performative
		want []byte
	}{
		{
			"open",
			amqp.FrameAMQP,
			&amqp.Open{ContainerID: "x", Hostname: "h", MaxFrameSize: 65536, ChannelMax: 255, IdleTimeOut: 30000},
			h(`00 00 00 26 02 00 00 00  00 53 10 c0 19 0a  a1 01 "x" a1 01 "h" 70 00 01 00 00 60 00 ff 70 00 00 75 30 40 40 40 40 40`),
		},
		{
			"begin",
			amqp.FrameAMQP,
			&amqp.Begin{RemoteChannel: u16(0), NextOutgoingID: 1, IncomingWindow: 5000, OutgoingWindow: 5000, HandleMax: 255},
			h(`00 00 00 22 02 00 00 00  00 53 11 c0 15 08  60 00 00 52 01 70 00 00 13 88 70 00 00 13 88 52 ff 40 40 40`),
		},
		{
			"attach",
			amqp.FrameAMQP,
			&amqp.Attach{
				Name: "l", Handle: 0, Role: amqp.RoleReceiver, SndSettleMode: amqp.SndMixed, RcvSettleMode: amqp.RcvFirst,
				Source: &amqp.Source{Address: "s"}, Target: &amqp.Target{Address: "q"}, MaxMessageSize: 262144,
			},
			h(`00 00 00 48 02 00 00 00  00 53 12 c0 3b 0e
				a1 01 "l" 43 41 50 02 50 00
				00 53 28 c0 0e 0b a1 01 "s" 40 40 40 40 40 40 40 40 40 40
				00 53 29 c0 0a 07 a1 01 "q" 40 40 40 40 40 40
				40 42 40 80 00 00 00 00 00 04 00 00 40 40 40`),
		},
		{
			"flow",
			amqp.FrameAMQP,
			&amqp.Flow{IncomingWindow: 100, NextOutgoingID: 1, OutgoingWindow: math.MaxUint32, Handle: u32(0), DeliveryCount: u32(0), LinkCredit: u32(10)},
			h(`00 00 00 1c 02 00 00 00  00 53 13 c0 0f 07  40 52 64 52 01 70 ff ff ff ff 43 43 52 0a`),
		},
		{
			"transfer",
			amqp.FrameAMQP,
			&amqp.Transfer{Handle: 0, DeliveryID: u32(0), DeliveryTag: []byte{1}, MessageFormat: u32(0), Settled: bptr(false), Payload: []byte("hi")},
			h(`00 00 00 17 02 00 00 00  00 53 14 c0 08 05  43 43 a0 01 01 43 42  "hi"`),
		},
		{
			"disposition",
			amqp.FrameAMQP,
			&amqp.Disposition{Role: amqp.RoleReceiver, First: 1, Settled: true, State: &amqp.Accepted{}},
			h(`00 00 00 17 02 00 00 00  00 53 15 c0 0a 05  41 52 01 40 41 00 53 24 45`),
		},
		{
			"detach",
			amqp.FrameAMQP,
			&amqp.Detach{Handle: 1, Closed: true, Error: &amqp.Error{Condition: "amqp:not-found", Description: "no"}},
			h(`00 00 00 2b 02 00 00 00  00 53 16 c0 1e 03  52 01 41 00 53 1d c0 15 02 a3 0e "amqp:not-found" a1 02 "no"`),
		},
		{"end", amqp.FrameAMQP, &amqp.End{}, h(`00 00 00 0c 02 00 00 00  00 53 17 45`)},
		{"close", amqp.FrameAMQP, &amqp.Close{}, h(`00 00 00 0c 02 00 00 00  00 53 18 45`)},
		{
			"sasl-mechanisms",
			amqp.FrameSASL,
			&amqp.SASLMechanisms{Mechanisms: []amqp.Symbol{"MSSBCBS", "ANONYMOUS", "PLAIN", "EXTERNAL"}},
			h(`00 00 00 33 02 01 00 00  00 53 40 c0 26 01  e0 23 04 a3 07 "MSSBCBS" 09 "ANONYMOUS" 05 "PLAIN" 08 "EXTERNAL"`),
		},
		{
			"sasl-mechanisms of one is still an array",
			amqp.FrameSASL,
			&amqp.SASLMechanisms{Mechanisms: []amqp.Symbol{"ANONYMOUS"}},
			h(`00 00 00 1c 02 01 00 00  00 53 40 c0 0f 01  e0 0c 01 a3 09 "ANONYMOUS"`),
		},
		{
			"sasl-init",
			amqp.FrameSASL,
			&amqp.SASLInit{Mechanism: "ANONYMOUS", InitialResponse: []byte("anonymous")},
			h(`00 00 00 24 02 01 00 00  00 53 41 c0 17 02  a3 09 "ANONYMOUS" a0 09 "anonymous"`),
		},
		{"sasl-outcome", amqp.FrameSASL, &amqp.SASLOutcome{Code: amqp.SASLOK}, h(`00 00 00 10 02 01 00 00  00 53 44 c0 03 01 50 00`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { frameRoundTrip(t, c.typ, 0, c.p, c.want) })
	}
}

// TestEmptyFrame: a keep-alive is an 8-octet frame with no body.
func TestEmptyFrame(t *testing.T) {
	require.Equal(t, h("00 00 00 08 02 00 00 00"), amqp.AppendEmptyFrame(nil))
	f, n, err := amqp.ParseFrame(amqp.AppendEmptyFrame(nil), 0)
	require.NoError(t, err)
	require.Equal(t, 8, n)
	require.Equal(t, amqp.Frame{}, f)
	b, err := amqp.AppendFrame(nil, amqp.FrameAMQP, 3, nil)
	require.NoError(t, err)
	require.Equal(t, h("00 00 00 08 02 00 00 03"), b)
}

// TestPerformativesRoundTrip: every performative with every field set and
// with only its mandatory fields survives an encode and decode.
func TestPerformativesRoundTrip(t *testing.T) {
	props := amqp.Map{{Key: amqp.Symbol("product"), Value: "minibus"}, {Key: amqp.Symbol("n"), Value: int64(1)}}
	caps := []amqp.Symbol{"ANONYMOUS-RELAY", "x"}
	fullSource := &amqp.Source{
		Address: "q1", Durable: 2, ExpiryPolicy: "link-detach", Timeout: 60, Dynamic: true,
		DynamicNodeProperties: amqp.Map{{Key: amqp.Symbol("lifetime-policy"), Value: amqp.Described{Descriptor: uint64(0x2b), Value: []any{}}}},
		DistributionMode:      "move",
		Filter: amqp.Map{
			{Key: amqp.Symbol("com.microsoft:session-filter"), Value: amqp.Described{Descriptor: uint64(0x000001370000000c), Value: "s1"}},
			{Key: amqp.Symbol("plain"), Value: "s2"},
		},
		DefaultOutcome: &amqp.Released{},
		Outcomes:       []amqp.Symbol{"amqp:accepted:list", "amqp:rejected:list"},
		Capabilities:   caps,
	}
	fullTarget := &amqp.Target{
		Address: "q1", Durable: 1, ExpiryPolicy: "never", Timeout: 5, Dynamic: true,
		DynamicNodeProperties: amqp.Map{{Key: amqp.Symbol("k"), Value: true}}, Capabilities: caps,
	}
	errFull := &amqp.Error{Condition: "amqp:internal-error", Description: "boom", Info: amqp.Map{{Key: amqp.Symbol("why"), Value: "x"}}}
	rsm := amqp.RcvSecond
	for _, p := range []amqp.Performative{
		&amqp.Open{
			ContainerID: "c", Hostname: "h", MaxFrameSize: 1 << 20, ChannelMax: 7, IdleTimeOut: 30000,
			OutgoingLocales: []amqp.Symbol{"en-US"}, IncomingLocales: []amqp.Symbol{"en-US", "fr"},
			OfferedCapabilities: caps, DesiredCapabilities: []amqp.Symbol{}, Properties: props,
		},
		&amqp.Open{ContainerID: "c", MaxFrameSize: math.MaxUint32, ChannelMax: math.MaxUint16},
		&amqp.Begin{RemoteChannel: u16(3), NextOutgoingID: 1 << 31, IncomingWindow: math.MaxUint32, OutgoingWindow: 1, HandleMax: 9,
			OfferedCapabilities: caps, DesiredCapabilities: caps, Properties: props},
		&amqp.Begin{HandleMax: math.MaxUint32},
		&amqp.Attach{
			Name: "link", Handle: 4, Role: amqp.RoleReceiver, SndSettleMode: amqp.SndUnsettled, RcvSettleMode: amqp.RcvSecond,
			Source: fullSource, Target: fullTarget,
			Unsettled:           amqp.Map{{Key: []byte{1}, Value: &amqp.Accepted{}}, {Key: []byte{2}, Value: nil}},
			IncompleteUnsettled: true, InitialDeliveryCount: u32(5), MaxMessageSize: 1 << 40,
			OfferedCapabilities: caps, DesiredCapabilities: caps, Properties: props,
		},
		&amqp.Attach{Name: "l", SndSettleMode: amqp.SndMixed},
		&amqp.Attach{Name: "txn", Role: amqp.RoleSender, SndSettleMode: amqp.SndSettled, Source: &amqp.Source{},
			Target: &amqp.Target{Coordinator: true, Capabilities: []amqp.Symbol{"amqp:local-transactions"}}},
		&amqp.Flow{NextIncomingID: u32(1), IncomingWindow: 2, NextOutgoingID: 3, OutgoingWindow: 4, Handle: u32(5), DeliveryCount: u32(6),
			LinkCredit: u32(7), Available: u32(8), Drain: true, Echo: true, Properties: props},
		&amqp.Flow{},
		&amqp.Transfer{Handle: 1, DeliveryID: u32(2), DeliveryTag: bytes.Repeat([]byte{9}, 32), MessageFormat: u32(0x80013700), Settled: bptr(true),
			More: true, RcvSettleMode: &rsm, State: &amqp.Received{SectionNumber: 1, SectionOffset: 1 << 33}, Resume: true, Aborted: true, Batchable: true,
			Payload: []byte("payload")},
		&amqp.Transfer{},
		&amqp.Disposition{Role: amqp.RoleReceiver, First: 1, Last: u32(9), Settled: true, State: &amqp.Rejected{Error: errFull}, Batchable: true},
		&amqp.Disposition{},
		&amqp.Detach{Handle: 1, Closed: true, Error: errFull},
		&amqp.Detach{},
		&amqp.End{Error: errFull},
		&amqp.End{},
		&amqp.Close{Error: &amqp.Error{Condition: "amqp:connection:forced"}},
		&amqp.Close{},
	} {
		t.Run(typeName(p), func(t *testing.T) { frameRoundTrip(t, amqp.FrameAMQP, 5, p, nil) })
	}
	for _, p := range []amqp.Performative{
		&amqp.SASLMechanisms{Mechanisms: []amqp.Symbol{"PLAIN"}},
		&amqp.SASLInit{Mechanism: "PLAIN", InitialResponse: []byte("\x00u\x00p"), Hostname: "host"},
		&amqp.SASLInit{Mechanism: "MSSBCBS"},
		&amqp.SASLChallenge{Challenge: []byte("c")},
		&amqp.SASLResponse{Response: []byte("r")},
		&amqp.SASLOutcome{Code: amqp.SASLAuth, AdditionalData: []byte("more")},
		&amqp.SASLOutcome{Code: amqp.SASLSysTemp},
	} {
		t.Run(typeName(p), func(t *testing.T) { frameRoundTrip(t, amqp.FrameSASL, 0, p, nil) })
	}
}

func typeName(v any) string {
	var b bytes.Buffer
	for _, c := range []byte(fmtType(v)) {
		if c != '*' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// TestDeliveryStates: every state and outcome round-trips on a
// disposition, and a state the codec does not know (transactional-state,
// declared) is kept as an UnknownState.
func TestDeliveryStates(t *testing.T) {
	for _, s := range []amqp.DeliveryState{
		&amqp.Received{SectionNumber: 0, SectionOffset: 0},
		&amqp.Received{SectionNumber: math.MaxUint32, SectionOffset: math.MaxUint64},
		&amqp.Accepted{},
		&amqp.Rejected{},
		&amqp.Rejected{Error: &amqp.Error{Condition: "com.microsoft:dead-letter", Info: amqp.Map{{Key: "DeadLetterReason", Value: "r"}}}},
		&amqp.Released{},
		&amqp.Modified{},
		&amqp.Modified{DeliveryFailed: true, UndeliverableHere: true, MessageAnnotations: amqp.Map{{Key: amqp.Symbol("x-opt-k"), Value: int32(1)}}},
		&amqp.UnknownState{Descriptor: uint64(0x34), Value: []any{[]byte("txn-1"), &amqp.Accepted{}}},
		&amqp.UnknownState{Descriptor: amqp.Symbol("amqp:declared:list"), Value: []any{[]byte{1}}},
	} {
		frameRoundTrip(t, amqp.FrameAMQP, 0, &amqp.Disposition{Role: amqp.RoleSender, First: 1, State: s}, nil)
		frameRoundTrip(t, amqp.FrameAMQP, 0, &amqp.Transfer{Handle: 1, State: s}, nil)
		b, err := amqp.AppendValue(nil, s)
		require.NoError(t, err)
		got, _, err := amqp.DecodeValue(b)
		require.NoError(t, err)
		if u, ok := s.(*amqp.UnknownState); ok {
			require.Equal(t, amqp.Described{Descriptor: u.Descriptor, Value: u.Value}, got)
		} else {
			require.Equal(t, s, got)
		}
	}
	// Hand-written: rejected with an error, modified with its flags.
	b, err := amqp.AppendValue(nil, &amqp.Modified{DeliveryFailed: true})
	require.NoError(t, err)
	require.Equal(t, h("00 53 27 c0 02 01 41"), b)
	b, err = amqp.AppendValue(nil, &amqp.Modified{UndeliverableHere: true})
	require.NoError(t, err)
	require.Equal(t, h("00 53 27 c0 03 02 40 41"), b)
	b, err = amqp.AppendValue(nil, &amqp.Received{SectionNumber: 1, SectionOffset: 2})
	require.NoError(t, err)
	require.Equal(t, h("00 53 23 c0 05 02 52 01 53 02"), b)
	b, err = amqp.AppendValue(nil, &amqp.Rejected{Error: &amqp.Error{Condition: "c"}})
	require.NoError(t, err)
	require.Equal(t, h(`00 53 25 c0 0a 01 00 53 1d c0 04 01 a3 01 "c"`), b)
}

// listCount returns the element count of the list that follows a
// smallulong descriptor at the start of b.
func listCount(t *testing.T, b []byte) int {
	t.Helper()
	require.Equal(t, []byte{0x00, 0x53}, b[:2])
	switch b[3] {
	case 0x45:
		return 0
	case 0xc0:
		return int(b[5])
	case 0xd0:
		return int(b[8])<<24 | int(b[9])<<16 | int(b[10])<<8 | int(b[11])
	}
	t.Fatalf("not a list: % x", b[:4])
	return 0
}

// TestFullFieldLists: open, begin and attach (and the source and target in
// an attach) always carry every field, even when only the mandatory ones
// are set, because pyamqp indexes the list without checking its length
// (W1); the others drop trailing absent fields.
func TestFullFieldLists(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
	}{
		{&amqp.Open{ContainerID: "c"}, 10},
		{&amqp.Begin{}, 8},
		{&amqp.Attach{Name: "l"}, 14},
		{&amqp.Attach{Name: "l", Source: &amqp.Source{}, Target: &amqp.Target{}}, 14},
		{&amqp.Source{}, 11},
		{&amqp.Target{}, 7},
		{&amqp.Flow{}, 4},
		{&amqp.Transfer{Handle: 1}, 1},
		{&amqp.Disposition{}, 2},
		{&amqp.Detach{}, 1},
		{&amqp.Close{}, 0},
		{&amqp.Error{Condition: "c"}, 1},
		{&amqp.SASLInit{Mechanism: "ANONYMOUS"}, 1},
		{&amqp.Header{Priority: 4}, 5}, // delivery-count always written (W5)
		{&amqp.Properties{}, 0},
	} {
		b, err := amqp.AppendValue(nil, c.v)
		require.NoError(t, err)
		require.Equal(t, c.want, listCount(t, b), "%T", c.v)
	}
	b, err := amqp.AppendValue(nil, &amqp.Attach{Name: "l", Source: &amqp.Source{}, Target: &amqp.Target{}})
	require.NoError(t, err)
	src := bytes.Index(b, []byte{0x00, 0x53, 0x28})
	require.Positive(t, src)
	require.Equal(t, 11, listCount(t, b[src:]))
	tgt := bytes.Index(b, []byte{0x00, 0x53, 0x29})
	require.Positive(t, tgt)
	require.Equal(t, 7, listCount(t, b[tgt:]))
}

// decodeBody decodes a frame body (performative bytes) as a client would
// send it.
func decodeBody(t *testing.T, typ byte, body []byte) amqp.Performative {
	t.Helper()
	f, _, err := amqp.ParseFrame(frame(typ, 0, body), math.MaxUint32)
	require.NoError(t, err)
	return f.Body
}

// TestLenientDecoding: what clients send that strays from the letter of
// the specification decodes all the same.
func TestLenientDecoding(t *testing.T) {
	t.Run("missing trailing fields take their defaults", func(t *testing.T) {
		o := decodeBody(t, 0, desc(0x10, l8(h(`a1 01 "x"`))))
		require.Equal(t, &amqp.Open{ContainerID: "x", MaxFrameSize: math.MaxUint32, ChannelMax: math.MaxUint16}, o)
		b := decodeBody(t, 0, desc(0x11, l8(h("40"), h("43"), h("52 64"), h("52 64"))))
		require.Equal(t, &amqp.Begin{IncomingWindow: 100, OutgoingWindow: 100, HandleMax: math.MaxUint32}, b)
		a := decodeBody(t, 0, desc(0x12, l8(h(`a1 01 "l"`), h("43"), h("42"))))
		require.Equal(t, &amqp.Attach{Name: "l", SndSettleMode: amqp.SndMixed, RcvSettleMode: amqp.RcvFirst}, a)
	})
	t.Run("null fields take their defaults", func(t *testing.T) {
		o := decodeBody(t, 0, desc(0x10, l8(h(`a1 01 "x"`), h("40"), h("40"), h("40"))))
		require.Equal(t, &amqp.Open{ContainerID: "x", MaxFrameSize: math.MaxUint32, ChannelMax: math.MaxUint16}, o)
	})
	t.Run("symbolic descriptors", func(t *testing.T) {
		o := decodeBody(t, 0, cat(h(`00 a3 0e "amqp:open:list"`), l8(h(`a1 01 "x"`))))
		require.Equal(t, "x", o.(*amqp.Open).ContainerID)
		d := decodeBody(t, 0, cat(h(`00 a3 15 "amqp:disposition:list"`), l8(h("41"), h("43"), h("40"), h("41"), h(`00 a3 12 "amqp:accepted:list" 45`))))
		require.Equal(t, &amqp.Disposition{Role: amqp.RoleReceiver, Settled: true, State: &amqp.Accepted{}}, d)
		s := decodeBody(t, 1, cat(h(`00 a3 19 "amqp:sasl-mechanisms:list"`), l8(h(`a3 05 "PLAIN"`))))
		require.Equal(t, &amqp.SASLMechanisms{Mechanisms: []amqp.Symbol{"PLAIN"}}, s)
	})
	t.Run("descriptor as a full ulong", func(t *testing.T) {
		c := decodeBody(t, 0, h("00 80 00 00 00 00 00 00 00 18 45"))
		require.Equal(t, &amqp.Close{}, c)
	})
	t.Run("wider and signed integer encodings in range", func(t *testing.T) {
		d := decodeBody(t, 0, desc(0x16, l8(h("80 00 00 00 00 00 00 00 07"))))
		require.Equal(t, &amqp.Detach{Handle: 7}, d)
		d = decodeBody(t, 0, desc(0x16, l8(h("54 07"))))
		require.Equal(t, &amqp.Detach{Handle: 7}, d)
		d = decodeBody(t, 0, desc(0x16, l8(h("60 01 00"))))
		require.Equal(t, &amqp.Detach{Handle: 256}, d)
		o := decodeBody(t, 0, desc(0x10, l8(h(`a1 01 "x"`), h("40"), h("53 ff"), h("52 05"))))
		require.Equal(t, &amqp.Open{ContainerID: "x", MaxFrameSize: 255, ChannelMax: 5}, o)
	})
	t.Run("strings and symbols interchangeably", func(t *testing.T) {
		e, _, err := amqp.DecodeValue(desc(0x1d, l8(h(`a1 02 "xy"`), h(`a3 01 "d"`))))
		require.NoError(t, err)
		require.Equal(t, &amqp.Error{Condition: "xy", Description: "d"}, e)
	})
	t.Run("one symbol where several may be", func(t *testing.T) {
		o := decodeBody(t, 0, desc(0x10, l8(h(`a1 01 "x"`), h("40"), h("40"), h("40"), h("40"), h("40"), h("40"), h(`a3 03 "abc"`), l8(h(`a3 01 "d"`), h(`a1 01 "e"`)))))
		require.Equal(t, []amqp.Symbol{"abc"}, o.(*amqp.Open).OfferedCapabilities)
		require.Equal(t, []amqp.Symbol{"d", "e"}, o.(*amqp.Open).DesiredCapabilities)
	})
	t.Run("fields beyond the known ones are skipped", func(t *testing.T) {
		c := decodeBody(t, 0, desc(0x18, l8(h("40"), h("41"), h(`a1 01 "z"`))))
		require.Equal(t, &amqp.Close{}, c)
	})
	t.Run("booleans in their one-octet form", func(t *testing.T) {
		d := decodeBody(t, 0, desc(0x15, l8(h("56 01"), h("43"), h("40"), h("56 01"))))
		require.Equal(t, &amqp.Disposition{Role: amqp.RoleReceiver, Settled: true}, d)
		d = decodeBody(t, 0, desc(0x15, l8(h("56 00"), h("43"), h("40"), h("56 00"))))
		require.Equal(t, &amqp.Disposition{}, d)
	})
	t.Run("list32 and list0 composites", func(t *testing.T) {
		c := decodeBody(t, 0, desc(0x18, h("d0 00 00 00 05 00 00 00 01 40")))
		require.Equal(t, &amqp.Close{}, c)
		f := decodeBody(t, 0, desc(0x13, h("c0 05 04 40 43 43 43")))
		require.Equal(t, &amqp.Flow{}, f)
	})
}

// TestSessionFilterForms: the session filter arrives plain (JS, .NET) or
// described (Go); both decode, keep their form, and re-encode as sent so
// the server can echo it (W7).
func TestSessionFilterForms(t *testing.T) {
	key := h(`a3 1c "com.microsoft:session-filter"`)
	plain := h(`a1 06 "sess-A"`)
	described := h(`00 80 00 00 01 37 00 00 00 0c a1 06 "sess-A"`)
	for _, c := range []struct {
		name  string
		value []byte
		want  any
	}{
		{"plain", plain, "sess-A"},
		{"described", described, amqp.Described{Descriptor: uint64(0x000001370000000c), Value: "sess-A"}},
		{"null (next available session)", h("40"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			filter := cat([]byte{0xc1, byte(len(key) + len(c.value) + 1), 2}, key, c.value)
			source := desc(0x28, l8(h(`a1 02 "q1"`), h("40"), h("40"), h("40"), h("40"), h("40"), h("40"), filter))
			target := desc(0x29, l8(h(`a1 02 "r1"`)))
			body := desc(0x12, l8(h(`a1 01 "r"`), h("52 01"), h("41"), h("50 00"), h("50 01"), source, target))
			a := decodeBody(t, 0, body).(*amqp.Attach)
			require.Equal(t, amqp.RcvSecond, a.RcvSettleMode)
			require.Equal(t, amqp.SndUnsettled, a.SndSettleMode)
			v, ok := a.Source.Filter.GetSymbol("com.microsoft:session-filter")
			require.True(t, ok)
			require.Equal(t, c.want, v)

			// Echoed: the filter map re-encodes byte for byte.
			out, err := amqp.AppendValue(nil, a.Source)
			require.NoError(t, err)
			require.True(t, bytes.Contains(out, filter), "% x does not contain % x", out, filter)
		})
	}
}

// TestDecodePerformativeErrors: a mandatory field missing, a field of the
// wrong type or out of range, and an unknown or misplaced performative
// are DecodeErrors naming the culprit.
func TestDecodePerformativeErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		typ  byte
		body []byte
		want string
	}{
		{"attach handle null", 0, desc(0x12, l8(h(`a1 01 "l"`), h("40"), h("42"))), "attach.handle"},
		{"attach role missing", 0, desc(0x12, l8(h(`a1 01 "l"`), h("43"))), "attach.role"},
		{"attach name not a string", 0, desc(0x12, l8(h("43"), h("43"), h("42"))), "attach.name"},
		{"transfer handle missing", 0, desc(0x14, h("45")), "transfer.handle"},
		{"open container-id missing", 0, desc(0x10, h("45")), "open.container-id"},
		{"begin windows missing", 0, desc(0x11, l8(h("40"), h("43"))), "begin.incoming-window"},
		{"flow outgoing-window missing", 0, desc(0x13, l8(h("40"), h("43"), h("43"))), "flow.outgoing-window"},
		{"disposition first missing", 0, desc(0x15, l8(h("41"))), "disposition.first"},
		{"detach handle out of range", 0, desc(0x16, l8(h("80 00 00 00 01 00 00 00 00"))), "out of range"},
		{"detach handle negative", 0, desc(0x16, l8(h("54 ff"))), "out of range"},
		{"channel-max out of range", 0, desc(0x10, l8(h(`a1 01 "x"`), h("40"), h("40"), h("70 00 01 00 00"))), "open.channel-max"},
		{"role not a boolean", 0, desc(0x15, l8(h("43"), h("43"))), "disposition.role"},
		{"boolean octet 2", 0, desc(0x15, l8(h("56 02"), h("43"))), "disposition.role"},
		{"timestamp not a timestamp", 0, desc(0x14, l8(h("43"), h("40"), h("40"), h("40"), h("40"), h("40"), h("40"), desc(0x23, l8(h("43"), h("83 00"))))), "received.section-offset"},
		{"state not a state", 0, desc(0x15, l8(h("41"), h("43"), h("40"), h("40"), h("52 01"))), "disposition.state"},
		{"source not a source", 0, desc(0x12, l8(h(`a1 01 "l"`), h("43"), h("42"), h("40"), h("40"), desc(0x29, h("45")))), "attach.source"},
		{"filter not a map", 0, desc(0x12, l8(h(`a1 01 "l"`), h("43"), h("42"), h("40"), h("40"), desc(0x28, l8(h("40"), h("40"), h("40"), h("40"), h("40"), h("40"), h("40"), h("45"))))), "source.filter"},
		{"nested error in a filter value", 0, desc(0x12, l8(h(`a1 01 "l"`), h("43"), h("42"), h("40"), h("40"), desc(0x28, l8(h("40"), h("40"), h("40"), h("40"), h("40"), h("40"), h("40"), h("c1 03 02 40 01"))))), "attach.source > source.filter"},
		{"unknown performative", 0, desc(0x19, h("45")), "unknown performative descriptor 0x19"},
		{"SASL body in an AMQP frame", 0, desc(0x44, l8(h("50 00"))), "unknown performative"},
		{"AMQP body in a SASL frame", 1, desc(0x10, l8(h(`a1 01 "x"`))), "unknown performative"},
		{"state in a frame", 0, desc(0x24, h("45")), "unknown performative"},
		{"not described", 0, h("45"), "expected a performative"},
		{"bytes after the performative", 0, cat(desc(0x18, h("45")), h("00")), "1 octets follow"},
		{"sasl-mechanisms empty", 1, desc(0x40, h("45")), "sasl-mechanisms.sasl-server-mechanisms"},
		{"sasl-outcome code missing", 1, desc(0x44, h("45")), "sasl-outcome.code"},
		{"sasl-init mechanism missing", 1, desc(0x41, h("45")), "sasl-init.mechanism"},
		{"received offset missing", 0, desc(0x15, l8(h("41"), h("43"), h("40"), h("40"), desc(0x23, l8(h("43"))))), "received.section-offset"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := amqp.ParseFrame(frame(c.typ, 0, c.body), math.MaxUint32)
			require.ErrorIs(t, err, amqp.ErrMalformed)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// TestErrorType: Error implements error and reads well.
func TestErrorType(t *testing.T) {
	var err error = &amqp.Error{Condition: "amqp:not-found", Description: "queue q1"}
	require.EqualError(t, err, "amqp: amqp:not-found: queue q1")
	err = &amqp.Error{Condition: "amqp:not-found"}
	require.EqualError(t, err, "amqp: amqp:not-found")
}

// TestRoleString names the roles.
func TestRoleString(t *testing.T) {
	require.Equal(t, "sender", amqp.RoleSender.String())
	require.Equal(t, "receiver", amqp.RoleReceiver.String())
}
