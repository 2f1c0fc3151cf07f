package server

import (
	"testing"
	"time"

	"github.com/minibus-go/minibus/internal/amqp"
	"github.com/stretchr/testify/require"
)

// putTokenRequest builds a put-token request as each SDK does (W3):
//   - go: message-id a uuid, the audience amqp://host:port/entity, the
//     expiration a string of unix seconds, the token an amqp-value string;
//   - js: message-id a uuid string, reply-to the receiver's link name, an
//     sb:// audience, no expiration;
//   - python: message-id an integer counter, no reply-to, expiration a
//     timestamp;
//   - dotnet: message-id a uuid, an sb:// audience, expiration a timestamp.
func putTokenRequest(sdk, audience string) *amqp.Message {
	m := &amqp.Message{
		Properties: &amqp.Properties{},
		ApplicationProperties: amqp.Map{
			{Key: "operation", Value: "put-token"},
			{Key: "type", Value: "servicebus.windows.net:sastoken"},
			{Key: "name", Value: audience},
		},
		Value:    "SharedAccessSignature sr=x&sig=y&se=1&skn=RootManageSharedAccessKey",
		HasValue: true,
	}
	switch sdk {
	case "go":
		m.Properties.MessageID = amqp.UUID{7}
		m.Properties.ReplyTo = "cbs-reply-to-1"
		m.ApplicationProperties = append(m.ApplicationProperties, amqp.KV{Key: "expiration", Value: "1900000000"})
	case "js":
		m.Properties.MessageID = "0c5a2e3e-8f7b-4a0c-9b1e-000000000001"
		m.Properties.ReplyTo = "cbs-0c5a2e3e"
	case "python":
		m.Properties.MessageID = uint64(1)
		m.ApplicationProperties = append(m.ApplicationProperties, amqp.KV{Key: "expiration", Value: time.Unix(1.9e9, 0)})
	case "dotnet":
		m.Properties.MessageID = amqp.UUID{8}
		m.Properties.ReplyTo = "0123456789abcdef0123456789abcdef"
		m.ApplicationProperties = append(m.ApplicationProperties, amqp.KV{Key: "expiration", Value: time.Unix(1.9e9, 0)})
	}
	return m
}

// TestCBSPutToken: 200 for the namespace and for every existing entity,
// however the audience is written; 404 for a missing one; 400 for a bad
// request (W3). Every reply carries both status keys and the request's
// message-id as correlation-id, in its type.
func TestCBSPutToken(t *testing.T) {
	ns, _ := newTestNamespace(t)
	_, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	tp, err := ns.CreateTopic("t", nil)
	require.NoError(t, err)
	_, err = tp.CreateSubscription("s", nil)
	require.NoError(t, err)
	put := func(sdk, audience string, status int32) *amqp.Message {
		t.Helper()
		req := viaCodec(t, putTokenRequest(sdk, audience))
		reply := viaCodec(t, handleCBS(ns, req))
		checkEnvelope(t, req, reply)
		got, _ := reply.ApplicationProperties.Get("status-code")
		desc, _ := reply.ApplicationProperties.Get("status-description")
		require.Equal(t, status, got, "%s %s: %v", sdk, audience, desc)
		return reply
	}
	for _, sdk := range []string{"go", "js", "python", "dotnet"} {
		for _, aud := range []string{
			"amqp://127.0.0.1:5672/q",
			"sb://localhost:5672/q",
			"sb://localhost/Q/$management",
			"amqp://localhost/q/$DeadLetterQueue",
			"amqps://h/q/$Transfer/$DeadLetterQueue/$management",
			"sb://localhost/t",
			"sb://localhost/t/Subscriptions/s",
			"sb://localhost/t/subscriptions/S/$management",
			"sb://localhost/",
			"sb://localhost",
			"amqp://localhost:5672/$cbs",
			"q",
			"/q",
		} {
			put(sdk, aud, 200)
		}
		reply := put(sdk, "sb://localhost/missing", 404)
		cond, _ := reply.ApplicationProperties.Get("error-condition")
		require.Equal(t, amqp.Symbol("amqp:not-found"), cond)
		desc, _ := reply.ApplicationProperties.Get("statusDescription")
		require.Contains(t, desc, `"missing"`)
		require.Regexp(t, `^The messaging entity .* could not be found`, desc, "the JavaScript SDK's MessagingEntityNotFound")
		put(sdk, "amqp://localhost/t/Subscriptions/nope", 404)
		put(sdk, "sb://localhost/nope/Subscriptions/s/$management", 404)
		put(sdk, "ftp://localhost/q", 400)
		put(sdk, "sb://localhost/q//x", 400)
	}

	bad := func(req *amqp.Message, want string) {
		t.Helper()
		reply := handleCBS(ns, req)
		code, _ := reply.ApplicationProperties.Get("statusCode")
		require.Equal(t, int32(400), code)
		desc, _ := reply.ApplicationProperties.Get("statusDescription")
		require.Contains(t, desc, want)
	}
	req := putTokenRequest("go", "sb://h/q")
	req.ApplicationProperties[0].Value = "delete-token"
	bad(req, `"delete-token"`)
	req = putTokenRequest("go", "sb://h/q")
	req.ApplicationProperties = req.ApplicationProperties[:2]
	bad(req, `"name"`)
	req = putTokenRequest("go", "sb://h/q")
	req.ApplicationProperties[2].Value = int32(5)
	bad(req, `"name"`)
	bad(nil, "nil")
	bad(&amqp.Message{}, `"operation"`)

	require.NoError(t, ns.Close())
	reply := handleCBS(ns, putTokenRequest("go", "sb://h/q"))
	code, _ := reply.ApplicationProperties.Get("statusCode")
	require.Equal(t, int32(500), code, "a closed namespace")
}
