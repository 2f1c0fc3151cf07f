//go:build unix

package wal

import (
	"errors"
	"os"
	"syscall"
)

// flock takes an exclusive, non-blocking flock(2) lock on f: ErrLocked if
// another open file description holds it.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return ErrLocked
		default:
			return err
		}
	}
}
