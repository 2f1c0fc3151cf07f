package minibus

import "github.com/minibus-go/minibus/internal/errs"

// Every error minibus returns wraps exactly one of these sentinels, so that
// callers can test it with [errors.Is], and says in its text which entity,
// message or value was at fault:
//
//	minibus: queue "orders": message 42: lock lost
//
// Context errors ([context.Canceled], [context.DeadlineExceeded]) are returned
// unchanged. An operation that returns an error has changed nothing.
var (
	// ErrNotFound is returned when a queue, topic, subscription or rule does
	// not exist: it was never created, was deleted, or was deleted on idle
	// (SEMANTICS A3). Handles and receivers of a deleted entity return it.
	ErrNotFound = errs.ErrNotFound

	// ErrAlreadyExists is returned by the Create calls when the name is taken
	// (queues and topics share one name space, SEMANTICS V1), and by
	// CreateRule for a rule name the subscription already has.
	ErrAlreadyExists = errs.ErrAlreadyExists

	// ErrInvalidArgument is returned for input that can never succeed: a bad
	// entity name, an out-of-range property, a nil message, a negative time
	// to live, maxMessages < 1, settling a peeked message or one received in
	// receive-and-delete mode or from another entity, bad SQL.
	ErrInvalidArgument = errs.ErrInvalidArgument

	// ErrLockLost is returned when settling or renewing a message whose lock
	// has expired, which was already settled, or whose lock token is unknown
	// (SEMANTICS L4).
	ErrLockLost = errs.ErrLockLost

	// ErrSessionLockLost is returned by a session receiver whose session lock
	// has expired.
	ErrSessionLockLost = errs.ErrSessionLockLost

	// ErrSessionCannotBeLocked is returned when a session is held by another
	// receiver.
	ErrSessionCannotBeLocked = errs.ErrSessionCannotBeLocked

	// ErrMessageNotFound is returned by ReceiveDeferredMessages for a sequence
	// number that is not a deferred message (SEMANTICS L9), and by
	// CancelScheduledMessages for one that is not a pending scheduled message
	// (SEMANTICS S3).
	ErrMessageNotFound = errs.ErrMessageNotFound

	// ErrMessageTooLarge is returned when a message is larger than its
	// entity's MaxMessageSizeInKilobytes, as sent or with PropertiesToModify
	// (SEMANTICS V3).
	ErrMessageTooLarge = errs.ErrMessageTooLarge

	// ErrQuotaExceeded is returned when a send, or PropertiesToModify, would
	// take an entity past its MaxSizeInMegabytes; nothing changed (SEMANTICS
	// V3).
	ErrQuotaExceeded = errs.ErrQuotaExceeded

	// ErrEntityDisabled is returned when an entity's Status forbids the send
	// or receive (SEMANTICS V5).
	ErrEntityDisabled = errs.ErrEntityDisabled

	// ErrClosed is returned by every call on a closed [Namespace], by every
	// call on a closed [Receiver], and by calls that were blocked when either
	// was closed.
	ErrClosed = errs.ErrClosed

	// ErrStoreFailed is returned by a durable namespace ([Open]) when a
	// write or sync of its log failed: by the call whose change could not be
	// made durable, and by every later call until the namespace is closed
	// and opened again. Nothing acknowledged before the failure is lost.
	// Open itself returns it when the file system fails it: the directory
	// cannot be created, read or locked.
	ErrStoreFailed = errs.ErrStoreFailed

	// ErrCorrupt is returned by [Open] when the directory is damaged: a log
	// segment missing, wherever it is, or a damaged record that was on disk
	// or that other records follow (a torn last record, what a crash
	// leaves, is cut off; a damaged record the last snapshot holds is
	// skipped). Open then changes nothing on disk.
	ErrCorrupt = errs.ErrCorrupt
)

// errorf returns an error that wraps sentinel, naming the culprit first:
// "minibus: <culprit>: <detail>: <sentinel>".
func errorf(sentinel error, culprit, format string, args ...any) error {
	return errs.Errorf(sentinel, culprit, format, args...)
}
