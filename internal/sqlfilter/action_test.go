package sqlfilter

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// actionCase is one row of the action table: apply expr to a copy of one of
// testMessages, then check it. err expects ErrSyntax or ErrParameter (at
// pos) or ErrEval;
// check runs on the message also after an evaluation error, to see what
// the statements before it changed.
type actionCase struct {
	name  string
	msg   string
	expr  string
	err   error
	pos   int
	check func(t *testing.T, m *Message)
}

// props asserts that m has exactly these values under these keys.
func props(kv map[string]any) func(t *testing.T, m *Message) {
	return func(t *testing.T, m *Message) {
		t.Helper()
		for k, v := range kv {
			got, ok := m.Properties[k]
			require.True(t, ok, "property %q missing in %v", k, m.Properties)
			require.Equal(t, v, got, "property %q", k)
		}
	}
}

// absent asserts that m has none of these keys.
func absent(keys ...string) func(t *testing.T, m *Message) {
	return func(t *testing.T, m *Message) {
		t.Helper()
		for _, k := range keys {
			require.NotContains(t, m.Properties, k)
		}
	}
}

// all runs each check.
func all(checks ...func(t *testing.T, m *Message)) func(t *testing.T, m *Message) {
	return func(t *testing.T, m *Message) {
		t.Helper()
		for _, c := range checks {
			c(t, m)
		}
	}
}

// concatBomb doubles a string 17 times, from 16 bytes to 2 MiB.
var concatBomb = "SET a = '" + strings.Repeat("x", 16) + "'" + strings.Repeat("; SET a = a + a", 17)

