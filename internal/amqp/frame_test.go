package amqp_test

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus/internal/amqp"
)

// TestProtocolHeaders are the octets of part 2 section 2.2 and part 5.
func TestProtocolHeaders(t *testing.T) {
	require.Equal(t, []byte("AMQP\x00\x01\x00\x00"), amqp.ProtoAMQP[:])
	require.Equal(t, []byte("AMQP\x02\x01\x00\x00"), amqp.ProtoTLS[:])
	require.Equal(t, []byte("AMQP\x03\x01\x00\x00"), amqp.ProtoSASL[:])
}

// TestReadFrameStream reads several frames from one stream with one
// reused buffer, then the clean end of the stream.
func TestReadFrameStream(t *testing.T) {
	var stream []byte
	var err error
	frames := []struct {
		typ uint8
		ch  uint16
		p   amqp.Performative
	}{
		{amqp.FrameSASL, 0, &amqp.SASLOutcome{Code: amqp.SASLOK}},
		{amqp.FrameAMQP, 0, &amqp.Open{ContainerID: "c", MaxFrameSize: 1 << 16, ChannelMax: 1}},
		{amqp.FrameAMQP, 0, nil},
		{amqp.FrameAMQP, 1, &amqp.Transfer{Handle: 2, Payload: bytes.Repeat([]byte{5}, 5000)}},
		{amqp.FrameAMQP, 1, &amqp.Flow{IncomingWindow: 1, OutgoingWindow: 2}},
	}
	for _, f := range frames {
		stream, err = amqp.AppendFrame(stream, f.typ, f.ch, f.p)
		require.NoError(t, err)
	}
	r := bytes.NewReader(stream)
	var buf []byte
	for _, want := range frames {
		f, err := amqp.ReadFrame(r, &buf, 1<<16)
		require.NoError(t, err)
		require.Equal(t, amqp.Frame{Type: want.typ, Channel: want.ch, Body: want.p}, f)
	}
	_, err = amqp.ReadFrame(r, &buf, 1<<16)
	require.ErrorIs(t, err, io.EOF)
}

// TestReadFrameTruncated: a stream that ends inside a frame is
// io.ErrUnexpectedEOF, in the header or in the body.
func TestReadFrameTruncated(t *testing.T) {
	whole, err := amqp.AppendFrame(nil, amqp.FrameAMQP, 0, &amqp.Close{})
	require.NoError(t, err)
	for _, n := range []int{1, 7, 8, len(whole) - 1} {
		var buf []byte
		_, err := amqp.ReadFrame(bytes.NewReader(whole[:n]), &buf, 512)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut at %d", n)
		_, _, err = amqp.ParseFrame(whole[:n], 512)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut at %d", n)
	}
}

// TestFrameHeaderErrors: sizes and offsets that cannot be, frame types
// that do not exist, and frames over the limit are framing errors.
func TestFrameHeaderErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		in    []byte
		max   uint32
		large bool
		want  string
	}{
		{"size below header", h("00 00 00 07 02 00 00 00"), 512, false, "smaller than its header"},
		{"doff below 2", h("00 00 00 08 01 00 00 00"), 512, false, "data offset 1"},
		{"doff past the end", h("00 00 00 0c 04 00 00 00 00 00 00 00"), 512, false, "points past"},
		{"unknown type", h("00 00 00 08 02 05 00 00"), 512, false, "unknown frame type 0x05"},
		{"too large", h("00 01 00 01 02 00 00 00"), 65536, true, "65537 octets exceeds the max-frame-size 65536"},
		{"limit below 512 is 512", h("00 00 02 01 02 00 00 00"), 0, true, "513 octets"},
		{"huge", h("ff ff ff ff 02 00 00 00"), math.MaxUint32 - 1, true, "4294967295"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf []byte
			_, err := amqp.ReadFrame(bytes.NewReader(c.in), &buf, c.max)
			require.ErrorIs(t, err, amqp.ErrFraming)
			require.Equal(t, c.large, errors.Is(err, amqp.ErrFrameTooLarge))
			require.ErrorContains(t, err, c.want)
			require.LessOrEqual(t, cap(buf), 512, "nothing allocated for a frame refused")
			_, _, err = amqp.ParseFrame(c.in, c.max)
			require.ErrorIs(t, err, amqp.ErrFraming)
		})
	}
	// A 512-octet frame is always allowed.
	f := frame(0, 0, cat(desc(0x18, h("45")), make([]byte, 0)))
	f = append(f, make([]byte, 512-len(f))...)
	copy(f, be32(512))
	_, _, err := amqp.ParseFrame(f, 0)
	require.ErrorContains(t, err, "follow the performative", "the size is accepted; the padding is not a performative")
}

