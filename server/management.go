package server

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
)

// The $management operations (SEMANTICS W8), named as the SDKs send them
// in the application property "operation".
const (
	opRenewLock            = "com.microsoft:renew-lock"
	opReceiveBySequence    = "com.microsoft:receive-by-sequence-number"
	opPeek                 = "com.microsoft:peek-message"
	opUpdateDisposition    = "com.microsoft:update-disposition"
	opSchedule             = "com.microsoft:schedule-message"
	opCancelScheduled      = "com.microsoft:cancel-scheduled-message"
	opRenewSessionLock     = "com.microsoft:renew-session-lock"
	opGetSessionState      = "com.microsoft:get-session-state"
	opSetSessionState      = "com.microsoft:set-session-state"
	opGetMessageSessions   = "com.microsoft:get-message-sessions"
	opEnumerateRules       = "com.microsoft:enumerate-rules"
	opAddRule              = "com.microsoft:add-rule"
	opRemoveRule           = "com.microsoft:remove-rule"
	propOperation          = "operation"
	propAssociatedLinkName = "associated-link-name"
)

// The keys of request and reply bodies (SEMANTICS W8), as the SDKs spell
// them.
const (
	keyLockTokens           = "lock-tokens"
	keyLockToken            = "lock-token"
	keyExpirations          = "expirations"
	keyExpiration           = "expiration"
	keySequenceNumbers      = "sequence-numbers"
	keyReceiverSettleMode   = "receiver-settle-mode"
	keyMessages             = "messages"
	keyMessage              = "message"
	keyMessageID            = "message-id"
	keyPartitionKey         = "partition-key"
	keyFromSequenceNumber   = "from-sequence-number"
	keyMessageCount         = "message-count"
	keyOmitMessageBody      = "omit-message-body"
	keySessionID            = "session-id"
	keySessionState         = "session-state"
	keySessionsIDs          = "sessions-ids"
	keyLastUpdatedTime      = "last-updated-time"
	keySkip                 = "skip"
	keyTop                  = "top"
	keyDispositionStatus    = "disposition-status"
	keyDeadLetterReason     = "deadletter-reason"
	keyDeadLetterDesc       = "deadletter-description"
	keyPropertiesToModify   = "properties-to-modify"
	keyRules                = "rules"
	keyRuleName             = "rule-name"
	keyRuleDescription      = "rule-description"
	dispositionCompleted    = "completed"
	dispositionAbandoned    = "abandoned"
	dispositionSuspended    = "suspended"
	dispositionDeferred     = "defered" // sic: the SDKs' spelling
	dispositionDeferredWell = "deferred"
)

// mgmtLinks is what a $management node asks of its connection: the
// receivers behind the connection's links (SEMANTICS W8, L10).
type mgmtLinks interface {
	// receiverOf gives the receiver behind the link named by a request's
	// associated-link-name, if that link is attached on this connection.
	receiverOf(linkName string) (receiver, bool)
	// sessionOf gives the session receiver this connection holds for
	// (entity path, session id), if any.
	sessionOf(path, sessionID string) (*minibus.SessionReceiver, bool)
}

// management serves one <entity>/$management node on one connection
// (SEMANTICS W8). Requests that act on messages go through the receiver of
// the request's associated link, or the session receiver the connection
// holds for the request's session, or else through a receiver of the
// node's entity and sub-queue that the node opens on first use and closes
// in close (any receiver of the entity can settle or renew by lock token,
// SEMANTICS L10). A management is safe for concurrent use.
type management struct {
	ns   *minibus.Namespace
	addr address

	mu     sync.Mutex
	closed bool
	// lazy receivers of the node's entity and sub-queue, by receive mode
	peekLock, deleting *minibus.Receiver
}

// newManagement returns the node for address a (a management address).
func newManagement(ns *minibus.Namespace, a address) *management {
	return &management{ns: ns, addr: a}
}

