package amqp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrMalformed is wrapped by every [DecodeError]: the input is not a valid
// AMQP encoding of what was expected.
var ErrMalformed = errors.New("amqp: malformed encoding")

// DecodeError says what was being decoded, where, and what was wrong. It
// wraps [ErrMalformed].
type DecodeError struct {
	// What is the path of what was being decoded, outermost first, such as
	// "attach.source > source.filter > map" or "transfer.handle".
	What string
	// Offset is the octet offset in the decoded input (a frame's body for
	// ReadFrame) where the problem was found.
	Offset int
	// Reason says what was wrong.
	Reason string
}

// Error formats the error as "amqp: decoding <what> at offset <n>: <reason>".
func (e *DecodeError) Error() string {
	return fmt.Sprintf("amqp: decoding %s at offset %d: %s", e.What, e.Offset, e.Reason)
}

// Unwrap returns [ErrMalformed].
func (e *DecodeError) Unwrap() error { return ErrMalformed }

// zeroWidthBudget is how many zero-width array elements (null, true,
// false, uint0, ulong0 and list0 constructors) one decode may produce:
// they cost no input, so they are counted against a fixed budget instead
// of believed (an array8 of 255 nulls is three octets).
const zeroWidthBudget = 4096

// DecodeValue decodes one AMQP value from the start of b and returns it
// with the number of octets it took. The Go types produced are those of the
// mapping in the package documentation; a described value whose descriptor
// the codec knows decodes to its type (*Open, *Accepted, *Error, *Source,
// *Header ...), any other to a [Described]. Decoded []byte values alias b.
// A malformed input returns a [*DecodeError].
func DecodeValue(b []byte) (v any, n int, err error) {
	d := newDecoder(b)
	v, err = d.value()
	if err != nil {
		return nil, 0, err
	}
	return v, d.off, nil
}

// decoder reads AMQP values from b[off:lim]. Compound values lower lim to
// their own end while their contents are read, so nothing inside a list
// can run past the list's declared size. (Narrowing by an index rather
// than by reslicing b keeps pointer stores, and so the decoder's escape to
// the heap, off the hot path.)
type decoder struct {
	b     []byte
	off   int
	lim   int
	depth int
	zw    int    // zero-width array elements still allowed
	f     fields // the composite being read, if any
}

func newDecoder(b []byte) decoder { return decoder{b: b, lim: len(b), zw: zeroWidthBudget} }

