package server

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
)

// batchFormat is the message-format of a batch: a transfer whose data
// sections are each one encoded message (SEMANTICS W4).
const batchFormat = 0x80013700

// The message annotations and delivery annotations Service Bus defines
// (SEMANTICS W4, W5).
const (
	annSequenceNumber        amqp.Symbol = "x-opt-sequence-number"
	annEnqueuedTime          amqp.Symbol = "x-opt-enqueued-time"
	annLockedUntil           amqp.Symbol = "x-opt-locked-until"
	annScheduledEnqueueTime  amqp.Symbol = "x-opt-scheduled-enqueue-time"
	annEnqueueSequenceNumber amqp.Symbol = "x-opt-enqueue-sequence-number"
	annMessageState          amqp.Symbol = "x-opt-message-state"
	annDeadLetterSource      amqp.Symbol = "x-opt-deadletter-source"
	annPartitionKey          amqp.Symbol = "x-opt-partition-key"
	annLockToken             amqp.Symbol = "x-opt-lock-token"
)

// The application properties a dead-lettered message carries (SEMANTICS
// W5).
const (
	propDeadLetterReason      = "DeadLetterReason"
	propDeadLetterDescription = "DeadLetterErrorDescription"
)

// The descriptors .NET gives the property types AMQP lacks; the values are
// .NET ticks (100 ns) and a string.
const (
	descTimeSpan       amqp.Symbol = "com.microsoft:timespan"
	descDateTimeOffset amqp.Symbol = "com.microsoft:datetime-offset"
	descURI            amqp.Symbol = "com.microsoft:uri"
)

// incoming decodes the payload of one transfer (SEMANTICS W4): with
// message-format 0 one message, with batchFormat a batch whose data
// sections each hold one encoded message, every one of which must be valid.
// Any other format, an empty batch or a bad message is an error wrapping
// minibus.ErrInvalidArgument that names the message and the field.
//
// The messages' bodies may alias payload: they must be sent (minibus
// copies them) before payload's buffer is reused.
func incoming(payload []byte, format uint32) ([]*minibus.Message, error) {
	switch format {
	case 0:
		m, err := decodeMessage(payload, "message")
		if err != nil {
			return nil, err
		}
		return []*minibus.Message{m}, nil
	case batchFormat:
		var env amqp.Message
		if err := env.UnmarshalBinary(payload); err != nil {
			return nil, failf(minibus.ErrInvalidArgument, "batch", "%v", err)
		}
		if len(env.Data) == 0 {
			return nil, failf(minibus.ErrInvalidArgument, "batch", "no messages (a batch's data sections each hold one message)")
		}
		msgs := make([]*minibus.Message, len(env.Data))
		for i, b := range env.Data {
			m, err := decodeMessage(b, "batch message "+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			msgs[i] = m
		}
		return msgs, nil
	}
	return nil, failf(minibus.ErrInvalidArgument, "message", "message-format %#x (want 0, or %#x for a batch)", format, uint32(batchFormat))
}

// decodeMessage decodes one encoded AMQP message into a minibus message;
// what names it in errors.
func decodeMessage(b []byte, what string) (*minibus.Message, error) {
	var am amqp.Message
	if err := am.UnmarshalBinary(b); err != nil {
		return nil, failf(minibus.ErrInvalidArgument, what, "%v", err)
	}
	return fromAMQP(&am, what)
}

// fromAMQP maps an AMQP message to the minibus message it sends (SEMANTICS
// W4): properties.message-id (string, uuid, ulong or binary, as a string),
// group-id as SessionID, reply-to-group-id as ReplyToSessionID, to, subject,
// reply-to, correlation-id, content-type, header.ttl as TimeToLive, the
// annotations x-opt-scheduled-enqueue-time and x-opt-partition-key, the
// application properties (see propertyFromAMQP), and the body: the data
// sections concatenated, or an amqp-value of string or binary. Errors wrap
// minibus.ErrInvalidArgument and name what and the field.
func fromAMQP(am *amqp.Message, what string) (*minibus.Message, error) {
	m := &minibus.Message{}
	if p := am.Properties; p != nil {
		id, err := idString(p.MessageID)
		if err != nil {
			return nil, failf(minibus.ErrInvalidArgument, what, "message-id: %v", err)
		}
		corr, err := idString(p.CorrelationID)
		if err != nil {
			return nil, failf(minibus.ErrInvalidArgument, what, "correlation-id: %v", err)
		}
		m.MessageID, m.CorrelationID = id, corr
		m.To, m.Subject, m.ReplyTo = p.To, p.Subject, p.ReplyTo
		m.ContentType = string(p.ContentType)
		m.SessionID, m.ReplyToSessionID = p.GroupID, p.ReplyToGroupID
	}
	if h := am.Header; h != nil && h.TTL > 0 {
		m.TimeToLive = time.Duration(h.TTL) * time.Millisecond
	}
	if v, ok := am.MessageAnnotations.GetSymbol(string(annScheduledEnqueueTime)); ok && v != nil {
		t, ok := v.(time.Time)
		if !ok {
			return nil, failf(minibus.ErrInvalidArgument, what, "annotation %s: %s (want a timestamp)", annScheduledEnqueueTime, amqpTypeName(v))
		}
		m.ScheduledEnqueueTime = t
	}
	if v, ok := am.MessageAnnotations.GetSymbol(string(annPartitionKey)); ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return nil, failf(minibus.ErrInvalidArgument, what, "annotation %s: %s (want a string)", annPartitionKey, amqpTypeName(v))
		}
		m.PartitionKey = s
	}
	props, err := propertiesFromAMQP(am.ApplicationProperties, "application property")
	if err != nil {
		return nil, failf(minibus.ErrInvalidArgument, what, "%v", err)
	}
	m.ApplicationProperties = props
	body, err := bodyOf(am)
	if err != nil {
		return nil, failf(minibus.ErrInvalidArgument, what, "%v", err)
	}
	m.Body = body
	return m, nil
}

