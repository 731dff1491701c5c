package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/loci-dev/loci/fault"
)

// Runner runs a service manager command and returns its standard output;
// a non-zero exit is an error holding what it wrote to standard error.
type Runner func(ctx context.Context, name string, args ...string) (string, error)

// Env is where and how the service is installed.
type Env struct {
	// Manager is systemd or launchd.
	Manager Manager
	// Path is the unit's or property list's file.
	Path string
	// LogDir is where the launchd agent's output goes.
	LogDir string
	// UID is the user's id (launchd's gui/<uid> domain).
	UID int
	// LookPath finds the manager's command (exec.LookPath).
	LookPath func(string) (string, error)
	// Run runs it.
	Run Runner
	// SystemDirs are the system-wide directories of systemd user units,
	// in systemd's order of precedence (SystemUnitDirs): a loci.service
	// there that runs what install would (the packages' /usr/bin/loci
	// serve) is enabled instead of writing a unit of loci's own.
	SystemDirs []string
	// StatePath is the file recording that install enabled such a
	// system-wide unit (StatePath), deleted by remove.
	StatePath string
}

// SystemUnitDirs are the directories where systemd looks for user units
// installed for every user, in its order of precedence: the
// administrator's, then the locally installed, then the packages'.
var SystemUnitDirs = []string{"/etc/systemd/user", "/usr/local/lib/systemd/user", "/usr/lib/systemd/user"}

// StatePath is the file under the state directory (stateHome is
// $XDG_STATE_HOME, or ~/.local/state) recording that install enabled a
// system-wide unit.
func StatePath(stateHome string) string {
	return filepath.Join(stateHome, "loci", "service-enabled")
}

// UnitPath is the systemd user unit's file under the configuration
// directory (configHome is $XDG_CONFIG_HOME, or ~/.config).
func UnitPath(configHome string) string {
	return filepath.Join(configHome, "systemd", "user", UnitName)
}

// PlistPath is the launchd agent's file under home.
func PlistPath(home string) string {
	return filepath.Join(home, "Library", "LaunchAgents", Label+".plist")
}

// LogDir is where the launchd agent's output goes under home.
func LogDir(home string) string {
	return filepath.Join(home, "Library", "Logs", "loci")
}

// Result says what install or remove did.
type Result struct {
	Manager Manager `json:"manager"`
	Path    string  `json:"path"`
	// Action is installed, updated, unchanged, started, removed or
	// not_installed.
	Action string `json:"action"`
	// Commands are the service manager commands run, in order.
	Commands []string `json:"commands"`
	// Logs says where the service's output is.
	Logs string `json:"logs"`
	// Unit is the unit file systemd uses: Path, or the system-wide unit
	// install enabled.
	Unit string `json:"unit,omitempty"`
	// Note says something the person should know: that loci's unit
	// overrides a system-wide one, or replaced its own.
	Note string `json:"note,omitempty"`
}

// logs says where the service's output is.
func (e *Env) logs() string {
	if e.Manager == Launchd {
		return filepath.Join(e.LogDir, "loci.log")
	}
	return "journalctl --user -u loci"
}

// Status says whether the service is installed, enabled and running.
type Status struct {
	Manager   Manager `json:"manager"`
	Path      string  `json:"path"`
	Installed bool    `json:"installed"`
	// Managed: the file is loci's (holds the marker); an installed file
	// that is not is someone else's unit of the same name.
	Managed bool `json:"managed"`
	// Enabled and Running are null when the manager could not be asked
	// (Problem says why).
	Enabled *bool  `json:"enabled"`
	Running *bool  `json:"running"`
	Problem string `json:"problem,omitempty"`
	// Logs says where the output is.
	Logs string `json:"logs"`
	// SystemUnit is the system-wide loci.service (the package's), if any.
	SystemUnit string `json:"system_unit,omitempty"`
	// Unit is the file systemd loads for loci.service: Path when it
	// exists (it overrides SystemUnit), else SystemUnit, else empty.
	Unit string `json:"unit"`
	// SystemEnabled: install enabled SystemUnit rather than writing Path.
	SystemEnabled bool `json:"system_enabled"`
}

func (e *Env) command() string {
	if e.Manager == Launchd {
		return "launchctl"
	}
	return "systemctl"
}

// available finds the manager's command: loci::service::unavailable when
// it is absent.
func (e *Env) available() error {
	if _, err := e.LookPath(e.command()); err != nil {
		return fault.Newf(fault.ServiceUnavailable, e.instead(),
			"%s is not available here, so loci cannot install a login service", e.command())
	}
	return nil
}

