package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/assets"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/integration"
	"github.com/loci-dev/loci/project"
	"github.com/loci-dev/loci/transport/client"
)

// integrationCmd is `loci integration list|install|update|remove`: local
// commands (no daemon needed) that write loci into an agent's own
// configuration files and take it out again.
func (a *app) integrationCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "integration",
		Short: "Plug loci into an agent (claude-code, codex, opencode): MCP entry, hooks, instructions",
		Long: `Plug loci into an agent in one command, and take it out again.

install writes, in the agent's own files and format: the MCP server entry for
this daemon's /mcp (or the stdio bridge "loci mcp" with --transport stdio),
hooks that call "loci hook <agent> <event>" at session start, before
compaction and at session end, and a short instructions block. Every edit is
made in place (other bytes of the file stay as they are), after a backup, and
recorded in a manifest under the loci configuration directory: update rewrites
only loci's parts, remove restores the files (a file loci created is deleted).
These commands run without the daemon; the MCP URL is the daemon's address
(--addr, the running daemon's registry file, else server.bind/port).`,
	}
	var project, dryRun, force, mineSessions bool
	var transport string
	scopeFlags := func(c *cobra.Command) {
		c.Flags().BoolVar(&project, "project", false, "the current project (its .loci.toml's directory, else the repository root, else the working directory) instead of the user's own configuration")
		c.Flags().BoolVar(&dryRun, "dry-run", false, "print the changes as a unified diff and write nothing")
	}
	run := func(op func(*integration.Env, context.Context, string, integration.Options) (*integration.Result, error), offer bool) func(*cobra.Command, []string) error {
		return func(c *cobra.Command, args []string) error {
			env, opt, err := a.integrationEnv(project)
			if err != nil {
				return err
			}
			opt.DryRun, opt.Force, opt.Transport = dryRun, force, transport
			res, err := op(env, c.Context(), args[0], opt)
			if err != nil {
				return err
			}
			if offer && !res.DryRun {
				if n := a.serviceOffer(c.Context(), env.URL); n != "" {
					res.Notes = append(res.Notes, n)
				}
				res.Notes = append(res.Notes, a.sessionsMiner(c.Context(), env, args[0], opt.Project, mineSessions)...)
			}
			a.printIntegration(res)
			return nil
		}
	}
	install := &cobra.Command{
		Use:   "install <agent>",
		Short: "Write loci's MCP entry, hooks and instructions into the agent's configuration",
		Args:  cobra.ExactArgs(1),
		RunE:  run((*integration.Env).Install, true),
	}
	scopeFlags(install)
	install.Flags().BoolVar(&force, "force", false, "replace an entry named loci that loci did not write (remove puts it back)")
	install.Flags().StringVar(&transport, "transport", "", "how the agent reaches loci, `http|stdio`: http (the daemon's /mcp, default) or stdio (the bridge \"loci mcp\")")
	install.Flags().BoolVar(&mineSessions, "mine-sessions", false, "also keep the agent's sessions: a miner of its session history and a watch trigger that mines each session seconds after it changes (needs the daemon)")
	update := &cobra.Command{
		Use:   "update <agent>",
		Short: "Rewrite loci's parts of an installed integration (address, binary path, assets)",
		Args:  cobra.ExactArgs(1),
		RunE:  run((*integration.Env).Update, false),
	}
	scopeFlags(update)
	update.Flags().StringVar(&transport, "transport", "", "how the agent reaches loci, `http|stdio` (default: as installed)")
	remove := &cobra.Command{
		Use:   "remove <agent>",
		Short: "Take loci out of the agent's configuration, restoring the files",
		Args:  cobra.ExactArgs(1),
		RunE:  run((*integration.Env).Remove, false),
	}
	scopeFlags(remove)
	list := &cobra.Command{
		Use:   "list",
		Short: "Show each supported agent: found here or not, its version, and what loci installed there",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			env, _, err := a.integrationEnv(false)
			if err != nil {
				return err
			}
			st := env.List(c.Context())
			if a.jsonOut {
				return a.out(st)
			}
			for _, s := range st {
				found := "not found"
				if s.Found {
					found = s.Path
					if s.Version != "" {
						found += " (" + s.Version + ")"
					}
				}
				a.printf("%s\t%s\tsupported %s\n", s.Agent, found, s.Supported)
				if s.Problem != "" && s.Found {
					a.printf("  problem: %s\n", s.Problem)
				}
				for _, in := range s.Installed {
					a.printf("  installed (%s, %s %s): %s\n", in.Scope, in.Transport, in.URL, strings.Join(in.Files, ", "))
				}
			}
			return nil
		},
	}
	cmd.AddCommand(list, install, update, remove)
	return cmd
}

