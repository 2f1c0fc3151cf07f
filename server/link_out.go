package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
)

const (
	// maxReceive caps one receive of a pump: credit beyond it is served by
	// the next receive.
	maxReceive = 1000
	// maxQueuedReplies bounds the replies a reply link keeps while its
	// peer gives no credit or window.
	maxQueuedReplies = 1024
	// acceptTimeout is how long an accept of the next session waits
	// without the link property com.microsoft:timeout (W7).
	acceptTimeout = time.Minute
	// transferOverhead bounds a transfer frame's header and performative,
	// delivery tag included, for splitting a message into frames.
	transferOverhead = 128
)

// Link properties and filters of Service Bus (W7).
const (
	sessionFilter     = amqp.Symbol("com.microsoft:session-filter")
	timeoutProperty   = amqp.Symbol("com.microsoft:timeout")
	lockedUntilUTC    = amqp.Symbol("com.microsoft:locked-until-utc")
	deadLetterCond    = amqp.Symbol("com.microsoft:dead-letter")
	noSessionFilterID = ""
)

// outKind tells what a link this side sends on carries.
type outKind uint8

const (
	outEntity  outKind = iota // a queue's or subscription's messages (W5)
	outSession                // one session's messages (W7)
	outReply                  // replies of $cbs or $management (W3)
)

// outLink is a link this side sends on. Its fields up to credit are set at
// attach (recv and sess by the pump before it delivers); the rest are
// under conn.mu.
type outLink struct {
	s          *session
	name       string
	handle     uint32
	kind       outKind
	ent        entity
	path       string // the entity's path, as the address gave it
	subQueue   minibus.SubQueue
	presettled bool   // snd-settle-mode settled: receive-and-delete (W5)
	target     string // the peer's target address (reply routing, W3)
	node       string // reply links: the node's key
	attach     *amqp.Attach

	ctx    context.Context // the pump's; cancelled when the link stops
	cancel context.CancelFunc
	done   chan struct{}            // closed when the pump has returned and closed the receiver
	halt   atomic.Bool              // stopped, for waits outside conn.mu
	recv   receiver                 // set before the pump delivers
	sess   *minibus.SessionReceiver // session links, once accepted
	held   string                   // session links: the key in conn.held

	credit        uint32
	deliveryCount uint32
	drain         bool
	drainOwed     bool // a drain came while a receive was on its way: the pump answers it
	detached      bool // this side sent its detach: nothing more is sent
	stopped       bool // the link is over: its pump returns
	cancelRecv    context.CancelFunc
	replies       [][]byte // reply links: encoded replies waiting for credit or window

	// The pump's transfer, reused from delivery to delivery.
	xfer     amqp.Transfer
	xid      uint32
	xformat  uint32
	xsettled bool
	xtag     [16]byte
}

