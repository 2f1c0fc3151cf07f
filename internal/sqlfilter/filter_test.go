package sqlfilter

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// filterCase is one row of the filter table: an expression run against one
// of testMessages with testParams. Exactly one outcome is expected: a Truth
// (err nil), ErrSyntax, ErrParameter or ErrEval. For errors, pos and tok
// (when tok is not "-") give the expected Pos and Token (for ErrParameter:
// Pos and Name).
type filterCase struct {
	name string
	msg  string
	expr string
	want Truth
	err  error
	pos  int
	tok  string
}

// ok, syntaxErr and evalErrCase build rows. For syntax errors tok is a
// prefix of the expected Token ("" expects no token).
func ok(name, msg, expr string, want Truth) filterCase {
	return filterCase{name: name, msg: msg, expr: expr, want: want}
}

func syntaxErr(name, expr string, pos int, tok string) filterCase {
	return filterCase{name: name, msg: "order", expr: expr, err: ErrSyntax, pos: pos, tok: tok}
}

func paramErr(name, expr string, pos int, param string) filterCase {
	return filterCase{name: name, msg: "order", expr: expr, err: ErrParameter, pos: pos, tok: param}
}

func evalErrCase(name, msg, expr string, pos int, tok string) filterCase {
	return filterCase{name: name, msg: msg, expr: expr, err: ErrEval, pos: pos, tok: tok}
}