// integrationEnv builds the engine's environment from the configuration,
// the flags and the process.
func (a *app) integrationEnv(inProject bool) (*integration.Env, integration.Options, error) {
	var opt integration.Options
	cfg, err := a.config()
	if err != nil {
		return nil, opt, err
	}
	set, err := assets.Open(cfg.Assets.Dir)
	if err != nil {
		return nil, opt, err
	}
	getenv := func(k string) string { v, _ := a.env(k); return v }
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return nil, opt, fault.Wrap(fault.ServerFailed, err, "cannot tell where this loci binary is", "run loci by its path")
	}
	env := &integration.Env{
		Getenv:   getenv,
		LookPath: exec.LookPath,
		StateDir: filepath.Join(config.ConfigDir(a.env), "integrations"),
		Assets:   set,
		Loci:     self,
		URL:      "http://" + dialable(a.address(cfg)) + "/mcp",
		Auth:     cfg.Auth.Enabled,
	}
	if !inProject {
		return env, opt, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, opt, fault.Wrap(fault.ServerFailed, err, "cannot read the working directory", "")
	}
	scope, err := project.Find(wd, getenv)
	if err != nil {
		return nil, opt, err
	}
	env.Wing, env.Room = scope.Wing, scope.Room
	opt.Project = projectDir(wd, scope)
	return env, opt, nil
}

// projectDir is the project a --project integration goes into: the
// directory of the .loci.toml that applies, else the repository root
// (the nearest parent holding .git), else the working directory.
func projectDir(wd string, scope project.Scope) string {
	if scope.File != "" {
		return filepath.Dir(scope.File)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return wd
		}
	}
}

// dialable turns a listener address on every interface (0.0.0.0, ::) into
// the loopback address a client on this machine dials.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if ip.To4() != nil {
			host = "127.0.0.1"
		} else {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port)
}

// printIntegration prints what an install, update or remove did (or, with
// --dry-run, would do).
func (a *app) printIntegration(res *integration.Result) {
	if a.jsonOut {
		_ = a.out(res)
		return
	}
	for _, ch := range res.Changes {
		if res.DryRun {
			if ch.Diff != "" {
				a.printf("%s", ch.Diff)
			}
			continue
		}
		a.printf("%-9s %s\n", ch.Action, ch.Path)
	}
	switch {
	case res.DryRun && !res.Changed:
		a.printf("%s (%s): nothing to change\n", res.Agent, res.Scope)
	case res.DryRun:
		a.printf("(dry run: nothing was written)\n")
	case !res.Changed:
		a.printf("%s (%s): nothing to change\n", res.Agent, res.Scope)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(a.stderr, "note: %s\n", safeText(n))
	}
}

// serviceOffer is install's offer of the login service when no daemon
// answers at the address the agent was given and no service is installed:
// the agent's memory is only there if the daemon runs when it starts.
func (a *app) serviceOffer(ctx context.Context, mcpURL string) string {
	u, err := url.Parse(mcpURL)
	if err != nil || a.healthy(ctx, u.Host) {
		return ""
	}
	if env, _, err := a.serviceEnv(nil, ""); err == nil {
		if env.Present() {
			return ""
		}
	}
	return "no loci daemon answers at " + u.Host + ", so the agent will find no memory: `loci service install` starts it now and at every login (or `loci daemon start` for this session)"
}

