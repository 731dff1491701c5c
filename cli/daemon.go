package cli

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store/disk"
	"github.com/loci-dev/loci/transport/client"
)

// listenerFlags are the settings serve and daemon start accept as flags.
type listenerFlags struct {
	bind, palace string
	port         int
	web          bool
	// palaceFlag is the flag palace came from ("palace" when empty;
	// restore's "data-dir"): a refusal names the flag the person gave.
	palaceFlag string
}

func (f *listenerFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.bind, "bind", "", "IP address to listen on (server.bind, LOCI_BIND)")
	c.Flags().IntVar(&f.port, "port", -1, "port to listen on; 0 lets the OS choose (server.port, LOCI_PORT)")
	c.Flags().StringVar(&f.palace, "palace", "", "absolute palace directory (palace.path, LOCI_PALACE_PATH)")
	c.Flags().BoolVar(&f.web, "web", false, "serve the web dashboard on /ui (web.enable)")
}

// apply sets the flags over the loaded configuration and validates again.
func (a *app) applyFlags(f *listenerFlags) (*config.Config, error) {
	cfg, err := config.Load(a.configFile, a.env)
	if err != nil {
		return nil, err
	}
	if f.bind != "" {
		cfg.Server.Bind = f.bind
	}
	if f.port >= 0 {
		cfg.Server.Port = f.port
	}
	if f.palace != "" {
		if !filepath.IsAbs(f.palace) {
			name := f.palaceFlag
			if name == "" {
				name = "palace"
			}
			return nil, fault.Newf(fault.InputInvalid, "give an absolute --"+name+" (e.g. --"+name+" \"$PWD/"+fault.Clip(filepath.ToSlash(filepath.Clean(f.palace)), fault.MaxQuoted)+"\")",
				"--%s %q is relative; the palace's folder must be an absolute path", name, f.palace)
		}
		cfg.Palace.Path = f.palace
	}
	if f.web {
		cfg.Web.Enable = true
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a.cfg = &cfg
	return &cfg, nil
}

// logLevel reads LOCI_LOG.
func (a *app) logLevel() (slog.Level, error) {
	v, _ := a.env("LOCI_LOG")
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug", "trace":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fault.Newf(fault.ConfigInvalid, "set LOCI_LOG to debug, info, warn or error", "LOCI_LOG: %q is not a log level", v)
}

// localSetup prepares a local command: configuration with its flags, and a
// logger to stderr at LOCI_LOG's level.
func (a *app) localSetup(f *listenerFlags) (*config.Config, *slog.Logger, slog.Level, error) {
	cfg, err := a.applyFlags(f)
	if err != nil {
		return nil, nil, 0, err
	}
	level, err := a.logLevel()
	if err != nil {
		return nil, nil, 0, err
	}
	return cfg, slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level})), level, nil
}

