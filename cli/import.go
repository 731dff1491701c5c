package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/fault"
)

func (a *app) importCmd() *cobra.Command {
	var wingMap []string
	var dry, skip, noWait bool
	var identity string
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Import an export file (loci export) into the palace: ids kept, the same file twice changes nothing, conflicts reported",
		Long: "Import an export file written by loci export (JSON Lines, or age-encrypted: decrypted here with --identity, or\n" +
			"with the passphrase in " + export.PassphraseEnv + " or asked on the terminal). The daemon checks the whole file\n" +
			"before anything changes (a bad file is refused naming its line), then imports it as a job that survives a\n" +
			"restart. Records keep their ids: importing the same file again changes nothing; a record whose id holds\n" +
			"other content here is a conflict, reported and never overwritten; a drawer that copies one the palace holds\n" +
			"in its room is a duplicate, as a new drawer would be; a wing, room or entity whose name the palace holds\n" +
			"already takes the import. --wing-map A=B imports wing A as wing B; --dry-run reports what would change.",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			q := url.Values{}
			for _, p := range wingMap {
				if from, to, ok := strings.Cut(p, "="); !ok || from == "" || to == "" {
					return fault.Invalid("wing-map", fmt.Sprintf("%q is not FROM=TO (one wing a flag)", p))
				}
				q.Add("wing_map", p)
			}
			if dry {
				q.Set("dry_run", "true")
			}
			if skip {
				q.Set("skip_unknown", "true")
			}
			f, err := os.Open(args[0])
			if err != nil {
				return fault.Wrap(fault.IOFailed, err, "cannot read "+args[0]+": "+err.Error(), "give the path of a file written by loci export")
			}
			defer f.Close()
			if FileKind(args[0]) == KindBackup {
				return fault.Newf(fault.ExportInvalid, "restore a backup with `loci restore "+safeText(args[0])+"` (the daemon stopped); loci import takes a file written by `loci export`",
					"%s is a loci backup, not an export", args[0])
			}
			plain, err := export.Decrypt(f, identity, func() (string, error) { return a.exportPassphrase(c, false) })
			if err != nil {
				return err
			}
			cl, err := a.client()
			if err != nil {
				return err
			}
			if !a.jsonOut && a.stderrIsTerminal() {
				fmt.Fprintf(a.stderrOrDiscard(), "sending %s; the daemon checks all of it before anything changes…\n", safeText(args[0]))
			}
			body := &readErr{r: plain}
			var raw json.RawMessage
			_, err = cl.Upload(c.Context(), "/api/imports?"+q.Encode(), "application/x-ndjson", body, &raw)
			if body.err != nil && body.err != io.EOF {
				// The file failed while it was sent (an encrypted file
				// altered after it was encrypted): that is the error, not
				// the cut request.
				return body.err
			}
			if err != nil {
				return err
			}
			if dry {
				var rep api.ImportReport
				if err := json.Unmarshal(raw, &rep); err != nil {
					return fault.Wrap(fault.ClientRequestFailed, err, "the daemon's answer is not an import report", "check that client and daemon versions match")
				}
				if a.jsonOut {
					return a.out(rep)
				}
				a.printImportReport(&rep)
				return nil
			}
			var job api.Job
			if err := json.Unmarshal(raw, &job); err != nil {
				return fault.Wrap(fault.ClientRequestFailed, err, "the daemon's answer is not a job", "check that client and daemon versions match")
			}
			if noWait {
				if a.jsonOut {
					return a.out(job)
				}
				a.printf("queued import job %s (follow it: loci job watch %s)\n", job.ID, job.ID)
				return nil
			}
			return a.watchJob(c.Context(), job.ID, job.Kind)
		},
	}
	cmd.Flags().StringArrayVar(&wingMap, "wing-map", nil, "import the file's wing FROM as wing TO (FROM=TO; FROM must be a wing of the file; a TO the palace holds is merged into, records whose ids it holds are conflicts); repeatable")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "report what the import would change, and change nothing")
	cmd.Flags().BoolVar(&skip, "skip-unknown", false, "skip records of types this version does not know (a newer loci's file) instead of refusing the file")
	cmd.Flags().StringVar(&identity, "identity", "", "age identity file to decrypt an encrypted export with (age-keygen's output)")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "queue the import job and return (follow it with loci job watch)")
	return cmd
}

// readErr remembers the error its reader failed with.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil {
		r.err = err
	}
	return n, err
}

// printImportReport prints an import's report for people.
func (a *app) printImportReport(rep *api.ImportReport) {
	verb := "imported"
	if rep.DryRun {
		verb = "dry run, nothing changed: would import"
	}
	t := rep.Totals
	a.printf("%s %d records: %d created, %d unchanged, %d updated, %d merged, %d conflicts, %d duplicates, %d skipped\n",
		verb, rep.Records, t.Created, t.Unchanged, t.Updated, t.Merged, t.Conflicts, t.Duplicates, t.Skipped)
	types := make([]string, 0, len(rep.Types))
	for k := range rep.Types {
		types = append(types, k)
	}
	slices.Sort(types)
	for _, k := range types {
		c := rep.Types[k]
		a.printf("  %-12s %d created, %d unchanged, %d updated, %d merged, %d conflicts, %d duplicates, %d skipped\n",
			k, c.Created, c.Unchanged, c.Updated, c.Merged, c.Conflicts, c.Duplicates, c.Skipped)
	}
	for _, list := range []struct {
		name  string
		n     int
		items []api.ImportIssue
	}{{"conflicts (kept the palace's record)", t.Conflicts, rep.Conflicts}, {"skipped", t.Skipped, rep.Skipped}} {
		if len(list.items) == 0 {
			continue
		}
		a.printf("%s:\n", list.name)
		for _, is := range list.items {
			a.printf("  line %d, %s %s: %s\n", is.Line, is.Type, is.ID, is.Reason)
		}
		if more := list.n - len(list.items); more > 0 {
			a.printf("  … and %d more\n", more)
		}
	}
	for _, n := range rep.Notes {
		a.printf("note: %s\n", n)
	}
}
