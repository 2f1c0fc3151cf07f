package sqlfilter

import (
	"math"
	"strings"
)

// Action is a compiled SQL rule action: SET and REMOVE statements run in
// order on a message. An Action is immutable and safe for concurrent use;
// each Apply changes only the message it is given. A nil or zero Action
// changes nothing and reports an *[EvalError].
type Action struct {
	src   string
	stmts []statement
}

// statement is one SET or REMOVE.
type statement struct {
	srcSpan
	target node // *userNode or *sysNode (writable)
	value  node // nil for REMOVE
}

// ParseAction compiles a SQL rule action: statements "SET property =
// expression" and "REMOVE property", separated by ';' or ',', with an
// optional ';' at the end. The expressions are those of [ParseFilter]
// (values, not conditions), params works as there, and the same limits
// apply.
//
// The errors are those of ParseFilter: a *[ParameterError] for a missing
// or unsupported parameter, else a *[SyntaxError]. Beyond the syntax errors
// of ParseFilter, an action fails to compile when it sets or removes a
// read-only sys. property (all but MessageId, CorrelationId, To, ReplyTo,
// Label/Subject, SessionId, ReplyToSessionId, ContentType and PartitionKey)
// or a statement starts with anything but SET or REMOVE.
func ParseAction(expr string, params map[string]any) (*Action, error) {
	stmts, err := parseAction(expr, params, false)
	if err != nil {
		return nil, err
	}
	return &Action{src: expr, stmts: stmts}, nil
}

// parseAction parses statements; unlimited skips the length check.
func parseAction(expr string, params map[string]any, unlimited bool) ([]statement, error) {
	p, err := newParser(expr, params, unlimited)
	if err != nil {
		return nil, err
	}
	var stmts []statement
	for {
		st, err := p.parseStatement()
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, st)
		sep := p.next()
		switch {
		case sep.kind == tokEOF:
			return stmts, nil
		case isOp(sep, ";") && p.peek().kind == tokEOF:
			return stmts, nil // trailing ';'
		case isOp(sep, ";"), isOp(sep, ","):
			continue
		}
		return nil, p.errAt(sep, "expected ';' between statements, found %s", describe(sep))
	}
}

// parseStatement parses SET property = value or REMOVE property.
func (p *parser) parseStatement() (statement, error) {
	kw := p.next()
	remove := isKeyword(kw, "REMOVE")
	if !remove && !isKeyword(kw, "SET") {
		return statement{}, p.errAt(kw, "expected SET or REMOVE, found %s", describe(kw))
	}
	target, err := p.parseTarget()
	if err != nil {
		return statement{}, err
	}
	if sys, ok := target.(*sysNode); ok && !sys.p.writable() {
		name := p.toks[p.i-1] // the name after "sys."
		return statement{}, p.errAt(name, "system property sys.%s is read-only", sys.p.name())
	}
	st := statement{srcSpan: srcSpan{kw.pos, target.span().end}, target: target}
	if remove {
		return st, nil
	}
	if _, err := p.expectOp("="); err != nil {
		return statement{}, err
	}
	if st.value, err = p.parseValue(); err != nil {
		return statement{}, err
	}
	st.end = st.value.span().end
	return st, nil
}

// parseTarget parses the property a statement changes; functions and
// literals are not properties.
func (p *parser) parseTarget() (node, error) {
	t := p.peek()
	if t.kind != tokIdent && t.kind != tokDelim {
		return nil, p.errAt(t, "expected a property name, found %s", describe(t))
	}
	if t.kind == tokIdent && isOp(p.peekAt(1), "(") {
		return nil, p.errAt(t, "expected a property name, found function %s()", t.text)
	}
	return p.parseProperty()
}

// Apply runs the statements in order on m, changing it in place; each
// statement sees the changes of those before it.
//
// SET on a user property stores int64, float64, string, bool, time.Time (in
// UTC), time.Duration or nil (for NULL) under the existing key that matches the
// name case-insensitively, or under the name as written; m.Properties is
// created when nil. SET on a sys. string property stores a string, and NULL
// empties it. REMOVE deletes every user key that matches the name
// case-insensitively, or empties the sys. property.
//
// An evaluation error (a type error, SET of a non-string to a sys.
// property, SET of a []byte value) stops Apply and returns an *[EvalError];
// the statements before it have already changed m, so callers should apply
// to a copy they can discard. A nil m is an error.
func (a *Action) Apply(m *Message) error {
	if a == nil || a.stmts == nil {
		return &EvalError{Msg: "action is not compiled (use ParseAction)"}
	}
	if m == nil {
		return &EvalError{Msg: "nil message"}
	}
	for i := range a.stmts {
		if err := a.stmts[i].apply(m); err != nil {
			return withSource(err, a.src)
		}
	}
	return nil
}

