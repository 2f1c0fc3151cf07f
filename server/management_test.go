package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
	"github.com/stretchr/testify/require"
)

// fakeLinks stands for a connection's links: receivers by link name and
// session receivers by (entity path, session id).
type fakeLinks struct {
	receivers map[string]receiver
	sessions  map[[2]string]*minibus.SessionReceiver
}

func (f *fakeLinks) receiverOf(name string) (receiver, bool) {
	r, ok := f.receivers[name]
	return r, ok
}

func (f *fakeLinks) sessionOf(path, id string) (*minibus.SessionReceiver, bool) {
	s, ok := f.sessions[[2]string{path, id}]
	return s, ok
}

// fakeLinksOf returns fakeLinks with the given receivers by link name.
func fakeLinksOf(named map[string]receiver) *fakeLinks {
	f := &fakeLinks{receivers: named, sessions: map[[2]string]*minibus.SessionReceiver{}}
	return f
}

// withSession adds a session receiver for path.
func (f *fakeLinks) withSession(path string, sr *minibus.SessionReceiver) *fakeLinks {
	f.sessions[[2]string{path, sr.SessionID()}] = sr
	return f
}

// viaCodec encodes m and decodes it again, as it crosses the wire: values
// come back in the types the codec decodes (typed slices for arrays, Map
// for maps).
func viaCodec(t *testing.T, m *amqp.Message) *amqp.Message {
	t.Helper()
	return decodeAMQP(t, encodeAMQP(t, m))
}

var requestCount uint64

// goRequest builds a $management request as azservicebus (internal/mgmt.go
// and rpc.go) does: message-id a uuid, reply-to the RPC link's address,
// string-keyed application properties with operation, server-timeout
// (Go uint: ulong) and associated-link-name when given, and an amqp-value
// map body.
func goRequest(op string, body amqp.Map, assoc string) *amqp.Message {
	requestCount++
	id := amqp.UUID{0xaa, byte(requestCount >> 8), byte(requestCount)}
	app := amqp.Map{{Key: "operation", Value: op}, {Key: "server-timeout", Value: uint64(59_000)}}
	if assoc != "" {
		app = append(app, amqp.KV{Key: "associated-link-name", Value: assoc})
	}
	return &amqp.Message{
		Properties:            &amqp.Properties{MessageID: id, ReplyTo: "$management$$management-reply-to-0f0e"},
		ApplicationProperties: app,
		Value:                 body,
		HasValue:              true,
	}
}

// jsRequest builds a request as @azure/service-bus's managementClient.js
// does through rhea: message-id a uuid string, reply-to the receiver link's
// name, the application properties operation, com.microsoft:tracking-id
// and associated-link-name when given.
func jsRequest(op string, body amqp.Map, assoc string) *amqp.Message {
	requestCount++
	app := amqp.Map{{Key: "operation", Value: op}, {Key: "com.microsoft:tracking-id", Value: "6e1f5a3c-0000-4000-8000-000000000001"}}
	if assoc != "" {
		app = append(app, amqp.KV{Key: "associated-link-name", Value: assoc})
	}
	return &amqp.Message{
		Properties:            &amqp.Properties{MessageID: fmt.Sprintf("1b4e28ba-2fa1-11d2-883f-%012d", requestCount), ReplyTo: "mgmt-reply-link"},
		ApplicationProperties: app,
		Value:                 body,
		HasValue:              true,
	}
}

// mgmtCall sends req through the codec to m.handle, and the reply back through
// the codec, checks the reply's envelope (W3: correlation-id the request's
// message-id in its type, both status keys int32, both description keys
// strings, an amqp-value map body) and its status, and returns the decoded
// reply.
func mgmtCall(t *testing.T, m *management, l mgmtLinks, req *amqp.Message, status int32) *amqp.Message {
	t.Helper()
	req = viaCodec(t, req)
	reply := viaCodec(t, m.handle(context.Background(), l, req))
	checkEnvelope(t, req, reply)
	got, _ := reply.ApplicationProperties.Get("status-code")
	desc, _ := reply.ApplicationProperties.Get("status-description")
	require.Equal(t, status, got, "status (%v)", desc)
	return reply
}

// checkEnvelope checks what every $management and $cbs reply carries.
func checkEnvelope(t *testing.T, req, reply *amqp.Message) {
	t.Helper()
	require.NotNil(t, reply.Properties)
	require.Equal(t, req.Properties.MessageID, reply.Properties.CorrelationID, "correlation-id: the message-id, same type")
	require.Equal(t, req.Properties.ReplyTo, reply.Properties.To)
	code, ok := reply.ApplicationProperties.Get("status-code")
	require.True(t, ok)
	require.IsType(t, int32(0), code)
	code2, ok := reply.ApplicationProperties.Get("statusCode")
	require.True(t, ok)
	require.Equal(t, code, code2)
	d, ok := reply.ApplicationProperties.Get("status-description")
	require.True(t, ok)
	require.IsType(t, "", d)
	d2, ok := reply.ApplicationProperties.Get("statusDescription")
	require.True(t, ok)
	require.Equal(t, d, d2)
	require.True(t, reply.HasValue)
	require.IsType(t, amqp.Map{}, reply.Value)
	if code.(int32) >= 300 {
		cond, ok := reply.ApplicationProperties.Get("error-condition")
		require.True(t, ok)
		require.IsType(t, amqp.Symbol(""), cond)
	}
}

// mgmtCallErr calls and checks an error reply: its status, its
// error-condition, and that its description contains each of want.
func mgmtCallErr(t *testing.T, m *management, l mgmtLinks, req *amqp.Message, status int32, cond amqp.Symbol, want ...string) {
	t.Helper()
	reply := mgmtCall(t, m, l, req, status)
	c, _ := reply.ApplicationProperties.Get("error-condition")
	require.Equal(t, cond, c)
	d, _ := reply.ApplicationProperties.Get("statusDescription")
	for _, w := range want {
		require.Contains(t, d, w)
	}
}

// replyBody returns the reply's body map.
func replyBody(reply *amqp.Message) amqp.Map { return reply.Value.(amqp.Map) }

// replyField returns the body's value at key, failing when absent.
func replyField(t *testing.T, reply *amqp.Message, key string) any {
	t.Helper()
	v, ok := replyBody(reply).Get(key)
	require.True(t, ok, "reply has no %q", key)
	return v
}

// replyMessages decodes the messages of a peek or receive-by-sequence-number
// reply: a list of maps, each with the message as binary.
func replyMessages(t *testing.T, reply *amqp.Message) ([]*amqp.Message, []amqp.Map) {
	t.Helper()
	list, ok := replyField(t, reply, "messages").([]any)
	require.True(t, ok, "messages is a list (the Go SDK asserts []any)")
	var msgs []*amqp.Message
	var entries []amqp.Map
	for _, e := range list {
		entry, ok := e.(amqp.Map)
		require.True(t, ok, "each entry is a map")
		b, ok := entry.Get("message")
		require.True(t, ok)
		require.IsType(t, []byte{}, b)
		msgs = append(msgs, decodeAMQP(t, b.([]byte)))
		entries = append(entries, entry)
	}
	return msgs, entries
}

