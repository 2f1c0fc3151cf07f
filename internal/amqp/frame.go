package amqp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// The protocol headers (part 2 section 2.2, part 5 sections 5.2 and 5.3):
// "AMQP", a protocol id (0 AMQP, 2 TLS, 3 SASL) and version 1.0.0.
var (
	ProtoAMQP = [8]byte{'A', 'M', 'Q', 'P', 0, 1, 0, 0}
	ProtoTLS  = [8]byte{'A', 'M', 'Q', 'P', 2, 1, 0, 0}
	ProtoSASL = [8]byte{'A', 'M', 'Q', 'P', 3, 1, 0, 0}
)

// Frame types (part 2 section 2.3.1, part 5 section 5.3.1).
const (
	FrameAMQP uint8 = 0
	FrameSASL uint8 = 1
)

// MinMaxFrameSize is the smallest max-frame-size a peer may set, and the
// largest frame either side may send before the open frames are exchanged.
const MinMaxFrameSize = 512

// frameHeaderSize is the size of the fixed frame header: size (4), doff
// (1), type (1), channel (2).
const frameHeaderSize = 8

// ErrFraming is wrapped by the errors of a frame header that cannot be
// valid (a size below 8, a data offset below 2 or past the frame's end,
// an unknown frame type) and of a frame larger than allowed (which also
// wraps [ErrFrameTooLarge]). The specification's answer to either is to
// close the connection with amqp:connection:framing-error.
var ErrFraming = errors.New("amqp: framing error")

// ErrFrameTooLarge is wrapped (with [ErrFraming]) by the error of a frame
// whose size exceeds the max-frame-size passed to ReadFrame or ParseFrame.
var ErrFrameTooLarge = errors.New("amqp: frame too large")

// Frame is one frame: its type ([FrameAMQP] or [FrameSASL]), its channel
// (ignored for SASL frames) and its body, nil for an empty frame (an AMQP
// keep-alive).
type Frame struct {
	Type    uint8
	Channel uint16
	Body    Performative
}

// frameHeader checks the 8-octet header h against maxSize and returns the
// frame size and the offset of its body.
func frameHeader(h []byte, maxSize uint32) (size, bodyOff int, err error) {
	if maxSize < MinMaxFrameSize {
		maxSize = MinMaxFrameSize
	}
	sz := binary.BigEndian.Uint32(h)
	doff := int(h[4])
	switch {
	case sz < frameHeaderSize:
		return 0, 0, fmt.Errorf("%w: frame size %d is smaller than its header", ErrFraming, sz)
	case sz > maxSize:
		return 0, 0, fmt.Errorf("%w: frame of %d octets exceeds the max-frame-size %d (%w)", ErrFraming, sz, maxSize, ErrFrameTooLarge)
	case doff < 2:
		return 0, 0, fmt.Errorf("%w: data offset %d is below 2", ErrFraming, doff)
	case uint32(doff)*4 > sz:
		return 0, 0, fmt.Errorf("%w: data offset %d points past the frame's %d octets", ErrFraming, doff, sz)
	case h[5] != FrameAMQP && h[5] != FrameSASL:
		return 0, 0, fmt.Errorf("%w: unknown frame type 0x%02x", ErrFraming, h[5])
	}
	return int(sz), doff * 4, nil
}

