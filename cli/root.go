// Package cli is loci's command line: cobra commands, human and --json
// output and exit codes. Most commands are HTTP clients of the daemon; the
// local ones (serve, daemon start/restart, migrate, offline doctor,
// completion, loci source test and loci plugin test) get their bodies
// from the composition root through Local; the other source package and
// plugin development commands (source init, build, package, index,
// keygen; plugin package, inspect, sign) run here.
// Results go to stdout, everything else to stderr.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/project"
	"github.com/loci-dev/loci/transport/client"
)

// Local holds the bodies of the commands that run without a daemon. The
// composition root (cmd/loci) provides them.
type Local struct {
	Version string
	// Commit is the source commit the binary was built from, or "".
	Commit string
	// Serve runs the daemon in the foreground until ctx ends or it is
	// asked to stop.
	Serve func(ctx context.Context, cfg config.Config, log *slog.Logger, level slog.Level) error
	// Migrate runs schema sync and data steps on the palace.
	Migrate func(ctx context.Context, cfg config.Config, log *slog.Logger) (MigrateReport, error)
	// MigrateTo copies the palace into an empty store elsewhere (loci
	// migrate --to), verifies the copy and reports it.
	MigrateTo func(ctx context.Context, cfg config.Config, log *slog.Logger, o MigrateToOptions) (MigrateToReport, error)
	// OpenCheck opens and closes the store, for doctor.
	OpenCheck func(ctx context.Context, cfg config.Config) error
	// Disk reports the palace's free space against the reserve, for
	// doctor; nil: not checked.
	Disk func(cfg config.Config) api.Disk
	// Backups reports the last backup and its warning from the store and
	// backup.dir, for doctor without a daemon; nil: not checked.
	Backups func(ctx context.Context, cfg config.Config) (api.BackupStatus, error)
	// VerifyBackup checks a backup file end to end (loci backup verify,
	// and each downloaded backup before it takes its name).
	VerifyBackup func(ctx context.Context, path string) (api.BackupHeader, error)
	// ReadBackupHeader reads a backup file's header (loci backup --since
	// FILE).
	ReadBackupHeader func(path string) (api.BackupHeader, error)
	// Restore restores backup files into the palace, the daemon stopped.
	Restore func(ctx context.Context, cfg config.Config, log *slog.Logger, o RestoreOptions) (api.RestoreReport, error)
	// SourceTest runs the conformance cases against the source package
	// built in dir (its manifest and module), in the sandbox with the
	// manifest's permissions, over the folder locator: it writes the
	// permissions in words, then one PASS or FAIL line per case to out,
	// and is an error when a case fails (loci source test).
	SourceTest func(ctx context.Context, dir, locator string, out io.Writer) error
}

// MigrateReport says what migrate did.
type MigrateReport struct {
	Ran         []int  `json:"ran"`
	SchemaHash  string `json:"schema_hash"`
	DataVersion int    `json:"data_version"`
	Latest      int    `json:"latest"`
}

// Exit codes.
const (
	ExitOK         = 0
	ExitError      = 1
	ExitNotRunning = 3
)

// app is the state shared by the commands of one invocation.
type app struct {
	local  Local
	stdout io.Writer
	stderr io.Writer
	env    func(string) (string, bool)

	configFile string
	jsonOut    bool
	mode       string
	addr       string

	cfg *config.Config
	// scope is the project scope, read once (scopeRead); scopeErr is
	// its loci::project::invalid.
	scope     project.Scope
	scopeErr  error
	scopeRead bool
	// modeFile is the project file the client's memory mode came from;
	// "" when it came from --mode, LOCI_MODE or nowhere.
	modeFile string
}

