package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/service"
)

// serviceCmd is `loci service install|remove|status`: loci as a login
// service of the user's own service manager (a systemd user unit, a
// launchd agent), local commands that need no daemon.
func (a *app) serviceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Run loci at login: install, remove or show its systemd user unit or launchd agent",
		Long: `Run the daemon at every login, restarted when it fails, through the user's
own service manager: a systemd user unit (~/.config/systemd/user/loci.service,
logs in "journalctl --user -u loci") on Linux, a launchd agent
(~/Library/LaunchAgents/dev.loci.loci.plist, logs in ~/Library/Logs/loci/) on
macOS. The service runs "loci serve" with this binary and the configuration
file and palace this command resolves (--config, LOCI_CONFIG, --palace,
LOCI_PALACE_PATH); no secret is written into it.

install writes the file and starts the service now; installing again changes
nothing. remove stops it and deletes what install wrote. Installed from the
.deb or .rpm, install enables the packaged unit
(/usr/lib/systemd/user/loci.service) instead of writing one, and remove
disables it; a loci installed another way, or settings the packaged unit does
not carry (--config, --palace, a port), get a unit of their own, which
overrides the packaged one. "loci service status" names the file in use. A unit of the same
name that loci did not write is left alone. Where no service manager can be
used (a container, no user bus), run "loci daemon start" instead, or print the
file with "loci service install --print" and place it yourself.`,
	}
	f := listenerFlags{port: -1}
	var manager string
	var printOnly bool
	install := &cobra.Command{
		Use:   "install",
		Short: "Write the login service and start it now",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			env, spec, err := a.serviceEnv(&f, manager)
			if err != nil {
				return err
			}
			content, err := service.Render(env.Manager, spec, nil)
			if err != nil {
				return err
			}
			if printOnly {
				if sys := env.SystemUnitFor(spec); sys != "" && !a.jsonOut {
					a.stderrf("note: the packaged %s runs the same: `loci service install` (or `systemctl --user enable --now %s`) enables it, no need to place this file\n", sys, service.UnitName)
				}
				_, err := a.stdout.Write(content)
				return err
			}
			a.warnEnvSecrets()
			res, err := env.Install(c.Context(), spec)
			if err != nil {
				return err
			}
			return a.printService(res)
		},
	}
	f.add(install)
	install.Flags().BoolVar(&printOnly, "print", false, "write the unit (or property list) to standard output and change nothing")
	remove := &cobra.Command{
		Use:   "remove",
		Short: "Stop the login service and delete what install wrote",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			// remove needs no configuration: a broken file does not keep
			// the service in place.
			env, _, err := a.serviceEnv(nil, manager)
			if err != nil {
				return err
			}
			res, err := env.Remove(c.Context())
			if err != nil {
				return err
			}
			return a.printService(res)
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Say whether the login service is installed, enabled and running, and its address",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			env, _, err := a.serviceEnv(&f, manager)
			if err != nil {
				return err
			}
			st := serviceStatus{Status: env.Status(c.Context()), Address: "http://" + dialable(a.address(a.cfg)) + "/"}
			if a.jsonOut {
				return a.out(st)
			}
			what := map[service.Manager]string{service.Systemd: "systemd user unit", service.Launchd: "launchd agent"}[st.Manager]
			state, file := "not installed", st.Path
			switch {
			case st.SystemEnabled:
				state, file = "installed: the packaged unit, enabled by `loci service install`", st.Unit
			case st.Installed && st.Managed:
				state = "installed"
			case st.Installed:
				state = "present, not written by loci"
			case st.SystemUnit != "":
				state, file = "the packaged unit, not enabled by `loci service install`", st.SystemUnit
			}
			if st.SystemUnit != "" && st.Unit == st.Path {
				state += "; it overrides the packaged " + st.SystemUnit
			}
			a.printf("service    %s %s (%s)\n", what, file, state)
			a.printf("enabled    %s\n", yesNo(st.Enabled))
			a.printf("running    %s\n", yesNo(st.Running))
			if st.Problem != "" {
				a.printf("problem    %s\n", st.Problem)
			}
			a.printf("address    %s\n", st.Address)
			a.printf("logs       %s\n", st.Logs)
			return nil
		},
	}
	f.add(status)
	for _, c := range []*cobra.Command{install, remove, status} {
		c.Flags().StringVar(&manager, "manager", "", "systemd or launchd (default: launchd on macOS, systemd elsewhere)")
	}
	cmd.AddCommand(install, remove, status)
	return cmd
}

// serviceStatus is `loci service status --json`.
type serviceStatus struct {
	service.Status
	// Address is where the daemon answers (its registry file, else the
	// configured listener).
	Address string `json:"address"`
}

func yesNo(b *bool) string {
	switch {
	case b == nil:
		return "unknown"
	case *b:
		return "yes"
	}
	return "no"
}

