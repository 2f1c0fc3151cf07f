package amqp_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus/internal/amqp"
)

// h builds a byte slice from hex pairs separated by spaces, with quoted
// runs for ASCII: h(`a1 03 "abc"`).
func h(s string) []byte {
	var out []byte
	for len(s) > 0 {
		s = strings.TrimLeft(s, " \n\t")
		if s == "" {
			break
		}
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"') + 1
			out = append(out, s[1:end]...)
			s = s[end+1:]
			continue
		}
		var b byte
		for _, c := range []byte(s[:2]) {
			b <<= 4
			switch {
			case c >= '0' && c <= '9':
				b |= c - '0'
			case c >= 'a' && c <= 'f':
				b |= c - 'a' + 10
			default:
				panic("bad hex " + s[:2])
			}
		}
		out = append(out, b)
		s = s[2:]
	}
	return out
}

// rep returns n copies of b.
func rep(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// roundTrip encodes v, checks the bytes against want (when want is not
// nil), decodes them, and checks the value and the length taken.
func roundTrip(t *testing.T, v any, want []byte) {
	t.Helper()
	b, err := amqp.AppendValue([]byte{0xee}, v)
	require.NoError(t, err)
	require.Equal(t, byte(0xee), b[0], "AppendValue must append")
	b = b[1:]
	if want != nil {
		require.Equal(t, want, b, "encoding of %#v", v)
	}
	got, n, err := amqp.DecodeValue(append(b, 0xff)) // a trailing octet is not consumed
	require.NoError(t, err)
	require.Equal(t, len(b), n)
	require.Equal(t, v, got)
}

// TestPrimitiveEncodings checks every primitive at the edges of each of its
// encodings, byte for byte as part 1 section 1.6 defines them, and back.
func TestPrimitiveEncodings(t *testing.T) {
	ms := func(n int64) time.Time { return time.UnixMilli(n).UTC() }
	long := strings.Repeat("x", 256)
	cases := []struct {
		name string
		v    any
		want []byte
	}{
		{"null", nil, h("40")},
		{"true", true, h("41")},
		{"false", false, h("42")},
		{"ubyte 0", uint8(0), h("50 00")},
		{"ubyte max", uint8(255), h("50 ff")},
		{"ushort 0", uint16(0), h("60 00 00")},
		{"ushort max", uint16(65535), h("60 ff ff")},
		{"uint0", uint32(0), h("43")},
		{"smalluint 1", uint32(1), h("52 01")},
		{"smalluint 255", uint32(255), h("52 ff")},
		{"uint 256", uint32(256), h("70 00 00 01 00")},
		{"uint max", uint32(math.MaxUint32), h("70 ff ff ff ff")},
		{"ulong0", uint64(0), h("44")},
		{"smallulong 255", uint64(255), h("53 ff")},
		{"ulong 256", uint64(256), h("80 00 00 00 00 00 00 01 00")},
		{"ulong max", uint64(math.MaxUint64), h("80 ff ff ff ff ff ff ff ff")},
		{"byte min", int8(-128), h("51 80")},
		{"byte max", int8(127), h("51 7f")},
		{"short min", int16(math.MinInt16), h("61 80 00")},
		{"short -1", int16(-1), h("61 ff ff")},
		{"smallint -128", int32(-128), h("54 80")},
		{"smallint 127", int32(127), h("54 7f")},
		{"int 128", int32(128), h("71 00 00 00 80")},
		{"int -129", int32(-129), h("71 ff ff ff 7f")},
		{"int min", int32(math.MinInt32), h("71 80 00 00 00")},
		{"smalllong -1", int64(-1), h("55 ff")},
		{"long 128", int64(128), h("81 00 00 00 00 00 00 00 80")},
		{"long min", int64(math.MinInt64), h("81 80 00 00 00 00 00 00 00")},
		{"long max", int64(math.MaxInt64), h("81 7f ff ff ff ff ff ff ff")},
		{"float 1.5", float32(1.5), h("72 3f c0 00 00")},
		{"float -inf", float32(math.Inf(-1)), h("72 ff 80 00 00")},
		{"double 1", float64(1), h("82 3f f0 00 00 00 00 00 00")},
		{"double -0.5", float64(-0.5), h("82 bf e0 00 00 00 00 00 00")},
		{"decimal32", amqp.Decimal32{1, 2, 3, 4}, h("74 01 02 03 04")},
		{"decimal64", amqp.Decimal64{1, 2, 3, 4, 5, 6, 7, 8}, h("84 01 02 03 04 05 06 07 08")},
		{"decimal128", amqp.Decimal128{15: 9}, cat(h("94"), rep(0, 15), h("09"))},
		{"char euro", amqp.Char('€'), h("73 00 00 20 ac")},
		{"char max", amqp.Char(0x10ffff), h("73 00 10 ff ff")},
		{"timestamp epoch", ms(0), h("83 00 00 00 00 00 00 00 00")},
		{"timestamp -1ms", ms(-1), h("83 ff ff ff ff ff ff ff ff")},
		{"timestamp 2024", ms(1704067200123), h("83 00 00 01 8c c2 51 f4 7b")},
		{"timestamp min", ms(math.MinInt64), h("83 80 00 00 00 00 00 00 00")},
		{"timestamp max", ms(math.MaxInt64), h("83 7f ff ff ff ff ff ff ff")},
		{"uuid", amqp.UUID{0: 0x12, 15: 0xab}, cat(h("98 12"), rep(0, 14), h("ab"))},
		{"vbin8 empty", []byte{}, h("a0 00")},
		{"vbin8 255", rep(7, 255), cat(h("a0 ff"), rep(7, 255))},
		{"vbin32 256", rep(7, 256), cat(h("b0 00 00 01 00"), rep(7, 256))},
		{"str8 empty", "", h("a1 00")},
		{"str8 utf-8", "hé", h(`a1 03 "h" c3 a9`)},
		{"str32 256", long, cat(h("b1 00 00 01 00"), []byte(long))},
		{"sym8", amqp.Symbol("amqp:accepted:list"), h(`a3 12 "amqp:accepted:list"`)},
		{"sym32 256", amqp.Symbol(long), cat(h("b3 00 00 01 00"), []byte(long))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { roundTrip(t, c.v, c.want) })
	}
}

// TestGoIntegerKinds: int is a long, uint a ulong (both decode to the
// sized types).
func TestGoIntegerKinds(t *testing.T) {
	b, err := amqp.AppendValue(nil, 5)
	require.NoError(t, err)
	require.Equal(t, h("55 05"), b)
	b, err = amqp.AppendValue(nil, uint(300))
	require.NoError(t, err)
	require.Equal(t, h("80 00 00 00 00 00 00 01 2c"), b)
}

// TestTimestampPrecision: a timestamp keeps milliseconds and drops the rest,
// and decodes in UTC.
func TestTimestampPrecision(t *testing.T) {
	in := time.Date(2025, 3, 4, 5, 6, 7, 891_234_567, time.FixedZone("X", 3600))
	b, err := amqp.AppendValue(nil, in)
	require.NoError(t, err)
	got, _, err := amqp.DecodeValue(b)
	require.NoError(t, err)
	require.Equal(t, in.Truncate(time.Millisecond).UTC(), got)
	require.Equal(t, time.UTC, got.(time.Time).Location())
}

// TestCompoundEncodings checks lists, maps and arrays in each width.
func TestCompoundEncodings(t *testing.T) {
	bigList := make([]any, 300)
	bigListEnc := h("d0 00 00 01 30 00 00 01 2c") // size 4+300, count 300
	for i := range bigList {
		bigList[i] = nil
		bigListEnc = append(bigListEnc, 0x40)
	}
	// A list of 254 one-octet elements is the largest list8 (size 255).
	l254 := make([]any, 254)
	for i := range l254 {
		l254[i] = true
	}
	l255 := append(append([]any(nil), l254...), true)
	cases := []struct {
		name string
		v    any
		want []byte
	}{
		{"list0", []any{}, h("45")},
		{"list8", []any{uint32(1), "a"}, h("c0 06 02 52 01 a1 01 61")},
		{"list8 largest", l254, cat(h("c0 ff fe"), rep(0x41, 254))},
		{"list32 by size", l255, cat(h("d0 00 00 01 03 00 00 00 ff"), rep(0x41, 255))},
		{"list32 by count", bigList, bigListEnc},
		{"nested list", []any{[]any{}, []any{nil}}, h("c0 06 02 45 c0 02 01 40")},
		{"map8 empty", amqp.Map{}, h("c1 01 00")},
		{"map8", amqp.Map{{Key: amqp.Symbol("k"), Value: int32(-1)}}, h(`c1 06 02 a3 01 "k" 54 ff`)},
		{"map keeps order", amqp.Map{{Key: "b", Value: nil}, {Key: "a", Value: nil}}, h(`c1 09 04 a1 01 "b" 40 a1 01 "a" 40`)},
		{"map32", amqp.Map{{Key: "k", Value: strings.Repeat("v", 300)}}, cat(h(`d1 00 00 01 38 00 00 00 02 a1 01 "k" b1 00 00 01 2c`), []byte(strings.Repeat("v", 300)))},
		{"array of bool", []bool{true, false}, h("e0 04 02 56 01 00")},
		{"array of smallint", []int32{1, -1}, h("e0 04 02 54 01 ff")},
		{"array of int", []int32{1000, 1}, h("e0 0a 02 71 00 00 03 e8 00 00 00 01")},
		{"array of smalllong", []int64{-2}, h("e0 03 01 55 fe")},
		{"array of long", []int64{1 << 40}, h("e0 0a 01 81 00 00 01 00 00 00 00 00")},
		{"array of smalluint", []uint32{0, 255}, h("e0 04 02 52 00 ff")},
		{"array of uint", []uint32{256}, h("e0 06 01 70 00 00 01 00")},
		{"array of smallulong", []uint64{7}, h("e0 03 01 53 07")},
		{"array of ulong", []uint64{1 << 63}, h("e0 0a 01 80 80 00 00 00 00 00 00 00")},
		{"array of double", []float64{1}, h("e0 0a 01 82 3f f0 00 00 00 00 00 00")},
		{"array of uuid", []amqp.UUID{{}}, cat(h("e0 12 01 98"), rep(0, 16))},
		{"array of timestamp", []time.Time{time.UnixMilli(1).UTC()}, h("e0 0a 01 83 00 00 00 00 00 00 00 01")},
		{"array of sym8", []amqp.Symbol{"a", "bc"}, h(`e0 07 02 a3 01 "a" 02 "bc"`)},
		{"array of sym32", []amqp.Symbol{amqp.Symbol(strings.Repeat("s", 256))}, cat(h("f0 00 00 01 09 00 00 00 01 b3 00 00 01 00"), rep('s', 256))},
		{"array of str8", []string{"x"}, h(`e0 04 01 a1 01 "x"`)},
		{"array of map8", []amqp.Map{{}, {{Key: "k", Value: true}}}, h(`e0 0a 02 c1 01 00 05 02 a1 01 "k" 41`)},
		{"empty array of symbols", []amqp.Symbol{}, h("e0 02 00 a3")},
		{"empty array of uints", []uint32{}, h("e0 02 00 52")},
		{"array of ubyte", amqp.Array{Code: 0x50, Elems: []any{uint8(1), uint8(2)}}, h("e0 04 02 50 01 02")},
		{"array of short", amqp.Array{Code: 0x61, Elems: []any{int16(-2)}}, h("e0 04 01 61 ff fe")},
		{"array of char", amqp.Array{Code: 0x73, Elems: []any{amqp.Char('a')}}, h("e0 06 01 73 00 00 00 61")},
		{"array of binary", amqp.Array{Code: 0xa0, Elems: []any{[]byte{1}, []byte{}}}, h("e0 05 02 a0 01 01 00")},
		{"array of list8", amqp.Array{Code: 0xc0, Elems: []any{[]any{}, []any{true}}}, h("e0 07 02 c0 01 00 02 01 41")},
		{"array of nulls", amqp.Array{Code: 0x40, Elems: []any{nil, nil, nil}}, h("e0 02 03 40")},
		{"array of arrays", amqp.Array{Code: 0xe0, Elems: []any{[]bool{true}, []amqp.Symbol{}}}, h("e0 09 02 e0 03 01 56 01 02 00 a3")},
		{"described array", amqp.Array{Descriptor: amqp.Symbol("d"), Code: 0xa1, Elems: []any{"v"}}, h(`e0 08 01 00 a3 01 "d" a1 01 "v"`)},
		{"described", amqp.Described{Descriptor: uint64(0x0000013700000006), Value: "1=1"}, h(`00 80 00 00 01 37 00 00 00 06 a1 03 "1=1"`)},
		{"described symbol", amqp.Described{Descriptor: amqp.Symbol("x:y"), Value: nil}, h(`00 a3 03 "x:y" 40`)},
		{"described in list", []any{amqp.Described{Descriptor: uint64(1000), Value: []any{}}}, h("c0 0c 01 00 80 00 00 00 00 00 00 03 e8 45")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { roundTrip(t, c.v, c.want) })
	}
}

// TestArrayWidthChoice: an Array's Code names the type; the encoder picks
// the width of variable-width elements and decodes report the narrow code.
func TestArrayWidthChoice(t *testing.T) {
	in := amqp.Array{Code: 0xb0, Elems: []any{[]byte{1}}} // asks for vbin32
	b, err := amqp.AppendValue(nil, in)
	require.NoError(t, err)
	require.Equal(t, h("e0 04 01 a0 01 01"), b)
	got, _, err := amqp.DecodeValue(b)
	require.NoError(t, err)
	require.Equal(t, amqp.Array{Code: 0xa0, Elems: []any{[]byte{1}}}, got)

	wide := amqp.Array{Code: 0xa0, Elems: []any{[]byte{1}, rep(2, 300)}}
	b, err = amqp.AppendValue(nil, wide)
	require.NoError(t, err)
	require.Equal(t, cat(h("f0 00 00 01 3a 00 00 00 02 b0 00 00 00 01 01 00 00 01 2c"), rep(2, 300)), b)
	got, _, err = amqp.DecodeValue(b)
	require.NoError(t, err)
	require.Equal(t, wide, got)

	// A wide array of lists decodes to Code 0xc0 and re-encodes the same.
	big := make([]any, 300)
	for i := range big {
		big[i] = true
	}
	lists := amqp.Array{Code: 0xc0, Elems: []any{big}}
	roundTrip(t, lists, nil)
}

// TestZeroWidthArrays: arrays whose constructor has no payload decode to
// the typed slice of their type, and re-encode in a one-octet form.
func TestZeroWidthArrays(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want any
	}{
		{h("e0 02 03 41"), []bool{true, true, true}},
		{h("e0 02 02 42"), []bool{false, false}},
		{h("e0 02 02 43"), []uint32{0, 0}},
		{h("e0 02 01 44"), []uint64{0}},
		{h("e0 02 02 45"), amqp.Array{Code: 0x45, Elems: []any{[]any{}, []any{}}}},
	} {
		got, n, err := amqp.DecodeValue(c.in)
		require.NoError(t, err)
		require.Equal(t, len(c.in), n)
		require.Equal(t, c.want, got)
		roundTrip(t, got, nil)
	}
}