func (a *app) serveCmd() *cobra.Command {
	var f listenerFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon in the foreground",
		Long: `Run the daemon in the foreground until SIGINT, SIGTERM or POST /api/shutdown.

The listener is bound first; then the palace is opened and migrated, and the
registry file is written once the daemon is ready.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, log, level, err := a.localSetup(&f)
			if err != nil {
				return err
			}
			return a.local.Serve(c.Context(), *cfg, log, level)
		},
	}
	f.add(c)
	return c
}

func (a *app) daemonCmd() *cobra.Command {
	d := &cobra.Command{Use: "daemon", Short: "Start, stop and inspect the background daemon"}
	var f listenerFlags
	start := &cobra.Command{
		Use:   "start",
		Short: "Start the daemon in the background and wait until it is ready",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return a.start(c.Context(), &f) },
	}
	f.add(start)
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop the daemon gracefully",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return a.stop(c.Context()) },
	}
	var rf listenerFlags
	restart := &cobra.Command{
		Use:   "restart",
		Short: "Stop the daemon if it runs, then start it (the dashboard stays on if it was)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			// The dashboard a running daemon serves stays on: a restart
			// to pick up a change should not turn it off.
			if cl, err := a.newClient(false); err == nil && !rf.web {
				var st api.Status
				if _, err := cl.Do(c.Context(), http.MethodGet, "/api/status", nil, &st); err == nil && st.Dashboard != "" {
					rf.web = true
				}
			}
			if err := a.stop(c.Context()); err != nil {
				return err
			}
			a.cfg = nil
			return a.start(c.Context(), &rf)
		},
	}
	rf.add(restart)
	d.AddCommand(start, stop, restart, a.statusCmd())
	return d
}

// start runs `loci serve` detached, logging to <palace>/daemon.log, and
// waits for the registry file of the new process and a healthy answer.
func (a *app) start(ctx context.Context, f *listenerFlags) error {
	cfg, err := a.applyFlags(f)
	if err != nil {
		return err
	}
	if r, live, _ := config.ReadRegistry(cfg.Palace.Path); live {
		if a.healthy(ctx, r.Address) {
			a.say("loci is already running (pid %d, %s)\n", r.PID, r.Address)
			return nil
		}
	}
	if err := os.MkdirAll(cfg.Palace.Path, 0o700); err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot create the palace directory "+cfg.Palace.Path, "check palace.path and its permissions")
	}
	logPath := filepath.Join(cfg.Palace.Path, "daemon.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot open the daemon log "+logPath, "check the palace directory's permissions")
	}
	defer logFile.Close()
	exe, err := os.Executable()
	if err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot find the loci binary", "run loci by its full path")
	}
	args := []string{"serve", "--bind", cfg.Server.Bind, "--port", strconv.Itoa(cfg.Server.Port), "--palace", cfg.Palace.Path}
	if a.configFile != "" {
		args = append(args, "--config", a.configFile)
	}
	if f.web {
		args = append(args, "--web")
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot start the daemon: "+err.Error(), "check the loci binary")
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var unregistered time.Time // when it first answered without a registry file
	for {
		select {
		case <-exited:
			return fault.Newf(fault.ServerFailed, "see "+logPath+" for the whole log",
				"the daemon exited during start: %s", lastError(logPath))
		case <-deadline:
			return fault.Newf(fault.ServerFailed, "see "+logPath, "the daemon did not become ready within 60s")
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			r, live, _ := config.ReadRegistry(cfg.Palace.Path)
			registered := live && r.PID == cmd.Process.Pid
			if registered && !a.healthy(ctx, r.Address) {
				continue
			}
			var st api.Status
			if !registered {
				// No registry file (yet): a daemon on a full disk
				// serves, read-only, without one. It is found at the
				// address it was started on, when that is a fixed
				// port, and known by its pid.
				if cfg.Server.Port == 0 || !a.healthy(ctx, cfg.Addr()) {
					continue
				}
				if !a.startedStatus(ctx, cfg, cfg.Addr(), &st) || st.PID != cmd.Process.Pid {
					continue
				}
				// A daemon answers a moment before it writes the file:
				// without one after a grace period (or at once on a full
				// disk, where it cannot write it) it is taken as it is.
				if unregistered.IsZero() {
					unregistered = time.Now()
				}
				if full := st.Disk != nil && (st.Disk.ReadOnly || st.Disk.Full); !full && time.Since(unregistered) < registryGrace {
					continue
				}
				r = config.Registry{PID: st.PID, Address: cfg.Addr(), Palace: cfg.Palace.Path, Version: st.Version}
			} else {
				a.startedStatus(ctx, cfg, r.Address, &st)
			}
			readOnly := st.Disk != nil && (st.Disk.ReadOnly || st.Disk.Full)
			if a.jsonOut {
				return a.out(startedJSON{Registry: r, DiskFull: readOnly, ReadOnly: st.Disk != nil && st.Disk.ReadOnly, Registered: registered})
			}
			a.printf("loci started (pid %d) on http://%s\n", r.PID, r.Address)
			a.printf("mcp:        http://%s/mcp\n", r.Address)
			if cfg.Web.Enable {
				a.printf("dashboard:  http://%s/ui/\n", r.Address)
			}
			a.printf("log:        %s\n", logPath)
			if readOnly {
				a.printf("store:      %s\n", diskLine(*st.Disk))
			}
			if !registered {
				a.printf("note:       the registry file %s could not be written; commands find the daemon at the configured address\n",
					config.RegistryPath(cfg.Palace.Path))
			}
			return nil
		}
	}
}

// registryGrace is how long daemon start waits for the registry file of a
// daemon that already answers at its fixed address.
const registryGrace = 3 * time.Second

// startedJSON is `loci daemon start --json`: the registry's fields, plus
// whether the disk is full (the store read-only) and whether the registry
// file could be written.
type startedJSON struct {
	config.Registry
	// DiskFull: the daemon refuses writes for want of disk space.
	DiskFull bool `json:"disk_full"`
	// ReadOnly: the store was opened read-only on a full disk.
	ReadOnly bool `json:"read_only"`
	// Registered: the registry file names the daemon.
	Registered bool `json:"registered"`
}

// startedStatus reads the status of the daemon just started at addr; it
// reports whether the daemon answered for this palace.
func (a *app) startedStatus(ctx context.Context, cfg *config.Config, addr string, st *api.Status) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cl := client.New(addr, cfg.Auth.Token, "")
	cl.Palace = cfg.Palace.Path
	_, err := cl.Do(ctx, http.MethodGet, "/api/status", nil, st)
	return err == nil
}

// lastError finds the last error line of the daemon log.
func lastError(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown cause"
	}
	defer f.Close()
	last := "unknown cause"
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, "level=ERROR") || strings.HasPrefix(line, "error:") || strings.Contains(line, "code: ") {
			last = line
		}
	}
	return last
}

func (a *app) healthy(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// say prints a line for people (nothing with --json).
func (a *app) say(format string, args ...any) {
	if !a.jsonOut {
		a.printf(format, args...)
	}
}

// stop asks the daemon to shut down and waits for its process to end.
func (a *app) stop(ctx context.Context) error {
	// Stopping the daemon does not depend on the project file (nor send
	// its mode): a bad .loci.toml must not keep a daemon running.
	cl, err := a.newClient(false)
	if err != nil {
		return err
	}
	// The process to wait for: the registry's when it names this address,
	// else the one the daemon reports (an address given with --addr may
	// serve another palace than the configured one). Waiting for the
	// process, not only for HTTP to stop, lets a restart find the store
	// released.
	pid := 0
	if r, live, _ := config.ReadRegistry(a.cfg.Palace.Path); live && "http://"+r.Address == cl.Base {
		pid = r.PID
	}
	if pid == 0 {
		var st api.Status
		if _, err := cl.Do(ctx, http.MethodGet, "/api/status", nil, &st); err == nil && loopbackAddr(cl.Base[len("http://"):]) {
			pid = st.PID
		}
	}
	if _, err := cl.Do(ctx, http.MethodPost, "/api/shutdown", nil, nil); err != nil {
		if fault.Is(err, fault.ClientNotRunning) {
			a.say("loci is not running\n")
			if a.jsonOut {
				return a.out(map[string]string{"status": "not_running"})
			}
			return nil
		}
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		gone := pid == 0 || !config.Alive(pid)
		if gone && !a.healthy(ctx, cl.Base[len("http://"):]) {
			if a.jsonOut {
				return a.out(map[string]string{"status": "stopped"})
			}
			a.printf("loci stopped\n")
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fault.New(fault.ServerFailed, "the daemon did not stop within 30s", "look at its log; stop the process with kill if needed")
}

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the daemon's status (exit 1 on a problem, 3 when no daemon runs)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			// The project file is reported, not needed: a bad one is
			// shown (and makes the exit 1), the daemon's status still is.
			scope, scopeErr := a.project()
			cl, err := a.newClient(false)
			if err != nil {
				return err
			}
			if cl.Mode == "" && scopeErr == nil {
				cl.Mode = scope.Mode
			}
			var st api.Status
			if _, err := cl.Do(c.Context(), http.MethodGet, "/api/status", nil, &st); err != nil {
				if fault.Is(err, fault.ClientNotRunning) {
					return &exitError{ExitNotRunning, err}
				}
				return err
			}
			proj := projectStatus(scope, scopeErr)
			// The retention guard's warnings (agents' sessions): a daemon
			// that cannot say is no reason to fail status.
			var srcs api.SourceList
			if _, err := cl.Do(c.Context(), http.MethodGet, "/api/sources", nil, &srcs); err != nil {
				srcs.Warnings = nil
			}
			// The database admin listener, when open: none on a shared
			// store (503 unavailable), and a daemon that cannot say is no
			// reason to fail status either.
			var dbState api.DBState
			if _, err := cl.Do(c.Context(), http.MethodGet, "/api/db", nil, &dbState); err != nil {
				dbState = api.DBState{}
			}
			if a.jsonOut {
				_ = a.out(struct {
					api.Status
					Project        projectState        `json:"project"`
					SourceWarnings []api.SourceWarning `json:"source_warnings"`
					// DBURL is the open admin listener's URL; absent when
					// closed or not available (like dashboard).
					DBURL string `json:"db_url,omitempty"`
				}{st, proj, append([]api.SourceWarning{}, srcs.Warnings...), dbState.URL})
			} else {
				a.printf("loci %s, pid %d, up %s, on http://%s\n", st.Version, st.PID, time.Duration(st.UptimeSecs)*time.Second, st.Address)
				a.printf("palace:     %s (%s)\n", st.Palace, st.Datastore.Backend)
				a.printf("mcp:        %s\n", st.MCP)
				dash := "off (loci daemon restart --web, or web.enable in the configuration file)"
				if st.Dashboard != "" {
					dash = st.Dashboard
				}
				a.printf("dashboard:  %s\n", dash)
				if dbState.Open {
					a.printf("sql:        %s (the database admin listener; loci db status, loci db stop)\n", dbState.URL)
				}
				health := "healthy"
				if !st.Datastore.Healthy {
					health = "UNHEALTHY: " + st.Datastore.Error
				}
				if st.Datastore.Backend != "badger" {
					// A shared store: where it is (host:port/database only).
					health = st.Datastore.Backend + " at " + st.Datastore.Location + ", " + health
				}
				a.printf("datastore:  %s\n", health)
				if m := st.Migrations; m != nil {
					a.printf("migrations: data version %d of %d, schema %s\n", m.DataVersion, m.Latest, m.SchemaHash)
				} else {
					a.printf("migrations: %s\n", unknownState)
				}
				if c := st.Counts; c != nil {
					a.printf("contents:   %d wings, %d rooms, %d current drawers (%d stored), %d similar links\n",
						c.Wings, c.Rooms, c.Drawers, c.DrawersStored, c.Links)
				} else {
					a.printf("contents:   %s\n", unknownState)
				}
				if ix := st.Indexes; ix != nil {
					line := "lexical " + indexState(ix.Lexical)
					names := slices.Sorted(maps.Keys(ix.Vectors))
					for _, name := range names {
						line += "; vectors " + name + " " + indexState(ix.Vectors[name].IndexState)
					}
					a.printf("indexes:    %s\n", line)
					if sw := ix.Switch; sw != nil {
						a.printf("embedding:  switching the default profile from %s to %s: searches use %s until %s has every vector (%d of %d)\n",
							sw.From, sw.To, sw.From, sw.To, sw.Embedded, sw.Total)
					}
				}
				a.printf("mode:       %s, authentication %s\n", st.Mode, onOff(st.AuthEnabled))
				a.printf("project:    %s\n", proj.line())
				if st.Disk != nil {
					a.printf("disk:       %s\n", diskLine(*st.Disk))
				}
				if st.Backup != nil {
					a.printf("backup:     %s\n", backupLine(*st.Backup))
					if st.Backup.Warning != "" {
						a.printf("warning:    %s\n", st.Backup.Warning)
					}
				}
				a.printWarnings(srcs.Warnings)
			}
			if scopeErr != nil {
				return &exitError{ExitError, scopeErr}
			}
			if !st.Datastore.Healthy || st.Migrations == nil || st.Migrations.Pending > 0 || !st.Migrations.SchemaSync || (st.Disk != nil && st.Disk.Full) {
				return &exitError{ExitError, nil}
			}
			return nil
		},
	}
}

// sharedWhere names cfg's shared store by host:port/database only (never
// the password): "the shared store at db.example:5432/palace".
func sharedWhere(cfg config.Config) string {
	where := "the shared store"
	if u, err := url.Parse(cfg.Datastore.URL); err == nil {
		where += " at " + u.Host + u.Path
	}
	return where
}

// unknownState is what status prints for what it could not read from the
// store (a shared store's database unreachable): not zero, unknown.
const unknownState = "unknown (the store is unreachable)"

// diskLine reads "12.0 GiB free (reserve 256.0 MiB)", or says the disk
// is full.
func diskLine(d api.Disk) string {
	switch {
	case d.FreeBytes < 0:
		return "free space unknown on this filesystem"
	case d.ReadOnly:
		return fmt.Sprintf("disk full: %s free at %s, under the reserve of %s; started read-only, writes resume once space is freed",
			disk.Bytes(d.FreeBytes), d.Path, disk.Bytes(d.MinFreeBytes))
	case d.Full:
		return fmt.Sprintf("disk full: %s free at %s, under the reserve of %s (store.min_free_bytes); writes are refused until space is freed, reads go on",
			disk.Bytes(d.FreeBytes), d.Path, disk.Bytes(d.MinFreeBytes))
	}
	return fmt.Sprintf("%s free (reserve %s)", disk.Bytes(d.FreeBytes), disk.Bytes(d.MinFreeBytes))
}

// indexState reads "100000 drawers, caught up" or "..., 12 changes behind".
func indexState(s api.IndexState) string {
	if s.Behind == 0 {
		return fmt.Sprintf("%d drawers, caught up", s.Drawers)
	}
	return fmt.Sprintf("%d drawers, %d changes behind", s.Drawers, s.Behind)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func (a *app) migrateCmd() *cobra.Command {
	var f listenerFlags
	var to migrateToFlags
	c := &cobra.Command{
		Use:   "migrate",
		Short: "Run schema sync and pending data steps on the palace, or move it with --to (daemon stopped)",
		Long: `Run schema sync and pending data steps on the palace (daemon stopped).

With --to, copy the palace (the embedded one, or the shared one when
datastore.url is set) into an empty PostgreSQL database (--to
postgres://USER@HOST:PORT/DATABASE; the schema is applied first) or into an
empty directory (--to /absolute/path, a palace.path), record by record,
then verify the copy: each family's records counted and digested (SHA-256)
on both sides. A copy that was stopped continues where it stopped when the
same command runs again. The target's password comes from
LOCI_DATASTORE_PASSWORD or --password-file, never from the command line.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, log, _, err := a.localSetup(&f)
			if err != nil {
				return err
			}
			if to.to != "" || c.Flags().Changed("to") {
				return a.migrateTo(c, *cfg, log, to)
			}
			rep, err := a.local.Migrate(c.Context(), *cfg, log)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.out(rep)
			}
			if len(rep.Ran) == 0 {
				a.printf("palace is up to date (data version %d, schema %s)\n", rep.DataVersion, rep.SchemaHash)
			} else {
				a.printf("ran data steps %v; palace at data version %d (schema %s)\n", rep.Ran, rep.DataVersion, rep.SchemaHash)
			}
			return nil
		},
	}
	c.Flags().StringVar(&f.palace, "palace", "", "absolute palace directory (palace.path)")
	c.Flags().StringVar(&to.to, "to", "", "copy the palace into this empty PostgreSQL database (postgres://USER@HOST:PORT/DB) or directory (absolute path)")
	c.Flags().StringVar(&to.passwordFile, "password-file", "", "file holding the target database's password (else LOCI_DATASTORE_PASSWORD)")
	f.port = -1
	return c
}

