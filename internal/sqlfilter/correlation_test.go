package sqlfilter

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// corr compiles a correlation filter or fails the test.
func corr(t testing.TB, f CorrelationFields, props map[string]any) *Correlation {
	t.Helper()
	c, err := NewCorrelation(f, props)
	require.NoError(t, err)
	return c
}

// propsMatch reports whether the filter {key: want} matches a message with
// the single property {key: got}.
func propsMatch(t testing.TB, want, got any) bool {
	t.Helper()
	return corr(t, CorrelationFields{}, map[string]any{"k": want}).Match(&Message{Properties: map[string]any{"k": got}})
}

func TestNewCorrelationErrors(t *testing.T) {
	t.Parallel()
	for _, props := range []map[string]any{nil, {}} {
		c, err := NewCorrelation(CorrelationFields{}, props)
		require.EqualError(t, err, "it sets no field; use TrueFilter to match everything")
		require.Nil(t, c)
	}
	for _, v := range []any{struct{}{}, []string{"a"}, map[string]any{}, new(int), time.Local, myInt(1), myString("x"), myBytes("x")} {
		_, err := NewCorrelation(CorrelationFields{Subject: "s"}, map[string]any{"ok": 1, "bad": v})
		require.EqualError(t, err, fmt.Sprintf("application property \"bad\" has unsupported type %T", v))
	}
	// Of several bad keys the smallest is named, whatever the map order.
	for range 20 {
		_, err := NewCorrelation(CorrelationFields{}, map[string]any{"zz": struct{}{}, "b": []int{}, "a": 1, "c": struct{}{}})
		require.EqualError(t, err, `application property "b" has unsupported type []int`)
	}
	// Every type a message property may have is accepted.
	for _, v := range []any{nil, "s", "", true, false, []byte("x"), []byte(nil), time.Time{}, t0, time.Duration(0), time.Hour,
		1, int8(1), int16(1), int32(1), int64(1), uint(1), uint8(1), uint16(1), uint32(1), uint64(1), uint64(math.MaxUint64),
		float32(1), 1.0, math.NaN(), math.Inf(1)} {
		_, err := NewCorrelation(CorrelationFields{}, map[string]any{"k": v})
		require.NoError(t, err, "%T", v)
	}
}

type (
	myInt    int
	myString string
	myBytes  []byte
)

// sysFields lists the fields of CorrelationFields with the Message field
// each must equal.
var sysFields = []struct {
	name string
	f    func(*CorrelationFields) *string
	m    func(*Message) *string
}{
	{"CorrelationID", func(f *CorrelationFields) *string { return &f.CorrelationID }, func(m *Message) *string { return &m.CorrelationID }},
	{"MessageID", func(f *CorrelationFields) *string { return &f.MessageID }, func(m *Message) *string { return &m.MessageID }},
	{"To", func(f *CorrelationFields) *string { return &f.To }, func(m *Message) *string { return &m.To }},
	{"ReplyTo", func(f *CorrelationFields) *string { return &f.ReplyTo }, func(m *Message) *string { return &m.ReplyTo }},
	{"Subject", func(f *CorrelationFields) *string { return &f.Subject }, func(m *Message) *string { return &m.Subject }},
	{"SessionID", func(f *CorrelationFields) *string { return &f.SessionID }, func(m *Message) *string { return &m.SessionID }},
	{"ReplyToSessionID", func(f *CorrelationFields) *string { return &f.ReplyToSessionID }, func(m *Message) *string { return &m.ReplyToSessionID }},
	{"ContentType", func(f *CorrelationFields) *string { return &f.ContentType }, func(m *Message) *string { return &m.ContentType }},
}

