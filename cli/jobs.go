package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/transport/client"
)

func (a *app) printJob(j *api.Job) {
	a.printf("id:        %s\n", j.ID)
	a.printf("kind:      %s (priority %s, requested by %s)\n", j.Kind, j.Priority, j.RequestedBy)
	status := j.Status
	if j.PauseRequested {
		status += ", pause requested"
	}
	if j.CancelRequested {
		status += ", cancel requested"
	}
	a.printf("status:    %s\n", status)
	if j.Status == "running" && j.LeaseOwner != "" {
		// On a shared store the daemon running it (host/pid/instance):
		// force-cancel there.
		a.printf("run by:    %s\n", j.LeaseOwner)
	}
	if j.Node != "" {
		a.printf("runs on:   %s (it reads that machine's files: only a daemon there runs it)\n", j.Node)
	}
	a.printf("progress:  %s\n", progressText(j.Progress))
	a.printf("created:   %s\n", ago(j.CreatedAt))
	if j.FinishedAt != nil {
		a.printf("finished:  %s\n", ago(*j.FinishedAt))
	}
	a.printf("attempts:  %d (crash recoveries %d)\n", j.Attempt, j.RecoveryAttempts)
	if j.Error != "" {
		a.printf("error:     %s\n", j.Error)
	}
	var m api.MineResult
	var rep api.ImportReport
	if len(j.Result) > 0 && j.Kind == "import" && json.Unmarshal(j.Result, &rep) == nil {
		a.printImportReport(&rep)
		return
	}
	if len(j.Result) > 0 && (j.Kind != "mine" || json.Unmarshal(j.Result, &m) != nil) {
		a.printf("result:    %s\n", j.Result)
	} else if len(j.Result) > 0 {
		a.printf("mined %d of %d documents found: %d changed the palace, %d unchanged, %d filtered, %d skipped\n",
			m.Documents, m.Discovered, m.Ingested, m.Unchanged, m.Filtered, m.Skipped)
		a.printf("drawers: %d created, %d superseded, %d closed; %d similar; %d secrets redacted\n",
			m.Created, m.Superseded, m.Retired, m.Similar, m.Redacted)
		if m.Pruned > 0 || m.Refiled > 0 {
			a.printf("documents: %d filed again (drawers had been deleted), %d gone from the source (pruned)\n", m.Refiled, m.Pruned)
		}
		if m.Note != "" {
			a.printf("%s\n", m.Note)
		} else if m.Truncated && m.Limit != nil {
			a.printf("stopped at the limit of %d documents: mine again to go on\n", *m.Limit)
		}
	}
}

func progressText(p api.Progress) string {
	s := strconv.FormatInt(p.Current, 10)
	if p.Total != nil {
		s += "/" + strconv.FormatInt(*p.Total, 10)
	}
	if p.Message != "" {
		s += " " + p.Message
	}
	return s
}

// submit posts a job and prints it; with watch, follows it to its end.
func (a *app) submit(c *cobra.Command, body map[string]any, watch bool) error {
	body["requested_by"] = "cli"
	var job api.Job
	if _, err := a.call(c.Context(), http.MethodPost, "/api/jobs", body, &job); err != nil {
		return err
	}
	if watch {
		return a.watchJob(c.Context(), job.ID, job.Kind)
	}
	if a.jsonOut {
		return a.out(job)
	}
	a.printf("queued %s job %s (follow it: loci job watch %s)\n", job.Kind, job.ID, job.ID)
	return nil
}

