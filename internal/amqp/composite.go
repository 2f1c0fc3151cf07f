package amqp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// fields is the state of reading the fields of a composite type (a
// described list) one by one, in order, without reflection. The decoder
// holds the state of the composite being read (d.f); composite saves the
// enclosing one and done restores it. A field past the list's count, or
// null, is absent: the getter returns the zero value and false, and the
// caller applies the specification's default. The first error sticks; the
// getters after it do nothing. done moves past the end of the list,
// skipping fields the codec does not know (later versions may add some).
type fields struct {
	what string // the composite's name, for errors
	n, i int
	end  int
	// outer is the decoder's limit outside this list.
	outer int
	err   error
}

// composite starts reading the list of a composite type named what (its
// descriptor already consumed) and returns the enclosing composite's state
// for done.
func (d *decoder) composite(what string) (fields, error) {
	saved := d.f
	code, err := d.constructor(what)
	if err != nil {
		return saved, err
	}
	f := fields{what: what}
	switch code {
	case codeList0:
		f.end = d.off
	case codeList8, codeList32:
		if f.n, f.end, err = d.sized(code == codeList8, what); err != nil {
			return saved, err
		}
		if f.n > f.end-d.off {
			return saved, d.errAt(d.off, what, "count %d cannot fit in %d octets", f.n, f.end-d.off)
		}
	default:
		return saved, d.errAt(d.off-1, what, "expected a list, found %s (0x%02x)", typeName(code), code)
	}
	if err := d.enter(what); err != nil {
		return saved, err
	}
	f.outer = d.lim
	d.lim = f.end
	d.f = f
	return saved, nil
}

// done ends the list: it returns the first error, else moves past the end
// of the list; either way it restores the enclosing composite's state.
func (d *decoder) done(saved fields) error {
	f := &d.f
	d.lim = f.outer
	d.depth--
	err := f.err
	if err == nil {
		d.off = f.end
	}
	d.f = saved
	return err
}

// next moves to the next field, named name; it reports whether the field
// is present and not null (its constructor is then the next octet).
func (d *decoder) next(name string) bool {
	f := &d.f
	if f.err != nil {
		return false
	}
	f.i++
	if f.i > f.n {
		return false
	}
	if d.off >= d.lim {
		d.fail(name, "truncated: the list ends before this field")
		return false
	}
	if d.b[d.off] == codeNull {
		d.off++
		return false
	}
	return true
}

// fail records the reason the field name failed.
func (d *decoder) fail(name, reason string) {
	if f := &d.f; f.err == nil {
		f.err = &DecodeError{What: f.what + "." + name, Offset: d.off, Reason: reason}
	}
}

// failErr records an error from decoding the value of the field name,
// prefixing its path with the field's.
func (d *decoder) failErr(name string, err error) {
	f := &d.f
	if f.err != nil {
		return
	}
	var de *DecodeError
	if errors.As(err, &de) {
		de.What = f.what + "." + name + " > " + de.What
		f.err = de
		return
	}
	f.err = err
}

// mandatory records that the field name, which the specification
// requires, was absent.
func (d *decoder) mandatory(name string) {
	d.fail(name, "mandatory field is absent or null")
}

// uint64v reads any integer encoding no larger than max, so that a field
// typed uint accepts a ulong or ubyte of a value in range (lenient), and a
// signed encoding of a non-negative value.
func (d *decoder) uint64v(name string, max uint64) (uint64, bool) {
	if !d.next(name) {
		return 0, false
	}
	start := d.off
	code := d.b[d.off]
	d.off++
	var v uint64
	var neg bool
	switch w := fixedWidth(code); {
	case code == codeUint0 || code == codeUlong0:
	case w > 0 && isInteger(code):
		s, err := d.takeCode(w, code)
		if err != nil {
			d.failErr(name, err)
			return 0, false
		}
		switch code {
		case codeUbyte, codeSmallUint, codeSmallUlong:
			v = uint64(s[0])
		case codeUshort:
			v = uint64(binary.BigEndian.Uint16(s))
		case codeUint:
			v = uint64(binary.BigEndian.Uint32(s))
		case codeUlong:
			v = binary.BigEndian.Uint64(s)
		case codeByte, codeSmallInt, codeSmallLong:
			x := int8(s[0])
			v, neg = uint64(x), x < 0
		case codeShort:
			x := int16(binary.BigEndian.Uint16(s))
			v, neg = uint64(x), x < 0
		case codeInt:
			x := int32(binary.BigEndian.Uint32(s))
			v, neg = uint64(x), x < 0
		case codeLong:
			x := int64(binary.BigEndian.Uint64(s))
			v, neg = uint64(x), x < 0
		}
	default:
		d.off = start
		d.fail(name, "expected an unsigned integer, found "+typeName(code)+" (0x"+hexByte(code)+")")
		return 0, false
	}
	if neg || v > max {
		d.off = start
		d.fail(name, "value out of range")
		return 0, false
	}
	return v, true
}

