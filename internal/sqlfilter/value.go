package sqlfilter

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// kind is the type of a value at evaluation time.
type kind uint8

const (
	kindNull     kind = iota // NULL: a missing property or a nil value
	kindInt                  // int64, in i
	kindFloat                // float64, in f
	kindString               // string, in s
	kindBool                 // bool, in i (0 or 1)
	kindTime                 // time.Time, in t
	kindDuration             // time.Duration, in i
	kindBinary               // []byte: only IS NULL and EXISTS apply
	kindOther                // any other Go type: only IS NULL and EXISTS apply
)

// String returns the type name used in error messages.
func (k kind) String() string {
	switch k {
	case kindNull:
		return "NULL"
	case kindInt:
		return "int64"
	case kindFloat:
		return "float64"
	case kindString:
		return "string"
	case kindBool:
		return "bool"
	case kindTime:
		return "time"
	case kindDuration:
		return "duration"
	case kindBinary:
		return "[]byte"
	}
	return "unsupported type"
}

// value is one evaluated operand. The zero value is NULL. Values are passed
// by value so that evaluation does not allocate; they are kept to 32 bytes
// because every node returns one.
type value struct {
	k  kind
	ns int32  // kindTime: nanoseconds within the second
	i  int64  // kindInt; kindBool (0 or 1); kindDuration; kindFloat: IEEE bits; kindTime: Unix seconds
	s  string // kindString
}

func intValue(i int64) value     { return value{k: kindInt, i: i} }
func floatValue(f float64) value { return value{k: kindFloat, i: int64(math.Float64bits(f))} }
func stringValue(s string) value { return value{k: kindString, s: s} }

// timeValue keeps the instant of t; the location and monotonic reading are
// dropped (times read back in UTC).
func timeValue(t time.Time) value {
	return value{k: kindTime, i: t.Unix(), ns: int32(t.Nanosecond())}
}

// f64 returns the float64 of a kindFloat value.
func (v value) f64() float64 { return math.Float64frombits(uint64(v.i)) }

// time returns the instant of a kindTime value, in UTC.
func (v value) time() time.Time { return time.Unix(v.i, int64(v.ns)).UTC() }

func durationValue(d time.Duration) value { return value{k: kindDuration, i: int64(d)} }

func boolValue(b bool) value {
	if b {
		return value{k: kindBool, i: 1}
	}
	return value{k: kindBool}
}

// truthValue turns a Truth into a value: a bool, or NULL for Unknown.
func truthValue(t Truth) value {
	switch t {
	case True:
		return boolValue(true)
	case False:
		return boolValue(false)
	}
	return value{}
}

func (v value) isNumber() bool { return v.k == kindInt || v.k == kindFloat }

// float returns a number as float64 (int64 promotes).
func (v value) float() float64 {
	if v.k == kindInt {
		return float64(v.i)
	}
	return v.f64()
}

// fromAny converts a user property or parameter value. Go integers become
// int64 (uint64 above MaxInt64 becomes float64), float32 becomes float64;
// []byte and unknown types keep only their kind.
func fromAny(x any) value {
	switch x := x.(type) {
	case nil:
		return value{}
	case string:
		return stringValue(x)
	case bool:
		return boolValue(x)
	case int:
		return intValue(int64(x))
	case int8:
		return intValue(int64(x))
	case int16:
		return intValue(int64(x))
	case int32:
		return intValue(int64(x))
	case int64:
		return intValue(x)
	case uint:
		return fromUint64(uint64(x))
	case uint8:
		return intValue(int64(x))
	case uint16:
		return intValue(int64(x))
	case uint32:
		return intValue(int64(x))
	case uint64:
		return fromUint64(x)
	case float32:
		return floatValue(float64(x))
	case float64:
		return floatValue(x)
	case time.Time:
		return timeValue(x)
	case time.Duration:
		return durationValue(x)
	case []byte:
		return value{k: kindBinary}
	}
	return value{k: kindOther}
}