// close closes the receivers the node opened; their locks stay (SEMANTICS
// L11). Requests handled after close answer as for a closed receiver.
func (m *management) close(ctx context.Context) {
	m.mu.Lock()
	rs := []*minibus.Receiver{m.peekLock, m.deleting}
	m.peekLock, m.deleting, m.closed = nil, nil, true
	m.mu.Unlock()
	for _, r := range rs {
		if r != nil {
			_ = r.Close(ctx)
		}
	}
}

// handle executes one request and returns its reply, never nil (SEMANTICS
// W3, W8): the correlation-id is the request's message-id (else its
// correlation-id) in the same AMQP type; the application properties carry
// status-code and statusCode (int32), status-description and
// statusDescription (string), and on an error error-condition (the symbol
// the error has on a link); the body is an amqp-value map. An unknown
// operation is 400 naming it; a missing or mistyped field 400 naming it.
// ctx bounds what blocks (none of the operations waits for messages).
func (m *management) handle(ctx context.Context, links mgmtLinks, req *amqp.Message) *amqp.Message {
	q, err := parseRequest(req, true)
	if err != nil {
		return rpcErrorReply(req, err)
	}
	var body amqp.Map
	status := int32(200)
	switch q.op {
	case opRenewLock:
		body, err = m.renewLock(ctx, links, q)
	case opReceiveBySequence:
		body, err = m.receiveBySequence(ctx, links, q)
	case opPeek:
		body, err = m.peek(ctx, links, q)
	case opUpdateDisposition:
		err = m.updateDisposition(ctx, links, q)
	case opSchedule:
		body, err = m.schedule(ctx, q)
	case opCancelScheduled:
		err = m.cancelScheduled(ctx, q)
	case opRenewSessionLock:
		body, err = m.renewSessionLock(ctx, links, q)
	case opGetSessionState:
		body, err = m.getSessionState(ctx, links, q)
	case opSetSessionState:
		err = m.setSessionState(ctx, links, q)
	case opGetMessageSessions:
		body, err = m.getMessageSessions(ctx, q)
	case opEnumerateRules:
		body, err = m.enumerateRules(q)
	case opAddRule:
		err = m.addRule(q)
	case opRemoveRule:
		err = m.removeRule(q)
	default:
		err = failf(minibus.ErrInvalidArgument, "operation "+quoteName(q.op), "unknown on %s", m.addr)
	}
	if err != nil {
		return rpcErrorReply(req, err)
	}
	if body == nil {
		// 204 for the operations that found nothing (SEMANTICS W8).
		switch q.op {
		case opReceiveBySequence, opPeek, opGetMessageSessions:
			status = 204
		}
	}
	return rpcReply(req, status, "", body)
}

// receiverFor picks the receiver a message operation acts through: the
// session receiver the connection holds for sessionID when one is named,
// else the receiver of the request's associated link when it is attached,
// else the node's own receiver of the entity in mode. On a session entity
// (not its dead-letter queues) without a session receiver it is
// ErrSessionLockLost: only the session's receiver reaches its messages.
func (m *management) receiverFor(links mgmtLinks, q mgmtRequest, sessionID string, mode minibus.ReceiveMode) (receiver, error) {
	if sessionID != "" {
		if links != nil {
			if sr, ok := links.sessionOf(m.addr.path, sessionID); ok && sr != nil {
				return sr, nil
			}
		}
		return nil, failf(minibus.ErrSessionLockLost, "session "+quoteName(sessionID)+" of "+quoteName(m.addr.path), "not held on this connection")
	}
	if q.assoc != "" && links != nil {
		if r, ok := links.receiverOf(q.assoc); ok && r != nil {
			return r, nil
		}
	}
	e, err := m.addr.resolve(m.ns)
	if err != nil {
		return nil, err
	}
	if e.requiresSession() && m.addr.subQueue == minibus.SubQueueNone {
		return nil, failf(minibus.ErrSessionLockLost, e.String(), "requires sessions and no session receiver of it is on this connection")
	}
	return m.ownReceiver(e, mode)
}

