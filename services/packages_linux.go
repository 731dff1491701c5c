package services

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// swapDir puts the folder tmp in place of dst at once: exchanged with the
// old folder (which then goes), or renamed when there is none. A crash
// leaves either the old package or the new one, never neither.
func swapDir(tmp, dst string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return os.RemoveAll(tmp) // the old package, now at tmp
	case errors.Is(err, unix.ENOENT):
		return os.Rename(tmp, dst)
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
		return swapAside(tmp, dst) // a file system without exchange
	}
	return err
}
