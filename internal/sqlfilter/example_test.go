package sqlfilter

import (
	"errors"
	"fmt"
)

func ExampleParseFilter() {
	f, err := ParseFilter("sys.Label LIKE 'order%' AND amount > @min", map[string]any{"@min": 100})
	if err != nil {
		panic(err)
	}
	for _, m := range []*Message{
		{Headers: Headers{Subject: "order-7"}, Properties: map[string]any{"amount": 250}},
		{Headers: Headers{Subject: "order-8"}, Properties: map[string]any{"amount": 50}},
		{Headers: Headers{Subject: "order-9"}}, // amount missing: Unknown, not matched
	} {
		t, _ := f.Eval(m)
		ok, _ := f.Match(m)
		fmt.Println(m.Subject, t, ok)
	}
	// Output:
	// order-7 True true
	// order-8 False false
	// order-9 Unknown false
}

func ExampleParseFilter_syntaxError() {
	_, err := ParseFilter("color = 'red' AND sys.Colour = 'x'", nil)
	var se *SyntaxError
	if errors.As(err, &se) {
		fmt.Println(se.Pos, se.Token, se.Msg)
	}
	// Output:
	// 22 Colour unknown system property sys.Colour
}

func ExampleFilter_Match_evalError() {
	f, _ := ParseFilter("quantity > '10'", nil)
	ok, err := f.Match(&Message{Properties: map[string]any{"quantity": 12}})
	fmt.Println(ok, errors.Is(err, ErrEval))
	fmt.Println(err)
	// Output:
	// false true
	// evaluation error at offset 9 near ">": cannot compare int64 with string
}

func ExampleParseAction() {
	a, err := ParseAction("SET quantity = quantity / 2; REMOVE priority; SET sys.CorrelationId = 'low'", nil)
	if err != nil {
		panic(err)
	}
	m := &Message{Properties: map[string]any{"color": "red", "quantity": 10, "priority": "high"}}
	if err := a.Apply(m); err != nil {
		panic(err)
	}
	fmt.Println(m.Properties, m.CorrelationID)
	// Output:
	// map[color:red quantity:5] low
}

func ExampleParseFilter_parameterError() {
	_, err := ParseFilter("amount > @min", map[string]any{"@max": 100})
	var pe *ParameterError
	if errors.As(err, &pe) {
		fmt.Println(pe.Pos, pe.Name, pe.Msg)
	}
	fmt.Println(err)
	// Output:
	// 9 min not given
	// parameter @min at offset 9: not given
}

func ExampleNewCorrelation() {
	c, err := NewCorrelation(CorrelationFields{Subject: "order"}, map[string]any{"priority": int64(1)})
	if err != nil {
		panic(err)
	}
	for _, m := range []*Message{
		{Headers: Headers{Subject: "order"}, Properties: map[string]any{"Priority": 1.0}}, // any case, any numeric type
		{Headers: Headers{Subject: "order"}, Properties: map[string]any{"priority": "1"}}, // a string is not a number
		{Headers: Headers{Subject: "Order"}, Properties: map[string]any{"priority": 1}},   // system properties are case-sensitive
		{Headers: Headers{Subject: "order"}},                                              // priority missing
	} {
		fmt.Println(c.Match(m))
	}
	// Output:
	// true
	// false
	// false
	// false
}