// ownReceiver returns the node's receiver of the entity in mode, opening it
// on first use.
func (m *management) ownReceiver(e entity, mode minibus.ReceiveMode) (*minibus.Receiver, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, failf(minibus.ErrClosed, m.addr.String(), "management node closed")
	}
	slot := &m.peekLock
	if mode == minibus.ReceiveModeReceiveAndDelete {
		slot = &m.deleting
	}
	if *slot == nil {
		r, err := e.newReceiver(mode, m.addr.subQueue)
		if err != nil {
			return nil, err
		}
		*slot = r
	}
	return *slot, nil
}

// withReceiver runs fn with the receiver receiverFor picks. When that is
// the node's own receiver and it reports its entity gone, the node drops
// it and runs fn once more with a receiver opened anew: the entity may
// have been deleted and created again since the receiver was opened (a
// call that fails has changed nothing, so trying again is safe).
func (m *management) withReceiver(links mgmtLinks, q mgmtRequest, sessionID string, mode minibus.ReceiveMode, fn func(r receiver) error) error {
	for try := 0; ; try++ {
		r, err := m.receiverFor(links, q, sessionID, mode)
		if err != nil {
			return err
		}
		err = fn(r)
		if try > 0 || !isEntityNotFound(err) || !m.forget(r) {
			return err
		}
	}
}

// forget drops and closes the node's receiver r, reporting whether r was
// one of the node's own.
func (m *management) forget(r receiver) bool {
	own, ok := r.(*minibus.Receiver)
	if !ok || own == nil {
		return false
	}
	m.mu.Lock()
	switch own {
	case m.peekLock:
		m.peekLock = nil
	case m.deleting:
		m.deleting = nil
	default:
		own = nil
	}
	m.mu.Unlock()
	if own == nil {
		return false
	}
	_ = own.Close(context.Background())
	return true
}