// instead is the help of loci::service::unavailable.
func (e *Env) instead() string {
	return "run the daemon with `loci daemon start` (once per login), or write the " + map[Manager]string{Systemd: "unit", Launchd: "agent"}[e.Manager] +
		" with `loci service install --print` and place it where your service manager reads it"
}

// systemInstead is the help of loci::service::unavailable when the
// system-wide unit sys is there to enable: no unit needs placing.
func systemInstead(sys string) string {
	return "run the daemon with `loci daemon start` (once per login); in a login where your user service manager runs (a desktop or ssh session with systemd), " +
		"`loci service install` (or `systemctl --user enable --now " + UnitName + "`) enables the packaged " + sys
}

// run runs the manager with args, recording the command in res.
func (e *Env) run(ctx context.Context, res *Result, args ...string) (string, error) {
	if e.Manager == Systemd {
		args = append([]string{"--user"}, args...)
	}
	if res != nil {
		res.Commands = append(res.Commands, e.command()+" "+strings.Join(args, " "))
	}
	return e.Run(ctx, e.command(), args...)
}

func (e *Env) domain() string { return "gui/" + strconv.Itoa(e.UID) }

// read reads the installed file: nil when there is none; a file loci did
// not write is loci::service::conflict.
func (e *Env) read() ([]byte, error) {
	old, err := os.ReadFile(e.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fault.Wrap(fault.IOFailed, err, "cannot read "+e.Path, "check its permissions")
	}
	if !Owned(old) {
		return nil, fault.Newf(fault.ServiceConflict,
			"loci leaves it as it is: remove or rename it yourself to let loci install its own, or keep running loci with it",
			"%s exists and loci did not write it", e.Path)
	}
	return old, nil
}

// Install writes the service file rendered for spec and starts the
// service now and at every login. A file loci wrote with the same content
// is left as it is (only started if it is not running); one with other
// content is replaced and the service restarted. On a failure of the
// manager, what install wrote is taken back.
func (e *Env) Install(ctx context.Context, spec Spec) (*Result, error) {
	res := &Result{Manager: e.Manager, Path: e.Path, Logs: e.logs()}
	if err := e.available(); err != nil {
		return nil, err
	}
	if sys, content := e.systemUnit(); sys != "" {
		if Runs(content, spec) {
			return e.installSystem(ctx, res, sys)
		}
		res.Note = fmt.Sprintf("%s overrides the system-wide %s (the package's), which does not run this loci with these settings (%s): "+
			"systemd uses the unit in your home first; `loci service remove` gives the system-wide one back", e.Path, sys, execStart(spec))
	}
	res.Unit = e.Path
	old, err := e.read()
	if err != nil {
		return nil, err
	}
	if old != nil {
		want, err := Render(e.Manager, spec, Made(old))
		if err != nil {
			return nil, err
		}
		if bytes.Equal(old, want) {
			return e.ensureRunning(ctx, res)
		}
		return e.update(ctx, res, old, want)
	}
	dirs := []string{filepath.Dir(e.Path)}
	if e.Manager == Launchd {
		dirs = append(dirs, spec.LogDir)
	}
	made, err := makeDirs(dirs)
	if err != nil {
		return nil, err
	}
	content, err := Render(e.Manager, spec, made)
	if err == nil {
		err = writeAtomic(e.Path, content)
	}
	if err != nil {
		removeDirs(made)
		return nil, err
	}
	undo := func(cause error, what string) error {
		os.Remove(e.Path)
		removeDirs(made)
		if e.Manager == Systemd {
			_, _ = e.Run(ctx, "systemctl", "--user", "daemon-reload")
		}
		return fault.Newf(fault.ServiceUnavailable, e.instead(),
			"%s failed, so the service is not installed (nothing was left behind): %s", what, firstLine(cause))
	}
	if e.Manager == Systemd {
		if _, err := e.run(ctx, res, "daemon-reload"); err != nil {
			return nil, undo(err, "systemctl --user daemon-reload")
		}
		if _, err := e.run(ctx, res, "enable", "--now", UnitName); err != nil {
			return nil, undo(err, "systemctl --user enable --now "+UnitName)
		}
	} else if _, err := e.run(ctx, res, "bootstrap", e.domain(), e.Path); err != nil {
		return nil, undo(err, "launchctl bootstrap "+e.domain())
	}
	res.Action = "installed"
	return res, nil
}

// enabledPrefix starts the state file's line naming the system-wide unit
// install enabled.
const enabledPrefix = "loci enabled the system-wide unit: "

