/*
 * SPDX-FileCopyrightText: © Hypermode Inc. <hello@hypermode.com>
 * SPDX-License-Identifier: Apache-2.0
 */

package z

import (
	"os"
	"sync"
	"unsafe"
)

// loci: fileMaps holds the start address and length of every file mapping
// made through Mmap and not yet unmapped, so that Msync drops the pages of
// a file mapping only, never of memory that is not one (Badger gives a
// table its data on the heap in memory mode).
var fileMaps sync.Map // uintptr -> int

// start is b's first byte's address, 0 for an empty slice.
func start(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&b[0]))
}

// isFileMap reports whether b lies at the start of a file mapping made by
// Mmap and within it.
func isFileMap(b []byte) bool {
	n, ok := fileMaps.Load(start(b))
	return ok && len(b) <= n.(int)
}

// Mmap uses the mmap system call to memory-map a file. If writable is true,
// memory protection of the pages is set so that they may be written to as well.
func Mmap(fd *os.File, writable bool, size int64) ([]byte, error) {
	b, err := mmap(fd, writable, size)
	if err == nil && len(b) > 0 {
		fileMaps.Store(start(b), len(b))
	}
	return b, err
}

// Munmap unmaps a previously mapped slice.
func Munmap(b []byte) error {
	fileMaps.Delete(start(b))
	return munmap(b)
}

// Madvise uses the madvise system call to give advise about the use of memory
// when using a slice that is memory-mapped to a file. Set the readahead flag to
// false if page references are expected in random order.
func Madvise(b []byte, readahead bool) error {
	return madvise(b, readahead)
}

// Msync would call sync on the mmapped data.
//
// loci: and then drops the synced pages from the process's resident set
// (dropResident): Badger calls it on a file it mapped shared and wrote
// whole (a new table, through CreateTable) or appends to (memtable and
// value logs, through MmapFile.Sync), and every page it wrote stayed
// resident until the file was closed, up to the whole store at a million
// drawers. The data is in the file and the page cache; a read maps the
// page again. Only a whole mapping made by Mmap (fileMaps) is dropped.
func Msync(b []byte) error {
	if err := msync(b); err != nil {
		return err
	}
	if !isFileMap(b) {
		return nil
	}
	return dropResident(b)
}
