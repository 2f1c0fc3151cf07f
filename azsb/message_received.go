package azsb

import (
	"maps"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/go-amqp"
	"github.com/minibus-go/minibus"
)

// The conversions of received minibus messages to the SDK's, and of the
// SDK's back to minibus's to settle them. message.go has the other way.

// slot holds one received message and what its pointers point to that the
// minibus message does not hold, so that a batch of received messages takes
// one allocation for all of them. The other pointers point into the minibus
// message itself, which azsb owns (minibus returns copies).
type slot struct {
	rm     azservicebus.ReceivedMessage
	raw    azservicebus.AMQPAnnotatedMessage
	props  azservicebus.AMQPAnnotatedMessageProperties
	header azservicebus.AMQPAnnotatedMessageHeader
	data   [1][]byte
	tag    [16]byte
}

// toReceived converts received or peeked minibus messages. dlq is true for
// messages read from a dead-letter queue, which carry DeadLetterReason and
// DeadLetterErrorDescription as the service sets them (also as application
// properties, where the SDK reads them from).
func toReceived(in []*minibus.ReceivedMessage, dlq bool) []*azservicebus.ReceivedMessage {
	if len(in) == 0 {
		return []*azservicebus.ReceivedMessage{}
	}
	slots := make([]slot, len(in))
	out := make([]*azservicebus.ReceivedMessage, len(in))
	for i, m := range in {
		s := &slots[i]
		fill(s, m, dlq)
		out[i] = &s.rm
	}
	return out
}

// ref points at *p, or is nil when it is empty.
func ref(p *string) *string {
	if *p == "" {
		return nil
	}
	return p
}

// fill converts m into s: the received message, then its raw AMQP view
// with what fromAMQP kept put back.
func fill(s *slot, m *minibus.ReceivedMessage, dlq bool) {
	rm, raw := &s.rm, &s.raw
	fillFields(rm, m)
	appProps, extra := takeSections(m.ApplicationProperties) // minibus's own copy: ours to change
	appProps = withDeadLetter(rm, m, appProps, dlq)
	rm.ApplicationProperties = appProps
	if len(appProps) > 0 {
		raw.ApplicationProperties = maps.Clone(appProps)
	}
	fillRaw(s, m)
	if extra != nil {
		mergeExtra(s, extra)
	}
}

// fillFields sets rm's fields from m's.
func fillFields(rm *azservicebus.ReceivedMessage, m *minibus.ReceivedMessage) {
	rm.MessageID = m.MessageID
	rm.Body = m.Body
	rm.ContentType = ref(&m.ContentType)
	rm.CorrelationID = ref(&m.CorrelationID)
	rm.PartitionKey = ref(&m.PartitionKey)
	rm.ReplyTo = ref(&m.ReplyTo)
	rm.ReplyToSessionID = ref(&m.ReplyToSessionID)
	rm.SessionID = ref(&m.SessionID)
	rm.Subject = ref(&m.Subject)
	rm.To = ref(&m.To)
	rm.DeadLetterSource = ref(&m.DeadLetterSource)
	rm.DeliveryCount = m.DeliveryCount
	rm.LockToken = m.LockToken
	rm.State = azservicebus.MessageState(m.State)
	rm.SequenceNumber = &m.SequenceNumber
	if m.EnqueuedSequenceNumber != 0 {
		rm.EnqueuedSequenceNumber = &m.EnqueuedSequenceNumber
	}
	rm.EnqueuedTime = &m.EnqueuedTime
	if !m.ExpiresAt.IsZero() {
		rm.ExpiresAt = &m.ExpiresAt
	}
	if m.TimeToLive != 0 {
		rm.TimeToLive = &m.TimeToLive
	}
	if !m.LockedUntil.IsZero() {
		rm.LockedUntil = &m.LockedUntil
	}
	if !m.ScheduledEnqueueTime.IsZero() {
		rm.ScheduledEnqueueTime = &m.ScheduledEnqueueTime
	}
}

// takeSections removes amqpSectionsProperty from the application
// properties appProps and decodes it: extra is nil if there is none or it
// does not decode. Properties left empty are nil.
func takeSections(appProps map[string]any) (_ map[string]any, extra *amqp.Message) {
	enc, ok := appProps[amqpSectionsProperty].([]byte)
	if !ok {
		return appProps, nil
	}
	delete(appProps, amqpSectionsProperty)
	var x amqp.Message
	if x.UnmarshalBinary(enc) == nil {
		extra = &x
	}
	if len(appProps) == 0 {
		appProps = nil
	}
	return appProps, extra
}

// withDeadLetter sets rm's DeadLetterReason and DeadLetterErrorDescription
// and adds them to the application properties appProps, for a message of a
// dead-letter queue (dlq) or one that has either.
func withDeadLetter(rm *azservicebus.ReceivedMessage, m *minibus.ReceivedMessage, appProps map[string]any, dlq bool) map[string]any {
	if !dlq && m.DeadLetterReason == "" && m.DeadLetterErrorDescription == "" {
		return appProps
	}
	if appProps == nil {
		appProps = make(map[string]any, 2)
	}
	appProps[propDeadLetterReason] = m.DeadLetterReason
	appProps[propDeadLetterDescription] = m.DeadLetterErrorDescription
	rm.DeadLetterReason, rm.DeadLetterErrorDescription = &m.DeadLetterReason, &m.DeadLetterErrorDescription
	return appProps
}

