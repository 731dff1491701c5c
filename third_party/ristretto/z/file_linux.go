/*
 * SPDX-FileCopyrightText: © Hypermode Inc. <hello@hypermode.com>
 * SPDX-License-Identifier: Apache-2.0
 */

package z

import (
	"fmt"
)

// Truncate would truncate the mmapped file to the given size. On Linux, we truncate
// the underlying file and then call mremap, but on other systems, we unmap first,
// then truncate, then re-map.
func (m *MmapFile) Truncate(maxSz int64) error {
	if err := m.Sync(); err != nil {
		return fmt.Errorf("while sync file: %s, error: %v\n", m.Fd.Name(), err)
	}
	resize := m.Fd.Truncate
	if maxSz > int64(len(m.Data)) {
		// loci: a growing file gets its blocks allocated (see grow).
		resize = func(size int64) error { return grow(m.Fd, size) }
	}
	if err := resize(maxSz); err != nil {
		return fmt.Errorf("while truncate file: %s, error: %v\n", m.Fd.Name(), err)
	}

	// loci: the mapping may move (fileMaps, mmap.go).
	mapsMu.Lock()
	defer mapsMu.Unlock()
	old := start(m.Data)
	data, err := mremap(m.Data, int(maxSz)) // Mmap up to max size.
	if err != nil {
		return err
	}
	delete(fileMaps, old)
	m.Data = data
	fileMaps[start(m.Data)] = len(m.Data)
	return nil
}
