package amqp

import (
	"fmt"
	"math"
	"time"
)

// Message is an AMQP message (part 3, section 3.2): the sections a transfer's
// payload holds. A nil or zero field is a section that is absent. The body
// is one of: zero or more Data sections, zero or more Sequence sections, or
// one Value (HasValue set; its value may be nil, an amqp-value of null).
type Message struct {
	Header *Header
	// DeliveryAnnotations has symbol (or ulong) keys.
	DeliveryAnnotations Map
	// MessageAnnotations has symbol (or ulong) keys.
	MessageAnnotations Map
	Properties         *Properties
	// ApplicationProperties has string keys and simple values.
	ApplicationProperties Map
	Data                  [][]byte // data sections, in order
	Sequence              [][]any  // amqp-sequence sections, in order
	Value                 any      // the amqp-value section's value, when HasValue
	HasValue              bool
	Footer                Map
}

// Header is the header section (section 3.2.1, descriptor 0x70). Absent
// fields decode to their defaults (Priority 4, the rest zero); when
// encoding, fields equal to their defaults are written as absent, so set
// Priority (4 is the default, 0 the lowest priority) -- except
// DeliveryCount, always written: rhea (the JavaScript SDK) reads an absent
// delivery-count as undefined, not 0 (SEMANTICS W5).
type Header struct {
	Durable       bool
	Priority      uint8
	TTL           uint32 // milliseconds; 0 is absent (no TTL)
	FirstAcquirer bool
	DeliveryCount uint32
}

// Properties is the properties section (section 3.2.4, descriptor 0x73).
// Empty strings, nil values and zero times are absent; a GroupSequence of
// 0 is encoded as absent (it decodes to 0 either way).
type Properties struct {
	// MessageID is a string, UUID, uint64 or []byte (or nil): the
	// message-id types; it is encoded as held, any AMQP value.
	MessageID          any
	UserID             []byte
	To                 string
	Subject            string
	ReplyTo            string
	CorrelationID      any // as MessageID
	ContentType        Symbol
	ContentEncoding    Symbol
	AbsoluteExpiryTime time.Time
	CreationTime       time.Time
	GroupID            string
	GroupSequence      uint32
	ReplyToGroupID     string
}

func (h *Header) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if h == nil {
		return append(dst, codeNull), nil
	}
	var l listw
	dst = l.begin(dst, descHeader)
	dst = l.optBool(dst, h.Durable)
	if h.Priority != 4 {
		dst = append(dst, codeUbyte, h.Priority)
		l.kept(dst)
	} else {
		dst = l.null(dst)
	}
	dst = l.optUint(dst, h.TTL, h.TTL != 0)
	dst = l.optBool(dst, h.FirstAcquirer)
	dst = l.optUint(dst, h.DeliveryCount, true)
	return l.end(dst, false)
}

func (d *decoder) decodeHeader() (*Header, error) {
	saved, err := d.composite("header")
	if err != nil {
		return nil, err
	}
	h := &Header{Priority: 4}
	h.Durable, _ = d.boolv("durable")
	if v, ok := d.uint8v("priority"); ok {
		h.Priority = v
	}
	h.TTL, _ = d.uint32v("ttl")
	h.FirstAcquirer, _ = d.boolv("first-acquirer")
	h.DeliveryCount, _ = d.uint32v("delivery-count")
	return h, d.done(saved)
}

func (p *Properties) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if p == nil {
		return append(dst, codeNull), nil
	}
	var l listw
	dst = l.begin(dst, descProperties)
	dst, err := l.optValue(dst, p.MessageID, depth)
	if err != nil {
		return dst, err
	}
	dst = l.optBinary(dst, p.UserID)
	dst = l.optString(dst, p.To)
	dst = l.optString(dst, p.Subject)
	dst = l.optString(dst, p.ReplyTo)
	if dst, err = l.optValue(dst, p.CorrelationID, depth); err != nil {
		return dst, err
	}
	dst = l.optSymbol(dst, p.ContentType)
	dst = l.optSymbol(dst, p.ContentEncoding)
	dst = l.optTime(dst, p.AbsoluteExpiryTime)
	dst = l.optTime(dst, p.CreationTime)
	dst = l.optString(dst, p.GroupID)
	dst = l.optUint(dst, p.GroupSequence, p.GroupSequence != 0)
	dst = l.optString(dst, p.ReplyToGroupID)
	return l.end(dst, false)
}

