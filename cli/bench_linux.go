package cli

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the benchmark daemon stopped (SIGTERM) when the loci
// that started it dies without its deferred stop, e.g. of a broken pipe.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
