// Package sqlfilter implements the Azure Service Bus SQL filter and rule
// action language (SqlRuleFilter, SqlRuleAction): a SQL-92 subset evaluated
// against the system and user properties of one message, never its body,
// and the correlation filter (CorrelationRuleFilter) that matches the same
// properties by equality.
//
// # Basics
//
// [ParseFilter] compiles a condition once; [Filter.Match] then tells for
// each [Message] whether it is selected (rule R3 of SEMANTICS.md).
// [ParseAction] compiles SET and REMOVE statements; [Action.Apply] changes a
// message in place. Both take the @parameters of the rule. Compiled filters
// and actions are immutable and safe for concurrent use.
//
//	f, err := sqlfilter.ParseFilter("sys.Label LIKE 'order%' AND amount > @min",
//		map[string]any{"@min": 100})
//	ok, err := f.Match(&sqlfilter.Message{Headers: sqlfilter.Headers{Subject: "order-7"},
//		Properties: map[string]any{"amount": 250}})
//
// [NewCorrelation] compiles a correlation filter (CorrelationRuleFilter,
// rule R4): required values of system properties and user properties,
// matched by equality with [Correlation.Match]. It finds user properties
// by name and compares numbers, strings, bools and durations as the SQL
// = does (Properties, Values and types below), but it has no NULL logic
// (nil equals nil), compares []byte values by content and never fails at
// match time: values that do not compare are not equal.
//
// # Grammar
//
// Weakest binding first; keywords and names are case-insensitive:
//
//	condition  = condition OR condition | condition AND condition | NOT condition
//	           | value (= | <> | != | < | <= | > | >=) value
//	           | value [NOT] LIKE value [ESCAPE value]
//	           | value [NOT] IN ( value {, value} )
//	           | value IS [NOT] NULL
//	           | EXISTS ( property )
//	           | ( condition ) | value of type bool
//	value      = value (+ | -) value | value (* | / | %) value | (+ | -) value
//	           | literal | @param | property | function | ( value )
//	property   = [sys. | user.] name
//	function   = newid() | property(value) | p(value)
//	statements = statement {(; | ,) statement} [;]
//	statement  = SET property = value | REMOVE property
//
// NOT binds tighter than AND, and AND tighter than OR; comparisons, LIKE,
// IN and IS bind tighter than NOT; * / % bind tighter than + -; unary signs
// tightest. Nesting (parentheses, function calls, NOT, signs) may go 256
// levels deep and an expression may be 1024 characters long.
//
// Literals: integers (int64; out of range is a syntax error), decimals and
// exponents (1.5, .5, 1.5E3, 0.5E-2: float64), 'strings' (two single quotes inside are one quote),
// TRUE, FALSE and NULL.
//
// Names: a regular identifier (a letter, then letters, digits and _), a
// [delimited identifier] (]] is a ]) or a "quoted identifier" ("" is a ").
// The reserved words AND OR NOT LIKE ESCAPE IN IS NULL EXISTS TRUE FALSE
// SET REMOVE cannot be bare names; write [in] or user.in.
//
// Functions: newid() returns a new random GUID as a string; property(name)
// and p(name) read the user property whose name the string value gives (NULL
// for NULL). Any other name followed by ( is a syntax error.
//
// # Properties
//
// sys.Name reads a system property: MessageId, CorrelationId, To, ReplyTo,
// Label and Subject (one property), SessionId, ReplyToSessionId,
// ContentType, PartitionKey (strings; "" reads as NULL), SequenceNumber,
// EnqueuedSequenceNumber, DeliveryCount, Size (int64, never NULL),
// EnqueuedTimeUtc, ScheduledEnqueueTimeUtc, ExpiresAtUtc (time; zero reads
// as NULL) and TimeToLive (duration; 0 reads as NULL). Any other sys. name
// is a syntax error. EXISTS(sys.Name) is TRUE when the property is not NULL.
//
// user.Name and a bare Name read [Message.Properties]: the exact key first,
// then any key equal case-insensitively (the smallest such key if several).
// A missing user property is NULL; EXISTS is TRUE when the key is present,
// even with a nil value.
//
// # Values and types
//
// Values are NULL, int64, float64, string, bool, time, duration and opaque
// ([]byte and any other Go type, which only IS NULL and EXISTS accept).
// Go integers and float32 read from properties and parameters widen to
// int64 and float64 (a uint64 above MaxInt64 to float64).
//
//   - Numbers compare and compute with promotion: int64 with int64 stays
//     int64 (wrapping on overflow, / truncating), anything with a float64
//     is float64 (IEEE: 1.0/0 is +Inf). Integer / or % by zero is an
//     evaluation error.
//   - Strings compare ordinally, byte by byte and case-sensitively; + on two
//     strings concatenates (a result over 1 MiB is an evaluation error, so
//     repeated SET a = a + a cannot exhaust memory).
//   - Bools support only = and <>.
//   - Times compare with times (by instant; values computed or stored by SET
//     are in UTC), durations with durations. time - time is a duration;
//     time ± duration is a time; duration ± duration a duration.
//     sys.TimeToLive is a duration, so compare it with a time.Duration
//     parameter, not a number.
//   - Any other pairing (string with number, bool with number, time with
//     string, ...) is an evaluation error, as is LIKE on a non-string and
//     arithmetic on non-numbers. There are no implicit conversions.
//
// # Three-valued logic
//
// NULL in a comparison, LIKE or arithmetic gives Unknown (NULL), before any
// type check. x IN (...) is Unknown when x is NULL, or when no item equals
// x and some item is NULL. NOT Unknown is Unknown; Unknown AND FALSE is
// FALSE; Unknown OR TRUE is TRUE. Only TRUE matches. IS NULL is TRUE for a
// missing property and for a nil value. A value of type bool may stand as a
// condition (flag AND x = 1); a non-bool value there is an evaluation error.
//
// Evaluation runs left to right: AND and OR skip their right side when the
// left decides the result, and IN stops at the first equal item, so errors
// behind them do not surface.
//
// # Actions
//
// SET on a user property creates or overwrites it (under the existing key
// that matches case-insensitively). A number set on a property that holds a
// number takes that property's Go type where nothing is lost, as the
// SQLRuleAction reference's implicit conversion: SET price = 2 on a float64
// property leaves a float64, on an int32 an int32; other values keep their
// own type. SET on a sys. string property changes
// it and needs a string or NULL (which empties it). REMOVE deletes a user
// property (every key matching case-insensitively) or empties a sys. string
// property. Other sys. properties are read-only: naming them in SET or
// REMOVE is a syntax error. Statements see the changes made before them.
//
// # Errors
//
// Compiling fails with a *[SyntaxError] ([ErrSyntax]) that gives the byte
// offset and text of the offending token, or, when the text is valid but
// an @parameter it uses is missing or of an unsupported type, with a
// *[ParameterError] ([ErrParameter]) that gives the offset and name of the
// parameter. Running fails with an *[EvalError] ([ErrEval]) that gives the
// offset and text of the failing operator or operand; the rule engine then
// treats the message as not matched or dead-letters it (rule R5).
//
// # Caveats
//
// Where the Service Bus documentation is silent this package decides:
// strings compare ordinally; no implicit conversions between strings,
// numbers, bools and times (SET converts only number to number, and only
// without loss); IS NULL accepts any value, not only a property; a bool value may
// stand as a condition; an escape character followed by any character makes
// that character literal, and a pattern ending in the escape character is an
// error; property(name) reads user properties only; unknown sys. names are
// rejected when compiling, not when evaluating; statements must be
// separated by ';' or ','.
package sqlfilter
