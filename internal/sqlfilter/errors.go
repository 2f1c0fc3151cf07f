package sqlfilter

import (
	"errors"
	"fmt"
)

// Sentinel errors, grouped by when they happen. Every error that
// [ParseFilter], [ParseAction], [Filter.Match], [Filter.Eval] and
// [Action.Apply] return wraps exactly one of them, so callers can test with
// [errors.Is] and read the details with [errors.As]. ([NewCorrelation]
// returns plain errors: it compiles no expression.)
var (
	// When an expression is compiled ([ParseFilter], [ParseAction]):

	// ErrSyntax is wrapped by every *[SyntaxError]. It is returned when the
	// text is not valid: bad tokens, bad grammar, an unknown function or
	// sys. property, a read-only sys. property as an action target, an
	// integer literal out of range, too long or too deeply nested text.
	ErrSyntax = errors.New("sqlfilter: syntax error")

	// ErrParameter is wrapped by every *[ParameterError]. It is returned
	// when the text is valid but an @parameter it uses is not in the
	// parameter map, or has a type the language has no values of ([]byte,
	// a struct, a slice, ...).
	ErrParameter = errors.New("sqlfilter: bad parameter")

	// When a compiled expression is run ([Filter.Match], [Filter.Eval],
	// [Action.Apply]):

	// ErrEval is wrapped by every *[EvalError]. It is returned when an
	// operator meets operands it is not defined for: comparing a string
	// with a number, LIKE on a number, integer division by zero, storing a
	// []byte with SET, and so on.
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

// Error returns "syntax error at offset N near "tok": msg", without the
// package's name: the caller says what the expression was ("SQL filter:",
// "SQL action:").
func (e *SyntaxError) Error() string {
	if e.Token == "" {
		return fmt.Sprintf("syntax error at offset %d: %s", e.Pos, e.Msg)
	}
	return fmt.Sprintf("syntax error at offset %d near %q: %s", e.Pos, e.Token, e.Msg)
}

// Unwrap returns [ErrSyntax].
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// ParameterError reports an @parameter that an expression uses but the
// parameters given to [ParseFilter] or [ParseAction] cannot supply. It wraps
// [ErrParameter].
type ParameterError struct {
	// Pos is the byte offset of the parameter ("@name") in the expression.
	Pos int
	// Name is the parameter's name as written, without the '@'.
	Name string
	// Msg says what is wrong, in lower case without a trailing period:
	// "not given", or "unsupported type T" for a value of Go type T.
	Msg string
}

// Error returns "parameter @name at offset N: msg", without the package's
// name, as [SyntaxError.Error].
func (e *ParameterError) Error() string {
	return fmt.Sprintf("parameter @%s at offset %d: %s", e.Name, e.Pos, e.Msg)
}

// Unwrap returns [ErrParameter].
func (e *ParameterError) Unwrap() error { return ErrParameter }

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

// Error returns "evaluation error at offset N near "tok": msg", without the
// package's name, as [SyntaxError.Error].
func (e *EvalError) Error() string {
	return fmt.Sprintf("evaluation error at offset %d near %q: %s", e.Pos, e.Token, e.Msg)
}

// Unwrap returns [ErrEval].
func (e *EvalError) Unwrap() error { return ErrEval }