// systemUnit is the system-wide loci.service systemd loads when the home
// holds none (the first in SystemDirs) and its content; "" when there is
// none (and always for launchd).
func (e *Env) systemUnit() (string, []byte) {
	if e.Manager != Systemd {
		return "", nil
	}
	for _, d := range e.SystemDirs {
		p := filepath.Join(d, UnitName)
		if c, err := os.ReadFile(p); err == nil {
			return p, c
		}
	}
	return "", nil
}

// SystemUnit is the system-wide loci.service systemd would load when the
// home holds none (the package's), or "".
func (e *Env) SystemUnit() string {
	p, _ := e.systemUnit()
	return p
}

// SystemUnitFor is SystemUnit when it runs exactly what spec says (so
// install would enable it rather than write a unit), else "".
func (e *Env) SystemUnitFor(spec Spec) string {
	if p, c := e.systemUnit(); p != "" && Runs(c, spec) {
		return p
	}
	return ""
}

// readState is the state file when loci wrote it (nil otherwise: a file
// of that name without Marker is not loci's record).
func (e *Env) readState() []byte {
	if e.StatePath == "" || e.Manager != Systemd {
		return nil
	}
	c, err := os.ReadFile(e.StatePath)
	if err != nil || !Owned(c) {
		return nil
	}
	return c
}

// stateContent records that install enabled the system-wide unit, and the
// directories it made for the record.
func stateContent(unit string, made []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n", Marker)
	for _, d := range made {
		fmt.Fprintf(&b, "# %s%s\n", madePrefix, strconv.Quote(d))
	}
	fmt.Fprintf(&b, "# %s%s\n", enabledPrefix, strconv.Quote(unit))
	return b.Bytes()
}

// stateUnit is the system-wide unit a state file names.
func stateUnit(state []byte) string {
	for _, line := range strings.Split(string(state), "\n") {
		if q, ok := strings.CutPrefix(strings.TrimSpace(line), "# "+enabledPrefix); ok {
			if u, err := strconv.Unquote(q); err == nil {
				return u
			}
		}
	}
	return ""
}

// Present reports whether install left something for remove: loci's
// file, a file of that name (someone else's), or the record that it
// enabled the system-wide unit. It runs no command.
func (e *Env) Present() bool {
	if _, err := os.Stat(e.Path); err == nil {
		return true
	}
	return e.readState() != nil
}

// installSystem enables and starts the system-wide unit sys (the
// package's, which runs what loci would write) instead of writing a unit
// of loci's own, and records that in StatePath for remove. A unit of
// loci's own in the home (from an install by another binary) is stopped
// and deleted first: it would override sys.
func (e *Env) installSystem(ctx context.Context, res *Result, sys string) (*Result, error) {
	res.Path, res.Unit = sys, sys
	own, err := e.read()
	if err != nil {
		return nil, err
	}
	state := e.readState()
	if own == nil && state != nil {
		return e.ensureRunning(ctx, res)
	}
	if e.StatePath == "" {
		return nil, fault.Newf(fault.IOFailed, "set HOME", "loci has no place to record the service it enables")
	}
	if own != nil {
		if _, err := e.run(ctx, res, "disable", "--now", UnitName); err != nil {
			return nil, fault.Newf(fault.ServiceUnavailable, e.instead(), "cannot stop the service of %s, so nothing changed: %s", e.Path, firstLine(err))
		}
		if err := os.Remove(e.Path); err != nil {
			return nil, fault.Wrap(fault.IOFailed, err, "cannot delete "+e.Path, "delete it yourself, then run `loci service install` again")
		}
		removeDirs(Made(own))
		res.Note = "replaced loci's own unit " + e.Path + " (written by another loci binary or with other settings) with the system-wide " + sys
	}
	restoreOwn := func() {
		if own == nil {
			return
		}
		if _, err := makeDirs([]string{filepath.Dir(e.Path)}); err == nil && writeAtomic(e.Path, own) == nil {
			_, _ = e.Run(ctx, "systemctl", "--user", "daemon-reload")
			_, _ = e.Run(ctx, "systemctl", "--user", "enable", "--now", UnitName)
		}
	}
	var made []string
	if state == nil {
		made, err = makeDirs([]string{filepath.Dir(e.StatePath)})
		if err == nil {
			err = writeAtomic(e.StatePath, stateContent(sys, made))
		}
		if err != nil {
			removeDirs(made)
			restoreOwn()
			return nil, err
		}
	}
	undo := func(cause error, what string) error {
		if state == nil {
			os.Remove(e.StatePath)
			removeDirs(made)
		}
		restoreOwn()
		return fault.Newf(fault.ServiceUnavailable, systemInstead(sys),
			"%s failed, so the service is not enabled (nothing was left behind): %s", what, firstLine(cause))
	}
	if _, err := e.run(ctx, res, "daemon-reload"); err != nil {
		return nil, undo(err, "systemctl --user daemon-reload")
	}
	if _, err := e.run(ctx, res, "enable", "--now", UnitName); err != nil {
		return nil, undo(err, "systemctl --user enable --now "+UnitName)
	}
	res.Action = "enabled"
	return res, nil
}