// seqOf is a decoded message's sequence number.
func seqOf(t *testing.T, m *amqp.Message) int64 {
	t.Helper()
	return annotationOf(t, m.MessageAnnotations, annSequenceNumber).(int64)
}

// sendTo sends bodies to a queue or topic.
func sendTo(t *testing.T, ns *minibus.Namespace, path string, msgs ...*minibus.Message) {
	t.Helper()
	e, err := mustAddress(t, path).resolve(ns)
	require.NoError(t, err)
	require.NoError(t, e.sendMessages(context.Background(), msgs))
}

// mgmtNode returns the management node of path, closed at the end of the test.
func mgmtNode(t *testing.T, ns *minibus.Namespace, path string) *management {
	t.Helper()
	m := newManagement(ns, mustAddress(t, path+"/$management"))
	t.Cleanup(func() { m.close(context.Background()) })
	return m
}

// lockTokens is the uuid array the SDKs send.
func lockTokens(toks ...[16]byte) []amqp.UUID {
	out := make([]amqp.UUID, len(toks))
	for i, tok := range toks {
		out[i] = tok
	}
	return out
}

// TestManagementRenewLock renews through the associated link (Go) and
// through the node's own receiver (JS, no link), on the mock clock (L5):
// expirations is a timestamp array.
func TestManagementRenewLock(t *testing.T) {
	ns, clk := newTestNamespace(t)
	ctx := context.Background()
	q, err := ns.CreateQueue("q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
	require.NoError(t, err)
	sendTo(t, ns, "q", &minibus.Message{MessageID: "a"}, &minibus.Message{MessageID: "b"})
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	got, err := r.ReceiveMessages(ctx, 2, nil)
	require.NoError(t, err)
	require.Len(t, got, 2)
	m := mgmtNode(t, ns, "q")
	l := fakeLinksOf(map[string]receiver{"link-1": r})

	clk.Add(10 * time.Second)
	reply := mgmtCall(t, m, l, goRequest(opRenewLock, amqp.Map{{Key: "lock-tokens", Value: lockTokens(got[0].LockToken, got[1].LockToken)}}, "link-1"), 200)
	exps, ok := replyField(t, reply, "expirations").([]time.Time)
	require.True(t, ok, "expirations is a timestamp array")
	require.Len(t, exps, 2)
	for _, e := range exps {
		require.True(t, clk.Now().Add(30*time.Second).Equal(e), e)
	}

	clk.Add(10 * time.Second)
	reply = mgmtCall(t, m, nil, jsRequest(opRenewLock, amqp.Map{{Key: "lock-tokens", Value: lockTokens(got[0].LockToken)}}, ""), 200)
	require.True(t, clk.Now().Add(30*time.Second).Equal(replyField(t, reply, "expirations").([]time.Time)[0]))

	// The lock ends at the renewed instant (L5), on the namespace clock.
	clk.Add(31 * time.Second)
	mgmtCallErr(t, m, l, goRequest(opRenewLock, amqp.Map{{Key: "lock-tokens", Value: lockTokens(got[0].LockToken)}}, "link-1"),
		410, "com.microsoft:message-lock-lost", "lock lost")
	mgmtCallErr(t, m, nil, goRequest(opRenewLock, amqp.Map{{Key: "lock-tokens", Value: lockTokens([16]byte{9})}}, ""),
		410, "com.microsoft:message-lock-lost")

	mgmtCallErr(t, m, nil, goRequest(opRenewLock, amqp.Map{}, ""), 400, "amqp:invalid-field", `"lock-tokens": missing`, opRenewLock)
	mgmtCallErr(t, m, nil, goRequest(opRenewLock, amqp.Map{{Key: "lock-tokens", Value: "x"}}, ""), 400, "amqp:invalid-field", `"lock-tokens"`, "string")
	mgmtCallErr(t, m, nil, goRequest(opRenewLock, amqp.Map{{Key: "lock-tokens", Value: []amqp.UUID{}}}, ""), 400, "amqp:invalid-field", "empty")
	mgmtCallErr(t, m, nil, goRequest(opRenewLock, amqp.Map{{Key: "lock-tokens", Value: []any{"x"}}}, ""), 400, "amqp:invalid-field", `"lock-tokens[0]"`)
}

// TestManagementReceiveBySequence fetches deferred messages (L9) as the Go
// SDK does (peek-lock, the associated link) and settles one through
// update-disposition after its link is gone (W6, L10); as JS does in
// receive-and-delete mode; each entry carries lock-token and the message
// the x-opt-lock-token delivery annotation (W8).
func TestManagementReceiveBySequence(t *testing.T) {
	ns, clk := newTestNamespace(t)
	ctx := context.Background()
	q, err := ns.CreateQueue("q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
	require.NoError(t, err)
	sendTo(t, ns, "q", &minibus.Message{MessageID: "a", Body: []byte("A")}, &minibus.Message{MessageID: "b"}, &minibus.Message{MessageID: "c"})
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	got, err := r.ReceiveMessages(ctx, 3, nil)
	require.NoError(t, err)
	for _, rm := range got {
		require.NoError(t, r.DeferMessage(ctx, rm, nil))
	}
	m := mgmtNode(t, ns, "q")
	l := fakeLinksOf(map[string]receiver{"recv": r})

	req := goRequest(opReceiveBySequence, amqp.Map{
		{Key: "sequence-numbers", Value: []int64{got[1].SequenceNumber, got[0].SequenceNumber}},
		{Key: "receiver-settle-mode", Value: uint32(1)},
	}, "recv")
	reply := mgmtCall(t, m, l, req, 200)
	msgs, entries := replyMessages(t, reply)
	require.Len(t, msgs, 2)
	require.Equal(t, got[1].SequenceNumber, seqOf(t, msgs[0]), "in the order asked")
	require.Equal(t, got[0].SequenceNumber, seqOf(t, msgs[1]))
	var toks [][16]byte
	for i, msg := range msgs {
		tok, ok := entries[i].Get("lock-token")
		require.True(t, ok, "JS reads lock-token in the entry")
		require.IsType(t, amqp.UUID{}, tok)
		da, ok := msg.DeliveryAnnotations.Get(annLockToken)
		require.True(t, ok, "Go reads the x-opt-lock-token delivery annotation")
		require.Equal(t, tok, da)
		require.Equal(t, int32(1), annotationOf(t, msg.MessageAnnotations, annMessageState), "deferred (L14)")
		lu := annotationOf(t, msg.MessageAnnotations, annLockedUntil).(time.Time)
		require.True(t, clk.Now().Add(30*time.Second).Equal(lu))
		require.Equal(t, uint32(1), msg.Header.DeliveryCount, "the second delivery")
		toks = append(toks, tok.(amqp.UUID))
	}
	require.Equal(t, [][]byte{[]byte("A")}, msgs[1].Data)

	// The link is gone: the lock outlives it, and $management settles by
	// token through the node's own receiver (W6, L10).
	require.NoError(t, r.Close(ctx))
	mgmtCall(t, m, nil, goRequest(opUpdateDisposition, amqp.Map{
		{Key: "disposition-status", Value: "completed"},
		{Key: "lock-tokens", Value: lockTokens(toks[0])},
	}, "recv"), 200)
	mgmtCall(t, m, nil, goRequest(opUpdateDisposition, amqp.Map{
		{Key: "disposition-status", Value: "completed"},
		{Key: "lock-tokens", Value: lockTokens(toks[0])},
	}, ""), 410)

	// JS, receive-and-delete: no lock token anywhere, and the message is gone.
	reply = mgmtCall(t, m, nil, jsRequest(opReceiveBySequence, amqp.Map{
		{Key: "sequence-numbers", Value: []int64{got[2].SequenceNumber}},
		{Key: "receiver-settle-mode", Value: uint32(0)},
	}, ""), 200)
	msgs, entries = replyMessages(t, reply)
	require.Len(t, msgs, 1)
	_, ok := entries[0].Get("lock-token")
	require.False(t, ok)
	require.Empty(t, msgs[0].DeliveryAnnotations)
	_, ok = msgs[0].MessageAnnotations.Get(annLockedUntil)
	require.False(t, ok)
	rt := q.RuntimeProperties()
	require.Equal(t, int64(1), rt.ActiveMessageCount, "b still deferred and locked; a completed, c deleted")

	mgmtCallErr(t, m, nil, goRequest(opReceiveBySequence, amqp.Map{
		{Key: "sequence-numbers", Value: []int64{999}}, {Key: "receiver-settle-mode", Value: uint32(1)},
	}, ""), 404, "com.microsoft:message-not-found", "message not found")
	reply = mgmtCall(t, m, nil, goRequest(opReceiveBySequence, amqp.Map{
		{Key: "sequence-numbers", Value: []int64{}}, {Key: "receiver-settle-mode", Value: uint32(1)},
	}, ""), 204)
	sc, _ := reply.ApplicationProperties.Get("statusCode")
	require.Equal(t, int32(204), sc, "JS tests statusCode for 204")
	mgmtCallErr(t, m, nil, goRequest(opReceiveBySequence, amqp.Map{{Key: "receiver-settle-mode", Value: uint32(1)}}, ""), 400, "amqp:invalid-field", `"sequence-numbers": missing`)
	mgmtCallErr(t, m, nil, goRequest(opReceiveBySequence, amqp.Map{
		{Key: "sequence-numbers", Value: []int64{1}}, {Key: "receiver-settle-mode", Value: uint32(2)},
	}, ""), 400, "amqp:invalid-field", `"receiver-settle-mode"`, "out of range")
	mgmtCallErr(t, m, nil, goRequest(opReceiveBySequence, amqp.Map{
		{Key: "sequence-numbers", Value: []any{int64(1), "x"}},
	}, ""), 400, "amqp:invalid-field", `"sequence-numbers[1]"`)
}

// TestManagementPeek peeks as Go (explicit from-sequence-number, long, and
// message-count, int) and JS (omit-message-body) do (L12); nothing to peek
// is 204.
func TestManagementPeek(t *testing.T) {
	ns, clk := newTestNamespace(t)
	ctx := context.Background()
	q, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	sendTo(t, ns, "q", &minibus.Message{Body: []byte("1")}, &minibus.Message{Body: []byte("2")}, &minibus.Message{Body: []byte("3")})
	seqs, err := q.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte("later")}}, clk.Now().Add(time.Hour), nil)
	require.NoError(t, err)
	m := mgmtNode(t, ns, "q")

	reply := mgmtCall(t, m, nil, goRequest(opPeek, amqp.Map{
		{Key: "from-sequence-number", Value: int64(1)}, {Key: "message-count", Value: int32(2)},
	}, "no-such-link"), 200)
	msgs, _ := replyMessages(t, reply)
	require.Len(t, msgs, 2)
	require.Equal(t, int64(1), seqOf(t, msgs[0]))
	require.Equal(t, int64(2), seqOf(t, msgs[1]))
	for _, msg := range msgs {
		require.Empty(t, msg.DeliveryAnnotations, "peeked messages have no lock token")
		_, ok := msg.MessageAnnotations.Get(annLockedUntil)
		require.False(t, ok)
	}
	require.Equal(t, [][]byte{[]byte("1")}, msgs[0].Data)

	reply = mgmtCall(t, m, nil, jsRequest(opPeek, amqp.Map{
		{Key: "from-sequence-number", Value: int64(3)}, {Key: "message-count", Value: int32(10)},
		{Key: "omit-message-body", Value: true},
	}, ""), 200)
	msgs, _ = replyMessages(t, reply)
	require.Len(t, msgs, 2, "the scheduled message too (S2)")
	require.Equal(t, [][]byte{{}}, msgs[0].Data, "body omitted")
	require.Equal(t, seqs[0], seqOf(t, msgs[1]))
	require.Equal(t, int32(2), annotationOf(t, msgs[1].MessageAnnotations, annMessageState), "scheduled")

	mgmtCall(t, m, nil, goRequest(opPeek, amqp.Map{
		{Key: "from-sequence-number", Value: int64(100)}, {Key: "message-count", Value: int32(1)},
	}, ""), 204)

	mgmtCallErr(t, m, nil, goRequest(opPeek, amqp.Map{{Key: "from-sequence-number", Value: int64(1)}}, ""), 400, "amqp:invalid-field", `"message-count": missing`)
	mgmtCallErr(t, m, nil, goRequest(opPeek, amqp.Map{{Key: "message-count", Value: int32(1)}}, ""), 400, "amqp:invalid-field", `"from-sequence-number": missing`)
	mgmtCallErr(t, m, nil, goRequest(opPeek, amqp.Map{
		{Key: "from-sequence-number", Value: "1"}, {Key: "message-count", Value: int32(1)},
	}, ""), 400, "amqp:invalid-field", `"from-sequence-number"`, "string")
	mgmtCallErr(t, m, nil, goRequest(opPeek, amqp.Map{
		{Key: "from-sequence-number", Value: int64(1)}, {Key: "message-count", Value: int32(0)},
	}, ""), 400, "amqp:invalid-field")
	mgmtCallErr(t, m, nil, goRequest(opPeek, amqp.Map{
		{Key: "from-sequence-number", Value: int64(1)}, {Key: "message-count", Value: int32(1)}, {Key: "omit-message-body", Value: "yes"},
	}, ""), 400, "amqp:invalid-field", `"omit-message-body"`)

	// A dead-letter queue's node peeks the dead-letter queue.
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	got, err := r.ReceiveMessages(ctx, 1, nil)
	require.NoError(t, err)
	require.NoError(t, r.DeadLetterMessage(ctx, got[0], &minibus.DeadLetterOptions{Reason: "r", ErrorDescription: "d"}))
	dlq := mgmtNode(t, ns, "q/$DeadLetterQueue")
	reply = mgmtCall(t, dlq, nil, goRequest(opPeek, amqp.Map{
		{Key: "from-sequence-number", Value: int64(1)}, {Key: "message-count", Value: int32(5)},
	}, ""), 200)
	msgs, _ = replyMessages(t, reply)
	require.Len(t, msgs, 1)
	reason, _ := msgs[0].ApplicationProperties.Get("DeadLetterReason")
	require.Equal(t, "r", reason)
	desc, _ := msgs[0].ApplicationProperties.Get("DeadLetterErrorDescription")
	require.Equal(t, "d", desc)
}