// ReadFrame reads one frame from r. maxSize is the largest frame this side
// accepts (the max-frame-size it announced; before the open exchange,
// MinMaxFrameSize; anything lower is raised to MinMaxFrameSize): a larger
// frame is an error wrapping [ErrFrameTooLarge] that names its size, read no
// further. A malformed header wraps [ErrFraming]; a body that does not
// decode is a [*DecodeError] (the frame was read in full, so the stream is
// still in step). An end of stream between frames is io.EOF, within one
// io.ErrUnexpectedEOF.
//
// buf is a buffer ReadFrame may grow and reuses across calls; it grows as
// the frame's octets arrive, never ahead of them by more than it already
// holds (a peer announcing a large frame and sending little costs little).
// Returned []byte fields (a Transfer's Payload, delivery tags, binary
// values) alias *buf: the caller must be done with a frame, or copy from
// it, before the next call.
func ReadFrame(r io.Reader, buf *[]byte, maxSize uint32) (Frame, error) {
	b := *buf
	if cap(b) < MinMaxFrameSize {
		b = make([]byte, 0, MinMaxFrameSize)
	}
	b = b[:frameHeaderSize]
	if _, err := io.ReadFull(r, b); err != nil {
		*buf = b[:0]
		return Frame{}, err
	}
	size, bodyOff, err := frameHeader(b, maxSize)
	if err != nil {
		*buf = b[:0]
		return Frame{}, err
	}
	for have := frameHeaderSize; have < size; {
		limit := size
		if limit > cap(b) {
			grown := max(2*cap(b), 64<<10)
			if grown < size {
				limit = grown
			}
			nb := make([]byte, have, limit)
			copy(nb, b[:have])
			b = nb
		}
		b = b[:limit]
		n, err := io.ReadFull(r, b[have:limit])
		have += n
		if err != nil {
			*buf = b[:0]
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return Frame{}, err
		}
	}
	*buf = b[:0]
	return decodeFrameBody(b[5], binary.BigEndian.Uint16(b[6:]), b[bodyOff:size:size])
}

// ParseFrame decodes one frame from the start of b and returns it with the
// number of octets it took. If b holds less than the whole frame it returns
// io.ErrUnexpectedEOF (and n 0); other errors are as ReadFrame's. Returned
// []byte fields alias b.
func ParseFrame(b []byte, maxSize uint32) (f Frame, n int, err error) {
	if len(b) < frameHeaderSize {
		return Frame{}, 0, io.ErrUnexpectedEOF
	}
	size, bodyOff, err := frameHeader(b, maxSize)
	if err != nil {
		return Frame{}, 0, err
	}
	if len(b) < size {
		return Frame{}, 0, io.ErrUnexpectedEOF
	}
	f, err = decodeFrameBody(b[5], binary.BigEndian.Uint16(b[6:]), b[bodyOff:size:size])
	if err != nil {
		return Frame{}, 0, err
	}
	return f, size, nil
}

// decodeFrameBody decodes the performative of a frame of type typ.
func decodeFrameBody(typ uint8, channel uint16, body []byte) (Frame, error) {
	f := Frame{Type: typ, Channel: channel}
	if len(body) == 0 {
		return f, nil
	}
	what := "frame body"
	if typ == FrameSASL {
		what = "SASL frame body"
	}
	d := newDecoder(body)
	if code, _ := d.constructor(what); code != codeDescribed {
		return f, d.errAt(0, what, "expected a performative (a described type), found %s (0x%02x)", typeName(code), code)
	}
	desc, err := d.value()
	if err != nil {
		return f, err
	}
	c, ok := descriptorCode(desc)
	if typ == FrameAMQP {
		ok = ok && c >= descOpen && c <= descClose
	} else {
		ok = ok && c >= descSASLMechanisms && c <= descSASLOutcome
	}
	if !ok {
		return f, d.errAt(0, what, "unknown performative descriptor %s", descString(desc))
	}
	v, _, err := d.known(c)
	if err != nil {
		return f, err
	}
	f.Body = v.(Performative)
	if t, ok := f.Body.(*Transfer); ok {
		if d.off < len(body) {
			t.Payload = body[d.off:len(body):len(body)]
		}
	} else if d.off != len(body) {
		return Frame{Type: typ, Channel: channel}, d.errAt(d.off, what, "%d octets follow the performative", len(body)-d.off)
	}
	return f, nil
}

// isSASL reports whether p is a SASL frame body.
func isSASL(p Performative) bool {
	switch p.(type) {
	case *SASLMechanisms, *SASLInit, *SASLChallenge, *SASLResponse, *SASLOutcome:
		return true
	}
	return false
}