// serviceEnv resolves the manager, the file's place and what the service
// runs: this binary's `serve` with the configuration file and palace (and
// listener) the command line and environment name, since the service
// manager's environment has neither the flags nor the shell's variables.
// Without f, only the manager and the place are resolved.
func (a *app) serviceEnv(f *listenerFlags, manager string) (*service.Env, service.Spec, error) {
	var spec service.Spec
	m := service.Manager(manager)
	if m == "" {
		m = service.Systemd
		if runtime.GOOS == "darwin" {
			m = service.Launchd
		}
	}
	if m != service.Systemd && m != service.Launchd {
		return nil, spec, fault.Newf(fault.InputInvalid, "use --manager systemd or --manager launchd", "--manager: %q is not a service manager", manager)
	}
	home, _ := a.env("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	env := &service.Env{Manager: m, UID: os.Getuid(), LookPath: exec.LookPath, Run: runManager, LogDir: service.LogDir(home),
		SystemDirs: service.SystemUnitDirs}
	// LOCI_SYSTEMD_USER_DIRS (colon-separated) replaces where system-wide
	// user units are looked for: the tests' packaged unit.
	if dirs, ok := a.env("LOCI_SYSTEMD_USER_DIRS"); ok {
		env.SystemDirs = filepath.SplitList(dirs)
	}
	stateHome, _ := a.env("XDG_STATE_HOME")
	if !filepath.IsAbs(stateHome) && home != "" {
		stateHome = filepath.Join(home, ".local", "state")
	}
	if filepath.IsAbs(stateHome) {
		env.StatePath = service.StatePath(stateHome)
	}
	if m == service.Launchd {
		env.Path = service.PlistPath(home)
		spec.LogDir = env.LogDir
	} else {
		env.Path = service.UnitPath(filepath.Dir(config.ConfigDir(a.env)))
	}
	if f == nil {
		return env, spec, nil
	}
	cfg, err := a.applyFlags(f)
	if err != nil {
		return nil, spec, err
	}
	set := func(name string) bool { v, ok := a.env(name); return ok && v != "" }
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.Abs(exe)
	}
	if err != nil {
		return nil, spec, fault.Wrap(fault.IOFailed, err, "cannot tell where this loci binary is", "run loci by its full path")
	}
	spec.Binary = exe
	spec.Args = []string{"serve"}
	if cfg.File != "" && (a.configFile != "" || set("LOCI_CONFIG") || set("XDG_CONFIG_HOME")) {
		file, err := filepath.Abs(cfg.File)
		if err != nil {
			return nil, spec, fault.Wrap(fault.IOFailed, err, "cannot resolve "+cfg.File, "name the configuration file by its absolute path")
		}
		spec.Args = append(spec.Args, "--config", file)
	}
	if f.palace != "" || set("LOCI_PALACE_PATH") || set("XDG_DATA_HOME") {
		spec.Args = append(spec.Args, "--palace", cfg.Palace.Path)
	}
	if f.bind != "" || set("LOCI_BIND") {
		spec.Args = append(spec.Args, "--bind", cfg.Server.Bind)
	}
	if f.port >= 0 || set("LOCI_PORT") {
		spec.Args = append(spec.Args, "--port", strconv.Itoa(cfg.Server.Port))
	}
	if f.web {
		spec.Args = append(spec.Args, "--web")
	}
	return env, spec, nil
}

// warnEnvSecrets says on stderr that authentication set in the
// environment does not reach the service: a unit file is no place for a
// token.
func (a *app) warnEnvSecrets() {
	var names []string
	for _, n := range []string{"LOCI_AUTH_ENABLED", "LOCI_AUTH_TOKEN"} {
		if v, ok := a.env(n); ok && v != "" {
			names = append(names, n)
		}
	}
	if len(names) > 0 && !a.jsonOut {
		a.stderrf("note: %s from your environment is not written into the service (no secrets in service files); set auth in the configuration file for the service to use it\n",
			strings.Join(names, " and "))
	}
	// The shared store: the service would serve the embedded palace.
	names = nil
	for _, n := range []string{"LOCI_DATASTORE_URL", "LOCI_DATASTORE_PASSWORD"} {
		if v, ok := a.env(n); ok && v != "" {
			names = append(names, n)
		}
	}
	if len(names) > 0 && !a.jsonOut {
		a.stderrf("note: %s from your environment is not written into the service; set datastore.url and datastore.password_file in the configuration file for the service to use the shared store\n",
			strings.Join(names, " and "))
	}
}

func (a *app) stderrf(format string, args ...any) {
	old := a.stdout
	a.stdout = a.stderr
	a.printf(format, args...)
	a.stdout = old
}

// printService prints what install or remove did.
func (a *app) printService(res *service.Result) error {
	if res.Commands == nil {
		res.Commands = []string{}
	}
	if a.jsonOut {
		return a.out(res)
	}
	note := func() {
		if res.Note != "" {
			a.printf("note: %s\n", res.Note)
		}
	}
	switch res.Action {
	case "not_installed":
		a.printf("no login service is installed (%s does not exist)\n", res.Path)
		return nil
	case "removed":
		a.printf("removed the login service: stopped, disabled and deleted %s\n", res.Path)
		return nil
	case "disabled":
		a.printf("removed the login service: stopped and disabled %s (the file is the package's and stays)\n", res.Path)
		note()
		return nil
	case "unchanged":
		a.printf("the login service is installed and running: %s (nothing changed)\n", res.Path)
		return nil
	case "enabled":
		a.printf("enabled the login service: the packaged unit %s (no unit of loci's own is written)\n", res.Path)
	default:
		a.printf("%s the login service: %s\n", res.Action, res.Path)
	}
	note()
	for _, c := range res.Commands {
		a.printf("  ran: %s\n", c)
	}
	a.printf("logs: %s\n", res.Logs)
	a.printf("check it with `loci service status`\n")
	return nil
}

// runManager runs systemctl or launchctl with a time limit, returning its
// standard output; a failure carries its standard error.
func runManager(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return out.String(), errors.New(msg)
	}
	return out.String(), nil
}