func (a *app) jobCmd() *cobra.Command {
	j := &cobra.Command{Use: "job", Short: "List, follow and control jobs"}
	var status, kind string
	var limit int
	var all bool
	list := &cobra.Command{
		Use: "list", Short: "List jobs, newest first (the daemon's own embed and extract follow-ups with --all)", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			q := url.Values{}
			hidden := 0
			if !all && kind == "" {
				// The daemon's own follow-ups (an embed job after each
				// write) would be half the list: left out, and counted.
				q.Set("automatic", "false")
				var auto api.JobList
				aq := url.Values{"automatic": {"true"}}
				if status != "" {
					aq.Set("status", status)
				}
				if _, err := a.call(c.Context(), http.MethodGet, "/api/jobs?"+aq.Encode(), nil, &auto); err != nil {
					return err
				}
				hidden = len(auto.Jobs)
			}
			if status != "" {
				q.Set("status", status)
			}
			if kind != "" {
				q.Set("kind", kind)
			}
			if limit != 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			return show(a, c.Context(), http.MethodGet, "/api/jobs?"+q.Encode(), nil, func(out *api.JobList) {
				if len(out.Jobs) == 0 {
					a.printf("no jobs\n")
				}
				for _, job := range out.Jobs {
					a.printf("%s  %-10s %-9s %-10s %s\n", job.ID, job.Kind, job.Status, progressText(job.Progress), ago(job.CreatedAt))
				}
				if hidden > 0 {
					a.printf("(%d automatic jobs hidden: the embed and extract jobs the daemon queues after writes; --all shows them)\n", hidden)
				}
			})
		},
	}
	list.Flags().StringVar(&status, "status", "", "only jobs in this status")
	list.Flags().StringVar(&kind, "kind", "", "only jobs of this kind")
	list.Flags().IntVar(&limit, "limit", 0, "at most this many (default every job; 50 with --kind; max 200)")
	list.Flags().BoolVar(&all, "all", false, "also the jobs the daemon queued on its own (embed after writes, extract after mining)")
	j.AddCommand(list)
	j.AddCommand(&cobra.Command{
		Use: "get ID", Short: "Show one job", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/jobs/"+client.Esc(args[0]), nil, a.printJob)
		},
	})
	for _, act := range []struct{ name, short string }{
		{"pause", "Pause a running job at its next step"},
		{"resume", "Queue a paused job again"},
		{"cancel", "Cancel a queued, paused or running job"},
		{"retry", "Queue a failed job again"},
	} {
		j.AddCommand(&cobra.Command{
			Use: act.name + " ID", Short: act.short, Args: cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				return show(a, c.Context(), http.MethodPost, "/api/jobs/"+client.Esc(args[0])+"/"+act.name, nil, a.printJob)
			},
		})
	}
	j.AddCommand(&cobra.Command{
		Use: "watch ID", Short: "Follow a job with a progress bar until it ends", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return a.watch(c.Context(), args[0]) },
	})
	return j
}

// watch polls a job and draws its progress until it is finished; the exit
// status is an error when it failed or was cancelled.
func (a *app) watch(ctx context.Context, id string) error { return a.watchJob(ctx, id, "") }

// watchJob is watch of a job of kind ("" when unknown until read).
func (a *app) watchJob(ctx context.Context, id, kind string) error {
	var bar *progressbar.ProgressBar
	job := api.Job{ID: id, Kind: kind}
	for {
		if _, err := a.call(ctx, http.MethodGet, "/api/jobs/"+client.Esc(id), nil, &job); err != nil {
			if bar != nil {
				fmt.Fprintln(a.stderrOrDiscard())
			}
			return lostJob(err, id, job.Kind)
		}
		if !a.jsonOut && a.stderrIsTerminal() {
			total := int64(-1)
			if job.Progress.Total != nil {
				total = *job.Progress.Total
			}
			if bar == nil {
				bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(a.stderrOrDiscard()),
					progressbar.OptionSetDescription(job.Kind+" "+job.ID[:8]), progressbar.OptionShowCount(),
					progressbar.OptionSetPredictTime(false), progressbar.OptionClearOnFinish())
			}
			if total >= 0 && bar.GetMax64() != total {
				bar.ChangeMax64(total)
			}
			_ = bar.Set64(job.Progress.Current)
		}
		if job.Finished() || job.Status == "paused" {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(a.stderrOrDiscard())
	}
	if a.jsonOut {
		_ = a.out(job)
	} else {
		a.printJob(&job)
	}
	switch job.Status {
	case "failed":
		return &exitError{code: 1, err: fault.Newf(fault.InputInvalid, "see the error above; loci job retry "+job.ID, "job %s failed", job.ID)}
	case "cancelled":
		return &exitError{code: 1, err: fault.Newf(fault.InputInvalid, "it was cancelled", "job %s was cancelled", job.ID)}
	}
	return nil
}

