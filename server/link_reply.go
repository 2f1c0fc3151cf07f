package server

import (
	"encoding/binary"

	"github.com/minibus-go/minibus/internal/amqp"
)

// sendReply sends a $cbs or $management reply on this reply link (W3), or
// keeps it until the peer gives credit and window. Reader goroutine only.
func (l *outLink) sendReply(msg *amqp.Message) {
	c := l.s.c
	payload, err := msg.AppendBinary(nil)
	if err != nil {
		c.log.Error("minibus server: cannot encode a reply", "link", l.name, "error", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.detached {
		return
	}
	if len(l.replies) >= maxQueuedReplies {
		c.log.Warn("minibus server: a reply dropped: the requester gives no credit", "link", l.name)
		return
	}
	l.replies = append(l.replies, payload)
	l.flushRepliesLocked()
}

// flushRepliesLocked sends the queued replies the link's credit and the
// session's window allow, without waiting (the reader must not wait for
// the window it alone can reopen).
func (l *outLink) flushRepliesLocked() {
	s, c := l.s, l.s.c
	chunk := int(c.maxOut) - transferOverhead
	for len(l.replies) > 0 && l.credit > 0 && !l.detached {
		payload := l.replies[0]
		frames := uint32((len(payload) + chunk - 1) / chunk)
		if frames == 0 {
			frames = 1
		}
		if s.remoteIncoming < frames {
			return
		}
		l.replies = l.replies[1:]
		id, format := s.nextDeliveryID, uint32(0)
		s.nextDeliveryID++
		l.credit--
		l.deliveryCount++
		settled := l.attach.SndSettleMode != amqp.SndUnsettled
		var tag [8]byte
		binary.BigEndian.PutUint32(tag[4:], id)
		t := &amqp.Transfer{Handle: l.handle, DeliveryID: &id, DeliveryTag: tag[:], MessageFormat: &format, Settled: &settled}
		for off := 0; ; {
			n := min(len(payload)-off, chunk)
			t.Payload, t.More = payload[off:off+n], off+n < len(payload)
			c.sendLocked(s.ch, t)
			s.nextOutgoingID++
			s.remoteIncoming--
			off += n
			if !t.More {
				break
			}
			t.DeliveryID, t.DeliveryTag, t.MessageFormat, t.Settled = nil, nil, nil, nil
		}
	}
}

// flushRepliesLocked sends what the session's reply links can send now.
func (s *session) flushRepliesLocked() {
	for _, l := range s.out {
		if l.kind == outReply && len(l.replies) > 0 {
			l.flushRepliesLocked()
		}
	}
}
