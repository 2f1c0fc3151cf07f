package server

import (
	"fmt"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
)

const (
	// incomingWindow is the session window this side grants: how many
	// transfer frames the peer may send before it hears from this side
	// again. It is topped up when half is used.
	incomingWindow = 1 << 20
	// outgoingWindow is what this side advertises as its own outgoing
	// window (informational in AMQP 1.0).
	outgoingWindow = 1<<31 - 1
	// handleMax: no limit on links but memory (W1).
	handleMax = 1<<32 - 1
)

// sessionError ends one session with its AMQP error; the connection
// stays.
type sessionError struct{ e *amqp.Error }

func (e sessionError) Error() string { return string(e.e.Condition) + ": " + e.e.Description }

func sessionErrorf(cond amqp.Symbol, format string, args ...any) error {
	return sessionError{&amqp.Error{Condition: cond, Description: fmt.Sprintf(format, args...)}}
}

// session is one AMQP session of a connection. The peer's handles name its
// links; this side answers every attach with the same handle number.
type session struct {
	c  *conn
	ch uint16

	// Reader goroutine only.
	in      map[uint32]*inLink  // links the peer sends on, by handle
	out     map[uint32]*outLink // links this side sends on, by handle
	refused map[uint32]bool     // handles whose attach this side refused, until the peer's detach
	endSent bool                // this side ended the session with an error: only the peer's end matters now

	// Under c.mu: the session's windows (AMQP 1.0 part 2, 2.5.6) and this
	// side's unsettled deliveries.
	nextIncomingID uint32 // the transfer-id the peer sends next
	incoming       uint32 // how many more transfers the peer may send
	nextOutgoingID uint32 // the transfer-id of this side's next transfer
	remoteIncoming uint32 // how many more transfers the peer takes
	nextDeliveryID uint32
	unsettled      map[uint32]*delivery // this side's deliveries not yet settled by the peer, by delivery-id
}

// delivery is a message this side delivered under peek-lock and the peer
// has not settled.
type delivery struct {
	link *outLink
	msg  *minibus.ReceivedMessage
}

func newSession(c *conn, ch uint16, b *amqp.Begin) *session {
	return &session{
		c:              c,
		ch:             ch,
		in:             map[uint32]*inLink{},
		out:            map[uint32]*outLink{},
		refused:        map[uint32]bool{},
		nextIncomingID: b.NextOutgoingID,
		incoming:       c.srv.flow.window,
		remoteIncoming: b.IncomingWindow,
		unsettled:      map[uint32]*delivery{},
	}
}

// handle acts on one frame of the session. A sessionError ends the session;
// a connError the connection.
func (s *session) handle(body amqp.Performative) error {
	if s.endSent {
		if _, ok := body.(*amqp.End); ok {
			delete(s.c.sessions, s.ch)
		}
		return nil
	}
	var err error
	switch b := body.(type) {
	case *amqp.Attach:
		err = s.onAttach(b)
	case *amqp.Flow:
		err = s.onFlow(b)
	case *amqp.Transfer:
		err = s.onTransfer(b)
	case *amqp.Disposition:
		err = s.onDisposition(b)
	case *amqp.Detach:
		err = s.onDetach(b)
	case *amqp.End:
		s.onEnd(b)
	default:
		err = connErrorf("amqp:not-allowed", "%T inside a session", body)
	}
	if se, ok := err.(sessionError); ok {
		s.c.log.Warn("minibus server: ending a session on a protocol error", "channel", s.ch, "error", se.Error())
		s.end(se.e)
		return nil
	}
	return err
}

// end ends the session from this side with e.
func (s *session) end(e *amqp.Error) {
	s.c.mu.Lock()
	s.endLinksLocked()
	s.c.sendLocked(s.ch, &amqp.End{Error: e})
	s.c.cond.Broadcast()
	s.c.mu.Unlock()
	s.endSent = true
}

// onEnd answers the peer's end: every link of the session ends with it.
func (s *session) onEnd(b *amqp.End) {
	if b.Error != nil {
		s.c.log.Debug("minibus server: the peer ended a session with an error", "channel", s.ch, "condition", string(b.Error.Condition), "description", b.Error.Description)
	}
	c := s.c
	c.mu.Lock()
	pumps := s.pumpsLocked()
	s.endLinksLocked()
	c.cond.Broadcast()
	c.mu.Unlock()
	c.wspace.Broadcast()
	waitPumps(pumps) // sessions released before the end is answered (SS5)
	c.mu.Lock()
	c.sendLocked(s.ch, &amqp.End{})
	c.mu.Unlock()
	delete(c.sessions, s.ch)
}