// exitError carries an exit code other than ExitError.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Run executes the command line and returns the process exit code.
func Run(ctx context.Context, local Local, args []string, stdout, stderr io.Writer) int {
	a := &app{local: local, stdout: stdout, stderr: stderr, env: os.LookupEnv}
	root := a.root()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitError
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	}
	if err != nil {
		a.printError(err)
	}
	return code
}

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "loci",
		Short: "loci is a memory daemon for AI agents",
		Long: `loci keeps memories for AI agents in one palace (wings > rooms > drawers of
verbatim text), served by one long-running daemon over REST, MCP and a web
dashboard.

Start the daemon with "loci serve" (foreground) or "loci daemon start", then
file and read memories with the commands below. The daemon answers on
http://127.0.0.1:8420 by default ("loci status" prints its addresses):

  REST        http://127.0.0.1:8420/api/...  (this CLI is its client)
  MCP         http://127.0.0.1:8420/mcp      (streamable HTTP, for agents)
  dashboard   http://127.0.0.1:8420/ui/      (with "loci serve --web" or
                                              "loci daemon start --web")

Connect an agent in one line, e.g. Claude Code:
  claude mcp add --transport http loci http://127.0.0.1:8420/mcp
(with authentication on, add --header "Authorization: Bearer <token>").`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.configFile, "config", "", "configuration file (default $XDG_CONFIG_HOME/loci/config.toml; LOCI_CONFIG)")
	pf.BoolVar(&a.jsonOut, "json", false, "print results as JSON for scripts")
	pf.StringVar(&a.mode, "mode", "", "memory mode for this command: full, read_only or disabled (LOCI_MODE)")
	pf.StringVar(&a.addr, "addr", "", "daemon address, host:port or http://host:port (default from the registry file or server.bind/port)")
	root.AddCommand(a.serveCmd(), a.daemonCmd(), a.statusCmd(), a.migrateCmd(), a.doctorCmd(),
		a.wingCmd(), a.roomCmd(), a.drawerCmd(), a.noteCmd(), a.diaryCmd(), a.jobCmd(), a.checkpointCmd(),
		a.auditCmd(), a.repairCmd(), a.mineCmd(), a.minerCmd(), a.triggerCmd(), a.entityCmd(), a.factCmd(), a.graphCmd(), a.sourceCmd(), a.demoCmd(), a.wakeUpCmd(), a.statsCmd(), a.searchCmd(false), a.searchCmd(true), a.benchCmd(), a.authCmd(), a.eventsCmd(), a.versionCmd())
	root.AddCommand(a.mcpCmd(), a.hookCmd(), a.integrationCmd())
	root.AddCommand(a.serviceCmd())
	root.AddCommand(a.exportCmd())
	root.AddCommand(a.backupsCmd())
	root.AddCommand(a.backupCmd(), a.restoreCmd())
	root.AddCommand(a.importCmd())
	root.AddCommand(a.pluginCmd())
	root.AddCommand(a.dbCmd())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fault.New(fault.InputInvalid, err.Error(), "see `"+c.CommandPath()+" --help`")
	})
	refuseUnknownCommands(root, root)
	// A group runs only to refuse unknown words: its usage shows
	// "<group> [command]", not a usage line of its own.
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "Usage:{{if .Runnable}}",
		"Usage:{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	return root
}

// refuseUnknownCommands makes every argument error loci::input::invalid
// and gives every command group (the root included) a run that prints its
// help when called alone and refuses a word that names none of its
// commands: cobra would print the group's help and exit 0, or (at the root)
// return an error without a code.
func refuseUnknownCommands(root, c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return badArgs(c, check, args, err)
			}
			return nil
		}
	}
	if c.HasSubCommands() && !c.Runnable() {
		c.Args = cobra.ArbitraryArgs
		c.DisableFlagsInUseLine = true
		c.SuggestionsMinimumDistance = 2
		c.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			return unknownCommand(root, c, args[0])
		}
	}
	for _, sub := range c.Commands() {
		refuseUnknownCommands(root, sub)
	}
}

