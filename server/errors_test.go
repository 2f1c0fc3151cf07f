package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
	"github.com/stretchr/testify/require"
)

// TestErrorMapping maps every minibus sentinel, and the context errors, to
// its link condition (W4, W6) and its $management status (W8), wrapped as
// minibus wraps them.
func TestErrorMapping(t *testing.T) {
	tests := []struct {
		err    error
		cond   amqp.Symbol
		status int32
	}{
		{minibus.ErrNotFound, "amqp:not-found", 404},
		{minibus.ErrMessageNotFound, "com.microsoft:message-not-found", 404},
		{minibus.ErrLockLost, "com.microsoft:message-lock-lost", 410},
		{minibus.ErrSessionLockLost, "com.microsoft:session-lock-lost", 410},
		{minibus.ErrSessionCannotBeLocked, "com.microsoft:session-cannot-be-locked", 410},
		{minibus.ErrInvalidArgument, "amqp:not-allowed", 400},
		{minibus.ErrEntityDisabled, "com.microsoft:entity-disabled", 403},
		{minibus.ErrQuotaExceeded, "amqp:resource-limit-exceeded", 403},
		{minibus.ErrMessageTooLarge, "amqp:link:message-size-exceeded", 403},
		{minibus.ErrAlreadyExists, "com.microsoft:entity-already-exists", 409},
		{minibus.ErrClosed, "amqp:connection:forced", 500},
		{minibus.ErrStoreFailed, "amqp:internal-error", 500},
		{minibus.ErrCorrupt, "amqp:internal-error", 500},
		{context.DeadlineExceeded, "com.microsoft:timeout", 408},
		{context.Canceled, "com.microsoft:operation-cancelled", 500},
		{errors.New("something else"), "amqp:internal-error", 500},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			wrapped := fmt.Errorf("minibus: queue %q: message 7: %w", "orders", tt.err)
			for _, err := range []error{tt.err, wrapped} {
				le := linkError(err)
				require.Equal(t, tt.cond, le.Condition)
				if errors.Is(err, minibus.ErrNotFound) {
					// The words the JavaScript SDK matches for MessagingEntityNotFound.
					require.Regexp(t, `^The messaging entity .* could not be found`, le.Description)
					require.Contains(t, le.Description, err.Error())
				} else {
					require.Equal(t, err.Error(), le.Description)
				}
				require.Equal(t, tt.status, statusCode(err))
			}
		})
	}
	require.Nil(t, linkError(nil))
	require.Equal(t, int32(200), statusCode(nil))
}

// TestFailf: failf names the culprit first and wraps the sentinel.
func TestFailf(t *testing.T) {
	err := failf(minibus.ErrInvalidArgument, `address "x"`, "bad %s", "thing")
	require.ErrorIs(t, err, minibus.ErrInvalidArgument)
	require.Equal(t, `minibus: address "x": bad thing: invalid argument`, err.Error())
	err = failf(minibus.ErrNotFound, "queue", "")
	require.Equal(t, "minibus: queue: not found", err.Error())
	long := quoteName(string(make([]byte, 500)))
	require.Less(t, len(long), 1000)
}
