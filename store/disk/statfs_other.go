//go:build !unix

package disk

import "errors"

// freeBytes cannot be read here: the guard never reports a full disk.
func freeBytes(string) (int64, error) {
	return 0, errors.New("free space is not read on this platform")
}