func (st *statement) apply(m *Message) error {
	if st.value == nil {
		switch t := st.target.(type) {
		case *sysNode:
			*t.p.str(m) = ""
		case *userNode:
			removeUser(m.Properties, t.name)
		}
		return nil
	}
	v, err := st.value.eval(m)
	if err != nil {
		return err
	}
	switch t := st.target.(type) {
	case *sysNode:
		switch v.k {
		case kindNull:
			*t.p.str(m) = ""
		case kindString:
			*t.p.str(m) = v.s
		default:
			return evalErr(st.start, st.end, "sys.%s must be set to a string, got %s", t.p.name(), v.k)
		}
	case *userNode:
		x, err := toAny(v)
		if err != nil {
			return evalErr(st.start, st.end, "%v", err)
		}
		if m.Properties == nil {
			m.Properties = make(map[string]any)
		}
		key, old, ok := lookupUser(m.Properties, t.name)
		if ok {
			x = convertLike(old, x)
		} else {
			key = t.name
		}
		m.Properties[key] = x
	}
	return nil
}

// convertLike converts x, a number SET assigns, to the Go type of old, the
// number the property holds, where that loses nothing: "SET price = 2" on a
// float64 property leaves a float64, on an int32 an int32. Anything else is
// returned as it is.
func convertLike(old, x any) any {
	switch v := x.(type) {
	case int64:
		if c, ok := intLike(old, v); ok {
			return c
		}
		if c, ok := floatLike(old, float64(v)); ok && int64(float64(v)) == v {
			return c
		}
	case float64:
		if c, ok := floatLike(old, v); ok {
			return c
		}
		if i := int64(v); float64(i) == v && v >= math.MinInt64 && v < math.MaxInt64 {
			if c, ok := intLike(old, i); ok {
				return c
			}
		}
	}
	return x
}

// intLike converts v to old's integer type, if old is an integer and v fits.
func intLike(old any, v int64) (any, bool) {
	switch old.(type) {
	case int:
		return int(v), true
	case int8:
		return int8(v), int64(int8(v)) == v
	case int16:
		return int16(v), int64(int16(v)) == v
	case int32:
		return int32(v), int64(int32(v)) == v
	case int64:
		return v, true
	case uint:
		return uint(v), v >= 0
	case uint8:
		return uint8(v), v >= 0 && int64(uint8(v)) == v
	case uint16:
		return uint16(v), v >= 0 && int64(uint16(v)) == v
	case uint32:
		return uint32(v), v >= 0 && int64(uint32(v)) == v
	case uint64:
		return uint64(v), v >= 0
	}
	return nil, false
}

// floatLike converts v to old's float type, if old is a float and v fits
// exactly.
func floatLike(old any, v float64) (any, bool) {
	switch old.(type) {
	case float32:
		return float32(v), float64(float32(v)) == v
	case float64:
		return v, true
	}
	return nil, false
}

// removeUser deletes every key of props equal to name case-insensitively.
func removeUser(props map[string]any, name string) {
	for k := range props {
		if strings.EqualFold(k, name) {
			delete(props, k)
		}
	}
}

// String returns the source text the action was compiled from ("" for a
// nil or zero Action).
func (a *Action) String() string {
	if a == nil {
		return ""
	}
	return a.src
}

// formatStatements returns the canonical text of stmts, one statement per
// ';'.
func formatStatements(stmts []statement) string {
	var b strings.Builder
	for i, st := range stmts {
		if i > 0 {
			b.WriteString("; ")
		}
		if st.value == nil {
			b.WriteString("REMOVE ")
			st.target.format(&b)
			continue
		}
		b.WriteString("SET ")
		st.target.format(&b)
		b.WriteString(" = ")
		st.value.format(&b)
	}
	return b.String()
}
