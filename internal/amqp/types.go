package amqp

import (
	"bytes"
	"encoding/hex"
	"reflect"
)

// Symbol is the AMQP symbol type: a name from a constrained domain, by
// convention ASCII. It is kept apart from string because the two encode
// differently and peers tell them apart.
type Symbol string

// Char is the AMQP char type: one Unicode code point, encoded as UTF-32.
type Char rune

// UUID is the AMQP uuid type: 16 octets in the RFC 4122 order they have on
// the wire (the .NET GUID layout is a client's concern, not the codec's).
type UUID [16]byte

// String formats u as the canonical 8-4-4-4-12 lower-case hex form.
func (u UUID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// Decimal32 is an IEEE 754-2008 decimal32 in its wire octets (big-endian,
// BID or DPD as the peer chose); the codec carries it without interpreting it.
type Decimal32 [4]byte

// Decimal64 is an IEEE 754-2008 decimal64 in its wire octets.
type Decimal64 [8]byte

// Decimal128 is an IEEE 754-2008 decimal128 in its wire octets.
type Decimal128 [16]byte

// KV is one entry of a [Map].
type KV struct {
	Key   any
	Value any
}

// Map is the AMQP map type, kept in wire order so that encoding is
// deterministic and a decoded map re-encodes byte for byte. Keys are any
// AMQP values; a Map with two equal keys is encoded as given (the
// specification forbids it; the codec does not police it). The nil Map
// encodes as null where a field allows it, else as an empty map.
type Map []KV

// Get returns the value of the first entry whose key equals key: the same
// Go type and value, []byte keys compared by content. It reports whether
// such an entry exists.
func (m Map) Get(key any) (any, bool) {
	for _, kv := range m {
		if keyEqual(kv.Key, key) {
			return kv.Value, true
		}
	}
	return nil, false
}

// GetSymbol returns the value of the first entry whose key is a [Symbol]
// or a string equal to name: clients are loose about which of the two
// they send where the specification asks for symbols.
func (m Map) GetSymbol(name string) (any, bool) {
	for _, kv := range m {
		switch k := kv.Key.(type) {
		case Symbol:
			if string(k) == name {
				return kv.Value, true
			}
		case string:
			if k == name {
				return kv.Value, true
			}
		}
	}
	return nil, false
}

// GetString is [Map.GetSymbol] under the name that reads better for maps
// whose keys the specification types as strings (application-properties):
// it matches a string or a Symbol key equal to name.
func (m Map) GetString(name string) (any, bool) { return m.GetSymbol(name) }

// keyEqual compares two map keys without panicking on uncomparable types.
func keyEqual(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case Symbol:
		y, ok := b.(Symbol)
		return ok && x == y
	case uint64:
		y, ok := b.(uint64)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	}
	return reflect.DeepEqual(a, b)
}

// Described is an AMQP described value whose descriptor the codec does not
// decode to a type of its own (performatives, delivery states, error,
// source, target, header and properties are decoded to theirs). Descriptor
// is normally a uint64 code or a [Symbol]; Value is any AMQP value.
type Described struct {
	Descriptor any
	Value      any
}

// Array is an AMQP array whose element type has no typed Go slice in the
// mapping (see the package documentation), or whose elements are described
// values: then Descriptor is the shared descriptor and Elems hold the
// undescribed values.
//
// Code is the element constructor. For the variable-width types (binary,
// string, symbol, list, map, array) the decoder always reports the one-octet
// form (0xa0, 0xa1, 0xa3, 0xc0, 0xc1, 0xe0) and the encoder picks the width
// the elements need; for every other code the elements must be the Go type
// the code decodes to and, for the compact codes (0x52, 0x53, 0x54, 0x55),
// fit in it. An Array with Code 0x40, 0x41, 0x42, 0x43, 0x44 or 0x45 has
// elements of zero width.
type Array struct {
	Descriptor any
	Code       byte
	Elems      []any
}

// Role is a link endpoint's role: [RoleSender] (false) or [RoleReceiver]
// (true), as the attach and disposition performatives encode it.
type Role bool

// The two roles.
const (
	RoleSender   Role = false
	RoleReceiver Role = true
)

// String names the role.
func (r Role) String() string {
	if r {
		return "receiver"
	}
	return "sender"
}

// SndSettleMode is the sender settlement mode of a link.
type SndSettleMode uint8

// The sender settlement modes; [SndMixed] is the specification's default.
const (
	SndUnsettled SndSettleMode = 0
	SndSettled   SndSettleMode = 1
	SndMixed     SndSettleMode = 2
)

// RcvSettleMode is the receiver settlement mode of a link.
type RcvSettleMode uint8

// The receiver settlement modes; [RcvFirst] is the specification's default.
const (
	RcvFirst  RcvSettleMode = 0
	RcvSecond RcvSettleMode = 1
)

// SASLCode is the outcome code of a SASL exchange.
type SASLCode uint8

// The SASL outcome codes.
const (
	SASLOK      SASLCode = 0 // authentication succeeded
	SASLAuth    SASLCode = 1 // bad credentials
	SASLSys     SASLCode = 2 // system error
	SASLSysPerm SASLCode = 3 // unrecoverable system error
	SASLSysTemp SASLCode = 4 // transient system error
)
