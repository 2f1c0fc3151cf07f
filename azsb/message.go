package azsb

import (
	"crypto/rand"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/go-amqp"
	"github.com/minibus-go/minibus"
)

// The conversions between the SDK's messages and minibus's, both ways
// (received messages in message_received.go). Sent fields map one to one
// (a nil *string is minibus's "", a nil *time.Time its zero time, a nil
// *time.Duration 0); what minibus has no field for (AMQP bodies other than
// one data section, custom message annotations, non-string message ids,
// footers and a few properties) travels in one reserved application
// property, amqpSectionsProperty, that azsb strips again on receive.

// amqpSectionsProperty is the application property in which azsb keeps the
// parts of an AMQP message minibus has no field for, AMQP-encoded. Receivers
// of azsb never see it; minibus receivers of the same entity do.
const amqpSectionsProperty = "$azsb.amqp"

// Message annotations the service sets and the SDK reads.
const (
	annotPartitionKey   = "x-opt-partition-key"
	annotScheduledTime  = "x-opt-scheduled-enqueue-time"
	annotLockedUntil    = "x-opt-locked-until"
	annotSequenceNumber = "x-opt-sequence-number"
	annotEnqueuedTime   = "x-opt-enqueued-time"
	annotDeadLetterSrc  = "x-opt-deadletter-source"
	annotEnqueuedSeq    = "x-opt-enqueue-sequence-number"
	annotMessageState   = "x-opt-message-state"
)

// Application properties the service sets on dead-lettered messages and the
// SDK reads DeadLetterReason and DeadLetterErrorDescription from.
const (
	propDeadLetterReason      = "DeadLetterReason"
	propDeadLetterDescription = "DeadLetterErrorDescription"
)

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// fromMessage converts a message to send. i numbers it in its call.
func fromMessage(m *azservicebus.Message, i int) (*minibus.Message, error) {
	if m == nil {
		return nil, clientError(minibus.ErrInvalidArgument, fmt.Sprintf("azsb: message %d is nil", i))
	}
	props, _, err := normalizeProps(m.ApplicationProperties)
	if err != nil {
		return nil, err
	}
	out := sendPool.Get().(*minibus.Message)
	*out = minibus.Message{
		MessageID:             str(m.MessageID),
		Body:                  m.Body,
		ContentType:           str(m.ContentType),
		CorrelationID:         str(m.CorrelationID),
		Subject:               str(m.Subject),
		To:                    str(m.To),
		ReplyTo:               str(m.ReplyTo),
		ReplyToSessionID:      str(m.ReplyToSessionID),
		SessionID:             str(m.SessionID),
		PartitionKey:          str(m.PartitionKey),
		ApplicationProperties: props,
	}
	if m.TimeToLive != nil {
		out.TimeToLive = *m.TimeToLive
	}
	if m.ScheduledEnqueueTime != nil {
		out.ScheduledEnqueueTime = *m.ScheduledEnqueueTime
	}
	return out, nil
}

// sendPool recycles the minibus messages single sends are made with: minibus
// copies what it keeps (SEMANTICS V4) and keeps no reference to them.
var sendPool = sync.Pool{New: func() any { return new(minibus.Message) }}

// putMessage gives a message made by fromMessage back to sendPool.
func putMessage(m *minibus.Message) {
	*m = minibus.Message{}
	sendPool.Put(m)
}

// normalizeProps checks application property values against what both the
// SDK's AMQP encoding and minibus carry, and gives them the types a
// receiver of the SDK reads back: int becomes int64, uint uint64, as AMQP
// has no machine-sized integers. The map is copied only when a value
// changes; copied reports whether it was.
func normalizeProps(p map[string]any) (out map[string]any, copied bool, err error) {
	for k, v := range p {
		var nv any
		switch x := v.(type) {
		case nil, bool, string, []byte, time.Time,
			int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64:
			continue
		case int:
			nv = int64(x)
		case uint:
			nv = uint64(x)
		default:
			return nil, false, clientError(minibus.ErrInvalidArgument,
				fmt.Sprintf("azsb: application property %q: marshal not implemented for %T", k, v))
		}
		if out == nil {
			out = maps.Clone(p)
		}
		out[k] = nv
	}
	if out != nil {
		return out, true, nil
	}
	return p, false, nil
}

