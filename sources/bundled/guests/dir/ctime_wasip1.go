//go:build wasip1

package main

import (
	"io/fs"
	"syscall"
)

// changeTime is a file's change time in Unix nanoseconds: the later of
// its modification time and its inode change time as WASI's filestat
// reports them (the built-in directory source's order).
func changeTime(info fs.FileInfo) int64 {
	m := info.ModTime().UnixNano()
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return max(m, int64(st.Ctime))
	}
	return m
}