// TestEncodeErrors: Go types outside the mapping are refused, naming the
// type; Array elements must fit their code.
func TestEncodeErrors(t *testing.T) {
	for _, v := range []any{
		map[string]any{"a": 1},
		struct{}{},
		[]int{1},
		uintptr(1),
		complex(1, 2),
		[]any{1, map[string]string{}},
		amqp.Map{{Key: "k", Value: make(chan int)}},
		amqp.Array{Code: 0x52, Elems: []any{uint32(256)}},
		amqp.Array{Code: 0x50, Elems: []any{"x"}},
		amqp.Array{Code: 0x41, Elems: []any{false}},
		amqp.Array{Code: 0x00, Elems: []any{}},
		amqp.Array{Code: 0x99, Elems: []any{}},
		amqp.Described{Descriptor: uint64(1), Value: struct{}{}},
	} {
		b, err := amqp.AppendValue([]byte{1, 2}, v)
		require.ErrorIs(t, err, amqp.ErrEncode, "%#v", v)
		require.Equal(t, []byte{1, 2}, b, "nothing appended on error")
	}
	_, err := amqp.AppendValue(nil, map[string]any{})
	require.ErrorContains(t, err, "map[string]interface {}")
}

// TestEncodeDepthLimit: a value nested past 64 levels is an error, as is a
// list that contains itself.
func TestEncodeDepthLimit(t *testing.T) {
	v := any(nil)
	for range 64 {
		v = []any{v}
	}
	_, err := amqp.AppendValue(nil, v)
	require.NoError(t, err)
	_, err = amqp.AppendValue(nil, []any{v})
	require.ErrorIs(t, err, amqp.ErrEncode)

	self := []any{nil}
	self[0] = self
	_, err = amqp.AppendValue(nil, self)
	require.ErrorIs(t, err, amqp.ErrEncode)
}