// fillRaw sets s.rm's raw AMQP view, as the service delivers the message,
// from m and the fields fillFields set.
func fillRaw(s *slot, m *minibus.ReceivedMessage) {
	rm, raw, p := &s.rm, &s.raw, &s.props
	rm.RawAMQPMessage = raw
	p.ContentType, p.Subject, p.To, p.ReplyTo = rm.ContentType, rm.Subject, rm.To, rm.ReplyTo
	p.ReplyToGroupID, p.GroupID = rm.ReplyToSessionID, rm.SessionID
	p.MessageID = m.MessageID
	if rm.CorrelationID != nil {
		p.CorrelationID = m.CorrelationID
	}
	raw.Properties = p
	s.header = azservicebus.AMQPAnnotatedMessageHeader{Priority: 4, TTL: m.TimeToLive}
	if m.DeliveryCount > 0 {
		s.header.DeliveryCount = m.DeliveryCount - 1
	}
	raw.Header = &s.header
	s.data[0] = m.Body
	raw.Body.Data = s.data[:]
	if m.LockToken != ([16]byte{}) {
		s.tag = dotnetOrder(m.LockToken)
		raw.DeliveryTag = s.tag[:]
	}
	raw.MessageAnnotations = brokerAnnotations(rm, m)
}

// brokerAnnotations are the message annotations the service sets on m.
func brokerAnnotations(rm *azservicebus.ReceivedMessage, m *minibus.ReceivedMessage) map[any]any {
	annots := make(map[any]any, 8)
	annots[annotSequenceNumber] = m.SequenceNumber
	annots[annotEnqueuedTime] = m.EnqueuedTime
	annots[annotMessageState] = int64(m.State)
	if rm.LockedUntil != nil {
		annots[annotLockedUntil] = m.LockedUntil
	}
	if rm.PartitionKey != nil {
		annots[annotPartitionKey] = m.PartitionKey
	}
	if rm.ScheduledEnqueueTime != nil {
		annots[annotScheduledTime] = m.ScheduledEnqueueTime
	}
	if rm.EnqueuedSequenceNumber != nil {
		annots[annotEnqueuedSeq] = m.EnqueuedSequenceNumber
	}
	if rm.DeadLetterSource != nil {
		annots[annotDeadLetterSrc] = m.DeadLetterSource
	}
	return annots
}

// mergeExtra puts back what fromAMQP kept in amqpSectionsProperty.
func mergeExtra(s *slot, x *amqp.Message) {
	rm, raw, p := &s.rm, &s.raw, &s.props
	for k, v := range x.Annotations {
		if _, broker := raw.MessageAnnotations[k]; !broker { // the service's own win
			raw.MessageAnnotations[k] = v
		}
	}
	if len(x.Data) > 0 || x.Value != nil || len(x.Sequence) > 0 {
		raw.Body = azservicebus.AMQPAnnotatedMessageBody{Data: x.Data, Value: x.Value, Sequence: x.Sequence}
		rm.Body = nil
		if len(x.Data) == 1 {
			rm.Body = x.Data[0]
		}
	}
	if len(x.Footer) > 0 {
		raw.Footer = map[any]any(x.Footer)
	}
	if h := x.Header; h != nil {
		s.header.Durable, s.header.Priority = h.Durable, h.Priority
	}
	if xp := x.Properties; xp != nil {
		if xp.MessageID != nil {
			p.MessageID = xp.MessageID
			rm.MessageID = "" // the SDK surfaces string ids only
		}
		if xp.CorrelationID != nil {
			p.CorrelationID = xp.CorrelationID
		}
		p.ContentEncoding, p.CreationTime, p.AbsoluteExpiryTime = xp.ContentEncoding, xp.CreationTime, xp.AbsoluteExpiryTime
		p.GroupSequence, p.UserID = xp.GroupSequence, xp.UserID
	}
}

// dotnetOrder gives a lock token in the byte order of the AMQP delivery tag
// the service sends (a .NET GUID); the SDK swaps it back into LockToken.
func dotnetOrder(t [16]byte) [16]byte {
	t[0], t[3] = t[3], t[0]
	t[1], t[2] = t[2], t[1]
	t[4], t[5] = t[5], t[4]
	t[6], t[7] = t[7], t[6]
	return t
}

// settlePool recycles the minibus messages settlements are made with:
// minibus keeps no reference to them after the call.
var settlePool = sync.Pool{New: func() any { return new(minibus.ReceivedMessage) }}

// toSettle is the minibus message to settle or renew m's lock with: any
// receiver of the entity settles by lock token (SEMANTICS L10), as the SDK's
// settlement on the management link does. Give it back with putSettle.
func toSettle(m *azservicebus.ReceivedMessage) *minibus.ReceivedMessage {
	out := settlePool.Get().(*minibus.ReceivedMessage)
	out.LockToken = m.LockToken
	if m.SequenceNumber != nil {
		out.SequenceNumber = *m.SequenceNumber
	}
	return out
}

func putSettle(m *minibus.ReceivedMessage) {
	*m = minibus.ReceivedMessage{}
	settlePool.Put(m)
}