// TestExtendedHeader: a data offset above 2 skips the extended header.
func TestExtendedHeader(t *testing.T) {
	in := cat(h("00 00 00 10 03 00 00 07  aa bb cc dd"), desc(0x18, h("45")))
	f, n, err := amqp.ParseFrame(in, 512)
	require.NoError(t, err)
	require.Equal(t, 16, n)
	require.Equal(t, amqp.Frame{Type: amqp.FrameAMQP, Channel: 7, Body: &amqp.Close{}}, f)
}

// slowReader returns at most n octets per Read and counts what it gave.
type slowReader struct {
	data []byte
	n    int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n, len(r.data))
	copy(p, r.data[:k])
	r.data = r.data[k:]
	return k, nil
}

// TestReadFrameGrowsWithData: a peer announcing a huge frame and sending
// little makes ReadFrame allocate in proportion to what arrived, not to
// the announced size.
func TestReadFrameGrowsWithData(t *testing.T) {
	in := cat(h("40 00 00 00 02 00 00 00"), make([]byte, 1000))
	var buf []byte
	_, err := amqp.ReadFrame(&slowReader{data: in, n: 100}, &buf, math.MaxUint32)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.LessOrEqual(t, cap(buf), 64<<10)

	// A frame larger than the buffer arrives whole across many reads.
	payload := bytes.Repeat([]byte("0123456789"), 30000)
	whole, err := amqp.AppendFrame(nil, amqp.FrameAMQP, 0, &amqp.Transfer{Handle: 1, Payload: payload})
	require.NoError(t, err)
	f, err := amqp.ReadFrame(&slowReader{data: whole, n: 1000}, &buf, 1<<20)
	require.NoError(t, err)
	require.Equal(t, payload, f.Body.(*amqp.Transfer).Payload)
}

// TestTransferPayloadAliases: a read transfer's payload aliases the
// buffer ReadFrame was given.
func TestTransferPayloadAliases(t *testing.T) {
	whole, err := amqp.AppendFrame(nil, amqp.FrameAMQP, 0, &amqp.Transfer{Handle: 1, DeliveryTag: []byte{1}, Payload: []byte("abc")})
	require.NoError(t, err)
	buf := make([]byte, 0, 1024)
	f, err := amqp.ReadFrame(bytes.NewReader(whole), &buf, 512)
	require.NoError(t, err)
	tr := f.Body.(*amqp.Transfer)
	require.Equal(t, []byte("abc"), tr.Payload)
	buf = buf[:cap(buf)]
	buf[len(whole)-1] = 'z'
	require.Equal(t, []byte("abz"), tr.Payload)
}

// TestAppendFrameErrors: the frame type must match the body.
func TestAppendFrameErrors(t *testing.T) {
	_, err := amqp.AppendFrame(nil, amqp.FrameAMQP, 0, &amqp.SASLOutcome{})
	require.ErrorIs(t, err, amqp.ErrEncode)
	_, err = amqp.AppendFrame(nil, amqp.FrameSASL, 0, &amqp.Open{})
	require.ErrorIs(t, err, amqp.ErrEncode)
	b, err := amqp.AppendFrame([]byte{9}, 7, 0, nil)
	require.ErrorIs(t, err, amqp.ErrEncode)
	require.Equal(t, []byte{9}, b)
	b, err = amqp.AppendFrame([]byte{9}, amqp.FrameAMQP, 0, &amqp.Flow{Properties: amqp.Map{{Key: 1i, Value: nil}}})
	require.ErrorIs(t, err, amqp.ErrEncode)
	require.Equal(t, []byte{9}, b)
	for _, p := range []amqp.Performative{(*amqp.Open)(nil), (*amqp.Transfer)(nil), (*amqp.Close)(nil)} {
		b, err = amqp.AppendFrame([]byte{9}, amqp.FrameAMQP, 0, p)
		require.ErrorIs(t, err, amqp.ErrEncode)
		require.Equal(t, []byte{9}, b)
	}
	b, err = amqp.AppendFrame(nil, amqp.FrameSASL, 0, (*amqp.SASLInit)(nil))
	require.ErrorIs(t, err, amqp.ErrEncode)
	_, err = amqp.AppendTransferFrames(nil, 0, nil, 512)
	require.ErrorIs(t, err, amqp.ErrEncode)
	_, err = amqp.TransferOverhead(nil)
	require.ErrorIs(t, err, amqp.ErrEncode)
	_, err = (*amqp.Message)(nil).AppendBinary(nil)
	require.ErrorIs(t, err, amqp.ErrEncode)
}

