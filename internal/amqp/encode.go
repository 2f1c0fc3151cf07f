package amqp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrEncode is wrapped by every encoding error: a Go value with no AMQP
// encoding (the error names its Go type), nesting deeper than 64 levels, a
// value longer than 4 GiB, or an [Array] whose elements do not fit its Code.
var ErrEncode = errors.New("amqp: cannot encode")

// errNarrow is returned inside the encoder when a value does not fit the
// one-octet width it was tried in; the caller retries the four-octet width.
var errNarrow = errors.New("amqp: does not fit the narrow encoding")

// encoder is implemented by the composite types the codec knows
// (performatives, delivery states, SASL frames, error, source, target,
// header, properties). depth is the nesting level the value sits at.
type encoder interface {
	appendAMQP(dst []byte, depth int) ([]byte, error)
}

// AppendValue appends the AMQP encoding of v to dst and returns the
// extended slice. v is one of the Go types of the mapping in the package
// documentation, or a composite type of this package (a performative, a
// delivery state, *Error, *Source, *Target, *Header, *Properties). Go int
// encodes as long and uint as ulong. Every value takes its smallest
// encoding. A nil []any is an empty list, a nil Map an empty map, a nil
// typed slice an empty array, a nil []byte an empty binary, and a nil
// pointer of a composite type null.
//
// On error dst is returned unchanged in length (what was appended is cut
// off) with an error wrapping [ErrEncode].
func AppendValue(dst []byte, v any) ([]byte, error) {
	start := len(dst)
	out, err := appendValue(dst, v, 0)
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}

func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, codeNull), nil
	case bool:
		return appendBool(dst, x), nil
	case uint8:
		return append(dst, codeUbyte, x), nil
	case uint16:
		return appendUshort(dst, x), nil
	case uint32:
		return appendUint(dst, x), nil
	case uint64:
		return appendUlong(dst, x), nil
	case uint:
		return appendUlong(dst, uint64(x)), nil
	case int8:
		return append(dst, codeByte, byte(x)), nil
	case int16:
		return binary.BigEndian.AppendUint16(append(dst, codeShort), uint16(x)), nil
	case int32:
		return appendInt(dst, x), nil
	case int64:
		return appendLong(dst, x), nil
	case int:
		return appendLong(dst, int64(x)), nil
	case float32:
		return binary.BigEndian.AppendUint32(append(dst, codeFloat), math.Float32bits(x)), nil
	case float64:
		return binary.BigEndian.AppendUint64(append(dst, codeDouble), math.Float64bits(x)), nil
	case Decimal32:
		return append(append(dst, codeDecimal32), x[:]...), nil
	case Decimal64:
		return append(append(dst, codeDecimal64), x[:]...), nil
	case Decimal128:
		return append(append(dst, codeDecimal128), x[:]...), nil
	case Char:
		return binary.BigEndian.AppendUint32(append(dst, codeChar), uint32(x)), nil
	case time.Time:
		return appendTimestamp(dst, x), nil
	case UUID:
		return append(append(dst, codeUUID), x[:]...), nil
	case []byte:
		if uint64(len(x)) > math.MaxUint32 {
			return dst, fmt.Errorf("%w: binary of %d octets", ErrEncode, len(x))
		}
		return appendBinary(dst, x), nil
	case string:
		if uint64(len(x)) > math.MaxUint32 {
			return dst, fmt.Errorf("%w: string of %d octets", ErrEncode, len(x))
		}
		return appendString(dst, x), nil
	case Symbol:
		if uint64(len(x)) > math.MaxUint32 {
			return dst, fmt.Errorf("%w: symbol of %d octets", ErrEncode, len(x))
		}
		return appendSymbol(dst, x), nil
	}
	if depth >= maxDepth {
		return dst, fmt.Errorf("%w: value nested deeper than %d levels", ErrEncode, maxDepth)
	}
	switch x := v.(type) {
	case []any:
		return appendList(dst, x, depth+1)
	case Map:
		return appendMap(dst, x, depth+1)
	case Described:
		return appendDescribed(dst, x.Descriptor, x.Value, depth+1)
	case *Described:
		if x == nil {
			return append(dst, codeNull), nil
		}
		return appendDescribed(dst, x.Descriptor, x.Value, depth+1)
	case *Array:
		if x == nil {
			return append(dst, codeNull), nil
		}
		return appendArray(dst, *x, depth+1)
	case Array, []Symbol, []string, []int32, []int64, []uint32, []uint64, []UUID, []time.Time, []bool, []float64, []Map:
		return appendArray(dst, x, depth+1)
	case encoder:
		return x.appendAMQP(dst, depth+1)
	}
	return dst, fmt.Errorf("%w: Go type %T", ErrEncode, v)
}

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, codeTrue)
	}
	return append(dst, codeFalse)
}

