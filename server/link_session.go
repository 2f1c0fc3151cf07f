package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
)

// acceptSession accepts the session the filter names, or with a null value
// the next one within com.microsoft:timeout, then answers the attach with
// the session id in the form the peer sent it and the session's lock end
// (W7). A session that cannot be had: a null source and a detach.
func (l *outLink) acceptSession(filter any) bool {
	c := l.s.c
	id, described := filterSessionID(filter)
	var sr *minibus.SessionReceiver
	var err error
	if id != noSessionFilterID {
		sr, err = l.ent.acceptSession(l.ctx, id, minibus.ReceiveModePeekLock)
	} else {
		wait := acceptTimeout
		if v, ok := l.attach.Properties.GetSymbol(string(timeoutProperty)); ok {
			if ms, ok := toUint64(v); ok {
				wait = time.Duration(ms) * time.Millisecond
			}
		}
		ctx, cancel := context.WithTimeout(l.ctx, wait)
		sr, err = l.ent.acceptNextSession(ctx, minibus.ReceiveModePeekLock)
		cancel()
		if err != nil && l.ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = timeoutError{fmt.Sprintf("%s: no session was available within %v", l.ent, wait)}
		}
	}
	if err != nil {
		if l.ctx.Err() != nil {
			return false
		}
		l.refuseSession(err)
		return false
	}
	src := *l.attach.Source
	src.Filter = withSessionID(src.Filter, sr.SessionID(), described)
	ticks := ticksFromTime(sr.LockedUntil())
	props := amqp.Map{{Key: lockedUntilUTC, Value: ticks}}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.stopped {
		sr.Close(context.Background())
		return false
	}
	l.recv, l.sess = sr, sr
	l.held = heldKey(l.path, sr.SessionID())
	c.held[l.held] = l
	c.byName[l.name] = l
	c.sendLocked(l.s.ch, l.attachReply(&src, props))
	c.log.Debug("minibus server: session accepted", "link", l.name, "session", sr.SessionID())
	return true
}

// refuseSession answers a session link's attach with a null source, then
// detaches it with the error (W7).
func (l *outLink) refuseSession(err error) {
	c := l.s.c
	e := linkError(err)
	var te timeoutError
	if errors.As(err, &te) {
		e = &amqp.Error{Condition: "com.microsoft:timeout", Description: te.msg}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.stopped {
		return
	}
	l.detached = true
	c.sendLocked(l.s.ch, l.attachReply(nil, nil))
	c.sendLocked(l.s.ch, &amqp.Detach{Handle: l.handle, Closed: true, Error: e})
	c.log.Debug("minibus server: session not accepted", "link", l.name, "condition", string(e.Condition), "description", e.Description)
}

// timeoutError is an accept that found no session in time (W7).
type timeoutError struct{ msg string }

func (e timeoutError) Error() string { return e.msg }

// filterSessionID reads a session filter's value: plain or described, a
// string or null (W7).
func filterSessionID(v any) (id string, described *amqp.Described) {
	if d, ok := v.(*amqp.Described); ok {
		described, v = d, d.Value
	} else if d, ok := v.(amqp.Described); ok {
		described, v = &d, d.Value
	}
	id, _ = v.(string)
	return id, described
}

// withSessionID is the filter set echoed in the attach: the session filter
// carries the accepted session id, plain or described as the peer sent it.
func withSessionID(f amqp.Map, id string, described *amqp.Described) amqp.Map {
	out := make(amqp.Map, 0, len(f))
	for _, kv := range f {
		if k, _ := keyString(kv.Key); k == string(sessionFilter) {
			var v any = id
			if described != nil {
				v = &amqp.Described{Descriptor: described.Descriptor, Value: id}
			}
			kv.Value = v
		}
		out = append(out, kv)
	}
	return out
}

// heldKey names a held session on a connection: entity path and session
// id, the path case-insensitively (V1).
func heldKey(path, id string) string { return strings.ToLower(path) + "\x00" + id }

func toUint64(v any) (uint64, bool) {
	switch v := v.(type) {
	case uint8:
		return uint64(v), true
	case uint16:
		return uint64(v), true
	case uint32:
		return uint64(v), true
	case uint64:
		return v, true
	case int8:
		return uint64(max(v, 0)), true
	case int16:
		return uint64(max(v, 0)), true
	case int32:
		return uint64(max(v, 0)), true
	case int64:
		return uint64(max(v, 0)), true
	}
	return 0, false
}

// receiverOf gives the receiver behind the link named name on this
// connection, for a $management request's associated-link-name (W8).
func (c *conn) receiverOf(name string) (receiver, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.byName[name]
	if l == nil || l.recv == nil {
		return nil, false
	}
	return l.recv, true
}

// sessionOf gives the session receiver this connection holds for a
// session of an entity (W8).
func (c *conn) sessionOf(path, id string) (*minibus.SessionReceiver, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.held[heldKey(path, id)]
	if l == nil || l.sess == nil {
		return nil, false
	}
	return l.sess, true
}
