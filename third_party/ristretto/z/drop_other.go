//go:build !linux
// +build !linux

/*
 * SPDX-FileCopyrightText: © Hypermode Inc. <hello@hypermode.com>
 * SPDX-License-Identifier: Apache-2.0
 *
 * loci: added; dropping synced pages is done on Linux only.
 */

package z

// dropResident does nothing here (see drop_linux.go).
func dropResident(b []byte) error { return nil }
