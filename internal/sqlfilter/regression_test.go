package sqlfilter

import (
	"strings"
	"testing"
)

// Regression cases: inputs that once broke an invariant, each named after
// what went wrong. Inputs found by fuzzing also stay in testdata/fuzz/ under
// the target's name.

func regressionFilterCases() []filterCase {
	return []filterCase{
		// Found by review: a sign folded into a literal prints like a unary
		// minus over a literal; both must parse to the same value.
		ok("sign over parenthesized literal", "empty", "-(5) = -5 AND - -5 = 5 AND -(-5) = 5", True),
		// FuzzParseFilter/76fa88855f8031ec: the canonical form of a minus
		// over the literal -0 printed as "-0", which parses as the literal 0.
		ok("minus over folded literal (fuzz 76fa88855f8031ec)", "empty", "--0=0", True),
		// Found by review: nested function calls were not counted as
		// nesting, so p(p(p(...))) recursed without bound.
		ok("p() nested 256 deep", "empty", strings.Repeat("p(", 256)+"'x'"+strings.Repeat(")", 256)+" IS NULL", True),
		syntaxErr("p() nested 257 deep", strings.Repeat("p(", 257)+"'x'"+strings.Repeat(")", 257)+" IS NULL", 512, "p"),
	}
}

// regressionActionCases is empty: FuzzParseAction has found nothing yet.
func regressionActionCases() []actionCase {
	return []actionCase{}
}

func TestRegressionFilters(t *testing.T) {
	t.Parallel()
	for _, c := range regressionFilterCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runFilterCase(t, c)
		})
	}
}

func TestRegressionActions(t *testing.T) {
	t.Parallel()
	for _, c := range regressionActionCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runActionCase(t, c)
		})
	}
}
