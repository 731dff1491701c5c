/*
 * SPDX-FileCopyrightText: © Hypermode Inc. <hello@hypermode.com>
 * SPDX-License-Identifier: Apache-2.0
 *
 * loci: added. Badger writes its memtable logs, value logs and tables
 * through memory maps of files it first sizes with ftruncate. A sized but
 * unallocated file is a hole: a store into it on a full filesystem is
 * SIGBUS, which kills the process. grow allocates the blocks instead, so a
 * full filesystem is an ENOSPC error returned here.
 */

package z

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// grow makes fd at least size bytes long with every block allocated. A
// filesystem that cannot allocate ahead (EOPNOTSUPP) is only truncated,
// as before.
func grow(fd *os.File, size int64) error {
	for {
		err := unix.Fallocate(int(fd.Fd()), 0, 0, size)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
			return fd.Truncate(size)
		}
		return &os.PathError{Op: "fallocate", Path: fd.Name(), Err: err}
	}
}