func isInteger(code byte) bool {
	switch code {
	case codeUbyte, codeByte, codeSmallUint, codeSmallUlong, codeSmallInt, codeSmallLong,
		codeUshort, codeShort, codeUint, codeInt, codeUlong, codeLong:
		return true
	}
	return false
}

func hexByte(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&0xf]})
}

func (d *decoder) uint32v(name string) (uint32, bool) {
	v, ok := d.uint64v(name, math.MaxUint32)
	return uint32(v), ok
}

func (d *decoder) uint16v(name string) (uint16, bool) {
	v, ok := d.uint64v(name, math.MaxUint16)
	return uint16(v), ok
}

func (d *decoder) uint8v(name string) (uint8, bool) {
	v, ok := d.uint64v(name, math.MaxUint8)
	return uint8(v), ok
}

// boolv reads a boolean.
func (d *decoder) boolv(name string) (bool, bool) {
	if !d.next(name) {
		return false, false
	}
	code := d.b[d.off]
	d.off++
	switch code {
	case codeTrue:
		return true, true
	case codeFalse:
		return false, true
	case codeBool:
		s, err := d.take(1, "boolean")
		if err != nil {
			d.failErr(name, err)
			return false, false
		}
		if s[0] > 1 {
			d.off--
			d.fail(name, "boolean octet is neither 0x00 nor 0x01")
			return false, false
		}
		return s[0] == 1, true
	}
	d.off--
	d.fail(name, "expected a boolean, found "+typeName(code)+" (0x"+hexByte(code)+")")
	return false, false
}

// varv reads a string, symbol or binary (any of the three: clients mix
// string and symbol up), returning its octets aliased to the input.
func (d *decoder) varv(name string, want string) ([]byte, bool) {
	if !d.next(name) {
		return nil, false
	}
	code := d.b[d.off]
	ok := false
	switch want {
	case "binary":
		ok = code == codeVbin8 || code == codeVbin32
	default: // string or symbol: either is accepted for the other
		ok = code == codeStr8 || code == codeStr32 || code == codeSym8 || code == codeSym32
	}
	if !ok {
		d.fail(name, "expected a "+want+", found "+typeName(code)+" (0x"+hexByte(code)+")")
		return nil, false
	}
	d.off++
	s, err := d.varPayload(code)
	if err != nil {
		d.failErr(name, err)
		return nil, false
	}
	return s, true
}

func (d *decoder) stringv(name string) (string, bool) {
	s, ok := d.varv(name, "string")
	return string(s), ok
}

func (d *decoder) symbolv(name string) (Symbol, bool) {
	s, ok := d.varv(name, "symbol")
	return Symbol(s), ok
}

func (d *decoder) binaryv(name string) ([]byte, bool) {
	return d.varv(name, "binary")
}

// timestampv reads a timestamp.
func (d *decoder) timestampv(name string) (time.Time, bool) {
	if !d.next(name) {
		return time.Time{}, false
	}
	if d.b[d.off] != codeTimestamp {
		d.fail(name, "expected a timestamp, found "+typeName(d.b[d.off])+" (0x"+hexByte(d.b[d.off])+")")
		return time.Time{}, false
	}
	d.off++
	s, err := d.take(8, "timestamp")
	if err != nil {
		d.failErr(name, err)
		return time.Time{}, false
	}
	return timestamp(s), true
}

// anyv reads a value of any type.
func (d *decoder) anyv(name string) (any, bool) {
	if !d.next(name) {
		return nil, false
	}
	v, err := d.value()
	if err != nil {
		d.failErr(name, err)
		return nil, false
	}
	return v, true
}

// mapv reads a map (fields, annotations, filter-set ...).
func (d *decoder) mapv(name string) Map {
	if !d.next(name) {
		return nil
	}
	code := d.b[d.off]
	if code != codeMap8 && code != codeMap32 {
		d.fail(name, "expected a map, found "+typeName(code)+" (0x"+hexByte(code)+")")
		return nil
	}
	d.off++
	m, err := d.mapPayload(code)
	if err != nil {
		d.failErr(name, err)
		return nil
	}
	return m
}

// symbolsv reads a field of type symbol with multiple="true": a single
// symbol, an array of symbols (or, leniently, strings), or a list of them.
func (d *decoder) symbolsv(name string) []Symbol {
	v, ok := d.anyv(name)
	if !ok {
		return nil
	}
	switch x := v.(type) {
	case Symbol:
		return []Symbol{x}
	case string:
		return []Symbol{Symbol(x)}
	case []Symbol:
		return x
	case []string:
		s := make([]Symbol, len(x))
		for i, e := range x {
			s[i] = Symbol(e)
		}
		return s
	case []any:
		s := make([]Symbol, 0, len(x))
		for _, e := range x {
			switch y := e.(type) {
			case Symbol:
				s = append(s, y)
			case string:
				s = append(s, Symbol(y))
			default:
				d.fail(name, "expected symbols, found a list holding another type")
				return nil
			}
		}
		return s
	}
	d.fail(name, "expected one or more symbols")
	return nil
}