func appendUshort(dst []byte, v uint16) []byte {
	return binary.BigEndian.AppendUint16(append(dst, codeUshort), v)
}

// appendUint writes v as uint0, smalluint or uint, whichever is smallest.
func appendUint(dst []byte, v uint32) []byte {
	switch {
	case v == 0:
		return append(dst, codeUint0)
	case v <= math.MaxUint8:
		return append(dst, codeSmallUint, byte(v))
	}
	return binary.BigEndian.AppendUint32(append(dst, codeUint), v)
}

// appendUlong writes v as ulong0, smallulong or ulong, whichever is smallest.
func appendUlong(dst []byte, v uint64) []byte {
	switch {
	case v == 0:
		return append(dst, codeUlong0)
	case v <= math.MaxUint8:
		return append(dst, codeSmallUlong, byte(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, codeUlong), v)
}

// appendInt writes v as smallint or int.
func appendInt(dst []byte, v int32) []byte {
	if v >= math.MinInt8 && v <= math.MaxInt8 {
		return append(dst, codeSmallInt, byte(v))
	}
	return binary.BigEndian.AppendUint32(append(dst, codeInt), uint32(v))
}

// appendLong writes v as smalllong or long.
func appendLong(dst []byte, v int64) []byte {
	if v >= math.MinInt8 && v <= math.MaxInt8 {
		return append(dst, codeSmallLong, byte(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, codeLong), uint64(v))
}

// appendTimestamp writes t as milliseconds since the Unix epoch (code
// 0x83); precision finer than a millisecond is dropped.
func appendTimestamp(dst []byte, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(append(dst, codeTimestamp), uint64(t.UnixMilli()))
}

// appendVar writes a variable-width value of one of the code pairs
// (vbin8/vbin32, str8/str32, sym8/sym32). The caller has checked that len(s)
// fits in 32 bits (or the enclosing list's size check will catch it).
func appendVar[S ~string | ~[]byte](dst []byte, narrow, wide byte, s S) []byte {
	if len(s) <= math.MaxUint8 {
		dst = append(dst, narrow, byte(len(s)))
	} else {
		dst = binary.BigEndian.AppendUint32(append(dst, wide), uint32(len(s)))
	}
	return append(dst, s...)
}

func appendBinary(dst []byte, b []byte) []byte { return appendVar(dst, codeVbin8, codeVbin32, b) }
func appendString(dst []byte, s string) []byte { return appendVar(dst, codeStr8, codeStr32, s) }
func appendSymbol(dst []byte, s Symbol) []byte { return appendVar(dst, codeSym8, codeSym32, s) }

// appendDescribed writes the described-type constructor, the descriptor and
// the value.
func appendDescribed(dst []byte, descriptor, value any, depth int) ([]byte, error) {
	dst = append(dst, codeDescribed)
	dst, err := appendValue(dst, descriptor, depth)
	if err != nil {
		return dst, err
	}
	return appendValue(dst, value, depth)
}

// beginSized reserves a four-octet-width header (code, size, count) for a
// list, map or array starting at len(dst); finishSized fills it in and
// narrows it to the one-octet form when the contents allow.
func beginSized(dst []byte) ([]byte, int) {
	return append(dst, 0, 0, 0, 0, 0, 0, 0, 0, 0), len(dst)
}

// finishSized completes the header reserved by beginSized at start for
// count elements. narrow and wide are the two format codes.
func finishSized(dst []byte, start, count int, narrow, wide byte) ([]byte, error) {
	body := len(dst) - start - 9
	if body+1 <= math.MaxUint8 && count <= math.MaxUint8 {
		dst[start] = narrow
		dst[start+1] = byte(body + 1)
		dst[start+2] = byte(count)
		copy(dst[start+3:], dst[start+9:])
		return dst[:len(dst)-6], nil
	}
	if uint64(body)+4 > math.MaxUint32 || uint64(count) > math.MaxUint32 {
		return dst[:start], fmt.Errorf("%w: compound value of %d octets", ErrEncode, body)
	}
	dst[start] = wide
	binary.BigEndian.PutUint32(dst[start+1:], uint32(body+4))
	binary.BigEndian.PutUint32(dst[start+5:], uint32(count))
	return dst, nil
}

// appendList writes l as list0, list8 or list32.
func appendList(dst []byte, l []any, depth int) ([]byte, error) {
	if len(l) == 0 {
		return append(dst, codeList0), nil
	}
	dst, start := beginSized(dst)
	var err error
	for _, e := range l {
		if dst, err = appendValue(dst, e, depth); err != nil {
			return dst[:start], err
		}
	}
	return finishSized(dst, start, len(l), codeList8, codeList32)
}

// appendMap writes m as map8 or map32.
func appendMap(dst []byte, m Map, depth int) ([]byte, error) {
	dst, start := beginSized(dst)
	var err error
	for _, kv := range m {
		if dst, err = appendValue(dst, kv.Key, depth); err != nil {
			return dst[:start], err
		}
		if dst, err = appendValue(dst, kv.Value, depth); err != nil {
			return dst[:start], err
		}
	}
	return finishSized(dst, start, 2*len(m), codeMap8, codeMap32)
}

// appendSizedPayload writes the payload of a list, map or array that is an
// array element, whose width the array's constructor fixed: size and count
// in one octet each (wide false: errNarrow if they do not fit) or four.
// body writes the elements and returns their count.
func appendSizedPayload(dst []byte, wide bool, body func([]byte) ([]byte, int, error)) ([]byte, error) {
	start := len(dst)
	hdr := 2
	if wide {
		hdr = 8
	}
	dst = append(dst, make([]byte, hdr)...)
	dst, n, err := body(dst)
	if err != nil {
		return dst[:start], err
	}
	size := len(dst) - start - hdr
	if !wide {
		if size+1 > math.MaxUint8 || n > math.MaxUint8 {
			return dst[:start], errNarrow
		}
		dst[start] = byte(size + 1)
		dst[start+1] = byte(n)
		return dst, nil
	}
	if uint64(size)+4 > math.MaxUint32 {
		return dst[:start], fmt.Errorf("%w: compound value of %d octets", ErrEncode, size)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(size+4))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(n))
	return dst, nil
}

// appendArray writes an array (a typed slice or an Array) as array8 or
// array32.
func appendArray(dst []byte, v any, depth int) ([]byte, error) {
	dst, start := beginSized(dst)
	dst, n, err := appendArrayContent(dst, v, depth)
	if err != nil {
		return dst[:start], err
	}
	return finishSized(dst, start, n, codeArray8, codeArray32)
}

// appendArrayContent writes an array's element constructor and elements
// and returns the element count.
func appendArrayContent(dst []byte, v any, depth int) ([]byte, int, error) {
	switch x := v.(type) {
	case []bool:
		dst = append(dst, codeBool)
		for _, e := range x {
			if e {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		}
		return dst, len(x), nil
	case []int32:
		small := true
		for _, e := range x {
			if e < math.MinInt8 || e > math.MaxInt8 {
				small = false
				break
			}
		}
		if small {
			dst = append(dst, codeSmallInt)
			for _, e := range x {
				dst = append(dst, byte(e))
			}
		} else {
			dst = append(dst, codeInt)
			for _, e := range x {
				dst = binary.BigEndian.AppendUint32(dst, uint32(e))
			}
		}
		return dst, len(x), nil
	case []int64:
		small := true
		for _, e := range x {
			if e < math.MinInt8 || e > math.MaxInt8 {
				small = false
				break
			}
		}
		if small {
			dst = append(dst, codeSmallLong)
			for _, e := range x {
				dst = append(dst, byte(e))
			}
		} else {
			dst = append(dst, codeLong)
			for _, e := range x {
				dst = binary.BigEndian.AppendUint64(dst, uint64(e))
			}
		}
		return dst, len(x), nil
	case []uint32:
		small := true
		for _, e := range x {
			if e > math.MaxUint8 {
				small = false
				break
			}
		}
		if small {
			dst = append(dst, codeSmallUint)
			for _, e := range x {
				dst = append(dst, byte(e))
			}
		} else {
			dst = append(dst, codeUint)
			for _, e := range x {
				dst = binary.BigEndian.AppendUint32(dst, e)
			}
		}
		return dst, len(x), nil
	case []uint64:
		small := true
		for _, e := range x {
			if e > math.MaxUint8 {
				small = false
				break
			}
		}
		if small {
			dst = append(dst, codeSmallUlong)
			for _, e := range x {
				dst = append(dst, byte(e))
			}
		} else {
			dst = append(dst, codeUlong)
			for _, e := range x {
				dst = binary.BigEndian.AppendUint64(dst, e)
			}
		}
		return dst, len(x), nil
	case []float64:
		dst = append(dst, codeDouble)
		for _, e := range x {
			dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(e))
		}
		return dst, len(x), nil
	case []UUID:
		dst = append(dst, codeUUID)
		for _, e := range x {
			dst = append(dst, e[:]...)
		}
		return dst, len(x), nil
	case []time.Time:
		dst = append(dst, codeTimestamp)
		for _, e := range x {
			dst = binary.BigEndian.AppendUint64(dst, uint64(e.UnixMilli()))
		}
		return dst, len(x), nil
	case []Symbol:
		return appendStringsContent(dst, codeSym8, codeSym32, x)
	case []string:
		return appendStringsContent(dst, codeStr8, codeStr32, x)
	case []Map:
		elems := make([]any, len(x))
		for i, m := range x {
			elems[i] = m
		}
		return appendElems(dst, codeMap8, elems, depth)
	case Array:
		if x.Descriptor != nil {
			var err error
			dst = append(dst, codeDescribed)
			if dst, err = appendValue(dst, x.Descriptor, depth); err != nil {
				return dst, 0, err
			}
		}
		return appendElems(dst, x.Code, x.Elems, depth)
	}
	return dst, 0, fmt.Errorf("%w: Go type %T as an array", ErrEncode, v)
}

// appendStringsContent writes the constructor and elements of an array of
// strings or symbols, one-octet element widths when every element fits.
func appendStringsContent[S ~string](dst []byte, narrow, wide byte, x []S) ([]byte, int, error) {
	long := false
	for _, e := range x {
		if uint64(len(e)) > math.MaxUint32 {
			return dst, 0, fmt.Errorf("%w: array element of %d octets", ErrEncode, len(e))
		}
		if len(e) > math.MaxUint8 {
			long = true
		}
	}
	if long {
		dst = append(dst, wide)
		for _, e := range x {
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(e)))
			dst = append(dst, e...)
		}
	} else {
		dst = append(dst, narrow)
		for _, e := range x {
			dst = append(dst, byte(len(e)))
			dst = append(dst, e...)
		}
	}
	return dst, len(x), nil
}

