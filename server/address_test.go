package server

import (
	"testing"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// TestParseAddress covers every address form SEMANTICS W2 lists, as each
// SDK writes it: Go and JS plain paths, .NET's leading "/", pyamqp's full
// URIs, CBS audiences with sb:// and amqp:// hosts and ports, and keywords
// in any case.
func TestParseAddress(t *testing.T) {
	dlq, tdlq := minibus.SubQueueDeadLetter, minibus.SubQueueTransfer
	tests := []struct {
		raw  string
		want address
	}{
		{"orders", address{path: "orders"}},
		{"a/b.c-d_e", address{path: "a/b.c-d_e"}},
		{"/orders", address{path: "orders"}},
		{"orders/", address{path: "orders"}},
		{"orders/$DeadLetterQueue", address{path: "orders", subQueue: dlq}},
		{"orders/$deadletterqueue", address{path: "orders", subQueue: dlq}},
		{"orders/$Transfer/$DeadLetterQueue", address{path: "orders", subQueue: tdlq}},
		{"orders/$TRANSFER/$DEADLETTERQUEUE", address{path: "orders", subQueue: tdlq}},
		{"orders/$management", address{kind: nodeManagement, path: "orders"}},
		{"orders/$Management", address{kind: nodeManagement, path: "orders"}},
		{"orders/$DeadLetterQueue/$management", address{kind: nodeManagement, path: "orders", subQueue: dlq}},
		{"orders/$Transfer/$DeadLetterQueue/$management", address{kind: nodeManagement, path: "orders", subQueue: tdlq}},
		{"events/Subscriptions/audit", address{path: "events/Subscriptions/audit", topic: "events", sub: "audit"}},
		{"events/subscriptions/audit", address{path: "events/Subscriptions/audit", topic: "events", sub: "audit"}},
		{"ns/events/SUBSCRIPTIONS/audit", address{path: "ns/events/Subscriptions/audit", topic: "ns/events", sub: "audit"}},
		{"events/Subscriptions/audit/$DeadLetterQueue", address{path: "events/Subscriptions/audit", topic: "events", sub: "audit", subQueue: dlq}},
		{"events/Subscriptions/audit/$Transfer/$DeadLetterQueue", address{path: "events/Subscriptions/audit", topic: "events", sub: "audit", subQueue: tdlq}},
		{"events/Subscriptions/audit/$management", address{kind: nodeManagement, path: "events/Subscriptions/audit", topic: "events", sub: "audit"}},
		{"events/Subscriptions/audit/$DeadLetterQueue/$management", address{kind: nodeManagement, path: "events/Subscriptions/audit", topic: "events", sub: "audit", subQueue: dlq}},
		{"$cbs", address{kind: nodeCBS}},
		{"$CBS", address{kind: nodeCBS}},
		{"/$cbs", address{kind: nodeCBS}},
		{"amqp://localhost/$cbs", address{kind: nodeCBS}},
		{"amqp://127.0.0.1:5672/orders", address{path: "orders"}},
		{"amqps://sbemulatorns.servicebus.windows.net:5671/orders/$DeadLetterQueue", address{path: "orders", subQueue: dlq}},
		{"AMQPS://host/orders", address{path: "orders"}},
		{"sb://localhost/events/Subscriptions/audit", address{path: "events/Subscriptions/audit", topic: "events", sub: "audit"}},
		{"sb://localhost:5672/orders/$management", address{kind: nodeManagement, path: "orders"}},
		{"amqp://host/orders?timeout=5", address{path: "orders"}},
		{"  orders  ", address{path: "orders"}},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := parseAddress(tt.raw)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestParseAddressBad: an empty or malformed address is ErrInvalidArgument
// quoting it (W2).
func TestParseAddressBad(t *testing.T) {
	for _, raw := range []string{
		"",
		"   ",
		"/",
		"amqp://host",
		"amqp://host/",
		"sb:///orders",
		"http://host/orders",
		"orders//x",
		"$management",
		"$DeadLetterQueue",
		"orders/$Transfer",
		"orders/$management/x",
		"orders/$DeadLetterQueue/$DeadLetterQueue",
		"$cbs/$management",
		"orders/$foo",
		"$Transfer/$DeadLetterQueue",
		"events/Subscriptions/audit/$management/$DeadLetterQueue",
	} {
		t.Run(raw, func(t *testing.T) {
			_, err := parseAddress(raw)
			require.ErrorIs(t, err, minibus.ErrInvalidArgument)
			require.Contains(t, err.Error(), quoteName(raw))
		})
	}
}

// TestAddressString gives each address back in canonical form.
func TestAddressString(t *testing.T) {
	for raw, want := range map[string]string{
		"$CBS":                                "$cbs",
		"sb://h/orders":                       "orders",
		"orders/$deadletterqueue/$MANAGEMENT": "orders/$DeadLetterQueue/$management",
		"e/subscriptions/s/$transfer/$deadletterqueue": "e/Subscriptions/s/$Transfer/$DeadLetterQueue",
	} {
		a, err := parseAddress(raw)
		require.NoError(t, err)
		require.Equal(t, want, a.String(), raw)
		again, err := parseAddress(a.String())
		require.NoError(t, err)
		require.Equal(t, a, again)
	}
	for k, want := range map[nodeKind]string{nodeEntity: "entity", nodeManagement: "management", nodeCBS: "cbs", 9: "unknown"} {
		require.Equal(t, want, k.String())
	}
}

// FuzzParseAddress: parsing never panics, and what parses prints back to
// an address that parses the same.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"orders", "e/Subscriptions/s/$DeadLetterQueue/$management", "amqp://h:1/x", "$cbs", "//", "sb://"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		a, err := parseAddress(raw)
		if err != nil {
			return
		}
		again, err := parseAddress(a.String())
		require.NoError(t, err)
		require.Equal(t, a.kind, again.kind)
		require.Equal(t, a.subQueue, again.subQueue)
	})
}
