//go:build !linux

package sources

import "io/fs"

// changeTime is a file's change time in Unix nanoseconds; where the inode
// change time is not read (systems other than Linux), its modification
// time. Files kept at an old time are still found there when their
// directory changed and their path is new to the source (see Suspects).
func changeTime(info fs.FileInfo) int64 { return info.ModTime().UnixNano() }
