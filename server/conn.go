package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minibus-go/minibus/internal/amqp"
)

const (
	// maxFrameIn is the max-frame-size this side advertises: the largest
	// frame a peer may send (W1).
	maxFrameIn = 1 << 20
	// maxFrameOut caps the frames this side sends, below the peer's own
	// max-frame-size, so that one large delivery does not hold a session
	// for long.
	maxFrameOut = 1 << 20
	// idleTimeOut is the idle-time-out this side advertises; a connection
	// silent for twice as long is closed (W1).
	idleTimeOut = 60 * time.Second
	// readBufferSize is the connection's read buffer: small, because an
	// idle connection keeps it (bench: memory per idle connection).
	readBufferSize = 8 << 10
	// writeHighWater is how much a connection's write buffer may hold
	// before a pump waits for the socket to take it.
	writeHighWater = 1 << 20
	// keepRBuf is the largest frame buffer kept between frames.
	keepRBuf = 64 << 10
)

// Protocol errors that end the connection.
var (
	errServerClosing = &amqp.Error{Condition: "amqp:connection:forced", Description: "the minibus server is closing"}
	errClosedByPeer  = errors.New("closed by the peer")
)

// connError ends the connection with its AMQP error (W1, "Bad input").
type connError struct{ e *amqp.Error }

func (e connError) Error() string { return string(e.e.Condition) + ": " + e.e.Description }

func connErrorf(cond amqp.Symbol, format string, args ...any) error {
	return connError{&amqp.Error{Condition: cond, Description: fmt.Sprintf(format, args...)}}
}

// conn is one AMQP connection. Its reader goroutine (serve) reads and
// handles every frame and alone changes the session and link tables; its
// writer goroutine (writeLoop) alone writes to the socket; each receiving
// link has a pump goroutine (link_out.go) that waits for messages and
// delivers them. Lock order: conn.mu, then conn.wmu. Frames of different
// links of a session may interleave (AMQP 1.0 part 2, 2.6); a link's own
// deliveries are sent by one goroutine at a time.
type conn struct {
	srv    *Server
	nc     net.Conn
	log    *slog.Logger
	ctx    context.Context // cancelled when the connection ends: every blocked call returns
	cancel context.CancelFunc

	// Reader goroutine only.
	r        *bufio.Reader
	rbuf     []byte
	sessions map[uint16]*session // by channel (this side uses the peer's channel number)
	mgmt     map[string]*management
	closing  bool // a close was received or sent: read no more

	// Set by the open exchange before any session exists, read-only after.
	maxOut uint32 // the largest frame this side sends

	// mu guards what pumps share with the reader: credits, windows,
	// unsettled deliveries, link states, the name tables.
	mu     sync.Mutex
	cond   *sync.Cond          // broadcast when a credit, window or link state changes
	byName map[string]*outLink // attached sending links, by link name (associated-link-name)
	held   map[string]*outLink // session links, by sessionKey(path, id)
	pumps  sync.WaitGroup      // the pump goroutines
	ended  bool                // the connection is over: pumps stop

	// wmu guards the write buffer that the writer goroutine drains.
	wmu    sync.Mutex
	wspace *sync.Cond // broadcast when the writer took the buffer
	wbuf   []byte
	wclose bool // close the socket once wbuf is written
	wdead  bool // the socket failed or was closed: frames are dropped
	wsig   chan struct{}
	wdone  chan struct{} // closed when the writer returns
	// keepOut: send something at least this often (half the peer's
	// idle-time-out, set by the open exchange); 0: never.
	keepOut time.Duration
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv:      s,
		nc:       nc,
		log:      s.log.With("remote", nc.RemoteAddr().String()),
		sessions: map[uint16]*session{},
		mgmt:     map[string]*management{},
		byName:   map[string]*outLink{},
		held:     map[string]*outLink{},
		wsig:     make(chan struct{}, 1),
		wdone:    make(chan struct{}),
		maxOut:   maxFrameOut,
	}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	c.cond = sync.NewCond(&c.mu)
	c.wspace = sync.NewCond(&c.wmu)
	c.r = bufio.NewReaderSize(&idleReader{c: c}, readBufferSize)
	return c
}

// serve runs the connection until it ends, then stops its pumps and
// writer and closes what it opened in the namespace.
func (c *conn) serve() {
	go c.writeLoop()
	defer c.finish()
	c.log.Debug("minibus server: connection opened")
	if err := c.handshake(); err != nil {
		c.fail(err)
		return
	}
	for !c.closing {
		fr, err := amqp.ReadFrame(c.r, &c.rbuf, maxFrameIn)
		if err != nil {
			c.fail(readError(err))
			return
		}
		err = c.handle(fr)
		if cap(c.rbuf) > keepRBuf {
			c.rbuf = nil
		}
		if err != nil {
			c.fail(err)
			return
		}
	}
}