// badArgs is loci::input::invalid for arguments a command's validator
// refused (cobra's own error has no code, and says "unknown command" for a
// command that takes none).
func badArgs(c *cobra.Command, check cobra.PositionalArgs, args []string, err error) error {
	help := "usage: " + c.UseLine() + " (see `" + c.CommandPath() + " --help`)"
	if len(args) > 0 && check(c, nil) == nil && check(c, args[:1]) != nil {
		return fault.Newf(fault.InputInvalid, help, "`%s` takes no arguments; got %q", c.CommandPath(), strings.Join(args, " "))
	}
	return fault.Newf(fault.InputInvalid, help, "`%s`: %v", c.CommandPath(), err)
}

// unknownCommand is loci::input::invalid for a word that is not a command
// of c, suggesting commands of c spelled like it and commands of that name
// elsewhere (loci stop: loci daemon stop).
func unknownCommand(root, c *cobra.Command, word string) error {
	var like []string
	for _, s := range c.SuggestionsFor(word) {
		like = append(like, "`"+c.CommandPath()+" "+s+"`")
	}
	var walk func(*cobra.Command)
	walk = func(g *cobra.Command) {
		for _, sub := range g.Commands() {
			if sub.Name() == word && g != c && sub.IsAvailableCommand() {
				like = append(like, "`"+sub.CommandPath()+"`")
			}
			walk(sub)
		}
	}
	walk(root)
	help := "see `" + c.CommandPath() + " --help`"
	if len(like) > 0 {
		help = "did you mean " + strings.Join(like, " or ") + "? " + help
	}
	return fault.Newf(fault.InputInvalid, help, "unknown command %q for %q", word, c.CommandPath())
}

// config loads and validates the configuration once.
func (a *app) config() (*config.Config, error) {
	if a.cfg != nil {
		return a.cfg, nil
	}
	cfg, err := config.Load(a.configFile, a.env)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a.cfg = &cfg
	return a.cfg, nil
}

// client makes a daemon client: the address from --addr, else a live
// registry file of the palace, else the configured listener; the memory
// mode from --mode, else LOCI_MODE, else the project file.
func (a *app) client() (*client.Client, error) {
	return a.newClient(true)
}

// newClient makes a daemon client; with useProject the project file's
// mode applies (and an invalid project file is its error), without it
// only --mode and LOCI_MODE do.
func (a *app) newClient(useProject bool) (*client.Client, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	mode := a.mode
	if mode == "" {
		mode, _ = a.env("LOCI_MODE")
	}
	switch mode {
	case "", "full", "read_only", "disabled":
	default:
		return nil, fault.Newf(fault.InputInvalid, "use full, read_only or disabled", "--mode/LOCI_MODE: %q is not a memory mode", mode)
	}
	if mode == "" && useProject {
		scope, err := a.project()
		if err != nil {
			return nil, err
		}
		mode = scope.Mode
		if mode != "" {
			a.modeFile = scope.File
		}
	}
	cl := client.New(a.address(cfg), cfg.Auth.Token, mode)
	if a.addr == "" {
		// The address came from the palace's registry file or the
		// configured listener: the daemon answering must serve this
		// palace, or it refuses before acting (a stale registry can name
		// another palace's daemon).
		cl.Palace = cfg.Palace.Path
	}
	return cl, nil
}

func (a *app) address(cfg *config.Config) string {
	if a.addr != "" {
		// The address as loci status prints it (http://host:port/) is
		// accepted too.
		return strings.TrimSuffix(strings.TrimPrefix(a.addr, "http://"), "/")
	}
	if r, live, err := config.ReadRegistry(cfg.Palace.Path); err == nil && live && r.Address != "" {
		return r.Address
	}
	return cfg.Addr()
}

