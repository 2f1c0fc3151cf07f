package server_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
)

// Links over the raw client: what go-amqp cannot show (the outcome type of
// the server's settle echo, frame sizes, the order of frames, a client
// that vanishes mid-transfer).

// sendInProcess enqueues messages with the given bodies through the API.
func (e *wireEnv) sendInProcess(bodies ...string) {
	e.t.Helper()
	for _, b := range bodies {
		require.NoError(e.t, e.q.SendMessage(context.Background(), &minibus.Message{Body: []byte(b)}, nil))
	}
}

// delivery is one message the server delivered, its frames reassembled.
type delivery struct {
	id      uint32
	tag     []byte
	settled bool
	payload []byte
	frames  int
}

// receiveOne gives one credit on the link and reads the delivery it brings.
func (w *wire) receiveOne(ch uint16, handle uint32, dc *uint32) delivery {
	w.t.Helper()
	w.flow(ch, handle, *dc, 1, false)
	*dc++
	return w.delivery()
}

// delivery reads one delivery, however many frames it spans.
func (w *wire) delivery() delivery {
	w.t.Helper()
	tr := expect[*amqp.Transfer](w)
	require.NotNil(w.t, tr.DeliveryID)
	d := delivery{id: *tr.DeliveryID, tag: bytes.Clone(tr.DeliveryTag), settled: tr.Settled != nil && *tr.Settled}
	for {
		d.payload = append(d.payload, tr.Payload...)
		d.frames++
		if !tr.More {
			return d
		}
		tr = expect[*amqp.Transfer](w)
		require.Nil(w.t, tr.DeliveryID, "a continuation frame")
	}
}

// settle sends the client's unsettled outcome for a delivery and returns
// the server's answer (rcv-settle-mode second, W6).
func (w *wire) settle(ch uint16, id uint32, state amqp.DeliveryState) *amqp.Disposition {
	w.t.Helper()
	w.send(ch, &amqp.Disposition{Role: amqp.RoleReceiver, First: id, State: state})
	d := expect[*amqp.Disposition](w)
	require.Equal(w.t, amqp.RoleSender, d.Role)
	require.Equal(w.t, id, d.First)
	require.True(w.t, d.Settled, "the server settles what the client settled")
	return d
}

// Under rcv-settle-mode second the server answers every outcome with a
// settled disposition of the same outcome type, a bare Rejected for a
// dead-letter, and Rejected com.microsoft:message-lock-lost once the lock
// has ended (W6, L5, L7); released does not count a delivery (L15),
// modified does.
func TestWire_SettleEcho(t *testing.T) {
	e := newWireEnv(t, nil)
	w := e.open()
	w.begin(0)
	a := w.attachReceiver(0, 0, wireQueue, true)
	require.Equal(t, amqp.RcvSecond, a.RcvSettleMode)
	require.Equal(t, amqp.SndUnsettled, a.SndSettleMode)
	var dc uint32
	headerCount := func(d delivery) uint32 {
		m := decode(t, d.payload)
		require.NotNil(t, m.Header, "every delivered message has a header (W5)")
		return m.Header.DeliveryCount
	}

	e.sendInProcess("accept")
	d := w.receiveOne(0, 0, &dc)
	require.False(t, d.settled)
	require.Len(t, d.tag, 16, "the lock token (W5)")
	require.IsType(t, &amqp.Accepted{}, w.settle(0, d.id, &amqp.Accepted{}).State)
	require.Zero(t, e.activeCount())

	e.sendInProcess("release")
	d = w.receiveOne(0, 0, &dc)
	require.Zero(t, headerCount(d))
	require.IsType(t, &amqp.Released{}, w.settle(0, d.id, &amqp.Released{}).State)
	d = w.receiveOne(0, 0, &dc)
	require.Equal(t, "release", bodyOf(t, d.payload))
	require.Zero(t, headerCount(d), "a release does not count a delivery (L15)")

	// Modified without undeliverable-here abandons: the delivery counts.
	reply := w.settle(0, d.id, &amqp.Modified{DeliveryFailed: true})
	require.Equal(t, &amqp.Modified{DeliveryFailed: true}, reply.State)
	d = w.receiveOne(0, 0, &dc)
	require.Equal(t, "release", bodyOf(t, d.payload))
	require.Equal(t, uint32(1), headerCount(d))

	// Undeliverable-here defers.
	reply = w.settle(0, d.id, &amqp.Modified{UndeliverableHere: true})
	require.Equal(t, &amqp.Modified{UndeliverableHere: true}, reply.State)

	// A dead-letter: Rejected com.microsoft:dead-letter, answered bare.
	e.sendInProcess("dead-letter")
	d = w.receiveOne(0, 0, &dc)
	reply = w.settle(0, d.id, &amqp.Rejected{Error: &amqp.Error{
		Condition: "com.microsoft:dead-letter",
		Info:      amqp.Map{{Key: "DeadLetterReason", Value: "bad"}, {Key: "DeadLetterErrorDescription", Value: "very bad"}},
	}})
	require.Equal(t, &amqp.Rejected{}, reply.State)
	rp := e.q.RuntimeProperties()
	require.Equal(t, int64(1), rp.DeadLetterMessageCount)
	require.Equal(t, int64(1), rp.ActiveMessageCount, "the deferred one")

	// The lock ends at LockedUntil; a settlement after it is lock-lost.
	e.sendInProcess("late")
	d = w.receiveOne(0, 0, &dc)
	e.env.Advance(e.q.Properties().LockDuration + time.Second)
	reply = w.settle(0, d.id, &amqp.Accepted{})
	rej, ok := reply.State.(*amqp.Rejected)
	require.True(t, ok, "want Rejected, got %T", reply.State)
	require.NotNil(t, rej.Error)
	require.Equal(t, amqp.Symbol("com.microsoft:message-lock-lost"), rej.Error.Condition)
	// The message is delivered again, its delivery counted.
	d = w.receiveOne(0, 0, &dc)
	require.Equal(t, "late", bodyOf(t, d.payload))
	require.Equal(t, uint32(1), headerCount(d))
	require.IsType(t, &amqp.Accepted{}, w.settle(0, d.id, &amqp.Accepted{}).State)
	w.closeConn()
}