func fromUint64(u uint64) value {
	if u > math.MaxInt64 {
		return floatValue(float64(u))
	}
	return intValue(int64(u))
}

// supportedParam reports whether a parameter value has a type fromAny maps to
// a comparable kind.
func supportedParam(x any) bool {
	k := fromAny(x).k
	return k != kindBinary && k != kindOther
}

// toAny converts a value for storing in Message.Properties by SET.
func toAny(v value) (any, error) {
	switch v.k {
	case kindNull:
		return nil, nil
	case kindInt:
		return v.i, nil
	case kindFloat:
		return v.f64(), nil
	case kindString:
		return v.s, nil
	case kindBool:
		return v.i != 0, nil
	case kindTime:
		return v.time(), nil
	case kindDuration:
		return time.Duration(v.i), nil
	}
	return nil, fmt.Errorf("cannot store a %s value", v.k)
}

// cmpOp is a comparison operator.
type cmpOp uint8

const (
	opEq cmpOp = iota
	opNe
	opLt
	opLe
	opGt
	opGe
)

// String returns the operator as written in canonical form ("<>" for !=).
func (op cmpOp) String() string {
	switch op {
	case opEq:
		return "="
	case opNe:
		return "<>"
	case opLt:
		return "<"
	case opLe:
		return "<="
	case opGt:
		return ">"
	}
	return ">="
}

// unordered is the three-way result of comparing NaN with a number: only
// <> holds (IEEE 754).
const unordered = 2

// holds reports whether op holds for a three-way comparison result c (-1,
// 0, 1 or unordered).
func (op cmpOp) holds(c int) bool {
	if c == unordered {
		return op == opNe
	}
	switch op {
	case opEq:
		return c == 0
	case opNe:
		return c != 0
	case opLt:
		return c < 0
	case opLe:
		return c <= 0
	case opGt:
		return c > 0
	}
	return c >= 0
}

// compare applies op to a and b. NULL on either side gives Unknown. Numbers
// compare with int64 -> float64 promotion (IEEE rules for NaN), strings
// ordinally by bytes, times and durations chronologically; bools support only
// = and <>. Any other pairing is an error.
func compare(op cmpOp, a, b value) (Truth, error) {
	if a.k == kindNull || b.k == kindNull {
		return Unknown, nil
	}
	if a.k == kindInt && b.k == kindInt {
		// order's first case, inline: the common case without a call
		// (about 5% of a typical Match).
		return toTruth(op.holds(cmpOrdered(a.i, b.i))), nil
	}
	c, ok := order(a, b)
	if !ok {
		return False, fmt.Errorf("cannot compare %s with %s", a.k, b.k)
	}
	if a.k == kindBool && op != opEq && op != opNe {
		return False, fmt.Errorf("operator %s is not defined for bool (only = and <>)", op)
	}
	return toTruth(op.holds(c)), nil
}

// order compares two values that are not NULL, three-way: -1, 0, 1, or
// unordered when a number is NaN. ok is false for pairings that do not
// compare (string with number, []byte with anything, ...). int64 with int64
// compares exactly; an int64 with a float64 compares as float64. It is the
// one comparison of the package: [compare] and [Correlation.Match] both use
// it. It does not allocate.
func order(a, b value) (c int, ok bool) {
	switch {
	case a.k == kindInt && b.k == kindInt:
		return cmpOrdered(a.i, b.i), true
	case a.isNumber() && b.isNumber():
		return cmpFloat(a.float(), b.float()), true
	case a.k == kindString && b.k == kindString:
		return strings.Compare(a.s, b.s), true
	case a.k == kindTime && b.k == kindTime:
		if c = cmpOrdered(a.i, b.i); c == 0 {
			c = cmpOrdered(int64(a.ns), int64(b.ns))
		}
		return c, true
	case a.k == b.k && (a.k == kindBool || a.k == kindDuration):
		return cmpOrdered(a.i, b.i), true
	}
	return 0, false
}