// bodyOf is a message's body as bytes: its data sections concatenated (one
// section is returned as it is), or its amqp-value when that is a string,
// binary or null. No body section gives nil.
func bodyOf(am *amqp.Message) ([]byte, error) {
	switch {
	case len(am.Sequence) > 0:
		return nil, fmt.Errorf("body: an amqp-sequence section (want data sections, or an amqp-value of string or binary)")
	case len(am.Data) == 1:
		if am.Data[0] == nil {
			return []byte{}, nil
		}
		return am.Data[0], nil
	case len(am.Data) > 1:
		n := 0
		for _, d := range am.Data {
			n += len(d)
		}
		body := make([]byte, 0, n)
		for _, d := range am.Data {
			body = append(body, d...)
		}
		return body, nil
	case am.HasValue:
		switch v := am.Value.(type) {
		case nil:
			return nil, nil
		case string:
			return []byte(v), nil
		case []byte:
			if v == nil {
				return []byte{}, nil
			}
			return v, nil
		}
		return nil, fmt.Errorf("body: an amqp-value of %s (want string or binary)", amqpTypeName(am.Value))
	}
	return nil, nil
}

// idString gives a message-id or correlation-id as the string minibus
// keeps: a string as it is, a uuid in its canonical form, a ulong in
// decimal, binary in hex; null is "".
func idString(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case amqp.Symbol:
		return string(v), nil
	case amqp.UUID:
		return v.String(), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case []byte:
		return hex.EncodeToString(v), nil
	}
	return "", fmt.Errorf("%s (want string, uuid, ulong or binary)", amqpTypeName(v))
}

// propertiesFromAMQP maps a map of application properties (or of
// properties-to-modify, SEMANTICS W6, W8) to the map minibus takes, each
// value by propertyFromAMQP. Keys must be strings (or symbols). what names
// the entries in errors ("application property").
func propertiesFromAMQP(m amqp.Map, what string) (map[string]any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	props := make(map[string]any, len(m))
	for _, kv := range m {
		var key string
		switch k := kv.Key.(type) {
		case string:
			key = k
		case amqp.Symbol:
			key = string(k)
		default:
			return nil, fmt.Errorf("%s key of type %s (want string)", what, amqpTypeName(kv.Key))
		}
		v, err := propertyFromAMQP(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", what, key, err)
		}
		props[key] = v
	}
	return props, nil
}

// propertyFromAMQP maps one AMQP property value to a Go value minibus
// accepts: null, booleans, numbers, strings, binary and timestamps as they
// are; symbol, char and uuid as strings; the described .NET types
// com.microsoft:timespan as a time.Duration, com.microsoft:datetime-offset
// as a time.Time and com.microsoft:uri as a string. Anything else
// (decimals, lists, maps, arrays, other described values) is an error.
func propertyFromAMQP(v any) (any, error) {
	switch v := v.(type) {
	case nil, bool, string, []byte, time.Time,
		int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64:
		return v, nil
	case amqp.Symbol:
		return string(v), nil
	case amqp.Char:
		return string(rune(v)), nil
	case amqp.UUID:
		return v.String(), nil
	case amqp.Described:
		return describedFromAMQP(v)
	case *amqp.Described:
		if v != nil {
			return describedFromAMQP(*v)
		}
	}
	return nil, fmt.Errorf("type %s is not supported", amqpTypeName(v))
}