// lostJob is the error of a wait whose daemon went away (stopped, killed,
// unreachable): the job it waited on is named, since it resumes when the
// daemon starts again and the user would not know it otherwise.
func lostJob(err error, id, kind string) error {
	var fe *fault.Error
	if !errors.As(err, &fe) || (fe.Code != fault.ClientNotRunning && fe.Code != fault.ClientRequestFailed) {
		return err
	}
	what := "job " + id
	if kind != "" {
		what = kind + " job " + id
	}
	lost := *fe
	lost.Help = fmt.Sprintf("this waited on the %s, which resumes when the daemon runs again (loci daemon start): follow it with loci job watch %s, or read it with loci job get %s",
		what, id, id)
	return &lost
}

// stderrIsTerminal reports whether a progress bar can be drawn.
func (a *app) stderrIsTerminal() bool {
	f, ok := a.stderr.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (a *app) stderrOrDiscard() io.Writer {
	if a.stderr == nil {
		return io.Discard
	}
	return a.stderr
}

func (a *app) checkpointCmd() *cobra.Command {
	var file string
	var emergency, watch bool
	cmd := &cobra.Command{
		Use:   "checkpoint [-f FILE]",
		Short: "Submit a checkpoint job: a JSON payload {items: [...]} from a file or stdin",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var r io.Reader = c.InOrStdin()
			if f, ok := r.(*os.File); ok && file == "" && term.IsTerminal(int(f.Fd())) {
				return fault.New(fault.InputInvalid, "no checkpoint payload: standard input is a terminal",
					"pass -f FILE, or pipe the JSON payload {\"items\": [...]} into loci checkpoint")
			}
			if file != "" && file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return fault.Wrap(fault.IOFailed, err, "cannot read "+file, "check the path")
				}
				defer f.Close()
				r = f
			}
			b, err := io.ReadAll(io.LimitReader(r, 64<<20))
			if err != nil {
				return fault.Wrap(fault.IOFailed, err, "cannot read the payload", "pass -f FILE or pipe the JSON in")
			}
			if len(bytes.TrimSpace(b)) == 0 {
				return fault.New(fault.InputInvalid, "the checkpoint payload is empty", "pass -f FILE, or pipe the JSON payload {\"items\": [...]} into loci checkpoint")
			}
			if !json.Valid(b) {
				return fault.New(fault.InputInvalid, "the checkpoint payload is not valid JSON", "correct the payload: a JSON object {\"items\": [...]}")
			}
			b, err = a.projectCheckpoint(b)
			if err != nil {
				return err
			}
			body := map[string]any{"type": "checkpoint", "payload": json.RawMessage(b)}
			if emergency {
				body["emergency"] = true
			}
			return a.submit(c, body, watch)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "payload file (default stdin)")
	cmd.Flags().BoolVar(&emergency, "emergency", false, "run at critical priority")
	cmd.Flags().BoolVar(&watch, "watch", false, "follow the job until it ends")
	return cmd
}

func (a *app) auditCmd() *cobra.Command {
	var wing string
	var watch bool
	cmd := &cobra.Command{
		Use: "audit", Short: "Submit an audit job (orphans, dangling job references, exhausted jobs)", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			body := map[string]any{"type": "audit"}
			if wing != "" {
				body["wing"] = wing
			}
			return a.submit(c, body, watch)
		},
	}
	cmd.Flags().StringVar(&wing, "wing", "", "audit one wing")
	cmd.Flags().BoolVar(&watch, "watch", false, "follow the job until it ends")
	return cmd
}