// microsoftFilterCases are every example expression of the Microsoft pages,
// each run where it is meant to match and, for some, where it is not.
func microsoftFilterCases() []filterCase {
	return []filterCase{
		// learn.microsoft.com/azure/service-bus-messaging/service-bus-messaging-sql-filter,
		// section Examples.
		ok("sql-filter: parameter", "order", "source = @stringParam", True),
		ok("sql-filter: sys.Label LIKE", "order", "sys.Label LIKE '%bus%'", True),
		ok("sql-filter: OR with IN", "order", "sys.Label LIKE '%bus%' OR user.tag IN ('queue', 'topic', 'subscription')", True),
		ok("sql-filter: OR with IN, all missing", "empty", "sys.Label LIKE '%bus%' OR user.tag IN ('queue', 'topic', 'subscription')", Unknown),
		ok("sql-filter: IN without space", "order", "StoreId IN('Store1', 'Store2', 'Store3')", False),
		ok("sql-filter: sys.To IN OR", "order", "sys.To IN ('Store5','Store6','Store7') OR StoreId = 'Store8'", True),
		ok("sql-filter: NOT IN OR NOT IN", "order", "sys.To NOT IN ('Store1','Store2','Store3','Store4','Store5','Store6','Store7','Store8') OR StoreId NOT IN ('Store1','Store2','Store3','Store4','Store5','Store6','Store7','Store8')", False),
		ok("sql-filter: NOT IN OR NOT IN, missing", "empty", "sys.To NOT IN ('Store1','Store2','Store3','Store4','Store5','Store6','Store7','Store8') OR StoreId NOT IN ('Store1','Store2','Store3','Store4','Store5','Store6','Store7','Store8')", Unknown),
		// Same page, escape_char section.
		ok("sql-filter: ESCAPE matches ABC%", "order", `property LIKE 'ABC\%' ESCAPE '\'`, True),
		ok("sql-filter: ESCAPE rejects ABCD", "corr", `property LIKE 'ABC\%' ESCAPE '\'`, False),
		// Same page, constant section.
		ok("sql-filter: long constants", "empty", "1894 = 1894 AND 2 = 2", True),
		ok("sql-filter: decimal constants", "empty", "1894.1204 > 1894 AND 2.0 = 2", True),
		ok("sql-filter: approximate constants", "empty", "101.5E5 = 10150000 AND 0.5E-2 = 0.005", True),
		ok("sql-filter: boolean constants", "empty", "TRUE <> FALSE", True),
		ok("sql-filter: string constant with quote", "empty", "'it''s' = 'it' + '''s'", True),
		// Same page, property_name section.
		ok("sql-filter: delimited with space", "order", "[Property With Space] = 'yes'", True),
		ok("sql-filter: delimited with dash", "order", "[HR-EmployeeID] = 7", True),
		ok("sql-filter: quoted identifier", "order", `"Contoso & Northwind" = TRUE`, True),
		// Same page, function section.
		ok("sql-filter: newid", "empty", "newid() IS NOT NULL AND newid() <> newid()", True),
		ok("sql-filter: property(name)", "order", "property('color') = 'red'", True),
		ok("sql-filter: p(expr)", "order", "p('col' + 'or') = 'red'", True),

		// learn.microsoft.com/azure/service-bus-messaging/service-bus-filter-examples,
		// "Filter on system properties".
		ok("filter-examples: sys.label lower case", "order", "sys.label LIKE '%bus%'", True),
		ok("filter-examples: sys.messageid", "order", "sys.messageid = 'xxxx'", False),
		ok("filter-examples: sys.correlationid like", "order", "sys.correlationid like 'abc-%'", True),
		// "Filter on message properties".
		ok("filter-examples: MessageProperty = 'A'", "corr", "MessageProperty = 'A'", True),
		ok("filter-examples: user.SuperHero like", "order", "user.SuperHero like 'SuperMan%'", True),
		// "Filter on message properties with special characters".
		ok("filter-examples: quoted URL name", "order", `"http://schemas.microsoft.com/xrm/2011/Claims/EntityLogicalName" = 'account'`, True),
		// "Filter on message properties with numeric values".
		ok("filter-examples: = 1", "order", "MessageProperty = 1", True),
		ok("filter-examples: > 1", "order", "MessageProperty > 1", False),
		ok("filter-examples: > 2.08", "order", "MessageProperty > 2.08", False),
		ok("filter-examples: AND", "order", "MessageProperty = 1 AND MessageProperty2 = 3", True),
		ok("filter-examples: OR", "order", "MessageProperty = 1 OR MessageProperty2 = 3", True),
		// "Parameter-based filters".
		ok("filter-examples: DateTimeMp < @dtParam", "order", "DateTimeMp < @dtParam", True),
		ok("filter-examples: DateTimeMp > @dtParam", "order", "DateTimeMp > @dtParam", False),
		ok("filter-examples: (time - time) <= @timespan", "order", "(DateTimeMp2-DateTimeMp1) <= @timespan", True),
		ok("filter-examples: time - time <= @timespan", "order", "DateTimeMp2-DateTimeMp1 <= @timespan", True),
		// "Correlation filter using system and user properties": the SQL it
		// is equivalent to.
		ok("filter-examples: correlation equivalent", "corr", "sys.ReplyTo = 'johndoe@contoso.com' AND sys.Label = 'Important' AND color = 'Red'", True),
		ok("filter-examples: correlation equivalent, no match", "order", "sys.ReplyTo = 'johndoe@contoso.com' AND sys.Label = 'Important' AND color = 'Red'", False),
		// ".NET example for creating subscription filters" (also Microsoft's
		// topic filters article).
		ok("filter-examples: TrueRuleFilter", "empty", "1=1", True),
		ok("filter-examples: FalseRuleFilter", "empty", "1=0", False),
		ok("filter-examples: blue and 10", "order", "color='blue' AND quantity=10", False),
		ok("filter-examples: red", "order", "color='red'", True),
		ok("filter-examples: user.color", "order", "user.color='red'", True),
		// learn.microsoft.com/java/api/com.azure.messaging.servicebus.administration.models.sqlrulefilter,
		// class sample.
		ok("java SqlRuleFilter sample", "corr", "sys.CorrelationId = 'email' AND sender = 'joseph' AND (importance IS NULL OR importance = 'high')", True),
	}
}

