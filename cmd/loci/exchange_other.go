//go:build !linux

package main

import "errors"

// exchange is not offered here: the caller renames in two steps.
func exchange(a, b string) error { return errors.ErrUnsupported }