// printError writes an error to stderr: {error, code, help} with --json,
// else readable lines.
func (a *app) printError(err error) {
	fe := fault.As(err)
	if fe.Remote == fault.ModeForbidden && a.modeFile != "" {
		// The daemon's help names its header; the mode was the
		// project file's, which --mode overrides.
		c := *fe
		c.Help = fmt.Sprintf("the memory mode %s comes from %s; pass --mode full to override it for one command, or change mode there",
			a.scope.Mode, a.modeFile)
		fe = &c
	}
	if a.jsonOut {
		// The wire form bounds a message a daemon sends; here the
		// message and its help are printed whole (a message cut
		// mid-sentence loses what it was about to say).
		b := fe.Body()
		b.Error = fe.Msg
		writeJSONTo(a.stderr, b)
		return
	}
	fmt.Fprintf(a.stderr, "error: %s\n", safeText(fe.Msg))
	code := string(fe.Code)
	if fe.Code == fault.ClientRemoteRejected {
		code = fmt.Sprintf("%s (daemon answered %d %s)", fe.Code, fe.HTTPStatus(), fe.Remote)
	}
	fmt.Fprintf(a.stderr, "  code: %s\n", code)
	if help := cliHelp(fe.Help); help != "" {
		fmt.Fprintf(a.stderr, "  help: %s\n", safeText(help))
	}
	if fe.Code == fault.ServerFailed && fe.Err != nil {
		fmt.Fprintf(a.stderr, "  cause: %v\n", fe.Err)
	}
}

// defaultPlace reads a wing or room from a flag, else the environment,
// else the project file (.loci.toml).
func (a *app) defaultPlace(flag, env, what string) (string, error) {
	v, err := a.optionalPlace(flag, env, what)
	if err != nil || v != "" {
		return v, err
	}
	return "", fault.Newf(fault.InputInvalid, "pass --"+what+", set "+env+", or set "+what+" in a "+project.FileName+" of the project",
		"no %s given", what)
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this loci binary",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if a.jsonOut {
				return a.out(map[string]string{"version": a.local.Version, "commit": a.local.Commit})
			}
			if a.local.Commit != "" {
				fmt.Fprintf(a.stdout, "loci %s (commit %s)\n", a.local.Version, a.local.Commit)
				return nil
			}
			fmt.Fprintln(a.stdout, "loci", a.local.Version)
			return nil
		},
	}
}

// route is a REST route named in a daemon's help text: "GET
// /api/miners".
const route = `(?:GET|POST|PUT|PATCH|DELETE) /api/[^\s,;)]*`

// The REST routes of a help text with the words that join them to the
// loci command beside them, each left out whole: a route joined by "or"
// or "and" to what follows ("DELETE /api/db or `loci db stop`"), or to
// what precedes ("`loci db stop` or DELETE /api/db"), a route with the
// command in parentheses after it ("DELETE /api/db (`loci db stop`)"),
// else the route with the separator after it ("GET /api/miners, ").
var (
	routeThenOr  = regexp.MustCompile(route + `,? (?:or|and) `)
	orThenRoute  = regexp.MustCompile(`,? (?:or|and) ` + route)
	routeThenCmd = regexp.MustCompile(route + ` \((` + "`?" + `loci [^()]*)\)`)
	restRoute    = regexp.MustCompile(route + `(?:, )?`)
)

// cliHelp is a daemon's help text for a person at the CLI: the REST
// routes it names for scripts are left out with the words that join them
// to the loci command (the same help names it), and so is a parenthesis
// they leave empty.
func cliHelp(help string) string {
	out := routeThenCmd.ReplaceAllString(help, "$1")
	out = routeThenOr.ReplaceAllString(out, "")
	out = orThenRoute.ReplaceAllString(out, "")
	out = restRoute.ReplaceAllString(out, "")
	out = strings.ReplaceAll(out, " ()", "")
	out = strings.ReplaceAll(out, "()", "")
	out = strings.ReplaceAll(out, ", )", ")")
	out = strings.ReplaceAll(out, "( ", "(")
	return strings.TrimSpace(out)
}

// required checks a flag the command cannot do without before anything is
// sent, naming the flag as the person typed it (the daemon would name its
// own field).
func required(flag, value, what string) error {
	if strings.TrimSpace(value) == "" {
		return fault.Newf(fault.InputInvalid, "pass --"+flag+" "+what, "--%s is required", flag)
	}
	return nil
}