// ruleFilterCases cover each rule of the language (R3, R5).
func ruleFilterCases() []filterCase {
	return []filterCase{
		// Three-valued logic: AND (missing = 1 is Unknown).
		ok("AND T T", "order", "TRUE AND TRUE", True),
		ok("AND T F", "order", "TRUE AND FALSE", False),
		ok("AND T U", "order", "TRUE AND missing = 1", Unknown),
		ok("AND U T", "order", "missing = 1 AND TRUE", Unknown),
		ok("AND F U", "order", "FALSE AND missing = 1", False),
		ok("AND U F", "order", "missing = 1 AND FALSE", False),
		ok("AND U U", "order", "missing = 1 AND missing = 2", Unknown),
		// OR.
		ok("OR T U", "order", "TRUE OR missing = 1", True),
		ok("OR U T", "order", "missing = 1 OR TRUE", True),
		ok("OR F U", "order", "FALSE OR missing = 1", Unknown),
		ok("OR U F", "order", "missing = 1 OR FALSE", Unknown),
		ok("OR U U", "order", "missing = 1 OR missing <> 1", Unknown),
		ok("OR F F", "order", "FALSE OR FALSE", False),
		// NOT.
		ok("NOT U", "order", "NOT missing = 1", Unknown),
		ok("NOT T", "order", "NOT TRUE", False),
		ok("NOT F", "order", "NOT FALSE", True),
		ok("NOT NOT", "order", "NOT NOT color = 'red'", True),
		// NULL propagation.
		ok("missing <>", "order", "missing <> 1", Unknown),
		ok("missing arithmetic", "order", "missing + 1 = 2", Unknown),
		ok("missing LIKE", "order", "missing LIKE 'a%'", Unknown),
		ok("missing NOT LIKE", "order", "missing NOT LIKE 'a%'", Unknown),
		ok("missing IN", "order", "missing IN (1, 2)", Unknown),
		ok("missing NOT IN", "order", "missing NOT IN (1, 2)", Unknown),
		ok("IN with NULL, no match", "order", "quantity IN (1, NULL)", Unknown),
		ok("IN with NULL, match", "order", "quantity IN (10, NULL)", True),
		ok("NOT IN with NULL", "order", "quantity NOT IN (1, NULL)", Unknown),
		ok("NULL = NULL", "order", "NULL = NULL", Unknown),
		ok("NULL IS NULL", "order", "NULL IS NULL", True),
		ok("NULL before type check", "order", "color = NULL", Unknown),
		ok("IS NULL missing", "order", "missing IS NULL", True),
		ok("IS NULL nil value", "order", "nothing IS NULL", True),
		ok("IS NOT NULL", "order", "color IS NOT NULL", True),
		ok("EXISTS nil value", "order", "EXISTS(nothing)", True),
		ok("EXISTS missing", "order", "EXISTS(missing)", False),
		ok("EXISTS case-insensitive", "order", "EXISTS(COLOR)", True),
		ok("sys unset IS NULL", "order", "sys.SessionId IS NULL", True),
		ok("EXISTS sys unset", "order", "EXISTS(sys.SessionId)", False),
		ok("EXISTS sys set", "order", "EXISTS(sys.MessageId)", True),
		ok("EXISTS sys int always", "empty", "EXISTS(sys.SequenceNumber)", True),
		ok("sys zero time is NULL", "empty", "sys.EnqueuedTimeUtc IS NULL AND sys.TimeToLive IS NULL", True),
		// Numbers and promotion.
		ok("int = float", "order", "quantity = 10.0", True),
		ok("int division truncates", "order", "quantity / 4 = 2", True),
		ok("int / float promotes", "order", "quantity / 4.0 = 2.5", True),
		ok("float * int", "order", "price * 2 = 5", True),
		ok("int modulo", "order", "quantity % 3 = 1", True),
		ok("float modulo", "order", "7.5 % 2 = 1.5", True),
		ok("int64 wraps", "order", "9223372036854775807 + 1 = -9223372036854775808", True),
		ok("min int64 literal", "order", "-9223372036854775808 < 0", True),
		ok("float division by zero", "order", "1.0 / 0 > 1E308", True),
		ok("int8 widens", "order", "small = -3", True),
		ok("float32 widens", "order", "f32 = 0.5", True),
		ok("uint64 above MaxInt64 is float", "order", "big = 9223372036854775808.0", True),
		ok("unary minus", "order", "-quantity = -10 AND +quantity = 10 AND - -5 = 5", True),
		ok("precedence * over +", "order", "2 + 3 * 4 = 14", True),
		ok("parentheses", "order", "(2 + 3) * 4 = 20", True),
		ok("left associative -", "order", "10 - 2 - 3 = 5", True),
		ok("left associative /", "order", "100 / 10 / 5 = 2", True),
		ok("sys ints", "order", "sys.SequenceNumber = 42 AND sys.DeliveryCount + 1 = 2 AND sys.Size > 500 AND sys.EnqueuedSequenceNumber = 41", True),
		// Strings.
		ok("strings are case-sensitive", "order", "color = 'Red'", False),
		ok("strings order ordinally", "order", "color < 's' AND 'B' < 'a'", True),
		ok("concatenation", "order", "color + '!' = 'red!'", True),
		// Bools as values and as conditions.
		ok("bool =", "order", "flag = TRUE AND flag <> FALSE", True),
		ok("bare bool property", "order", "flag", True),
		ok("bare bool in AND", "order", "flag AND quantity = 10", True),
		ok("NOT bool property", "order", "NOT flag", False),
		ok("bool parameter", "order", "@flag", True),
		ok("TRUE alone", "empty", "TRUE", True),
		ok("NULL alone", "empty", "NULL", Unknown),
		ok("missing property as condition", "order", "missing", Unknown),
		// Times and durations.
		ok("time = time", "order", "sys.EnqueuedTimeUtc = DateTimeMp", True),
		ok("time < time", "order", "sys.EnqueuedTimeUtc < DateTimeMp2 AND sys.ExpiresAtUtc > sys.EnqueuedTimeUtc", True),
		ok("TimeToLive is a duration", "order", "sys.TimeToLive = @hour", True),
		ok("time + duration", "order", "DateTimeMp + @timespan > DateTimeMp2", True),
		// LIKE.
		ok("LIKE _", "order", "color LIKE 'r_d'", True),
		ok("LIKE __ too many", "order", "color LIKE 'r__d'", False),
		ok("LIKE % alone", "order", "color LIKE '%'", True),
		ok("NOT LIKE", "order", "color NOT LIKE 'b%'", True),
		ok("LIKE escape backslash", "order", `path LIKE 'C:\\temp\\a\_b' ESCAPE '\'`, True),
		ok("LIKE escape !", "order", "path LIKE 'C:%a!_b' ESCAPE '!'", True),
		ok("LIKE unescaped _ matches any", "order", `path LIKE 'C:\temp\a_b'`, True),
		ok("LIKE brackets are literal", "empty", "'[abc]' LIKE '[abc]' AND 'a' NOT LIKE '[abc]'", True),
		ok("LIKE unicode _", "order", "name LIKE '_nïcode' AND name LIKE 'Ü%'", True),
		ok("LIKE middle %", "order", "sys.Label LIKE 'Imp%bus%ws'", True),
		ok("LIKE dynamic pattern", "order", "color LIKE pattern", True),
		ok("LIKE parameter pattern", "order", "sys.Label LIKE @pat", True),
		ok("LIKE NULL pattern", "order", "color LIKE NULL", Unknown),
		ok("LIKE NULL escape", "order", "color LIKE 'r%' ESCAPE NULL", Unknown),
		// IN.
		ok("IN match", "order", "color IN ('blue', 'red')", True),
		ok("IN short-circuits", "order", "color IN ('red', 1)", True),
		ok("IN expressions", "order", "quantity IN (5 + 5, 1)", True),
		// Names.
		ok("delimited with ]]", "order", "[weird]]name] = 'w'", True),
		ok(`quoted with ""`, "order", `"say ""hi""" = 'q'`, True),
		ok("names case-insensitive", "order", "COLOR = 'red' AND USER.Color = 'red' AND Sys.LABEL = 'Important bus news'", True),
		ok("sys.Label is sys.Subject", "order", "sys.Label = sys.Subject", True),
		ok("sys delimited names", "order", `sys.[Label] = sys."subject"`, True),
		ok("reserved word delimited", "order", "[in] = 'reserved' AND user.in = 'reserved'", True),
		ok("exact key before case-insensitive", "order", "dup = 'lower' AND Dup = 'upper'", True),
		ok("case-insensitive picks smallest key", "order", "dUP = 'upper' AND dup2 = 'B'", True),
		ok("unicode identifier", "order", "Ünknown IS NULL", True),
		// Parameters.
		ok("parameter key without @", "order", "quantity > @min", True),
		ok("parameter case-insensitive", "order", "quantity > @MIN", True),
		ok("nil parameter", "order", "@nullp IS NULL", True),
		// Short-circuit hides errors behind it.
		ok("FALSE AND error", "order", "FALSE AND color > 5", False),
		ok("TRUE OR error", "order", "TRUE OR color > 5", True),
		ok("nesting 256 deep", "order", strings.Repeat("(", 255)+"color = 'red'"+strings.Repeat(")", 255), True),

		// Syntax errors, with where they point.
		syntaxErr("empty", "", 0, ""),
		syntaxErr("blank", "  \t ", 0, ""),
		syntaxErr("unterminated string", "color = 'red", 8, "'red"),
		syntaxErr("unterminated delimited", "[color = 'red'", 0, "[color = 'red'"),
		syntaxErr("trailing garbage", "color = 'red' extra", 14, "extra"),
		syntaxErr("unknown sys property", "sys.Foo = 1", 4, "Foo"),
		syntaxErr("unknown sys property later", "color = 'a' AND sys.Nope IS NULL", 20, "Nope"),
		syntaxErr("unknown function", "nosuch(1) = 1", 0, "nosuch"),
		syntaxErr("unknown scope", "foo.bar = 1", 0, "foo"),
		syntaxErr("int64 overflow", "quantity = 9223372036854775808", 11, "9223372036854775808"),
		syntaxErr("float overflow", "price < 1E400", 8, "1E400"),
		syntaxErr("end after operator", "color = ", 8, ""),
		syntaxErr("end after AND", "'a' = 'a' AND", 13, ""),
		syntaxErr("missing )", "(color = 'red'", 14, ""),
		syntaxErr("empty IN", "color IN ()", 10, ")"),
		syntaxErr("IS not NULL", "color IS 5", 9, "5"),
		syntaxErr("chained comparison", "a = b = c", 6, "="),
		syntaxErr("malformed number", "1abc = 1", 0, "1a"),
		syntaxErr("exponent without digits", "1E = 1", 0, "1E "),
		syntaxErr("bad character", "color ! 'x'", 6, "!"),
		syntaxErr("lone @", "@ = 1", 0, "@"),
		syntaxErr("reserved bare name", "in = 1", 0, "in"),
		syntaxErr("leading underscore", "_x = 1", 0, "_"),
		syntaxErr("NOT on a number", "NOT 5", 4, "5"),
		syntaxErr("arithmetic as condition", "quantity + 1", 0, "quantity + 1"),
		syntaxErr("string as condition", "'red'", 0, "'red'"),
		syntaxErr("sys property as condition", "sys.MessageId", 0, "sys.MessageId"),
		syntaxErr("condition as value", "(a = 1) + 2 = 3", 1, "a = 1"),
		syntaxErr("EXISTS of a literal", "EXISTS(1)", 7, "1"),
		syntaxErr("constant escape too long", "color LIKE 'r%' ESCAPE 'ab'", 23, "'ab'"),
		syntaxErr("constant pattern ends in escape", `color LIKE 'r\' ESCAPE '\'`, 11, `'r\'`),
		syntaxErr("nesting 257 deep", strings.Repeat("(", 257)+"a = 1"+strings.Repeat(")", 257), 256, "("),
		syntaxErr("NOT nesting 257 deep", strings.Repeat("NOT (", 129)+"a"+strings.Repeat(")", 129), 640, "NOT"),
		syntaxErr("longer than 1024", "color = '"+strings.Repeat("x", 1020)+"'", 1024, "x"),

		// Parameter errors, pointing at the '@'.
		paramErr("missing parameter", "color = @missing", 8, "missing"),
		paramErr("unsupported parameter type", "color = @bytes", 8, "bytes"),
		paramErr("missing parameter in IN", "color IN ('red', @nope)", 17, "nope"),
		paramErr("parameter error before a later syntax error", "@nope = = 1", 0, "nope"),
		syntaxErr("syntax error before a later parameter", "color = = @nope", 8, "="),

		// Evaluation errors (R5), pointing at the operator or operand.
		evalErrCase("string vs number", "order", "color > 5", 6, ">"),
		evalErrCase("number vs string", "corr", "MessageProperty = 1", 16, "="),
		evalErrCase("string + number", "order", "color + 1 = 2", 6, "+"),
		evalErrCase("unary minus on string", "order", "-color = 1", 0, "-"),
		evalErrCase("int division by zero", "order", "quantity / 0 = 1", 9, "/"),
		evalErrCase("int modulo by zero", "order", "quantity % 0 = 1", 9, "%"),
		evalErrCase("bool ordering", "order", "flag < TRUE", 5, "<"),
		evalErrCase("bool vs number", "order", "flag = 1", 5, "="),
		evalErrCase("string as condition at run time", "order", "color AND TRUE", 0, "color"),
		evalErrCase("LIKE on number", "order", "quantity LIKE '1%'", 9, "LIKE"),
		evalErrCase("LIKE dynamic escape too long", "order", "color LIKE pattern ESCAPE badesc", 6, "LIKE"),
		evalErrCase("IN type mismatch", "order", "color IN (1, 2)", 10, "1"),
		evalErrCase("time vs string", "order", "sys.EnqueuedTimeUtc = '2024-02-23'", 20, "="),
		evalErrCase("duration vs number", "order", "sys.TimeToLive > 3600", 15, ">"),
		evalErrCase("[]byte compares with nothing", "order", "blob = 'x'", 5, "="),
		evalErrCase("property() of a number", "order", "p(5) = 1", 0, "p"),
		evalErrCase("Unknown does not short-circuit", "order", "missing = 1 AND color > 5", 22, ">"),
	}
}

