package main_test

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/loci-dev/loci/service"
)

// fakeSystemctl answers like systemctl --user for loci.service, keeping
// its state (enabled, active) in a directory outside HOME and recording
// every command line in a log.
const fakeSystemctl = `#!/bin/sh
echo "$*" >> "$FAKE_LOG"
case "$*" in
"--user daemon-reload") exit 0 ;;
"--user enable --now loci.service") : > "$FAKE_STATE/enabled"; : > "$FAKE_STATE/active"; exit 0 ;;
"--user disable --now loci.service") rm -f "$FAKE_STATE/enabled" "$FAKE_STATE/active"; exit 0 ;;
"--user enable loci.service") : > "$FAKE_STATE/enabled"; exit 0 ;;
"--user restart loci.service") : > "$FAKE_STATE/active"; exit 0 ;;
"--user is-enabled loci.service")
	if [ -e "$FAKE_STATE/enabled" ]; then echo enabled; exit 0; fi
	echo disabled; exit 1 ;;
"--user is-active loci.service")
	if [ -e "$FAKE_STATE/active" ]; then echo active; exit 0; fi
	echo inactive; exit 3 ;;
esac
echo "fake systemctl: unexpected arguments: $*" >&2
exit 1
`

// noBusSystemctl is systemctl in a container without a user bus.
const noBusSystemctl = `#!/bin/sh
echo "$*" >> "$FAKE_LOG"
echo "Failed to connect to bus: No medium found" >&2
exit 1
`

// fakeLaunchctl answers like launchctl for the gui domain's loci agent.
const fakeLaunchctl = `#!/bin/sh
echo "$*" >> "$FAKE_LOG"
case "$1" in
bootstrap) [ -e "$FAKE_STATE/loaded" ] && { echo "Bootstrap failed: 5: Input/output error" >&2; exit 5; }
	: > "$FAKE_STATE/loaded"; exit 0 ;;
bootout) [ -e "$FAKE_STATE/loaded" ] || { echo "Boot-out failed: 3: No such process" >&2; exit 3; }
	rm -f "$FAKE_STATE/loaded"; exit 0 ;;
print) [ -e "$FAKE_STATE/loaded" ] || { echo "Could not find service" >&2; exit 113; }
	printf 'gui/%s/dev.loci.loci = {\n\tstate = running\n}\n' "$(id -u)"; exit 0 ;;
esac
echo "fake launchctl: unexpected arguments: $*" >&2
exit 1
`

// fakeManager is a directory holding a fake service manager command, its
// state and its log, outside the test's HOME.
type fakeManager struct {
	bin, state, log string
	// sys stands for the system-wide unit directories
	// (/usr/lib/systemd/user): empty unless a test puts a unit there.
	sys string
}