// optTime writes a timestamp field; the zero time is absent.
func (l *listw) optTime(dst []byte, t time.Time) []byte {
	if t.IsZero() {
		return l.null(dst)
	}
	dst = appendTimestamp(dst, t)
	l.kept(dst)
	return dst
}

func (d *decoder) decodeProperties() (*Properties, error) {
	saved, err := d.composite("properties")
	if err != nil {
		return nil, err
	}
	p := &Properties{}
	p.MessageID, _ = d.anyv("message-id")
	p.UserID, _ = d.binaryv("user-id")
	p.To, _ = d.stringv("to")
	p.Subject, _ = d.stringv("subject")
	p.ReplyTo, _ = d.stringv("reply-to")
	p.CorrelationID, _ = d.anyv("correlation-id")
	p.ContentType, _ = d.symbolv("content-type")
	p.ContentEncoding, _ = d.symbolv("content-encoding")
	p.AbsoluteExpiryTime, _ = d.timestampv("absolute-expiry-time")
	p.CreationTime, _ = d.timestampv("creation-time")
	p.GroupID, _ = d.stringv("group-id")
	p.GroupSequence, _ = d.uint32v("group-sequence")
	p.ReplyToGroupID, _ = d.stringv("reply-to-group-id")
	return p, d.done(saved)
}

// AppendBinary appends the encoding of every present section of m, in the
// specification's order (header, delivery-annotations, message-annotations,
// properties, application-properties, body, footer), and returns the
// extended slice. On error dst is returned cut back to its length on entry,
// with an error wrapping [ErrEncode].
func (m *Message) AppendBinary(dst []byte) ([]byte, error) {
	if m == nil {
		return dst, fmt.Errorf("%w: nil *Message", ErrEncode)
	}
	start := len(dst)
	out, err := m.appendSections(dst)
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}

func (m *Message) appendSections(dst []byte) ([]byte, error) {
	var err error
	if m.Header != nil {
		if dst, err = m.Header.appendAMQP(dst, 1); err != nil {
			return dst, err
		}
	}
	if dst, err = appendMapSection(dst, descDeliveryAnnotations, m.DeliveryAnnotations); err != nil {
		return dst, err
	}
	if dst, err = appendMapSection(dst, descMessageAnnotations, m.MessageAnnotations); err != nil {
		return dst, err
	}
	if m.Properties != nil {
		if dst, err = m.Properties.appendAMQP(dst, 1); err != nil {
			return dst, err
		}
	}
	if dst, err = appendMapSection(dst, descApplicationProperties, m.ApplicationProperties); err != nil {
		return dst, err
	}
	for _, data := range m.Data {
		if uint64(len(data)) > math.MaxUint32 {
			return dst, fmt.Errorf("%w: data section of %d octets", ErrEncode, len(data))
		}
		dst = appendBinary(append(dst, codeDescribed, codeSmallUlong, descData), data)
	}
	for _, seq := range m.Sequence {
		if dst, err = appendList(append(dst, codeDescribed, codeSmallUlong, descAMQPSequence), seq, 2); err != nil {
			return dst, err
		}
	}
	if m.HasValue {
		if dst, err = appendValue(append(dst, codeDescribed, codeSmallUlong, descAMQPValue), m.Value, 1); err != nil {
			return dst, err
		}
	}
	return appendMapSection(dst, descFooter, m.Footer)
}

// appendMapSection writes a map-valued section unless m is nil.
func appendMapSection(dst []byte, desc byte, m Map) ([]byte, error) {
	if m == nil {
		return dst, nil
	}
	return appendMap(append(dst, codeDescribed, codeSmallUlong, desc), m, 1)
}

