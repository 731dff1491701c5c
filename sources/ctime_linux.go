//go:build linux

package sources

import (
	"io/fs"
	"syscall"
)

// changeTime is a file's change time in Unix nanoseconds: the later of
// its modification time and its inode change time, which rename, link,
// chmod and every write update and which no user tool can set back (cp
// -p, rsync -a, tar x and unzip set the modification time back, not this).
func changeTime(info fs.FileInfo) int64 {
	m := info.ModTime().UnixNano()
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return max(m, st.Ctim.Nano())
	}
	return m
}
