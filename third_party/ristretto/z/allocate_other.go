//go:build !linux

/*
 * SPDX-FileCopyrightText: © Hypermode Inc. <hello@hypermode.com>
 * SPDX-License-Identifier: Apache-2.0
 *
 * loci: added; see allocate_linux.go.
 */

package z

import "os"

// grow sizes fd to size bytes (no allocation ahead on this platform).
func grow(fd *os.File, size int64) error { return fd.Truncate(size) }
