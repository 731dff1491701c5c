package cli

import (
	"os"

	"github.com/spf13/cobra"
)

// Command returns loci's root command with every subcommand, for tools
// that read the command tree (the packaging's shell completions and manual
// pages); local holds the version, and its other bodies may be nil when
// the command is not executed.
func Command(local Local) *cobra.Command {
	a := &app{local: local, stdout: os.Stdout, stderr: os.Stderr, env: os.LookupEnv}
	return a.root()
}
