// Package amqp is minibus's AMQP 1.0 codec: the type system (part 1 of the
// OASIS specification), the transport performatives and frames (part 2),
// the message format, delivery states and termini (part 3) and the SASL
// frames (part 5). It is written from the specification, uses only the
// standard library, and knows nothing of connections, sessions or links:
// package server builds those on it.
//
// # Encoding and decoding
//
// Encoding appends to a []byte ([AppendValue], [AppendFrame],
// [AppendTransferFrames], [Message.AppendBinary]); decoding reads from a
// []byte ([DecodeValue], [ParseFrame], [Message.UnmarshalBinary]) or an
// io.Reader ([ReadFrame]), without reflection. Performatives, delivery
// states and message sections are structs with typed fields, so the hot
// paths (transfer, flow, disposition) box nothing: a decoded Transfer,
// Flow or Disposition is one allocation, its optional numeric fields
// included, and encoding into a reused buffer allocates nothing.
//
// # Type mapping
//
// Decoding produces exactly these Go types; encoding accepts them.
//
//	AMQP                        Go
//	null                        nil
//	boolean                     bool
//	ubyte ushort uint ulong     uint8 uint16 uint32 uint64
//	byte short int long         int8 int16 int32 int64
//	float double                float32 float64
//	decimal32/64/128            Decimal32 Decimal64 Decimal128 (wire octets)
//	char                        Char
//	timestamp                   time.Time (UTC, millisecond precision)
//	uuid                        UUID (wire octet order)
//	binary                      []byte
//	string                      string
//	symbol                      Symbol
//	list                        []any
//	map                         Map (ordered key-value pairs)
//	array                       []Symbol []string []int32 []int64 []uint32
//	                            []uint64 []UUID []time.Time []bool
//	                            []float64 []Map by element type, else Array
//	described                   the codec's type for a descriptor it knows
//	                            (*Open ... *Close, *SASLInit ..., *Error,
//	                            *Source, *Target, *Received, *Accepted,
//	                            *Rejected, *Released, *Modified, *Header,
//	                            *Properties), else Described
//
// When encoding, Go int is a long and uint a ulong; map[string]any and any
// other type outside the table is an error naming the Go type (maps must be
// Map: their order is part of the encoding). Every value takes its smallest
// encoding: uint0 and smalluint, ulong0 and smallulong, smallint,
// smalllong, list0, and the one-octet widths (str8, sym8, vbin8, list8,
// map8, array8) whenever the contents fit. A Map keeps its order and its
// keys as given, duplicates included.
//
// # Composite types
//
// Open, Begin and Attach, and the Source and Target inside an attach,
// always encode their full field lists, null where a field is absent:
// some clients (Python's pyamqp) index the list without checking its
// length. The other composites drop trailing absent fields, as the
// specification allows. Descriptors are encoded as their smallulong codes
// (0x00 0x53 0x10 for open).
//
// A field whose absence differs from its zero value is a pointer
// (Begin.RemoteChannel, Transfer.DeliveryID ...) or has its default
// applied when absent (Open.MaxFrameSize 4294967295, Open.ChannelMax 65535,
// Begin.HandleMax 4294967295, Attach.SndSettleMode mixed, Header.Priority
// 4). Encoding writes such defaulted numeric fields as given.
//
// # Leniency
//
// Decoding accepts what clients send even where it strays from the letter
// of the specification:
//   - a composite whose list lacks trailing fields (they take their
//     defaults) or has more fields than the codec knows (they are skipped);
//   - a numeric field in any integer encoding whose value fits (a uint
//     field sent as a ulong, a ubyte, or a non-negative int);
//   - a string field sent as a symbol and a symbol field sent as a string;
//   - a multiple-symbol field sent as one symbol, an array, or a list;
//   - a descriptor given as its symbol ("amqp:open:list") instead of its
//     code;
//   - a filter value in a source's filter-set, described or plain (clients
//     differ on the session filter): it is kept exactly as decoded and
//     re-encoded the same way;
//   - message sections in any order; an annotations or properties section
//     whose value is null;
//   - a delivery state or outcome with a descriptor the codec does not know
//     (a transactional state), decoded to an *UnknownState.
//
// A mandatory field absent or null, a value of the wrong type, and a
// truncated or inconsistent encoding are a [*DecodeError] naming what was
// being decoded (for example "attach.handle") and the offset. Decoding
// never panics, bounds every allocation by the size of its input (a list
// claiming 2^31 elements in ten octets is an error), and refuses nesting
// deeper than 64 levels.
//
// # Aliasing
//
// Decoded []byte values (binary values, Data sections, delivery tags, a
// Transfer's Payload) alias the input: a frame read by [ReadFrame] aliases
// the buffer it is given, which the next call reuses. Copy what must
// outlive the input. Strings and symbols are copies.
//
// # Concurrency
//
// The package holds no state: every function may be called from any
// goroutine. A value being encoded must not be modified concurrently.
package amqp