func (d *decoder) errAt(off int, what, format string, args ...any) error {
	return &DecodeError{What: what, Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// take consumes n octets and returns them (aliasing the input).
func (d *decoder) take(n int, what string) ([]byte, error) {
	if n < 0 || d.lim-d.off < n {
		return nil, d.errAt(d.off, what, "truncated: need %d octets, have %d", n, d.lim-d.off)
	}
	s := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return s, nil
}

// takeCode is take for the payload of a value of format code code, naming
// its type only on error.
func (d *decoder) takeCode(n int, code byte) ([]byte, error) {
	if d.lim-d.off < n {
		return d.take(n, typeName(code))
	}
	s := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return s, nil
}

// constructor consumes one format code.
func (d *decoder) constructor(what string) (byte, error) {
	if d.off >= d.lim {
		return 0, d.errAt(d.off, what, "truncated: no constructor")
	}
	c := d.b[d.off]
	d.off++
	return c, nil
}

// value decodes one value, constructor included.
func (d *decoder) value() (any, error) {
	code, err := d.constructor("value")
	if err != nil {
		return nil, err
	}
	if code == codeDescribed {
		return d.described()
	}
	return d.payload(code)
}

// described decodes the descriptor and value of a described type (its 0x00
// already consumed).
func (d *decoder) described() (any, error) {
	if d.depth >= maxDepth {
		return nil, d.errAt(d.off-1, "described", "nested deeper than %d levels", maxDepth)
	}
	d.depth++
	v, err := d.describedInner()
	d.depth--
	return v, err
}

func (d *decoder) describedInner() (any, error) {
	desc, err := d.value()
	if err != nil {
		return nil, err
	}
	if code, ok := descriptorCode(desc); ok {
		if v, handled, err := d.known(code); handled {
			if err != nil {
				return nil, err
			}
			return v, nil
		}
	}
	val, err := d.value()
	if err != nil {
		return nil, err
	}
	return Described{Descriptor: desc, Value: val}, nil
}

// descriptorCode returns the numeric code of a descriptor that is a ulong
// or a symbol the codec knows.
func descriptorCode(desc any) (uint64, bool) {
	switch x := desc.(type) {
	case uint64:
		return x, true
	case Symbol:
		c, ok := symbolicDescriptors[x]
		return c, ok
	}
	return 0, false
}

// payload decodes the value that follows the format code code.
func (d *decoder) payload(code byte) (any, error) {
	switch code {
	case codeNull:
		return nil, nil
	case codeTrue:
		return true, nil
	case codeFalse:
		return false, nil
	case codeUint0:
		return uint32(0), nil
	case codeUlong0:
		return uint64(0), nil
	case codeList0:
		return []any{}, nil
	}
	if w := fixedWidth(code); w > 0 {
		s, err := d.takeCode(w, code)
		if err != nil {
			return nil, err
		}
		v, ok := fixedValue(code, s)
		if !ok {
			return nil, d.errAt(d.off-w, typeName(code), "octet 0x%02x is neither 0x00 nor 0x01", s[0])
		}
		return v, nil
	}
	switch code {
	case codeVbin8, codeVbin32:
		return d.varPayload(code)
	case codeStr8, codeStr32:
		s, err := d.varPayload(code)
		return string(s), err
	case codeSym8, codeSym32:
		s, err := d.varPayload(code)
		if v, ok := wellKnownSymbols[string(s)]; ok {
			return v, err
		}
		return Symbol(s), err
	case codeList8, codeList32:
		return d.list(code)
	case codeMap8, codeMap32:
		return d.mapPayload(code)
	case codeArray8, codeArray32:
		return d.array(code)
	}
	return nil, d.errAt(d.off-1, "value", "unknown format code 0x%02x", code)
}

// fixedWidth returns the payload width of a fixed-width format code, 0 for
// the zero-width ones and -1 for variable-width or unknown codes.
func fixedWidth(code byte) int {
	switch code {
	case codeNull, codeTrue, codeFalse, codeUint0, codeUlong0, codeList0:
		return 0
	case codeUbyte, codeByte, codeSmallUint, codeSmallUlong, codeSmallInt, codeSmallLong, codeBool:
		return 1
	case codeUshort, codeShort:
		return 2
	case codeUint, codeInt, codeFloat, codeChar, codeDecimal32:
		return 4
	case codeUlong, codeLong, codeDouble, codeTimestamp, codeDecimal64:
		return 8
	case codeDecimal128, codeUUID:
		return 16
	}
	return -1
}

// typeName names the AMQP type of a format code for error messages.
func typeName(code byte) string {
	switch code {
	case codeNull:
		return "null"
	case codeTrue, codeFalse, codeBool:
		return "boolean"
	case codeUbyte:
		return "ubyte"
	case codeByte:
		return "byte"
	case codeUshort:
		return "ushort"
	case codeShort:
		return "short"
	case codeUint0, codeSmallUint, codeUint:
		return "uint"
	case codeUlong0, codeSmallUlong, codeUlong:
		return "ulong"
	case codeSmallInt, codeInt:
		return "int"
	case codeSmallLong, codeLong:
		return "long"
	case codeFloat:
		return "float"
	case codeDouble:
		return "double"
	case codeChar:
		return "char"
	case codeDecimal32:
		return "decimal32"
	case codeDecimal64:
		return "decimal64"
	case codeDecimal128:
		return "decimal128"
	case codeTimestamp:
		return "timestamp"
	case codeUUID:
		return "uuid"
	case codeVbin8, codeVbin32:
		return "binary"
	case codeStr8, codeStr32:
		return "string"
	case codeSym8, codeSym32:
		return "symbol"
	case codeList0, codeList8, codeList32:
		return "list"
	case codeMap8, codeMap32:
		return "map"
	case codeArray8, codeArray32:
		return "array"
	case codeDescribed:
		return "described"
	}
	return fmt.Sprintf("code 0x%02x", code)
}

// fixedValue converts the payload s of a fixed-width code to its Go value;
// false for a boolean octet other than 0 or 1.
func fixedValue(code byte, s []byte) (any, bool) {
	switch code {
	case codeUbyte:
		return s[0], true
	case codeByte:
		return int8(s[0]), true
	case codeSmallUint:
		return uint32(s[0]), true
	case codeSmallUlong:
		return uint64(s[0]), true
	case codeSmallInt:
		return int32(int8(s[0])), true
	case codeSmallLong:
		return int64(int8(s[0])), true
	case codeBool:
		switch s[0] {
		case 0:
			return false, true
		case 1:
			return true, true
		}
		return nil, false
	case codeUshort:
		return binary.BigEndian.Uint16(s), true
	case codeShort:
		return int16(binary.BigEndian.Uint16(s)), true
	case codeUint:
		return binary.BigEndian.Uint32(s), true
	case codeInt:
		return int32(binary.BigEndian.Uint32(s)), true
	case codeFloat:
		return math.Float32frombits(binary.BigEndian.Uint32(s)), true
	case codeChar:
		return Char(binary.BigEndian.Uint32(s)), true
	case codeDecimal32:
		return Decimal32(s), true
	case codeUlong:
		return binary.BigEndian.Uint64(s), true
	case codeLong:
		return int64(binary.BigEndian.Uint64(s)), true
	case codeDouble:
		return math.Float64frombits(binary.BigEndian.Uint64(s)), true
	case codeTimestamp:
		return timestamp(s), true
	case codeDecimal64:
		return Decimal64(s), true
	case codeDecimal128:
		return Decimal128(s), true
	case codeUUID:
		return UUID(s), true
	}
	return nil, false
}

// timestamp converts 8 wire octets (ms since the Unix epoch) to a UTC time.
func timestamp(s []byte) time.Time {
	return time.UnixMilli(int64(binary.BigEndian.Uint64(s))).UTC()
}

// varPayload reads the length and octets of a vbin, str or sym payload.
func (d *decoder) varPayload(code byte) ([]byte, error) {
	what := typeName(code)
	var n int
	if code&0xf0 == 0xa0 {
		s, err := d.take(1, what)
		if err != nil {
			return nil, err
		}
		n = int(s[0])
	} else {
		s, err := d.take(4, what)
		if err != nil {
			return nil, err
		}
		n64 := uint64(binary.BigEndian.Uint32(s))
		if n64 > uint64(d.lim-d.off) {
			return nil, d.errAt(d.off, what, "truncated: length %d, have %d octets", n64, d.lim-d.off)
		}
		n = int(n64)
	}
	return d.take(n, what)
}

// sized reads the size and count of a list, map or array payload (narrow:
// one octet each, else four) and returns the count and the offset where
// the compound ends.
func (d *decoder) sized(narrow bool, what string) (count, end int, err error) {
	start := d.off
	var size uint64
	if narrow {
		s, err := d.take(2, what)
		if err != nil {
			return 0, 0, err
		}
		size, count = uint64(s[0]), int(s[1])
		if size < 1 {
			return 0, 0, d.errAt(start, what, "size %d cannot hold its count", size)
		}
		size--
	} else {
		s, err := d.take(8, what)
		if err != nil {
			return 0, 0, err
		}
		size = uint64(binary.BigEndian.Uint32(s))
		c := uint64(binary.BigEndian.Uint32(s[4:]))
		if size < 4 {
			return 0, 0, d.errAt(start, what, "size %d cannot hold its count", size)
		}
		size -= 4
		if c > size+uint64(d.zw) {
			return 0, 0, d.errAt(start, what, "count %d cannot fit in %d octets", c, size)
		}
		count = int(c)
	}
	if size > uint64(d.lim-d.off) {
		return 0, 0, d.errAt(start, what, "truncated: size %d, have %d octets", size, d.lim-d.off)
	}
	return count, d.off + int(size), nil
}

// enter increments the nesting depth, failing past maxDepth.
func (d *decoder) enter(what string) error {
	if d.depth >= maxDepth {
		return d.errAt(d.off, what, "nested deeper than %d levels", maxDepth)
	}
	d.depth++
	return nil
}

// list decodes a list8 or list32 payload.
func (d *decoder) list(code byte) ([]any, error) {
	n, end, err := d.sized(code == codeList8, "list")
	if err != nil {
		return nil, err
	}
	if n > end-d.off {
		return nil, d.errAt(d.off, "list", "count %d cannot fit in %d octets", n, end-d.off)
	}
	if err := d.enter("list"); err != nil {
		return nil, err
	}
	outer := d.lim
	d.lim = end
	l := make([]any, n)
	for i := range l {
		if l[i], err = d.value(); err != nil {
			break
		}
	}
	d.lim = outer
	d.depth--
	if err != nil {
		return nil, err
	}
	if d.off != end {
		return nil, d.errAt(d.off, "list", "%d octets left after its %d elements", end-d.off, n)
	}
	return l, nil
}

// mapPayload decodes a map8 or map32 payload.
func (d *decoder) mapPayload(code byte) (Map, error) {
	n, end, err := d.sized(code == codeMap8, "map")
	if err != nil {
		return nil, err
	}
	if n%2 != 0 {
		return nil, d.errAt(d.off, "map", "odd element count %d", n)
	}
	if n > end-d.off {
		return nil, d.errAt(d.off, "map", "count %d cannot fit in %d octets", n, end-d.off)
	}
	if err := d.enter("map"); err != nil {
		return nil, err
	}
	outer := d.lim
	d.lim = end
	m := make(Map, n/2)
	for i := range m {
		if m[i].Key, err = d.value(); err != nil {
			break
		}
		if m[i].Value, err = d.value(); err != nil {
			break
		}
	}
	d.lim = outer
	d.depth--
	if err != nil {
		return nil, err
	}
	if d.off != end {
		return nil, d.errAt(d.off, "map", "%d octets left after its %d elements", end-d.off, n)
	}
	return m, nil
}

// array decodes an array8 or array32 payload.
func (d *decoder) array(code byte) (any, error) {
	n, end, err := d.sized(code == codeArray8, "array")
	if err != nil {
		return nil, err
	}
	if err := d.enter("array"); err != nil {
		return nil, err
	}
	outer := d.lim
	d.lim = end
	v, err := d.arrayElems(n)
	d.lim = outer
	d.depth--
	if err != nil {
		return nil, err
	}
	if d.off != end {
		return nil, d.errAt(d.off, "array", "%d octets left after its %d elements", end-d.off, n)
	}
	return v, nil
}

// arrayElems decodes an array's constructor and its n elements.
func (d *decoder) arrayElems(n int) (any, error) {
	ctor, err := d.constructor("array")
	if err != nil {
		return nil, err
	}
	var desc any
	if ctor == codeDescribed {
		if desc, err = d.value(); err != nil {
			return nil, err
		}
		if ctor, err = d.constructor("array"); err != nil {
			return nil, err
		}
		if ctor == codeDescribed {
			return nil, d.errAt(d.off-1, "array", "nested described element constructor")
		}
	}
	left := d.lim - d.off
	switch w := fixedWidth(ctor); {
	case w == 0:
		if n > d.zw {
			return nil, d.errAt(d.off, "array", "%d zero-width elements is more than the input can describe", n)
		}
		d.zw -= n
	case w > 0:
		if uint64(n)*uint64(w) > uint64(left) {
			return nil, d.errAt(d.off, "array", "%d elements of %d octets cannot fit in %d", n, w, left)
		}
	default:
		if _, _, ok := narrowOf(ctor); !ok {
			return nil, d.errAt(d.off-1, "array", "unknown element constructor 0x%02x", ctor)
		}
		if n > left {
			return nil, d.errAt(d.off, "array", "count %d cannot fit in %d octets", n, left)
		}
	}
	if desc == nil {
		switch ctor {
		case codeSym8, codeSym32:
			return typedElems[Symbol](d, ctor, n)
		case codeStr8, codeStr32:
			return typedElems[string](d, ctor, n)
		case codeSmallInt, codeInt:
			return typedElems[int32](d, ctor, n)
		case codeSmallLong, codeLong:
			return typedElems[int64](d, ctor, n)
		case codeUint0, codeSmallUint, codeUint:
			return typedElems[uint32](d, ctor, n)
		case codeUlong0, codeSmallUlong, codeUlong:
			return typedElems[uint64](d, ctor, n)
		case codeUUID:
			return typedElems[UUID](d, ctor, n)
		case codeTimestamp:
			return typedElems[time.Time](d, ctor, n)
		case codeTrue, codeFalse, codeBool:
			return typedElems[bool](d, ctor, n)
		case codeDouble:
			return typedElems[float64](d, ctor, n)
		case codeMap8, codeMap32:
			return typedElems[Map](d, ctor, n)
		}
	}
	elems := make([]any, n)
	for i := range elems {
		if elems[i], err = d.payload(ctor); err != nil {
			return nil, err
		}
	}
	narrow, _, _ := narrowOf(ctor)
	return Array{Descriptor: desc, Code: narrow, Elems: elems}, nil
}

// typedElems decodes n elements under ctor into a []T.
func typedElems[T any](d *decoder, ctor byte, n int) ([]T, error) {
	s := make([]T, n)
	for i := range s {
		v, err := d.payload(ctor)
		if err != nil {
			return nil, err
		}
		s[i] = v.(T)
	}
	return s, nil
}

// descString formats a descriptor for an error message, briefly.
func descString(desc any) string {
	switch x := desc.(type) {
	case uint64:
		return fmt.Sprintf("0x%x", x)
	case Symbol:
		if len(x) > 64 {
			x = x[:64] + "..."
		}
		return fmt.Sprintf("%q", string(x))
	}
	return fmt.Sprintf("of Go type %T", desc)
}

// known decodes the list of a composite type the codec knows, by its
// descriptor code; handled is false for other codes.
func (d *decoder) known(code uint64) (v any, handled bool, err error) {
	switch code {
	case descOpen:
		v, err = d.decodeOpen()
	case descBegin:
		v, err = d.decodeBegin()
	case descAttach:
		v, err = d.decodeAttach()
	case descFlow:
		v, err = d.decodeFlow()
	case descTransfer:
		v, err = d.decodeTransfer()
	case descDisposition:
		v, err = d.decodeDisposition()
	case descDetach:
		v, err = d.decodeDetach()
	case descEnd:
		v, err = d.decodeEnd()
	case descClose:
		v, err = d.decodeClose()
	case descError:
		v, err = d.decodeError()
	case descReceived:
		v, err = d.decodeReceived()
	case descAccepted:
		v, err = d.decodeAccepted()
	case descRejected:
		v, err = d.decodeRejected()
	case descReleased:
		v, err = d.decodeReleased()
	case descModified:
		v, err = d.decodeModified()
	case descSource:
		v, err = d.decodeSource()
	case descTarget:
		v, err = d.decodeTarget()
	case descCoordinator:
		v, err = d.decodeCoordinator()
	case descSASLMechanisms:
		v, err = d.decodeSASLMechanisms()
	case descSASLInit:
		v, err = d.decodeSASLInit()
	case descSASLChallenge:
		v, err = d.decodeSASLChallenge()
	case descSASLResponse:
		v, err = d.decodeSASLResponse()
	case descSASLOutcome:
		v, err = d.decodeSASLOutcome()
	case descHeader:
		v, err = d.decodeHeader()
	case descProperties:
		v, err = d.decodeProperties()
	default:
		return nil, false, nil
	}
	return v, true, err
}

// wellKnownSymbols holds, boxed once, the symbols that recur in every
// message and attach (annotation and property keys, outcome names), so
// that decoding them allocates nothing.
var wellKnownSymbols = func() map[string]any {
	m := map[string]any{}
	for _, s := range []Symbol{
		"x-opt-sequence-number", "x-opt-enqueued-time", "x-opt-locked-until", "x-opt-lock-token",
		"x-opt-scheduled-enqueue-time", "x-opt-partition-key", "x-opt-via-partition-key",
		"x-opt-enqueue-sequence-number", "x-opt-message-state", "x-opt-deadletter-source",
		"com.microsoft:session-filter", "com.microsoft:locked-until-utc", "com.microsoft:timeout",
		"com.microsoft:receiver-name", "com.microsoft:entity-type", "com.microsoft:tracking-id",
		"com.microsoft:client-version", "com.microsoft:dead-letter", "com.microsoft:message-lock-lost",
		"product", "version", "platform", "framework", "user-agent",
		"amqp:accepted:list", "amqp:rejected:list", "amqp:released:list", "amqp:modified:list",
		"ANONYMOUS", "MSSBCBS", "PLAIN", "EXTERNAL",
		"application/json", "text/plain", "application/octet-stream",
	} {
		m[string(s)] = s
	}
	return m
}()