// UnmarshalBinary decodes the sections in b into m, replacing all of m.
// Sections may come in any order; a section descriptor that is not a
// message section, a section that repeats (other than data and
// amqp-sequence), or a body that mixes data, amqp-sequence and amqp-value
// sections is an error. Decoded []byte values (Data, UserID, binary
// values) alias b: copy what must outlive b. A malformed input returns a
// [*DecodeError] and leaves m holding what was decoded before the error.
func (m *Message) UnmarshalBinary(b []byte) error {
	*m = Message{}
	d := newDecoder(b)
	var seen uint16
	for d.off < d.lim {
		start := d.off
		code, _ := d.constructor("message")
		if code != codeDescribed {
			return d.errAt(start, "message", "expected a section (a described type), found %s (0x%02x)", typeName(code), code)
		}
		desc, err := d.value()
		if err != nil {
			return err
		}
		c, ok := descriptorCode(desc)
		if !ok || c < descHeader || c > descFooter {
			return d.errAt(start, "message", "unknown section descriptor %s", descString(desc))
		}
		bit := uint16(1) << (c - descHeader)
		if seen&bit != 0 && c != descData && c != descAMQPSequence {
			return d.errAt(start, sectionName(c), "section repeated")
		}
		seen |= bit
		const bodies = 1<<(descData-descHeader) | 1<<(descAMQPSequence-descHeader) | 1<<(descAMQPValue-descHeader)
		if body := seen & bodies; body&(body-1) != 0 {
			return d.errAt(start, sectionName(c), "a body mixes data, amqp-sequence and amqp-value sections")
		}
		if err := m.section(&d, c); err != nil {
			return err
		}
	}
	return nil
}

// section decodes the value of the section with descriptor code c.
func (m *Message) section(d *decoder, c uint64) error {
	var err error
	switch c {
	case descHeader:
		m.Header, err = d.decodeHeader()
	case descProperties:
		m.Properties, err = d.decodeProperties()
	case descDeliveryAnnotations:
		m.DeliveryAnnotations, err = d.sectionMap(c)
	case descMessageAnnotations:
		m.MessageAnnotations, err = d.sectionMap(c)
	case descApplicationProperties:
		m.ApplicationProperties, err = d.sectionMap(c)
	case descFooter:
		m.Footer, err = d.sectionMap(c)
	case descData:
		start := d.off
		code, cerr := d.constructor("data")
		if cerr != nil {
			return cerr
		}
		if code != codeVbin8 && code != codeVbin32 {
			return d.errAt(start, "data", "expected a binary, found %s (0x%02x)", typeName(code), code)
		}
		data, err := d.varPayload(code)
		if err != nil {
			return err
		}
		m.Data = append(m.Data, data)
	case descAMQPSequence:
		start := d.off
		v, err := d.value()
		if err != nil {
			return err
		}
		l, ok := v.([]any)
		if !ok {
			return d.errAt(start, "amqp-sequence", "expected a list, found Go %T", v)
		}
		m.Sequence = append(m.Sequence, l)
	case descAMQPValue:
		m.Value, err = d.value()
		m.HasValue = err == nil
	}
	return err
}

// sectionMap decodes the map of an annotations, application-properties or
// footer section; null is accepted as an absent section.
func (d *decoder) sectionMap(c uint64) (Map, error) {
	start := d.off
	code, err := d.constructor(sectionName(c))
	if err != nil {
		return nil, err
	}
	switch code {
	case codeNull:
		return nil, nil
	case codeMap8, codeMap32:
		return d.mapPayload(code)
	}
	return nil, d.errAt(start, sectionName(c), "expected a map, found %s (0x%02x)", typeName(code), code)
}

// sectionName names a message section for errors.
func sectionName(c uint64) string {
	switch c {
	case descHeader:
		return "header"
	case descDeliveryAnnotations:
		return "delivery-annotations"
	case descMessageAnnotations:
		return "message-annotations"
	case descProperties:
		return "properties"
	case descApplicationProperties:
		return "application-properties"
	case descData:
		return "data"
	case descAMQPSequence:
		return "amqp-sequence"
	case descAMQPValue:
		return "amqp-value"
	case descFooter:
		return "footer"
	}
	return fmt.Sprintf("section 0x%x", c)
}