func filterCases() []filterCase {
	return append(microsoftFilterCases(), ruleFilterCases()...)
}

func TestFilterTable(t *testing.T) {
	t.Parallel()
	cases := filterCases()
	require.GreaterOrEqual(t, len(cases), 80)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runFilterCase(t, c)
		})
	}
}

func runFilterCase(t *testing.T, c filterCase) {
	t.Helper()
	f, err := ParseFilter(c.expr, testParams())
	if c.err == ErrParameter {
		requireParameterError(t, err, c.pos, c.tok)
		return
	}
	if c.err == ErrSyntax {
		require.ErrorIs(t, err, ErrSyntax, "expr %q", c.expr)
		var se *SyntaxError
		require.ErrorAs(t, err, &se)
		require.Equal(t, c.pos, se.Pos, "Pos of %v", err)
		if c.tok == "" {
			require.Empty(t, se.Token, "Token of %v", err)
		} else {
			require.True(t, strings.HasPrefix(se.Token, c.tok), "Token of %v, want prefix %q", err, c.tok)
		}
		return
	}
	require.NoError(t, err, "expr %q", c.expr)
	require.Equal(t, c.expr, f.String())
	m, found := testMessages()[c.msg]
	require.True(t, found, "message %q", c.msg)
	got, err := f.Eval(m)
	matched, matchErr := f.Match(m)
	if c.err == ErrEval {
		require.ErrorIs(t, err, ErrEval, "expr %q gave %v", c.expr, got)
		var ee *EvalError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, c.pos, ee.Pos, "Pos of %v", err)
		require.Equal(t, c.tok, ee.Token, "Token of %v", err)
		require.Equal(t, False, got)
		require.False(t, matched)
		require.ErrorIs(t, matchErr, ErrEval)
		return
	}
	require.NoError(t, err)
	require.Equal(t, c.want, got, "expr %q", c.expr)
	require.NoError(t, matchErr)
	require.Equal(t, c.want == True, matched)
}