// attachOut answers the peer's receiver attach: a reply link at once; an
// entity link at once, then its pump delivers; a session link once its
// pump has accepted the session (W7).
func (s *session) attachOut(a *amqp.Attach) {
	c := s.c
	if a.Source == nil {
		s.refuseAttach(a, &amqp.Error{Condition: "amqp:invalid-field", Description: fmt.Sprintf("link %q: a receiver needs a source", a.Name)})
		return
	}
	addr, err := parseAddress(a.Source.Address)
	if err != nil {
		s.refuseAttach(a, &amqp.Error{Condition: "amqp:not-found", Description: err.Error()})
		return
	}
	l := &outLink{s: s, name: a.Name, handle: a.Handle, attach: a, path: addr.path, subQueue: addr.subQueue,
		presettled: a.SndSettleMode == amqp.SndSettled}
	if a.Target != nil {
		l.target = a.Target.Address
	}
	if addr.kind != nodeEntity {
		if addr.kind == nodeManagement {
			if _, err := addr.resolve(c.srv.ns); err != nil {
				s.refuseAttach(a, linkError(err))
				return
			}
		}
		l.kind, l.node = outReply, nodeKey(addr)
		s.out[a.Handle] = l
		c.mu.Lock()
		c.sendLocked(s.ch, l.attachReply(a.Source, nil))
		c.mu.Unlock()
		return
	}
	ent, err := addr.resolve(c.srv.ns)
	if err != nil {
		s.refuseAttach(a, linkError(err))
		return
	}
	l.ent = ent
	if !ent.canReceive() {
		s.refuseAttach(a, &amqp.Error{Condition: "amqp:not-allowed", Description: fmt.Sprintf("%s cannot be received from: receive from its subscriptions", ent)})
		return
	}
	if disabled(ent) {
		s.refuseAttach(a, &amqp.Error{Condition: "com.microsoft:entity-disabled", Description: fmt.Sprintf("%s is disabled for receiving", ent)})
		return
	}
	filter, withFilter := a.Source.Filter.GetSymbol(string(sessionFilter))
	switch {
	case withFilter && !ent.requiresSession():
		s.refuseAttach(a, &amqp.Error{Condition: "amqp:not-allowed", Description: fmt.Sprintf("%s does not require sessions: receive without a session filter", ent)})
		return
	case withFilter && addr.subQueue != minibus.SubQueueNone:
		s.refuseAttach(a, &amqp.Error{Condition: "amqp:not-allowed", Description: fmt.Sprintf("%s: a sub-queue has no sessions", ent)})
		return
	case !withFilter && ent.requiresSession() && addr.subQueue == minibus.SubQueueNone:
		s.refuseAttach(a, &amqp.Error{Condition: "amqp:not-allowed", Description: fmt.Sprintf("%s requires sessions: accept a session (a session filter)", ent)})
		return
	}
	l.ctx, l.cancel = context.WithCancel(c.ctx)
	l.done = make(chan struct{})
	if withFilter {
		l.kind = outSession
		s.out[a.Handle] = l
		c.pumps.Add(1)
		go l.pump(filter)
		return
	}
	r, err := ent.newReceiver(minibus.ReceiveModePeekLock, addr.subQueue) // receive-and-delete too: see deliver
	if err != nil {
		l.cancel()
		s.refuseAttach(a, linkError(err))
		return
	}
	l.kind, l.recv = outEntity, r
	s.out[a.Handle] = l
	c.mu.Lock()
	c.byName[l.name] = l
	c.sendLocked(s.ch, l.attachReply(a.Source, nil))
	c.mu.Unlock()
	c.pumps.Add(1)
	go l.pump(nil)
	c.log.Debug("minibus server: receiver attached", "link", a.Name, "source", a.Source.Address, "receive-and-delete", l.presettled)
}

// disabled tells whether an entity refuses receives (W5).
func disabled(e entity) bool {
	var st minibus.EntityStatus
	switch {
	case e.sub != nil:
		st = e.sub.Properties().Status
	case e.queue != nil:
		st = e.queue.Properties().Status
	}
	return st == minibus.EntityStatusDisabled || st == minibus.EntityStatusReceiveDisabled
}

// attachReply is this side's attach for the link: the peer's terminus and
// settle modes echoed (go-amqp checks the modes), a delivery count of 0.
func (l *outLink) attachReply(src *amqp.Source, props amqp.Map) *amqp.Attach {
	a := l.attach
	zero := uint32(0)
	reply := &amqp.Attach{
		Name:                 a.Name,
		Handle:               a.Handle,
		Role:                 amqp.RoleSender,
		SndSettleMode:        a.SndSettleMode,
		RcvSettleMode:        a.RcvSettleMode,
		Source:               src,
		Target:               a.Target,
		InitialDeliveryCount: &zero,
		Properties:           props,
	}
	if l.kind != outReply {
		reply.MaxMessageSize = l.ent.maxMessageSize()
	}
	return reply
}

// onFlow takes the peer's credit for the link (AMQP 1.0 part 2, 2.6.7):
// less credit, or a drain, cancels a receive in progress, so that the pump
// takes no more than the credit, and a drain is answered at once (W5).
func (l *outLink) onFlow(f *amqp.Flow) {
	c := l.s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.stopped {
		return
	}
	if f.LinkCredit != nil {
		dc := uint32(0)
		if f.DeliveryCount != nil {
			dc = *f.DeliveryCount
		}
		credit := dc + *f.LinkCredit - l.deliveryCount
		if credit > 1<<31 {
			credit = 0 // the peer's count is behind deliveries still on their way
		}
		if credit < l.credit || f.Drain {
			if l.cancelRecv != nil {
				l.cancelRecv()
			}
		}
		l.credit = credit
	}
	l.drain = f.Drain
	if l.kind == outReply {
		l.flushRepliesLocked()
	}
	switch {
	case l.drain && l.credit == 0 && l.cancelRecv != nil:
		// A receive was on its way: the pump answers once what it took
		// is sent or released, so that nothing follows the answer.
		l.drainOwed = true
	case l.drain && l.credit == 0 && !l.detached:
		l.answerDrainLocked()
	case f.Echo && !l.detached:
		c.sendLocked(l.s.ch, l.flowLocked())
	}
	c.cond.Broadcast()
}

