package cli

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store/disk"
)

// backupsCmd is `loci backups` (the daemon's own backups in backup.dir)
// and `loci backups run` (one now). `loci backup` writes a backup where
// the caller says; these never name a path.
func (a *app) backupsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backups",
		Short: "List the daemon's own backups in backup.dir (the ones status counts); loci backup writes one to a file you choose",
		Long: `List the daemon's own backups in backup.dir (taken by "loci backups run" or
backup.schedule, rotated at backup.keep), newest first, with the last
successful one: these are the backups status, doctor and the dashboard count.
"loci backup" (no s) writes a backup to a file you choose instead.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var list api.BackupList
			if _, err := a.call(c.Context(), http.MethodGet, "/api/backups", nil, &list); err != nil {
				return err
			}
			if a.jsonOut {
				return a.out(list)
			}
			a.printBackups(list)
			return nil
		},
	}
	var wait bool
	run := &cobra.Command{
		Use:   "run",
		Short: "Queue a backup of the palace into backup.dir now (rotation at backup.keep)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var job api.Job
			if _, err := a.call(c.Context(), http.MethodPost, "/api/backups", map[string]any{}, &job); err != nil {
				return err
			}
			if wait {
				return a.watchJob(c.Context(), job.ID, job.Kind)
			}
			if a.jsonOut {
				return a.out(job)
			}
			a.printf("queued backup job %s (follow it: loci job watch %s; list the backups: loci backups)\n", job.ID, job.ID)
			return nil
		},
	}
	run.Flags().BoolVar(&wait, "wait", false, "follow the job until it ends")
	cmd.AddCommand(run)
	return cmd
}

func (a *app) printBackups(l api.BackupList) {
	sched := "no schedule (backup.schedule)"
	if l.Schedule != "" {
		sched = "scheduled " + l.Schedule
		if l.NextDue != nil {
			sched += ", next " + ago(*l.NextDue)
		}
	}
	a.printf("backups in %s (keep %d; %s)\n", l.Dir, l.Keep, sched)
	if len(l.Backups) == 0 {
		a.printf("  none\n")
	}
	for _, b := range l.Backups {
		what := fmt.Sprintf("store version %d, %d drawers", b.StoreVersion, b.Drawers)
		if b.Since > 0 {
			what = fmt.Sprintf("incremental after %d, ", b.Since) + what
		}
		if b.Error != "" {
			what = "NOT A BACKUP: " + b.Error
		}
		a.printf("  %s  %s  %s  %s\n", ago(b.CreatedAt), b.Name, disk.Bytes(b.Size), what)
	}
	a.printf("last:       %s\n", backupLine(l.BackupStatus))
	if l.Warning != "" {
		a.printf("warning:    %s\n", l.Warning)
	}
}

// backupLine reads "2026-11-26 03:00:00 (3h ago), loci-….backup", or
// says there is none.
func backupLine(b api.BackupStatus) string {
	if b.Last == nil {
		return "none yet (in " + b.Dir + ")"
	}
	return fmt.Sprintf("%s (%s ago), %s", ago(b.Last.CreatedAt), (time.Duration(b.AgeSecs) * time.Second).String(), b.Last.Name)
}

// backupFinding is doctor's backup check: the running daemon's report,
// else the store's and the folder's read here.
func (a *app) backupFinding(ctx context.Context, cfg config.Config, daemonUp bool) (Finding, bool) {
	if cfg.Datastore.Shared() {
		// loci backups and loci backup answer 501 on a shared store: its
		// database is backed up with PostgreSQL's tools, which loci cannot
		// see.
		return Finding{Check: "backup", Status: "ok", Detail: "not loci's to check: back up " + sharedWhere(cfg) +
			" with pg_dump -Fc (restored with pg_restore); loci backups run and loci backup --out do not apply to a shared store"}, true
	}
	var st api.BackupStatus
	switch {
	case daemonUp:
		var list api.BackupList
		if _, err := a.call(ctx, http.MethodGet, "/api/backups", nil, &list); err != nil {
			fe := fault.As(err)
			fix := cliHelp(fe.Help)
			if fe.Remote == fault.AuthUnauthorized {
				// The daemon's help speaks to any client; doctor's
				// reader is at the CLI.
				fix = "set LOCI_AUTH_TOKEN (or auth.token in the configuration file) to the daemon's token, then run loci doctor again"
			}
			return Finding{"backup", "warn", "not checked: " + fe.Msg, fix}, true
		}
		st = list.BackupStatus
	case a.local.Backups != nil:
		var err error
		if st, err = a.local.Backups(ctx, cfg); err != nil {
			fe := fault.As(err)
			return Finding{"backup", "warn", "not checked: " + fe.Msg, cliHelp(fe.Help)}, true
		}
	default:
		return Finding{}, false
	}
	if st.Warning != "" {
		fix := "run `loci backups run` with the daemon up (or `loci backup --out FILE`)"
		if st.Schedule == "" {
			fix += ", or set backup.schedule = { every = \"1d\" } in the configuration file"
		}
		return Finding{"backup", "warn", st.Warning, fix}, true
	}
	return Finding{Check: "backup", Status: "ok", Detail: "last backup: " + backupLine(st)}, true
}
