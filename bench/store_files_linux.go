//go:build linux

package bench

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// dropFileCache writes out the file's dirty pages and asks the kernel to
// drop the file's pages from its page cache (posix_fadvise
// POSIX_FADV_DONTNEED): the next read comes from the disk, or from
// whatever caches the disk below the kernel (a hypervisor's).
func dropFileCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// fsTypes names the file systems a store directory is likely to be on,
// by statfs magic number.
var fsTypes = map[int64]string{
	0xEF53:     "ext4",
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x01021994: "tmpfs",
	0x794C7630: "overlayfs",
	0x2FC12FC1: "zfs",
	0x6969:     "nfs",
	0x65735546: "fuse",
}

// fsType names the file system dir is on, or says it could not.
func fsType(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "unknown file system"
	}
	if name, ok := fsTypes[int64(st.Type)]; ok {
		return name
	}
	return "file system 0x" + strconv.FormatInt(int64(st.Type), 16)
}

// allocated is how many bytes of disk a file takes (its blocks, not its
// length: a segment preallocated by truncation is sparse).
func allocated(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*unix.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