// ensureRunning starts an installed service that is not enabled or not
// running; one that is changes nothing.
func (e *Env) ensureRunning(ctx context.Context, res *Result) (*Result, error) {
	enabled, running, err := e.state(ctx, res)
	if err != nil {
		return nil, fault.Newf(fault.ServiceUnavailable, e.instead(), "cannot ask %s about the service: %s", e.command(), firstLine(err))
	}
	res.Action = "unchanged"
	if enabled && running {
		return res, nil
	}
	if e.Manager == Systemd {
		_, err = e.run(ctx, res, "enable", "--now", UnitName)
	} else {
		_, err = e.run(ctx, res, "bootstrap", e.domain(), e.Path)
	}
	if err != nil {
		return nil, fault.Newf(fault.ServiceUnavailable, e.instead(), "cannot start the service: %s", firstLine(err))
	}
	res.Action = "started"
	return res, nil
}

// update replaces loci's file with new content and restarts the service.
func (e *Env) update(ctx context.Context, res *Result, old, want []byte) (*Result, error) {
	if err := writeAtomic(e.Path, want); err != nil {
		return nil, err
	}
	fail := func(err error) (*Result, error) {
		_ = writeAtomic(e.Path, old)
		if e.Manager == Systemd {
			_, _ = e.Run(ctx, "systemctl", "--user", "daemon-reload")
		}
		return nil, fault.Newf(fault.ServiceUnavailable, e.instead(), "cannot restart the service with the new %s (the old one is back): %s", filepath.Base(e.Path), firstLine(err))
	}
	if e.Manager == Systemd {
		for _, args := range [][]string{{"daemon-reload"}, {"enable", UnitName}, {"restart", UnitName}} {
			if _, err := e.run(ctx, res, args...); err != nil {
				return fail(err)
			}
		}
	} else {
		// bootout fails when the agent is not loaded, which is fine.
		_, _ = e.run(ctx, res, "bootout", e.domain()+"/"+Label)
		if _, err := e.run(ctx, res, "bootstrap", e.domain(), e.Path); err != nil {
			return fail(err)
		}
	}
	res.Action = "updated"
	return res, nil
}

// Remove stops the service, disables it and deletes the file and the
// directories install created (when they are empty). A file loci did not
// write is loci::service::conflict and stays.
func (e *Env) Remove(ctx context.Context) (*Result, error) {
	res := &Result{Manager: e.Manager, Path: e.Path, Logs: e.logs()}
	old, err := e.read()
	if err != nil {
		return nil, err
	}
	state := e.readState()
	if old == nil && state == nil {
		res.Action = "not_installed"
		return res, nil
	}
	if err := e.available(); err != nil {
		return nil, err
	}
	if old == nil {
		return e.removeSystem(ctx, res, state)
	}
	res.Unit = e.Path
	if e.Manager == Systemd {
		if _, err := e.run(ctx, res, "disable", "--now", UnitName); err != nil {
			return nil, fault.Newf(fault.ServiceUnavailable, "run `systemctl --user disable --now "+UnitName+"` where the user's service manager runs, then `loci service remove` again",
				"cannot stop the service, so nothing was removed: %s", firstLine(err))
		}
	} else if _, err := e.run(ctx, res, "bootout", e.domain()+"/"+Label); err != nil {
		if _, perr := e.Run(ctx, "launchctl", "print", e.domain()+"/"+Label); perr == nil {
			return nil, fault.Newf(fault.ServiceUnavailable, "run `launchctl bootout "+e.domain()+"/"+Label+"`, then `loci service remove` again",
				"cannot stop the service, so nothing was removed: %s", firstLine(err))
		}
	}
	if err := os.Remove(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fault.Wrap(fault.IOFailed, err, "cannot delete "+e.Path, "delete it yourself")
	}
	removeDirs(Made(old))
	if e.Manager == Systemd {
		if _, err := e.run(ctx, res, "daemon-reload"); err != nil {
			return nil, fault.Newf(fault.ServiceUnavailable, "run `systemctl --user daemon-reload`",
				"the unit is deleted, but systemctl --user daemon-reload failed: %s", firstLine(err))
		}
	}
	if state != nil {
		// The same unit name: disable --now above stopped it too.
		e.deleteState(state)
	}
	res.Action = "removed"
	return res, nil
}