// A drain is answered at once with the credit spent (W5): with nothing
// available, a flow advancing the delivery-count by the whole credit;
// with messages available, those first, then the flow.
func TestWire_Drain(t *testing.T) {
	e := newWireEnv(t, nil)
	w := e.open()
	w.begin(0)
	w.attachReceiver(0, 0, wireQueue, false)
	drained := func() *amqp.Flow {
		t.Helper()
		f := expect[*amqp.Flow](w)
		require.NotNil(t, f.Handle)
		require.True(t, f.Drain)
		return f
	}

	w.flow(0, 0, 0, 5, true)
	f := drained()
	require.Equal(t, uint32(5), *f.DeliveryCount)
	require.Equal(t, uint32(0), *f.LinkCredit)

	e.sendInProcess("one", "two")
	w.flow(0, 0, 5, 5, true)
	for _, want := range []string{"one", "two"} {
		fr := w.next()
		tr, ok := fr.Body.(*amqp.Transfer)
		require.True(t, ok, "the messages come before the drain's flow, got %s", describe(fr.Body))
		require.True(t, *tr.Settled, "receive-and-delete")
		require.Equal(t, want, bodyOf(t, tr.Payload))
	}
	f = drained()
	require.Equal(t, uint32(10), *f.DeliveryCount)
	require.Equal(t, uint32(0), *f.LinkCredit)
	require.Zero(t, e.activeCount())
	w.closeConn()
}

// A message of 300 KiB crosses in frames of the peer's max-frame-size both
// ways (W1): the client sends it in frames of 512 octets, the server, to a
// client that announced 512, never sends a larger frame (ReadFrame refuses
// one). An aborted delivery is not enqueued.
func TestWire_MultiFrame(t *testing.T) {
	e := newWireEnv(t, nil)
	body := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16)
	payload, err := (&amqp.Message{Data: [][]byte{body}}).AppendBinary(nil)
	require.NoError(t, err)

	w := e.dial()
	w.handshake(amqp.MinMaxFrameSize, 0)
	w.begin(0)
	require.NotNil(t, w.attachSender(0, 0, wireQueue).Target)
	split := func(id uint32, aborted bool) []byte {
		t.Helper()
		settled, format := false, uint32(0)
		tr := &amqp.Transfer{Handle: 0, DeliveryID: &id, DeliveryTag: []byte{byte(id)}, MessageFormat: &format, Settled: &settled, Payload: payload}
		if aborted {
			tr.Payload, tr.More, tr.Aborted = payload[:len(payload)/2], false, true
		}
		frames, err := amqp.AppendTransferFrames(nil, 0, tr, amqp.MinMaxFrameSize)
		require.NoError(t, err)
		return frames
	}
	w.raw(split(0, true)) // aborted halfway: nothing to answer
	w.raw(split(1, false))
	d := expect[*amqp.Disposition](w)
	require.Equal(t, uint32(1), d.First)
	require.IsType(t, &amqp.Accepted{}, d.State)
	require.Equal(t, int64(1), e.activeCount(), "the aborted delivery was not enqueued")

	w.attachReceiver(0, 1, wireQueue, false)
	var dc uint32
	got := w.receiveOne(0, 1, &dc)
	require.Greater(t, got.frames, len(payload)/amqp.MinMaxFrameSize)
	m := decode(t, got.payload)
	require.Len(t, m.Data, 1)
	require.True(t, bytes.Equal(body, m.Data[0]), "the body crossed intact")
	w.closeConn()
}

