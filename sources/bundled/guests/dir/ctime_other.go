//go:build !linux && !wasip1

package main

import "io/fs"

// changeTime is a file's modification time in Unix nanoseconds where the
// inode change time is not read.
func changeTime(info fs.FileInfo) int64 { return info.ModTime().UnixNano() }