// pumpsLocked lists the done channels of the session's pumps.
func (s *session) pumpsLocked() []chan struct{} {
	var done []chan struct{}
	for _, l := range s.out {
		if l.done != nil {
			done = append(done, l.done)
		}
	}
	return done
}

// waitPumps waits until each pump has returned and closed its receiver.
func waitPumps(done []chan struct{}) {
	for _, d := range done {
		<-d
	}
}

// endLinksLocked stops every link of the session, without detach frames
// (the session's end, or the connection's, says it all).
func (s *session) endLinksLocked() {
	for h, l := range s.out {
		l.stopLocked()
		delete(s.out, h)
	}
	for h, l := range s.in {
		l.stopLocked()
		delete(s.in, h)
	}
	clear(s.unsettled)
}

// onFlow updates the session window and, with a handle, the link's credit.
func (s *session) onFlow(f *amqp.Flow) error {
	c := s.c
	c.mu.Lock()
	next := uint32(0)
	if f.NextIncomingID != nil {
		next = *f.NextIncomingID
	}
	s.remoteIncoming = next + f.IncomingWindow - s.nextOutgoingID
	s.flushRepliesLocked()
	c.cond.Broadcast()
	if f.Handle == nil {
		if f.Echo {
			c.sendLocked(s.ch, s.flowLocked())
		}
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	h := *f.Handle
	if l := s.out[h]; l != nil {
		l.onFlow(f)
		return nil
	}
	if l := s.in[h]; l != nil {
		l.onFlow(f)
		return nil
	}
	if s.refused[h] {
		return nil
	}
	return sessionErrorf("amqp:session:unattached-handle", "flow for handle %d, which is not attached", h)
}

// flowLocked is a flow frame with this session's window state only.
func (s *session) flowLocked() *amqp.Flow {
	next := s.nextIncomingID
	return &amqp.Flow{
		NextIncomingID: &next,
		IncomingWindow: s.incoming,
		NextOutgoingID: s.nextOutgoingID,
		OutgoingWindow: outgoingWindow,
	}
}

// onTransfer counts the transfer against the session window, then gives it
// to its link.
func (s *session) onTransfer(t *amqp.Transfer) error {
	c := s.c
	c.mu.Lock()
	if s.incoming == 0 {
		c.mu.Unlock()
		return sessionErrorf("amqp:session:window-violation", "a transfer beyond the session's incoming window")
	}
	s.nextIncomingID++
	s.incoming--
	if full := c.srv.flow.window; s.incoming < full/2 {
		s.incoming = full
		c.sendLocked(s.ch, s.flowLocked())
	}
	c.mu.Unlock()
	l := s.in[t.Handle]
	if l == nil {
		if s.refused[t.Handle] {
			return nil
		}
		if s.out[t.Handle] != nil {
			return sessionErrorf("amqp:not-allowed", "a transfer on handle %d, a link on which this side sends", t.Handle)
		}
		return sessionErrorf("amqp:session:unattached-handle", "a transfer on handle %d, which is not attached", t.Handle)
	}
	return l.onTransfer(t)
}

// onDisposition settles this side's deliveries the peer settled (W6), and
// ignores the peer's dispositions of its own transfers (this side settles
// those itself).
func (s *session) onDisposition(d *amqp.Disposition) error {
	if d.Role != amqp.RoleReceiver {
		return nil // this side settles every transfer it receives at once
	}
	last := d.First
	if d.Last != nil {
		last = *d.Last
	}
	if last-d.First > 1<<20 {
		return sessionErrorf("amqp:invalid-field", "disposition of deliveries %d to %d: too many at once", d.First, last)
	}
	for id := d.First; ; id++ {
		s.settle(id, d.Settled, d.State)
		if id == last {
			break
		}
	}
	return nil
}

// settle applies the peer's outcome for delivery id and, when the peer
// waits for it (rcv-settle-mode second), answers with this side's settled
// disposition (W6).
func (s *session) settle(id uint32, settled bool, state amqp.DeliveryState) {
	c := s.c
	c.mu.Lock()
	d := s.unsettled[id]
	if d != nil && isTerminal(state) {
		delete(s.unsettled, id)
	}
	c.mu.Unlock()
	if d == nil || !isTerminal(state) {
		return
	}
	reply := d.link.settle(d.msg, state)
	if settled {
		return
	}
	c.mu.Lock()
	c.sendLocked(s.ch, &amqp.Disposition{Role: amqp.RoleSender, First: id, Settled: true, State: reply})
	c.mu.Unlock()
}

// isTerminal tells an outcome from a non-terminal state (received) or none.
func isTerminal(st amqp.DeliveryState) bool {
	switch st.(type) {
	case *amqp.Accepted, *amqp.Rejected, *amqp.Released, *amqp.Modified:
		return true
	}
	return false
}

// onAttach attaches a link: the peer's sender is a link this side receives
// on (link_in.go), the peer's receiver one this side sends on
// (link_out.go).
func (s *session) onAttach(a *amqp.Attach) error {
	if s.in[a.Handle] != nil || s.out[a.Handle] != nil || s.refused[a.Handle] {
		return sessionErrorf("amqp:session:handle-in-use", "attach of %q on handle %d, which is in use", a.Name, a.Handle)
	}
	if a.Role == amqp.RoleSender {
		s.attachIn(a)
	} else {
		s.attachOut(a)
	}
	return nil
}

// onDetach detaches a link at the peer's request, or completes a detach
// this side began.
func (s *session) onDetach(d *amqp.Detach) error {
	c := s.c
	if d.Error != nil {
		c.log.Debug("minibus server: the peer detached a link with an error", "handle", d.Handle, "condition", string(d.Error.Condition), "description", d.Error.Description)
	}
	if l := s.in[d.Handle]; l != nil {
		delete(s.in, d.Handle)
		c.mu.Lock()
		answered := l.detached
		l.stopLocked()
		if !answered {
			c.sendLocked(s.ch, &amqp.Detach{Handle: d.Handle, Closed: d.Closed})
		}
		c.mu.Unlock()
		return nil
	}
	if l := s.out[d.Handle]; l != nil {
		delete(s.out, d.Handle)
		c.mu.Lock()
		answered := l.detached
		l.stopLocked()
		for id, del := range s.unsettled {
			if del.link == l {
				delete(s.unsettled, id) // its lock stays until LockedUntil (W6)
			}
		}
		c.cond.Broadcast()
		c.mu.Unlock()
		c.wspace.Broadcast()
		if l.done != nil {
			// A session link's session is released before the detach is
			// answered, so that the client can accept it again at once
			// (SS5).
			<-l.done
		}
		if !answered {
			c.mu.Lock()
			c.sendLocked(s.ch, &amqp.Detach{Handle: d.Handle, Closed: d.Closed})
			c.mu.Unlock()
		}
		return nil
	}
	if s.refused[d.Handle] {
		delete(s.refused, d.Handle)
		return nil
	}
	return sessionErrorf("amqp:session:unattached-handle", "detach of handle %d, which is not attached", d.Handle)
}

// refuseAttach answers an attach this side cannot serve: an attach with a
// null terminus, then a detach with the error (W2, W5).
func (s *session) refuseAttach(a *amqp.Attach, e *amqp.Error) {
	reply := &amqp.Attach{
		Name:          a.Name,
		Handle:        a.Handle,
		Role:          !a.Role,
		SndSettleMode: a.SndSettleMode,
		RcvSettleMode: a.RcvSettleMode,
	}
	if a.Role == amqp.RoleSender {
		reply.Source = a.Source // the peer's sender: a null target
	} else {
		reply.Target = a.Target // the peer's receiver: a null source
		zero := uint32(0)
		reply.InitialDeliveryCount = &zero
	}
	c := s.c
	c.log.Debug("minibus server: attach refused", "link", a.Name, "condition", string(e.Condition), "description", e.Description)
	s.refused[a.Handle] = true
	c.mu.Lock()
	c.sendLocked(s.ch, reply)
	c.sendLocked(s.ch, &amqp.Detach{Handle: a.Handle, Closed: true, Error: e})
	c.mu.Unlock()
}