// sessionsMiner is install's retention guard: the agent's sessions are
// mined by a miner of its transcript source and a watch trigger on its
// session directory, so they outlive the agent's own cleanup. With
// --mine-sessions it creates (or leaves as they are) both through the
// daemon and runs the miner once; without, it offers them when the daemon
// has no such miner. Per project, the miner keeps only the project's
// sessions (the project option) and files them in the project's wing.
func (a *app) sessionsMiner(ctx context.Context, env *integration.Env, agent, project string, create bool) []string {
	dir, err := env.SessionsDir(agent)
	if err != nil {
		return []string{err.Error()}
	}
	name, wing := agent+"-sessions", agent
	opts := map[string]string{}
	if project != "" {
		if env.Wing == "" {
			return nil
		}
		name, wing = agent+"-sessions-"+env.Wing, env.Wing
		opts["project"] = project
	}
	u, err := url.Parse(env.URL)
	if err != nil || !a.healthy(ctx, u.Host) {
		if create {
			return []string{"no loci daemon answers, so the sessions' miner was not made: start it (loci daemon start) and run this again with --mine-sessions"}
		}
		return []string{fmt.Sprintf("to keep %s's sessions in loci (the agent deletes old ones), run this again with --mine-sessions once the daemon runs: it mines %s now and whenever a session changes", agent, dir)}
	}
	var existing api.Miner
	if _, err := a.call(ctx, http.MethodGet, "/api/miners/"+client.Esc(name), nil, &existing); err == nil {
		if !create {
			return nil
		}
		// The miner without its trigger (deleted, or its making failed):
		// make the trigger again.
		_, err := a.call(ctx, http.MethodGet, "/api/triggers/"+client.Esc(name), nil, nil)
		if rejected(err, fault.TriggerNotFound) {
			if err := a.sessionsTrigger(ctx, name, existing.Locator); err != nil {
				return []string{"the miner " + name + " has no watch trigger, and it was not made: " + err.Error()}
			}
			return []string{fmt.Sprintf("made the watch trigger %s on %s: sessions are mined seconds after they change", name, existing.Locator)}
		}
		return []string{fmt.Sprintf("the miner %s already mines %s (state %s)", name, existing.Locator, existing.State)}
	}
	if !create {
		return []string{fmt.Sprintf("to keep %s's sessions in loci (the agent deletes old ones), run this again with --mine-sessions: a miner %s of %s into wing %s and a watch trigger that mines each session seconds after it changes", agent, name, dir, wing)}
	}
	// An agent that has written no session yet has no session directory;
	// the miner's locator and the watch need one (the agent writes its
	// first session into it as it would have).
	var notes []string
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return []string{"the sessions' miner was not made: " + err.Error()}
		}
		notes = append(notes, "made "+dir+", where the agent will write its sessions")
	}
	on, src := true, agent
	put := api.MinerPut{Source: &src, Locator: &dir, Wing: &wing, Enabled: &on}
	if len(opts) > 0 {
		put.Options = opts
	}
	if _, err := a.call(ctx, http.MethodPut, "/api/miners/"+client.Esc(name), put, nil); err != nil {
		return []string{"the sessions' miner was not made: " + err.Error()}
	}
	if err := a.sessionsTrigger(ctx, name, dir); err != nil {
		return append(notes, "the miner "+name+" was made, but not its watch trigger: "+err.Error())
	}
	var job api.Job
	notes = append(notes, fmt.Sprintf("made the miner %s (%s into wing %s) and its watch trigger: sessions are mined seconds after they change", name, dir, wing))
	if _, err := a.call(ctx, http.MethodPost, "/api/miners/"+client.Esc(name)+"/run", nil, &job); err == nil {
		notes = append(notes, "mining the sessions there now: job "+job.ID)
	}
	return notes
}

// sessionsTrigger makes the watch trigger of the sessions' miner name on
// its directory.
func (a *app) sessionsTrigger(ctx context.Context, name, dir string) error {
	on, typ := true, "watch"
	trig := api.TriggerPut{Miner: &name, Type: &typ, Enabled: &on, Settings: map[string]any{"path": dir, "recursive": "true"}}
	_, err := a.call(ctx, http.MethodPut, "/api/triggers/"+client.Esc(name), trig, nil)
	return err
}

// rejected reports an error of the daemon's answer with the code.
func rejected(err error, code fault.Code) bool {
	var fe *fault.Error
	return errors.As(err, &fe) && fe.Code == fault.ClientRemoteRejected && fe.Remote == code
}
