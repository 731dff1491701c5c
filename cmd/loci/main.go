// Command loci is the composition root: it wires configuration, logger,
// store, actors and transport, and hands the command line to package cli.
// It is the only package that imports everything.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/loci-dev/loci/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// commit is the source commit, set at build time with -ldflags "-X main.commit=...".
var commit string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, cli.Local{
		Version:   version,
		Commit:    commit,
		Serve:     serve,
		Migrate:   migrate,
		MigrateTo: migrateTo,
		OpenCheck: openCheck,
		Disk:      diskCheck,
		Backups:   backupCheck,

		VerifyBackup:     verifyBackup,
		ReadBackupHeader: readBackupHeader,
		Restore:          restore,

		SourceTest: sourceTest,
	}, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
