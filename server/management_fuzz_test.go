package server

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
	"github.com/stretchr/testify/require"
)

// fuzzFixture is a namespace with a queue, a session queue and a topic with
// a subscription, all holding messages, the management nodes of each, and
// links holding a receiver and a session receiver.
type fuzzFixture struct {
	ns    *minibus.Namespace
	nodes []*management
	links *fakeLinks
}

func newFuzzFixture(t testing.TB) *fuzzFixture {
	ctx := context.Background()
	ns := minibus.NewNamespace()
	t.Cleanup(func() { _ = ns.Close() })
	q, err := ns.CreateQueue("q", nil)
	require.NoError(t, err)
	sq, err := ns.CreateQueue("sq", &minibus.QueueProperties{RequiresSession: true})
	require.NoError(t, err)
	tp, err := ns.CreateTopic("t", nil)
	require.NoError(t, err)
	_, err = tp.CreateSubscription("s", nil)
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		require.NoError(t, q.SendMessage(ctx, &minibus.Message{Body: []byte{byte(i)}}, nil))
		require.NoError(t, sq.SendMessage(ctx, &minibus.Message{SessionID: "a"}, nil))
		require.NoError(t, tp.SendMessage(ctx, &minibus.Message{}, nil))
	}
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(ctx) })
	sr, err := sq.AcceptSession(ctx, "a", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sr.Close(ctx) })
	f := &fuzzFixture{ns: ns, links: fakeLinksOf(map[string]receiver{"r": r, "s": sr}).withSession("sq", sr)}
	for _, p := range []string{"q", "sq", "t", "t/Subscriptions/s", "q/$DeadLetterQueue", "missing"} {
		m := newManagement(ns, mustAddressTB(t, p+"/$management"))
		t.Cleanup(func() { m.close(ctx) })
		f.nodes = append(f.nodes, m)
	}
	return f
}

// mustAddressTB parses raw or fails.
func mustAddressTB(t testing.TB, raw string) address {
	a, err := parseAddress(raw)
	require.NoError(t, err)
	return a
}

// checkReply checks that a reply is well formed whatever the request:
// both status keys, a known status, and an encodable message.
func checkReply(t testing.TB, reply *amqp.Message) {
	require.NotNil(t, reply)
	code, ok := reply.ApplicationProperties.Get("status-code")
	require.True(t, ok)
	code2, _ := reply.ApplicationProperties.Get("statusCode")
	require.Equal(t, code, code2)
	require.Contains(t, []int32{200, 204, 400, 403, 404, 408, 409, 410, 500}, code)
	_, err := reply.AppendBinary(nil)
	require.NoError(t, err)
}

// allOps is every operation, and a few that are not.
var allOps = []string{
	opRenewLock, opReceiveBySequence, opPeek, opUpdateDisposition, opSchedule, opCancelScheduled,
	opRenewSessionLock, opGetSessionState, opSetSessionState, opGetMessageSessions,
	opEnumerateRules, opAddRule, opRemoveRule, "put-token", "", "com.microsoft:nope",
}

// allKeys is every body key the operations read, and one they do not.
var allKeys = []string{
	keyLockTokens, keySequenceNumbers, keyReceiverSettleMode, keyMessages, keyFromSequenceNumber,
	keyMessageCount, keyOmitMessageBody, keySessionID, keySessionState, keyLastUpdatedTime, keySkip,
	keyTop, keyDispositionStatus, keyDeadLetterReason, keyDeadLetterDesc, keyPropertiesToModify,
	keyRuleName, keyRuleDescription, "unknown-key",
}