// TestNilSlices: nil compound values encode as empty ones.
func TestNilSlices(t *testing.T) {
	for _, c := range []struct {
		v    any
		want []byte
	}{
		{[]any(nil), h("45")},
		{amqp.Map(nil), h("c1 01 00")},
		{[]byte(nil), h("a0 00")},
		{[]amqp.Symbol(nil), h("e0 02 00 a3")},
		{(*amqp.Error)(nil), h("40")},
		{(*amqp.Described)(nil), h("40")},
		{&amqp.Described{Descriptor: uint64(9), Value: true}, h("00 53 09 41")},
	} {
		b, err := amqp.AppendValue(nil, c.v)
		require.NoError(t, err)
		require.Equal(t, c.want, b, "%#v", c.v)
	}
}

// TestMapLookups: Get matches exactly, []byte keys by content; GetSymbol
// and GetString match a symbol or a string key.
func TestMapLookups(t *testing.T) {
	m := amqp.Map{
		{Key: amqp.Symbol("sym"), Value: 1},
		{Key: "str", Value: 2},
		{Key: uint64(7), Value: 3},
		{Key: []byte{1, 2}, Value: 4},
		{Key: []any{"list"}, Value: 5},
		{Key: int64(7), Value: 6},
	}
	for _, c := range []struct {
		key  any
		want any
		ok   bool
	}{
		{amqp.Symbol("sym"), 1, true},
		{"sym", nil, false},
		{"str", 2, true},
		{amqp.Symbol("str"), nil, false},
		{uint64(7), 3, true},
		{uint32(7), nil, false},
		{int64(7), 6, true},
		{[]byte{1, 2}, 4, true},
		{[]byte{1}, nil, false},
		{[]any{"list"}, 5, true},
		{nil, nil, false},
	} {
		got, ok := m.Get(c.key)
		require.Equal(t, c.ok, ok, "%#v", c.key)
		require.Equal(t, c.want, got, "%#v", c.key)
	}
	v, ok := m.GetSymbol("str")
	require.True(t, ok)
	require.Equal(t, 2, v)
	v, ok = m.GetString("sym")
	require.True(t, ok)
	require.Equal(t, 1, v)
	_, ok = m.GetSymbol("missing")
	require.False(t, ok)
	_, ok = amqp.Map(nil).GetSymbol("x")
	require.False(t, ok)
}

