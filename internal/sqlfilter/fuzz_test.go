package sqlfilter

import (
	"errors"
	"strings"
	"testing"
)

// The fuzz targets check, for any input: no panic; errors are the
// documented types and point inside the text; a filter that compiles keeps
// its source in String() and round-trips through its canonical form
// (printing the tree and parsing that gives the same text and the same
// results), and NOT of it gives the opposite truth (Unknown stays). Seeds are every expression of the tables; crashers found by
// fuzzing stay under testdata/fuzz and as named rows in regression_test.go.

func FuzzParseFilter(f *testing.F) {
	for _, c := range filterCases() {
		f.Add(c.expr)
	}
	for _, c := range regressionFilterCases() {
		f.Add(c.expr)
	}
	params := testParams()
	msgs := testMessages()
	f.Fuzz(func(t *testing.T, expr string) {
		flt, err := ParseFilter(expr, params)
		if err != nil {
			checkSyntaxError(t, expr, err)
			return
		}
		if flt.String() != expr {
			t.Fatalf("String() = %q, want %q", flt.String(), expr)
		}
		canon := formatNode(flt.root)
		root2, err := parseFilter(canon, params, true)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, expr, err)
		}
		if again := formatNode(root2); again != canon {
			t.Fatalf("canonical form is not stable:\n%q\n%q\n(from %q)", canon, again, expr)
		}
		flt2 := &Filter{src: canon, root: root2}
		negated := &Filter{src: expr, root: &notNode{srcSpan: flt.root.span(), x: flt.root}}
		random := strings.Contains(canon, "newid()")
		for name, m := range msgs {
			got, err := flt.Eval(m)
			checkEvalError(t, expr, err)
			if random {
				continue
			}
			got2, err2 := flt2.Eval(m)
			if got != got2 || (err == nil) != (err2 == nil) {
				t.Fatalf("%q and its canonical form %q differ on %s: %v %v / %v %v", expr, canon, name, got, err, got2, err2)
			}
			if neg, errNeg := negated.Eval(m); err == nil && (errNeg != nil || neg != not3(got)) {
				t.Fatalf("NOT (%q) on %s is %v %v, want %v", expr, name, neg, errNeg, not3(got))
			}
		}
	})
}

func FuzzParseAction(f *testing.F) {
	for _, c := range actionCases() {
		f.Add(c.expr)
	}
	for _, c := range filterCases() {
		f.Add("SET x = " + c.expr)
	}
	for _, c := range regressionActionCases() {
		f.Add(c.expr)
	}
	params := testParams()
	msgs := testMessages()
	f.Fuzz(func(t *testing.T, expr string) {
		a, err := ParseAction(expr, params)
		if err != nil {
			checkSyntaxError(t, expr, err)
			return
		}
		if a.String() != expr {
			t.Fatalf("String() = %q, want %q", a.String(), expr)
		}
		canon := formatStatements(a.stmts)
		stmts2, err := parseAction(canon, params, true)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, expr, err)
		}
		if again := formatStatements(stmts2); again != canon {
			t.Fatalf("canonical form is not stable:\n%q\n%q\n(from %q)", canon, again, expr)
		}
		for _, m := range msgs {
			checkEvalError(t, expr, a.Apply(cloneMessage(m)))
		}
	})
}

// checkSyntaxError fails unless err is a *SyntaxError whose Token is the
// text at Pos, or a *ParameterError whose Pos is that of "@Name".
func checkSyntaxError(t *testing.T, expr string, err error) {
	t.Helper()
	var pe *ParameterError
	if errors.As(err, &pe) {
		if !errors.Is(err, ErrParameter) || errors.Is(err, ErrSyntax) {
			t.Fatalf("%q: error %v (%T) wraps the wrong sentinel", expr, err, err)
		}
		if pe.Pos < 0 || pe.Pos > len(expr) || !strings.HasPrefix(expr[pe.Pos:], "@"+pe.Name) {
			t.Fatalf("%q: Pos %d / Name %q do not point into the expression", expr, pe.Pos, pe.Name)
		}
		return
	}
	var se *SyntaxError
	if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
		t.Fatalf("%q: error %v (%T) is not a *SyntaxError", expr, err, err)
	}
	if se.Pos < 0 || se.Pos > len(expr) || !strings.HasPrefix(expr[se.Pos:], se.Token) {
		t.Fatalf("%q: Pos %d / Token %q do not point into the expression", expr, se.Pos, se.Token)
	}
}

// checkEvalError fails unless err is nil or an *EvalError whose Token is the
// text at Pos.
func checkEvalError(t *testing.T, expr string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ee *EvalError
	if !errors.As(err, &ee) || !errors.Is(err, ErrEval) {
		t.Fatalf("%q: error %v (%T) is not an *EvalError", expr, err, err)
	}
	if ee.Pos < 0 || ee.Pos > len(expr) || !strings.HasPrefix(expr[ee.Pos:], ee.Token) {
		t.Fatalf("%q: Pos %d / Token %q do not point into the expression", expr, ee.Pos, ee.Token)
	}
}
