package minibus

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/minibus-go/minibus/internal/store"
)

// Dead-letter reasons and descriptions the broker sets (SEMANTICS L6, E5).
const (
	reasonMaxDelivery     = "MaxDeliveryCountExceeded"
	reasonTTLExpired      = "TTLExpiredException"
	descriptionTTLExpired = "The message expired and was dead lettered."
)

func maxDeliveryDescription(n uint32) string {
	return "Message could not be consumed after " + strconv.FormatUint(uint64(n), 10) + " delivery attempts."
}

// deadLetterLocked moves m, unlocked, from q to the entity's dead-letter
// queue with reason and description (SEMANTICS D2): it keeps its body,
// properties, sequence number, EnqueuedTime and DeliveryCount, and it never
// expires there (E6).
func (e *entity) deadLetterLocked(q *subQueue, m *store.Message, reason, description string) {
	e.setDueLocked(m, store.Never)
	q.remove(m)
	m.State = store.Available
	m.FromDeferral = false
	m.DL = &store.DeadLetter{Reason: reason, Description: description}
	if e.ns.log.Enabled(context.Background(), slog.LevelDebug) {
		e.ns.log.Debug("minibus: dead-lettered", "entity", e.describe(), "seq", m.Key.Seq, "reason", reason)
	}
	dlq := e.sub[SubQueueDeadLetter]
	dlq.add(m)
	dlq.waiters.wake(1)
}
