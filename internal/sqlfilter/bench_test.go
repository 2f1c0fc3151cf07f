package sqlfilter

import (
	"strings"
	"testing"
)

// typicalExpr is the filter of BenchmarkMatchTypical.
const typicalExpr = "amount > 100 AND region IN ('eu','us') AND sys.Label LIKE 'order%'"

// typicalMessage has five user properties, amount and region among them.
func typicalMessage() *Message {
	return &Message{
		MessageID: "m-42",
		Headers:   Headers{Subject: "order-created"},
		Properties: map[string]any{
			"amount":   250,
			"region":   "us",
			"customer": "c-1001",
			"priority": "high",
			"express":  true,
		},
	}
}

// typicalBaseline is the same predicate written by hand in Go, with the
// same tolerance for the numeric type of amount.
func typicalBaseline(m *Message) bool {
	var amount float64
	switch v := m.Properties["amount"].(type) {
	case int:
		amount = float64(v)
	case int64:
		amount = float64(v)
	case float64:
		amount = v
	default:
		return false
	}
	region, _ := m.Properties["region"].(string)
	return amount > 100 && (region == "eu" || region == "us") && strings.HasPrefix(m.Subject, "order")
}

func BenchmarkMatchTypical(b *testing.B) {
	m := typicalMessage()
	b.Run("sqlfilter", func(b *testing.B) {
		f, err := ParseFilter(typicalExpr, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if ok, err := f.Match(m); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("baseline-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !typicalBaseline(m) {
				b.Fatal("no match")
			}
		}
	})
}

func BenchmarkParseFilter(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFilter(typicalExpr, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApplyAction(b *testing.B) {
	a, err := ParseAction("SET amount = amount / 2; REMOVE priority; SET sys.CorrelationId = 'low'", nil)
	if err != nil {
		b.Fatal(err)
	}
	base := typicalMessage()
	b.ReportAllocs()
	for b.Loop() {
		m := cloneMessage(base)
		if err := a.Apply(m); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMatchTypicalDoesNotAllocate keeps the zero-allocation promise of
// Filter.Match for the typical filter.
func TestMatchTypicalDoesNotAllocate(t *testing.T) {
	f, err := ParseFilter(typicalExpr, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := typicalMessage()
	if n := testing.AllocsPerRun(100, func() { _, _ = f.Match(m) }); n != 0 {
		t.Fatalf("Match allocates %v times per run", n)
	}
	if !typicalBaseline(m) {
		t.Fatal("baseline does not match")
	}
}
