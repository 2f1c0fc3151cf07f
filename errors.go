package minibus

import (
	"errors"
	"fmt"
)

// Every error minibus returns wraps exactly one of these sentinels, so that
// callers can test it with [errors.Is], and says in its text which entity,
// message or value was at fault:
//
//	minibus: queue "orders": lock token 3f2a9c01…: lock lost
//
// Context errors ([context.Canceled], [context.DeadlineExceeded]) are returned
// unchanged. An operation that returns an error has changed nothing.
var (
	// ErrNotFound is returned when a queue, topic, subscription or rule does
	// not exist: it was never created, was deleted, or was deleted on idle
	// (SEMANTICS A3). Handles and receivers of a deleted entity return it.
	ErrNotFound = errors.New("not found")

	// ErrAlreadyExists is returned by the Create calls when the name is taken
	// (queues and topics share one name space, SEMANTICS V1), and by
	// CreateRule for a rule name the subscription already has.
	ErrAlreadyExists = errors.New("already exists")

	// ErrInvalidArgument is returned for input that can never succeed: a bad
	// entity name, an out-of-range property, a nil message, a negative time
	// to live, maxMessages < 1, settling a peeked message or one received in
	// receive-and-delete mode or from another entity, bad SQL.
	ErrInvalidArgument = errors.New("invalid argument")

	// ErrLockLost is returned when settling or renewing a message whose lock
	// has expired, which was already settled, or whose lock token is unknown
	// (SEMANTICS L4).
	ErrLockLost = errors.New("lock lost")

	// ErrSessionLockLost is returned by a session receiver whose session lock
	// has expired.
	ErrSessionLockLost = errors.New("session lock lost")

	// ErrSessionCannotBeLocked is returned when a session is held by another
	// receiver, or when no session is available.
	ErrSessionCannotBeLocked = errors.New("session cannot be locked")

	// ErrMessageNotFound is returned by ReceiveDeferredMessages for a sequence
	// number that is not a deferred message (SEMANTICS L9), and by
	// CancelScheduledMessages for one that is not a pending scheduled message
	// (SEMANTICS S3).
	ErrMessageNotFound = errors.New("message not found")

	// ErrMessageTooLarge is returned when a message is larger than its
	// entity's MaxMessageSizeInKilobytes (SEMANTICS V3).
	ErrMessageTooLarge = errors.New("message too large")

	// ErrQuotaExceeded is returned when a send would take an entity past its
	// MaxSizeInMegabytes; nothing was enqueued (SEMANTICS V3).
	ErrQuotaExceeded = errors.New("quota exceeded")

	// ErrEntityDisabled is returned when an entity's Status forbids the send
	// or receive (SEMANTICS V5).
	ErrEntityDisabled = errors.New("entity disabled")

	// ErrClosed is returned by every call on a closed [Namespace], by every
	// call on a closed [Receiver], and by calls that were blocked when either
	// was closed.
	ErrClosed = errors.New("closed")
)

// errorf returns an error that wraps sentinel, naming the culprit first:
// "minibus: <culprit>: <detail>: <sentinel>".
func errorf(sentinel error, culprit, format string, args ...any) error {
	detail := fmt.Sprintf(format, args...)
	if detail == "" {
		return fmt.Errorf("minibus: %s: %w", culprit, sentinel)
	}
	return fmt.Errorf("minibus: %s: %s: %w", culprit, detail, sentinel)
}

// tokenString shortens a lock token for error texts.
func tokenString(t [16]byte) string {
	return fmt.Sprintf("lock token %x…", t[:4])
}
