package sqlfilter

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"unicode/utf8"
)

// Evaluation walks the tree left to right. AND and OR short-circuit (FALSE
// AND x and TRUE OR x do not evaluate x, so they cannot fail in x), and IN
// stops at the first equal item. NULL propagates before types are checked:
// NULL = 'a' is Unknown and NULL + 1 is NULL, whatever the other operand.
// Nothing here allocates unless a string is built (concatenation, newid())
// or an error is returned.

// evalErr builds an EvalError for the source bytes [pos, end); withSource
// fills in its Token once the error reaches Filter or Action.
func evalErr(pos, end int, format string, args ...any) *EvalError {
	return &EvalError{Pos: pos, end: end, Msg: fmt.Sprintf(format, args...)}
}

// withSource sets the Token of an EvalError from the source text.
func withSource(err error, src string) error {
	if e, ok := err.(*EvalError); ok && e.Token == "" {
		pos := min(max(e.Pos, 0), len(src))
		end := min(max(e.end, pos), len(src))
		e.Token = src[pos:end]
	}
	return err
}

// truth evaluates n as a condition: a bool gives True or False, NULL gives
// Unknown, any other kind is an error.
func truth(n node, m *Message) (Truth, error) {
	v, err := n.eval(m)
	if err != nil {
		return False, err
	}
	switch v.k {
	case kindBool:
		return toTruth(v.i != 0), nil
	case kindNull:
		return Unknown, nil
	}
	s := n.span()
	return False, evalErr(s.start, s.end, "expected a boolean condition, got %s", v.k)
}

func (n *constNode) eval(*Message) (value, error) { return n.v, nil }

func (n *paramNode) eval(*Message) (value, error) { return n.v, nil }

func (n *userNode) eval(m *Message) (value, error) {
	_, v, ok := lookupUser(m.Properties, n.name)
	if !ok {
		return value{}, nil
	}
	return fromAny(v), nil
}

func (n *sysNode) eval(m *Message) (value, error) { return n.p.get(m), nil }

func (n *propertyFunc) eval(m *Message) (value, error) {
	name, err := n.arg.eval(m)
	if err != nil || name.k == kindNull {
		return value{}, err
	}
	if name.k != kindString {
		return value{}, evalErr(n.start, n.nameEnd, "property() needs a string name, got %s", name.k)
	}
	_, v, ok := lookupUser(m.Properties, name.s)
	if !ok {
		return value{}, nil
	}
	return fromAny(v), nil
}

func (n *newIDFunc) eval(*Message) (value, error) { return stringValue(newGUID()), nil }

// newGUID returns a random (version 4) GUID in the usual 8-4-4-4-12 form.
func newGUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // never fails (crypto/rand, Go 1.24+)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

func (n *unaryNode) eval(m *Message) (value, error) {
	x, err := n.x.eval(m)
	if err != nil {
		return value{}, err
	}
	var r value
	if n.op == '-' {
		r, err = negate(x)
	} else {
		r, err = identity(x)
	}
	if err != nil {
		return value{}, evalErr(n.opPos, n.opPos+1, "%v", err)
	}
	return r, nil
}

func (n *arithNode) eval(m *Message) (value, error) {
	l, err := n.l.eval(m)
	if err != nil {
		return value{}, err
	}
	r, err := n.r.eval(m)
	if err != nil {
		return value{}, err
	}
	v, err := arith(n.op, l, r)
	if err != nil {
		return value{}, evalErr(n.opPos, n.opPos+1, "%v", err)
	}
	return v, nil
}

func (n *cmpNode) eval(m *Message) (value, error) {
	l, err := n.l.eval(m)
	if err != nil {
		return value{}, err
	}
	r, err := n.r.eval(m)
	if err != nil {
		return value{}, err
	}
	t, err := compare(n.op, l, r)
	if err != nil {
		return value{}, evalErr(n.opPos, n.opPos+len(n.op.String()), "%v", err)
	}
	return truthValue(t), nil
}

func (n *logicNode) eval(m *Message) (value, error) {
	l, err := truth(n.l, m)
	if err != nil {
		return value{}, err
	}
	if n.and && l == False {
		return truthValue(False), nil
	}
	if !n.and && l == True {
		return truthValue(True), nil
	}
	r, err := truth(n.r, m)
	if err != nil {
		return value{}, err
	}
	if n.and {
		return truthValue(and3(l, r)), nil
	}
	return truthValue(or3(l, r)), nil
}

// and3 is SQL AND over three values: FALSE wins, then UNKNOWN.
func and3(a, b Truth) Truth {
	switch {
	case a == False || b == False:
		return False
	case a == Unknown || b == Unknown:
		return Unknown
	}
	return True
}

