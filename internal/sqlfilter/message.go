package sqlfilter

import (
	"strings"
	"time"
)

// Message is the view of one message that filters read and actions change.
//
// Empty strings, zero times and a zero TimeToLive read as NULL (not set);
// the int64 fields always have a value. The zero Message has no properties
// at all: every user property is missing and every nullable sys. property
// is NULL.
type Message struct {
	MessageID, SessionID string
	Headers

	SequenceNumber, EnqueuedSequenceNumber, DeliveryCount, Size int64

	EnqueuedTimeUtc, ScheduledEnqueueTimeUtc, ExpiresAtUtc time.Time

	// TimeToLive reads as a duration; 0 reads as NULL.
	TimeToLive time.Duration

	// Properties holds the user (application) properties. Values may be
	// nil, string, bool, int, int8..int64, uint8..uint64 (a uint64 above
	// MaxInt64 reads as float64), float32, float64, time.Time,
	// time.Duration or []byte; a value of any other type reads like a
	// []byte: only IS NULL and EXISTS apply to it. Names match
	// case-insensitively (see the package documentation, Properties).
	Properties map[string]any
}

// Headers are a message's other string system properties.
type Headers struct {
	ContentType, CorrelationID, Subject, To, ReplyTo, ReplyToSessionID, PartitionKey string
}

// sysProp identifies a system property (sys.Name). The zero value is not a
// property.
type sysProp uint8

const (
	sysMessageID sysProp = iota + 1
	sysCorrelationID
	sysTo
	sysReplyTo
	sysSubject
	sysSessionID
	sysReplyToSessionID
	sysContentType
	sysPartitionKey
	sysSequenceNumber
	sysEnqueuedSequenceNumber
	sysDeliveryCount
	sysSize
	sysEnqueuedTimeUtc
	sysScheduledEnqueueTimeUtc
	sysExpiresAtUtc
	sysTimeToLive
	sysLast = sysTimeToLive
)

// name returns the canonical spelling used when printing.
func (p sysProp) name() string {
	switch p {
	case sysMessageID:
		return "MessageId"
	case sysCorrelationID:
		return "CorrelationId"
	case sysTo:
		return "To"
	case sysReplyTo:
		return "ReplyTo"
	case sysSubject:
		return "Subject"
	case sysSessionID:
		return "SessionId"
	case sysReplyToSessionID:
		return "ReplyToSessionId"
	case sysContentType:
		return "ContentType"
	case sysPartitionKey:
		return "PartitionKey"
	case sysSequenceNumber:
		return "SequenceNumber"
	case sysEnqueuedSequenceNumber:
		return "EnqueuedSequenceNumber"
	case sysDeliveryCount:
		return "DeliveryCount"
	case sysSize:
		return "Size"
	case sysEnqueuedTimeUtc:
		return "EnqueuedTimeUtc"
	case sysScheduledEnqueueTimeUtc:
		return "ScheduledEnqueueTimeUtc"
	case sysExpiresAtUtc:
		return "ExpiresAtUtc"
	case sysTimeToLive:
		return "TimeToLive"
	}
	return ""
}

// lookupSysProp finds a system property by name, case-insensitively.
// "Label" is the older name of "Subject".
func lookupSysProp(name string) (sysProp, bool) {
	if strings.EqualFold(name, "Label") {
		return sysSubject, true
	}
	for p := sysMessageID; p <= sysLast; p++ {
		if strings.EqualFold(name, p.name()) {
			return p, true
		}
	}
	return 0, false
}

// writable reports whether an action may SET or REMOVE the property: only
// the string properties a sender sets.
func (p sysProp) writable() bool { return p >= sysMessageID && p <= sysPartitionKey }

// str returns a pointer to the field of a string property, nil otherwise.
func (p sysProp) str(m *Message) *string {
	switch p {
	case sysMessageID:
		return &m.MessageID
	case sysCorrelationID:
		return &m.CorrelationID
	case sysTo:
		return &m.To
	case sysReplyTo:
		return &m.ReplyTo
	case sysSubject:
		return &m.Subject
	case sysSessionID:
		return &m.SessionID
	case sysReplyToSessionID:
		return &m.ReplyToSessionID
	case sysContentType:
		return &m.ContentType
	case sysPartitionKey:
		return &m.PartitionKey
	}
	return nil
}

// get reads the property from m: NULL for an empty string, a zero time or a
// zero TimeToLive.
func (p sysProp) get(m *Message) value {
	if s := p.str(m); s != nil {
		if *s == "" {
			return value{}
		}
		return stringValue(*s)
	}
	switch p {
	case sysSequenceNumber:
		return intValue(m.SequenceNumber)
	case sysEnqueuedSequenceNumber:
		return intValue(m.EnqueuedSequenceNumber)
	case sysDeliveryCount:
		return intValue(m.DeliveryCount)
	case sysSize:
		return intValue(m.Size)
	case sysEnqueuedTimeUtc:
		return nullableTime(m.EnqueuedTimeUtc)
	case sysScheduledEnqueueTimeUtc:
		return nullableTime(m.ScheduledEnqueueTimeUtc)
	case sysExpiresAtUtc:
		return nullableTime(m.ExpiresAtUtc)
	case sysTimeToLive:
		if m.TimeToLive == 0 {
			return value{}
		}
		return durationValue(m.TimeToLive)
	}
	return value{}
}

func nullableTime(t time.Time) value {
	if t.IsZero() {
		return value{}
	}
	return timeValue(t)
}

// lookupUser finds a user property: the exact key first, then a
// case-insensitive match. When several keys match case-insensitively (and
// none exactly) the smallest key wins, so the result does not depend on map
// order. It does not allocate.
func lookupUser(props map[string]any, name string) (key string, v any, ok bool) {
	if v, ok := props[name]; ok {
		return name, v, true
	}
	for k, kv := range props {
		if strings.EqualFold(k, name) && (!ok || k < key) {
			key, v, ok = k, kv, true
		}
	}
	return key, v, ok
}