func TestFilterMatchDoesNotChangeMessage(t *testing.T) {
	t.Parallel()
	m := testMessages()["order"]
	before := cloneMessage(m)
	f, err := ParseFilter("dUP = 'upper' AND EXISTS(missing) OR p('color') LIKE 'r%'", nil)
	require.NoError(t, err)
	_, err = f.Match(m)
	require.NoError(t, err)
	require.Equal(t, before, m)
}

func TestFilterNilAndZero(t *testing.T) {
	t.Parallel()
	f, err := ParseFilter("missing IS NULL", nil)
	require.NoError(t, err)
	ok, err := f.Match(nil)
	require.NoError(t, err)
	require.True(t, ok, "a nil message has no properties")

	var nilFilter *Filter
	ok, err = nilFilter.Match(&Message{})
	require.ErrorIs(t, err, ErrEval)
	require.False(t, ok)
	require.Equal(t, "", nilFilter.String())

	ok, err = (&Filter{}).Match(&Message{})
	require.ErrorIs(t, err, ErrEval)
	require.False(t, ok)
}

func TestTruthString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "False", False.String())
	require.Equal(t, "True", True.String())
	require.Equal(t, "Unknown", Unknown.String())
	require.Equal(t, "Truth(7)", Truth(7).String())
}

func TestErrorMessages(t *testing.T) {
	t.Parallel()
	_, err := ParseFilter("sys.Foo = 1", nil)
	require.EqualError(t, err, `syntax error at offset 4 near "Foo": unknown system property sys.Foo`)
	require.True(t, errors.Is(err, ErrSyntax))
	require.False(t, errors.Is(err, ErrEval))

	_, err = ParseFilter("a = ", nil)
	require.EqualError(t, err, "syntax error at offset 4: expected a value, found end of expression")

	f, err := ParseFilter("color > 5", nil)
	require.NoError(t, err)
	_, err = f.Match(&Message{Properties: map[string]any{"color": "red"}})
	require.EqualError(t, err, `evaluation error at offset 6 near ">": cannot compare string with int64`)
	require.True(t, errors.Is(err, ErrEval))
}