// TestUUIDString formats the canonical form.
func TestUUIDString(t *testing.T) {
	u := amqp.UUID{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	require.Equal(t, "12345678-9abc-def0-0123-456789abcdef", u.String())
}

// TestDecodeErrors: malformed inputs are DecodeErrors wrapping ErrMalformed
// that name what was being decoded; none panics or over-allocates.
func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		what string
	}{
		{"empty", nil, "no constructor"},
		{"unknown code", h("01"), "unknown format code 0x01"},
		{"reserved code", h("5f"), "unknown format code"},
		{"truncated uint", h("70 00 00"), "truncated"},
		{"truncated str8", h("a1 05 61"), "truncated"},
		{"str32 length past end", h("b1 ff ff ff ff 61"), "truncated"},
		{"bad boolean octet", h("56 02"), "neither"},
		{"list8 size 0", h("c0 00 00"), "cannot hold its count"},
		{"list8 count too large", h("c0 02 05 40"), "cannot fit"},
		{"list32 huge count", h("d0 00 00 00 06 7f ff ff ff 40 40"), "cannot fit"},
		{"list32 huge size", h("d0 7f ff ff ff 00 00 00 01 40"), "truncated"},
		{"list elements short of size", h("c0 03 01 40 40"), "octets left"},
		{"list element past size", h("c0 02 01 a1 05 61 61 61 61 61"), "truncated"},
		{"map odd count", h("c1 02 01 40"), "odd element count"},
		{"array huge fixed count", h("f0 00 00 00 06 7f ff ff ff 70 00"), "cannot fit"},
		{"array huge zero-width count", h("f0 00 00 00 05 7f ff ff ff 40"), "cannot fit"},
		{"zero-width budget", cat(h("d0 00 00 00 54 00 00 00 14"), bytes.Repeat(h("e0 02 ff 40"), 20)), "zero-width"},
		{"array unknown ctor", h("e0 02 01 01"), "unknown element constructor"},
		{"array nested described ctor", h("e0 05 01 00 53 01 00"), "nested described"},
		{"array bad boolean", h("e0 03 01 56 07"), "neither"},
		{"described truncated", h("00 53"), "truncated"},
		{"described no value", h("00 53 09"), "no constructor"},
		{"described known composite not a list", h("00 53 24 41"), "expected a list"},
		{"error missing condition", h("00 53 1d 45"), "error.condition"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := amqp.DecodeValue(c.in)
			require.Error(t, err)
			require.ErrorIs(t, err, amqp.ErrMalformed)
			var de *amqp.DecodeError
			require.True(t, errors.As(err, &de))
			require.Contains(t, err.Error(), c.what)
		})
	}
}