// readError classes a failed read: the peer gone, or a frame that breaks
// the protocol (W1): a frame larger than negotiated or whose header cannot
// be valid is amqp:connection:framing-error (AMQP 1.0 part 2, 2.7.1
// max-frame-size, 2.8.16), a body that does not decode amqp:decode-error
// (2.8.15).
func readError(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return err
	case errors.As(err, &ne):
		return err
	case errors.Is(err, amqp.ErrFraming):
		return connErrorf("amqp:connection:framing-error", "%v", err)
	}
	return connErrorf("amqp:decode-error", "%v", err)
}

// fail ends the connection because of err: a protocol error is sent to the
// peer in a close frame; anything else (the peer gone) just closes.
func (c *conn) fail(err error) {
	var ce connError
	var ae *amqp.Error
	switch {
	case errors.As(err, &ce):
		c.log.Warn("minibus server: closing the connection on a protocol error", "error", ce.Error())
		c.sendClose(ce.e)
	case errors.As(err, &ae):
		c.sendClose(ae)
	case errors.Is(err, errClosedByPeer):
		c.log.Debug("minibus server: connection closed by the peer")
	default:
		c.log.Debug("minibus server: connection ended", "error", err)
	}
	c.closeWriter()
}

// shutdown is the server's Close of this connection, from another
// goroutine: the peer gets a close frame, then the socket closes.
func (c *conn) shutdown(e *amqp.Error) {
	c.cancel()
	c.nc.SetWriteDeadline(c.srv.clock.Now().Add(time.Second))
	c.sendClose(e)
	c.closeWriter()
}