// flowLocked is this side's flow for the link.
func (l *outLink) flowLocked() *amqp.Flow {
	f := l.s.flowLocked()
	h, dc, credit := l.handle, l.deliveryCount, l.credit
	f.Handle, f.DeliveryCount, f.LinkCredit, f.Drain = &h, &dc, &credit, l.drain
	return f
}

// stopLocked ends the link: its pump returns, no more frames are sent.
func (l *outLink) stopLocked() {
	l.stopped, l.detached = true, true
	l.halt.Store(true)
	l.replies = nil
	if l.cancelRecv != nil {
		l.cancelRecv()
	}
	if l.cancel != nil {
		l.cancel()
	}
}

// pump delivers the link's messages against its credit until the link
// stops: it waits for credit, then for messages (a blocking receive: the
// engine wakes it, W5), and sends each one. A session link first accepts
// its session (W7).
func (l *outLink) pump(filter any) {
	c := l.s.c
	defer c.pumps.Done()
	defer close(l.done)
	defer l.closeReceiver()
	if l.kind == outSession && !l.acceptSession(filter) {
		return
	}
	var scratch []byte
	for {
		c.mu.Lock()
		for !l.stopped && l.credit == 0 {
			if l.drainOwed {
				l.answerDrainLocked()
			}
			if l.sess != nil && !c.srv.ns.Now().Before(l.sess.LockedUntil()) {
				break
			}
			l.waitLocked()
		}
		if l.stopped {
			c.mu.Unlock()
			return
		}
		if l.credit == 0 {
			c.mu.Unlock()
			l.fail(failf(minibus.ErrSessionLockLost, l.ent.String(), "session %q: its lock ended", l.sess.SessionID()))
			return
		}
		n, drain := l.credit, l.drain
		ctx, cancel := context.WithCancel(l.ctx)
		l.cancelRecv = cancel
		c.mu.Unlock()

		var opts *minibus.ReceiveMessagesOptions
		if drain {
			opts = &minibus.ReceiveMessagesOptions{NoWait: true}
		}
		msgs, err := l.recv.ReceiveMessages(ctx, int(min(n, maxReceive)), opts)
		c.mu.Lock()
		l.cancelRecv = nil
		c.mu.Unlock()
		interrupted := ctx.Err() != nil // before our own cancel below
		cancel()
		if err != nil {
			if l.ctx.Err() != nil {
				return
			}
			if interrupted {
				continue // less credit or a drain: look again
			}
			l.fail(err)
			return
		}
		for i, m := range msgs {
			if !l.deliver(m, &scratch) {
				l.release(msgs[i:])
				break
			}
		}
		c.mu.Lock()
		if l.drain && (drain || l.drainOwed) {
			l.answerDrainLocked()
		}
		c.mu.Unlock()
	}
}

// answerDrainLocked answers a drain (W5): the credit left is spent
// (delivery-count advanced, link-credit 0) and the flow says so at once.
func (l *outLink) answerDrainLocked() {
	l.drainOwed = false
	if l.detached {
		return
	}
	l.deliveryCount += l.credit
	l.credit = 0
	l.s.c.sendLocked(l.s.ch, l.flowLocked())
}

