package server

import (
	"fmt"
	"strings"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
)

// linkCredit is the credit this side gives a sending peer, topped up when
// half is used.
const linkCredit = 1000

// inLink is a link the peer sends on: to a queue or topic (W4), or
// requests to $cbs or an entity's $management node (W3, W8). Its state
// belongs to the reader goroutine but for detached, under conn.mu.
type inLink struct {
	s       *session
	name    string
	handle  uint32
	node    nodeKind
	ent     entity      // nodeEntity
	mgmt    *management // nodeManagement
	key     string      // the node's key, for request links (reply routing)
	maxSize uint64      // the largest message accepted; 0: no limit

	deliveryCount uint32 // the peer's delivery-count, as this side counts it
	credit        uint32 // what is left of this side's credit
	cur           *inDelivery

	detached bool // this side sent its detach (under conn.mu)
}

// inDelivery is a delivery whose transfer frames are still arriving.
type inDelivery struct {
	id       uint32
	settled  bool
	format   uint32
	buf      []byte // the payload so far
	size     uint64
	tooLarge bool
}

// attachIn answers the peer's sender attach.
func (s *session) attachIn(a *amqp.Attach) {
	c := s.c
	if a.Target == nil {
		s.refuseAttach(a, &amqp.Error{Condition: "amqp:invalid-field", Description: fmt.Sprintf("link %q: a sender needs a target", a.Name)})
		return
	}
	addr, err := parseAddress(a.Target.Address)
	if err != nil {
		s.refuseAttach(a, &amqp.Error{Condition: "amqp:not-found", Description: err.Error()})
		return
	}
	l := &inLink{s: s, name: a.Name, handle: a.Handle, node: addr.kind, credit: c.srv.flow.credit}
	if a.InitialDeliveryCount != nil {
		l.deliveryCount = *a.InitialDeliveryCount
	}
	switch addr.kind {
	case nodeCBS:
		l.key = nodeKey(addr)
	case nodeManagement:
		if _, err := addr.resolve(c.srv.ns); err != nil {
			s.refuseAttach(a, linkError(err))
			return
		}
		l.key = nodeKey(addr)
		l.mgmt = c.mgmt[l.key]
		if l.mgmt == nil {
			l.mgmt = newManagement(c.srv.ns, addr)
			c.mgmt[l.key] = l.mgmt
		}
	default:
		ent, err := addr.resolve(c.srv.ns)
		if err != nil {
			s.refuseAttach(a, linkError(err))
			return
		}
		if !ent.canSend() || addr.subQueue != minibus.SubQueueNone {
			s.refuseAttach(a, &amqp.Error{Condition: "amqp:not-allowed", Description: fmt.Sprintf("%s cannot be sent to: send to its queue or topic", ent)})
			return
		}
		l.ent = ent
		l.maxSize = ent.maxMessageSize()
	}
	s.in[a.Handle] = l
	dc := l.deliveryCount
	credit := c.srv.flow.credit
	c.mu.Lock()
	c.sendLocked(s.ch, &amqp.Attach{
		Name:           a.Name,
		Handle:         a.Handle,
		Role:           amqp.RoleReceiver,
		SndSettleMode:  a.SndSettleMode,
		RcvSettleMode:  a.RcvSettleMode,
		Source:         a.Source,
		Target:         a.Target,
		MaxMessageSize: l.maxSize,
	})
	f := s.flowLocked()
	f.Handle, f.DeliveryCount, f.LinkCredit = &a.Handle, &dc, &credit
	c.sendLocked(s.ch, f)
	c.mu.Unlock()
	c.log.Debug("minibus server: sender attached", "link", a.Name, "target", a.Target.Address)
}

// nodeKey names a request/response node on a connection: "$cbs", or an
// entity's path and sub-queue with "/$management", case-insensitively.
func nodeKey(a address) string {
	if a.kind == nodeCBS {
		return "$cbs"
	}
	return strings.ToLower(a.path) + "|" + a.subQueue.String() + "/$management"
}

// onFlow answers a sender's flow only when it asks for an echo.
func (l *inLink) onFlow(f *amqp.Flow) {
	if !f.Echo {
		return
	}
	l.sendFlow()
}

// sendFlow restates this side's credit for the link.
func (l *inLink) sendFlow() {
	c := l.s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.detached {
		return
	}
	dc, credit, h := l.deliveryCount, l.credit, l.handle
	f := l.s.flowLocked()
	f.Handle, f.DeliveryCount, f.LinkCredit = &h, &dc, &credit
	c.sendLocked(l.s.ch, f)
}

// stopLocked ends the link's traffic (a detach or the session's end).
func (l *inLink) stopLocked() {
	l.detached = true
	l.cur = nil
}

// detach detaches the link from this side with e; the link stays
// in the session's table until the peer's detach.
func (l *inLink) detach(e *amqp.Error) {
	c := l.s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.detached {
		return
	}
	l.detached = true
	l.cur = nil
	c.log.Warn("minibus server: detaching a link", "link", l.name, "condition", string(e.Condition), "description", e.Description)
	c.sendLocked(l.s.ch, &amqp.Detach{Handle: l.handle, Closed: true, Error: e})
}

