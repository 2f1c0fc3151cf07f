package sqlfilter

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// maxExprLen is the longest expression accepted, in characters, as in
	// Service Bus (1024 for filters and actions).
	maxExprLen = 1024
	// maxDepth bounds the nesting of parentheses, function calls, NOT and
	// unary signs.
	maxDepth = 256
)

// parser is a recursive-descent parser over the tokens of one expression.
// Grammar, weakest binding first:
//
//	or        = and { OR and }
//	and       = not { AND not }
//	not       = NOT not | predicate
//	predicate = EXISTS '(' property ')'
//	          | sum [ cmpop sum | [NOT] LIKE sum [ESCAPE sum]
//	                | [NOT] IN '(' sum { ',' sum } ')' | IS [NOT] NULL ]
//	sum       = product { ('+' | '-') product }
//	product   = unary { ('*' | '/' | '%') unary }
//	unary     = ('+' | '-') unary | primary
//	primary   = literal | @param | property | function '(' [or] ')' | '(' or ')'
//	property  = [ (sys | user) '.' ] name
type parser struct {
	src    string
	toks   []token
	i      int
	params map[string]any
	depth  int
}

// newParser checks the length of src and splits it into tokens. With
// unlimited set the length is not checked (for re-parsing canonical text in
// tests, which may be longer than the source).
func newParser(src string, params map[string]any, unlimited bool) (*parser, error) {
	if !unlimited {
		if n := utf8.RuneCountInString(src); n > maxExprLen {
			pos := 0
			for i := 0; i < maxExprLen; i++ {
				_, w := utf8.DecodeRuneInString(src[pos:])
				pos += w
			}
			return nil, &SyntaxError{Pos: pos, Token: charAt(src, pos),
				Msg: fmt.Sprintf("expression is %d characters long, more than the limit of %d", n, maxExprLen)}
		}
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	if toks[0].kind == tokEOF {
		return nil, &SyntaxError{Pos: 0, Msg: "empty expression"}
	}
	return &parser{src: src, toks: toks, params: params}, nil
}

func (p *parser) peek() token { return p.toks[p.i] }

// peekAt returns the token k places ahead, or the final tokEOF.
func (p *parser) peekAt(k int) token {
	if p.i+k >= len(p.toks) {
		return p.toks[len(p.toks)-1]
	}
	return p.toks[p.i+k]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func isKeyword(t token, kw string) bool {
	return t.kind == tokIdent && strings.EqualFold(t.text, kw)
}

func isOp(t token, op string) bool { return t.kind == tokOp && t.text == op }

// errAt returns a SyntaxError at token t.
func (p *parser) errAt(t token, format string, args ...any) *SyntaxError {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	if t.kind == tokEOF {
		if !strings.Contains(msg, "end of expression") {
			msg = "unexpected end of expression: " + msg
		}
		return &SyntaxError{Pos: t.pos, Msg: msg}
	}
	return &SyntaxError{Pos: t.pos, Token: p.src[t.pos:t.end], Msg: msg}
}

// errNode returns a SyntaxError pointing at the text of node n.
func (p *parser) errNode(n node, format string, args ...any) *SyntaxError {
	s := n.span()
	return &SyntaxError{Pos: s.start, Token: p.src[s.start:s.end], Msg: fmt.Sprintf(format, args...)}
}

// expectOp consumes operator op or fails.
func (p *parser) expectOp(op string) (token, error) {
	t := p.peek()
	if !isOp(t, op) {
		return t, p.errAt(t, "expected '%s'", op)
	}
	return p.next(), nil
}

// enter counts one level of nesting at token t; call leave when done.
func (p *parser) enter(t token) error {
	p.depth++
	if p.depth > maxDepth {
		return p.errAt(t, "expression nested more than %d levels deep", maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// describe names a token for "expected X, found Y" messages.
func describe(t token) string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokString:
		return "string"
	case tokInt, tokFloat:
		return "number"
	}
	return fmt.Sprintf("%q", t.text)
}

// asValue fails when n is a predicate used where a value is needed, as in
// (a = 1) + 2.
func (p *parser) asValue(n node) (node, error) {
	if isPredicate(n) {
		return nil, p.errNode(n, "a condition cannot be used as a value here")
	}
	return n, nil
}

// asPredicate fails when n can never be a truth value, as in NOT 5 or a + 1
// AND b = 2.
func (p *parser) asPredicate(n node) (node, error) {
	if isPredicate(n) || mayBeBool(n) {
		return n, nil
	}
	return nil, p.errNode(n, "expected a condition (comparison, LIKE, IN, IS NULL, EXISTS or a boolean)")
}

// parseCondition parses a whole filter expression.
func (p *parser) parseCondition() (node, error) {
	n, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.errAt(t, "unexpected %s after the end of the condition", describe(t))
	}
	return p.asPredicate(n)
}

func (p *parser) parseOr() (node, error) {
	l, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for isKeyword(p.peek(), "OR") {
		p.next()
		r, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		if l, err = p.logic(false, l, r); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (p *parser) parseAnd() (node, error) {
	l, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for isKeyword(p.peek(), "AND") {
		p.next()
		r, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		if l, err = p.logic(true, l, r); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (p *parser) logic(and bool, l, r node) (node, error) {
	if _, err := p.asPredicate(l); err != nil {
		return nil, err
	}
	if _, err := p.asPredicate(r); err != nil {
		return nil, err
	}
	return &logicNode{srcSpan: srcSpan{l.span().start, r.span().end}, and: and, l: l, r: r}, nil
}

func (p *parser) parseNot() (node, error) {
	t := p.peek()
	if !isKeyword(t, "NOT") {
		return p.parsePredicate()
	}
	p.next()
	if err := p.enter(t); err != nil {
		return nil, err
	}
	defer p.leave()
	x, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	if x, err = p.asPredicate(x); err != nil {
		return nil, err
	}
	return &notNode{srcSpan: srcSpan{t.pos, x.span().end}, x: x}, nil
}

func (p *parser) parsePredicate() (node, error) {
	if t := p.peek(); isKeyword(t, "EXISTS") {
		return p.parseExists()
	}
	x, err := p.parseSum()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	not := false
	if isKeyword(t, "NOT") && (isKeyword(p.peekAt(1), "LIKE") || isKeyword(p.peekAt(1), "IN")) {
		not = true
		p.next()
		t = p.peek()
	}
	switch {
	case t.kind == tokOp && !not:
		op, ok := cmpOpOf(t.text)
		if !ok {
			return x, nil
		}
		p.next()
		r, err := p.parseSum()
		if err != nil {
			return nil, err
		}
		if x, err = p.asValue(x); err != nil {
			return nil, err
		}
		if r, err = p.asValue(r); err != nil {
			return nil, err
		}
		return &cmpNode{srcSpan: srcSpan{x.span().start, r.span().end}, op: op, opPos: t.pos, l: x, r: r}, nil
	case isKeyword(t, "LIKE"):
		return p.parseLike(x, not, t)
	case isKeyword(t, "IN"):
		return p.parseIn(x, not, t)
	case isKeyword(t, "IS") && !not:
		p.next()
		neg := false
		if isKeyword(p.peek(), "NOT") {
			p.next()
			neg = true
		}
		end := p.peek()
		if !isKeyword(end, "NULL") {
			return nil, p.errAt(end, "expected NULL after IS, found %s", describe(end))
		}
		p.next()
		if x, err = p.asValue(x); err != nil {
			return nil, err
		}
		return &isNullNode{srcSpan: srcSpan{x.span().start, end.end}, not: neg, x: x}, nil
	}
	return x, nil
}

func cmpOpOf(s string) (cmpOp, bool) {
	switch s {
	case "=":
		return opEq, true
	case "<>", "!=":
		return opNe, true
	case "<":
		return opLt, true
	case "<=":
		return opLe, true
	case ">":
		return opGt, true
	case ">=":
		return opGe, true
	}
	return 0, false
}

func (p *parser) parseLike(x node, not bool, kw token) (node, error) {
	p.next()
	x, err := p.asValue(x)
	if err != nil {
		return nil, err
	}
	n := &likeNode{not: not, opPos: kw.pos, x: x}
	if n.pattern, err = p.parseValue(); err != nil {
		return nil, err
	}
	end := n.pattern.span().end
	if isKeyword(p.peek(), "ESCAPE") {
		p.next()
		if n.esc, err = p.parseValue(); err != nil {
			return nil, err
		}
		end = n.esc.span().end
	}
	n.srcSpan = srcSpan{x.span().start, end}
	if err := p.compileFixedLike(n); err != nil {
		return nil, err
	}
	return n, nil
}

// compileFixedLike compiles the pattern of n when it and the escape are
// string constants (literals or parameters), checking them once here
// instead of at each evaluation.
func (p *parser) compileFixedLike(n *likeNode) error {
	pat, ok := constValue(n.pattern)
	if !ok || pat.k != kindString {
		return nil
	}
	esc := ""
	if n.esc != nil {
		e, ok := constValue(n.esc)
		if !ok || e.k != kindString {
			return nil
		}
		if utf8.RuneCountInString(e.s) != 1 {
			return p.errNode(n.esc, "ESCAPE must be a string of exactly one character")
		}
		esc = e.s
	}
	lp, err := compileLike(pat.s, esc)
	if err != nil {
		return p.errNode(n.pattern, "%v", err)
	}
	n.fixed = &lp
	return nil
}

// constValue returns the value of a literal or parameter node.
func constValue(n node) (value, bool) {
	switch n := n.(type) {
	case *constNode:
		return n.v, true
	case *paramNode:
		return n.v, true
	}
	return value{}, false
}

// constValues returns the values of nodes when all are literals or
// parameters, else nil.
func constValues(nodes []node) []value {
	vals := make([]value, len(nodes))
	for i, n := range nodes {
		v, ok := constValue(n)
		if !ok {
			return nil
		}
		vals[i] = v
	}
	return vals
}

func (p *parser) parseIn(x node, not bool, kw token) (node, error) {
	p.next()
	x, err := p.asValue(x)
	if err != nil {
		return nil, err
	}
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	n := &inNode{not: not, opPos: kw.pos, x: x}
	for {
		item, err := p.parseValue()
		if err != nil {
			return nil, err
		}
		n.list = append(n.list, item)
		t := p.next()
		if isOp(t, ")") {
			n.srcSpan = srcSpan{x.span().start, t.end}
			n.fixed = constValues(n.list)
			return n, nil
		}
		if !isOp(t, ",") {
			return nil, p.errAt(t, "expected ',' or ')' in the IN list, found %s", describe(t))
		}
	}
}

func (p *parser) parseExists() (node, error) {
	kw := p.next()
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	prop, err := p.parseProperty()
	if err != nil {
		return nil, err
	}
	end, err := p.expectOp(")")
	if err != nil {
		return nil, err
	}
	return &existsNode{srcSpan: srcSpan{kw.pos, end.end}, prop: prop}, nil
}

// parseValue parses a sum that must be a value, not a condition.
func (p *parser) parseValue() (node, error) {
	n, err := p.parseSum()
	if err != nil {
		return nil, err
	}
	return p.asValue(n)
}

func (p *parser) parseSum() (node, error) {
	return p.parseBinary(p.parseProduct, "+-")
}

func (p *parser) parseProduct() (node, error) {
	return p.parseBinary(p.parseUnary, "*/%")
}

// parseBinary parses a left-associative chain of operand separated by any of
// the one-character operators in ops.
func (p *parser) parseBinary(operand func() (node, error), ops string) (node, error) {
	l, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tokOp || len(t.text) != 1 || !strings.Contains(ops, t.text) {
			return l, nil
		}
		p.next()
		r, err := operand()
		if err != nil {
			return nil, err
		}
		if l, err = p.asValue(l); err != nil {
			return nil, err
		}
		if r, err = p.asValue(r); err != nil {
			return nil, err
		}
		l = &arithNode{srcSpan: srcSpan{l.span().start, r.span().end}, op: t.text[0], opPos: t.pos, l: l, r: r}
	}
}

func (p *parser) parseUnary() (node, error) {
	t := p.peek()
	if !isOp(t, "-") && !isOp(t, "+") {
		return p.parsePrimary()
	}
	p.next()
	// Fold a sign into a number literal right after it, so that
	// -9223372036854775808 is a valid int64.
	if lit := p.peek(); lit.kind == tokInt || lit.kind == tokFloat {
		p.next()
		return p.number(lit, t)
	}
	if err := p.enter(t); err != nil {
		return nil, err
	}
	defer p.leave()
	x, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	if x, err = p.asValue(x); err != nil {
		return nil, err
	}
	return &unaryNode{srcSpan: srcSpan{t.pos, x.span().end}, op: t.text[0], opPos: t.pos, x: x}, nil
}

// number converts a number literal, with an optional sign token before it
// (sign.kind is tokEOF when there is none).
func (p *parser) number(lit, sign token) (node, error) {
	start, text := lit.pos, lit.text
	if sign.kind == tokOp {
		start = sign.pos
		if sign.text == "-" {
			text = "-" + text
		}
	}
	sp := srcSpan{start, lit.end}
	if lit.kind == tokInt {
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, &SyntaxError{Pos: start, Token: p.src[start:lit.end], Msg: "integer out of the int64 range"}
		}
		return &constNode{srcSpan: sp, v: intValue(i)}, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && (f > 1 || f < -1) { // overflow; underflow rounds to 0
		return nil, &SyntaxError{Pos: start, Token: p.src[start:lit.end], Msg: "number out of the float64 range"}
	}
	return &constNode{srcSpan: sp, v: floatValue(f)}, nil
}

func (p *parser) parsePrimary() (node, error) {
	t := p.peek()
	switch t.kind {
	case tokEOF:
		return nil, p.errAt(t, "expected a value, found end of expression")
	case tokInt, tokFloat:
		p.next()
		return p.number(t, token{})
	case tokString:
		p.next()
		return &constNode{srcSpan: srcSpan{t.pos, t.end}, v: stringValue(t.text)}, nil
	case tokParam:
		p.next()
		return p.param(t)
	case tokDelim:
		return p.parseProperty()
	case tokOp:
		if t.text != "(" {
			return nil, p.errAt(t, "expected a value, found %s", describe(t))
		}
		p.next()
		if err := p.enter(t); err != nil {
			return nil, err
		}
		defer p.leave()
		n, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return n, nil
	}
	// tokIdent: a keyword literal, a function call or a property.
	switch {
	case isKeyword(t, "NULL"):
		p.next()
		return &constNode{srcSpan: srcSpan{t.pos, t.end}}, nil
	case isKeyword(t, "TRUE"), isKeyword(t, "FALSE"):
		p.next()
		return &constNode{srcSpan: srcSpan{t.pos, t.end}, v: boolValue(isKeyword(t, "TRUE"))}, nil
	case isOp(p.peekAt(1), "("):
		return p.parseFunction()
	}
	return p.parseProperty()
}

// param binds @name to its value from the parameter map: the key "@name"
// first, then "name", then either spelling case-insensitively. A missing
// parameter or one of an unsupported type is a *ParameterError.
func (p *parser) param(t token) (node, error) {
	v, ok := p.params["@"+t.text]
	if !ok {
		v, ok = p.params[t.text]
	}
	if !ok {
		found := ""
		for k, kv := range p.params {
			if strings.EqualFold(strings.TrimPrefix(k, "@"), t.text) && (found == "" || k < found) {
				found, v, ok = k, kv, true
			}
		}
	}
	if !ok {
		return nil, &ParameterError{Pos: t.pos, Name: t.text, Msg: "not given"}
	}
	if !supportedParam(v) {
		return nil, &ParameterError{Pos: t.pos, Name: t.text, Msg: fmt.Sprintf("unsupported type %T", v)}
	}
	return &paramNode{srcSpan: srcSpan{t.pos, t.end}, name: t.text, v: fromAny(v)}, nil
}

func (p *parser) parseFunction() (node, error) {
	name := p.next()
	p.next() // '('
	switch {
	case strings.EqualFold(name.text, "newid"):
		end, err := p.expectOp(")")
		if err != nil {
			return nil, err
		}
		return &newIDFunc{srcSpan{name.pos, end.end}}, nil
	case strings.EqualFold(name.text, "property"), strings.EqualFold(name.text, "p"):
		if err := p.enter(name); err != nil {
			return nil, err
		}
		defer p.leave()
		arg, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if arg, err = p.asValue(arg); err != nil {
			return nil, err
		}
		end, err := p.expectOp(")")
		if err != nil {
			return nil, err
		}
		return &propertyFunc{srcSpan: srcSpan{name.pos, end.end}, nameEnd: name.end, arg: arg}, nil
	}
	return nil, p.errAt(name, "unknown function %s() (known: newid, property, p)", name.text)
}

// parseProperty parses [sys. | user.] name, where name is a regular,
// [delimited] or "quoted" identifier. After a scope any regular identifier
// is a name, reserved words included.
func (p *parser) parseProperty() (node, error) {
	t := p.next()
	scope := ""
	if t.kind == tokIdent && isOp(p.peek(), ".") &&
		(strings.EqualFold(t.text, "sys") || strings.EqualFold(t.text, "user")) {
		scope = strings.ToLower(t.text)
		p.next()
		name := p.next()
		if name.kind != tokIdent && name.kind != tokDelim {
			return nil, p.errAt(name, "expected a property name after %s., found %s", t.text, describe(name))
		}
		sp := srcSpan{t.pos, name.end}
		if scope == "user" {
			return &userNode{srcSpan: sp, name: name.text}, nil
		}
		sys, ok := lookupSysProp(name.text)
		if !ok {
			return nil, p.errAt(name, "unknown system property sys.%s", name.text)
		}
		return &sysNode{srcSpan: sp, p: sys}, nil
	}
	switch {
	case t.kind == tokDelim:
		return &userNode{srcSpan: srcSpan{t.pos, t.end}, name: t.text}, nil
	case t.kind == tokIdent && isOp(p.peek(), "."):
		return nil, p.errAt(t, "unknown scope %s (use sys. or user.)", t.text)
	case t.kind == tokIdent && isReserved(t.text):
		return nil, p.errAt(t, "unexpected keyword %s (a property with this name must be written [%s])", strings.ToUpper(t.text), t.text)
	case t.kind == tokIdent:
		return &userNode{srcSpan: srcSpan{t.pos, t.end}, name: t.text}, nil
	}
	return nil, p.errAt(t, "expected a property name, found %s", describe(t))
}