// readTransfers parses every frame in b, checks each against max and
// returns the transfers.
func readTransfers(t *testing.T, b []byte, max uint32) []*amqp.Transfer {
	t.Helper()
	var out []*amqp.Transfer
	for len(b) > 0 {
		f, n, err := amqp.ParseFrame(b, max)
		require.NoError(t, err)
		require.LessOrEqual(t, n, int(max))
		require.Equal(t, uint16(3), f.Channel)
		out = append(out, f.Body.(*amqp.Transfer))
		b = b[n:]
	}
	return out
}

// TestAppendTransferFrames splits a large message across frames of the
// peer's max-frame-size (W1): every frame fits, the first carries the
// delivery's identity, continuations only what they must, more is set on
// all but the last, and the payloads join up.
func TestAppendTransferFrames(t *testing.T) {
	payload := make([]byte, 200<<10)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	in := &amqp.Transfer{
		Handle: 1, DeliveryID: u32(9), DeliveryTag: []byte("tag"), MessageFormat: u32(0), Settled: bptr(false),
		State: &amqp.Received{}, Batchable: true, Payload: payload,
	}
	for _, max := range []uint32{512, 4096, 65536, 1 << 20} {
		b, err := amqp.AppendTransferFrames([]byte{0xee}, 3, in, max)
		require.NoError(t, err)
		require.Equal(t, byte(0xee), b[0])
		ts := readTransfers(t, b[1:], max)
		if max < 1<<20 {
			require.Greater(t, len(ts), 1)
		} else {
			require.Len(t, ts, 1)
		}
		var joined []byte
		for i, tr := range ts {
			last := i == len(ts)-1
			require.Equal(t, uint32(1), tr.Handle)
			require.Equal(t, !last, tr.More, "frame %d", i)
			require.Equal(t, bptr(false), tr.Settled)
			require.True(t, tr.Batchable)
			if i == 0 {
				require.Equal(t, u32(9), tr.DeliveryID)
				require.Equal(t, []byte("tag"), tr.DeliveryTag)
				require.Equal(t, u32(0), tr.MessageFormat)
				require.Equal(t, &amqp.Received{}, tr.State)
			} else {
				require.Nil(t, tr.DeliveryID)
				require.Nil(t, tr.DeliveryTag)
				require.Nil(t, tr.MessageFormat)
				require.Nil(t, tr.State)
			}
			if !last {
				overhead, err := amqp.TransferOverhead(tr)
				require.NoError(t, err)
				require.Equal(t, int(max), overhead+len(tr.Payload), "frame %d is full", i)
			}
			joined = append(joined, tr.Payload...)
		}
		require.Equal(t, payload, joined)
	}
	require.Equal(t, 200<<10, len(in.Payload), "the caller's transfer is untouched")
	require.Equal(t, u32(9), in.DeliveryID)
}

// TestAppendTransferFramesEdges: a payload that exactly fills one frame is
// one frame; one octet more is two; an empty payload is one frame; aborted
// goes on the last frame only; a max-frame-size too small for any payload
// is an error.
func TestAppendTransferFramesEdges(t *testing.T) {
	tr := &amqp.Transfer{Handle: 1, DeliveryID: u32(1), DeliveryTag: []byte{1}, MessageFormat: u32(0)}
	overhead, err := amqp.TransferOverhead(tr)
	require.NoError(t, err)
	one, err := amqp.AppendFrame(nil, amqp.FrameAMQP, 3, tr)
	require.NoError(t, err)
	require.Equal(t, overhead, len(one))

	tr.Payload = make([]byte, 1000-overhead)
	b, err := amqp.AppendTransferFrames(nil, 3, tr, 1000)
	require.NoError(t, err)
	require.Len(t, b, 1000)
	require.Len(t, readTransfers(t, b, 1000), 1)

	tr.Payload = make([]byte, 1001-overhead)
	b, err = amqp.AppendTransferFrames(nil, 3, tr, 1000)
	require.NoError(t, err)
	ts := readTransfers(t, b, 1000)
	require.Len(t, ts, 2)
	require.Len(t, ts[1].Payload, 1001-overhead-len(ts[0].Payload))

	tr.Payload = nil
	b, err = amqp.AppendTransferFrames(nil, 3, tr, 1000)
	require.NoError(t, err)
	require.Equal(t, one, b)

	tr.Payload = make([]byte, 2000)
	tr.Aborted = true
	b, err = amqp.AppendTransferFrames(nil, 3, tr, 1000)
	require.NoError(t, err)
	ts = readTransfers(t, b, 1000)
	for i, x := range ts {
		require.Equal(t, i == len(ts)-1, x.Aborted)
	}

	big := &amqp.Transfer{Handle: 1, DeliveryTag: make([]byte, 600), Payload: []byte{1}}
	b, err = amqp.AppendTransferFrames([]byte{7}, 3, big, 512)
	require.ErrorIs(t, err, amqp.ErrEncode)
	require.Equal(t, []byte{7}, b)
}
