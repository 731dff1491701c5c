package cli

import "github.com/spf13/cobra"

// sourceDevCmds are the local commands for writing a source package, no
// daemon needed: init, build, test, package, index, keygen.
func (a *app) sourceDevCmds() []*cobra.Command { return nil }