// describedFromAMQP maps the described types .NET uses for TimeSpan,
// DateTimeOffset and Uri properties.
func describedFromAMQP(d amqp.Described) (any, error) {
	desc, _ := d.Descriptor.(amqp.Symbol)
	switch desc {
	case descTimeSpan:
		ticks, ok := d.Value.(int64)
		if !ok || ticks > math.MaxInt64/100 || ticks < math.MinInt64/100 {
			break
		}
		return time.Duration(ticks) * 100, nil
	case descDateTimeOffset:
		ticks, ok := d.Value.(int64)
		if !ok {
			break
		}
		return timeFromTicks(ticks), nil
	case descURI:
		s, ok := d.Value.(string)
		if !ok {
			break
		}
		return s, nil
	default:
		return nil, fmt.Errorf("described type %v is not supported", d.Descriptor)
	}
	return nil, fmt.Errorf("%v of %s is not supported", desc, amqpTypeName(d.Value))
}

// propertyToAMQP maps a minibus property value to the AMQP value sent:
// a time.Duration as com.microsoft:timespan (ticks), the rest as they are
// (the codec encodes Go int as long and uint as ulong).
func propertyToAMQP(v any) any {
	if d, ok := v.(time.Duration); ok {
		return amqp.Described{Descriptor: descTimeSpan, Value: int64(d / 100)}
	}
	return v
}

// dotnetEpochTicks is the Unix epoch in .NET ticks (100 ns since
// 0001-01-01 UTC).
const dotnetEpochTicks = 621355968000000000

// ticksFromTime gives t in .NET ticks, as com.microsoft:locked-until-utc and
// com.microsoft:datetime-offset carry it.
func ticksFromTime(t time.Time) int64 {
	return t.Unix()*10_000_000 + int64(t.Nanosecond()/100) + dotnetEpochTicks
}

// timeFromTicks is the UTC instant of .NET ticks.
func timeFromTicks(ticks int64) time.Time {
	d := ticks - dotnetEpochTicks
	return time.Unix(d/10_000_000, (d%10_000_000)*100).UTC()
}

// appendDelivery encodes rm as the AMQP message a receiver link or a
// management reply carries (SEMANTICS W5) and appends it to dst:
//   - a header with delivery-count DeliveryCount−1 and, when the message
//     expires, ttl (its effective TimeToLive in ms, at most 2³²−1);
//   - properties: message-id, to, subject, reply-to, correlation-id,
//     content-type, group-id (SessionID), reply-to-group-id,
//     absolute-expiry-time (ExpiresAt) and creation-time (EnqueuedTime);
//   - message annotations x-opt-sequence-number (long),
//     x-opt-enqueued-time (timestamp), x-opt-locked-until (timestamp,
//     peek-lock only), x-opt-scheduled-enqueue-time (timestamp, when set),
//     x-opt-enqueue-sequence-number (long, when set), x-opt-message-state
//     (int: 0 active, 1 deferred, 2 scheduled), x-opt-deadletter-source and
//     x-opt-partition-key (strings, when set);
//   - application properties, with DeadLetterReason and
//     DeadLetterErrorDescription when set;
//   - one data section, the body.
//
// withLockToken adds the delivery annotation x-opt-lock-token (uuid) when
// the message has a lock token: receive-by-sequence-number and other
// management replies carry the token there, links in the delivery tag.
func appendDelivery(dst []byte, rm *minibus.ReceivedMessage, peekLock, withLockToken bool) ([]byte, error) {
	am, err := toAMQP(rm, peekLock, withLockToken)
	if err != nil {
		return dst, err
	}
	return am.AppendBinary(dst)
}