// removeSystem stops and disables the system-wide unit install enabled
// and deletes the record; the unit itself is the package's and stays.
func (e *Env) removeSystem(ctx context.Context, res *Result, state []byte) (*Result, error) {
	sys, _ := e.systemUnit()
	res.Path = stateUnit(state)
	if sys != "" {
		res.Path = sys
	}
	res.Unit = res.Path
	if _, err := e.run(ctx, res, "disable", "--now", UnitName); err != nil {
		if sys != "" {
			return nil, fault.Newf(fault.ServiceUnavailable, "run `systemctl --user disable --now "+UnitName+"` where the user's service manager runs, then `loci service remove` again",
				"cannot stop the service, so nothing was removed: %s", firstLine(err))
		}
		// The package went, with its unit: nothing is left to stop.
		res.Note = res.Path + " is gone (the package was removed?): there was nothing to stop"
	}
	e.deleteState(state)
	res.Action = "disabled"
	return res, nil
}

// deleteState deletes the state file and the directories made for it.
func (e *Env) deleteState(state []byte) {
	os.Remove(e.StatePath)
	removeDirs(Made(state))
}

// Status reads the file and asks the manager whether the service is
// enabled and running.
func (e *Env) Status(ctx context.Context) Status {
	st := Status{Manager: e.Manager, Path: e.Path, Logs: e.logs()}
	old, err := os.ReadFile(e.Path)
	st.Installed = err == nil
	st.Managed = st.Installed && Owned(old)
	st.SystemUnit, _ = e.systemUnit()
	switch {
	case st.Installed:
		st.Unit = e.Path
	case st.SystemUnit != "":
		st.Unit = st.SystemUnit
		if e.readState() != nil {
			st.Installed, st.Managed, st.SystemEnabled = true, true, true
		}
	}
	if err := e.available(); err != nil {
		st.Problem = fault.As(err).Msg
		return st
	}
	enabled, running, err := e.state(ctx, nil)
	if err != nil {
		st.Problem = "cannot ask " + e.command() + ": " + firstLine(err)
		return st
	}
	st.Enabled, st.Running = &enabled, &running
	return st
}

// state asks the manager: systemctl is-enabled and is-active (which exit
// non-zero for "disabled" and "inactive", with the answer on standard
// output); launchctl print (non-zero: not loaded).
func (e *Env) state(ctx context.Context, res *Result) (enabled, running bool, err error) {
	if e.Manager == Systemd {
		out, err := e.run(ctx, res, "is-enabled", UnitName)
		word := strings.TrimSpace(out)
		if err != nil && word == "" {
			return false, false, err
		}
		enabled = word == "enabled" || word == "enabled-runtime"
		out, err = e.run(ctx, res, "is-active", UnitName)
		word = strings.TrimSpace(out)
		if err != nil && word == "" {
			return false, false, err
		}
		return enabled, word == "active" || word == "reloading", nil
	}
	out, err := e.run(ctx, res, "print", e.domain()+"/"+Label)
	if err != nil {
		return false, false, nil
	}
	return true, strings.Contains(out, "state = running"), nil
}

// makeDirs creates dirs and their missing parents, returning the ones it
// created, outermost first.
func makeDirs(dirs []string) ([]string, error) {
	var made []string
	for _, dir := range dirs {
		var missing []string
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
				break
			}
			missing = append(missing, d)
		}
		slices.Reverse(missing)
		for _, d := range missing {
			if err := os.Mkdir(d, 0o755); err != nil {
				removeDirs(made)
				return nil, fault.Wrap(fault.IOFailed, err, "cannot create "+d, "check the permissions of its parent")
			}
			made = append(made, d)
		}
	}
	return made, nil
}

// removeDirs deletes the directories install created, innermost first,
// each only when it is empty (a file placed there since stays).
func removeDirs(made []string) {
	for i := len(made) - 1; i >= 0; i-- {
		_ = os.Remove(made[i])
	}
}

// writeAtomic writes content to path (mode 0644) through a file beside it
// renamed into place.
func writeAtomic(path string, content []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot write "+path, "check the directory's permissions")
	}
	tmp := f.Name()
	_, err = f.Write(content)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fault.Wrap(fault.IOFailed, err, "cannot write "+path+": "+err.Error(), "check the directory's permissions and free space")
	}
	return nil
}

// firstLine is the first non-empty line of an error, for a message.
func firstLine(err error) string {
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return fmt.Sprint(err)
}
