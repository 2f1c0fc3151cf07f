package sqlfilter

import (
	"maps"
	"time"
)

// Fixed messages and parameters shared by the table tests, the fuzz targets
// and the examples. Each call returns fresh values, so a test may change
// them.

// t0 is the enqueue time of the order message.
var t0 = time.Date(2024, 2, 23, 10, 0, 0, 0, time.UTC)

// testMessages returns the fixed messages by name:
//   - "order": most sys. properties set, many user properties of every type;
//   - "corr": the message of the correlation-filter example of
//     Microsoft's filter examples article and the Java SqlRuleFilter sample;
//   - "empty": no properties at all.
func testMessages() map[string]*Message {
	return map[string]*Message{
		"order": {
			MessageID: "m-1",
			Headers: Headers{
				CorrelationID: "abc-123",
				To:            "Store5",
				ReplyTo:       "johndoe@contoso.com",
				Subject:       "Important bus news",
				ContentType:   "application/json",
			},
			SequenceNumber:         42,
			EnqueuedSequenceNumber: 41,
			DeliveryCount:          1,
			Size:                   512,
			EnqueuedTimeUtc:        t0,
			ExpiresAtUtc:           t0.Add(time.Hour),
			TimeToLive:             time.Hour,
			Properties: map[string]any{
				"source":              "orders",
				"tag":                 "queue",
				"StoreId":             "Store8",
				"color":               "red",
				"quantity":            10, // Go int
				"priority":            "high",
				"price":               2.5,
				"Property With Space": "yes",
				"HR-EmployeeID":       int64(7),
				"Contoso & Northwind": true,
				"weird]name":          "w",
				`say "hi"`:            "q",
				"SuperHero":           "SuperMan Returns",
				"http://schemas.microsoft.com/xrm/2011/Claims/EntityLogicalName": "account",
				"property":         `ABC%`,
				"path":             `C:\temp\a_b`,
				"MessageProperty":  int32(1),
				"MessageProperty2": int64(3),
				"DateTimeMp":       t0,
				"DateTimeMp1":      t0,
				"DateTimeMp2":      t0.Add(90 * time.Minute),
				"flag":             true,
				"nothing":          nil,
				"blob":             []byte("x"),
				"big":              uint64(1) << 63,
				"small":            int8(-3),
				"f32":              float32(0.5),
				"name":             "Ünïcode",
				"pattern":          "r%",
				"badesc":           "ab",
				"in":               "reserved",
				"Dup":              "upper",
				"dup":              "lower",
				"DUP2":             "B",
				"Dup2":             "A",
			},
		},
		"corr": {
			Headers: Headers{
				CorrelationID: "email",
				ReplyTo:       "johndoe@contoso.com",
				Subject:       "Important",
			},
			Properties: map[string]any{
				"color":           "Red",
				"sender":          "joseph",
				"MessageProperty": "A",
				"property":        "ABCD",
			},
		},
		"empty": {},
	}
}

// testParams holds every @parameter the table cases use.
func testParams() map[string]any {
	return map[string]any{
		"@stringParam": "orders",
		"@dtParam":     t0.Add(time.Hour),
		"@timespan":    2 * time.Hour,
		"@hour":        time.Hour,
		"min":          5,
		"@flag":        true,
		"@nullp":       nil,
		"@pat":         "Imp%",
		"@bytes":       []byte("x"),
	}
}

// cloneMessage copies m and its Properties map.
func cloneMessage(m *Message) *Message {
	c := *m
	c.Properties = maps.Clone(m.Properties)
	return &c
}