// narrowOf maps either width's code of a variable-width type to the pair
// (one-octet, four-octet): the Code of an Array names the type, the
// encoder picks the width.
func narrowOf(code byte) (narrow, wide byte, variable bool) {
	switch code {
	case codeVbin8, codeVbin32:
		return codeVbin8, codeVbin32, true
	case codeStr8, codeStr32:
		return codeStr8, codeStr32, true
	case codeSym8, codeSym32:
		return codeSym8, codeSym32, true
	case codeList8, codeList32:
		return codeList8, codeList32, true
	case codeMap8, codeMap32:
		return codeMap8, codeMap32, true
	case codeArray8, codeArray32:
		return codeArray8, codeArray32, true
	}
	return code, code, false
}

// appendElems writes an element constructor for code and the elements; for
// a variable-width type it tries the one-octet width and falls back to the
// four-octet one.
func appendElems(dst []byte, code byte, elems []any, depth int) ([]byte, int, error) {
	narrow, wide, variable := narrowOf(code)
	if !variable && fixedWidth(code) < 0 {
		return dst, 0, fmt.Errorf("%w: array constructor 0x%02x", ErrEncode, code)
	}
	start := len(dst)
	codes := []byte{narrow, wide}
	if !variable {
		codes = codes[:1]
	}
	var err error
	for _, c := range codes {
		dst = append(dst[:start], c)
		for i, e := range elems {
			if dst, err = appendElem(dst, c, e, depth); err != nil {
				if err == errNarrow && c == narrow && variable {
					break
				}
				return dst[:start], 0, fmt.Errorf("array element %d: %w", i, err)
			}
		}
		if err == nil {
			return dst, len(elems), nil
		}
	}
	return dst[:start], 0, err
}

