// Package errs holds the sentinel errors of minibus, which the root package
// re-exports, and the one way to wrap them. It exists so that the engine can
// return the public sentinels without importing the root package.
package errs

import (
	"errors"
	"fmt"
)

// The sentinels, documented where the root package re-exports them.
var (
	ErrNotFound              = errors.New("not found")
	ErrAlreadyExists         = errors.New("already exists")
	ErrInvalidArgument       = errors.New("invalid argument")
	ErrLockLost              = errors.New("lock lost")
	ErrSessionLockLost       = errors.New("session lock lost")
	ErrSessionCannotBeLocked = errors.New("session cannot be locked")
	ErrMessageNotFound       = errors.New("message not found")
	ErrMessageTooLarge       = errors.New("message too large")
	ErrQuotaExceeded         = errors.New("quota exceeded")
	ErrEntityDisabled        = errors.New("entity disabled")
	ErrClosed                = errors.New("closed")
	ErrStoreFailed           = errors.New("store failed")
	ErrCorrupt               = errors.New("store corrupt")
)

// Errorf returns an error that wraps sentinel, naming the culprit first:
// "minibus: <culprit>: <detail>: <sentinel>", or without the detail when
// format is empty.
func Errorf(sentinel error, culprit, format string, args ...any) error {
	if format == "" {
		return fmt.Errorf("minibus: %s: %w", culprit, sentinel)
	}
	return fmt.Errorf("minibus: %s: %s: %w", culprit, fmt.Sprintf(format, args...), sentinel)
}