// onTransfer takes one transfer frame: the first of a delivery counts
// against the link's credit; the last one completes it (multi-frame
// transfers, W1; a message over the link's max-message-size is not
// buffered and is rejected, W4).
func (l *inLink) onTransfer(t *amqp.Transfer) error {
	if l.detached {
		return nil
	}
	d := l.cur
	if d == nil {
		if t.DeliveryID == nil {
			return sessionErrorf("amqp:invalid-field", "link %q: the first transfer of a delivery has no delivery-id", l.name)
		}
		if l.credit == 0 {
			l.detach(&amqp.Error{Condition: "amqp:link:transfer-limit-exceeded", Description: fmt.Sprintf("link %q: a transfer without link credit", l.name)})
			return nil
		}
		l.credit--
		l.deliveryCount++
		d = &inDelivery{id: *t.DeliveryID, settled: t.Settled != nil && *t.Settled}
		if t.MessageFormat != nil {
			d.format = *t.MessageFormat
		}
		if !t.More && !t.Aborted {
			// One frame, the usual case: no copy.
			d.size = uint64(len(t.Payload))
			d.tooLarge = l.maxSize > 0 && d.size > l.maxSize
			l.complete(d, t.Payload)
			return nil
		}
		l.cur = d
	}
	if t.Aborted {
		l.cur = nil // W1 "Bad input": an aborted delivery is not enqueued
		l.topUp()
		return nil
	}
	d.size += uint64(len(t.Payload))
	switch {
	case d.tooLarge:
	case l.maxSize > 0 && d.size > l.maxSize:
		d.tooLarge, d.buf = true, nil
	default:
		d.buf = append(d.buf, t.Payload...)
	}
	if t.More {
		return nil
	}
	l.cur = nil
	l.complete(d, d.buf)
	return nil
}

// complete acts on a whole delivery and settles it (W4): an entity's
// messages are sent, a request is answered on its reply link (W3).
func (l *inLink) complete(d *inDelivery, payload []byte) {
	var state amqp.DeliveryState = &amqp.Accepted{}
	switch l.node {
	case nodeEntity:
		err := l.send(d, payload)
		if err != nil {
			state = &amqp.Rejected{Error: linkError(err)}
		}
	default:
		l.request(payload)
	}
	if !d.settled {
		c := l.s.c
		c.mu.Lock()
		if !l.detached {
			c.sendLocked(l.s.ch, &amqp.Disposition{Role: amqp.RoleReceiver, First: d.id, Settled: true, State: state})
		}
		c.mu.Unlock()
	}
	l.topUp()
}

// send enqueues a delivery's message or batch (W4): all or nothing.
func (l *inLink) send(d *inDelivery, payload []byte) error {
	if d.tooLarge {
		return fmt.Errorf("minibus server: %s: a message of %d bytes is over the link's max-message-size of %d bytes: %w",
			l.ent, d.size, l.maxSize, minibus.ErrMessageTooLarge)
	}
	msgs, err := incoming(payload, d.format)
	if err != nil {
		return err
	}
	return l.ent.sendMessages(l.s.c.ctx, msgs)
}

// request answers one $cbs or $management request on the requester's
// reply link (W3).
func (l *inLink) request(payload []byte) {
	c := l.s.c
	var req amqp.Message
	if err := req.UnmarshalBinary(payload); err != nil {
		// Without its message-id no reply can be correlated: the
		// requester's own timeout ends its wait.
		c.log.Warn("minibus server: an undecodable request", "link", l.name, "error", err)
		return
	}
	var reply *amqp.Message
	if l.node == nodeCBS {
		reply = handleCBS(c.srv.ns, &req)
	} else {
		reply = l.mgmt.handle(c.ctx, c, &req)
	}
	replyTo := ""
	if req.Properties != nil {
		replyTo = req.Properties.ReplyTo
	}
	l.s.reply(l.key, replyTo, reply)
}

// topUp gives the peer its credit back once half is used.
func (l *inLink) topUp() {
	full := l.s.c.srv.flow.credit
	if l.credit >= full/2 {
		return
	}
	l.credit = full
	l.sendFlow()
}

// reply sends a request's reply on the reply link W3 names: the one whose
// target is reply-to, else whose name is, else the one reply link of the
// node on this session. A reply no link can take is dropped and logged.
func (s *session) reply(key, replyTo string, reply *amqp.Message) {
	c := s.c
	var only *outLink
	n := 0
	match := func(l *outLink) bool {
		return l.kind == outReply && l.node == key && replyTo != "" && (l.target == replyTo || l.name == replyTo)
	}
	for _, l := range s.out {
		if match(l) {
			l.sendReply(reply)
			return
		}
		if l.kind == outReply && l.node == key {
			only, n = l, n+1
		}
	}
	for _, other := range c.sessions {
		if other == s {
			continue
		}
		for _, l := range other.out {
			if match(l) {
				l.sendReply(reply)
				return
			}
		}
	}
	if n == 1 {
		only.sendReply(reply)
		return
	}
	c.log.Warn("minibus server: no reply link for a request", "node", key, "reply-to", replyTo, "candidates", n)
}