// TestManagementUpdateDisposition settles by lock token with each status
// the SDKs send (L3, W8): completed, abandoned and defered with
// properties-to-modify, suspended (dead-letter) with a reason and a
// description.
func TestManagementUpdateDisposition(t *testing.T) {
	ns, _ := newTestNamespace(t)
	ctx := context.Background()
	q, err := ns.CreateQueue("q", &minibus.QueueProperties{MaxDeliveryCount: 5})
	require.NoError(t, err)
	sendTo(t, ns, "q", &minibus.Message{MessageID: "a"}, &minibus.Message{MessageID: "b"}, &minibus.Message{MessageID: "c"},
		&minibus.Message{MessageID: "d"}, &minibus.Message{MessageID: "e"})
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	got, err := r.ReceiveMessages(ctx, 5, nil)
	require.NoError(t, err)
	require.Len(t, got, 5)
	m := mgmtNode(t, ns, "q")
	l := fakeLinksOf(map[string]receiver{"recv": r})
	settle := func(mk func(string, amqp.Map, string) *amqp.Message, rm *minibus.ReceivedMessage, status string, extra ...amqp.KV) *amqp.Message {
		return mk(opUpdateDisposition, append(amqp.Map{
			{Key: "disposition-status", Value: status},
			{Key: "lock-tokens", Value: lockTokens(rm.LockToken)},
		}, extra...), "recv")
	}
	props := amqp.KV{Key: "properties-to-modify", Value: amqp.Map{{Key: "k", Value: "v"}, {Key: "n", Value: int64(2)}}}

	mgmtCall(t, m, l, settle(goRequest, got[0], "completed"), 200)
	mgmtCall(t, m, l, settle(jsRequest, got[1], "abandoned", props), 200)
	mgmtCall(t, m, l, settle(goRequest, got[2], "defered", props), 200)
	mgmtCall(t, m, nil, settle(jsRequest, got[3], "suspended",
		amqp.KV{Key: "deadletter-reason", Value: "bad"}, amqp.KV{Key: "deadletter-description", Value: "very bad"}, props), 200)
	mgmtCall(t, m, l, settle(goRequest, got[4], "deferred"), 200)

	mgmtCall(t, m, l, settle(goRequest, got[0], "completed"), 410)
	mgmtCallErr(t, m, l, settle(goRequest, got[1], "finished"), 400, "amqp:invalid-field", `"disposition-status"`, "finished")
	mgmtCallErr(t, m, l, goRequest(opUpdateDisposition, amqp.Map{{Key: "lock-tokens", Value: lockTokens(got[1].LockToken)}}, ""), 400, "amqp:invalid-field", `"disposition-status": missing`)
	mgmtCallErr(t, m, l, settle(goRequest, got[1], "abandoned", amqp.KV{Key: "properties-to-modify", Value: "x"}), 400, "amqp:invalid-field", `"properties-to-modify"`)
	mgmtCallErr(t, m, l, settle(goRequest, got[1], "abandoned", amqp.KV{Key: "properties-to-modify", Value: amqp.Map{{Key: "l", Value: []any{int32(1)}}}}), 400, "amqp:invalid-field", `"l"`)
	mgmtCallErr(t, m, l, settle(goRequest, got[1], "suspended", amqp.KV{Key: "deadletter-reason", Value: int32(1)}), 400, "amqp:invalid-field", `"deadletter-reason"`)

	// What each did: a gone, b available again with the properties, c and e
	// deferred, d in the dead-letter queue with reason and description.
	again, err := r.ReceiveMessages(ctx, 5, &minibus.ReceiveMessagesOptions{NoWait: true})
	require.NoError(t, err)
	require.Len(t, again, 1)
	require.Equal(t, "b", again[0].MessageID)
	require.Equal(t, "v", again[0].ApplicationProperties["k"])
	require.Equal(t, uint32(2), again[0].DeliveryCount)
	def, err := r.ReceiveDeferredMessages(ctx, []int64{got[2].SequenceNumber, got[4].SequenceNumber}, nil)
	require.NoError(t, err)
	require.Equal(t, "v", def[0].ApplicationProperties["k"])
	dr, err := q.NewReceiver(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	require.NoError(t, err)
	dl, err := dr.ReceiveMessages(ctx, 1, nil)
	require.NoError(t, err)
	require.Equal(t, "d", dl[0].MessageID)
	require.Equal(t, "bad", dl[0].DeadLetterReason)
	require.Equal(t, "very bad", dl[0].DeadLetterErrorDescription)
	require.Equal(t, int64(2), dl[0].ApplicationProperties["n"])

	// The dead-letter queue's node settles the dead-letter queue's messages.
	dlq := mgmtNode(t, ns, "q/$DeadLetterQueue")
	mgmtCall(t, dlq, nil, settle(goRequest, dl[0], "completed"), 200)
	require.Equal(t, int64(0), q.RuntimeProperties().DeadLetterMessageCount)
}

// scheduleEntry is one messages entry of a schedule-message request as the
// Go SDK builds it: message-id, the message encoded with
// x-opt-scheduled-enqueue-time, session-id when set.
func scheduleEntry(t *testing.T, id string, at time.Time, session string) amqp.Map {
	t.Helper()
	am := &amqp.Message{
		Properties:         &amqp.Properties{MessageID: id, GroupID: session},
		MessageAnnotations: amqp.Map{{Key: annScheduledEnqueueTime, Value: at}},
		Data:               [][]byte{[]byte("body-" + id)},
	}
	e := amqp.Map{{Key: "message-id", Value: id}, {Key: "message", Value: encodeAMQP(t, am)}}
	if session != "" {
		e = append(e, amqp.KV{Key: "session-id", Value: session})
	}
	return e
}

// TestManagementSchedule schedules and cancels (S1, S3) on a queue and a
// topic; the messages activate when the mock clock reaches their time.
func TestManagementSchedule(t *testing.T) {
	ns, clk := newTestNamespace(t)
	ctx := context.Background()
	q, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	tp, err := ns.CreateTopic("t", nil)
	require.NoError(t, err)
	sub, err := tp.CreateSubscription("s", nil)
	require.NoError(t, err)
	m := mgmtNode(t, ns, "q")
	at := clk.Now().Add(time.Hour)

	req := goRequest(opSchedule, amqp.Map{{Key: "messages", Value: []any{
		scheduleEntry(t, "a", at, ""), scheduleEntry(t, "b", at, ""), scheduleEntry(t, "c", at.Add(time.Minute), ""),
	}}}, "sender-link")
	req.ApplicationProperties = append(req.ApplicationProperties, amqp.KV{Key: "com.microsoft:server-timeout", Value: uint64(60000)})
	reply := mgmtCall(t, m, nil, req, 200)
	seqs, ok := replyField(t, reply, "sequence-numbers").([]int64)
	require.True(t, ok, "sequence-numbers is a long array")
	require.Len(t, seqs, 3)
	require.Equal(t, int64(3), q.RuntimeProperties().ScheduledMessageCount)

	mgmtCall(t, m, nil, jsRequest(opCancelScheduled, amqp.Map{{Key: "sequence-numbers", Value: []int64{seqs[1]}}}, ""), 200)
	require.Equal(t, int64(2), q.RuntimeProperties().ScheduledMessageCount)
	mgmtCallErr(t, m, nil, goRequest(opCancelScheduled, amqp.Map{{Key: "sequence-numbers", Value: []int64{seqs[1]}}}, ""), 404, "com.microsoft:message-not-found")
	mgmtCallErr(t, m, nil, goRequest(opCancelScheduled, amqp.Map{}, ""), 400, "amqp:invalid-field", `"sequence-numbers": missing`)

	clk.Add(time.Hour)
	r, err := q.NewReceiver(&minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
	require.NoError(t, err)
	got, err := r.ReceiveMessages(ctx, 5, &minibus.ReceiveMessagesOptions{NoWait: true})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "a", got[0].MessageID)
	require.Equal(t, "body-a", string(got[0].Body))
	clk.Add(time.Minute)
	got, err = r.ReceiveMessages(ctx, 5, &minibus.ReceiveMessagesOptions{NoWait: true})
	require.NoError(t, err)
	require.Equal(t, "c", got[0].MessageID)

	// JS's entry: the message-id only in the entry when the message has
	// none; a topic schedules for its subscriptions.
	tm := mgmtNode(t, ns, "t")
	am := &amqp.Message{MessageAnnotations: amqp.Map{{Key: annScheduledEnqueueTime, Value: clk.Now().Add(time.Second)}}}
	reply = mgmtCall(t, tm, nil, jsRequest(opSchedule, amqp.Map{{Key: "messages", Value: []any{
		amqp.Map{{Key: "message", Value: encodeAMQP(t, am)}, {Key: "message-id", Value: "from-entry"}, {Key: "partition-key", Value: "pk"}},
	}}}, ""), 200)
	require.Len(t, replyField(t, reply, "sequence-numbers").([]int64), 1)
	clk.Add(time.Second)
	sr, err := sub.NewReceiver(nil)
	require.NoError(t, err)
	got, err = sr.ReceiveMessages(ctx, 1, nil)
	require.NoError(t, err)
	require.Equal(t, "from-entry", got[0].MessageID)
	require.Equal(t, "pk", got[0].PartitionKey)

	noTime := amqp.Map{{Key: "message", Value: encodeAMQP(t, &amqp.Message{Data: [][]byte{{1}}})}}
	mgmtCallErr(t, m, nil, goRequest(opSchedule, amqp.Map{{Key: "messages", Value: []any{noTime}}}, ""), 400, "amqp:invalid-field", "messages[0].message", string(annScheduledEnqueueTime))
	mgmtCallErr(t, m, nil, goRequest(opSchedule, amqp.Map{{Key: "messages", Value: []any{}}}, ""), 400, "amqp:invalid-field", "empty")
	mgmtCallErr(t, m, nil, goRequest(opSchedule, amqp.Map{{Key: "messages", Value: []any{"x"}}}, ""), 400, "amqp:invalid-field", "messages[0]")
	mgmtCallErr(t, m, nil, goRequest(opSchedule, amqp.Map{{Key: "messages", Value: []any{amqp.Map{}}}}, ""), 400, "amqp:invalid-field", "messages[0].message")
	mgmtCallErr(t, m, nil, goRequest(opSchedule, amqp.Map{{Key: "messages", Value: []any{amqp.Map{{Key: "message", Value: []byte{0xff}}}}}}, ""), 400, "amqp:invalid-field", "messages[0].message")
	mgmtCallErr(t, m, nil, goRequest(opSchedule, amqp.Map{{Key: "messages", Value: "x"}}, ""), 400, "amqp:invalid-field", `"messages"`)
	mgmtCallErr(t, m, nil, goRequest(opSchedule, amqp.Map{}, ""), 400, "amqp:invalid-field", `"messages": missing`)
	mgmtCallErr(t, mgmtNode(t, ns, "t/Subscriptions/s"), nil, goRequest(opSchedule, amqp.Map{{Key: "messages", Value: []any{scheduleEntry(t, "x", at, "")}}}, ""),
		400, "amqp:invalid-field", "queue or topic")
	mgmtCallErr(t, mgmtNode(t, ns, "q/$DeadLetterQueue"), nil, goRequest(opCancelScheduled, amqp.Map{{Key: "sequence-numbers", Value: []int64{1}}}, ""),
		400, "amqp:invalid-field")
}

// TestManagementSessions runs the session operations (SS2–SS8) as the Go
// SDK does (session-id and the session receiver's link) and as JS does
// (session-id only), and lists sessions (get-message-sessions).
func TestManagementSessions(t *testing.T) {
	ns, clk := newTestNamespace(t)
	ctx := context.Background()
	q, err := ns.CreateQueue("sq", &minibus.QueueProperties{RequiresSession: true, LockDuration: 20 * time.Second})
	require.NoError(t, err)
	sendTo(t, ns, "sq", &minibus.Message{SessionID: "a", MessageID: "a1"}, &minibus.Message{SessionID: "a", MessageID: "a2"},
		&minibus.Message{SessionID: "b", MessageID: "b1"})
	sr, err := q.AcceptSession(ctx, "a", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sr.Close(ctx) })
	l := fakeLinksOf(map[string]receiver{"session-link": sr}).withSession("sq", sr)
	m := mgmtNode(t, ns, "sq")
	sid := amqp.KV{Key: "session-id", Value: "a"}

	clk.Add(5 * time.Second)
	reply := mgmtCall(t, m, l, goRequest(opRenewSessionLock, amqp.Map{sid}, "session-link"), 200)
	exp, ok := replyField(t, reply, "expiration").(time.Time)
	require.True(t, ok, "expiration is a timestamp")
	require.True(t, clk.Now().Add(20*time.Second).Equal(exp))
	require.True(t, sr.LockedUntil().Equal(exp))

	reply = mgmtCall(t, m, l, goRequest(opGetSessionState, amqp.Map{sid}, "session-link"), 200)
	st, ok := replyBody(reply).Get("session-state")
	require.True(t, ok)
	require.Nil(t, st, "never set: null")
	mgmtCall(t, m, l, jsRequest(opSetSessionState, amqp.Map{sid, {Key: "session-state", Value: []byte("xyz")}}, ""), 200)
	reply = mgmtCall(t, m, l, jsRequest(opGetSessionState, amqp.Map{sid}, ""), 200)
	require.Equal(t, []byte("xyz"), replyField(t, reply, "session-state"))
	state, err := sr.GetSessionState(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []byte("xyz"), state)
	// Go's SetSessionState(nil) arrives as an empty binary: it clears, as
	// null does.
	mgmtCall(t, m, l, goRequest(opSetSessionState, amqp.Map{sid, {Key: "session-state", Value: []byte{}}}, "session-link"), 200)
	require.Nil(t, replyField(t, mgmtCall(t, m, l, goRequest(opGetSessionState, amqp.Map{sid}, ""), 200), "session-state"))
	mgmtCall(t, m, l, goRequest(opSetSessionState, amqp.Map{sid, {Key: "session-state", Value: []byte("1")}}, ""), 200)
	mgmtCall(t, m, l, goRequest(opSetSessionState, amqp.Map{sid, {Key: "session-state", Value: nil}}, ""), 200)
	require.Nil(t, replyField(t, mgmtCall(t, m, l, goRequest(opGetSessionState, amqp.Map{sid}, ""), 200), "session-state"))

	// The session receiver's link alone names the session.
	mgmtCall(t, m, l, goRequest(opRenewSessionLock, amqp.Map{}, "session-link"), 200)

	// Peek and deferred messages through the session (SS8).
	reply = mgmtCall(t, m, l, jsRequest(opPeek, amqp.Map{
		{Key: "from-sequence-number", Value: int64(1)}, {Key: "message-count", Value: int32(10)}, sid,
	}, ""), 200)
	msgs, _ := replyMessages(t, reply)
	require.Len(t, msgs, 2, "session a only")
	got, err := sr.ReceiveMessages(ctx, 1, nil)
	require.NoError(t, err)
	require.NoError(t, sr.DeferMessage(ctx, got[0], nil))
	reply = mgmtCall(t, m, l, jsRequest(opReceiveBySequence, amqp.Map{
		{Key: "sequence-numbers", Value: []int64{got[0].SequenceNumber}}, {Key: "receiver-settle-mode", Value: uint32(1)}, sid,
	}, ""), 200)
	_, entries := replyMessages(t, reply)
	tok, _ := entries[0].Get("lock-token")
	mgmtCall(t, m, l, jsRequest(opUpdateDisposition, amqp.Map{
		{Key: "disposition-status", Value: "completed"}, {Key: "lock-tokens", Value: []amqp.UUID{tok.(amqp.UUID)}}, sid,
	}, ""), 200)

	// Without the session's receiver nothing reaches its messages.
	mgmtCallErr(t, m, nil, goRequest(opUpdateDisposition, amqp.Map{
		{Key: "disposition-status", Value: "completed"}, {Key: "lock-tokens", Value: lockTokens([16]byte{1})},
	}, ""), 410, "com.microsoft:session-lock-lost", "requires sessions")
	mgmtCallErr(t, m, l, goRequest(opGetSessionState, amqp.Map{{Key: "session-id", Value: "b"}}, ""), 410, "com.microsoft:session-lock-lost", `session "b"`)
	mgmtCallErr(t, m, l, jsRequest(opPeek, amqp.Map{
		{Key: "from-sequence-number", Value: int64(1)}, {Key: "message-count", Value: int32(1)}, {Key: "session-id", Value: "b"},
	}, ""), 410, "com.microsoft:session-lock-lost")
	mgmtCallErr(t, m, l, goRequest(opGetSessionState, amqp.Map{}, ""), 400, "amqp:invalid-field", `"session-id": missing`)
	mgmtCallErr(t, m, l, goRequest(opSetSessionState, amqp.Map{sid}, ""), 400, "amqp:invalid-field", `"session-state": missing`)
	mgmtCallErr(t, m, l, goRequest(opSetSessionState, amqp.Map{sid, {Key: "session-state", Value: "s"}}, ""), 400, "amqp:invalid-field", `"session-state"`)
	mgmtCallErr(t, m, l, goRequest(opRenewSessionLock, amqp.Map{{Key: "session-id", Value: int32(1)}}, ""), 400, "amqp:invalid-field", `"session-id"`)

	// The session lock ends on the namespace clock (SS5).
	clk.Add(21 * time.Second)
	mgmtCallErr(t, m, l, goRequest(opRenewSessionLock, amqp.Map{sid}, "session-link"), 410, "com.microsoft:session-lock-lost")

	// get-message-sessions, as Go pages it (year 10000: all) and as JS
	// asks (now − 3 days).
	all := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	reply = mgmtCall(t, m, nil, goRequest(opGetMessageSessions, amqp.Map{
		{Key: "last-updated-time", Value: all}, {Key: "skip", Value: int32(0)}, {Key: "top", Value: int32(100)},
	}, ""), 200)
	ids, ok := replyField(t, reply, "sessions-ids").([]string)
	require.True(t, ok, "sessions-ids is a string array")
	require.Equal(t, []string{"a", "b"}, ids)
	reply = mgmtCall(t, m, nil, jsRequest(opGetMessageSessions, amqp.Map{
		{Key: "last-updated-time", Value: clk.Now().Add(-72 * time.Hour)}, {Key: "skip", Value: int32(1)}, {Key: "top", Value: int32(1)},
	}, ""), 200)
	require.Equal(t, []string{"b"}, replyField(t, reply, "sessions-ids"))
	mgmtCall(t, m, nil, goRequest(opGetMessageSessions, amqp.Map{
		{Key: "last-updated-time", Value: all}, {Key: "skip", Value: int32(2)}, {Key: "top", Value: int32(100)},
	}, ""), 204)
	mgmtCallErr(t, m, nil, goRequest(opGetMessageSessions, amqp.Map{{Key: "skip", Value: int32(-1)}}, ""), 400, "amqp:invalid-field", `"skip"`)
	mgmtCallErr(t, m, nil, goRequest(opGetMessageSessions, amqp.Map{{Key: "last-updated-time", Value: "x"}}, ""), 400, "amqp:invalid-field", `"last-updated-time"`)
	_, err = ns.CreateQueue("plain", nil)
	require.NoError(t, err)
	mgmtCallErr(t, mgmtNode(t, ns, "plain"), nil, goRequest(opGetMessageSessions, amqp.Map{}, ""), 400, "amqp:invalid-field")
	mgmtCallErr(t, mgmtNode(t, ns, "gone"), nil, goRequest(opGetMessageSessions, amqp.Map{}, ""), 404, "amqp:not-found", `"gone"`)
}