func (a *app) repairCmd() *cobra.Command {
	var apply, watch bool
	var based string
	cmd := &cobra.Command{
		Use: "repair", Short: "Submit a repair job: remove orphan drawers (a dry run unless --apply)", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			body := map[string]any{"type": "repair", "dry_run": !apply}
			if based != "" {
				body["based_on_job"] = based
			}
			return a.submit(c, body, watch)
		},
	}
	cmd.Flags().BoolVar(&apply, "apply", false, "remove the orphans (default: report only)")
	cmd.Flags().StringVar(&based, "based-on-job", "", "narrow to the orphans a finished audit job found")
	cmd.Flags().BoolVar(&watch, "watch", false, "follow the job until it ends")
	return cmd
}

func (a *app) mineCmd() *cobra.Command {
	var wing, source string
	var full, noWait, prune bool
	var opts []string
	cmd := &cobra.Command{
		Use:   "mine PATH | mine --source NAME [LOCATOR]",
		Short: "Mine a directory (or another source, such as an agent's sessions) into drawers; mine again to file what changed",
		Long: "Mine a directory: each file becomes drawers in room files of a wing (by default the directory's name),\n" +
			"named by its path under the directory. Mining again files only what changed since, in that wing (each wing\n" +
			"has its own cursor, so a new wing gets everything): edited files supersede their drawers, shortened ones close\n" +
			"the rest, and files whose drawers were deleted are filed again; --full reads everything again without\n" +
			"duplicating. Deleted files stay current unless --prune closes their drawers (history and as_of keep them).\n" +
			"The daemon reads the directory, so it must be on the daemon's machine. Secrets found in files are\n" +
			"redacted (mining.secrets).\n\n" +
			"--source mines another source (loci source list shows them): claude-code, codex and opencode read the\n" +
			"agents' sessions (LOCATOR defaults to the agent's own location, the wing to the source's name; a quoted\n" +
			"'~/...' LOCATOR is under the home of the daemon's user); chatgpt-export and claude-export an unzipped\n" +
			"export's folder; git-history the commits reachable from HEAD (the checked-out branch) of the git repository\n" +
			"whose top folder is LOCATOR; directory-wasm a directory, read in a WebAssembly sandbox; an installed source\n" +
			"package (loci source install) reads what its LOCATOR names, with the permissions consented to.",
		Args: cobra.RangeArgs(0, 1),
		RunE: func(c *cobra.Command, args []string) error {
			if source == "" && len(args) != 1 {
				return fault.Invalid("path", "give the directory to mine (or --source NAME for another source)")
			}
			var loc string
			if len(args) == 1 && source != "" && (args[0] == "~" || strings.HasPrefix(args[0], "~/")) {
				// A locator under the home of the daemon's user, which
				// the source resolves there ('~/.codex/sessions', quoted).
				loc = args[0]
			} else if len(args) == 1 {
				p, err := filepath.Abs(args[0])
				if err != nil {
					return fault.Wrap(fault.InputInvalid, err, "cannot make "+args[0]+" absolute", "give an absolute path")
				}
				loc = p
			}
			body := map[string]any{"type": "mine", "path": loc}
			if source != "" {
				body = map[string]any{"type": "mine", "source": source, "locator": loc}
			}
			if wing != "" {
				body["wing"] = wing
			}
			if full {
				body["full"] = true
			}
			m, err := keyValues(opts)
			if err != nil {
				return err
			}
			if prune {
				if m == nil {
					m = map[string]string{}
				}
				m["prune"] = "true"
			}
			if m != nil {
				body["options"] = m
			}
			return a.submit(c, body, !noWait)
		},
	}
	cmd.Flags().StringVar(&wing, "wing", "", "wing to file into (default: the directory's name)")
	cmd.Flags().StringVar(&source, "source", "", "mine this source instead of a directory (see loci source list), with LOCATOR as its locator")
	cmd.Flags().BoolVar(&full, "full", false, "read everything again, not only what changed (nothing is duplicated)")
	cmd.Flags().BoolVar(&prune, "prune", false, "close the drawers of files gone from the directory (the option prune=true; by default they stay current); the directory source and the other built-in ones take it, git-history, directory-wasm and other source packages do not")
	cmd.Flags().StringArrayVarP(&opts, "option", "o", nil, "a source option, key=value (dir=PATTERN, since=DATE, prune=true: the directory source's; loci source list shows each source's); repeatable")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "queue the job and return (follow it with loci job watch)")
	return cmd
}

