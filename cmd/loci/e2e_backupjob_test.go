package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/backup"
)

// ownBackup is the name of a backup the daemon writes.
var ownBackup = regexp.MustCompile(`^loci-[0-9a-f-]{36}-[0-9]{8}T[0-9]{6}\.[0-9]{3}Z\.backup$`)

// backupNames lists the daemon's backups in dir, oldest first.
func backupNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if ownBackup.MatchString(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// backupJobs counts the backup jobs by status.
func backupJobs(t *testing.T, d *daemon) map[string]int {
	t.Helper()
	r := d.do("GET", "/api/jobs?kind=backup&limit=200", nil)
	if r.status != 200 {
		t.Fatalf("jobs: %d %s", r.status, r.raw)
	}
	n := map[string]int{}
	for _, j := range get[[]any](r.body, "jobs") {
		n[j.(map[string]any)["status"].(string)]++
	}
	return n
}

// A daemon with a frequent backup schedule writes backups into
// backup.dir that the backup package verifies, keeps two of them, and
// status, `loci backups` and doctor show the last one.
func TestScheduledBackupsRotateAndShowInStatus(t *testing.T) {
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
schedule = { every = "1s" }
`, palace, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file of the user's in the folder: never rotated away.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	envs := []string{"LOCI_CONFIG=" + cfg}
	d := start(t, home, palace, envs...)
	if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "a memory that is backed up on schedule"}); r.status != 201 {
		t.Fatalf("write: %d %s", r.status, r.raw)
	}

	// Slots come every second: at least three backups completed while the
	// folder holds two.
	eventually(t, 90*time.Second, "three scheduled backups completed", func() bool { return backupJobs(t, d)["completed"] >= 3 })
	jobs := backupJobs(t, d)
	if jobs["queued"]+jobs["running"] > 2 {
		t.Fatalf("backup jobs piled up: %v", jobs)
	}
	var names []string
	eventually(t, 30*time.Second, "rotation at keep = 2", func() bool {
		names = backupNames(t, dir)
		return len(names) == 2 && backupJobs(t, d)["running"] == 0
	})
	for _, n := range names {
		h, err := backup.VerifyFile(context.Background(), filepath.Join(dir, n))
		if err != nil {
			t.Fatalf("%s does not verify: %v", n, err)
		}
		if h.Counts.Drawers != 1 {
			t.Fatalf("%s holds %d drawers, want 1", n, h.Counts.Drawers)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatalf("rotation removed a file it did not write: %v", err)
	}

	// The status report names a backup of the folder, and no warning.
	r := d.do("GET", "/api/status", nil)
	last := get[string](r.body, "backup", "last", "name")
	if !ownBackup.MatchString(last) || get[string](r.body, "backup", "dir") != dir || get[string](r.body, "backup", "warning") != "" {
		t.Fatalf("status backup: %s", r.raw)
	}
	out, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "status"}, envs)
	if code != 0 || !strings.Contains(out, "backup:     ") || !strings.Contains(out, ".backup") || strings.Contains(out, "warning:    no backup") {
		t.Fatalf("loci status (%d): %s %s", code, out, errOut)
	}
	out, errOut, code = runCLI(home, "", []string{"--addr", d.addr, "backups"}, envs)
	if code != 0 || !strings.Contains(out, "backups in "+dir+" (keep 2; scheduled every 1s") || strings.Count(out, ".backup  ") != 2 {
		t.Fatalf("loci backups (%d): %s %s", code, out, errOut)
	}
	out, errOut, code = runCLI(home, "", []string{"doctor"}, envs)
	if !regexp.MustCompile(`(?m)^OK +backup +last backup: .*\.backup$`).MatchString(out) {
		t.Fatalf("loci doctor (%d): %s %s", code, out, errOut)
	}

	// No request chooses where a backup goes.
	for _, c := range []struct {
		path string
		body any
	}{
		{"/api/backups", map[string]any{"path": filepath.Join(home, "stolen.backup")}},
		{"/api/backups?dir=" + home, map[string]any{}},
		{"/api/jobs", map[string]any{"type": "backup", "dir": home}},
	} {
		if r := d.do("POST", c.path, c.body); r.status != 400 || r.code() != "loci::input::invalid" {
			t.Fatalf("POST %s %v: %d %s", c.path, c.body, r.status, r.raw)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(home, "*.backup")); len(m) != 0 {
		t.Fatalf("a backup outside backup.dir: %v", m)
	}
}

// Without a schedule a palace that holds data warns in status and doctor
// until a backup is taken; `loci backups run --wait` takes one into the
// default folder beside the palace.
func TestBackupWarningUntilOneIsTaken(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[palace]\npath = %q\n", palace)), 0o644); err != nil {
		t.Fatal(err)
	}
	envs := []string{"LOCI_CONFIG=" + cfg}
	d := start(t, home, palace, envs...)
	dir := filepath.Join(home, "backups") // beside the palace
	// An empty palace: nothing to warn about.
	if r := d.do("GET", "/api/status", nil); get[string](r.body, "backup", "warning") != "" || get[string](r.body, "backup", "dir") != dir {
		t.Fatalf("empty palace: %s", r.raw)
	}
	if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "a memory with no backup yet"}); r.status != 201 {
		t.Fatalf("write: %d %s", r.status, r.raw)
	}
	out, _, _ := runCLI(home, "", []string{"--addr", d.addr, "status"}, envs)
	if !strings.Contains(out, "backup:     none yet (in "+dir+")") || !strings.Contains(out, "warning:    no backup yet: the palace holds 1 current drawer,") {
		t.Fatalf("loci status without a backup: %s", out)
	}
	out, _, code := runCLI(home, "", []string{"doctor"}, envs)
	if code != 0 || !regexp.MustCompile(`(?m)^WARN +backup +no backup yet`).MatchString(out) {
		t.Fatalf("loci doctor without a backup (%d): %s", code, out)
	}
	out, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "backups", "run", "--wait"}, envs)
	if code != 0 || !strings.Contains(out, "status:    completed") {
		t.Fatalf("loci backups run --wait (%d): %s %s", code, out, errOut)
	}
	if names := backupNames(t, dir); len(names) != 1 {
		t.Fatalf("backups beside the palace: %v", names)
	}
	r := d.do("GET", "/api/status", nil)
	if get[string](r.body, "backup", "warning") != "" || get[string](r.body, "backup", "last", "name") == "" {
		t.Fatalf("status after a backup: %s", r.raw)
	}
	// Doctor without the daemon reads the store and the folder itself.
	if r := d.do("POST", "/api/shutdown", nil); r.status != 202 {
		t.Fatalf("shutdown: %d %s", r.status, r.raw)
	}
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	out, _, _ = runCLI(home, "", []string{"doctor"}, envs)
	if !regexp.MustCompile(`(?m)^OK +backup +last backup: .*\.backup$`).MatchString(out) {
		t.Fatalf("loci doctor with the daemon stopped: %s", out)
	}
}

// A daemon killed (kill -9) while a backup job writes its body leaves no
// file in backup.dir that verifies; at the next start the job runs again
// and completes, and its leftover temporary file is removed.
func TestKilledBackupJobLeavesNothingThatVerifies(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	dir := filepath.Join(home, "bk")
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[palace]\npath = %q\n[backup]\ndir = %q\n", palace, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	envs := []string{"LOCI_CONFIG=" + cfg}
	d := start(t, home, palace, append(envs, "LOCI_TEST_BACKUP_DELAY=10m")...)
	for i := range 20 {
		if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": fmt.Sprintf("memory %d of a palace killed mid-backup", i)}); r.status != 201 {
			t.Fatalf("write: %d %s", r.status, r.raw)
		}
	}
	r := d.do("POST", "/api/backups", nil)
	if r.status != 202 {
		t.Fatalf("POST /api/backups: %d %s", r.status, r.raw)
	}
	id := get[string](r.body, "id")
	// The body is written and held (the test delay) before its header:
	// the temporary file is there, the backup is not.
	var temps []string
	eventually(t, 30*time.Second, "the backup's temporary file", func() bool {
		temps, _ = filepath.Glob(filepath.Join(dir, ".loci-*.backup.tmp-*"))
		return len(temps) == 1
	})
	d.cmd.Process.Kill() // SIGKILL
	<-d.exited
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if _, err := backup.VerifyFile(context.Background(), filepath.Join(dir, e.Name())); err == nil {
			t.Fatalf("%s verifies after a kill mid-backup", e.Name())
		}
	}
	if names := backupNames(t, dir); len(names) != 0 {
		t.Fatalf("a backup's name after a kill mid-backup: %v", names)
	}

	d = start(t, home, palace, envs...)
	job := waitJob(t, d, id, 60*time.Second, finished)
	if job["status"] != "completed" {
		t.Fatalf("the recovered backup job: %v", job)
	}
	names := backupNames(t, dir)
	if len(names) != 1 {
		t.Fatalf("backups after the recovery: %v", names)
	}
	h, err := backup.VerifyFile(context.Background(), filepath.Join(dir, names[0]))
	if err != nil || h.Counts.Drawers != 20 {
		t.Fatalf("the recovered backup: %+v %v", h, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".loci-*.tmp-*")); len(left) != 0 {
		t.Fatalf("temporary files left after the next backup: %v", left)
	}
}
