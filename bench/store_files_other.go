//go:build !linux

package bench

import "os"

// dropFileCache is not supported off Linux: cold opens are not measured.
func dropFileCache(path string) error { return ErrNotSupported }

// fsType is not known off Linux.
func fsType(dir string) string { return "unknown file system" }

// allocated is the file's length off Linux.
func allocated(fi os.FileInfo) int64 { return fi.Size() }
