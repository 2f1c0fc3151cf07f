package modeltest

// The model's own rules (SEMANTICS R1–R5): a small SQL filter language it
// evaluates itself (never through internal/sqlfilter), correlation filters
// and SQL actions. FiltersAgree (agree.go) pins the model's evaluation
// against the broker's on single messages; the state machine then uses the
// same rules on whole histories.

import (
	"fmt"
	"math"
	"strings"

	"github.com/minibus-go/minibus"
)

// tri is SQL three-valued logic.
type tri int8

const (
	tFalse tri = iota
	tTrue
	tUnknown
)

// fNode is one node of a model SQL filter.
type fNode struct {
	op    string // "num", "str", "exists", "label", "not", "and", "or"
	prop  string // as written: n, N, user.n, ...
	key   string // the user property read
	cmp   string // comparison operator
	n     int64
	param string // "@p1" when n is a parameter
	s     string
	l, r  *fNode
}

func (f *fNode) sql() string {
	switch f.op {
	case "num":
		v := fmt.Sprint(f.n)
		if f.param != "" {
			v = f.param
		}
		return f.prop + " " + f.cmp + " " + v
	case "str":
		return f.prop + " " + f.cmp + " '" + f.s + "'"
	case "exists":
		return "EXISTS(" + f.prop + ")"
	case "label":
		return f.prop + " = '" + f.s + "'"
	case "not":
		return "NOT (" + f.l.sql() + ")"
	}
	return "(" + f.l.sql() + ") " + strings.ToUpper(f.op) + " (" + f.r.sql() + ")"
}

// lookupUser finds a user property: the exact key, else the smallest key
// equal to it case-insensitively (SEMANTICS R3: names are
// case-insensitive).
func lookupUser(props map[string]any, name string) (key string, v any, ok bool) {
	if v, ok := props[name]; ok {
		return name, v, true
	}
	for k, kv := range props {
		if strings.EqualFold(k, name) && (!ok || k < key) {
			key, v, ok = k, kv, true
		}
	}
	return key, v, ok
}

func asInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	}
	return 0, false
}

func asFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case float32:
		return float64(v), true
	case float64:
		return v, true
	}
	if i, ok := asInt(v); ok {
		return float64(i), true
	}
	return 0, false
}

func cmpResult(c int, op string) tri {
	var ok bool
	switch op {
	case "=":
		ok = c == 0
	case "<>", "!=":
		ok = c != 0
	case "<":
		ok = c < 0
	case "<=":
		ok = c <= 0
	case ">":
		ok = c > 0
	case ">=":
		ok = c >= 0
	}
	if ok {
		return tTrue
	}
	return tFalse
}