// ruleOf returns the rule description of one enumerate-rules entry.
func ruleOf(t *testing.T, entry any) []any {
	t.Helper()
	m, ok := entry.(amqp.Map)
	require.True(t, ok)
	v, ok := m.Get("rule-description")
	require.True(t, ok)
	d, ok := v.(amqp.Described)
	require.True(t, ok, "rule-description is described")
	require.Equal(t, uint64(0x0000013700000004), d.Descriptor)
	fields, ok := d.Value.([]any)
	require.True(t, ok)
	require.Len(t, fields, 4)
	return fields
}

// describedList checks v is a described list with the descriptor code and
// returns its fields.
func describedList(t *testing.T, v any, code uint64) []any {
	t.Helper()
	d, ok := v.(amqp.Described)
	require.True(t, ok)
	require.Equal(t, code, d.Descriptor)
	fields, ok := d.Value.([]any)
	require.True(t, ok)
	return fields
}

// TestManagementRules runs the rule operations as the JS SDK's rule
// manager sends them, and .NET's add-rule map (R1–R4, W8).
func TestManagementRules(t *testing.T) {
	ns, _ := newTestNamespace(t)
	ctx := context.Background()
	tp, err := ns.CreateTopic("t", nil)
	require.NoError(t, err)
	sub, err := tp.CreateSubscription("s", nil)
	require.NoError(t, err)
	m := mgmtNode(t, ns, "t/Subscriptions/s")
	enumerate := func(skip, top int32) []any {
		reply := mgmtCall(t, m, nil, jsRequest(opEnumerateRules, amqp.Map{{Key: "top", Value: top}, {Key: "skip", Value: skip}}, "rule-manager"), 200)
		list, ok := replyField(t, reply, "rules").([]any)
		require.True(t, ok, "rules is a list")
		return list
	}

	rules := enumerate(0, 1<<31-1)
	require.Len(t, rules, 1)
	def := ruleOf(t, rules[0])
	require.Empty(t, describedList(t, def[0], 0x1370000007), "$Default is a true filter")
	require.Empty(t, describedList(t, def[1], 0x13700000005), "no action: the empty rule action")
	require.Equal(t, "$Default", def[2])
	require.Nil(t, def[3])

	mgmtCall(t, m, nil, jsRequest(opRemoveRule, amqp.Map{{Key: "rule-name", Value: "$Default"}}, ""), 200)
	mgmtCall(t, m, nil, jsRequest(opAddRule, amqp.Map{
		{Key: "rule-name", Value: "big"},
		{Key: "rule-description", Value: amqp.Map{
			{Key: "sql-filter", Value: amqp.Map{{Key: "expression", Value: "size > 10"}}},
			{Key: "sql-rule-action", Value: amqp.Map{{Key: "expression", Value: "SET tag = 'big'"}}},
		}},
	}, ""), 200)
	mgmtCall(t, m, nil, jsRequest(opAddRule, amqp.Map{
		{Key: "rule-name", Value: "corr"},
		{Key: "rule-description", Value: amqp.Map{{Key: "correlation-filter", Value: amqp.Map{
			{Key: "correlation-id", Value: "c1"}, {Key: "message-id", Value: nil}, {Key: "to", Value: nil},
			{Key: "reply-to", Value: nil}, {Key: "label", Value: "lbl"}, {Key: "session-id", Value: nil},
			{Key: "reply-to-session-id", Value: nil}, {Key: "content-type", Value: nil},
			{Key: "properties", Value: amqp.Map{{Key: "color", Value: "red"}}},
		}}}},
	}, ""), 200)
	// .NET's map: rule-name inside too, a null sql-rule-action.
	mgmtCall(t, m, nil, goRequest(opAddRule, amqp.Map{
		{Key: "rule-name", Value: "dotnet"},
		{Key: "rule-description", Value: amqp.Map{
			{Key: "sql-filter", Value: amqp.Map{{Key: "expression", Value: "1=0"}}},
			{Key: "sql-rule-action", Value: nil},
			{Key: "rule-name", Value: "dotnet"},
		}},
	}, ""), 200)

	rules = enumerate(0, 100)
	require.Len(t, rules, 3)
	big := ruleOf(t, rules[0])
	require.Equal(t, []any{"size > 10", int32(20)}, describedList(t, big[0], 0x1370000006))
	require.Equal(t, []any{"SET tag = 'big'", int32(20)}, describedList(t, big[1], 0x13700000006))
	require.Equal(t, "big", big[2])
	corr := ruleOf(t, rules[1])
	cf := describedList(t, corr[0], 0x1370000009)
	require.Len(t, cf, 9)
	require.Equal(t, []any{"c1", nil, nil, nil, "lbl", nil, nil, nil}, cf[:8])
	require.Equal(t, amqp.Map{{Key: "color", Value: "red"}}, cf[8])
	require.Equal(t, "corr", corr[2])
	require.Equal(t, "dotnet", ruleOf(t, rules[2])[2])
	require.Len(t, enumerate(1, 1), 1)
	require.Equal(t, "dotnet", ruleOf(t, enumerate(2, 0)[0])[2], "top 0: the rest")
	require.Empty(t, enumerate(3, 10), "an empty page: 200 with no rules")

	// The rules select and change what the subscription gets (R1–R4).
	sendTo(t, ns, "t",
		&minibus.Message{MessageID: "small", ApplicationProperties: map[string]any{"size": int64(1)}},
		&minibus.Message{MessageID: "large", ApplicationProperties: map[string]any{"size": int64(11)}},
		&minibus.Message{MessageID: "red", CorrelationID: "c1", Subject: "lbl", ApplicationProperties: map[string]any{"color": "red"}})
	r, err := sub.NewReceiver(&minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
	require.NoError(t, err)
	got, err := r.ReceiveMessages(ctx, 10, nil)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "large", got[0].MessageID)
	require.Equal(t, "big", got[0].ApplicationProperties["tag"])
	require.Equal(t, "red", got[1].MessageID)

	// A rule description as enumerate-rules gives it is accepted back.
	d, err := ruleToAMQP(sub.Rules()[1])
	require.NoError(t, err)
	mgmtCall(t, m, nil, jsRequest(opAddRule, amqp.Map{{Key: "rule-name", Value: "copy"}, {Key: "rule-description", Value: d}}, ""), 200)
	rs := sub.Rules()
	require.Equal(t, rs[1].Filter, rs[2].Filter)

	mgmtCallErr(t, m, nil, jsRequest(opAddRule, amqp.Map{
		{Key: "rule-name", Value: "BIG"},
		{Key: "rule-description", Value: amqp.Map{{Key: "sql-filter", Value: amqp.Map{{Key: "expression", Value: "1=1"}}}}},
	}, ""), 409, "com.microsoft:entity-already-exists", "already exists")
	mgmtCallErr(t, m, nil, jsRequest(opAddRule, amqp.Map{
		{Key: "rule-name", Value: "bad"},
		{Key: "rule-description", Value: amqp.Map{{Key: "sql-filter", Value: amqp.Map{{Key: "expression", Value: "size >"}}}}},
	}, ""), 400, "amqp:invalid-field")
	mgmtCallErr(t, m, nil, jsRequest(opAddRule, amqp.Map{{Key: "rule-name", Value: "x"}, {Key: "rule-description", Value: amqp.Map{}}}, ""),
		400, "amqp:invalid-field", "missing sql-filter or correlation-filter")
	mgmtCallErr(t, m, nil, jsRequest(opAddRule, amqp.Map{{Key: "rule-name", Value: "x"}}, ""), 400, "amqp:invalid-field", `"rule-description": missing`)
	mgmtCallErr(t, m, nil, jsRequest(opAddRule, amqp.Map{{Key: "rule-description", Value: amqp.Map{}}}, ""), 400, "amqp:invalid-field", `"rule-name": missing`)
	mgmtCallErr(t, m, nil, jsRequest(opAddRule, amqp.Map{{Key: "rule-name", Value: "x"}, {Key: "rule-description", Value: amqp.Map{
		{Key: "sql-filter", Value: amqp.Map{{Key: "expression", Value: int32(1)}}},
	}}}, ""), 400, "amqp:invalid-field", "rule-description.sql-filter.expression")
	mgmtCallErr(t, m, nil, jsRequest(opRemoveRule, amqp.Map{{Key: "rule-name", Value: "nope"}}, ""), 404, "amqp:not-found")
	mgmtCallErr(t, mgmtNode(t, ns, "t"), nil, jsRequest(opEnumerateRules, amqp.Map{}, ""), 400, "amqp:invalid-field", "subscription")
	mgmtCallErr(t, mgmtNode(t, ns, "t/Subscriptions/none"), nil, jsRequest(opRemoveRule, amqp.Map{{Key: "rule-name", Value: "x"}}, ""), 404, "amqp:not-found")
}