// toAMQP converts an AMQP annotated message to go-amqp's message, as the
// SDK's own toAMQPMessage does, so that AMQP messages and decoded batch
// messages share one conversion (fromAMQP).
func toAMQP(am *azservicebus.AMQPAnnotatedMessage) *amqp.Message {
	out := &amqp.Message{
		Annotations:           amqp.Annotations(am.MessageAnnotations),
		ApplicationProperties: am.ApplicationProperties,
		Data:                  am.Body.Data,
		Value:                 am.Body.Value,
		Sequence:              am.Body.Sequence,
		Footer:                amqp.Annotations(am.Footer),
		Properties:            &amqp.MessageProperties{},
	}
	if h := am.Header; h != nil {
		out.Header = &amqp.MessageHeader{DeliveryCount: h.DeliveryCount, Durable: h.Durable, FirstAcquirer: h.FirstAcquirer, Priority: h.Priority, TTL: h.TTL}
	}
	if p := am.Properties; p != nil {
		out.Properties = &amqp.MessageProperties{
			AbsoluteExpiryTime: p.AbsoluteExpiryTime, ContentEncoding: p.ContentEncoding, ContentType: p.ContentType,
			CorrelationID: p.CorrelationID, CreationTime: p.CreationTime, GroupID: p.GroupID, GroupSequence: p.GroupSequence,
			MessageID: p.MessageID, ReplyTo: p.ReplyTo, ReplyToGroupID: p.ReplyToGroupID, Subject: p.Subject, To: p.To, UserID: p.UserID,
		}
	}
	return out
}

// fromAMQP converts an AMQP message to send: the properties, header TTL,
// partition key and schedule annotations and application properties map to
// minibus's fields; a body of exactly one data section is the Body; the
// rest (other bodies, other annotations, non-string ids, the footer,
// durable and priority, content encoding, creation and expiry times, group
// sequence, user id) is kept AMQP-encoded in amqpSectionsProperty. Delivery
// annotations and the delivery tag belong to one transfer and are dropped,
// as a broker does.
func fromAMQP(am *amqp.Message, i int) (*minibus.Message, error) {
	if am == nil {
		return nil, clientError(minibus.ErrInvalidArgument, fmt.Sprintf("azsb: message %d is nil", i))
	}
	props, copied, err := normalizeProps(am.ApplicationProperties)
	if err != nil {
		return nil, err
	}
	out := &minibus.Message{ApplicationProperties: props}
	var extra amqp.Message
	propertiesFromAMQP(out, &extra, am.Properties)
	headerFromAMQP(out, &extra, am.Header)
	annotationsFromAMQP(out, &extra, am.Annotations)
	bodyFromAMQP(out, &extra, am)
	if len(am.Footer) > 0 {
		extra.Footer = am.Footer
	}
	if !hasSections(&extra) {
		return out, nil
	}
	enc, err := extra.MarshalBinary()
	if err != nil {
		return nil, clientError(minibus.ErrInvalidArgument, fmt.Sprintf("azsb: message %d: %v", i, err))
	}
	if !copied {
		out.ApplicationProperties = make(map[string]any, len(props)+1)
		maps.Copy(out.ApplicationProperties, props)
	}
	out.ApplicationProperties[amqpSectionsProperty] = enc
	return out, nil
}

// The helpers of fromAMQP each take one part of an AMQP message: what
// minibus has a field for goes into out, the rest into extra.