// TestParameterTypes checks which Go types @parameters accept.
func TestParameterTypes(t *testing.T) {
	t.Parallel()
	for _, v := range []any{nil, "s", true, 1, int8(1), int16(1), int32(1), int64(1), uint(1), uint8(1),
		uint16(1), uint32(1), uint64(1), float32(1), 1.0, t0, t0.Sub(t0)} {
		_, err := ParseFilter("@p IS NULL", map[string]any{"@p": v})
		require.NoError(t, err, "%T", v)
	}
	for _, v := range []any{[]byte("x"), struct{}{}, []string{"a"}, map[string]any{}} {
		_, err := ParseFilter("@p IS NULL", map[string]any{"@p": v})
		require.ErrorIs(t, err, ErrParameter, "%T", v)
		require.NotErrorIs(t, err, ErrSyntax, "%T", v)
	}
}

// requireParameterError asserts that err is a *ParameterError at pos for
// the parameter name, and nothing else.
func requireParameterError(t *testing.T, err error, pos int, name string) {
	t.Helper()
	require.ErrorIs(t, err, ErrParameter)
	require.NotErrorIs(t, err, ErrSyntax)
	require.NotErrorIs(t, err, ErrEval)
	var pe *ParameterError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, pos, pe.Pos, "Pos of %v", err)
	require.Equal(t, name, pe.Name, "Name of %v", err)
	require.NotContains(t, strings.ToLower(err.Error()), "syntax")
}

