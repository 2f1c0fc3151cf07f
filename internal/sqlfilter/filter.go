package sqlfilter

import "strconv"

// Truth is the result of a condition in SQL three-valued logic. The zero
// value is False.
type Truth int8

const (
	// False: the condition does not hold.
	False Truth = iota
	// True: the condition holds; only True makes a filter match.
	True
	// Unknown: the condition involves NULL (a missing property), as in
	// missing = 1. NOT Unknown is Unknown.
	Unknown
)

// String returns "False", "True" or "Unknown" ("Truth(n)" for other values).
func (t Truth) String() string {
	switch t {
	case False:
		return "False"
	case True:
		return "True"
	case Unknown:
		return "Unknown"
	}
	return "Truth(" + strconv.Itoa(int(t)) + ")"
}

func toTruth(b bool) Truth {
	if b {
		return True
	}
	return False
}

// Filter is a compiled SQL filter expression. A Filter is immutable: it is
// safe for concurrent use by multiple goroutines, also while they evaluate
// different messages. The zero Filter (and a nil *Filter) matches nothing
// and reports an *[EvalError].
type Filter struct {
	src  string
	root node
}

// ParseFilter compiles a SQL filter expression (see the package
// documentation for the language). params holds the values of @parameters,
// keyed "@name" or "name"; a name is looked up in that order, then
// case-insensitively. Values may be nil, string, bool, any Go integer or
// float, time.Time or time.Duration; parameters the expression does not
// use are ignored.
//
// A missing parameter, or one of an unsupported type, is a
// *[ParameterError] (wrapping [ErrParameter]) with the byte offset and name
// of the parameter. Every other error is a *[SyntaxError] (wrapping
// [ErrSyntax]) with the byte offset and text of the offending token: bad
// syntax, an empty or unterminated expression, trailing text, an unknown
// function or sys. property, an integer literal outside int64, more than
// 1024 characters or more than 256 levels of nesting.
func ParseFilter(expr string, params map[string]any) (*Filter, error) {
	root, err := parseFilter(expr, params, false)
	if err != nil {
		return nil, err
	}
	return &Filter{src: expr, root: root}, nil
}

// parseFilter parses a condition; unlimited skips the length check.
func parseFilter(expr string, params map[string]any, unlimited bool) (node, error) {
	p, err := newParser(expr, params, unlimited)
	if err != nil {
		return nil, err
	}
	return p.parseCondition()
}

// Match reports whether the filter is True for m; False and Unknown do not
// match. A non-nil error is an *[EvalError] (wrapping [ErrEval]), for
// example comparing a string with a number; the bool is then false. A nil m
// reads as a message with no properties. Match does not change m and does
// not allocate unless the expression builds strings (+ on strings,
// newid()) or fails.
func (f *Filter) Match(m *Message) (bool, error) {
	t, err := f.Eval(m)
	return t == True, err
}

// Eval evaluates the filter for m in three-valued logic. On error it returns
// False and an *[EvalError]. A nil m reads as a message with no properties.
func (f *Filter) Eval(m *Message) (Truth, error) {
	if f == nil || f.root == nil {
		return False, &EvalError{Msg: "filter is not compiled (use ParseFilter)"}
	}
	if m == nil {
		m = &Message{}
	}
	t, err := truth(f.root, m)
	if err != nil {
		return False, withSource(err, f.src)
	}
	return t, nil
}

// String returns the source text the filter was compiled from ("" for a
// nil or zero Filter).
func (f *Filter) String() string {
	if f == nil {
		return ""
	}
	return f.src
}