// cmpFloat compares IEEE numbers: unordered when either is NaN; -0 equals
// +0.
func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	return unordered
}

func cmpOrdered(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// maxStringLen bounds the result of string concatenation, so that an action
// such as SET a = a + a repeated cannot exhaust memory. Service Bus limits
// all headers of a message to 64 KB; 1 MiB leaves room for in-process use.
const maxStringLen = 1 << 20

var (
	// errDivByZero is returned by arith for integer division or modulo by
	// zero.
	errDivByZero = errors.New("integer division by zero")
	// errStringTooLong is returned by arith when a concatenation would pass
	// maxStringLen.
	errStringTooLong = errors.New("string concatenation longer than 1 MiB")
)

// arith applies a binary arithmetic operator ('+', '-', '*', '/', '%').
// NULL on either side gives NULL. int64 with int64 stays int64 (wrapping on
// overflow); a float64 on either side promotes both (IEEE rules). '+' also
// concatenates strings and adds durations to times and durations; '-'
// subtracts them, and time - time gives a duration.
func arith(op byte, a, b value) (value, error) {
	if a.k == kindNull || b.k == kindNull {
		return value{}, nil
	}
	if a.k == kindInt && b.k == kindInt {
		return arithInt(op, a.i, b.i)
	}
	if a.isNumber() && b.isNumber() {
		x, y := a.float(), b.float()
		switch op {
		case '+':
			return floatValue(x + y), nil
		case '-':
			return floatValue(x - y), nil
		case '*':
			return floatValue(x * y), nil
		case '/':
			return floatValue(x / y), nil
		default:
			return floatValue(math.Mod(x, y)), nil
		}
	}
	switch {
	case op == '+' && a.k == kindString && b.k == kindString:
		if len(a.s)+len(b.s) > maxStringLen {
			return value{}, errStringTooLong
		}
		return stringValue(a.s + b.s), nil
	case op == '+' && a.k == kindTime && b.k == kindDuration:
		return timeValue(a.time().Add(time.Duration(b.i))), nil
	case op == '+' && a.k == kindDuration && b.k == kindTime:
		return timeValue(b.time().Add(time.Duration(a.i))), nil
	case op == '-' && a.k == kindTime && b.k == kindDuration:
		return timeValue(a.time().Add(-time.Duration(b.i))), nil
	case op == '-' && a.k == kindTime && b.k == kindTime:
		return durationValue(a.time().Sub(b.time())), nil
	case (op == '+' || op == '-') && a.k == kindDuration && b.k == kindDuration:
		if op == '-' {
			return durationValue(time.Duration(a.i - b.i)), nil
		}
		return durationValue(time.Duration(a.i + b.i)), nil
	}
	return value{}, fmt.Errorf("operator %c is not defined for %s and %s", op, a.k, b.k)
}

func arithInt(op byte, x, y int64) (value, error) {
	switch op {
	case '+':
		return intValue(x + y), nil
	case '-':
		return intValue(x - y), nil
	case '*':
		return intValue(x * y), nil
	}
	if y == 0 {
		return value{}, errDivByZero
	}
	if op == '/' {
		return intValue(x / y), nil
	}
	return intValue(x % y), nil
}

// negate applies unary minus: numbers and durations change sign (int64 and
// durations wrap), NULL stays NULL.
func negate(v value) (value, error) {
	switch v.k {
	case kindNull:
		return v, nil
	case kindInt:
		return intValue(-v.i), nil
	case kindFloat:
		return floatValue(-v.f64()), nil
	case kindDuration:
		return durationValue(time.Duration(-v.i)), nil
	}
	return value{}, fmt.Errorf("unary - is not defined for %s", v.k)
}

// identity applies unary plus: numbers, durations and NULL pass unchanged.
func identity(v value) (value, error) {
	switch v.k {
	case kindNull, kindInt, kindFloat, kindDuration:
		return v, nil
	}
	return value{}, fmt.Errorf("unary + is not defined for %s", v.k)
}