// TestParameterErrors checks the text of parameter errors, from filters and
// actions, and that of the sentinel.
func TestParameterErrors(t *testing.T) {
	t.Parallel()
	_, err := ParseFilter("a = @p", nil)
	require.EqualError(t, err, "parameter @p at offset 4: not given")
	requireParameterError(t, err, 4, "p")

	_, err = ParseFilter("a = @Blob", map[string]any{"@blob": []byte("x")})
	require.EqualError(t, err, "parameter @Blob at offset 4: unsupported type []uint8")
	requireParameterError(t, err, 4, "Blob")

	_, err = ParseAction("SET a = 1; SET b = @when", map[string]any{"when": struct{}{}})
	require.EqualError(t, err, "parameter @when at offset 19: unsupported type struct {}")
	requireParameterError(t, err, 19, "when")

	_, err = ParseAction("REMOVE x; SET y = @gone + 1", map[string]any{"@other": 1})
	require.EqualError(t, err, "parameter @gone at offset 18: not given")

	require.NotContains(t, ErrParameter.Error(), "syntax")
	require.Equal(t, "sqlfilter: bad parameter", ErrParameter.Error())
	require.Equal(t, ErrParameter, (&ParameterError{}).Unwrap())
}

// TestConcurrentMatch runs one filter from many goroutines (run with -race).
func TestConcurrentMatch(t *testing.T) {
	t.Parallel()
	f, err := ParseFilter("amount > 100 AND region IN ('eu','us') AND sys.Label LIKE 'order%'", nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			m := &Message{Headers: Headers{Subject: "order-1"}, Properties: map[string]any{"amount": 101 + g, "region": "eu"}}
			for range 1000 {
				if ok, err := f.Match(m); !ok || err != nil {
					errs <- fmt.Errorf("goroutine %d: %v %v", g, ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