// appendElem writes the payload of v under the constructor code (the
// constructor itself is not written). A variable-width value too long for
// a one-octet code returns errNarrow.
func appendElem(dst []byte, code byte, v any, depth int) ([]byte, error) {
	mismatch := func() ([]byte, error) {
		return dst, fmt.Errorf("%w: Go type %T under array constructor 0x%02x", ErrEncode, v, code)
	}
	switch code {
	case codeNull:
		if v != nil {
			return mismatch()
		}
		return dst, nil
	case codeTrue, codeFalse:
		if b, ok := v.(bool); !ok || b != (code == codeTrue) {
			return mismatch()
		}
		return dst, nil
	case codeBool:
		b, ok := v.(bool)
		if !ok {
			return mismatch()
		}
		if b {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case codeUint0:
		if x, ok := v.(uint32); !ok || x != 0 {
			return mismatch()
		}
		return dst, nil
	case codeUlong0:
		if x, ok := v.(uint64); !ok || x != 0 {
			return mismatch()
		}
		return dst, nil
	case codeList0:
		if x, ok := v.([]any); !ok || len(x) != 0 {
			return mismatch()
		}
		return dst, nil
	case codeUbyte:
		if x, ok := v.(uint8); ok {
			return append(dst, x), nil
		}
	case codeByte:
		if x, ok := v.(int8); ok {
			return append(dst, byte(x)), nil
		}
	case codeSmallUint:
		if x, ok := v.(uint32); ok && x <= math.MaxUint8 {
			return append(dst, byte(x)), nil
		}
	case codeSmallUlong:
		if x, ok := v.(uint64); ok && x <= math.MaxUint8 {
			return append(dst, byte(x)), nil
		}
	case codeSmallInt:
		if x, ok := v.(int32); ok && x >= math.MinInt8 && x <= math.MaxInt8 {
			return append(dst, byte(x)), nil
		}
	case codeSmallLong:
		if x, ok := v.(int64); ok && x >= math.MinInt8 && x <= math.MaxInt8 {
			return append(dst, byte(x)), nil
		}
	case codeUshort:
		if x, ok := v.(uint16); ok {
			return binary.BigEndian.AppendUint16(dst, x), nil
		}
	case codeShort:
		if x, ok := v.(int16); ok {
			return binary.BigEndian.AppendUint16(dst, uint16(x)), nil
		}
	case codeUint:
		if x, ok := v.(uint32); ok {
			return binary.BigEndian.AppendUint32(dst, x), nil
		}
	case codeInt:
		if x, ok := v.(int32); ok {
			return binary.BigEndian.AppendUint32(dst, uint32(x)), nil
		}
	case codeFloat:
		if x, ok := v.(float32); ok {
			return binary.BigEndian.AppendUint32(dst, math.Float32bits(x)), nil
		}
	case codeChar:
		if x, ok := v.(Char); ok {
			return binary.BigEndian.AppendUint32(dst, uint32(x)), nil
		}
	case codeDecimal32:
		if x, ok := v.(Decimal32); ok {
			return append(dst, x[:]...), nil
		}
	case codeUlong:
		if x, ok := v.(uint64); ok {
			return binary.BigEndian.AppendUint64(dst, x), nil
		}
	case codeLong:
		if x, ok := v.(int64); ok {
			return binary.BigEndian.AppendUint64(dst, uint64(x)), nil
		}
	case codeDouble:
		if x, ok := v.(float64); ok {
			return binary.BigEndian.AppendUint64(dst, math.Float64bits(x)), nil
		}
	case codeTimestamp:
		if x, ok := v.(time.Time); ok {
			return binary.BigEndian.AppendUint64(dst, uint64(x.UnixMilli())), nil
		}
	case codeDecimal64:
		if x, ok := v.(Decimal64); ok {
			return append(dst, x[:]...), nil
		}
	case codeDecimal128:
		if x, ok := v.(Decimal128); ok {
			return append(dst, x[:]...), nil
		}
	case codeUUID:
		if x, ok := v.(UUID); ok {
			return append(dst, x[:]...), nil
		}
	case codeVbin8, codeVbin32:
		if x, ok := v.([]byte); ok {
			return appendVarPayload(dst, code == codeVbin32, x)
		}
	case codeStr8, codeStr32:
		if x, ok := v.(string); ok {
			return appendVarPayload(dst, code == codeStr32, x)
		}
	case codeSym8, codeSym32:
		if x, ok := v.(Symbol); ok {
			return appendVarPayload(dst, code == codeSym32, x)
		}
	case codeList8, codeList32:
		if x, ok := v.([]any); ok {
			if depth >= maxDepth {
				return dst, fmt.Errorf("%w: value nested deeper than %d levels", ErrEncode, maxDepth)
			}
			return appendSizedPayload(dst, code == codeList32, func(dst []byte) ([]byte, int, error) {
				var err error
				for _, e := range x {
					if dst, err = appendValue(dst, e, depth+1); err != nil {
						return dst, 0, err
					}
				}
				return dst, len(x), nil
			})
		}
	case codeMap8, codeMap32:
		if x, ok := v.(Map); ok {
			if depth >= maxDepth {
				return dst, fmt.Errorf("%w: value nested deeper than %d levels", ErrEncode, maxDepth)
			}
			return appendSizedPayload(dst, code == codeMap32, func(dst []byte) ([]byte, int, error) {
				var err error
				for _, kv := range x {
					if dst, err = appendValue(dst, kv.Key, depth+1); err != nil {
						return dst, 0, err
					}
					if dst, err = appendValue(dst, kv.Value, depth+1); err != nil {
						return dst, 0, err
					}
				}
				return dst, 2 * len(x), nil
			})
		}
	case codeArray8, codeArray32:
		if isArrayValue(v) {
			if depth >= maxDepth {
				return dst, fmt.Errorf("%w: value nested deeper than %d levels", ErrEncode, maxDepth)
			}
			return appendSizedPayload(dst, code == codeArray32, func(dst []byte) ([]byte, int, error) {
				return appendArrayContent(dst, v, depth+1)
			})
		}
	default:
		return dst, fmt.Errorf("%w: array constructor 0x%02x", ErrEncode, code)
	}
	return mismatch()
}

// isArrayValue reports whether v is a Go value that encodes as an array.
func isArrayValue(v any) bool {
	switch v.(type) {
	case Array, []Symbol, []string, []int32, []int64, []uint32, []uint64, []UUID, []time.Time, []bool, []float64, []Map:
		return true
	}
	return false
}

// appendVarPayload writes the length and octets of a variable-width array
// element: one octet of length (errNarrow if it does not fit) or four.
func appendVarPayload[S ~string | ~[]byte](dst []byte, wide bool, s S) ([]byte, error) {
	if !wide {
		if len(s) > math.MaxUint8 {
			return dst, errNarrow
		}
		return append(append(dst, byte(len(s))), s...), nil
	}
	if uint64(len(s)) > math.MaxUint32 {
		return dst, fmt.Errorf("%w: array element of %d octets", ErrEncode, len(s))
	}
	return append(binary.BigEndian.AppendUint32(dst, uint32(len(s))), s...), nil
}