// TestCorrelationSystemFields: each set field must equal the message's
// exactly (case-sensitive); an unset field matches anything.
func TestCorrelationSystemFields(t *testing.T) {
	t.Parallel()
	for _, field := range sysFields {
		t.Run(field.name, func(t *testing.T) {
			var f CorrelationFields
			*field.f(&f) = "Order-1"
			c := corr(t, f, nil)
			for got, want := range map[string]bool{"Order-1": true, "order-1": false, "ORDER-1": false,
				"Order-1 ": false, "": false, "Order": false} {
				var m Message
				*field.m(&m) = got
				require.Equal(t, want, c.Match(&m), "%s %q", field.name, got)
			}
			// The other fields and the properties of the message do not
			// matter.
			m := Message{Headers: Headers{PartitionKey: "pk"}, Properties: map[string]any{"x": 1}}
			for _, o := range sysFields {
				*o.m(&m) = "other"
			}
			*field.m(&m) = "Order-1"
			require.True(t, c.Match(&m))
		})
	}

	// All fields set: each must match.
	var f CorrelationFields
	var m Message
	for _, field := range sysFields {
		*field.f(&f) = "v-" + field.name
		*field.m(&m) = "v-" + field.name
	}
	c := corr(t, f, nil)
	require.True(t, c.Match(&m))
	for _, field := range sysFields {
		saved := *field.m(&m)
		*field.m(&m) = saved + "x"
		require.False(t, c.Match(&m), field.name)
		*field.m(&m) = ""
		require.False(t, c.Match(&m), field.name)
		*field.m(&m) = saved
	}
	require.True(t, c.Match(&m))
}

// TestCorrelationLookup: properties are found by exact key first, then
// case-insensitively, the smallest key winning.
func TestCorrelationLookup(t *testing.T) {
	t.Parallel()
	c := corr(t, CorrelationFields{}, map[string]any{"color": "blue"})
	for _, tc := range []struct {
		props map[string]any
		want  bool
	}{
		{map[string]any{"color": "blue"}, true},
		{map[string]any{"Color": "blue"}, true},
		{map[string]any{"COLOR": "blue"}, true},
		{map[string]any{"colour": "blue"}, false},
		{map[string]any{"color": "Blue"}, false}, // values stay case-sensitive
		{nil, false},
		{map[string]any{}, false},
		// The exact key wins over a case-insensitive one.
		{map[string]any{"color": "blue", "COLOR": "red", "Color": "red"}, true},
		{map[string]any{"color": "red", "COLOR": "blue", "Color": "blue"}, false},
		// Without the exact key the smallest matching key wins: "COLOR" <
		// "Color" < "cOLOR" in byte order.
		{map[string]any{"COLOR": "blue", "Color": "red", "cOLOR": "red"}, true},
		{map[string]any{"COLOR": "red", "Color": "blue", "cOLOR": "blue"}, false},
		{map[string]any{"Color": "blue", "cOLOR": "red"}, true},
		{map[string]any{"Color": "red", "cOLOR": "blue"}, false},
	} {
		for range 10 { // map order must not matter
			require.Equal(t, tc.want, c.Match(&Message{Properties: tc.props}), "%v", tc.props)
		}
	}
	// The filter's key may be in any case too.
	c = corr(t, CorrelationFields{}, map[string]any{"PRIORITY": int64(1)})
	require.True(t, c.Match(&Message{Properties: map[string]any{"priority": 1}}))
}

