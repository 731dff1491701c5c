package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// What the trial of issue 37 found on the daemon's backup side, end to
// end with the real binary:
//   - a backup taken with `loci backup` counts: streamed whole, the
//     daemon records it (no path) and status, `loci backups`, doctor and
//     GET /api/backups say it was downloaded; a `loci backup` file put in
//     backup.dir under the CLI's own name is listed by its header;
//   - the warning's advice fits a configuration with a schedule, and
//     counts drawers as the status does ("1 current drawer");
//   - after a restart the next scheduled backup's time shows at once;
//   - the backup job's progress counts one thing and says which;
//   - restore chain errors say what is wrong, naming the files.
func TestTrial37BackupsCount(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	dir := filepath.Join(home, "bk")
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
[palace]
path = %q

[backup]
dir = %q
keep = 2
warn_after = "1h"
schedule = { every = "1d" }
`, palace, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	envs := []string{"LOCI_CONFIG=" + cfg}
	d := start(t, home, palace, envs...)
	if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "a memory the trial wants backed up"}); r.status != 201 {
		t.Fatalf("write: %d %s", r.status, r.raw)
	}

	// With a schedule: no advice to set one; `loci backup --out FILE`
	// offered; the drawers counted as the status counts them.
	r := d.do("GET", "/api/status", nil)
	warn := get[string](r.body, "backup", "warning")
	for _, want := range []string{"no backup yet: the palace holds 1 current drawer,", "`loci backup --out FILE`", "the schedule (every 1d) takes the first at "} {
		if !strings.Contains(warn, want) {
			t.Fatalf("warning %q lacks %q", warn, want)
		}
	}
	if strings.Contains(warn, "set backup.schedule") {
		t.Fatalf("a scheduled palace is told to set backup.schedule: %q", warn)
	}
	due := get[string](r.body, "backup", "next_due")
	if due == "" {
		t.Fatalf("no next_due with a schedule: %s", r.raw)
	}

	// `loci backup --out` outside backup.dir: the download counts.
	full := filepath.Join(home, "full1.backup")
	if out, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "backup", "--out", full}, envs); code != 0 {
		t.Fatalf("loci backup (%d): %s %s", code, out, errOut)
	}
	h := readHeader(t, full)
	r = d.do("GET", "/api/status", nil)
	if get[string](r.body, "backup", "warning") != "" || get[bool](r.body, "backup", "last", "downloaded") != true ||
		get[string](r.body, "backup", "last", "name") != "downloaded by a client" ||
		get[float64](r.body, "backup", "last", "store_version") != h["store_version"].(float64) {
		t.Fatalf("status after `loci backup`: %s", r.raw)
	}
	if strings.Contains(r.raw, full) {
		t.Fatalf("the status names the client's path: %s", r.raw)
	}
	out, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "backups"}, envs)
	if code != 0 || !strings.Contains(out, "downloaded by a client") || strings.Contains(out, "warning:") {
		t.Fatalf("loci backups after `loci backup` (%d): %s %s", code, out, errOut)
	}
	out, _, _ = runCLI(home, "", []string{"doctor"}, envs)
	if !regexp.MustCompile(`(?m)^OK +backup +last backup: .*downloaded by a client`).MatchString(out) {
		t.Fatalf("loci doctor after `loci backup`: %s", out)
	}

	// An incremental into backup.dir under the CLI's default name: listed
	// by its header, and it is the last backup.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "a second memory, after the full backup"}); r.status != 201 {
		t.Fatalf("write: %d %s", r.status, r.raw)
	}
	inc := filepath.Join(dir, "loci-"+h["palace_id"].(string)[:8]+"-20261126T095810Z-incremental.backup")
	if out, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "backup", "--since", full, "--out", inc}, envs); code != 0 {
		t.Fatalf("loci backup --since (%d): %s %s", code, out, errOut)
	}
	r = d.do("GET", "/api/backups", nil)
	list := get[[]any](r.body, "backups")
	if len(list) != 1 || get[string](list[0].(map[string]any), "name") != filepath.Base(inc) || get[string](list[0].(map[string]any), "error") != "" {
		t.Fatalf("GET /api/backups with a `loci backup` file in backup.dir: %s", r.raw)
	}

	// The daemon's own backup job: its progress counts records and says so.
	out, errOut, code = runCLI(home, "", []string{"--addr", d.addr, "backups", "run", "--wait"}, envs)
	if code != 0 || !regexp.MustCompile(`(?m)^progress: +[0-9]+ records written \([0-9]+ bytes\) to loci-[0-9a-f-]{36}-`).MatchString(out) {
		t.Fatalf("loci backups run --wait (%d): %s %s", code, out, errOut)
	}

	// A restart: the next slot shows at once, before any run; the
	// downloads are still counted.
	stopDaemon(t, d)
	d = start(t, home, palace, envs...)
	r = d.do("GET", "/api/backups", nil)
	if get[string](r.body, "next_due") != due || get[any](r.body, "downloaded") == nil || len(get[[]any](r.body, "backups")) != 2 {
		t.Fatalf("GET /api/backups right after a restart (next_due was %s): %s", due, r.raw)
	}
	stopDaemon(t, d)

	// Restore chain errors say what is wrong.
	inc2 := filepath.Join(home, "inc2.backup")
	copyFile(t, inc, inc2)
	for _, c := range []struct {
		files []string
		want  string
	}{
		{[]string{full, inc, inc}, inc + ": it is given twice (the 2nd and 3rd file)"},
		{[]string{full, inc, inc2}, inc2 + ": it is the same backup as " + inc},
		{[]string{inc, full}, "is a full backup: give it first"},
		{[]string{full, full}, "given twice"},
	} {
		out, errOut, code := runCLI(home, "", append([]string{"restore", "--data-dir", filepath.Join(home, "restored")}, c.files...), nil)
		if code == 0 || !strings.Contains(errOut+out, c.want) || strings.Contains(errOut+out, "the chain has a gap") {
			t.Fatalf("restore %v (%d): %s %s; want %q", c.files, code, out, errOut, c.want)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
