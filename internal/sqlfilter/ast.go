package sqlfilter

import (
	"strconv"
	"strings"
)

// The parser builds a tree of nodes; eval.go runs it and format prints it
// back in a canonical form (used by tests to check that printing and parsing
// agree).

// Binding strength of each node, weakest first. A child printed where a
// stronger binding is needed gets parentheses.
const (
	precOr = iota + 1
	precAnd
	precNot
	precPredicate // comparison, LIKE, IN, IS NULL
	precAdd
	precMul
	precUnary
	precPrimary
)

// node is one compiled sub-expression.
type node interface {
	// eval computes the node for m. Predicates give a bool, or NULL for
	// Unknown. m is never nil.
	eval(m *Message) (value, error)
	// span is the node's source text as byte offsets [start, end).
	span() srcSpan
	// prec is the node's binding strength (precOr..precPrimary).
	prec() int
	// format appends the canonical text of the node to b.
	format(b *strings.Builder)
}

// srcSpan is a byte range [start, end) of the source.
type srcSpan struct{ start, end int }

func (s srcSpan) span() srcSpan { return s }

type (
	// constNode is a literal.
	constNode struct {
		srcSpan
		v value
	}
	// paramNode is @name, bound when the expression was parsed.
	paramNode struct {
		srcSpan
		name string // as written, without '@'
		v    value
	}
	// userNode is a user property: user.name or a bare name.
	userNode struct {
		srcSpan
		name string
	}
	// sysNode is a system property: sys.name.
	sysNode struct {
		srcSpan
		p sysProp
	}
	// propertyFunc is property(expr) or p(expr): a user property by
	// computed name.
	propertyFunc struct {
		srcSpan
		nameEnd int // end of the function name, for errors
		arg     node
	}
	// newIDFunc is newid(): a new random GUID string each time.
	newIDFunc struct{ srcSpan }
	// unaryNode is +x or -x.
	unaryNode struct {
		srcSpan
		op    byte
		opPos int
		x     node
	}
	// arithNode is l op r with op one of + - * / %.
	arithNode struct {
		srcSpan
		op    byte
		opPos int
		l, r  node
	}
	// cmpNode is l op r with a comparison operator.
	cmpNode struct {
		srcSpan
		op    cmpOp
		opPos int
		l, r  node
	}
	// logicNode is l AND r or l OR r.
	logicNode struct {
		srcSpan
		and  bool
		l, r node
	}
	// notNode is NOT x.
	notNode struct {
		srcSpan
		x node
	}
	// likeNode is x [NOT] LIKE pattern [ESCAPE esc].
	likeNode struct {
		srcSpan
		not     bool
		opPos   int
		x       node
		pattern node
		esc     node         // nil without ESCAPE
		fixed   *likePattern // compiled when pattern and esc are constants
	}
	// inNode is x [NOT] IN (list).
	inNode struct {
		srcSpan
		not   bool
		opPos int
		x     node
		list  []node
		fixed []value // the item values when all items are constants
	}
	// isNullNode is x IS [NOT] NULL.
	isNullNode struct {
		srcSpan
		not bool
		x   node
	}
	// existsNode is EXISTS(property).
	existsNode struct {
		srcSpan
		prop node // *userNode or *sysNode
	}
)

func (*constNode) prec() int    { return precPrimary }
func (*paramNode) prec() int    { return precPrimary }
func (*userNode) prec() int     { return precPrimary }
func (*sysNode) prec() int      { return precPrimary }
func (*propertyFunc) prec() int { return precPrimary }
func (*newIDFunc) prec() int    { return precPrimary }
func (*unaryNode) prec() int    { return precUnary }
func (*cmpNode) prec() int      { return precPredicate }
func (*notNode) prec() int      { return precNot }
func (*likeNode) prec() int     { return precPredicate }
func (*inNode) prec() int       { return precPredicate }
func (*isNullNode) prec() int   { return precPredicate }
func (*existsNode) prec() int   { return precPrimary }

func (n *arithNode) prec() int {
	if n.op == '+' || n.op == '-' {
		return precAdd
	}
	return precMul
}

func (n *logicNode) prec() int {
	if n.and {
		return precAnd
	}
	return precOr
}

// isPredicate reports whether n yields a truth value by construction.
func isPredicate(n node) bool {
	switch n.(type) {
	case *cmpNode, *logicNode, *notNode, *likeNode, *inNode, *isNullNode, *existsNode:
		return true
	}
	return false
}

// mayBeBool reports whether a value node may evaluate to a bool or NULL, so
// that it can stand where a predicate is expected (flag AND x = 1).
func mayBeBool(n node) bool {
	switch n := n.(type) {
	case *constNode:
		return n.v.k == kindBool || n.v.k == kindNull
	case *paramNode:
		return n.v.k == kindBool || n.v.k == kindNull
	case *userNode, *propertyFunc:
		return true
	}
	return false
}