func actionCases() []actionCase {
	return []actionCase{
		// Microsoft's SQL filter article, "Set rule action for a SQL filter".
		{name: "sql-filter: SET source", msg: "order", expr: "SET source='routedOrders'",
			check: props(map[string]any{"source": "routedOrders"})},
		// Microsoft's filter examples article, .NET example, rule RedOrdersWithAction.
		{name: "filter-examples: SET, REMOVE, SET sys", msg: "order",
			expr: "SET quantity = quantity / 2; REMOVE priority;SET sys.CorrelationId = 'low';",
			check: all(props(map[string]any{"quantity": 5}), absent("priority"), // keeps its Go int type
				func(t *testing.T, m *Message) { require.Equal(t, "low", m.CorrelationID) })},
		// Microsoft's topic filters article, "Actions".
		{name: "topic-filters: SET quantity", msg: "order", expr: "SET quantity = quantity / 2;",
			check: props(map[string]any{"quantity": 5})}, // keeps its Go int type
		// Java SqlRuleFilter class sample (learn.microsoft.com/java/api/...sqlrulefilter).
		{name: "java sample: SET importance", msg: "corr", expr: "SET importance = 'critical';",
			check: props(map[string]any{"importance": "critical"})},

		{name: "comma separator", msg: "order", expr: "SET a = 1, SET b = 2.5",
			check: props(map[string]any{"a": int64(1), "b": 2.5})},
		{name: "later statements see earlier ones", msg: "order", expr: "SET a = 1; SET b = a + 1; SET a = b * 10",
			check: props(map[string]any{"a": int64(20), "b": int64(2)})},
		{name: "SET keeps the existing key spelling", msg: "order", expr: "SET COLOR = 'blue'",
			check: all(props(map[string]any{"color": "blue"}), absent("COLOR"))},
		{name: "SET NULL stores nil", msg: "order", expr: "SET x = missing",
			check: props(map[string]any{"x": nil})},
		{name: "SET time and duration", msg: "order", expr: "SET t = DateTimeMp + @timespan; SET d = DateTimeMp2 - DateTimeMp1",
			check: props(map[string]any{"t": t0.Add(2 * time.Hour), "d": 90 * time.Minute})},
		{name: "SET bool and string", msg: "order", expr: "SET f = TRUE; SET s = color + '!'",
			check: props(map[string]any{"f": true, "s": "red!"})},
		{name: "SET delimited and scoped names", msg: "order", expr: "SET [my prop] = 'v'; SET user.x = 2",
			check: props(map[string]any{"my prop": "v", "x": int64(2)})},
		{name: "SET creates the map", msg: "empty", expr: "SET x = 1",
			check: props(map[string]any{"x": int64(1)})},
		{name: "SET from property()", msg: "order", expr: "SET sys.SessionId = p('color')",
			check: func(t *testing.T, m *Message) { require.Equal(t, "red", m.SessionID) }},
		{name: "SET newid()", msg: "order", expr: "SET id = newid()",
			check: func(t *testing.T, m *Message) {
				require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, m.Properties["id"])
			}},
		{name: "REMOVE case-insensitive", msg: "order", expr: "REMOVE COLOR; REMOVE dup",
			check: absent("color", "dup", "Dup")},
		{name: "REMOVE missing is a no-op", msg: "order", expr: "REMOVE missing",
			check: props(map[string]any{"color": "red"})},
		{name: "REMOVE on empty message", msg: "empty", expr: "REMOVE x",
			check: func(t *testing.T, m *Message) { require.Nil(t, m.Properties) }},
		{name: "SET sys.Label sets Subject", msg: "order", expr: "SET sys.Label = 'x'",
			check: func(t *testing.T, m *Message) { require.Equal(t, "x", m.Subject) }},
		{name: "SET sys NULL empties", msg: "order", expr: "SET sys.To = NULL",
			check: func(t *testing.T, m *Message) { require.Empty(t, m.To) }},
		{name: "REMOVE sys empties", msg: "order", expr: "REMOVE sys.ReplyTo; REMOVE sys.PartitionKey",
			check: func(t *testing.T, m *Message) { require.Empty(t, m.ReplyTo) }},
		{name: "SET every writable sys property", msg: "empty",
			expr: "SET sys.MessageId = 'a'; SET sys.CorrelationId = 'b'; SET sys.To = 'c'; SET sys.ReplyTo = 'd'; SET sys.Subject = 'e'; " +
				"SET sys.SessionId = 'f'; SET sys.ReplyToSessionId = 'g'; SET sys.ContentType = 'h'; SET sys.PartitionKey = 'i'",
			check: func(t *testing.T, m *Message) {
				require.Equal(t, Message{MessageID: "a", SessionID: "f", Headers: Headers{CorrelationID: "b", To: "c", ReplyTo: "d",
					Subject: "e", ReplyToSessionID: "g", ContentType: "h", PartitionKey: "i"}}, *m)
			}},

		// Evaluation errors; statements before them have run.
		{name: "SET sys to a number", msg: "order", expr: "SET a = 1; SET sys.MessageId = 5", err: ErrEval, pos: 11,
			check: all(props(map[string]any{"a": int64(1)}),
				func(t *testing.T, m *Message) { require.Equal(t, "m-1", m.MessageID) })},
		{name: "type error stops", msg: "order", expr: "SET a = 1; SET b = color + 1; SET c = 3", err: ErrEval, pos: 25,
			check: all(props(map[string]any{"a": int64(1)}), absent("b", "c"))},
		{name: "SET a []byte", msg: "order", expr: "SET copy = blob", err: ErrEval, pos: 0, check: absent("copy")},
		// 16 bytes doubled 16 times is 1 MiB, the limit; once more fails.
		{name: "concatenation is bounded", msg: "order", expr: concatBomb, err: ErrEval, pos: strings.LastIndex(concatBomb, "+"),
			check: func(t *testing.T, m *Message) { require.Len(t, m.Properties["a"], 1<<20) }},

		// Syntax errors.
		{name: "empty", expr: "", err: ErrSyntax, pos: 0},
		{name: "SET read-only sys", expr: "SET sys.SequenceNumber = 1", err: ErrSyntax, pos: 8},
		{name: "REMOVE read-only sys", expr: "REMOVE sys.EnqueuedTimeUtc", err: ErrSyntax, pos: 11},
		{name: "SET TimeToLive is read-only", expr: "SET sys.TimeToLive = @hour", err: ErrSyntax, pos: 8},
		{name: "SET unknown sys", expr: "SET sys.Foo = 1", err: ErrSyntax, pos: 8},
		{name: "SET without value", expr: "SET a =", err: ErrSyntax, pos: 7},
		{name: "SET without =", expr: "SET a", err: ErrSyntax, pos: 5},
		{name: "SET alone", expr: "SET", err: ErrSyntax, pos: 3},
		{name: "double ;", expr: "SET a = 1;; SET b = 2", err: ErrSyntax, pos: 10},
		{name: "no separator", expr: "SET a = 1 SET b = 2", err: ErrSyntax, pos: 10},
		{name: "trailing comma", expr: "SET a = 1,", err: ErrSyntax, pos: 10},
		{name: "unknown statement", expr: "UPDATE a = 1", err: ErrSyntax, pos: 0},
		{name: "function target", expr: "SET newid() = 1", err: ErrSyntax, pos: 4},
		{name: "literal target", expr: "SET 'a' = 1", err: ErrSyntax, pos: 4},
		{name: "condition as value", expr: "SET a = (b > 1)", err: ErrSyntax, pos: 9},
		{name: "chained =", expr: "SET a = b = c", err: ErrSyntax, pos: 10},
		{name: "REMOVE with value", expr: "REMOVE a = 1", err: ErrSyntax, pos: 9},
		{name: "missing parameter", expr: "SET a = @nope", err: ErrParameter, pos: 8},
		{name: "unsupported parameter", expr: "SET a = 1; REMOVE b; SET c = @bytes", err: ErrParameter, pos: 29},
		{name: "unterminated string", expr: "SET a = 'x", err: ErrSyntax, pos: 8},
	}
}

