package server

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
	"github.com/stretchr/testify/require"
)

// decodeAMQP decodes an encoded message or fails the test.
func decodeAMQP(t *testing.T, b []byte) *amqp.Message {
	t.Helper()
	var m amqp.Message
	require.NoError(t, m.UnmarshalBinary(b))
	return &m
}

// annotationOf returns the message annotation named key.
func annotationOf(t *testing.T, m amqp.Map, key amqp.Symbol) any {
	t.Helper()
	v, ok := m.Get(key)
	require.True(t, ok, "annotation %s missing", key)
	return v
}

// fullReceived is a ReceivedMessage with every field set.
func fullReceived() *minibus.ReceivedMessage {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	return &minibus.ReceivedMessage{
		Message: minibus.Message{
			MessageID: "m-1", Body: []byte("hello"), ContentType: "text/plain",
			CorrelationID: "c-1", Subject: "subj", To: "to-x", ReplyTo: "reply-q",
			ReplyToSessionID: "rs", SessionID: "s-1", PartitionKey: "pk",
			TimeToLive:           90 * time.Second,
			ScheduledEnqueueTime: at.Add(-time.Minute),
			ApplicationProperties: map[string]any{
				"str": "v", "i64": int64(-5), "i32": int32(7), "u8": uint8(9), "f": 1.5,
				"b": true, "t": at, "bin": []byte{1, 2}, "d": 1500 * time.Millisecond, "nil": nil,
			},
		},
		SequenceNumber:             42,
		EnqueuedSequenceNumber:     17,
		EnqueuedTime:               at,
		ExpiresAt:                  at.Add(90 * time.Second),
		LockedUntil:                at.Add(time.Minute),
		LockToken:                  [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		DeliveryCount:              3,
		State:                      minibus.MessageStateDeferred,
		DeadLetterReason:           "why",
		DeadLetterErrorDescription: "because",
		DeadLetterSource:           "other",
	}
}

// TestAppendDeliveryTypes encodes a ReceivedMessage and checks the AMQP
// type of every section's field as the SDKs assert them (W5): the Go SDK
// type-asserts x-opt-sequence-number to int64, the times to time.Time,
// strings to string, and reads x-opt-message-state as an int.
func TestAppendDeliveryTypes(t *testing.T) {
	rm := fullReceived()
	b, err := appendDelivery([]byte("prefix"), rm, true, true)
	require.NoError(t, err)
	require.Equal(t, "prefix", string(b[:6]), "appends")
	m := decodeAMQP(t, b[6:])

	require.NotNil(t, m.Header)
	require.Equal(t, uint32(2), m.Header.DeliveryCount, "DeliveryCount − 1")
	require.Equal(t, uint32(90_000), m.Header.TTL)
	require.Equal(t, uint8(4), m.Header.Priority)

	p := m.Properties
	require.NotNil(t, p)
	require.Equal(t, "m-1", p.MessageID)
	require.Equal(t, "c-1", p.CorrelationID)
	require.Equal(t, amqp.Symbol("text/plain"), p.ContentType)
	require.Equal(t, "subj", p.Subject)
	require.Equal(t, "to-x", p.To)
	require.Equal(t, "reply-q", p.ReplyTo)
	require.Equal(t, "s-1", p.GroupID)
	require.Equal(t, "rs", p.ReplyToGroupID)
	require.True(t, rm.EnqueuedTime.Truncate(time.Millisecond).Equal(p.CreationTime))
	require.True(t, rm.ExpiresAt.Truncate(time.Millisecond).Equal(p.AbsoluteExpiryTime))

	ma := m.MessageAnnotations
	require.IsType(t, int64(0), annotationOf(t, ma, annSequenceNumber))
	require.Equal(t, int64(42), annotationOf(t, ma, annSequenceNumber))
	require.IsType(t, int64(0), annotationOf(t, ma, annEnqueueSequenceNumber))
	require.Equal(t, int64(17), annotationOf(t, ma, annEnqueueSequenceNumber))
	for key, want := range map[amqp.Symbol]time.Time{
		annEnqueuedTime:         rm.EnqueuedTime,
		annLockedUntil:          rm.LockedUntil,
		annScheduledEnqueueTime: rm.ScheduledEnqueueTime,
	} {
		got, ok := annotationOf(t, ma, key).(time.Time)
		require.True(t, ok, "%s is a timestamp", key)
		require.True(t, want.Truncate(time.Millisecond).Equal(got), key)
	}
	require.IsType(t, int32(0), annotationOf(t, ma, annMessageState))
	require.Equal(t, int32(1), annotationOf(t, ma, annMessageState))
	require.Equal(t, "other", annotationOf(t, ma, annDeadLetterSource))
	require.Equal(t, "pk", annotationOf(t, ma, annPartitionKey))
	for _, kv := range ma {
		require.IsType(t, amqp.Symbol(""), kv.Key, "annotation keys are symbols")
	}

	tok, ok := m.DeliveryAnnotations.Get(annLockToken)
	require.True(t, ok)
	require.Equal(t, amqp.UUID(rm.LockToken), tok, "uuid in RFC order")

	ap := m.ApplicationProperties
	get := func(k string) any {
		v, ok := ap.Get(k)
		require.True(t, ok, k)
		return v
	}
	require.Equal(t, "why", get(propDeadLetterReason))
	require.Equal(t, "because", get(propDeadLetterDescription))
	require.Equal(t, "v", get("str"))
	require.Equal(t, int64(-5), get("i64"))
	require.Equal(t, int32(7), get("i32"))
	require.Equal(t, uint8(9), get("u8"))
	require.Equal(t, 1.5, get("f"))
	require.Equal(t, true, get("b"))
	require.Equal(t, []byte{1, 2}, get("bin"))
	require.Nil(t, get("nil"))
	require.True(t, rm.EnqueuedTime.Truncate(time.Millisecond).Equal(get("t").(time.Time)))
	require.Equal(t, amqp.Described{Descriptor: descTimeSpan, Value: int64(15_000_000)}, get("d"))
	for i := 1; i < len(ap); i++ {
		require.Less(t, ap[i-1].Key.(string), ap[i].Key.(string), "sorted keys")
	}

	require.Equal(t, [][]byte{[]byte("hello")}, m.Data)
	require.False(t, m.HasValue)
}

// TestAppendDeliveryReceiveAndDelete: no locked-until, no lock token; no
// ttl for a message that never expires; an empty data section for a nil
// body; no dead-letter properties when not dead-lettered (W5).
func TestAppendDeliveryReceiveAndDelete(t *testing.T) {
	rm := &minibus.ReceivedMessage{
		Message:        minibus.Message{MessageID: "x"},
		SequenceNumber: 1, EnqueuedTime: time.Unix(100, 0), DeliveryCount: 1,
	}
	b, err := appendDelivery(nil, rm, false, true)
	require.NoError(t, err)
	m := decodeAMQP(t, b)
	require.Equal(t, uint32(0), m.Header.DeliveryCount)
	require.Equal(t, uint32(0), m.Header.TTL)
	for _, k := range []amqp.Symbol{annLockedUntil, annScheduledEnqueueTime, annEnqueueSequenceNumber, annDeadLetterSource, annPartitionKey} {
		_, ok := m.MessageAnnotations.Get(k)
		require.False(t, ok, k)
	}
	require.Equal(t, int32(0), annotationOf(t, m.MessageAnnotations, annMessageState))
	require.Empty(t, m.DeliveryAnnotations)
	require.Empty(t, m.ApplicationProperties)
	require.Nil(t, m.Properties.CorrelationID)
	require.Len(t, m.Data, 1)
	require.Empty(t, m.Data[0])

	// peek-lock without withLockToken: the token travels in the delivery
	// tag only.
	b, err = appendDelivery(nil, fullReceived(), true, false)
	require.NoError(t, err)
	require.Empty(t, decodeAMQP(t, b).DeliveryAnnotations)

	// A TTL past 2³² ms is capped; under a millisecond rounds up.
	rm.TimeToLive = 100 * 24 * time.Hour
	b, err = appendDelivery(nil, rm, false, false)
	require.NoError(t, err)
	require.Equal(t, uint32(math.MaxUint32), decodeAMQP(t, b).Header.TTL)
	rm.TimeToLive = time.Microsecond
	b, err = appendDelivery(nil, rm, false, false)
	require.NoError(t, err)
	require.Equal(t, uint32(1), decodeAMQP(t, b).Header.TTL)

	_, err = appendDelivery(nil, nil, false, false)
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
}

// goSDKMessage is a message as azservicebus's toAMQPMessage builds it:
// message-id a string, group-id the session, the annotations
// x-opt-partition-key and x-opt-scheduled-enqueue-time, string-keyed
// application properties, one data section.
func goSDKMessage(at time.Time) *amqp.Message {
	return &amqp.Message{
		Header: &amqp.Header{Priority: 4, TTL: 60_000},
		Properties: &amqp.Properties{
			MessageID: "id-1", CorrelationID: "corr", To: "to", Subject: "subj",
			ReplyTo: "rt", ContentType: "application/json", GroupID: "sess", ReplyToGroupID: "rsess",
		},
		MessageAnnotations: amqp.Map{
			{Key: annPartitionKey, Value: "pk"},
			{Key: annScheduledEnqueueTime, Value: at},
		},
		ApplicationProperties: amqp.Map{
			{Key: "s", Value: "v"}, {Key: "n", Value: int64(3)}, {Key: "f", Value: 2.5},
			{Key: "b", Value: false}, {Key: "t", Value: at},
		},
		Data: [][]byte{[]byte(`{"a":1}`)},
	}
}

// encodeAMQP encodes m or fails the test.
func encodeAMQP(t *testing.T, m *amqp.Message) []byte {
	t.Helper()
	b, err := m.AppendBinary(nil)
	require.NoError(t, err)
	return b
}

// TestIncoming maps a message as the Go SDK sends it (W4).
func TestIncoming(t *testing.T) {
	at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	msgs, err := incoming(encodeAMQP(t, goSDKMessage(at)), 0)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	m := msgs[0]
	require.Equal(t, "id-1", m.MessageID)
	require.Equal(t, "corr", m.CorrelationID)
	require.Equal(t, "to", m.To)
	require.Equal(t, "subj", m.Subject)
	require.Equal(t, "rt", m.ReplyTo)
	require.Equal(t, "application/json", m.ContentType)
	require.Equal(t, "sess", m.SessionID)
	require.Equal(t, "rsess", m.ReplyToSessionID)
	require.Equal(t, "pk", m.PartitionKey)
	require.Equal(t, time.Minute, m.TimeToLive)
	require.True(t, at.Equal(m.ScheduledEnqueueTime))
	require.Equal(t, []byte(`{"a":1}`), m.Body)
	require.Equal(t, "v", m.ApplicationProperties["s"])
	require.Equal(t, int64(3), m.ApplicationProperties["n"])
	require.Equal(t, 2.5, m.ApplicationProperties["f"])
	require.Equal(t, false, m.ApplicationProperties["b"])
	require.True(t, at.Equal(m.ApplicationProperties["t"].(time.Time)))
}

// TestIncomingForms covers the id types, the body forms and the .NET
// property types (W4).
func TestIncomingForms(t *testing.T) {
	one := func(am *amqp.Message) *minibus.Message {
		t.Helper()
		msgs, err := incoming(encodeAMQP(t, am), 0)
		require.NoError(t, err)
		require.Len(t, msgs, 1)
		return msgs[0]
	}
	uuid := amqp.UUID{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8}
	for id, want := range map[any]string{
		"s":                   "s",
		uuid:                  "12345678-9abc-def0-0102-030405060708",
		uint64(77):            "77",
		string([]byte{0xab}):  string([]byte{0xab}),
		amqp.Symbol("sym-id"): "sym-id",
	} {
		m := one(&amqp.Message{Properties: &amqp.Properties{MessageID: id, CorrelationID: id}})
		require.Equal(t, want, m.MessageID)
		require.Equal(t, want, m.CorrelationID)
	}
	m := one(&amqp.Message{Properties: &amqp.Properties{MessageID: []byte{0xab, 0xcd}}})
	require.Equal(t, "abcd", m.MessageID, "binary ids in hex")

	require.Nil(t, one(&amqp.Message{}).Body, "no body section: nil body")
	require.Equal(t, []byte{}, one(&amqp.Message{Data: [][]byte{{}}}).Body, "an empty data section: empty, not nil (V4)")
	require.Equal(t, []byte("abcdef"), one(&amqp.Message{Data: [][]byte{[]byte("ab"), []byte("cd"), []byte("ef")}}).Body)
	require.Equal(t, []byte("text"), one(&amqp.Message{Value: "text", HasValue: true}).Body)
	require.Equal(t, []byte("bin"), one(&amqp.Message{Value: []byte("bin"), HasValue: true}).Body)
	require.Nil(t, one(&amqp.Message{Value: nil, HasValue: true}).Body)

	at := time.Date(2024, 2, 3, 4, 5, 6, 700_000_000, time.UTC)
	m = one(&amqp.Message{ApplicationProperties: amqp.Map{
		{Key: "span", Value: amqp.Described{Descriptor: descTimeSpan, Value: int64(25_000_000)}},
		{Key: "dto", Value: amqp.Described{Descriptor: descDateTimeOffset, Value: ticksFromTime(at)}},
		{Key: "uri", Value: amqp.Described{Descriptor: descURI, Value: "http://x/"}},
		{Key: "sym", Value: amqp.Symbol("a-symbol")},
		{Key: "char", Value: amqp.Char('é')},
		{Key: "uuid", Value: uuid},
		{Key: "i8", Value: int8(-1)}, {Key: "i16", Value: int16(-2)}, {Key: "u16", Value: uint16(2)},
		{Key: "u32", Value: uint32(3)}, {Key: "u64", Value: uint64(4)}, {Key: "f32", Value: float32(0.5)},
		{Key: amqp.Symbol("symkey"), Value: "k"},
	}})
	p := m.ApplicationProperties
	require.Equal(t, 2500*time.Millisecond, p["span"])
	require.True(t, at.Equal(p["dto"].(time.Time)))
	require.Equal(t, "http://x/", p["uri"])
	require.Equal(t, "a-symbol", p["sym"])
	require.Equal(t, "é", p["char"])
	require.Equal(t, "12345678-9abc-def0-0102-030405060708", p["uuid"])
	require.Equal(t, int8(-1), p["i8"])
	require.Equal(t, int16(-2), p["i16"])
	require.Equal(t, uint16(2), p["u16"])
	require.Equal(t, uint32(3), p["u32"])
	require.Equal(t, uint64(4), p["u64"])
	require.Equal(t, float32(0.5), p["f32"])
	require.Equal(t, "k", p["symkey"])
}

// TestIncomingBatch unpacks a batch as the SDKs build it: an envelope whose
// data sections are encoded messages, the envelope copying the first
// message's properties (W4). Every message must be valid.
func TestIncomingBatch(t *testing.T) {
	var data [][]byte
	for _, id := range []string{"a", "b", "c"} {
		data = append(data, encodeAMQP(t, &amqp.Message{
			Properties: &amqp.Properties{MessageID: id},
			Data:       [][]byte{[]byte("body-" + id)},
		}))
	}
	env := &amqp.Message{Properties: &amqp.Properties{MessageID: "a"}, Data: data}
	msgs, err := incoming(encodeAMQP(t, env), batchFormat)
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	for i, id := range []string{"a", "b", "c"} {
		require.Equal(t, id, msgs[i].MessageID)
		require.Equal(t, "body-"+id, string(msgs[i].Body))
	}

	_, err = incoming(encodeAMQP(t, &amqp.Message{Properties: &amqp.Properties{MessageID: "x"}}), batchFormat)
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
	require.Contains(t, err.Error(), "batch")

	bad := append(data[:2:2], encodeAMQP(t, &amqp.Message{Sequence: [][]any{{int32(1)}}}))
	_, err = incoming(encodeAMQP(t, &amqp.Message{Data: bad}), batchFormat)
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
	require.Contains(t, err.Error(), "batch message 2")
	require.Contains(t, err.Error(), "amqp-sequence")

	_, err = incoming(encodeAMQP(t, &amqp.Message{Data: [][]byte{{0xff, 0x00}}}), batchFormat)
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
	require.Contains(t, err.Error(), "batch message 0")
}

// TestIncomingErrors: every bad field is ErrInvalidArgument naming it.
func TestIncomingErrors(t *testing.T) {
	for name, tt := range map[string]struct {
		msg  *amqp.Message
		want string
	}{
		"message-id":     {&amqp.Message{Properties: &amqp.Properties{MessageID: int32(3)}}, "message-id"},
		"correlation-id": {&amqp.Message{Properties: &amqp.Properties{CorrelationID: 1.5}}, "correlation-id"},
		"scheduled":      {&amqp.Message{MessageAnnotations: amqp.Map{{Key: annScheduledEnqueueTime, Value: "soon"}}}, string(annScheduledEnqueueTime)},
		"partition":      {&amqp.Message{MessageAnnotations: amqp.Map{{Key: annPartitionKey, Value: int64(1)}}}, string(annPartitionKey)},
		"list property":  {&amqp.Message{ApplicationProperties: amqp.Map{{Key: "l", Value: []any{int32(1)}}}}, `"l"`},
		"map property":   {&amqp.Message{ApplicationProperties: amqp.Map{{Key: "m", Value: amqp.Map{}}}}, `"m"`},
		"decimal":        {&amqp.Message{ApplicationProperties: amqp.Map{{Key: "d", Value: amqp.Decimal64{}}}}, `"d"`},
		"described":      {&amqp.Message{ApplicationProperties: amqp.Map{{Key: "x", Value: amqp.Described{Descriptor: amqp.Symbol("other"), Value: "v"}}}}, "other"},
		"bad timespan":   {&amqp.Message{ApplicationProperties: amqp.Map{{Key: "x", Value: amqp.Described{Descriptor: descTimeSpan, Value: "1s"}}}}, "timespan"},
		"huge timespan":  {&amqp.Message{ApplicationProperties: amqp.Map{{Key: "x", Value: amqp.Described{Descriptor: descTimeSpan, Value: int64(math.MaxInt64)}}}}, "timespan"},
		"bad dto":        {&amqp.Message{ApplicationProperties: amqp.Map{{Key: "x", Value: amqp.Described{Descriptor: descDateTimeOffset, Value: "now"}}}}, "datetime-offset"},
		"bad uri":        {&amqp.Message{ApplicationProperties: amqp.Map{{Key: "x", Value: amqp.Described{Descriptor: descURI, Value: int32(1)}}}}, "uri"},
		"key type":       {&amqp.Message{ApplicationProperties: amqp.Map{{Key: int32(1), Value: "v"}}}, "key"},
		"sequence body":  {&amqp.Message{Sequence: [][]any{{"x"}}}, "amqp-sequence"},
		"value body":     {&amqp.Message{Value: int64(5), HasValue: true}, "amqp-value of int64"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := incoming(encodeAMQP(t, tt.msg), 0)
			require.ErrorIs(t, err, minibus.ErrInvalidArgument)
			require.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := incoming([]byte{0x00, 0x53}, 0)
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
	_, err = incoming(nil, 7)
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
	require.Contains(t, err.Error(), "message-format 0x7")
}

// TestRoundTripThroughNamespace sends a message as the Go SDK does,
// receives it peek-locked from a namespace on a mock clock, encodes it for
// the wire and checks what a client decodes (W4, W5).
func TestRoundTripThroughNamespace(t *testing.T) {
	ns, clk := newTestNamespace(t)
	ctx := context.Background()
	q, err := ns.CreateQueue("q", &minibus.QueueProperties{LockDuration: 30 * time.Second})
	require.NoError(t, err)
	am := goSDKMessage(time.Time{})
	am.MessageAnnotations = am.MessageAnnotations[:1] // not scheduled
	am.Properties.GroupID = ""
	msgs, err := incoming(encodeAMQP(t, am), 0)
	require.NoError(t, err)
	e, err := mustAddress(t, "q").resolve(ns)
	require.NoError(t, err)
	require.NoError(t, e.sendMessages(ctx, msgs))

	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	got, err := r.ReceiveMessages(ctx, 1, nil)
	require.NoError(t, err)
	b, err := appendDelivery(nil, got[0], true, false)
	require.NoError(t, err)
	out := decodeAMQP(t, b)
	require.Equal(t, "id-1", out.Properties.MessageID)
	require.Equal(t, [][]byte{[]byte(`{"a":1}`)}, out.Data)
	require.Equal(t, uint32(60_000), out.Header.TTL)
	require.Equal(t, uint32(0), out.Header.DeliveryCount)
	lu := annotationOf(t, out.MessageAnnotations, annLockedUntil).(time.Time)
	require.True(t, clk.Now().Add(30*time.Second).Equal(lu), "locked until now + LockDuration on the namespace clock")
	require.True(t, clk.Now().Equal(annotationOf(t, out.MessageAnnotations, annEnqueuedTime).(time.Time)))
	require.Equal(t, int64(1), annotationOf(t, out.MessageAnnotations, annSequenceNumber))
	require.Equal(t, "pk", annotationOf(t, out.MessageAnnotations, annPartitionKey))
	v, _ := out.ApplicationProperties.Get("n")
	require.Equal(t, int64(3), v)
}

// TestDeliveryTag: the tag is the lock token in .NET GUID order, as the JS
// SDK reads tag 00000003-… as 03000000-… (W5).
func TestDeliveryTag(t *testing.T) {
	tok := [16]byte{0, 0, 0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	tag := deliveryTag(tok)
	require.Equal(t, [16]byte{3, 0, 0, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15}, tag)
	require.Equal(t, tok, deliveryTag(tag), "an involution")
}

// TestTicks converts .NET ticks both ways.
func TestTicks(t *testing.T) {
	require.Equal(t, int64(621355968000000000), ticksFromTime(time.Unix(0, 0)))
	for _, tm := range []time.Time{
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999_999_900, time.UTC),
		time.Date(2030, 1, 2, 3, 4, 5, 600, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
	} {
		require.True(t, tm.Equal(timeFromTicks(ticksFromTime(tm))), tm)
	}
	require.Equal(t, int64(0), ticksFromTime(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)))
}

// FuzzIncoming: no payload makes incoming panic, in either format.
func FuzzIncoming(f *testing.F) {
	seed, _ := goSDKMessage(time.Unix(1e9, 0)).AppendBinary(nil)
	f.Add(seed, uint32(0))
	env, _ := (&amqp.Message{Data: [][]byte{seed, seed}}).AppendBinary(nil)
	f.Add(env, uint32(batchFormat))
	f.Add([]byte{0x00, 0x53, 0x75, 0xa0, 0x00}, uint32(0))
	f.Fuzz(func(t *testing.T, payload []byte, format uint32) {
		msgs, err := incoming(payload, format)
		if err != nil {
			require.ErrorIs(t, err, minibus.ErrInvalidArgument)
			return
		}
		require.NotEmpty(t, msgs)
	})
}

// BenchmarkAppendDelivery encodes a 1 KiB peek-locked message as a receiver
// link sends it.
func BenchmarkAppendDelivery(b *testing.B) {
	rm := fullReceived()
	rm.Body = make([]byte, 1024)
	rm.ApplicationProperties = map[string]any{"k": "v", "n": int64(1)}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		buf, err = appendDelivery(buf[:0], rm, true, false)
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIncoming decodes a 1 KiB message as a sender link receives it.
func BenchmarkIncoming(b *testing.B) {
	am := goSDKMessage(time.Unix(1e9, 0))
	am.Data = [][]byte{make([]byte, 1024)}
	payload, err := am.AppendBinary(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := incoming(payload, 0); err != nil {
			b.Fatal(err)
		}
	}
}