// TestDecodeDepthLimit: 64 nested lists decode; 65 are an error, not a
// stack overflow; so are deeply nested described values.
func TestDecodeDepthLimit(t *testing.T) {
	nest := func(n int, open []byte) []byte {
		b := bytes.Repeat(open, n)
		return append(b, 0x40)
	}
	// list8 needs sizes; use arrays of lists? Build lists from the inside.
	build := func(n int) []byte {
		b := h("45")
		for range n {
			b = append(h("d0"), append(be32(len(b)+4), append(be32(1), b...)...)...)
		}
		return b
	}
	_, _, err := amqp.DecodeValue(build(64))
	require.NoError(t, err)
	_, _, err = amqp.DecodeValue(build(65))
	require.ErrorContains(t, err, "nested deeper than 64")

	_, _, err = amqp.DecodeValue(nest(100000, h("00")))
	require.ErrorIs(t, err, amqp.ErrMalformed)
	_, _, err = amqp.DecodeValue(nest(100, h("00 53 09")))
	require.ErrorContains(t, err, "nested deeper than 64")
}

func be32(n int) []byte {
	return []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
}

// TestDecodeAliases: decoded binaries alias the input, with their capacity
// cut so an append cannot overwrite what follows.
func TestDecodeAliases(t *testing.T) {
	in := h("c0 07 02 a0 01 07 a0 01 08")
	v, _, err := amqp.DecodeValue(in)
	require.NoError(t, err)
	first := v.([]any)[0].([]byte)
	require.Equal(t, 1, cap(first))
	in[5] = 9
	require.Equal(t, []byte{9}, first)
	_ = append(first, 0xff)
	require.Equal(t, byte(0xa0), in[6])
}