// TestManagementRequestErrors: an unknown operation, a missing operation, a
// body that is not a map, a nil request: 400 naming what (W8).
func TestManagementRequestErrors(t *testing.T) {
	ns, _ := newTestNamespace(t)
	_, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	m := mgmtNode(t, ns, "q")
	mgmtCallErr(t, m, nil, goRequest("com.microsoft:frobnicate", amqp.Map{}, ""), 400, "amqp:invalid-field", `"com.microsoft:frobnicate"`, "unknown")
	mgmtCallErr(t, m, nil, goRequest("renew-lock", amqp.Map{}, ""), 400, "amqp:invalid-field", `"renew-lock"`)
	req := goRequest(opPeek, nil, "")
	req.ApplicationProperties = req.ApplicationProperties[1:]
	mgmtCallErr(t, m, nil, req, 400, "amqp:invalid-field", `"operation": missing`)
	req = goRequest(opPeek, nil, "")
	req.ApplicationProperties[0].Value = int32(3)
	mgmtCallErr(t, m, nil, req, 400, "amqp:invalid-field", `"operation"`, "int32")
	req = goRequest(opPeek, nil, "")
	req.Value = "text"
	mgmtCallErr(t, m, nil, req, 400, "amqp:invalid-field", "body", "string")
	req = goRequest(opPeek, nil, "")
	req.ApplicationProperties = append(req.ApplicationProperties, amqp.KV{Key: "associated-link-name", Value: int64(1)})
	mgmtCallErr(t, m, nil, req, 400, "amqp:invalid-field", `"associated-link-name"`)
	req = goRequest(opPeek, nil, "")
	req.HasValue, req.Value = false, nil
	mgmtCallErr(t, m, nil, req, 400, "amqp:invalid-field", `"from-sequence-number": missing`)

	reply := m.handle(context.Background(), nil, nil)
	require.NotNil(t, reply)
	code, _ := reply.ApplicationProperties.Get("statusCode")
	require.Equal(t, int32(400), code)
	reply = m.handle(context.Background(), nil, &amqp.Message{})
	code, _ = reply.ApplicationProperties.Get("statusCode")
	require.Equal(t, int32(400), code)
}

