package minibus

import "github.com/minibus-go/minibus/internal/store"

// effectiveTTL is a message's time to live (SEMANTICS E1): the smallest of
// the message's own (sent, 0 when not set) and ttlCap, the entity's
// DefaultMessageTimeToLive (and, for a subscription, its topic's), which is
// store.Never when there is none.
func effectiveTTL(sent, ttlCap int64) int64 {
	if sent > 0 && sent < ttlCap {
		return sent
	}
	return ttlCap
}

// expireLocked applies expiry to m at instant at (SEMANTICS E5): with
// DeadLetteringOnMessageExpiration it moves to the dead-letter queue with
// reason TTLExpiredException, otherwise it is dropped. Only messages of the
// main queue expire (E6), and only when neither locked (E4) nor deferred
// (E7): the callers see to that.
func (e *entity) expireLocked(q *subQueue, m *store.Message, at int64) {
	e.setDueLocked(m, store.Never)
	if e.cfg.dlOnExpiry {
		e.deadLetterLocked(q, m, reasonTTLExpired, descriptionTTLExpired)
		return
	}
	q.remove(m)
	store.Recycle(m)
}