func newFakeManager(t *testing.T, name, script string) *fakeManager {
	t.Helper()
	dir := t.TempDir()
	m := &fakeManager{bin: filepath.Join(dir, "bin"), state: filepath.Join(dir, "state"), log: filepath.Join(dir, "log"), sys: filepath.Join(dir, "sys")}
	for _, d := range []string{m.bin, m.state, m.sys} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if script != "" {
		if err := os.WriteFile(filepath.Join(m.bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// env puts the fake first on PATH (the shell tools it uses stay
// reachable); alone, only the fake's directory is on PATH.
func (m *fakeManager) env(alone bool, extra ...string) []string {
	path := m.bin + string(os.PathListSeparator) + "/usr/bin:/bin"
	if alone {
		path = m.bin
	}
	return append([]string{"PATH=" + path, "FAKE_LOG=" + m.log, "FAKE_STATE=" + m.state, "LOCI_SYSTEMD_USER_DIRS=" + m.sys}, extra...)
}

// commands are the command lines the fake recorded, in order.
func (m *fakeManager) commands(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(m.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
}

// errorBody is the {error, code, help} a failing command writes with --json.
func errorBody(t *testing.T, stderr string) (code, msg, help string) {
	t.Helper()
	var b struct{ Error, Code, Help string }
	if err := json.Unmarshal([]byte(stderr), &b); err != nil {
		t.Fatalf("stderr is not an error body: %v\n%s", err, stderr)
	}
	return b.Code, b.Error, b.Help
}

func TestServiceInstallTwiceAndRemoveLeavesHomeAsBefore(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	// A file of the user's beside where the unit goes stays as it is.
	if err := os.MkdirAll(filepath.Join(home, ".config", "loci"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(home, ".config", "loci", "config.toml")
	if err := os.WriteFile(conf, []byte("[server]\nport = 8555\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := treeHash(t, home)
	m := newFakeManager(t, "systemctl", fakeSystemctl)
	palace := filepath.Join(t.TempDir(), "my palace")
	env := m.env(false, "LOCI_PALACE_PATH="+palace, "LOCI_AUTH_TOKEN=s3cret-token-value", "LOCI_AUTH_ENABLED=true", "LOCI_CONFIG="+conf)

	out, errOut, code := runCLI(home, "", []string{"service", "install"}, env)
	if code != 0 {
		t.Fatalf("install exit %d\n%s%s", code, out, errOut)
	}
	want := []string{"--user daemon-reload", "--user enable --now loci.service"}
	if got := m.commands(t); !slices.Equal(got, want) {
		t.Fatalf("install ran %q, want %q", got, want)
	}
	unitPath := filepath.Join(home, ".config", "systemd", "user", "loci.service")
	unit, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(unitPath); info.Mode().Perm() != 0o644 {
		t.Errorf("unit mode %v, want 0644", info.Mode().Perm())
	}
	wantExec := "ExecStart=" + bin + " serve --config " + conf + ` --palace "` + palace + `"` + "\n"
	for _, w := range []string{wantExec, "Restart=on-failure\n", "WantedBy=default.target\n"} {
		if !strings.Contains(string(unit), w) {
			t.Errorf("unit lacks %q:\n%s", w, unit)
		}
	}
	if strings.Contains(string(unit), "s3cret") || strings.Contains(out+errOut, "s3cret") {
		t.Errorf("the token reached the unit or the output:\n%s\n%s%s", unit, out, errOut)
	}
	if !strings.Contains(errOut, "LOCI_AUTH_ENABLED and LOCI_AUTH_TOKEN") {
		t.Errorf("install did not say the environment's authentication stays out of the unit: %q", errOut)
	}
	printed, _, code := runCLI(home, "", []string{"service", "install", "--print"}, env)
	if code != 0 || !strings.Contains(printed, wantExec) {
		t.Errorf("--print (exit %d) is not the installed unit:\n%s", code, printed)
	}

	// Installing again changes nothing: it only asks.
	if out, errOut, code := runCLI(home, "", []string{"service", "install"}, env); code != 0 || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second install exit %d\n%s%s", code, out, errOut)
	}
	want = append(want, "--user is-enabled loci.service", "--user is-active loci.service")
	if got := m.commands(t); !slices.Equal(got, want) {
		t.Fatalf("second install ran %q, want %q", got, want)
	}
	if again, _ := os.ReadFile(unitPath); string(again) != string(unit) {
		t.Fatalf("second install changed the unit:\n%s", again)
	}

	out, errOut, code = runCLI(home, "", []string{"--json", "service", "status"}, env)
	if code != 0 {
		t.Fatalf("status exit %d\n%s%s", code, out, errOut)
	}
	var st struct {
		Manager, Path, Address, Logs string
		Installed, Managed           bool
		Enabled, Running             *bool
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if st.Manager != "systemd" || st.Path != unitPath || !st.Installed || !st.Managed || st.Enabled == nil || !*st.Enabled ||
		st.Running == nil || !*st.Running || st.Address != "http://127.0.0.1:8555/" || st.Logs != "journalctl --user -u loci" {
		t.Errorf("status %s", out)
	}
	if out, _, _ := runCLI(home, "", []string{"service", "status"}, env); !strings.Contains(out, "running    yes") || !strings.Contains(out, "(installed)") {
		t.Errorf("human status:\n%s", out)
	}

	if out, errOut, code := runCLI(home, "", []string{"service", "remove"}, env); code != 0 {
		t.Fatalf("remove exit %d\n%s%s", code, out, errOut)
	}
	// (status asked twice.)
	want = append(want, "--user is-enabled loci.service", "--user is-active loci.service", "--user is-enabled loci.service", "--user is-active loci.service",
		"--user disable --now loci.service", "--user daemon-reload")
	if got := m.commands(t); !slices.Equal(got, want) {
		t.Fatalf("remove ran %q, want %q", got, want)
	}
	if after := treeHash(t, home); !maps.Equal(after, before) {
		t.Fatalf("HOME differs after install and remove")
	}
	// Removing again: nothing installed, nothing run.
	if out, _, code := runCLI(home, "", []string{"service", "remove"}, env); code != 0 || !strings.Contains(out, "no login service is installed") {
		t.Errorf("second remove exit %d: %s", code, out)
	}
	if got := m.commands(t); len(got) != len(want) {
		t.Errorf("second remove ran %q", got[len(want):])
	}
}

func TestServiceRespectsXDGConfigHome(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	xdg := filepath.Join(t.TempDir(), "xdg")
	if err := os.Mkdir(xdg, 0o700); err != nil {
		t.Fatal(err)
	}
	before := treeHash(t, xdg)
	m := newFakeManager(t, "systemctl", fakeSystemctl)
	env := m.env(false, "XDG_CONFIG_HOME="+xdg)
	if out, errOut, code := runCLI(home, "", []string{"service", "install"}, env); code != 0 {
		t.Fatalf("install exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(xdg, "systemd", "user", "loci.service")); err != nil {
		t.Fatalf("the unit is not under XDG_CONFIG_HOME: %v", err)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("install wrote into HOME: %v", entries)
	}
	if out, errOut, code := runCLI(home, "", []string{"service", "remove"}, env); code != 0 {
		t.Fatalf("remove exit %d\n%s%s", code, out, errOut)
	}
	if !maps.Equal(treeHash(t, xdg), before) {
		t.Error("XDG_CONFIG_HOME differs after install and remove")
	}
}

func TestServiceHandWrittenUnitIsAConflict(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := filepath.Join(home, ".config", "systemd", "user")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := "[Service]\nExecStart=/usr/local/bin/loci serve --port 9000\n\n[Install]\nWantedBy=default.target\n"
	if err := os.WriteFile(filepath.Join(dir, "loci.service"), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	before := treeHash(t, home)
	m := newFakeManager(t, "systemctl", fakeSystemctl)
	for _, op := range []string{"install", "remove"} {
		_, errOut, code := runCLI(home, "", []string{"--json", "service", op}, m.env(false))
		if code == 0 {
			t.Fatalf("%s over a hand-written unit succeeded", op)
		}
		c, msg, help := errorBody(t, errOut)
		if c != "loci::service::conflict" || !strings.Contains(msg, filepath.Join(dir, "loci.service")) || help == "" {
			t.Errorf("%s: %s / %s / %s", op, c, msg, help)
		}
	}
	if !maps.Equal(treeHash(t, home), before) {
		t.Error("the hand-written unit (or its directory) changed")
	}
	if got := m.commands(t); len(got) != 0 {
		t.Errorf("a conflict ran %q", got)
	}
}

func TestServiceUnavailableChangesNothing(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	before := treeHash(t, home)
	check := func(name string, env []string, fake *fakeManager, wantCmds []string) {
		t.Helper()
		out, errOut, code := runCLI(home, "", []string{"--json", "service", "install"}, env)
		if code == 0 {
			t.Fatalf("%s: install succeeded: %s", name, out)
		}
		c, msg, help := errorBody(t, errOut)
		if c != "loci::service::unavailable" || !strings.Contains(help, "loci daemon start") || !strings.Contains(help, "--print") {
			t.Errorf("%s: %s / %s / %s", name, c, msg, help)
		}
		if !maps.Equal(treeHash(t, home), before) {
			t.Errorf("%s: HOME changed", name)
		}
		if got := fake.commands(t); !slices.Equal(got, wantCmds) {
			t.Errorf("%s: ran %q, want %q", name, got, wantCmds)
		}
	}
	none := newFakeManager(t, "systemctl", "")
	check("no systemctl", none.env(true), none, nil)
	noBus := newFakeManager(t, "systemctl", noBusSystemctl)
	check("no user bus", noBus.env(false), noBus, []string{"--user daemon-reload", "--user daemon-reload"})

	// Without a service manager, --print still writes the unit.
	out, errOut, code := runCLI(home, "", []string{"service", "install", "--print"}, none.env(true))
	if code != 0 || !strings.HasPrefix(out, "# Managed by loci") || !strings.Contains(out, "ExecStart="+bin+" serve\n") {
		t.Errorf("--print exit %d\n%s%s", code, out, errOut)
	}
	if !maps.Equal(treeHash(t, home), before) {
		t.Error("--print changed HOME")
	}
	out, _, code = runCLI(home, "", []string{"--json", "service", "status"}, none.env(true))
	if code != 0 || !strings.Contains(out, `"installed": false`) || !strings.Contains(out, `"enabled": null`) || !strings.Contains(out, "systemctl is not available") {
		t.Errorf("status without systemctl (exit %d):\n%s", code, out)
	}
}

func TestServiceLaunchdAgent(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	before := treeHash(t, home)
	m := newFakeManager(t, "launchctl", fakeLaunchctl)
	env := m.env(false)
	args := []string{"service", "install", "--manager", "launchd"}
	if out, errOut, code := runCLI(home, "", args, env); code != 0 {
		t.Fatalf("install exit %d\n%s%s", code, out, errOut)
	}
	plist := filepath.Join(home, "Library", "LaunchAgents", "dev.loci.loci.plist")
	domain := "gui/" + strconv.Itoa(os.Getuid())
	want := []string{"bootstrap " + domain + " " + plist}
	if got := m.commands(t); !slices.Equal(got, want) {
		t.Fatalf("install ran %q, want %q", got, want)
	}
	if info, err := os.Stat(filepath.Join(home, "Library", "Logs", "loci")); err != nil || !info.IsDir() {
		t.Fatalf("the log directory was not created: %v", err)
	}
	if out, errOut, code := runCLI(home, "", args, env); code != 0 || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second install exit %d\n%s%s", code, out, errOut)
	}
	want = append(want, "print "+domain+"/dev.loci.loci")
	if got := m.commands(t); !slices.Equal(got, want) {
		t.Fatalf("second install ran %q, want %q", got, want)
	}
	out, _, _ := runCLI(home, "", []string{"--json", "service", "status", "--manager", "launchd"}, env)
	if !strings.Contains(out, `"running": true`) || !strings.Contains(out, filepath.Join(home, "Library", "Logs", "loci", "loci.log")) {
		t.Errorf("status:\n%s", out)
	}
	if out, errOut, code := runCLI(home, "", []string{"service", "remove", "--manager", "launchd"}, env); code != 0 {
		t.Fatalf("remove exit %d\n%s%s", code, out, errOut)
	}
	// (status asked once.)
	want = append(want, "print "+domain+"/dev.loci.loci", "bootout "+domain+"/dev.loci.loci")
	if got := m.commands(t); !slices.Equal(got, want) {
		t.Fatalf("remove ran %q, want %q", got, want)
	}
	if !maps.Equal(treeHash(t, home), before) {
		t.Error("HOME differs after install and remove")
	}
}

func TestServiceInstallWithOtherFlagsUpdatesAndRemoveStillRestores(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	before := treeHash(t, home)
	m := newFakeManager(t, "systemctl", fakeSystemctl)
	if out, errOut, code := runCLI(home, "", []string{"service", "install"}, m.env(false)); code != 0 {
		t.Fatalf("install exit %d\n%s%s", code, out, errOut)
	}
	other := filepath.Join(t.TempDir(), "other")
	out, errOut, code := runCLI(home, "", []string{"service", "install", "--palace", other, "--web"}, m.env(false))
	if code != 0 || !strings.Contains(out, "updated the login service") {
		t.Fatalf("install with other flags exit %d\n%s%s", code, out, errOut)
	}
	want := []string{"--user daemon-reload", "--user enable --now loci.service",
		"--user daemon-reload", "--user enable loci.service", "--user restart loci.service"}
	if got := m.commands(t); !slices.Equal(got, want) {
		t.Fatalf("ran %q, want %q", got, want)
	}
	unit, _ := os.ReadFile(filepath.Join(home, ".config", "systemd", "user", "loci.service"))
	if !strings.Contains(string(unit), "ExecStart="+bin+" serve --palace "+other+" --web\n") {
		t.Errorf("unit not updated:\n%s", unit)
	}
	if out, errOut, code := runCLI(home, "", []string{"service", "remove"}, m.env(false)); code != 0 {
		t.Fatalf("remove exit %d\n%s%s", code, out, errOut)
	}
	if !maps.Equal(treeHash(t, home), before) {
		t.Error("HOME differs after install, update and remove")
	}
}

// TestServicePrintedUnitVerifies runs systemd-analyze verify on what
// `loci service install --print` writes, with a palace path to quote.
func TestServicePrintedUnitVerifies(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed here: the printed unit is not verified")
	}
	home := t.TempDir()
	out, errOut, code := runCLI(home, "", []string{"service", "install", "--print", "--palace", filepath.Join(home, `my "palace" 100%Zq $HOME`)}, nil)
	if code != 0 {
		t.Fatalf("--print exit %d\n%s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "loci.service")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(analyze, "--user", "verify", file)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
	if msg, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(msg))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s\n%s", err, msg, out)
	}
}

// TestServiceRemoveNeedsNoValidConfiguration: a configuration file broken
// after install does not keep the service in place.
func TestServiceRemoveNeedsNoValidConfiguration(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	conf := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(conf, []byte("[server]\nport = 8556\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := treeHash(t, home)
	m := newFakeManager(t, "systemctl", fakeSystemctl)
	env := m.env(false, "LOCI_CONFIG="+conf)
	if out, errOut, code := runCLI(home, "", []string{"service", "install"}, env); code != 0 {
		t.Fatalf("install exit %d\n%s%s", code, out, errOut)
	}
	if err := os.WriteFile(conf, []byte("[server\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runCLI(home, "", []string{"service", "remove"}, env); code != 0 {
		t.Fatalf("remove with a broken configuration exit %d\n%s%s", code, out, errOut)
	}
	if !maps.Equal(treeHash(t, home), before) {
		t.Error("HOME differs after install and remove")
	}
}

// loci doctor reports a login service that is installed but not running
// (issue 39, point 1), and says nothing is wrong without one.
func TestDoctorReportsAStoppedService(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	m := newFakeManager(t, "systemctl", fakeSystemctl)
	env := m.env(false, "LOCI_PALACE_PATH="+filepath.Join(t.TempDir(), "palace"), "LOCI_PORT="+strconv.Itoa(freePort(t)))
	finding := func() map[string]any {
		t.Helper()
		out, errOut, _ := runCLI(home, "", []string{"--json", "doctor"}, env)
		var r struct{ Findings []map[string]any }
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("doctor --json: %v\n%s%s", err, out, errOut)
		}
		for _, f := range r.Findings {
			if f["check"] == "service" {
				return f
			}
		}
		t.Fatalf("doctor has no service finding: %s", out)
		return nil
	}
	if f := finding(); f["status"] != "ok" || !strings.Contains(f["detail"].(string), "no login service") {
		t.Errorf("without a service: %v", f)
	}
	if out, errOut, code := runCLI(home, "", []string{"service", "install"}, env); code != 0 {
		t.Fatalf("install: %d %s%s", code, out, errOut)
	}
	if f := finding(); f["status"] != "ok" || !strings.Contains(f["detail"].(string), "running") {
		t.Errorf("installed and running: %v", f)
	}
	os.Remove(filepath.Join(m.state, "active")) // it stopped (a crash loop given up, a manual stop)
	if f := finding(); f["status"] != "warn" || !strings.Contains(f["detail"].(string), "not running") || f["remedy"] == "" {
		t.Errorf("installed but stopped: %v", f)
	}
}

// packagedUnit places in the fake's system-wide directory the unit a
// package would install for binary (the packages': /usr/bin/loci serve).
func (m *fakeManager) packagedUnit(t *testing.T, binary string) string {
	t.Helper()
	u, err := service.PackagedUnit(service.Spec{Binary: binary, Args: []string{"serve"}})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(m.sys, "loci.service")
	if err := os.WriteFile(p, u, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The packaged binary's install enables the packaged unit rather than
// writing its own (issue 39: one unit); remove disables it and leaves both
// HOME and the packaged file as they were.
func TestServiceEnablesThePackagedUnit(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	m := newFakeManager(t, "systemctl", fakeSystemctl)
	sys := m.packagedUnit(t, bin)
	before, sysBefore := treeHash(t, home), treeHash(t, m.sys)
	env := m.env(false)

	out, errOut, code := runCLI(home, "", []string{"service", "install"}, env)
	if code != 0 {
		t.Fatalf("install exit %d\n%s%s", code, out, errOut)
	}
	want := []string{"--user daemon-reload", "--user enable --now loci.service"}
	if got := m.commands(t); !slices.Equal(got, want) {
		t.Fatalf("install ran %q, want %q", got, want)
	}
	if !strings.Contains(out, "enabled the login service: the packaged unit "+sys) {
		t.Errorf("install did not say it enabled the packaged unit:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(home, ".config", "systemd")); err == nil {
		t.Error("install wrote a unit of its own beside the packaged one")
	}
	// --print still writes the unit, and says on stderr that the packaged
	// one runs the same (no need to place it).
	printed, printErr, code := runCLI(home, "", []string{"service", "install", "--print"}, env)
	if code != 0 || !strings.Contains(printed, "ExecStart="+bin+" serve\n") || !strings.Contains(printErr, sys+" runs the same") ||
		!strings.Contains(printErr, "systemctl --user enable --now loci.service") {
		t.Errorf("--print exit %d\n%s\n%s", code, printed, printErr)
	}
	state, err := os.ReadFile(filepath.Join(home, ".local", "state", "loci", "service-enabled"))
	if err != nil || !strings.Contains(string(state), sys) {
		t.Errorf("no record of the enabled unit: %v %q", err, state)
	}

	if out, errOut, code := runCLI(home, "", []string{"service", "install"}, env); code != 0 || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second install exit %d\n%s%s", code, out, errOut)
	}
	want = append(want, "--user is-enabled loci.service", "--user is-active loci.service")
	if got := m.commands(t); !slices.Equal(got, want) {
		t.Fatalf("second install ran %q, want %q", got, want)
	}

	out, _, _ = runCLI(home, "", []string{"--json", "service", "status"}, env)
	var st struct {
		Unit             string `json:"unit"`
		System           string `json:"system_unit"`
		Installed        bool
		Enabled, Running *bool
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var raw map[string]any
	_ = json.Unmarshal([]byte(out), &raw)
	if st.Unit != sys || st.System != sys || raw["system_enabled"] != true || !st.Installed || st.Running == nil || !*st.Running {
		t.Errorf("status %s", out)
	}
	if out, _, _ := runCLI(home, "", []string{"service", "status"}, env); !strings.Contains(out, "service    systemd user unit "+sys+" (installed: the packaged unit") {
		t.Errorf("human status does not name the packaged unit in use:\n%s", out)
	}

	out, errOut, code = runCLI(home, "", []string{"service", "remove"}, env)
	if code != 0 || !strings.Contains(out, "stopped and disabled "+sys) {
		t.Fatalf("remove exit %d\n%s%s", code, out, errOut)
	}
	// (status asked twice.)
	want = append(want, "--user is-enabled loci.service", "--user is-active loci.service", "--user is-enabled loci.service", "--user is-active loci.service",
		"--user disable --now loci.service")
	if got := m.commands(t); !slices.Equal(got, want) {
		t.Fatalf("remove ran %q, want %q", got, want)
	}
	if !maps.Equal(treeHash(t, home), before) {
		t.Error("HOME differs after install and remove")
	}
	if !maps.Equal(treeHash(t, m.sys), sysBefore) {
		t.Error("the packaged unit changed")
	}
	if out, _, _ := runCLI(home, "", []string{"service", "remove"}, env); !strings.Contains(out, "no login service is installed") {
		t.Errorf("second remove: %s", out)
	}
}

// A loci binary other than the packaged one (go install, an archive), or
// settings the packaged unit does not carry, write loci's own unit, which
// overrides the packaged one: install and status say so.
func TestServiceOwnUnitOverridesThePackagedOne(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	m := newFakeManager(t, "systemctl", fakeSystemctl)
	sys := m.packagedUnit(t, "/usr/bin/loci")
	before := treeHash(t, home)
	env := m.env(false)
	out, errOut, code := runCLI(home, "", []string{"service", "install"}, env)
	if code != 0 {
		t.Fatalf("install exit %d\n%s%s", code, out, errOut)
	}
	own := filepath.Join(home, ".config", "systemd", "user", "loci.service")
	if !strings.Contains(out, "installed the login service: "+own) || !strings.Contains(out, "note: "+own+" overrides the system-wide "+sys) {
		t.Errorf("install did not say its unit overrides the packaged one:\n%s", out)
	}
	if out, _, _ := runCLI(home, "", []string{"service", "status"}, env); !strings.Contains(out, own+" (installed; it overrides the packaged "+sys+")") {
		t.Errorf("status:\n%s", out)
	}
	if out, errOut, code := runCLI(home, "", []string{"service", "remove"}, env); code != 0 {
		t.Fatalf("remove exit %d\n%s%s", code, out, errOut)
	}
	if !maps.Equal(treeHash(t, home), before) {
		t.Error("HOME differs after install and remove")
	}

	// The packaged binary with a palace to carry: the packaged unit
	// cannot, so loci writes its own.
	m.packagedUnit(t, bin)
	palace := filepath.Join(t.TempDir(), "p")
	out, errOut, code = runCLI(home, "", []string{"service", "install", "--palace", palace}, env)
	if code != 0 || !strings.Contains(out, "installed the login service: "+own) || !strings.Contains(out, "--palace "+palace) {
		t.Fatalf("install --palace exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := runCLI(home, "", []string{"service", "remove"}, env); code != 0 {
		t.Fatalf("remove exit %d\n%s%s", code, out, errOut)
	}
	if !maps.Equal(treeHash(t, home), before) {
		t.Error("HOME differs after install --palace and remove")
	}
}

// loci's own unit from an earlier install gives way to the packaged one
// when the packaged binary installs; remove then restores HOME.
func TestServiceOwnUnitGivesWayToThePackagedOne(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	m := newFakeManager(t, "systemctl", fakeSystemctl)
	before := treeHash(t, home)
	env := m.env(false)
	if out, errOut, code := runCLI(home, "", []string{"service", "install"}, env); code != 0 {
		t.Fatalf("install exit %d\n%s%s", code, out, errOut)
	}
	sys := m.packagedUnit(t, bin) // the package arrives
	out, errOut, code := runCLI(home, "", []string{"service", "install"}, env)
	if code != 0 || !strings.Contains(out, "note: replaced loci's own unit") {
		t.Fatalf("install over its own unit exit %d\n%s%s", code, out, errOut)
	}
	want := []string{"--user daemon-reload", "--user enable --now loci.service",
		"--user disable --now loci.service", "--user daemon-reload", "--user enable --now loci.service"}
	if got := m.commands(t); !slices.Equal(got, want) {
		t.Fatalf("ran %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(home, ".config", "systemd")); err == nil {
		t.Error("loci's own unit (or its directories) stayed")
	}
	if out, _, _ := runCLI(home, "", []string{"--json", "service", "status"}, env); !strings.Contains(out, `"unit": "`+sys+`"`) {
		t.Errorf("status: %s", out)
	}
	if out, errOut, code := runCLI(home, "", []string{"service", "remove"}, env); code != 0 {
		t.Fatalf("remove exit %d\n%s%s", code, out, errOut)
	}
	if !maps.Equal(treeHash(t, home), before) {
		t.Error("HOME differs after install, the switch and remove")
	}
}

// Without a user bus, enabling the packaged unit fails, says what to do
// instead and leaves no record behind.
func TestServicePackagedUnitWithoutABus(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	m := newFakeManager(t, "systemctl", noBusSystemctl)
	m.packagedUnit(t, bin)
	before := treeHash(t, home)
	_, errOut, code := runCLI(home, "", []string{"--json", "service", "install"}, m.env(false))
	if code == 0 {
		t.Fatal("install succeeded without a bus")
	}
	// The packaged unit is already in place: the help says how to enable
	// it, not to --print a unit and place it.
	if c, msg, help := errorBody(t, errOut); c != "loci::service::unavailable" || !strings.Contains(msg, "No medium found") || !strings.Contains(help, "loci daemon start") ||
		!strings.Contains(help, "systemctl --user enable --now loci.service") || strings.Contains(help, "--print") {
		t.Errorf("%s / %s / %s", c, msg, help)
	}
	if !maps.Equal(treeHash(t, home), before) {
		t.Error("HOME changed")
	}
}

// doctor without a login service names the packaged unit to enable.
func TestDoctorNamesThePackagedUnit(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	m := newFakeManager(t, "systemctl", fakeSystemctl)
	sys := m.packagedUnit(t, "/usr/bin/loci")
	env := m.env(false, "LOCI_PALACE_PATH="+filepath.Join(t.TempDir(), "palace"), "LOCI_PORT="+strconv.Itoa(freePort(t)))
	out, errOut, _ := runCLI(home, "", []string{"--json", "doctor"}, env)
	var r struct{ Findings []map[string]any }
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor --json: %v\n%s%s", err, out, errOut)
	}
	for _, f := range r.Findings {
		if f["check"] == "service" {
			if d, _ := f["detail"].(string); f["status"] != "ok" || !strings.Contains(d, "no login service") || !strings.Contains(d, sys+" is installed but not enabled") {
				t.Errorf("service finding %v", f)
			}
			return
		}
	}
	t.Fatalf("no service finding: %s", out)
}