// or3 is SQL OR over three values: TRUE wins, then UNKNOWN.
func or3(a, b Truth) Truth {
	switch {
	case a == True || b == True:
		return True
	case a == Unknown || b == Unknown:
		return Unknown
	}
	return False
}

// not3 is SQL NOT: NOT UNKNOWN is UNKNOWN.
func not3(t Truth) Truth {
	switch t {
	case True:
		return False
	case False:
		return True
	}
	return Unknown
}

func (n *notNode) eval(m *Message) (value, error) {
	t, err := truth(n.x, m)
	if err != nil {
		return value{}, err
	}
	return truthValue(not3(t)), nil
}

func (n *likeNode) eval(m *Message) (value, error) {
	t, err := n.match(m)
	if err != nil {
		return value{}, err
	}
	if n.not {
		t = not3(t)
	}
	return truthValue(t), nil
}

// match evaluates x LIKE pattern [ESCAPE esc] without the NOT.
func (n *likeNode) match(m *Message) (Truth, error) {
	x, err := n.x.eval(m)
	if err != nil {
		return False, err
	}
	if n.fixed != nil {
		switch x.k {
		case kindNull:
			return Unknown, nil
		case kindString:
			return toTruth(n.fixed.match(x.s)), nil
		}
		return False, n.errf("LIKE needs a string, got %s", x.k)
	}
	pat, err := n.pattern.eval(m)
	if err != nil {
		return False, err
	}
	esc := value{k: kindString}
	if n.esc != nil {
		if esc, err = n.esc.eval(m); err != nil {
			return False, err
		}
	}
	if x.k == kindNull || pat.k == kindNull || esc.k == kindNull {
		return Unknown, nil
	}
	switch {
	case x.k != kindString:
		return False, n.errf("LIKE needs a string, got %s", x.k)
	case pat.k != kindString:
		return False, n.errf("LIKE pattern must be a string, got %s", pat.k)
	case esc.k != kindString:
		return False, n.errf("ESCAPE must be a string, got %s", esc.k)
	case n.esc != nil && utf8.RuneCountInString(esc.s) != 1:
		return False, n.errf("ESCAPE must be a string of exactly one character, found %q", esc.s)
	}
	if err := validateLike(pat.s, esc.s); err != nil {
		return False, n.errf("%v", err)
	}
	return toTruth(likeMatch(x.s, pat.s, esc.s)), nil
}

func (n *likeNode) errf(format string, args ...any) *EvalError {
	return evalErr(n.opPos, n.opPos+len("LIKE"), format, args...)
}

func (n *inNode) eval(m *Message) (value, error) {
	x, err := n.x.eval(m)
	if err != nil {
		return value{}, err
	}
	var t Truth
	if n.fixed != nil {
		t, err = n.inFixed(x)
	} else {
		t, err = n.inList(x, m)
	}
	if err != nil {
		return value{}, err
	}
	if n.not {
		t = not3(t)
	}
	return truthValue(t), nil
}

// inFixed looks x up in the constant items.
func (n *inNode) inFixed(x value) (Truth, error) {
	if x.k == kindNull {
		return Unknown, nil
	}
	t := False
	for i := range n.fixed {
		eq, err := compare(opEq, x, n.fixed[i])
		if err != nil {
			return False, n.itemErr(i, err)
		}
		if eq == True {
			return True, nil
		}
		if eq == Unknown {
			t = Unknown
		}
	}
	return t, nil
}

// inList evaluates the items one by one until one equals x. A NULL x gives
// Unknown, but the items are still evaluated so that their errors surface.
func (n *inNode) inList(x value, m *Message) (Truth, error) {
	t := False
	for i, item := range n.list {
		v, err := item.eval(m)
		if err != nil {
			return False, err
		}
		if x.k == kindNull {
			continue
		}
		eq, err := compare(opEq, x, v)
		if err != nil {
			return False, n.itemErr(i, err)
		}
		if eq == True {
			return True, nil
		}
		if eq == Unknown {
			t = Unknown
		}
	}
	if x.k == kindNull {
		return Unknown, nil
	}
	return t, nil
}

func (n *inNode) itemErr(i int, err error) *EvalError {
	s := n.list[i].span()
	return evalErr(s.start, s.end, "IN: %v", err)
}

func (n *isNullNode) eval(m *Message) (value, error) {
	x, err := n.x.eval(m)
	if err != nil {
		return value{}, err
	}
	return boolValue((x.k == kindNull) != n.not), nil
}

func (n *existsNode) eval(m *Message) (value, error) {
	switch p := n.prop.(type) {
	case *userNode:
		_, _, ok := lookupUser(m.Properties, p.name)
		return boolValue(ok), nil
	case *sysNode:
		return boolValue(p.p.get(m).k != kindNull), nil
	}
	return boolValue(false), nil
}
