package main

import "golang.org/x/sys/unix"

// exchange swaps the folders at a and b in one step (renameat2 with
// RENAME_EXCHANGE): no instant sees neither in place. An error (a
// filesystem without it) leaves both as they were.
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