// randomValue is a random AMQP value of any type the codec maps, nested up
// to depth.
func randomValue(rnd *rand.Rand, depth int) any {
	n := 24
	if depth <= 0 {
		n = 17
	}
	switch rnd.IntN(n) {
	case 0:
		return nil
	case 1:
		return rnd.IntN(2) == 0
	case 2:
		return int32(rnd.Int32N(40) - 5)
	case 3:
		return int64(rnd.IntN(40) - 5)
	case 4:
		return []int64{int64(rnd.IntN(30)), math.MaxInt64, -1}[rnd.IntN(3)]
	case 5:
		return uint32(rnd.IntN(3))
	case 6:
		return uint64(rnd.Uint64())
	case 7:
		return []string{"", "a", "completed", "abandoned", "suspended", "defered", "$Default", "1=1", "x >"}[rnd.IntN(9)]
	case 8:
		return amqp.Symbol("sym")
	case 9:
		return amqp.UUID{byte(rnd.IntN(4))}
	case 10:
		return []byte{byte(rnd.IntN(256))}
	case 11:
		return time.Unix(rnd.Int64N(4e9), 0).UTC()
	case 12:
		return []int64{int64(rnd.IntN(25)), int64(rnd.IntN(25))}
	case 13:
		return []amqp.UUID{{byte(rnd.IntN(3))}}
	case 14:
		return float64(rnd.Float64())
	case 15:
		return []string{"a", "b"}
	case 16:
		return amqp.Char('x')
	case 17, 18:
		l := make([]any, rnd.IntN(3))
		for i := range l {
			l[i] = randomValue(rnd, depth-1)
		}
		return l
	case 19, 20, 21:
		m := amqp.Map{}
		for i := rnd.IntN(4); i > 0; i-- {
			k := allKeys[rnd.IntN(len(allKeys))]
			if rnd.IntN(3) == 0 {
				k = []string{"sql-filter", "correlation-filter", "sql-rule-action", "expression", "message", "properties", "label"}[rnd.IntN(7)]
			}
			m = append(m, amqp.KV{Key: k, Value: randomValue(rnd, depth-1)})
		}
		return m
	case 22:
		return amqp.Described{Descriptor: []any{descTimeSpan, descRuleDescription, descSQLFilter, uint64(0)}[rnd.IntN(4)], Value: randomValue(rnd, depth-1)}
	}
	return amqp.Decimal32{}
}

// TestManagementRandomRequests sends random requests, every operation with
// random fields of random types, to every kind of node: each is answered
// with a well-formed reply and nothing panics (W8).
func TestManagementRandomRequests(t *testing.T) {
	f := newFuzzFixture(t)
	rnd := rand.New(rand.NewPCG(1, 2))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < 20000; i++ {
		body := amqp.Map{}
		for j := rnd.IntN(5); j > 0; j-- {
			body = append(body, amqp.KV{Key: allKeys[rnd.IntN(len(allKeys))], Value: randomValue(rnd, 2)})
		}
		req := &amqp.Message{
			Properties: &amqp.Properties{MessageID: uint64(i)},
			ApplicationProperties: amqp.Map{
				{Key: "operation", Value: allOps[rnd.IntN(len(allOps))]},
			},
			Value: body, HasValue: rnd.IntN(20) != 0,
		}
		if rnd.IntN(3) == 0 {
			req.ApplicationProperties = append(req.ApplicationProperties, amqp.KV{Key: "associated-link-name", Value: []string{"r", "s", "x"}[rnd.IntN(3)]})
		}
		if rnd.IntN(30) == 0 {
			req.Value = randomValue(rnd, 1)
		}
		var l mgmtLinks
		if rnd.IntN(2) == 0 {
			l = f.links
		}
		reply := f.nodes[rnd.IntN(len(f.nodes))].handle(ctx, l, req)
		checkReply(t, reply)
		require.Equal(t, uint64(i), reply.Properties.CorrelationID)
	}
}

// FuzzManagementHandle decodes arbitrary bytes as a request and handles
// it: a well-formed reply, never a panic.
func FuzzManagementHandle(f *testing.F) {
	for _, op := range allOps {
		for _, body := range []amqp.Map{
			{},
			{{Key: keyLockTokens, Value: []amqp.UUID{{1}}}, {Key: keyDispositionStatus, Value: "completed"}},
			{{Key: keyFromSequenceNumber, Value: int64(1)}, {Key: keyMessageCount, Value: int32(2)}, {Key: keySessionID, Value: "a"}},
			{{Key: keySequenceNumbers, Value: []int64{1, 2}}, {Key: keyReceiverSettleMode, Value: uint32(0)}},
			{{Key: keyRuleName, Value: "r"}, {Key: keyRuleDescription, Value: amqp.Map{{Key: "sql-filter", Value: amqp.Map{{Key: "expression", Value: "1=1"}}}}}},
		} {
			b, err := goRequest(op, body, "r").AppendBinary(nil)
			require.NoError(f, err)
			f.Add(b, uint8(0))
		}
	}
	fx := newFuzzFixture(f)
	f.Fuzz(func(t *testing.T, data []byte, node uint8) {
		var req amqp.Message
		if req.UnmarshalBinary(data) != nil {
			return
		}
		m := fx.nodes[int(node)%len(fx.nodes)]
		checkReply(t, m.handle(context.Background(), fx.links, &req))
		checkReply(t, handleCBS(fx.ns, &req))
	})
}