func cmp3[T int64 | float64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// eval is R3 on the model's subset: a missing or nil property is NULL and
// makes a comparison unknown; a comparison of a string with a number (or a
// bool with either) is an evaluation error; AND and OR look at their right
// side only when the left does not decide (errors there stay hidden). The
// second result is an evaluation error.
func (f *fNode) eval(x *mMsg) (tri, bool) {
	switch f.op {
	case "num":
		return f.evalNum(x)
	case "str":
		return f.evalStr(x)
	case "exists":
		_, _, ok := lookupUser(x.props, f.key)
		return triOf(ok), false
	case "label":
		if x.headers.Subject == "" {
			return tUnknown, false // an empty sys. string reads NULL
		}
		return cmpResult(cmp3(x.headers.Subject, f.s), "="), false
	case "not":
		v, err := f.l.eval(x)
		if err {
			return tFalse, true
		}
		return not3(v), false
	}
	return f.evalAndOr(x)
}

func triOf(b bool) tri {
	if b {
		return tTrue
	}
	return tFalse
}

// not3 is NOT in three-valued logic.
func not3(v tri) tri {
	switch v {
	case tTrue:
		return tFalse
	case tFalse:
		return tTrue
	}
	return tUnknown
}

// evalNum compares a user property with a number, with numeric promotion.
func (f *fNode) evalNum(x *mMsg) (tri, bool) {
	_, v, ok := lookupUser(x.props, f.key)
	if !ok || v == nil {
		return tUnknown, false
	}
	if i, ok := asInt(v); ok {
		return cmpResult(cmp3(i, f.n), f.cmp), false
	}
	if fl, ok := asFloat(v); ok {
		return cmpResult(cmp3(fl, float64(f.n)), f.cmp), false
	}
	return tFalse, true
}

// evalStr compares a user property with a string.
func (f *fNode) evalStr(x *mMsg) (tri, bool) {
	_, v, ok := lookupUser(x.props, f.key)
	if !ok || v == nil {
		return tUnknown, false
	}
	s, ok := v.(string)
	if !ok {
		return tFalse, true
	}
	return cmpResult(cmp3(s, f.s), f.cmp), false
}

// evalAndOr is AND and OR: the right side only when the left does not
// decide.
func (f *fNode) evalAndOr(x *mMsg) (tri, bool) {
	and := f.op == "and"
	decides := tTrue // OR
	if and {
		decides = tFalse
	}
	l, err := f.l.eval(x)
	switch {
	case err:
		return tFalse, true
	case l == decides:
		return l, false
	}
	r, err := f.r.eval(x)
	switch {
	case err:
		return tFalse, true
	case r == decides:
		return decides, false
	case l == tUnknown || r == tUnknown:
		return tUnknown, false
	}
	return not3(decides), false
}

// mAction is a SQL action of the model: statements from a fixed menu.
type mAction struct {
	stmts []string // "tag", "inc", "remove", "label"
}

var actionText = map[string]string{
	"tag":    "SET tag = 'v1'",
	"inc":    "SET n = n + 1",
	"remove": "REMOVE color",
	"label":  "SET sys.Label = 'lbl'",
}

func (a *mAction) sql() string {
	parts := make([]string, len(a.stmts))
	for i, s := range a.stmts {
		parts[i] = actionText[s]
	}
	return strings.Join(parts, "; ")
}

// apply changes x as the statements say (R2); false is an evaluation
// error, which fails the rule (R5).
func (a *mAction) apply(x *mMsg) bool {
	set := func(name string, v any) {
		if x.props == nil {
			x.props = map[string]any{}
		}
		key, old, ok := lookupUser(x.props, name)
		if !ok {
			key = name
		} else {
			v = sameType(old, v)
		}
		x.props[key] = v
	}
	for _, st := range a.stmts {
		switch st {
		case "tag":
			set("tag", "v1")
		case "inc":
			_, v, ok := lookupUser(x.props, "n")
			switch {
			case !ok || v == nil:
				set("n", nil) // NULL + 1 is NULL
			default:
				if i, ok := asInt(v); ok {
					set("n", i+1)
				} else if f, ok := asFloat(v); ok {
					set("n", f+1)
				} else {
					return false
				}
			}
		case "remove":
			for k := range x.props {
				if strings.EqualFold(k, "color") {
					delete(x.props, k)
				}
			}
		case "label":
			x.headers.Subject = "lbl"
		}
	}
	if len(x.props) == 0 {
		x.props = nil
	}
	return true
}

// mRule is a rule as the model sees it, with what to pass to the broker and
// what Rules() must return.
type mRule struct {
	name    string
	kind    string // "true", "false", "sql", "corr"
	node    *fNode
	corr    minibus.CorrelationFilter
	action  *mAction
	invalid bool // the broker must refuse it (bad SQL, empty correlation)
	props   *minibus.RuleProperties
	public  minibus.Rule
}

// match is (matched, evaluation error).
func (r *mRule) match(x *mMsg) (bool, bool) {
	switch r.kind {
	case "true":
		return true, false
	case "false":
		return false, false
	case "corr":
		return corrMatch(r.corr, x), false
	}
	v, err := r.node.eval(x)
	return v == tTrue, err
}

// corrMatch is R4: every field the filter sets equals the message's;
// properties by value, numbers of any type by numeric value.
func corrMatch(f minibus.CorrelationFilter, x *mMsg) bool {
	eq := func(want, got string) bool { return want == "" || want == got }
	h := x.headers
	if !eq(f.CorrelationID, h.CorrelationID) || !eq(f.Subject, h.Subject) || !eq(f.ContentType, h.ContentType) ||
		!eq(f.To, h.To) || !eq(f.ReplyTo, h.ReplyTo) {
		return false
	}
	for k, want := range f.ApplicationProperties {
		_, got, ok := lookupUser(x.props, k)
		if !ok || !sameValue(want, got) {
			return false
		}
	}
	return true
}

func sameValue(a, b any) bool {
	if x, ok := asInt(a); ok {
		if y, ok := asInt(b); ok {
			return x == y
		}
	}
	if x, ok := asFloat(a); ok {
		y, ok := asFloat(b)
		return ok && x == y
	}
	return a == b
}

// sameType is SET's conversion of a number to the Go type of the number a
// property holds, where nothing is lost (R2, the SQLRuleAction reference's
// implicit conversion); anything else stays as it is.
func sameType(old, v any) any {
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		return v
	}
	integral := f == math.Trunc(f) && math.Abs(f) < 1<<62
	switch old.(type) {
	case float64:
		return f
	case float32:
		if float64(float32(f)) == f {
			return float32(f)
		}
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		if integral {
			if c, ok := fitInt(old, int64(f)); ok {
				return c
			}
		}
	}
	return v
}

// fitInt returns i as old's integer type when it fits.
func fitInt(old any, i int64) (any, bool) {
	switch old.(type) {
	case int:
		return int(i), true
	case int8:
		return int8(i), inRange(i, math.MinInt8, math.MaxInt8)
	case int16:
		return int16(i), inRange(i, math.MinInt16, math.MaxInt16)
	case int32:
		return int32(i), inRange(i, math.MinInt32, math.MaxInt32)
	case int64:
		return i, true
	}
	return fitUint(old, i)
}

// fitUint returns i as old's unsigned integer type when it fits.
func fitUint(old any, i int64) (any, bool) {
	switch old.(type) {
	case uint:
		return uint(i), i >= 0
	case uint8:
		return uint8(i), inRange(i, 0, math.MaxUint8)
	case uint16:
		return uint16(i), inRange(i, 0, math.MaxUint16)
	case uint32:
		return uint32(i), inRange(i, 0, math.MaxUint32)
	case uint64:
		return uint64(i), i >= 0
	}
	return nil, false
}

func inRange(i, lo, hi int64) bool { return i >= lo && i <= hi }
