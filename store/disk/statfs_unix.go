//go:build unix

package disk

import "golang.org/x/sys/unix"

// freeBytes is statfs's blocks available to an unprivileged writer.
func freeBytes(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
