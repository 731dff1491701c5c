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
// made through Mmap and not yet unmapped, so that Msync and DropResident
// drop the pages of file mappings only, never of memory that is not one
// (Badger gives a table its data on the heap in memory mode). mapsMu is
// held for reading while pages are dropped and for writing while a
// mapping is made, moved or unmapped: an address dropped is always still
// the file mapping it was recorded as.
var (
	mapsMu   sync.RWMutex
	fileMaps = map[uintptr]int{}
)

// start is b's first byte's address, 0 for an empty slice.
func start(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&b[0]))
}

// isFileMap reports whether b lies at the start of a file mapping made by
// Mmap and within it; mapsMu is held.
func isFileMap(b []byte) bool {
	n, ok := fileMaps[start(b)]
	return ok && len(b) <= n
}

// DropResident drops the pages of every file mapped through Mmap from the
// process's resident set (loci: a daemon at rest keeps none of its
// tables' pages; the page cache keeps them for the next read, which maps
// them again). It returns the first error met, after trying every map.
func DropResident() error {
	mapsMu.RLock()
	defer mapsMu.RUnlock()
	var first error
	for addr, n := range fileMaps {
		if err := dropResident(unsafe.Slice((*byte)(unsafe.Pointer(addr)), n)); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Mmap uses the mmap system call to memory-map a file. If writable is true,
// memory protection of the pages is set so that they may be written to as well.
func Mmap(fd *os.File, writable bool, size int64) ([]byte, error) {
	mapsMu.Lock()
	defer mapsMu.Unlock()
	b, err := mmap(fd, writable, size)
	if err == nil && len(b) > 0 {
		fileMaps[start(b)] = len(b)
	}
	return b, err
}

// Munmap unmaps a previously mapped slice.
func Munmap(b []byte) error {
	mapsMu.Lock()
	defer mapsMu.Unlock()
	delete(fileMaps, start(b))
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
	mapsMu.RLock()
	defer mapsMu.RUnlock()
	if !isFileMap(b) {
		return nil
	}
	return dropResident(b)
}
