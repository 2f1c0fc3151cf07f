package sqlfilter

import (
	"errors"
	"fmt"
)

// Sentinel errors, grouped by when they happen. Every error this package
// returns wraps exactly one of them, so callers can test with [errors.Is] and
// read the details with [errors.As].
var (
	// ErrSyntax is wrapped by every *[SyntaxError]. It is returned when an
	// expression is compiled ([ParseFilter], [ParseAction]) and the text is
	// not valid: bad tokens, bad grammar, an unknown function or sys.
	// property, a read-only sys. property as an action target, a missing or
	// unsupported @parameter, too long or too deeply nested text.
	ErrSyntax = errors.New("sqlfilter: syntax error")

	// ErrEval is wrapped by every *[EvalError]. It is returned when a
	// compiled expression is run ([Filter.Match], [Filter.Eval],
	// [Action.Apply]) and an operator meets operands it is not defined for:
	// comparing a string with a number, LIKE on a number, integer division by
	// zero, storing a []byte with SET, and so on.
	ErrEval = errors.New("sqlfilter: evaluation error")
)

// SyntaxError reports an expression that cannot be compiled. It wraps
// [ErrSyntax].
type SyntaxError struct {
	// Pos is the byte offset of the offending token in the expression;
	// len(expression) when the expression ended too early.
	Pos int
	// Token is the offending token as written, "" at the end of the
	// expression.
	Token string
	// Msg says what is wrong, in lower case without a trailing period.
	Msg string
}

// Error returns "sqlfilter: syntax error at offset N near "tok": msg".
func (e *SyntaxError) Error() string {
	if e.Token == "" {
		return fmt.Sprintf("sqlfilter: syntax error at offset %d: %s", e.Pos, e.Msg)
	}
	return fmt.Sprintf("sqlfilter: syntax error at offset %d near %q: %s", e.Pos, e.Token, e.Msg)
}

// Unwrap returns [ErrSyntax].
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// EvalError reports an expression that compiled but failed while it ran
// against one message. It wraps [ErrEval].
type EvalError struct {
	// Pos is the byte offset in the expression of the operator, function or
	// operand that failed.
	Pos int
	// Token is the source text at Pos: the operator, the function name or
	// the operand.
	Token string
	// Msg says what is wrong, in lower case without a trailing period.
	Msg string

	end int // end of the failing source text, for filling Token
}

// Error returns "sqlfilter: evaluation error at offset N near "tok": msg".
func (e *EvalError) Error() string {
	return fmt.Sprintf("sqlfilter: evaluation error at offset %d near %q: %s", e.Pos, e.Token, e.Msg)
}

// Unwrap returns [ErrEval].
func (e *EvalError) Unwrap() error { return ErrEval }