// TestCorrelationValues is the table of value equality (R4), filter value
// against message value.
func TestCorrelationValues(t *testing.T) {
	t.Parallel()
	utc := time.Date(2024, 2, 23, 10, 0, 0, 500, time.UTC)
	paris := utc.In(time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		name      string
		want, got any
		equal     bool
		swap      bool // also holds with want and got swapped
	}{
		// Integers of any Go type compare exactly by value.
		{"int8 int64", int8(1), int64(1), true, true},
		{"int int8 negative", -128, int8(-128), true, true},
		{"uint8 int16", uint8(255), int16(255), true, true},
		{"int32 uint32", int32(-1), uint32(math.MaxUint32), false, true},
		{"uint int", uint(7), 7, true, true},
		{"uint16 uint32", uint16(65535), uint32(65535), true, true},
		{"int64 max", int64(math.MaxInt64), int64(math.MaxInt64), true, true},
		{"int64 max vs max-1, exact", int64(math.MaxInt64), int64(math.MaxInt64 - 1), false, true},
		{"uint64 max int64 vs int64", uint64(math.MaxInt64), int64(math.MaxInt64), true, true},
		{"uint64 max int64 vs max-1, exact", uint64(math.MaxInt64), int64(math.MaxInt64 - 1), false, true},
		{"int64 min", int64(math.MinInt64), int64(math.MinInt64), true, true},
		{"int 2^53+1 vs 2^53, exact", int64(1<<53 + 1), int64(1 << 53), false, true},
		{"different ints", 1, 2, false, true},
		// A uint64 above MaxInt64 compares as a float64.
		{"uint64 max vs 2^64 float", uint64(math.MaxUint64), math.Pow(2, 64), true, true},
		{"uint64 max vs itself", uint64(math.MaxUint64), uint64(math.MaxUint64), true, true},
		{"uint64 2^63 vs float", uint64(1 << 63), math.Pow(2, 63), true, true},
		{"uint64 2^63 vs int64 max (as float64)", uint64(1 << 63), int64(math.MaxInt64), true, true},
		{"uint64 max vs max-1 (as float64)", uint64(math.MaxUint64), uint64(math.MaxUint64 - 1), true, true},
		{"uint64 2^63 vs -1", uint64(1 << 63), -1, false, true},
		{"uint max vs int -1", uint(math.MaxUint), -1, false, true},
		// Integers and floats by numeric value.
		{"int vs float", int64(1), 1.0, true, true},
		{"int8 vs float32", int8(-3), float32(-3), true, true},
		{"int vs fraction", 1, 1.5, false, true},
		{"int 2^53+1 vs float 2^53 (as float64)", int64(1<<53 + 1), float64(1 << 53), true, true},
		{"float32 vs float64 exact", float32(0.5), 0.5, true, true},
		{"float32 vs float64 inexact", float32(0.1), 0.1, false, true},
		{"floats", 2.5, 2.5, true, true},
		{"zero signs", math.Copysign(0, -1), 0, true, true},
		{"NaN", math.NaN(), math.NaN(), false, true},
		{"NaN vs int", math.NaN(), 0, false, true},
		{"Inf", math.Inf(1), math.Inf(1), true, true},
		{"-Inf vs Inf", math.Inf(-1), math.Inf(1), false, true},
		// Numbers never equal other kinds.
		{"int vs string", 1, "1", false, true},
		{"int vs bool", 1, true, false, true},
		{"int vs duration", int64(time.Second), time.Second, false, true},
		{"int vs time", 0, time.Unix(0, 0), false, true},
		{"int vs []byte", 1, []byte{1}, false, true},
		{"int vs nil", 0, nil, false, true},
		{"int vs named int", 1, myInt(1), false, false},
		// Strings and bools with ==.
		{"strings", "eu", "eu", true, true},
		{"strings case", "eu", "EU", false, true},
		{"empty strings", "", "", true, true},
		{"string vs named string", "x", myString("x"), false, false},
		{"bools", true, true, true, true},
		{"bools differ", true, false, false, true},
		{"bool vs string", true, "true", false, true},
		// Durations with ==.
		{"durations", time.Hour, 60 * time.Minute, true, true},
		{"durations differ", time.Hour, time.Minute, false, true},
		{"duration vs float", time.Duration(1), 1.0, false, true},
		// []byte by content.
		{"bytes", []byte("abc"), []byte("abc"), true, true},
		{"bytes differ", []byte("abc"), []byte("abd"), false, true},
		{"bytes prefix", []byte("ab"), []byte("abc"), false, true},
		{"nil bytes vs empty bytes", []byte(nil), []byte{}, true, true},
		{"bytes vs string", []byte("abc"), "abc", false, true},
		{"bytes vs named bytes", []byte("abc"), myBytes("abc"), false, false},
		{"empty bytes vs nil", []byte{}, nil, false, true},
		// Times with Equal: the same instant in any location.
		{"times", utc, utc, true, true},
		{"times across locations", utc, paris, true, true},
		{"times across locations, Local", utc, utc.Local(), true, true},
		{"times differ by a nanosecond", utc, utc.Add(time.Nanosecond), false, true},
		{"zero times", time.Time{}, time.Time{}, true, true},
		{"zero time vs Unix 0", time.Time{}, time.Unix(0, 0), false, true},
		{"time vs string", utc, utc.Format(time.RFC3339Nano), false, true},
		{"time vs nil", utc, nil, false, true},
		// nil equals only nil.
		{"nils", nil, nil, true, true},
		{"nil vs empty string", nil, "", false, true},
		{"nil vs false", nil, false, false, true},
		{"nil vs nil bytes", nil, []byte(nil), false, true},
		{"nil vs nil pointer", nil, (*int)(nil), false, false},
		// Message values of types a filter cannot hold.
		{"string vs struct", "x", struct{ s string }{"x"}, false, false},
		{"string vs map", "x", map[string]any{}, false, false},
		{"bytes vs slice", []byte{1}, []int{1}, false, false},
	} {
		require.Equal(t, tc.equal, propsMatch(t, tc.want, tc.got), "%s: filter %T(%v), message %T(%v)", tc.name, tc.want, tc.want, tc.got, tc.got)
		require.Equal(t, tc.equal, rootSameValue(tc.want, tc.got), "%s: root oracle disagrees with the table", tc.name)
		if tc.swap {
			require.Equal(t, tc.equal, propsMatch(t, tc.got, tc.want), "%s (swapped)", tc.name)
		}
	}
}