// formatChild prints n, in parentheses when it binds weaker than min.
func formatChild(b *strings.Builder, n node, min int) {
	if n.prec() < min {
		b.WriteByte('(')
		n.format(b)
		b.WriteByte(')')
		return
	}
	n.format(b)
}

func (n *constNode) format(b *strings.Builder) { formatValue(b, n.v) }

// formatValue prints a literal so that the lexer reads it back as the same
// value and kind.
func formatValue(b *strings.Builder, v value) {
	switch v.k {
	case kindInt:
		b.WriteString(strconv.FormatInt(v.i, 10))
	case kindFloat:
		s := strconv.FormatFloat(v.f64(), 'g', -1, 64)
		b.WriteString(s)
		if !strings.ContainsAny(s, ".eIN") { // keep it a float: 2 -> 2.0
			b.WriteString(".0")
		}
	case kindString:
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(v.s, "'", "''"))
		b.WriteByte('\'')
	case kindBool:
		if v.i != 0 {
			b.WriteString("TRUE")
		} else {
			b.WriteString("FALSE")
		}
	default:
		b.WriteString("NULL")
	}
}

func (n *paramNode) format(b *strings.Builder) {
	b.WriteByte('@')
	b.WriteString(n.name)
}

func (n *userNode) format(b *strings.Builder) { formatName(b, n.name) }

// formatName prints a property name bare when it is a regular identifier,
// else as a [delimited identifier].
func formatName(b *strings.Builder, name string) {
	if isRegularIdent(name) {
		b.WriteString(name)
		return
	}
	b.WriteByte('[')
	b.WriteString(strings.ReplaceAll(name, "]", "]]"))
	b.WriteByte(']')
}

func (n *sysNode) format(b *strings.Builder) {
	b.WriteString("sys.")
	b.WriteString(n.p.name())
}

func (n *propertyFunc) format(b *strings.Builder) {
	b.WriteString("property(")
	n.arg.format(b)
	b.WriteByte(')')
}

func (n *newIDFunc) format(b *strings.Builder) { b.WriteString("newid()") }

func (n *unaryNode) format(b *strings.Builder) {
	b.WriteByte(n.op)
	var sub strings.Builder
	formatChild(&sub, n.x, precUnary)
	switch s := sub.String(); {
	case s[0] == '-' || s[0] == '+':
		b.WriteByte(' ') // "- -5", not "--5"
		b.WriteString(s)
	case s[0] >= '0' && s[0] <= '9':
		// "-(5)": "-5" would parse as the literal -5, with no unary node.
		b.WriteByte('(')
		b.WriteString(s)
		b.WriteByte(')')
	default:
		b.WriteString(s)
	}
}

func (n *arithNode) format(b *strings.Builder) {
	p := n.prec()
	formatChild(b, n.l, p)
	b.WriteByte(' ')
	b.WriteByte(n.op)
	b.WriteByte(' ')
	formatChild(b, n.r, p+1)
}

func (n *cmpNode) format(b *strings.Builder) {
	formatChild(b, n.l, precAdd)
	b.WriteByte(' ')
	b.WriteString(n.op.String())
	b.WriteByte(' ')
	formatChild(b, n.r, precAdd)
}

func (n *logicNode) format(b *strings.Builder) {
	p := n.prec()
	formatChild(b, n.l, p)
	if n.and {
		b.WriteString(" AND ")
	} else {
		b.WriteString(" OR ")
	}
	formatChild(b, n.r, p+1)
}

func (n *notNode) format(b *strings.Builder) {
	b.WriteString("NOT ")
	formatChild(b, n.x, precNot)
}

func (n *likeNode) format(b *strings.Builder) {
	formatChild(b, n.x, precAdd)
	if n.not {
		b.WriteString(" NOT")
	}
	b.WriteString(" LIKE ")
	formatChild(b, n.pattern, precAdd)
	if n.esc != nil {
		b.WriteString(" ESCAPE ")
		formatChild(b, n.esc, precAdd)
	}
}

func (n *inNode) format(b *strings.Builder) {
	formatChild(b, n.x, precAdd)
	if n.not {
		b.WriteString(" NOT")
	}
	b.WriteString(" IN (")
	for i, item := range n.list {
		if i > 0 {
			b.WriteString(", ")
		}
		formatChild(b, item, precAdd)
	}
	b.WriteByte(')')
}

func (n *isNullNode) format(b *strings.Builder) {
	formatChild(b, n.x, precAdd)
	if n.not {
		b.WriteString(" IS NOT NULL")
	} else {
		b.WriteString(" IS NULL")
	}
}

func (n *existsNode) format(b *strings.Builder) {
	b.WriteString("EXISTS(")
	n.prop.format(b)
	b.WriteByte(')')
}

// formatNode returns the canonical text of n.
func formatNode(n node) string {
	var b strings.Builder
	n.format(&b)
	return b.String()
}