// Finding is one result of doctor.
type Finding struct {
	Check  string `json:"check"`
	Status string `json:"status"` // ok, warn, error
	Detail string `json:"detail"`
	Remedy string `json:"remedy,omitempty"`
}

func (a *app) doctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check configuration, palace, store and port without a daemon (exit 1 on an error)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fs := a.doctor(c.Context())
			failed := false
			for _, f := range fs {
				failed = failed || f.Status == "error"
			}
			if a.jsonOut {
				_ = a.out(map[string]any{"findings": fs, "ok": !failed})
			} else {
				for _, f := range fs {
					a.printf("%-5s %-13s %s\n", strings.ToUpper(f.Status), f.Check, f.Detail)
					if f.Remedy != "" {
						a.printf("      %-13s fix: %s\n", "", f.Remedy)
					}
				}
			}
			if failed {
				return &exitError{ExitError, nil}
			}
			return nil
		},
	}
}

func (a *app) doctor(ctx context.Context) []Finding {
	var fs []Finding
	cfg, err := config.Load(a.configFile, a.env)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		fe := fault.As(err)
		return append(fs, Finding{"configuration", "error", fe.Msg, fe.Help})
	}
	where := "defaults and environment"
	if cfg.File != "" {
		where = cfg.File
	}
	fs = append(fs, Finding{Check: "configuration", Status: "ok", Detail: "valid (" + where + ")"})

	// Palace path.
	p := cfg.Palace.Path
	if st, err := os.Stat(p); err == nil {
		if !st.IsDir() {
			fs = append(fs, Finding{"palace", "error", p + " exists and is not a directory", "set palace.path to a directory"})
		} else if err := writable(p); err != nil {
			fs = append(fs, Finding{"palace", "error", p + " is not writable: " + err.Error(), "fix the directory's permissions or choose another palace.path"})
		} else {
			fs = append(fs, Finding{Check: "palace", Status: "ok", Detail: p})
		}
	} else {
		parent := existingParent(p)
		if err := writable(parent); err != nil {
			fs = append(fs, Finding{"palace", "error", p + " does not exist and " + parent + " is not writable", "create the directory or choose another palace.path"})
		} else {
			fs = append(fs, Finding{Check: "palace", Status: "ok", Detail: p + " (created at first start)"})
		}
	}

	// Store and running daemon.
	reg, live, _ := config.ReadRegistry(p)
	ours := live && a.healthy(ctx, reg.Address)
	switch {
	case ours && cfg.Datastore.Shared():
		// The daemon holds a connection pool, not the store: whether the
		// database answers it is its status's datastore line.
		var st api.Status
		if _, err := a.call(ctx, http.MethodGet, "/api/status", nil, &st); err == nil && !st.Datastore.Healthy {
			fs = append(fs, Finding{"store", "error", fmt.Sprintf("the running daemon (pid %d) cannot read %s: %s", reg.PID, sharedWhere(cfg), st.Datastore.Error),
				"start the database or restore the network to it; the daemon reconnects on its own"})
		} else {
			fs = append(fs, Finding{Check: "store", Status: "ok", Detail: fmt.Sprintf("held by the running daemon (pid %d), which reaches %s", reg.PID, sharedWhere(cfg))})
		}
	case ours:
		fs = append(fs, Finding{Check: "store", Status: "ok", Detail: fmt.Sprintf("held by the running daemon (pid %d)", reg.PID)})
	case cfg.Datastore.Shared():
		// A shared store is there or not whatever the palace folder holds.
		where := sharedWhere(cfg)
		if err := a.local.OpenCheck(ctx, cfg); err != nil {
			fe := fault.As(err)
			fs = append(fs, Finding{"store", "error", fe.Msg, fe.Help})
		} else {
			fs = append(fs, Finding{Check: "store", Status: "ok", Detail: where + " opens cleanly"})
		}
	default:
		if _, err := os.Stat(p); err != nil {
			fs = append(fs, Finding{Check: "store", Status: "ok", Detail: "not created yet"})
		} else if err := a.local.OpenCheck(ctx, cfg); err != nil {
			fe := fault.As(err)
			fs = append(fs, Finding{"store", "error", fe.Msg, fe.Help})
		} else {
			fs = append(fs, Finding{Check: "store", Status: "ok", Detail: "opens cleanly"})
		}
	}

	// Disk: free space against the reserve.
	if a.local.Disk != nil {
		d := a.local.Disk(cfg)
		if d.Full {
			fs = append(fs, Finding{"disk", "error", diskLine(d), "free space on the disk holding " + d.Path + ", or lower store.min_free_bytes"})
		} else {
			fs = append(fs, Finding{Check: "disk", Status: "ok", Detail: diskLine(d)})
		}
	}

	// Port: the configured one only. A daemon of this palace serving
	// another (started with --port or LOCI_PORT) is said as such; the
	// configured port, which it does not use, is not probed.
	addr := cfg.Addr()
	if ours && (reg.Address == addr || cfg.Server.Port == 0) {
		fs = append(fs, Finding{Check: "port", Status: "ok", Detail: reg.Address + " is served by this palace's daemon"})
	} else if ours {
		fs = append(fs, Finding{Check: "port", Status: "ok", Detail: reg.Address + " is served by this palace's daemon (started with another port than the configured " +
			addr + ", which it does not use: not checked)"})
	} else if cfg.Server.Port == 0 {
		fs = append(fs, Finding{Check: "port", Status: "ok", Detail: "chosen by the OS at start"})
	} else if l, err := net.Listen("tcp", addr); err != nil {
		fs = append(fs, Finding{"port", "error", addr + " is taken by another process", "stop that process, or set server.port (LOCI_PORT) to a free port"})
	} else {
		l.Close()
		fs = append(fs, Finding{Check: "port", Status: "ok", Detail: addr + " is free"})
	}
	if live && !ours {
		fs = append(fs, Finding{"registry", "warn", fmt.Sprintf("registry names pid %d, which does not answer", reg.PID), "it is overwritten at the next start"})
	}
	if f, ok := a.backupFinding(ctx, cfg, ours); ok {
		fs = append(fs, f)
	}
	return append(fs, a.serviceFinding(ctx, ours))
}