// finish stops everything the connection started and frees what it holds
// in the namespace: pumps (which close their receivers), management nodes.
func (c *conn) finish() {
	c.cancel()
	c.mu.Lock()
	c.ended = true
	for _, s := range c.sessions {
		s.endLinksLocked()
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	c.pumps.Wait()
	for _, m := range c.mgmt {
		m.close(context.Background())
	}
	c.closeWriter()
	<-c.wdone
	c.nc.Close()
	c.log.Debug("minibus server: connection finished")
}

// handshake reads the peer's protocol header, runs SASL when asked, and
// exchanges open frames (W1).
func (c *conn) handshake() error {
	h, err := c.readHeader()
	if err != nil {
		return err
	}
	switch h {
	case amqp.ProtoSASL:
		if err := c.sasl(); err != nil {
			return err
		}
		if h, err = c.readHeader(); err != nil {
			return err
		}
		if h != amqp.ProtoAMQP {
			c.write(amqp.ProtoAMQP[:])
			return fmt.Errorf("protocol header %q after SASL, want AMQP 1.0", h[:])
		}
		// W1: only now, once the client's AMQP header has arrived, ours.
		c.write(amqp.ProtoAMQP[:])
	case amqp.ProtoAMQP:
		c.write(amqp.ProtoAMQP[:])
	default:
		// The specification's answer to a header it does not speak: the
		// header it does, then close.
		c.write(amqp.ProtoSASL[:])
		return fmt.Errorf("unsupported protocol header %q", h[:])
	}
	open, err := c.readOpen()
	if err != nil {
		// The close that reports the error may only follow an open
		// (AMQP 1.0 part 2, 2.4.1): this side's goes first.
		var ce connError
		if errors.As(err, &ce) {
			c.sendOpen()
		}
		return err
	}
	c.maxOut = min(open.MaxFrameSize, maxFrameOut)
	if open.IdleTimeOut > 0 {
		c.wmu.Lock()
		c.keepOut = time.Duration(open.IdleTimeOut) * time.Millisecond / 2
		c.wmu.Unlock()
	}
	c.sendOpen()
	c.wake()
	c.log.Debug("minibus server: connection open", "container", open.ContainerID, "hostname", open.Hostname,
		"max-frame-size", open.MaxFrameSize, "idle-time-out", open.IdleTimeOut)
	return nil
}

// readOpen reads the peer's open frame.
func (c *conn) readOpen() (*amqp.Open, error) {
	fr, err := amqp.ReadFrame(c.r, &c.rbuf, maxFrameIn)
	if err != nil {
		return nil, readError(err)
	}
	open, ok := fr.Body.(*amqp.Open)
	if !ok || fr.Type != amqp.FrameAMQP {
		return nil, connErrorf("amqp:illegal-state", "expected an open frame, got %T", fr.Body)
	}
	if open.MaxFrameSize < amqp.MinMaxFrameSize {
		return nil, connErrorf("amqp:invalid-field", "open: max-frame-size %d is below %d", open.MaxFrameSize, amqp.MinMaxFrameSize)
	}
	return open, nil
}

// sendOpen sends this side's open frame.
func (c *conn) sendOpen() {
	c.send(0, &amqp.Open{
		ContainerID:  "minibus",
		MaxFrameSize: maxFrameIn,
		ChannelMax:   65535,
		IdleTimeOut:  uint32(idleTimeOut / time.Millisecond),
		Properties:   amqp.Map{{Key: amqp.Symbol("product"), Value: "minibus"}},
	})
}

// saslMechanisms are offered to every client; all are accepted with any
// credentials (W1).
var saslMechanisms = []amqp.Symbol{"MSSBCBS", "ANONYMOUS", "PLAIN", "EXTERNAL"}

// sasl runs the SASL exchange: mechanisms, the client's init, outcome ok.
func (c *conn) sasl() error {
	c.write(amqp.ProtoSASL[:])
	c.sendFrame(amqp.FrameSASL, 0, &amqp.SASLMechanisms{Mechanisms: saslMechanisms})
	fr, err := amqp.ReadFrame(c.r, &c.rbuf, maxFrameIn)
	if err != nil {
		return readError(err)
	}
	init, ok := fr.Body.(*amqp.SASLInit)
	if !ok || fr.Type != amqp.FrameSASL {
		return fmt.Errorf("expected sasl-init, got %T", fr.Body)
	}
	c.log.Debug("minibus server: SASL", "mechanism", string(init.Mechanism), "hostname", init.Hostname)
	c.sendFrame(amqp.FrameSASL, 0, &amqp.SASLOutcome{Code: 0})
	return nil
}

func (c *conn) readHeader() ([8]byte, error) {
	var h [8]byte
	_, err := io.ReadFull(c.r, h[:])
	return h, err
}

// handle acts on one frame read after the open exchange. A frame the
// connection's state does not permit (a second open, a SASL frame, a frame
// on a channel with no session) closes it with amqp:illegal-state (AMQP 1.0
// part 2, 2.8.15).
func (c *conn) handle(fr amqp.Frame) error {
	if fr.Type != amqp.FrameAMQP {
		return connErrorf("amqp:illegal-state", "a SASL frame after the connection opened")
	}
	switch b := fr.Body.(type) {
	case nil:
		return nil // an empty frame: the peer's keep-alive
	case *amqp.Begin:
		return c.onBegin(fr.Channel, b)
	case *amqp.Close:
		c.onClose(b)
		return errClosedByPeer
	case *amqp.Open:
		return connErrorf("amqp:illegal-state", "a second open frame")
	}
	s := c.sessions[fr.Channel]
	if s == nil {
		if _, ok := fr.Body.(*amqp.End); ok {
			return nil // the peer ending a session this side ended already
		}
		return connErrorf("amqp:illegal-state", "%T on channel %d, which has no session", fr.Body, fr.Channel)
	}
	return s.handle(fr.Body)
}

// onBegin starts a session on the peer's channel (this side answers on the
// same channel number).
func (c *conn) onBegin(ch uint16, b *amqp.Begin) error {
	if b.RemoteChannel != nil {
		return connErrorf("amqp:illegal-state", "begin on channel %d answers a session this side never began", ch)
	}
	if c.sessions[ch] != nil {
		return connErrorf("amqp:illegal-state", "begin on channel %d, which has a session", ch)
	}
	s := newSession(c, ch, b)
	c.sessions[ch] = s
	remote := ch
	c.mu.Lock()
	c.sendLocked(ch, &amqp.Begin{
		RemoteChannel:  &remote,
		NextOutgoingID: 0,
		IncomingWindow: s.incoming,
		OutgoingWindow: outgoingWindow,
		HandleMax:      handleMax,
	})
	c.mu.Unlock()
	return nil
}

// onClose answers the peer's close.
func (c *conn) onClose(b *amqp.Close) {
	if b.Error != nil {
		c.log.Debug("minibus server: the peer closed with an error", "condition", string(b.Error.Condition), "description", b.Error.Description)
	}
	c.closing = true
	// Every link ends before the close is answered, so that a client that
	// reconnects at once finds its sessions released (SS5).
	c.mu.Lock()
	for _, s := range c.sessions {
		s.endLinksLocked()
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	c.wspace.Broadcast()
	c.pumps.Wait()
	c.sendClose(nil)
}

func (c *conn) sendClose(e *amqp.Error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wclose || c.wdead {
		return
	}
	c.appendLocked(amqp.FrameAMQP, 0, &amqp.Close{Error: e})
	c.wclose = true
	c.wakeLocked()
}

// closeWriter makes the writer close the socket once what is buffered is
// written.
func (c *conn) closeWriter() {
	c.wmu.Lock()
	c.wclose = true
	c.wakeLocked()
	c.wmu.Unlock()
}

// send queues one AMQP frame on channel ch.
func (c *conn) send(ch uint16, body amqp.Performative) { c.sendFrame(amqp.FrameAMQP, ch, body) }

// sendLocked is send for a caller that holds c.mu (the order of frames a
// link's state decides must follow that state).
func (c *conn) sendLocked(ch uint16, body amqp.Performative) { c.sendFrame(amqp.FrameAMQP, ch, body) }

func (c *conn) sendFrame(typ uint8, ch uint16, body amqp.Performative) {
	c.wmu.Lock()
	c.appendLocked(typ, ch, body)
	c.wakeLocked()
	c.wmu.Unlock()
}

// appendLocked encodes a frame into the write buffer; c.wmu is held.
func (c *conn) appendLocked(typ uint8, ch uint16, body amqp.Performative) {
	if c.wdead || (c.wclose && !isClose(body)) {
		return
	}
	buf, err := amqp.AppendFrame(c.wbuf, typ, ch, body)
	if err != nil {
		// An encoding failure is this side's bug, never the peer's input.
		c.log.Error("minibus server: cannot encode a frame", "frame", fmt.Sprintf("%T", body), "error", err)
		c.wdead = true
		c.nc.Close()
		return
	}
	c.wbuf = buf
}

func isClose(body amqp.Performative) bool { _, ok := body.(*amqp.Close); return ok }

// write queues raw bytes (protocol headers).
func (c *conn) write(b []byte) {
	c.wmu.Lock()
	if !c.wdead {
		c.wbuf = append(c.wbuf, b...)
	}
	c.wakeLocked()
	c.wmu.Unlock()
}

func (c *conn) wake() {
	c.wmu.Lock()
	c.wakeLocked()
	c.wmu.Unlock()
}

func (c *conn) wakeLocked() {
	select {
	case c.wsig <- struct{}{}:
	default:
	}
}

// waitWriteSpace blocks while the write buffer is over its high-water
// mark, so that a pump does not outrun a slow peer, until halt is set. It
// returns false once the connection's writer is gone or halt is set.
func (c *conn) waitWriteSpace(halt *atomic.Bool) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for len(c.wbuf) > writeHighWater && !c.wdead && !c.wclose && !halt.Load() {
		c.wspace.Wait()
	}
	return !c.wdead && !halt.Load()
}

// writeLoop writes what the connection queued, and an empty frame when
// nothing was written for a tick, so that the peer never goes half its
// idle-time-out without a frame (W1): ticks come every quarter of it, and
// a write just after one tick leaves the gap at two ticks at most. It closes
// the socket when asked to (after writing what is queued) or when a write
// fails.
func (c *conn) writeLoop() {
	defer close(c.wdone)
	var spare []byte
	var tick <-chan time.Time
	wrote := false
	for {
		if tick == nil {
			c.wmu.Lock()
			keep := c.keepOut
			c.wmu.Unlock()
			if keep > 0 {
				t := c.srv.clock.Ticker(keep / 2)
				defer t.Stop()
				tick = t.C
			}
		}
		select {
		case <-c.wsig:
		case <-tick:
			if !wrote {
				c.wmu.Lock()
				if !c.wclose {
					c.wbuf = amqp.AppendEmptyFrame(c.wbuf)
				}
				c.wmu.Unlock()
			}
			wrote = false
		}
		c.wmu.Lock()
		buf, closing := c.wbuf, c.wclose
		c.wbuf = spare[:0]
		c.wmu.Unlock()
		c.wspace.Broadcast()
		if len(buf) > 0 {
			if _, err := c.nc.Write(buf); err != nil {
				c.wmu.Lock()
				c.wdead = true
				c.wmu.Unlock()
				c.wspace.Broadcast()
				c.nc.Close()
				c.cancel()
				return
			}
			wrote = true
		}
		if cap(buf) > 4*writeHighWater {
			buf = nil
		}
		spare = buf
		if closing {
			c.wmu.Lock()
			empty := len(c.wbuf) == 0
			if empty {
				c.wdead = true
			}
			c.wmu.Unlock()
			if empty {
				c.wspace.Broadcast()
				if tc, ok := c.nc.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
				c.nc.Close()
				c.cancel()
				return
			}
			c.wakeLocked()
		}
	}
}

// idleReader reads from the socket with a deadline of twice this side's
// idle-time-out, refreshed at most once a second (W1).
type idleReader struct {
	c    *conn
	last time.Time
}

func (r *idleReader) Read(p []byte) (int, error) {
	now := r.c.srv.clock.Now()
	if now.Sub(r.last) > time.Second {
		r.c.nc.SetReadDeadline(now.Add(2 * idleTimeOut))
		r.last = now
	}
	return r.c.nc.Read(p)
}