// waitLocked waits for a change of the link's credit or state; a session
// link also wakes when its session's lock ends on the namespace clock, so
// that it detaches then (W7, SS5) rather than at its next receive.
func (l *outLink) waitLocked() {
	c := l.s.c
	if l.sess == nil {
		c.cond.Wait()
		return
	}
	d := l.sess.LockedUntil().Sub(c.srv.ns.Now())
	t := c.srv.ns.Clock().AfterFunc(d, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	c.cond.Wait()
	t.Stop()
}

// deliver sends one message in as many transfer frames as the peer's
// max-frame-size needs, within the session's window (W1, W5). It returns
// false, having sent nothing the peer can use, when the link stopped or has
// no credit left for the message: the caller releases it. A
// receive-and-delete link receives under peek-lock and completes each
// message as it sends it, so that a message the link cannot send goes back
// to the entity instead of being lost (W5, L15): the completion happens
// under the connection's lock, which a durable namespace's sync then holds
// too.
func (l *outLink) deliver(m *minibus.ReceivedMessage, scratch *[]byte) bool {
	s := l.s
	c := s.c
	payload, err := appendDelivery((*scratch)[:0], m, !l.presettled, false)
	if err != nil {
		c.log.Error("minibus server: cannot encode a message", "link", l.name, "sequence-number", m.SequenceNumber, "error", err)
		return false
	}
	*scratch = payload
	if !c.waitWriteSpace(&l.halt) {
		return false
	}
	c.mu.Lock()
	if l.detached || l.credit == 0 {
		c.mu.Unlock()
		return false
	}
	if l.presettled {
		if err := l.recv.CompleteMessage(c.ctx, m, nil); err != nil {
			c.mu.Unlock()
			c.log.Debug("minibus server: a receive-and-delete message not removed", "link", l.name, "sequence-number", m.SequenceNumber, "error", err)
			return false
		}
	}
	l.xid = s.nextDeliveryID
	s.nextDeliveryID++
	l.credit--
	l.deliveryCount++
	l.xsettled = l.presettled
	tag := l.xtag[:]
	if l.presettled {
		// No lock (L7): an 8-byte tag (the sequence number), which no SDK
		// reads as a lock token (they take one from a 16-byte tag only).
		binary.BigEndian.PutUint64(l.xtag[:8], uint64(m.SequenceNumber))
		tag = l.xtag[:8]
	} else {
		l.xtag = deliveryTag(m.LockToken)
		s.unsettled[l.xid] = &delivery{link: l, msg: m}
	}
	t := &l.xfer
	*t = amqp.Transfer{Handle: l.handle, DeliveryID: &l.xid, DeliveryTag: tag, MessageFormat: &l.xformat, Settled: &l.xsettled}
	chunk := int(c.maxOut) - transferOverhead
	for off := 0; ; {
		for s.remoteIncoming == 0 && !l.stopped {
			c.cond.Wait()
		}
		if l.stopped {
			// The peer has part of it at most: a locked message goes back;
			// a receive-and-delete one is gone with its link.
			delete(s.unsettled, l.xid)
			t.Payload = nil
			c.mu.Unlock()
			return l.presettled
		}
		n := min(len(payload)-off, chunk)
		t.Payload, t.More = payload[off:off+n], off+n < len(payload)
		c.wmu.Lock()
		c.appendLocked(amqp.FrameAMQP, s.ch, t)
		c.wakeLocked()
		c.wmu.Unlock()
		s.nextOutgoingID++
		s.remoteIncoming--
		off += n
		if !t.More {
			break
		}
		t.DeliveryID, t.DeliveryTag, t.MessageFormat, t.Settled = nil, nil, nil, nil
	}
	t.Payload = nil
	c.mu.Unlock()
	return true
}

// release gives back messages a pump took and could not deliver, without
// counting a delivery (SEMANTICS L15).
func (l *outLink) release(msgs []*minibus.ReceivedMessage) {
	for _, m := range msgs {
		if err := l.recv.ReleaseMessage(context.Background(), m, nil); err != nil {
			l.s.c.log.Debug("minibus server: release", "link", l.name, "sequence-number", m.SequenceNumber, "error", err)
		}
	}
}

// fail detaches the link because its receive failed: the entity was
// deleted, disabled, the session lock lost, the namespace closed.
func (l *outLink) fail(err error) {
	c := l.s.c
	e := linkError(err)
	if errors.Is(err, minibus.ErrClosed) {
		e = &amqp.Error{Condition: "amqp:link:detach-forced", Description: err.Error()}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.detached {
		return
	}
	l.detached = true
	c.log.Debug("minibus server: detaching a link", "link", l.name, "condition", string(e.Condition), "description", e.Description)
	c.sendLocked(l.s.ch, &amqp.Detach{Handle: l.handle, Closed: true, Error: e})
}

// closeReceiver closes the link's receiver when its pump returns: a plain
// receiver's locks stay (SEMANTICS L11, W6), a session receiver releases
// its session (SS5).
func (l *outLink) closeReceiver() {
	c := l.s.c
	c.mu.Lock()
	if c.byName[l.name] == l {
		delete(c.byName, l.name)
	}
	if l.held != "" && c.held[l.held] == l {
		delete(c.held, l.held)
	}
	r := l.recv
	c.mu.Unlock()
	if r != nil {
		r.Close(context.Background())
	}
}