// The server sends a frame at least every half of the peer's idle-time-out
// (W1), also when it has just written something else: a client that
// announces 1 s and makes the server write right after a keep-alive sees
// the next one within about 500 ms (not the 1 s a keep-alive timer that
// skips a tick after any write would leave). A bounded real-time wait.
func TestWire_KeepAliveWithinHalfIdleTimeOut(t *testing.T) {
	e := newWireEnv(t, nil)
	w := e.dial()
	w.handshake(wireMaxFrame, 1000)
	emptyFrame := func() {
		t.Helper()
		fr, err := w.read()
		require.NoError(t, err)
		require.Nil(t, fr.Body, "want an empty frame, got %s", describe(fr.Body))
	}
	for i := range 2 {
		emptyFrame()
		w.begin(uint16(i)) // the server writes its begin just after a keep-alive
		start := time.Now()
		emptyFrame()
		gap := time.Since(start)
		require.Less(t, gap, 750*time.Millisecond, "the gap after a write, round %d", i)
	}
	w.closeConn()
}

// A client that vanishes halfway through a multi-frame transfer leaves
// nothing enqueued; one whose transfer arrived whole has its message
// enqueued though it never read the disposition ("Bad input").
func TestWire_VanishMidTransfer(t *testing.T) {
	e := newWireEnv(t, nil)
	body := bytes.Repeat([]byte("x"), 20<<10)
	frames := func(text string) []byte {
		t.Helper()
		payload, err := (&amqp.Message{Data: [][]byte{body, []byte(text)}}).AppendBinary(nil)
		require.NoError(t, err)
		id, settled, format := uint32(0), false, uint32(0)
		b, err := amqp.AppendTransferFrames(nil, 0, &amqp.Transfer{Handle: 0, DeliveryID: &id, DeliveryTag: []byte("t"), MessageFormat: &format, Settled: &settled, Payload: payload}, 1024)
		require.NoError(t, err)
		return b
	}
	connect := func() *wire {
		t.Helper()
		w := e.open()
		w.begin(0)
		require.NotNil(t, w.attachSender(0, 0, wireQueue).Target)
		expect[*amqp.Flow](w) // all the server sent is read: the close is a plain FIN
		return w
	}
	for i, cut := range []func(b []byte) []byte{
		func(b []byte) []byte { // at a frame boundary
			n := 0
			for n < len(b)/2 {
				n += int(uint32(b[n])<<24 | uint32(b[n+1])<<16 | uint32(b[n+2])<<8 | uint32(b[n+3]))
			}
			return b[:n]
		},
		func(b []byte) []byte { return b[:len(b)/2+3] }, // inside a frame
	} {
		w := connect()
		w.raw(cut(frames(fmt.Sprint("half ", i))))
		require.NoError(t, w.nc.Close())
	}
	w := connect()
	w.raw(frames("whole"))
	require.NoError(t, w.nc.Close())

	// The whole one arrives (a blocking receive: no polling) ...
	r, err := e.q.NewReceiver(&minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
	require.NoError(t, err)
	defer r.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), wireTimeout)
	defer cancel()
	msgs, err := r.ReceiveMessages(ctx, 10, nil)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.True(t, bytes.HasSuffix(msgs[0].Body, []byte("whole")))
	// ... and once the server has finished every connection, the halves
	// are nowhere.
	require.NoError(t, e.srv.Close())
	require.Zero(t, e.q.RuntimeProperties().TotalMessageCount)
}
