package amqp

// Format codes (part 1, section 1.6).
const (
	codeDescribed  = 0x00
	codeNull       = 0x40
	codeTrue       = 0x41
	codeFalse      = 0x42
	codeUint0      = 0x43
	codeUlong0     = 0x44
	codeList0      = 0x45
	codeUbyte      = 0x50
	codeByte       = 0x51
	codeSmallUint  = 0x52
	codeSmallUlong = 0x53
	codeSmallInt   = 0x54
	codeSmallLong  = 0x55
	codeBool       = 0x56
	codeUshort     = 0x60
	codeShort      = 0x61
	codeUint       = 0x70
	codeInt        = 0x71
	codeFloat      = 0x72
	codeChar       = 0x73
	codeDecimal32  = 0x74
	codeUlong      = 0x80
	codeLong       = 0x81
	codeDouble     = 0x82
	codeTimestamp  = 0x83
	codeDecimal64  = 0x84
	codeDecimal128 = 0x94
	codeUUID       = 0x98
	codeVbin8      = 0xa0
	codeStr8       = 0xa1
	codeSym8       = 0xa3
	codeVbin32     = 0xb0
	codeStr32      = 0xb1
	codeSym32      = 0xb3
	codeList8      = 0xc0
	codeMap8       = 0xc1
	codeList32     = 0xd0
	codeMap32      = 0xd1
	codeArray8     = 0xe0
	codeArray32    = 0xf0
)

// Descriptor codes of the composite types the codec knows (the domain-id
// half is 0x00000000 for all of them).
const (
	descOpen        = 0x10
	descBegin       = 0x11
	descAttach      = 0x12
	descFlow        = 0x13
	descTransfer    = 0x14
	descDisposition = 0x15
	descDetach      = 0x16
	descEnd         = 0x17
	descClose       = 0x18
	descError       = 0x1d
	descReceived    = 0x23
	descAccepted    = 0x24
	descRejected    = 0x25
	descReleased    = 0x26
	descModified    = 0x27
	descSource      = 0x28
	descTarget      = 0x29
	descCoordinator = 0x30

	descSASLMechanisms = 0x40
	descSASLInit       = 0x41
	descSASLChallenge  = 0x42
	descSASLResponse   = 0x43
	descSASLOutcome    = 0x44

	descHeader                = 0x70
	descDeliveryAnnotations   = 0x71
	descMessageAnnotations    = 0x72
	descProperties            = 0x73
	descApplicationProperties = 0x74
	descData                  = 0x75
	descAMQPSequence          = 0x76
	descAMQPValue             = 0x77
	descFooter                = 0x78
)

// symbolicDescriptors maps the symbolic descriptor of every type the codec
// knows to its numeric code, so that decoding accepts either form.
var symbolicDescriptors = map[Symbol]uint64{
	"amqp:open:list":        descOpen,
	"amqp:begin:list":       descBegin,
	"amqp:attach:list":      descAttach,
	"amqp:flow:list":        descFlow,
	"amqp:transfer:list":    descTransfer,
	"amqp:disposition:list": descDisposition,
	"amqp:detach:list":      descDetach,
	"amqp:end:list":         descEnd,
	"amqp:close:list":       descClose,
	"amqp:error:list":       descError,
	"amqp:received:list":    descReceived,
	"amqp:accepted:list":    descAccepted,
	"amqp:rejected:list":    descRejected,
	"amqp:released:list":    descReleased,
	"amqp:modified:list":    descModified,
	"amqp:source:list":      descSource,
	"amqp:target:list":      descTarget,
	"amqp:coordinator:list": descCoordinator,

	"amqp:sasl-mechanisms:list": descSASLMechanisms,
	"amqp:sasl-init:list":       descSASLInit,
	"amqp:sasl-challenge:list":  descSASLChallenge,
	"amqp:sasl-response:list":   descSASLResponse,
	"amqp:sasl-outcome:list":    descSASLOutcome,

	"amqp:header:list":                descHeader,
	"amqp:delivery-annotations:map":   descDeliveryAnnotations,
	"amqp:message-annotations:map":    descMessageAnnotations,
	"amqp:properties:list":            descProperties,
	"amqp:application-properties:map": descApplicationProperties,
	"amqp:data:binary":                descData,
	"amqp:amqp-sequence:list":         descAMQPSequence,
	"amqp:amqp-value:*":               descAMQPValue,
	"amqp:footer:map":                 descFooter,
}

// maxDepth bounds the nesting of compound and described values, both ways:
// deeper input is an error, never unbounded recursion.
const maxDepth = 64
