//go:build !unix

package wal

import (
	"errors"
	"os"
)

// flock is not implemented off unix: OSFS.Lock fails there.
func flock(*os.File) error { return errors.New("directory locks need flock(2), a unix system call") }
