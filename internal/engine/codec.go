package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/minibus-go/minibus/internal/sqlfilter"
	"github.com/minibus-go/minibus/internal/store"
)

// The binary encoding of log records and snapshots: varints, strings with
// their length, and a tag before every property value. A decoder stops at
// the first error and reports it once.

type encoder struct{ b []byte }

func (e *encoder) u8(v uint8)      { e.b = append(e.b, v) }
func (e *encoder) uvar(v uint64)   { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) svar(v int64)    { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) str(s string)    { e.uvar(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) f64(v float64)   { e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v)) }
func (e *encoder) key(k store.Key) { e.svar(k.Seq); e.uvar(uint64(k.Copy)) }

func (e *encoder) boolean(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

// bytes keeps nil apart from empty (SEMANTICS V4).
func (e *encoder) bytes(b []byte) {
	if b == nil {
		e.u8(0)
		return
	}
	e.u8(1)
	e.uvar(uint64(len(b)))
	e.b = append(e.b, b...)
}

// Property value tags.
const (
	tagNil uint8 = iota
	tagString
	tagBool
	tagBytes
	tagTime
	tagDuration
	tagInt
	tagInt8
	tagInt16
	tagInt32
	tagInt64
	tagUint
	tagUint8
	tagUint16
	tagUint32
	tagUint64
	tagFloat32
	tagFloat64
)

// props encodes a property map in key order, so that equal maps encode
// alike.
func (e *encoder) props(p map[string]any) {
	if p == nil {
		e.uvar(0)
		return
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	e.uvar(uint64(len(keys)) + 1)
	for _, k := range keys {
		e.str(k)
		e.value(p[k])
	}
}

func (e *encoder) value(v any) {
	switch v := v.(type) {
	case nil:
		e.u8(tagNil)
	case string:
		e.u8(tagString)
		e.str(v)
	case bool:
		e.u8(tagBool)
		e.boolean(v)
	case []byte:
		e.u8(tagBytes)
		e.bytes(v)
	case time.Time:
		e.u8(tagTime)
		b, _ := v.MarshalBinary() // fails only for offsets that are not whole minutes
		e.bytes(b)
	case time.Duration:
		e.u8(tagDuration)
		e.svar(int64(v))
	default:
		e.number(v)
	}
}

func (e *encoder) number(v any) {
	switch v := v.(type) {
	case int:
		e.u8(tagInt)
		e.svar(int64(v))
	case int8:
		e.u8(tagInt8)
		e.svar(int64(v))
	case int16:
		e.u8(tagInt16)
		e.svar(int64(v))
	case int32:
		e.u8(tagInt32)
		e.svar(int64(v))
	case int64:
		e.u8(tagInt64)
		e.svar(v)
	case uint:
		e.u8(tagUint)
		e.uvar(uint64(v))
	case uint8:
		e.u8(tagUint8)
		e.uvar(uint64(v))
	case uint16:
		e.u8(tagUint16)
		e.uvar(uint64(v))
	case uint32:
		e.u8(tagUint32)
		e.uvar(uint64(v))
	case uint64:
		e.u8(tagUint64)
		e.uvar(v)
	case float32:
		e.u8(tagFloat32)
		e.f64(float64(v))
	case float64:
		e.u8(tagFloat64)
		e.f64(v)
	default: // the root refuses other types
		e.u8(tagNil)
	}
}

func (e *encoder) config(c Config) {
	e.svar(int64(c.LockDuration))
	e.svar(int64(c.MaxDeliveryCount))
	e.svar(int64(c.TTL))
	e.boolean(c.DeadLetterOnExpiry)
	e.boolean(c.DeadLetterOnFilterError)
	e.svar(int64(c.AutoDeleteOnIdle))
	e.boolean(c.RequiresSession)
	e.boolean(c.RequiresDuplicateDetection)
	e.svar(int64(c.DuplicateWindow))
	e.str(c.ForwardTo)
	e.str(c.ForwardDeadLetteredTo)
	e.svar(int64(c.MaxSizeMB))
	e.svar(c.MaxMessageKB)
	e.svar(int64(c.Status))
}

func (e *encoder) rule(r RuleSpec) {
	e.str(r.Name)
	e.u8(uint8(r.Filter))
	e.str(r.SQL)
	e.props(r.Params)
	c := r.Correlation
	for _, s := range [...]string{c.CorrelationID, c.MessageID, c.To, c.ReplyTo, c.Subject, c.SessionID, c.ReplyToSessionID, c.ContentType} {
		e.str(s)
	}
	e.props(r.CorrelationProps)
	e.boolean(r.HasAction)
	e.str(r.ActionSQL)
	e.props(r.ActionParams)
}

// message encodes m as sent and its life in the broker.
func (e *encoder) message(m *store.Message) {
	e.str(m.MessageID)
	e.uvar(m.IDSeed)
	e.str(m.SessionID)
	if h := m.Headers; h != nil {
		e.u8(1)
		for _, s := range [...]string{h.ContentType, h.CorrelationID, h.Subject, h.To, h.ReplyTo, h.ReplyToSessionID, h.PartitionKey} {
			e.str(s)
		}
	} else {
		e.u8(0)
	}
	e.bytes(m.Body)
	e.props(m.Props)
	e.svar(m.Scheduled)
	e.svar(m.TTL)
	e.svar(m.Enqueued)
	e.svar(m.Expires)
	e.uvar(uint64(m.Deliveries))
	e.svar(m.EnqueuedSeq)
	e.u8(m.Hops)
	if dl := m.DL; dl != nil {
		e.u8(1)
		e.str(dl.Reason)
		e.str(dl.Description)
		e.str(dl.Source)
	} else {
		e.u8(0)
	}
	e.boolean(m.FromDeferral)
}

// errShort is a record or snapshot that ends before its fields do.
var errShort = errors.New("truncated")

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *decoder) u8() uint8 {
	if len(d.b) < 1 {
		d.fail(errShort)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvar() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) svar() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) take(n uint64) []byte {
	if uint64(len(d.b)) < n {
		d.fail(errShort)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string   { return string(d.take(d.uvar())) }
func (d *decoder) boolean() bool { return d.u8() != 0 }
func (d *decoder) key() store.Key {
	return store.Key{Seq: d.svar(), Copy: uint32(d.uvar())}
}

func (d *decoder) f64() float64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

// bytes returns a copy: the caller keeps it past the record's buffer.
func (d *decoder) bytes() []byte {
	if d.u8() == 0 {
		return nil
	}
	return append([]byte{}, d.take(d.uvar())...)
}

func (d *decoder) props() map[string]any {
	n := d.uvar()
	if n == 0 || d.err != nil {
		return nil
	}
	if n-1 > uint64(len(d.b)) {
		d.fail(errShort)
		return nil
	}
	p := make(map[string]any, n-1)
	for range n - 1 {
		k := d.str()
		p[k] = d.value()
	}
	return p
}

func (d *decoder) value() any {
	switch tag := d.u8(); tag {
	case tagNil:
		return nil
	case tagString:
		return d.str()
	case tagBool:
		return d.boolean()
	case tagBytes:
		return d.bytes()
	case tagTime:
		var t time.Time
		if err := t.UnmarshalBinary(d.bytes()); err != nil {
			d.fail(err)
		}
		return t
	case tagDuration:
		return time.Duration(d.svar())
	default:
		return d.number(tag)
	}
}

func (d *decoder) number(tag uint8) any {
	switch tag {
	case tagInt:
		return int(d.svar())
	case tagInt8:
		return int8(d.svar())
	case tagInt16:
		return int16(d.svar())
	case tagInt32:
		return int32(d.svar())
	case tagInt64:
		return d.svar()
	case tagUint:
		return uint(d.uvar())
	case tagUint8:
		return uint8(d.uvar())
	case tagUint16:
		return uint16(d.uvar())
	case tagUint32:
		return uint32(d.uvar())
	case tagUint64:
		return d.uvar()
	case tagFloat32:
		return float32(d.f64())
	case tagFloat64:
		return d.f64()
	}
	d.fail(fmt.Errorf("unknown value tag %d", tag))
	return nil
}

func (d *decoder) config() Config {
	return Config{
		LockDuration:               time.Duration(d.svar()),
		MaxDeliveryCount:           int32(d.svar()),
		TTL:                        time.Duration(d.svar()),
		DeadLetterOnExpiry:         d.boolean(),
		DeadLetterOnFilterError:    d.boolean(),
		AutoDeleteOnIdle:           time.Duration(d.svar()),
		RequiresSession:            d.boolean(),
		RequiresDuplicateDetection: d.boolean(),
		DuplicateWindow:            time.Duration(d.svar()),
		ForwardTo:                  d.str(),
		ForwardDeadLetteredTo:      d.str(),
		MaxSizeMB:                  int32(d.svar()),
		MaxMessageKB:               d.svar(),
		Status:                     Status(d.svar()),
	}
}

func (d *decoder) rule() RuleSpec {
	r := RuleSpec{Name: d.str(), Filter: FilterKind(d.u8()), SQL: d.str(), Params: d.props()}
	r.Correlation = sqlfilter.CorrelationFields{
		CorrelationID: d.str(), MessageID: d.str(), To: d.str(), ReplyTo: d.str(),
		Subject: d.str(), SessionID: d.str(), ReplyToSessionID: d.str(), ContentType: d.str(),
	}
	r.CorrelationProps = d.props()
	r.HasAction = d.boolean()
	r.ActionSQL = d.str()
	r.ActionParams = d.props()
	return r
}

// message decodes into a recycled Message, in no store.
func (d *decoder) message() *store.Message {
	m := store.NewMessage()
	m.MessageID = d.str()
	m.IDSeed = d.uvar()
	m.SessionID = d.str()
	if d.u8() == 1 {
		m.Headers = &store.Headers{ContentType: d.str(), CorrelationID: d.str(), Subject: d.str(), To: d.str(),
			ReplyTo: d.str(), ReplyToSessionID: d.str(), PartitionKey: d.str()}
	}
	m.Body = d.bytes()
	m.Props = d.props()
	m.Scheduled = d.svar()
	m.TTL = d.svar()
	m.Enqueued = d.svar()
	m.Expires = d.svar()
	m.Deliveries = uint32(d.uvar())
	m.EnqueuedSeq = d.svar()
	m.Hops = d.u8()
	if d.u8() == 1 {
		m.DL = &store.DeadLetter{Reason: d.str(), Description: d.str(), Source: d.str()}
	}
	m.FromDeferral = d.boolean()
	return m
}

// count reads a count of items of at least one byte each.
func (d *decoder) count() int {
	n := d.uvar()
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return 0
	}
	return int(n)
}