// TestCorrelationMissingProperty: a property the filter lists must be
// present, whatever its value, nil included.
func TestCorrelationMissingProperty(t *testing.T) {
	t.Parallel()
	for _, v := range []any{nil, "", 0, false, []byte{}, time.Time{}, time.Duration(0)} {
		c := corr(t, CorrelationFields{}, map[string]any{"k": v})
		require.False(t, c.Match(&Message{}), "%T", v)
		require.False(t, c.Match(&Message{Properties: map[string]any{"other": v}}), "%T", v)
		require.True(t, c.Match(&Message{Properties: map[string]any{"K": v}}), "%T", v)
	}
	c := corr(t, CorrelationFields{}, map[string]any{"a": 1, "b": 2, "c": 3})
	require.True(t, c.Match(&Message{Properties: map[string]any{"a": 1, "b": 2, "c": 3, "d": 4}}))
	require.False(t, c.Match(&Message{Properties: map[string]any{"a": 1, "c": 3}}))
	require.False(t, c.Match(&Message{Properties: map[string]any{"a": 1, "b": 3, "c": 3}}))
}

// TestCorrelationR4 is the root's TestR4_CorrelationFilter, ported: strings
// exact, properties by value and by case-insensitive name, all required.
func TestCorrelationR4(t *testing.T) {
	t.Parallel()
	c := corr(t, CorrelationFields{Subject: "order", ContentType: "application/json"},
		map[string]any{"priority": int64(1), "region": "eu"})
	for _, tc := range []struct {
		name string
		m    Message
		want bool
	}{
		{"yes-int", Message{Headers: Headers{Subject: "order", ContentType: "application/json"}, Properties: map[string]any{"priority": 1, "region": "eu"}}, true},
		{"yes-float", Message{Headers: Headers{Subject: "order", ContentType: "application/json"}, Properties: map[string]any{"Priority": 1.0, "region": "eu", "x": 1}}, true},
		{"no-case", Message{Headers: Headers{Subject: "Order", ContentType: "application/json"}, Properties: map[string]any{"priority": 1, "region": "eu"}}, false},
		{"no-value", Message{Headers: Headers{Subject: "order", ContentType: "application/json"}, Properties: map[string]any{"priority": 2, "region": "eu"}}, false},
		{"no-type", Message{Headers: Headers{Subject: "order", ContentType: "application/json"}, Properties: map[string]any{"priority": "1", "region": "eu"}}, false},
		{"no-missing", Message{Headers: Headers{Subject: "order", ContentType: "application/json"}, Properties: map[string]any{"priority": 1}}, false},
		{"no-subject", Message{Headers: Headers{ContentType: "application/json"}, Properties: map[string]any{"priority": 1, "region": "eu"}}, false},
	} {
		require.Equal(t, tc.want, c.Match(&tc.m), tc.name)
	}
}

func TestCorrelationNilAndZero(t *testing.T) {
	t.Parallel()
	require.False(t, corr(t, CorrelationFields{Subject: "s"}, nil).Match(nil))
	require.False(t, corr(t, CorrelationFields{}, map[string]any{"k": nil}).Match(nil))
	var nilCorr *Correlation
	require.False(t, nilCorr.Match(&Message{Headers: Headers{Subject: "s"}}))
	require.False(t, (&Correlation{}).Match(&Message{Headers: Headers{Subject: "s"}}), "the zero Correlation matches nothing")
}

