package sqlfilter

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// CorrelationFields are the system properties a correlation filter can
// require (CorrelationRuleFilter). "" leaves a field out: it then matches
// any value, "" included.
type CorrelationFields struct {
	CorrelationID, MessageID, To, ReplyTo, Subject, SessionID, ReplyToSessionID, ContentType string
}

// Correlation is a compiled correlation filter (rule R4 of SEMANTICS.md):
// a message matches when every system property the filter sets equals the
// message's and every user property it lists is present with an equal
// value. Build one with [NewCorrelation].
//
// A Correlation is immutable: it keeps its own copy of everything it was
// given, and it is safe for concurrent use by multiple goroutines, also
// while they match different messages. The zero Correlation (and a nil
// *Correlation) matches nothing.
type Correlation struct {
	sys      []corrSys  // the set system properties, in CorrelationFields order
	props    []corrProp // the user properties, sorted by key
	compiled bool       // set by NewCorrelation; false for the zero value
}

// corrSys is one system property the filter sets.
type corrSys struct {
	p    sysProp
	want string
}

// corrProp is one user property of the filter with its value converted
// once. []byte values keep a copy of their content and times the time as
// given, as fromAny keeps neither.
type corrProp struct {
	key string
	v   value     // fromAny of the value; kindNull for nil
	b   []byte    // kindBinary: the content
	t   time.Time // kindTime: the time, compared with Equal
}

// NewCorrelation compiles a correlation filter from the system properties
// in f and the user properties in props.
//
// Values in props may be nil, string, bool, []byte, time.Time,
// time.Duration or any Go integer or float type (the types a message's
// properties may have); any other type is an error naming the key (the
// smallest such key if several) and the type. A filter that sets no field
// of f and has no properties is an error too: it would match every message,
// which is what a true filter is for. The errors are plain errors that wrap
// none of the package's sentinels.
//
// props is not kept: changing the map or a []byte in it afterwards does not
// change the filter.
func NewCorrelation(f CorrelationFields, props map[string]any) (*Correlation, error) {
	c := &Correlation{compiled: true}
	for _, s := range [...]corrSys{
		{sysCorrelationID, f.CorrelationID}, {sysMessageID, f.MessageID}, {sysTo, f.To},
		{sysReplyTo, f.ReplyTo}, {sysSubject, f.Subject}, {sysSessionID, f.SessionID},
		{sysReplyToSessionID, f.ReplyToSessionID}, {sysContentType, f.ContentType},
	} {
		if s.want != "" {
			c.sys = append(c.sys, s)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		p, err := newCorrProp(k, props[k])
		if err != nil {
			return nil, err
		}
		c.props = append(c.props, p)
	}
	if len(c.sys) == 0 && len(c.props) == 0 {
		return nil, errors.New("it sets no field; use TrueFilter to match everything")
	}
	return c, nil
}

// newCorrProp converts one filter property, refusing types a message
// property cannot have.
func newCorrProp(key string, x any) (corrProp, error) {
	p := corrProp{key: key, v: fromAny(x)}
	switch p.v.k {
	case kindOther:
		return corrProp{}, fmt.Errorf("application property %q has unsupported type %T", key, x)
	case kindBinary:
		p.b = bytes.Clone(x.([]byte))
	case kindTime:
		p.t = x.(time.Time)
	}
	return p, nil
}

// Match reports whether m matches the filter:
//
//   - every system property the filter sets equals m's exactly
//     (case-sensitive, byte by byte);
//   - every user property of the filter is in m.Properties, found by name
//     as SQL filters find user.Name (the exact key first, then any key equal
//     case-insensitively, the smallest such key if several), and its value
//     equals the filter's.
//
// Values are equal when they are integers of any Go type with the same
// value (int8(1) equals uint64(1); a uint64 above MaxInt64 compares as a
// float64), numbers with the same numeric value when either is a float
// (int64(1) equals 1.0; NaN equals nothing), []byte with the same content,
// times denoting the same instant ([time.Time.Equal], whatever their
// locations), time.Duration, bool or string values that are ==, or both
// nil. Values of different kinds are never equal: "1" is not 1, a
// time.Duration is not an int64, and nil equals only nil (a missing
// property matches nothing, not even nil).
//
// A nil m reads as a message with no properties. Match does not change m,
// does not allocate and never fails.
func (c *Correlation) Match(m *Message) bool {
	if c == nil || !c.compiled {
		return false
	}
	if m == nil {
		m = &Message{}
	}
	for _, s := range c.sys {
		if *s.p.str(m) != s.want {
			return false
		}
	}
	for i := range c.props {
		p := &c.props[i]
		_, v, ok := lookupUser(m.Properties, p.key)
		if !ok || !p.equal(v) {
			return false
		}
	}
	return true
}

// equal reports whether the message value x equals the filter value.
// Numbers, strings, bools and durations go through order, as in SQL
// comparisons; nil, []byte and times are compared directly.
func (p *corrProp) equal(x any) bool {
	switch p.v.k {
	case kindNull:
		return x == nil
	case kindBinary:
		b, ok := x.([]byte)
		return ok && bytes.Equal(b, p.b)
	case kindTime:
		t, ok := x.(time.Time)
		return ok && t.Equal(p.t)
	}
	c, ok := order(p.v, fromAny(x))
	return ok && c == 0
}
