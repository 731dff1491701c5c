package main

import "syscall"

// fileLimit raises the soft open-file limit to the hard one when it is
// lower, and returns the limits in effect. The Go runtime already raises
// it at start (since Go 1.19, to one under the hard limit, and restores
// the original for the programs the process starts); it is raised here
// only when that did not happen, so that programs loci starts keep the
// limit they would have had.
func fileLimit() (soft, hard uint64, raised bool, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, false, err
	}
	if lim.Cur+1 < lim.Max {
		want := lim
		want.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			return lim.Cur, lim.Max, false, err
		}
		lim, raised = want, true
	}
	return lim.Cur, lim.Max, raised, nil
}