// TestCorrelationKeepsNoReferences: changing the caller's map or []byte
// after NewCorrelation does not change the filter.
func TestCorrelationKeepsNoReferences(t *testing.T) {
	t.Parallel()
	b := []byte("abc")
	props := map[string]any{"b": b, "n": 1}
	c := corr(t, CorrelationFields{}, props)
	b[0] = 'x'
	props["n"] = 2
	props["new"] = "v"
	m := &Message{Properties: map[string]any{"b": []byte("abc"), "n": 1}}
	require.True(t, c.Match(m))
	m.Properties["b"] = b
	require.False(t, c.Match(m))
}

// TestCorrelationMatchDoesNotChangeMessage runs Match and checks m after.
func TestCorrelationMatchDoesNotChangeMessage(t *testing.T) {
	t.Parallel()
	m := &Message{Headers: Headers{Subject: "s"}, Properties: map[string]any{"K": []byte("v"), "n": 1}}
	before := cloneMessage(m)
	require.True(t, corr(t, CorrelationFields{Subject: "s"}, map[string]any{"k": []byte("v"), "N": 1.0}).Match(m))
	require.Equal(t, before, m)
}

// TestCorrelationAgainstRoot checks Match against a copy of the root
// package's former sameValue and lookupProp on every pair of a set of
// values, under several spellings of the key.
func TestCorrelationAgainstRoot(t *testing.T) {
	t.Parallel()
	utc := time.Date(2024, 2, 23, 10, 0, 0, 0, time.UTC)
	filterValues := []any{nil, "", "1", "a", true, false, []byte(nil), []byte{}, []byte("1"), utc, utc.In(time.FixedZone("X", -7200)),
		time.Time{}, time.Duration(0), time.Duration(1), time.Second,
		0, 1, -1, int8(1), int8(-1), int16(1), int32(1), int64(1), int64(math.MaxInt64), int64(math.MinInt64), int64(1<<53 + 1),
		uint(0), uint(1), uint(math.MaxUint), uint8(1), uint16(1), uint32(1), uint32(math.MaxUint32), uint64(1),
		uint64(math.MaxInt64), uint64(1 << 63), uint64(math.MaxUint64), float32(1), float32(0.1), 0.0, math.Copysign(0, -1),
		1.0, 0.1, -1.0, float64(1 << 53), math.Pow(2, 63), math.Pow(2, 64), math.NaN(), math.Inf(1), math.Inf(-1)}
	messageValues := append(append([]any{}, filterValues...), myInt(1), myString("1"), myBytes("1"), struct{}{}, (*int)(nil))
	for _, want := range filterValues {
		c := corr(t, CorrelationFields{}, map[string]any{"k": want})
		for _, got := range messageValues {
			for _, props := range []map[string]any{
				{"k": got},
				{"K": got},
				{"k": got, "K": "rival"}, // the exact key wins
				{"K": got, "k": "rival"},
				{"K": got, "kk": "rival", "k_": 0}, // not case-insensitive matches
				{"kk": got},
			} {
				_, v, ok := rootLookupProp(props, "k")
				require.Equal(t, ok && rootSameValue(want, v), c.Match(&Message{Properties: props}),
					"filter %T(%v), message %T(%v) in %v", want, want, got, got, props)
			}
		}
	}
	// The case-insensitive tie-break, against the root's.
	for _, props := range []map[string]any{
		{"KEY": 1, "Key": 2, "kEY": 3},
		{"Key": 1, "kEY": 2, "KEY": 3},
		{"kEY": 1, "KEY": 2},
	} {
		for _, want := range []any{1, 2, 3} {
			_, v, ok := rootLookupProp(props, "key")
			c := corr(t, CorrelationFields{}, map[string]any{"key": want})
			require.Equal(t, ok && rootSameValue(want, v), c.Match(&Message{Properties: props}), "%v in %v", want, props)
		}
	}
}

// rootLookupProp and rootSameValue are the root package's lookupProp and
// sameValue (with integer and float) as they were before this package
// took correlation matching over: the oracle of TestCorrelationAgainstRoot.
func rootLookupProp(props map[string]any, key string) (string, any, bool) {
	if v, ok := props[key]; ok {
		return key, v, true
	}
	found, best := false, ""
	var value any
	for k, v := range props {
		if strings.EqualFold(k, key) && (!found || k < best) {
			found, best, value = true, k, v
		}
	}
	return best, value, found
}