// TestArrayEveryCode: an Array may name any element constructor; it
// decodes to the typed slice of that type where the mapping has one, else
// to an Array of the (narrow) code.
func TestArrayEveryCode(t *testing.T) {
	ts := time.UnixMilli(5).UTC()
	for _, c := range []struct {
		code byte
		elem any
		want any
	}{
		{0x40, nil, amqp.Array{Code: 0x40, Elems: []any{nil}}},
		{0x41, true, []bool{true}},
		{0x42, false, []bool{false}},
		{0x43, uint32(0), []uint32{0}},
		{0x44, uint64(0), []uint64{0}},
		{0x45, []any{}, amqp.Array{Code: 0x45, Elems: []any{[]any{}}}},
		{0x50, uint8(7), amqp.Array{Code: 0x50, Elems: []any{uint8(7)}}},
		{0x51, int8(-7), amqp.Array{Code: 0x51, Elems: []any{int8(-7)}}},
		{0x52, uint32(7), []uint32{7}},
		{0x53, uint64(7), []uint64{7}},
		{0x54, int32(-7), []int32{-7}},
		{0x55, int64(-7), []int64{-7}},
		{0x56, true, []bool{true}},
		{0x60, uint16(700), amqp.Array{Code: 0x60, Elems: []any{uint16(700)}}},
		{0x61, int16(-700), amqp.Array{Code: 0x61, Elems: []any{int16(-700)}}},
		{0x70, uint32(70000), []uint32{70000}},
		{0x71, int32(-70000), []int32{-70000}},
		{0x72, float32(0.5), amqp.Array{Code: 0x72, Elems: []any{float32(0.5)}}},
		{0x73, amqp.Char('z'), amqp.Array{Code: 0x73, Elems: []any{amqp.Char('z')}}},
		{0x74, amqp.Decimal32{1}, amqp.Array{Code: 0x74, Elems: []any{amqp.Decimal32{1}}}},
		{0x80, uint64(1 << 40), []uint64{1 << 40}},
		{0x81, int64(-1 << 40), []int64{-1 << 40}},
		{0x82, 0.25, []float64{0.25}},
		{0x83, ts, []time.Time{ts}},
		{0x84, amqp.Decimal64{2}, amqp.Array{Code: 0x84, Elems: []any{amqp.Decimal64{2}}}},
		{0x94, amqp.Decimal128{3}, amqp.Array{Code: 0x94, Elems: []any{amqp.Decimal128{3}}}},
		{0x98, amqp.UUID{4}, []amqp.UUID{{4}}},
		{0xa0, []byte{5}, amqp.Array{Code: 0xa0, Elems: []any{[]byte{5}}}},
		{0xb1, "s", []string{"s"}},
		{0xa3, amqp.Symbol("y"), []amqp.Symbol{"y"}},
		{0xd0, []any{true}, amqp.Array{Code: 0xc0, Elems: []any{[]any{true}}}},
		{0xc1, amqp.Map{{Key: "k", Value: nil}}, []amqp.Map{{{Key: "k", Value: nil}}}},
		{0xf0, []int64{1}, amqp.Array{Code: 0xe0, Elems: []any{[]int64{1}}}},
	} {
		b, err := amqp.AppendValue(nil, amqp.Array{Code: c.code, Elems: []any{c.elem}})
		require.NoError(t, err, "0x%02x", c.code)
		got, n, err := amqp.DecodeValue(b)
		require.NoError(t, err, "0x%02x", c.code)
		require.Equal(t, len(b), n)
		require.Equal(t, c.want, got, "0x%02x", c.code)
		roundTrip(t, got, nil)
	}
	// Each fixed code refuses a Go type that is not its own.
	for _, code := range []byte{0x40, 0x43, 0x44, 0x45, 0x50, 0x51, 0x53, 0x54, 0x55, 0x56, 0x60, 0x61, 0x70, 0x71, 0x72, 0x73, 0x74,
		0x80, 0x81, 0x82, 0x83, 0x84, 0x94, 0x98, 0xa0, 0xa1, 0xa3, 0xc0, 0xc1, 0xe0} {
		_, err := amqp.AppendValue(nil, amqp.Array{Code: code, Elems: []any{struct{}{}}})
		require.ErrorIs(t, err, amqp.ErrEncode, "0x%02x", code)
	}
}