// keyValues reads --option key=value flags (nil when none).
func keyValues(list []string) (map[string]string, error) {
	var out map[string]string
	for _, o := range list {
		k, v, ok := strings.Cut(o, "=")
		if !ok || k == "" {
			return nil, fault.Invalid("option", fmt.Sprintf("%q is not key=value", o))
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out, nil
}

func (a *app) demoCmd() *cobra.Command {
	var steps int
	cmd := &cobra.Command{
		Use: "demo", Short: "Fill the palace with a small sample to try loci with", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			body := map[string]any{"type": "demo"}
			if steps != 0 {
				body["steps"] = steps
			}
			return a.submit(c, body, true)
		},
	}
	cmd.Flags().IntVar(&steps, "steps", 0, "run only the first steps of the sample")
	return cmd
}

func (a *app) wakeUpCmd() *cobra.Command {
	var agent, wing string
	var items, bytes int
	cmd := &cobra.Command{
		Use: "wake-up", Short: "Session-start context: the agent's latest diary entry and recent checkpoints", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := required("agent", agent, "NAME (the agent whose diary and checkpoints to read)"); err != nil {
				return err
			}
			q := url.Values{"agent_identity": {agent}}
			wing, err := a.filterWing(c, wing)
			if err != nil {
				return err
			}
			if wing != "" {
				q.Set("wing", wing)
			}
			if items != 0 {
				q.Set("max_items", strconv.Itoa(items))
			}
			if bytes != 0 {
				q.Set("max_bytes", strconv.Itoa(bytes))
			}
			return show(a, c.Context(), http.MethodGet, "/api/wake-up?"+q.Encode(), nil, func(out *api.WakeUp) {
				if out.Diary != nil {
					a.printf("latest diary entry (%s):\n%s\n\n", ago(out.Diary.CreatedAt), out.Diary.Content)
				}
				if ls := out.LastSession; ls != nil {
					a.printf("%s\n%s\n\n", lastSessionHeading(ls), strings.TrimSpace(ls.Content))
				}
				for _, d := range out.Items {
					whose := ""
					if d.Unattributed {
						whose = "  (unattributed: no agent signed it)"
					}
					a.printf("%s  %s%s\n%s\n\n", ago(d.CreatedAt), d.ID, whose, d.Content)
				}
				if out.Diary == nil && len(out.Items) == 0 && out.LastSession == nil {
					a.printf("nothing to wake up to yet: no diary entry of %s and no checkpoint it signed or nobody signed\n", agent)
				}
			})
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "agent identity (required)")
	cmd.Flags().StringVar(&wing, "wing", "", "wing of the agent's diary (default: the project's, from .loci.toml; --wing= for every wing)")
	cmd.Flags().IntVar(&items, "max-items", 0, "at most this many checkpoint drawers (default 10)")
	cmd.Flags().IntVar(&bytes, "max-bytes", 0, "at most this many bytes of content (default 8192)")
	return cmd
}

// cliExcerpt is the bytes of a hit's content the CLI shows by default:
// the daemon's window around the passage that matched.
const cliExcerpt = 280

// hitTitle is a hit's title line: where it lives in words (its address
// wing/room/name, or wing/room and its document's path and chunk number,
// or its source file), the day it is valid from and its score.
func hitTitle(h *api.Hit) string {
	place := h.Wing + "/" + h.Room
	switch {
	case h.Name != "":
		place += "/" + h.Name
	case h.Document != "":
		place += fmt.Sprintf("  %s #%d", h.Document, h.Chunk)
	case h.Source.URI != "":
		place += "  " + h.Source.URI
	}
	title := fmt.Sprintf("%s  %s  score %.3g", place, h.ValidFrom.Local().Format("2006-01-02"), h.Score)
	if t := h.Turn; t != nil {
		// A transcript's hit: who said what matched, and when.
		title += "  (" + turnLabel(t) + ")"
	}
	// Found with --all or a time window: say it is not current.
	if h.ValidTo != nil {
		if h.SupersededBy != "" {
			title += fmt.Sprintf("  [superseded %s by %s]", h.ValidTo.Local().Format("2006-01-02"), h.SupersededBy)
		} else {
			title += fmt.Sprintf("  [closed %s]", h.ValidTo.Local().Format("2006-01-02"))
		}
	}
	if len(h.Via) > 0 {
		// An expanded hit: added after the direct ones, through these.
		title += "  (linked through " + strings.Join(h.Via, ", ") + ")"
	}
	return title
}

// unreadHit is whether h is known by its id and score only: a search
// answered while the store is unreachable, from the daemon's own index,
// for a drawer the daemon has not read recently (no wing, room or time).
func unreadHit(h *api.Hit) bool {
	return h.Wing == "" && h.Room == "" && h.ValidFrom.IsZero() && h.Content == ""
}

// unreadTitle is the line of a hit known by id and score only: "drawer
// <id>  score 11.8 (not readable while the store is unreachable)".
func unreadTitle(h *api.Hit) string {
	return fmt.Sprintf("drawer %s  score %.3g (not readable while the store is unreachable)", h.ID, h.Score)
}

// turnLabel names a transcript hit's turn: "user, 2026-11-25 10:03" (the
// time local, to the minute), "sub-agent assistant, …".
func turnLabel(t *api.HitTurn) string {
	who := t.Role
	if t.SubAgent {
		who = "sub-agent " + who
	}
	if at, err := time.Parse(time.RFC3339, t.At); err == nil {
		who += ", " + at.Local().Format("2006-01-02 15:04")
	}
	return who
}

// excerpt shows a hit's content window as an indented block without
// blank lines, with an ellipsis where the drawer goes on.
func excerpt(h *api.Hit) string {
	var lines []string
	for _, l := range strings.Split(h.Content, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, "   "+l)
		}
	}
	if len(lines) == 0 {
		return "   (blank)"
	}
	if h.Window != nil && h.Window[0] > 0 {
		lines[0] = "   …" + lines[0][3:]
	}
	if h.Window != nil && h.Window[1] < h.FullBytes {
		lines[len(lines)-1] += "…"
	}
	return strings.Join(lines, "\n")
}