// renewLock renews message locks (L5): lock-tokens (uuid array) → 200
// expirations (timestamp array).
func (m *management) renewLock(ctx context.Context, links mgmtLinks, q mgmtRequest) (amqp.Map, error) {
	toks, err := q.uuids(keyLockTokens)
	if err != nil {
		return nil, err
	}
	exps := make([]time.Time, len(toks))
	err = m.withReceiver(links, q, "", minibus.ReceiveModePeekLock, func(r receiver) error {
		for i, tok := range toks {
			msg := &minibus.ReceivedMessage{LockToken: tok}
			if err := r.RenewMessageLock(ctx, msg, nil); err != nil {
				return err
			}
			exps[i] = msg.LockedUntil
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return amqp.Map{{Key: keyExpirations, Value: exps}}, nil
}

// receiveBySequence fetches deferred messages (L9): sequence-numbers (long
// array), receiver-settle-mode (uint: 1 peek-lock, the default, 0
// receive-and-delete), session-id → 200 messages, a list of maps
// {message: binary, lock-token: uuid} whose messages carry the lock token
// in the delivery annotation x-opt-lock-token too; 204 for none asked.
func (m *management) receiveBySequence(ctx context.Context, links mgmtLinks, q mgmtRequest) (amqp.Map, error) {
	seqs, err := q.int64s(keySequenceNumbers)
	if err != nil {
		return nil, err
	}
	mode := minibus.ReceiveModePeekLock
	if v, ok, err := q.integer(keyReceiverSettleMode, 0, 1); err != nil {
		return nil, err
	} else if ok && v == 0 {
		mode = minibus.ReceiveModeReceiveAndDelete
	}
	sid, err := q.str(keySessionID, false)
	if err != nil {
		return nil, err
	}
	if len(seqs) == 0 {
		return nil, nil
	}
	var msgs []*minibus.ReceivedMessage
	err = m.withReceiver(links, q, sid, mode, func(r receiver) (err error) {
		if msgs, err = r.ReceiveDeferredMessages(ctx, seqs, nil); err != nil || mode == minibus.ReceiveModePeekLock {
			return err
		}
		// A link's receiver locks even on a receive-and-delete link (the
		// server completes as it sends): what it locked here is removed
		// now, as receive-and-delete asks.
		for _, rm := range msgs {
			if rm.LockToken == ([16]byte{}) {
				continue
			}
			if err := r.CompleteMessage(ctx, rm, nil); err != nil {
				return err
			}
			rm.LockToken, rm.LockedUntil = [16]byte{}, time.Time{}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	list := make([]any, len(msgs))
	for i, rm := range msgs {
		b, err := appendDelivery(nil, rm, mode == minibus.ReceiveModePeekLock, true)
		if err != nil {
			return nil, err
		}
		entry := amqp.Map{{Key: keyMessage, Value: b}}
		if rm.LockToken != ([16]byte{}) {
			entry = append(entry, amqp.KV{Key: keyLockToken, Value: amqp.UUID(rm.LockToken)})
		}
		list[i] = entry
	}
	return amqp.Map{{Key: keyMessages, Value: list}}, nil
}

// peek peeks messages (L12): from-sequence-number (long), message-count
// (int), session-id, omit-message-body → 200 messages, a list of maps
// {message: binary}; 204 when there is none.
func (m *management) peek(ctx context.Context, links mgmtLinks, q mgmtRequest) (amqp.Map, error) {
	from, err := q.requiredInteger(keyFromSequenceNumber, math.MinInt64, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	count, err := q.requiredInteger(keyMessageCount, math.MinInt32, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	sid, err := q.str(keySessionID, false)
	if err != nil {
		return nil, err
	}
	omit, err := q.boolean(keyOmitMessageBody)
	if err != nil {
		return nil, err
	}
	var msgs []*minibus.ReceivedMessage
	err = m.withReceiver(links, q, sid, minibus.ReceiveModePeekLock, func(r receiver) (err error) {
		msgs, err = r.PeekMessages(ctx, int(count), &minibus.PeekMessagesOptions{FromSequenceNumber: from})
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	list := make([]any, len(msgs))
	for i, rm := range msgs {
		if omit {
			c := *rm
			c.Body = nil
			rm = &c
		}
		b, err := appendDelivery(nil, rm, false, false)
		if err != nil {
			return nil, err
		}
		list[i] = amqp.Map{{Key: keyMessage, Value: b}}
	}
	return amqp.Map{{Key: keyMessages, Value: list}}, nil
}

// updateDisposition settles messages by lock token (L3, L10):
// disposition-status (completed, abandoned, suspended = dead-letter,
// defered), lock-tokens (uuid array), deadletter-reason,
// deadletter-description, properties-to-modify (map), session-id → 200.
// The tokens are settled in order; the first error stops and is the reply.
func (m *management) updateDisposition(ctx context.Context, links mgmtLinks, q mgmtRequest) error {
	status, err := q.str(keyDispositionStatus, true)
	if err != nil {
		return err
	}
	toks, err := q.uuids(keyLockTokens)
	if err != nil {
		return err
	}
	reason, err := q.str(keyDeadLetterReason, false)
	if err != nil {
		return err
	}
	desc, err := q.str(keyDeadLetterDesc, false)
	if err != nil {
		return err
	}
	props, err := q.properties(keyPropertiesToModify)
	if err != nil {
		return err
	}
	sid, err := q.str(keySessionID, false)
	if err != nil {
		return err
	}
	var settle func(r receiver, msg *minibus.ReceivedMessage) error
	switch status {
	case dispositionCompleted:
		settle = func(r receiver, msg *minibus.ReceivedMessage) error { return r.CompleteMessage(ctx, msg, nil) }
	case dispositionAbandoned:
		settle = func(r receiver, msg *minibus.ReceivedMessage) error {
			return r.AbandonMessage(ctx, msg, &minibus.AbandonMessageOptions{PropertiesToModify: props})
		}
	case dispositionSuspended:
		settle = func(r receiver, msg *minibus.ReceivedMessage) error {
			return r.DeadLetterMessage(ctx, msg, &minibus.DeadLetterOptions{Reason: reason, ErrorDescription: desc, PropertiesToModify: props})
		}
	case dispositionDeferred, dispositionDeferredWell:
		settle = func(r receiver, msg *minibus.ReceivedMessage) error {
			return r.DeferMessage(ctx, msg, &minibus.DeferMessageOptions{PropertiesToModify: props})
		}
	default:
		return q.fail("field %q: %q (want completed, abandoned, suspended or defered)", keyDispositionStatus, status)
	}
	return m.withReceiver(links, q, sid, minibus.ReceiveModePeekLock, func(r receiver) error {
		for _, tok := range toks {
			if err := settle(r, &minibus.ReceivedMessage{LockToken: tok}); err != nil {
				return err
			}
		}
		return nil
	})
}

// schedule schedules messages (S1): messages, a list of maps {message:
// binary with the annotation x-opt-scheduled-enqueue-time, message-id,
// session-id, partition-key} → 200 sequence-numbers (long array) in the
// order given. Messages scheduled for one instant are scheduled together,
// all or none; the SDKs give one instant to all.
func (m *management) schedule(ctx context.Context, q mgmtRequest) (amqp.Map, error) {
	v, ok := q.body.GetString(keyMessages)
	if !ok || v == nil {
		return nil, q.missing(keyMessages)
	}
	list, ok := v.([]any)
	if !ok {
		return nil, q.mistyped(keyMessages, v, "a list of maps")
	}
	if len(list) == 0 {
		return nil, q.fail("field %q: empty", keyMessages)
	}
	msgs := make([]*minibus.Message, len(list))
	for i, ev := range list {
		what := keyMessages + "[" + strconv.Itoa(i) + "]"
		entry, ok := ev.(amqp.Map)
		if !ok {
			return nil, q.mistyped(what, ev, "a map")
		}
		eq := mgmtRequest{op: q.op, body: entry}
		bv, ok := entry.GetString(keyMessage)
		if !ok || bv == nil {
			return nil, q.missing(what + "." + keyMessage)
		}
		b, ok := bv.([]byte)
		if !ok {
			return nil, q.mistyped(what+"."+keyMessage, bv, "binary")
		}
		msg, err := decodeMessage(b, q.op+": "+what+"."+keyMessage)
		if err != nil {
			return nil, err
		}
		if msg.ScheduledEnqueueTime.IsZero() {
			return nil, q.fail("%s.%s: annotation %s: missing", what, keyMessage, annScheduledEnqueueTime)
		}
		if msg.MessageID == "" {
			if idv, ok := entry.GetString(keyMessageID); ok {
				id, err := idString(idv)
				if err != nil {
					return nil, q.fail("%s.%s: %v", what, keyMessageID, err)
				}
				msg.MessageID = id
			}
		}
		for _, f := range []struct {
			key string
			dst *string
		}{{keySessionID, &msg.SessionID}, {keyPartitionKey, &msg.PartitionKey}} {
			s, err := eq.str(f.key, false)
			if err != nil {
				return nil, q.fail("%s: %v", what, err)
			}
			if *f.dst == "" {
				*f.dst = s
			}
		}
		msgs[i] = msg
	}
	e, err := m.sendable()
	if err != nil {
		return nil, err
	}
	seqs := make([]int64, len(msgs))
	done := make([]bool, len(msgs))
	for i := range msgs {
		if done[i] {
			continue
		}
		at := msgs[i].ScheduledEnqueueTime
		var group []*minibus.Message
		var idx []int
		for j := i; j < len(msgs); j++ {
			if !done[j] && msgs[j].ScheduledEnqueueTime.Equal(at) {
				group, idx, done[j] = append(group, msgs[j]), append(idx, j), true
			}
		}
		got, err := e.scheduleMessages(ctx, group, at)
		if err != nil {
			return nil, err
		}
		for k, j := range idx {
			if k < len(got) {
				seqs[j] = got[k]
			}
		}
	}
	return amqp.Map{{Key: keySequenceNumbers, Value: seqs}}, nil
}

// cancelScheduled cancels scheduled messages (S3): sequence-numbers (long
// array) → 200.
func (m *management) cancelScheduled(ctx context.Context, q mgmtRequest) error {
	seqs, err := q.int64s(keySequenceNumbers)
	if err != nil {
		return err
	}
	e, err := m.sendable()
	if err != nil {
		return err
	}
	return e.cancelScheduled(ctx, seqs)
}

// sendable resolves the node's entity for scheduling: a queue or topic,
// not a sub-queue.
func (m *management) sendable() (entity, error) {
	e, err := m.addr.resolve(m.ns)
	if err != nil {
		return entity{}, err
	}
	if !e.canSend() || m.addr.subQueue != minibus.SubQueueNone {
		return entity{}, failf(minibus.ErrInvalidArgument, m.addr.String(), "only a queue or topic schedules messages")
	}
	return e, nil
}

// sessionFor finds the session receiver a session operation acts on: the
// one the connection holds for the request's session-id, else the receiver
// of its associated link when that is a session receiver. None is
// ErrSessionLockLost.
func (m *management) sessionFor(links mgmtLinks, q mgmtRequest) (*minibus.SessionReceiver, error) {
	sid, err := q.str(keySessionID, false)
	if err != nil {
		return nil, err
	}
	if sid != "" && links != nil {
		if sr, ok := links.sessionOf(m.addr.path, sid); ok && sr != nil {
			return sr, nil
		}
	}
	if q.assoc != "" && links != nil {
		if r, ok := links.receiverOf(q.assoc); ok {
			if sr, ok := r.(*minibus.SessionReceiver); ok && sr != nil && (sid == "" || sr.SessionID() == sid) {
				return sr, nil
			}
		}
	}
	if sid == "" {
		return nil, q.missing(keySessionID)
	}
	return nil, failf(minibus.ErrSessionLockLost, "session "+quoteName(sid)+" of "+quoteName(m.addr.path), "not held on this connection")
}

// renewSessionLock renews a session lock (SS8): session-id → 200
// expiration (timestamp).
func (m *management) renewSessionLock(ctx context.Context, links mgmtLinks, q mgmtRequest) (amqp.Map, error) {
	sr, err := m.sessionFor(links, q)
	if err != nil {
		return nil, err
	}
	if err := sr.RenewSessionLock(ctx, nil); err != nil {
		return nil, err
	}
	return amqp.Map{{Key: keyExpiration, Value: sr.LockedUntil()}}, nil
}

// getSessionState reads a session's state (SS6): session-id → 200
// session-state (binary, or null when never set).
func (m *management) getSessionState(ctx context.Context, links mgmtLinks, q mgmtRequest) (amqp.Map, error) {
	sr, err := m.sessionFor(links, q)
	if err != nil {
		return nil, err
	}
	state, err := sr.GetSessionState(ctx, nil)
	if err != nil {
		return nil, err
	}
	var v any // null, not an empty binary, for no state
	if state != nil {
		v = state
	}
	return amqp.Map{{Key: keySessionState, Value: v}}, nil
}

// setSessionState replaces a session's state (SS6): session-id,
// session-state (binary; null or empty clears it) → 200.
func (m *management) setSessionState(ctx context.Context, links mgmtLinks, q mgmtRequest) error {
	v, ok := q.body.GetString(keySessionState)
	if !ok {
		return q.missing(keySessionState)
	}
	var state []byte
	if v != nil {
		b, ok := v.([]byte)
		if !ok {
			return q.mistyped(keySessionState, v, "binary or null")
		}
		if len(b) > 0 {
			state = b
		}
	}
	sr, err := m.sessionFor(links, q)
	if err != nil {
		return err
	}
	return sr.SetSessionState(ctx, state, nil)
}

// getMessageSessions lists the entity's sessions that have messages or
// state (SS6): skip, top (int; 0 or absent: all), last-updated-time
// (timestamp, ignored: minibus keeps no update times) → 200 sessions-ids
// (string array), or 204 when none.
func (m *management) getMessageSessions(ctx context.Context, q mgmtRequest) (amqp.Map, error) {
	skip, _, err := q.integer(keySkip, 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	top, _, err := q.integer(keyTop, 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	if v, ok := q.body.GetString(keyLastUpdatedTime); ok && v != nil {
		if _, ok := v.(time.Time); !ok {
			return nil, q.mistyped(keyLastUpdatedTime, v, "a timestamp")
		}
	}
	e, err := m.addr.resolve(m.ns)
	if err != nil {
		return nil, err
	}
	ids, err := e.listSessions(ctx)
	if err != nil {
		return nil, err
	}
	ids = pageOf(ids, skip, top)
	if len(ids) == 0 {
		return nil, nil
	}
	return amqp.Map{{Key: keySessionsIDs, Value: ids}}, nil
}

// pageOf returns the items after the first skip, at most top of them (all
// when top is 0).
func pageOf[T any](items []T, skip, top int64) []T {
	if skip >= int64(len(items)) {
		return nil
	}
	items = items[skip:]
	if top > 0 && top < int64(len(items)) {
		items = items[:top]
	}
	return items
}

// subscription resolves the node's entity as a subscription, which the
// rule operations need.
func (m *management) subscription() (*minibus.Subscription, error) {
	e, err := m.addr.resolve(m.ns)
	if err != nil {
		return nil, err
	}
	if e.sub == nil {
		return nil, failf(minibus.ErrInvalidArgument, e.String(), "only a subscription has rules")
	}
	return e.sub, nil
}

// enumerateRules lists a subscription's rules by name (R1): skip, top
// (int; 0 or absent: all) → 200 rules, a list of maps {rule-description:
// described rule description}.
func (m *management) enumerateRules(q mgmtRequest) (amqp.Map, error) {
	skip, _, err := q.integer(keySkip, 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	top, _, err := q.integer(keyTop, 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	s, err := m.subscription()
	if err != nil {
		return nil, err
	}
	rules := pageOf(s.Rules(), skip, top)
	list := make([]any, len(rules))
	for i, r := range rules {
		d, err := ruleToAMQP(r)
		if err != nil {
			return nil, failf(minibus.ErrInvalidArgument, "subscription "+quoteName(m.addr.path), "%v", err)
		}
		list[i] = amqp.Map{{Key: keyRuleDescription, Value: d}}
	}
	return amqp.Map{{Key: keyRules, Value: list}}, nil
}

// addRule creates a rule (R1): rule-name, rule-description → 200.
func (m *management) addRule(q mgmtRequest) error {
	name, err := q.str(keyRuleName, true)
	if err != nil {
		return err
	}
	v, ok := q.body.GetString(keyRuleDescription)
	if !ok || v == nil {
		return q.missing(keyRuleDescription)
	}
	rp, err := ruleFromAMQP(v, keyRuleDescription)
	if err != nil {
		return q.fail("%v", err)
	}
	s, err := m.subscription()
	if err != nil {
		return err
	}
	return s.CreateRule(name, &rp)
}

// removeRule deletes a rule (R1): rule-name → 200, 404 when there is no
// such rule.
func (m *management) removeRule(q mgmtRequest) error {
	name, err := q.str(keyRuleName, true)
	if err != nil {
		return err
	}
	s, err := m.subscription()
	if err != nil {
		return err
	}
	return s.DeleteRule(name)
}