func rootSameValue(a, b any) bool {
	if x, ok := rootInteger(a); ok {
		if y, ok := rootInteger(b); ok {
			return x == y
		}
	}
	if x, ok := rootFloat(a); ok {
		y, ok := rootFloat(b)
		return ok && x == y
	}
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && string(x) == string(y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	return a == b
}

func rootInteger(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint:
		return int64(v), uint64(v) <= math.MaxInt64
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	case uint64:
		return int64(v), v <= math.MaxInt64
	}
	return 0, false
}

func rootFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case float32:
		return float64(v), true
	case float64:
		return v, true
	case uint:
		return float64(v), true
	case uint64:
		return float64(v), true
	}
	if i, ok := rootInteger(v); ok {
		return float64(i), true
	}
	return 0, false
}

// TestCorrelationConcurrentMatch runs one filter from many goroutines (run
// with -race).
func TestCorrelationConcurrentMatch(t *testing.T) {
	t.Parallel()
	c := corr(t, CorrelationFields{Subject: "order"}, map[string]any{"region": "eu", "blob": []byte("x"), "at": t0})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			m := &Message{Headers: Headers{Subject: "order"}, Properties: map[string]any{"Region": "eu", "blob": []byte("x"), "at": t0, "g": g}}
			for range 1000 {
				if !c.Match(m) {
					errs <- fmt.Errorf("goroutine %d: no match", g)
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

// benchCorrelation is the filter of BenchmarkCorrelationMatch: two system
// properties and three user properties, one ("Express") found only
// case-insensitively, which scans the message's five properties.
func benchCorrelation(t testing.TB) (*Correlation, *Message) {
	c := corr(t, CorrelationFields{Subject: "order-created", ContentType: "application/json"},
		map[string]any{"region": "us", "amount": int64(250), "Express": true})
	m := typicalMessage()
	m.ContentType = "application/json"
	return c, m
}

func BenchmarkCorrelationMatch(b *testing.B) {
	c, m := benchCorrelation(b)
	b.Run("case-insensitive-key", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !c.Match(m) {
				b.Fatal("no match")
			}
		}
	})
	exact := corr(b, CorrelationFields{Subject: "order-created", ContentType: "application/json"},
		map[string]any{"region": "us", "amount": int64(250), "express": true})
	b.Run("exact-keys", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !exact.Match(m) {
				b.Fatal("no match")
			}
		}
	})
	// The root package's former algorithm on the first filter, for
	// comparison: map iteration over the filter's properties, lookup and
	// sameValue on each.
	want := map[string]any{"region": "us", "amount": int64(250), "Express": true}
	b.Run("root-algorithm", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if m.Subject != "order-created" || m.ContentType != "application/json" {
				b.Fatal("no match")
			}
			for k, w := range want {
				if _, v, ok := rootLookupProp(m.Properties, k); !ok || !rootSameValue(w, v) {
					b.Fatal("no match")
				}
			}
		}
	})
}

// TestCorrelationMatchDoesNotAllocate keeps the zero-allocation promise of
// Correlation.Match, on matches and on every kind of mismatch.
func TestCorrelationMatchDoesNotAllocate(t *testing.T) {
	c, m := benchCorrelation(t)
	if !c.Match(m) {
		t.Fatal("benchmark filter does not match")
	}
	if n := testing.AllocsPerRun(100, func() { c.Match(m) }); n != 0 {
		t.Fatalf("Match allocates %v times per run", n)
	}
	all := corr(t, CorrelationFields{}, map[string]any{"a": nil, "b": []byte("x"), "c": t0, "d": time.Hour, "e": 1.5,
		"f": uint64(math.MaxUint64), "g": "s", "h": false})
	for _, props := range []map[string]any{
		{"A": nil, "B": []byte("x"), "C": t0.Local(), "D": time.Hour, "E": 1.5, "F": math.Pow(2, 64), "G": "s", "H": false},
		{"a": 1, "b": "x", "c": "t", "d": 1, "e": "1.5", "f": true, "g": 1, "h": 0},
		{"a": nil, "b": []byte("x"), "c": t0, "d": time.Hour, "e": 1.5, "f": uint64(math.MaxUint64), "g": "s", "h": true},
	} {
		msg := &Message{Properties: props}
		if n := testing.AllocsPerRun(100, func() { all.Match(msg) }); n != 0 {
			t.Fatalf("Match allocates %v times per run on %v", n, props)
		}
	}
}