// describe says what a field held instead of what it should have.
func describe(v any, want string) string {
	return "expected " + want + ", found Go " + fmt.Sprintf("%T", v)
}

// listw writes the field list of a composite type. Every field is written
// (null where absent); end then either keeps them all (the full field list
// open, begin and attach must carry) or cuts the trailing absent ones.
type listw struct {
	start, count, keepLen, keepCount int
}

func (l *listw) begin(dst []byte, descriptor byte) []byte {
	dst = append(dst, codeDescribed, codeSmallUlong, descriptor)
	dst, l.start = beginSized(dst)
	l.keepLen = len(dst)
	return dst
}

// kept records a field just written with a value.
func (l *listw) kept(dst []byte) {
	l.count++
	l.keepLen, l.keepCount = len(dst), l.count
}

// null writes an absent field.
func (l *listw) null(dst []byte) []byte {
	l.count++
	return append(dst, codeNull)
}

// opt writes a field that is present when ok.
func (l *listw) optUint(dst []byte, v uint32, ok bool) []byte {
	if !ok {
		return l.null(dst)
	}
	dst = appendUint(dst, v)
	l.kept(dst)
	return dst
}

func (l *listw) optBool(dst []byte, v bool) []byte {
	if !v {
		return l.null(dst)
	}
	dst = append(dst, codeTrue)
	l.kept(dst)
	return dst
}

func (l *listw) optString(dst []byte, s string) []byte {
	if s == "" {
		return l.null(dst)
	}
	dst = appendString(dst, s)
	l.kept(dst)
	return dst
}

func (l *listw) optSymbol(dst []byte, s Symbol) []byte {
	if s == "" {
		return l.null(dst)
	}
	dst = appendSymbol(dst, s)
	l.kept(dst)
	return dst
}

func (l *listw) optBinary(dst []byte, b []byte) []byte {
	if b == nil {
		return l.null(dst)
	}
	dst = appendBinary(dst, b)
	l.kept(dst)
	return dst
}

// optValue writes v, or null when absent; a nil interface, nil map, nil
// slice or nil pointer is absent.
func (l *listw) optValue(dst []byte, v any, depth int) ([]byte, error) {
	if isAbsent(v) {
		return l.null(dst), nil
	}
	dst, err := appendValue(dst, v, depth)
	if err != nil {
		return dst, err
	}
	l.kept(dst)
	return dst, nil
}

// isAbsent reports whether v is a nil interface or a nil map, symbol
// slice or list (a nil pointer in an interface is encoded, as null).
func isAbsent(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case Map:
		return x == nil
	case []Symbol:
		return x == nil
	case []any:
		return x == nil
	}
	return false
}

// end finishes the list: all fields when full, else up to the last present
// one. A list with no fields is list0.
func (l *listw) end(dst []byte, full bool) ([]byte, error) {
	count := l.count
	if !full {
		dst, count = dst[:l.keepLen], l.keepCount
	}
	if count == 0 {
		return append(dst[:l.start], codeList0), nil
	}
	return finishSized(dst, l.start, count, codeList8, codeList32)
}

// optMap writes a map field; nil is absent.
func (l *listw) optMap(dst []byte, m Map, depth int) ([]byte, error) {
	if m == nil {
		return l.null(dst), nil
	}
	if depth >= maxDepth {
		return dst, fmt.Errorf("%w: value nested deeper than %d levels", ErrEncode, maxDepth)
	}
	dst, err := appendMap(dst, m, depth+1)
	if err != nil {
		return dst, err
	}
	l.kept(dst)
	return dst, nil
}

// optSymbols writes a symbol field with multiple="true" as an array (even
// of one); nil is absent.
func (l *listw) optSymbols(dst []byte, s []Symbol) ([]byte, error) {
	if s == nil {
		return l.null(dst), nil
	}
	dst, start := beginSized(dst)
	dst, n, err := appendStringsContent(dst, codeSym8, codeSym32, s)
	if err != nil {
		return dst[:start], err
	}
	if dst, err = finishSized(dst, start, n, codeArray8, codeArray32); err != nil {
		return dst, err
	}
	l.kept(dst)
	return dst, nil
}

// fieldsOf writes a run of symbol-array fields and a trailing map field,
// the tail most performatives share.
func (l *listw) symbolsThenMap(dst []byte, syms [][]Symbol, m Map, depth int) ([]byte, error) {
	var err error
	for _, s := range syms {
		if dst, err = l.optSymbols(dst, s); err != nil {
			return dst, err
		}
	}
	return l.optMap(dst, m, depth)
}