func TestActionTable(t *testing.T) {
	t.Parallel()
	for _, c := range actionCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runActionCase(t, c)
		})
	}
}

func runActionCase(t *testing.T, c actionCase) {
	t.Helper()
	a, err := ParseAction(c.expr, testParams())
	if c.err == ErrParameter {
		require.ErrorIs(t, err, ErrParameter)
		require.NotErrorIs(t, err, ErrSyntax)
		var pe *ParameterError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, c.pos, pe.Pos, "%v", err)
		require.True(t, strings.HasPrefix(c.expr[pe.Pos:], "@"+pe.Name), "%v", err)
		return
	}
	if c.err == ErrSyntax {
		require.ErrorIs(t, err, ErrSyntax)
		var se *SyntaxError
		require.ErrorAs(t, err, &se)
		require.Equal(t, c.pos, se.Pos, "%v", err)
		return
	}
	require.NoError(t, err)
	require.Equal(t, c.expr, a.String())
	msg := c.msg
	if msg == "" {
		msg = "order"
	}
	m := cloneMessage(testMessages()[msg])
	err = a.Apply(m)
	if c.err == ErrEval {
		require.ErrorIs(t, err, ErrEval)
		var ee *EvalError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, c.pos, ee.Pos, "%v", err)
	} else {
		require.NoError(t, err)
	}
	if c.check != nil {
		c.check(t, m)
	}
}

func TestActionNil(t *testing.T) {
	t.Parallel()
	a, err := ParseAction("SET a = 1", nil)
	require.NoError(t, err)
	require.ErrorIs(t, a.Apply(nil), ErrEval)
	var nilAction *Action
	require.ErrorIs(t, nilAction.Apply(&Message{}), ErrEval)
	require.Equal(t, "", nilAction.String())
}

// SET on an existing property converts a number to that property's type
// where nothing is lost, as the SQLRuleAction reference says: "SET price =
// 2" on a double property leaves a double.
func TestSetKeepsPropertyType(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		old  any
		expr string
		want any
	}{
		{2.5, "SET p = 2", float64(2)},
		{float32(1), "SET p = 2", float32(2)},
		{float32(1), "SET p = 0.1", 0.1}, // not exact in float32: stays float64
		{int32(7), "SET p = 3", int32(3)},
		{int32(7), "SET p = 3.0", int32(3)},  // integral
		{int32(7), "SET p = 3.5", 3.5},       // not integral: stays float64
		{int8(1), "SET p = 300", int64(300)}, // does not fit: stays int64
		{uint16(1), "SET p = -1", int64(-1)}, // does not fit
		{uint64(1), "SET p = 9", uint64(9)},
		{"s", "SET p = 2", int64(2)}, // a string property takes the number as is
		{2.5, "SET p = 'x'", "x"},    // and a number property a string
		{true, "SET p = 1", int64(1)},
	} {
		a, err := ParseAction(c.expr, nil)
		require.NoError(t, err)
		m := &Message{Properties: map[string]any{"P": c.old}}
		require.NoError(t, a.Apply(m), c.expr)
		require.Equal(t, map[string]any{"P": c.want}, m.Properties, "%T %v: %s", c.old, c.old, c.expr)
	}
	a, err := ParseAction("SET n = 2", nil)
	require.NoError(t, err)
	m := &Message{}
	require.NoError(t, a.Apply(m))
	require.Equal(t, int64(2), m.Properties["n"], "a new property takes the value's type")
}
