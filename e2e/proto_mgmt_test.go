package e2e_test

import (
	"fmt"
	"testing"

	amqp "github.com/Azure/go-amqp"
	"github.com/stretchr/testify/require"
)

// A $management request with a missing or mistyped field, or an unknown
// operation, is answered 400 with a description naming the culprit (W8),
// on the requester's reply link, its correlation-id the request's
// message-id (W3); the node goes on answering.
func TestProto_ManagementBadRequests(t *testing.T) {
	e := newProtoEnv(t)
	q := e.queue("orders", nil)
	s := e.session(nil)
	const replyTo = "proto-reply"
	snd := e.sender(s, "orders/$management")
	r := e.receiver(s, "orders/$management", &amqp.ReceiverOptions{Credit: 10, TargetAddress: replyTo})
	n := 0
	request := func(t *testing.T, op any, body any) (int32, string) {
		t.Helper()
		n++
		id := fmt.Sprint("request-", n)
		to := replyTo
		msg := &amqp.Message{
			Properties:            &amqp.MessageProperties{MessageID: id, ReplyTo: &to},
			ApplicationProperties: map[string]any{},
			Value:                 body,
		}
		if op != nil {
			msg.ApplicationProperties["operation"] = op
		}
		require.NoError(t, snd.Send(e.ctx, msg, nil))
		reply := e.receive(r)
		require.NoError(t, r.AcceptMessage(e.ctx, reply))
		require.NotNil(t, reply.Properties)
		require.Equal(t, id, reply.Properties.CorrelationID)
		status, ok := reply.ApplicationProperties["statusCode"].(int32)
		require.True(t, ok, "statusCode is an int32: %#v", reply.ApplicationProperties)
		require.Equal(t, status, reply.ApplicationProperties["status-code"])
		desc, _ := reply.ApplicationProperties["statusDescription"].(string)
		require.Equal(t, desc, reply.ApplicationProperties["status-description"])
		return status, desc
	}
	for _, tc := range []struct {
		name    string
		op      any
		body    any
		culprit []string
	}{
		{"unknown operation", "com.microsoft:frobnicate", map[string]any{}, []string{`"com.microsoft:frobnicate"`}},
		{"no operation", nil, map[string]any{}, []string{`"operation"`, "missing"}},
		{"operation not a string", int32(5), map[string]any{}, []string{`"operation"`}},
		{"body not a map", "com.microsoft:peek-message", "peek", []string{"body", "map"}},
		{"missing field", "com.microsoft:renew-lock", map[string]any{}, []string{`"lock-tokens"`, "missing"}},
		{"mistyped field", "com.microsoft:renew-lock", map[string]any{"lock-tokens": "not uuids"}, []string{`"lock-tokens"`}},
		{"mistyped count", "com.microsoft:peek-message", map[string]any{"from-sequence-number": int64(1), "message-count": "ten"}, []string{`"message-count"`}},
		{"bad disposition", "com.microsoft:update-disposition", map[string]any{"disposition-status": "bogus", "lock-tokens": []amqp.UUID{{1}}}, []string{`"disposition-status"`, `"bogus"`}},
		{"missing sequence numbers", "com.microsoft:cancel-scheduled-message", map[string]any{}, []string{`"sequence-numbers"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, desc := request(t, tc.op, tc.body)
			require.Equal(t, int32(400), status, desc)
			for _, c := range tc.culprit {
				require.Contains(t, desc, c)
			}
		})
	}
	// The node still answers a good request: a peek of an empty queue is 204.
	status, _ := request(t, "com.microsoft:peek-message", map[string]any{"from-sequence-number": int64(1), "message-count": int32(10)})
	require.Equal(t, int32(204), status)
	e.send(q, "peek me")
	status, _ = request(t, "com.microsoft:peek-message", map[string]any{"from-sequence-number": int64(1), "message-count": int32(10)})
	require.Equal(t, int32(200), status)
}
