//go:build !linux

package services

// swapDir puts the folder tmp in place of dst: the old folder is moved
// aside first (old; a crash between leaves only the .old- folder, swept
// at the next start, and the source unavailable until installed again).
func swapDir(tmp, dst string) (old string, err error) { return swapAside(tmp, dst) }