func (a *app) searchCmd(recall bool) *cobra.Command {
	var wing, room, ranking, kind, asOf, from, until, profile string
	var tags []string
	var limit, maxBytes, maxHitBytes int
	var historical, expand, full bool
	use, short, path := "search TEXT...", "Search drawers (lexical, semantic or hybrid; filters apply before ranking)", "/api/search"
	if recall {
		use, short, path = "recall TEXT...", "Recall across a wing or the whole palace (like search, room ignored)", "/api/recall"
	}
	cmd := &cobra.Command{
		Use: use, Short: short, Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			wing, err := a.filterWing(c, wing)
			if err != nil {
				return err
			}
			filter := &api.SearchFilter{Wing: wing, Tags: tags, SourceKind: kind}
			if !recall {
				filter.Room = room
			}
			given := 0
			for _, g := range []bool{asOf != "", from != "" || until != "", historical} {
				if g {
					given++
				}
			}
			if given > 1 {
				return fault.Invalid("as-of", "--as-of, --from/--until and --all cannot be combined")
			}
			switch {
			case asOf != "":
				filter.Temporal, _ = json.Marshal(map[string]any{"as_of": asOf})
			case from != "" || until != "":
				filter.Temporal, _ = json.Marshal(map[string]any{"between": map[string]any{"from": from, "until": until}})
			case historical:
				filter.Temporal = json.RawMessage(`"all"`)
			}
			body := api.SearchRequest{Text: strings.Join(args, " "), Ranking: ranking, Limit: limit, Filter: filter,
				Expand: expand, Profile: profile, MaxBytes: maxBytes, MaxHitBytes: maxHitBytes}
			brief := !full && !a.jsonOut
			if brief && maxHitBytes == 0 {
				body.MaxHitBytes = cliExcerpt
			}
			return show(a, c.Context(), http.MethodPost, path, body, func(out *api.SearchResult) {
				if out.Warning != "" {
					a.printf("warning: %s\n\n", out.Warning)
				}
				if len(out.Hits) == 0 {
					a.printf("nothing found\n")
				}
				for i := range out.Hits {
					h := &out.Hits[i]
					if unreadHit(h) {
						a.printf("%d. %s\n\n", i+1, unreadTitle(h))
						continue
					}
					if brief {
						a.printf("%d. %s\n%s\n   drawer %s\n\n", i+1, hitTitle(h), excerpt(h), h.ID)
					} else {
						a.printf("%d. %s  %s\n%s\n\n", i+1, hitTitle(h), h.ID, h.Content)
					}
				}
				if out.Omitted > 0 {
					a.printf("%d more hits did not fit --max-bytes\n", out.Omitted)
				}
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&wing, "wing", "", "only this wing (default: the project's, from .loci.toml; --wing= for every wing)")
	if !recall {
		f.StringVar(&room, "room", "", "only this room (needs --wing)")
	}
	f.StringSliceVar(&tags, "tag", nil, "only drawers carrying every one of these tags")
	f.StringVar(&kind, "source-kind", "", "only this source kind (file, manual, transcript, note, other)")
	f.StringVar(&ranking, "ranking", "", "auto (default), lexical, semantic or hybrid")
	f.IntVar(&limit, "limit", 0, "how many hits (default 10, max 200)")
	f.StringVar(&asOf, "as-of", "", "drawers valid at this instant (RFC 3339 or YYYY-MM-DD)")
	f.StringVar(&from, "from", "", "drawers valid at some moment from this instant (with --until)")
	f.StringVar(&until, "until", "", "... to this instant, excluded")
	f.BoolVar(&historical, "all", false, "current and superseded drawers, no time filter")
	f.StringVar(&profile, "profile", "", "embedding profile")
	f.BoolVar(&expand, "expand", false, "append drawers related through the knowledge graph")
	f.BoolVar(&full, "full", false, "print whole drawers (by default each hit shows an excerpt around what matched)")
	f.IntVar(&maxBytes, "max-bytes", 0, "the whole answer in at most this many bytes, hits clipped around what matched (512 or more)")
	f.IntVar(&maxHitBytes, "max-hit-bytes", 0, fmt.Sprintf("each hit's content in at most this many bytes (64 or more; the excerpt: %d)", cliExcerpt))
	return cmd
}

// projectCheckpoint files a payload's project items that name no wing in
// the project's wing (LOCI_WING, else .loci.toml), as the agents' hooks
// do; without a project wing, or for a payload that is not an object of
// items, the payload goes as written.
func (a *app) projectCheckpoint(b []byte) ([]byte, error) {
	wing, err := a.optionalPlace("", "LOCI_WING", "wing")
	if err != nil || wing == "" {
		return b, err
	}
	var payload map[string]json.RawMessage
	var items []map[string]json.RawMessage
	if json.Unmarshal(b, &payload) != nil || json.Unmarshal(payload["items"], &items) != nil {
		return b, nil
	}
	changed := false
	for _, it := range items {
		var dest string
		if json.Unmarshal(it["destination"], &dest) == nil && dest == "project" && it["wing"] == nil {
			it["wing"], _ = json.Marshal(wing)
			changed = true
		}
	}
	if !changed {
		return b, nil
	}
	payload["items"], _ = json.Marshal(items)
	return json.Marshal(payload)
}

// stdoutIsTerminal reports whether standard output is a terminal.
func (a *app) stdoutIsTerminal() bool {
	f, ok := a.stdout.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