// AppendFrame appends one whole frame to dst: the header, body's encoding
// and, for a *Transfer, its Payload. A nil body makes an empty frame of
// that type and channel. typ must be [FrameAMQP] for a transport
// performative and [FrameSASL] for a SASL one. The frame is not checked
// against a max-frame-size: split large transfers with
// [AppendTransferFrames]. On error dst is returned cut back to its length on
// entry, with an error wrapping [ErrEncode].
func AppendFrame(dst []byte, typ uint8, channel uint16, body Performative) ([]byte, error) {
	start := len(dst)
	if typ != FrameAMQP && typ != FrameSASL {
		return dst, fmt.Errorf("%w: frame type %d", ErrEncode, typ)
	}
	dst = append(dst, 0, 0, 0, 0, 2, typ, byte(channel>>8), byte(channel))
	if body != nil {
		if isSASL(body) != (typ == FrameSASL) {
			return dst[:start], fmt.Errorf("%w: %T in a frame of type %d", ErrEncode, body, typ)
		}
		var err error
		if dst, err = body.appendAMQP(dst, 0); err != nil {
			return dst[:start], err
		}
		if t, ok := body.(*Transfer); ok {
			dst = append(dst, t.Payload...)
		}
	}
	size := len(dst) - start
	if uint64(size) > math.MaxUint32 {
		return dst[:start], fmt.Errorf("%w: frame of %d octets", ErrEncode, size)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(size))
	return dst, nil
}

// AppendEmptyFrame appends an empty AMQP frame on channel 0: the keep-alive
// a peer sends to keep an idle connection open.
func AppendEmptyFrame(dst []byte) []byte {
	return append(dst, 0, 0, 0, frameHeaderSize, 2, FrameAMQP, 0, 0)
}

// TransferOverhead returns the size of the frame that carries t with an
// empty payload: a frame of max-frame-size m has room for m minus that of
// t's payload.
func TransferOverhead(t *Transfer) (int, error) {
	var scratch [128]byte
	b, err := t.appendAMQP(scratch[:0], 0)
	return frameHeaderSize + len(b), err
}

// AppendTransferFrames appends t as one or more transfer frames on channel,
// none larger than maxFrameSize (raised to MinMaxFrameSize if below): t's
// Payload is split across them. The first frame carries all of t's fields;
// the continuation frames carry the handle, more, settled, rcv-settle-mode
// and batchable; aborted goes on the last frame only. Every frame but the
// last has more set; the last has t.More.
func AppendTransferFrames(dst []byte, channel uint16, t *Transfer, maxFrameSize uint32) ([]byte, error) {
	if maxFrameSize < MinMaxFrameSize {
		maxFrameSize = MinMaxFrameSize
	}
	if t == nil {
		return dst, fmt.Errorf("%w: nil *Transfer", ErrEncode)
	}
	entry := len(dst)
	payload := t.Payload
	cur := *t
	for {
		// Try the rest as the last frame.
		start := len(dst)
		cur.More, cur.Aborted, cur.Payload = t.More, t.Aborted, nil
		var err error
		if dst, err = AppendFrame(dst, FrameAMQP, channel, &cur); err != nil {
			return dst[:entry], err
		}
		if len(dst)-start+len(payload) <= int(maxFrameSize) {
			dst = append(dst, payload...)
			binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start))
			return dst, nil
		}
		// It does not fit: a frame with more set, as full as it can be.
		cur.More, cur.Aborted = true, false
		if dst, err = AppendFrame(dst[:start], FrameAMQP, channel, &cur); err != nil {
			return dst[:entry], err
		}
		room := int(maxFrameSize) - (len(dst) - start)
		if room <= 0 {
			return dst[:entry], fmt.Errorf("%w: max-frame-size %d leaves no room for a transfer's payload", ErrEncode, maxFrameSize)
		}
		n := min(room, len(payload))
		dst = append(dst, payload[:n]...)
		binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start))
		payload = payload[n:]
		cur.DeliveryID, cur.DeliveryTag, cur.MessageFormat = nil, nil, nil
		cur.State, cur.Resume = nil, false
	}
}