// propertiesFromAMQP takes the AMQP properties p, which may be nil.
func propertiesFromAMQP(out *minibus.Message, extra *amqp.Message, p *amqp.MessageProperties) {
	if p == nil {
		return
	}
	out.ContentType, out.Subject, out.To = str(p.ContentType), str(p.Subject), str(p.To)
	out.ReplyTo, out.ReplyToSessionID, out.SessionID = str(p.ReplyTo), str(p.ReplyToGroupID), str(p.GroupID)
	var ep amqp.MessageProperties
	out.MessageID, ep.MessageID = splitID(p.MessageID)
	out.CorrelationID, ep.CorrelationID = splitID(p.CorrelationID)
	ep.ContentEncoding, ep.CreationTime, ep.AbsoluteExpiryTime = p.ContentEncoding, p.CreationTime, p.AbsoluteExpiryTime
	ep.GroupSequence, ep.UserID = p.GroupSequence, p.UserID
	if ep.MessageID != nil || ep.CorrelationID != nil || ep.ContentEncoding != nil || ep.CreationTime != nil ||
		ep.AbsoluteExpiryTime != nil || ep.GroupSequence != nil || ep.UserID != nil {
		extra.Properties = &ep
	}
}

// splitID gives a string message or correlation id as minibus's id, and
// an id of another AMQP type as the one to keep.
func splitID(id any) (string, any) {
	if s, ok := id.(string); ok {
		return s, nil
	}
	return "", id
}

// headerFromAMQP takes the AMQP header h, which may be nil.
func headerFromAMQP(out *minibus.Message, extra *amqp.Message, h *amqp.MessageHeader) {
	if h == nil {
		return
	}
	out.TimeToLive = h.TTL
	// The SDK's own messages carry a header with priority 0 when they
	// have a TTL; AMQP's default is 4. Neither is worth keeping.
	if h.Durable || (h.Priority != 4 && h.Priority != 0) {
		extra.Header = &amqp.MessageHeader{Durable: h.Durable, Priority: h.Priority}
	}
}

// annotationsFromAMQP takes the message annotations.
func annotationsFromAMQP(out *minibus.Message, extra *amqp.Message, annots amqp.Annotations) {
	for k, v := range annots {
		if annotationToField(out, k, v) {
			continue
		}
		if extra.Annotations == nil {
			extra.Annotations = amqp.Annotations{}
		}
		extra.Annotations[k] = v
	}
}

// annotationToField takes a string partition key annotation into
// out.PartitionKey and a time.Time or *time.Time schedule annotation into
// out.ScheduledEnqueueTime, and reports whether it took the annotation k.
func annotationToField(out *minibus.Message, k, v any) bool {
	switch k {
	case annotPartitionKey:
		if s, ok := v.(string); ok {
			out.PartitionKey = s
			return true
		}
	case annotScheduledTime:
		switch t := v.(type) {
		case time.Time:
			out.ScheduledEnqueueTime = t
			return true
		case *time.Time:
			if t != nil {
				out.ScheduledEnqueueTime = *t
			}
			return true
		}
	}
	return false
}

// bodyFromAMQP takes am's body: exactly one data section is out.Body, any
// other body not empty is kept whole.
func bodyFromAMQP(out *minibus.Message, extra *amqp.Message, am *amqp.Message) {
	if len(am.Data) == 1 && am.Value == nil && len(am.Sequence) == 0 {
		out.Body = am.Data[0]
	} else if len(am.Data) > 0 || am.Value != nil || len(am.Sequence) > 0 {
		extra.Data, extra.Value, extra.Sequence = am.Data, am.Value, am.Sequence
	}
}

// hasSections reports whether fromAMQP kept anything in x.
func hasSections(x *amqp.Message) bool {
	return x.Properties != nil || x.Header != nil || x.Annotations != nil || x.Footer != nil ||
		x.Data != nil || x.Value != nil || x.Sequence != nil
}

// newUUID returns a random RFC 4122 version 4 UUID, the MessageID the SDK
// gives messages it schedules or batches without one.
func newUUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