// TestManagementCorrelationID: the reply's correlation-id is the request's
// message-id in the same AMQP type (uuid from Go, string from JS, an
// integer counter from pyamqp, binary), else its correlation-id (W3).
func TestManagementCorrelationID(t *testing.T) {
	ns, _ := newTestNamespace(t)
	_, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	m := mgmtNode(t, ns, "q")
	for _, id := range []any{amqp.UUID{1, 2, 3}, "id-string", uint64(7), []byte{9, 8}} {
		req := goRequest(opPeek, amqp.Map{{Key: "from-sequence-number", Value: int64(1)}, {Key: "message-count", Value: int32(1)}}, "")
		req.Properties.MessageID = id
		reply := mgmtCall(t, m, nil, req, 204)
		require.Equal(t, id, reply.Properties.CorrelationID)
	}
	req := goRequest(opPeek, amqp.Map{}, "")
	req.Properties.MessageID, req.Properties.CorrelationID = nil, "corr"
	req = viaCodec(t, req)
	reply := viaCodec(t, m.handle(context.Background(), nil, req))
	require.Equal(t, "corr", reply.Properties.CorrelationID)
}

// TestManagementOwnReceivers: the node opens its receivers lazily, opens
// them again after the entity is deleted and created anew, and closes them
// in close; later requests answer ErrClosed.
func TestManagementOwnReceivers(t *testing.T) {
	ns, _ := newTestNamespace(t)
	_, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	m := mgmtNode(t, ns, "q")
	peek := func() *amqp.Message {
		return goRequest(opPeek, amqp.Map{{Key: "from-sequence-number", Value: int64(1)}, {Key: "message-count", Value: int32(1)}}, "")
	}
	mgmtCall(t, m, nil, peek(), 204)
	require.NotNil(t, m.peekLock)
	require.Nil(t, m.deleting)

	first := m.peekLock
	require.NoError(t, ns.DeleteQueue("q"))
	mgmtCallErr(t, m, nil, peek(), 404, "amqp:not-found")
	_, err = ns.CreateQueue("q", nil)
	require.NoError(t, err)
	sendTo(t, ns, "q", &minibus.Message{})
	mgmtCall(t, m, nil, peek(), 200)
	require.NotSame(t, first, m.peekLock, "the stale receiver was replaced")

	m.close(context.Background())
	require.Nil(t, m.peekLock)
	mgmtCallErr(t, m, nil, peek(), 500, "amqp:connection:forced", "closed")
	m.close(context.Background())
}
