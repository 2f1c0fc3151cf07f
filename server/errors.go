package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
)

// The AMQP error conditions the server sends (SEMANTICS W4–W8): the
// specification's own and the ones Service Bus adds, which the SDKs map to
// their error types.
const (
	condNotFound              amqp.Symbol = "amqp:not-found"
	condInvalidField          amqp.Symbol = "amqp:invalid-field"
	condNotAllowed            amqp.Symbol = "amqp:not-allowed"
	condInternalError         amqp.Symbol = "amqp:internal-error"
	condResourceLimit         amqp.Symbol = "amqp:resource-limit-exceeded"
	condMessageSizeExceeded   amqp.Symbol = "amqp:link:message-size-exceeded"
	condConnectionForced      amqp.Symbol = "amqp:connection:forced"
	condEntityDisabled        amqp.Symbol = "com.microsoft:entity-disabled"
	condEntityExists          amqp.Symbol = "com.microsoft:entity-already-exists"
	condMessageLockLost       amqp.Symbol = "com.microsoft:message-lock-lost"
	condSessionLockLost       amqp.Symbol = "com.microsoft:session-lock-lost"
	condSessionCannotBeLocked amqp.Symbol = "com.microsoft:session-cannot-be-locked"
	condMessageNotFound       amqp.Symbol = "com.microsoft:message-not-found"
	condTimeout               amqp.Symbol = "com.microsoft:timeout"
	condOperationCancelled    amqp.Symbol = "com.microsoft:operation-cancelled"
	condDeadLetter            amqp.Symbol = "com.microsoft:dead-letter"
)

// errorMapping is one row of the table linkError and statusCode share: a
// sentinel, the condition that carries it on a link and the status that
// carries it on $management and $cbs.
type errorMapping struct {
	sentinel  error
	condition amqp.Symbol
	status    int32
}

// errorTable maps the minibus sentinels and the context errors (SEMANTICS
// W4, W6, W8). The first row whose sentinel the error wraps wins.
var errorTable = []errorMapping{
	{minibus.ErrNotFound, condNotFound, 404},
	{minibus.ErrMessageNotFound, condMessageNotFound, 404},
	{minibus.ErrLockLost, condMessageLockLost, 410},
	{minibus.ErrSessionLockLost, condSessionLockLost, 410},
	{minibus.ErrSessionCannotBeLocked, condSessionCannotBeLocked, 410},
	{minibus.ErrInvalidArgument, condInvalidField, 400},
	{minibus.ErrEntityDisabled, condEntityDisabled, 403},
	{minibus.ErrQuotaExceeded, condResourceLimit, 403},
	{minibus.ErrMessageTooLarge, condMessageSizeExceeded, 403},
	{minibus.ErrAlreadyExists, condEntityExists, 409},
	{context.DeadlineExceeded, condTimeout, 408},
	{context.Canceled, condOperationCancelled, 500},
	// A closed namespace means the server is going away: the clients
	// reconnect, as after any forced close.
	{minibus.ErrClosed, condConnectionForced, 500},
}

// lookupError finds err's row in errorTable; ok is false for an error that
// wraps none of the sentinels.
func lookupError(err error) (m errorMapping, ok bool) {
	for _, m := range errorTable {
		if errors.Is(err, m.sentinel) {
			return m, true
		}
	}
	return errorMapping{}, false
}

// linkError maps a minibus error to the AMQP error carried by a Rejected
// outcome or a detach (SEMANTICS W4, W6): ErrNotFound amqp:not-found,
// ErrEntityDisabled com.microsoft:entity-disabled, ErrMessageTooLarge
// amqp:link:message-size-exceeded, ErrQuotaExceeded
// amqp:resource-limit-exceeded, ErrInvalidArgument amqp:not-allowed,
// ErrLockLost com.microsoft:message-lock-lost, ErrSessionLockLost
// com.microsoft:session-lock-lost, ErrSessionCannotBeLocked
// com.microsoft:session-cannot-be-locked, ErrMessageNotFound
// com.microsoft:message-not-found, ErrAlreadyExists
// com.microsoft:entity-already-exists, ErrClosed amqp:connection:forced,
// context.DeadlineExceeded com.microsoft:timeout, context.Canceled
// com.microsoft:operation-cancelled, anything else amqp:internal-error.
// The description is errorDescription's. A nil err gives nil.
func linkError(err error) *amqp.Error {
	if err == nil {
		return nil
	}
	cond := errorCondition(err)
	if cond == condInvalidField {
		// On a link, a bad value is amqp:not-allowed: what Service Bus's
		// InvalidOperationException is on the wire, and what the SDKs
		// take as final; amqp:invalid-field would make the Go SDK retry
		// a send that can never succeed (W4).
		cond = condNotAllowed
	}
	return &amqp.Error{Condition: cond, Description: errorDescription(err)}
}

// errorCondition is err's condition in errorTable, amqp:internal-error for
// an error that wraps none of its sentinels: what a $management or $cbs
// reply carries as error-condition beside its status (W8).
func errorCondition(err error) amqp.Symbol {
	if m, ok := lookupError(err); ok {
		return m.condition
	}
	return condInternalError
}

// notFoundPrefix starts the description of a missing entity or rule with
// Service Bus's words ("The messaging entity '…' could not be found"): the
// JavaScript SDK reads amqp:not-found alone as a communication error, and
// only this text, or "status-code: 404", as MessagingEntityNotFound
// (SEMANTICS W2, W3, W8).
const notFoundPrefix = "The messaging entity named here could not be found: "

// errorDescription is the description err carries on a link or in a
// $management or $cbs reply: its text, after notFoundPrefix when it wraps
// ErrNotFound.
func errorDescription(err error) string {
	if errors.Is(err, minibus.ErrNotFound) {
		return notFoundPrefix + err.Error()
	}
	return err.Error()
}

// statusCode maps an error to the status of a $management or $cbs reply
// (SEMANTICS W3, W8): 404 not found (entity, rule or message), 410 lock
// lost (message or session) or a session that cannot be locked, 400
// invalid, 403 disabled, quota or too large, 409 already exists, 408
// timeout, 500 otherwise. A nil err is 200.
func statusCode(err error) int32 {
	if err == nil {
		return 200
	}
	if m, ok := lookupError(err); ok {
		return m.status
	}
	return 500
}

// failf returns an error wrapping sentinel that names the culprit first,
// in the form minibus's own errors take:
// "minibus: <culprit>: <detail>: <sentinel>".
func failf(sentinel error, culprit, format string, args ...any) error {
	if format == "" {
		return fmt.Errorf("minibus: %s: %w", culprit, sentinel)
	}
	return fmt.Errorf("minibus: %s: %s: %w", culprit, fmt.Sprintf(format, args...), sentinel)
}

// quoteName quotes s for an error message, shortening what is too long to
// read.
func quoteName(s string) string {
	const max = 200
	if len(s) > max {
		return strconv.Quote(s[:max]) + "…"
	}
	return strconv.Quote(s)
}