// toAMQP builds the AMQP message appendDelivery encodes.
func toAMQP(rm *minibus.ReceivedMessage, peekLock, withLockToken bool) (*amqp.Message, error) {
	if rm == nil {
		return nil, failf(minibus.ErrInvalidArgument, "message", "nil")
	}
	h := &amqp.Header{Priority: 4}
	if rm.DeliveryCount > 0 {
		h.DeliveryCount = rm.DeliveryCount - 1
	}
	if rm.TimeToLive > 0 {
		ms := (rm.TimeToLive + time.Millisecond - 1) / time.Millisecond
		h.TTL = uint32(min(ms, math.MaxUint32))
	}
	p := &amqp.Properties{
		MessageID: rm.MessageID,
		To:        rm.To, Subject: rm.Subject, ReplyTo: rm.ReplyTo,
		ContentType:        amqp.Symbol(rm.ContentType),
		AbsoluteExpiryTime: rm.ExpiresAt, CreationTime: rm.EnqueuedTime,
		GroupID: rm.SessionID, ReplyToGroupID: rm.ReplyToSessionID,
	}
	if rm.CorrelationID != "" {
		p.CorrelationID = rm.CorrelationID
	}
	ann := make(amqp.Map, 0, 8)
	ann = append(ann,
		amqp.KV{Key: annSequenceNumber, Value: rm.SequenceNumber},
		amqp.KV{Key: annEnqueuedTime, Value: rm.EnqueuedTime})
	if peekLock && !rm.LockedUntil.IsZero() {
		ann = append(ann, amqp.KV{Key: annLockedUntil, Value: rm.LockedUntil})
	}
	if !rm.ScheduledEnqueueTime.IsZero() {
		ann = append(ann, amqp.KV{Key: annScheduledEnqueueTime, Value: rm.ScheduledEnqueueTime})
	}
	if rm.EnqueuedSequenceNumber != 0 {
		ann = append(ann, amqp.KV{Key: annEnqueueSequenceNumber, Value: rm.EnqueuedSequenceNumber})
	}
	ann = append(ann, amqp.KV{Key: annMessageState, Value: int32(rm.State)})
	if rm.DeadLetterSource != "" {
		ann = append(ann, amqp.KV{Key: annDeadLetterSource, Value: rm.DeadLetterSource})
	}
	if rm.PartitionKey != "" {
		ann = append(ann, amqp.KV{Key: annPartitionKey, Value: rm.PartitionKey})
	}
	am := &amqp.Message{
		Header:                h,
		MessageAnnotations:    ann,
		Properties:            p,
		ApplicationProperties: applicationProperties(rm),
		Data:                  [][]byte{rm.Body},
	}
	if rm.Body == nil {
		am.Data[0] = []byte{}
	}
	if withLockToken && rm.LockToken != ([16]byte{}) {
		am.DeliveryAnnotations = amqp.Map{{Key: annLockToken, Value: amqp.UUID(rm.LockToken)}}
	}
	return am, nil
}

// applicationProperties is rm's application properties in key order, with
// the dead-letter reason and description; nil when there are none.
func applicationProperties(rm *minibus.ReceivedMessage) amqp.Map {
	n := len(rm.ApplicationProperties)
	if rm.DeadLetterReason != "" {
		n++
	}
	if rm.DeadLetterErrorDescription != "" {
		n++
	}
	if n == 0 {
		return nil
	}
	m := make(amqp.Map, 0, n)
	for k, v := range rm.ApplicationProperties {
		if (k == propDeadLetterReason && rm.DeadLetterReason != "") ||
			(k == propDeadLetterDescription && rm.DeadLetterErrorDescription != "") {
			continue
		}
		m = append(m, amqp.KV{Key: k, Value: propertyToAMQP(v)})
	}
	if rm.DeadLetterReason != "" {
		m = append(m, amqp.KV{Key: propDeadLetterReason, Value: rm.DeadLetterReason})
	}
	if rm.DeadLetterErrorDescription != "" {
		m = append(m, amqp.KV{Key: propDeadLetterDescription, Value: rm.DeadLetterErrorDescription})
	}
	slices.SortFunc(m, func(a, b amqp.KV) int {
		return cmp.Compare(a.Key.(string), b.Key.(string))
	})
	return m
}

// deliveryTag is the 16-byte delivery tag of a lock token (SEMANTICS W5):
// the token in .NET GUID byte order, its first three groups little-endian,
// as the SDKs read it.
func deliveryTag(tok [16]byte) [16]byte {
	t := tok
	t[0], t[1], t[2], t[3] = tok[3], tok[2], tok[1], tok[0]
	t[4], t[5] = tok[5], tok[4]
	t[6], t[7] = tok[7], tok[6]
	return t
}

// amqpTypeName names a decoded AMQP value's Go type for an error message.
func amqpTypeName(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
