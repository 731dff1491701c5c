package services

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// swapDir puts the folder tmp in place of dst at once: exchanged with the
// old folder, which is then at tmp (old), or renamed when there is none
// (old ""). A crash leaves either the old package or the new one, never
// neither.
func swapDir(tmp, dst string) (old string, err error) {
	err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return tmp, nil
	case errors.Is(err, unix.ENOENT):
		return "", os.Rename(tmp, dst)
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
		return swapAside(tmp, dst) // a file system without exchange
	}
	return "", err
}
