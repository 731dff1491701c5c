/*
 * SPDX-FileCopyrightText: © Hypermode Inc. <hello@hypermode.com>
 * SPDX-License-Identifier: Apache-2.0
 *
 * loci: added. A file's pages, once synced, are dropped from the process's
 * resident set (see Msync).
 */

package z

import "golang.org/x/sys/unix"

// dropResident removes a shared file mapping's pages from the process's
// page tables (MADV_DONTNEED). The file keeps its data and the page cache
// its pages: a later access maps the page again (a minor fault, or a read
// when the kernel has evicted it). Only for a MAP_SHARED file mapping whose
// stores are synced: on anonymous or private memory it discards data.
func dropResident(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Madvise(b, unix.MADV_DONTNEED)
}