// serviceFinding reports the login service: not installed, installed and
// running, or installed but not running (the daemon the person expects at
// login is not there).
func (a *app) serviceFinding(ctx context.Context, daemonUp bool) Finding {
	env, _, err := a.serviceEnv(nil, "")
	if err != nil {
		return Finding{Check: "service", Status: "ok", Detail: "not checked: " + fault.As(err).Msg}
	}
	if !env.Present() {
		if sys := env.SystemUnit(); sys != "" {
			return Finding{Check: "service", Status: "ok", Detail: "no login service: the packaged " + sys + " is installed but not enabled by `loci service install` (which enables it and starts the daemon at login)"}
		}
		return Finding{Check: "service", Status: "ok", Detail: "no login service (`loci service install` starts the daemon at login)"}
	}
	st := env.Status(ctx)
	if st.Unit != "" {
		st.Path = st.Unit
	}
	switch {
	case !st.Managed:
		return Finding{Check: "service", Status: "ok", Detail: st.Path + " exists and was not written by loci"}
	case st.Problem != "":
		return Finding{"service", "warn", "the login service is installed (" + st.Path + ") but its state is unknown: " + st.Problem, "see `loci service status`"}
	case st.Running != nil && !*st.Running && !daemonUp:
		return Finding{"service", "warn", "the login service is installed (" + st.Path + ") but not running", "start it with `loci service install` (it enables and starts it), or see its logs: " + st.Logs}
	}
	return Finding{Check: "service", Status: "ok", Detail: "installed (" + st.Path + ")" + map[bool]string{true: ", running", false: ""}[st.Running != nil && *st.Running]}
}

func existingParent(p string) string {
	for {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		p = parent
	}
}

func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".loci-doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// loopbackAddr reports a host:port on this machine (a process id it
// reports is one of ours).
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
