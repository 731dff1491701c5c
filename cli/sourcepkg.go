package cli

import "github.com/spf13/cobra"

// sourcePackageCmds are the commands that ask the daemon about installed
// source packages: install, show, enable, disable, remove.
func (a *app) sourcePackageCmds() []*cobra.Command { return nil }
