package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The CLI side of the trial of issue 37: files are never overwritten
// without --force (and never the --since file), errors print whole,
// a file of the other kind names the other command, a relative
// --data-dir says so, and a killed backup's temporary file is cleaned.
func TestTrial37BackupAndExportFiles(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	for i := range 5 {
		if _, err := fileDrawer(d.addr, "alpha", "notes", backupText(rand.New(rand.NewPCG(37, uint64(i))), 40)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	full := filepath.Join(dir, "full.backup")
	if _, e, code := d.cli("", "backup", "--out", full); code != 0 {
		t.Fatalf("backup: %s", e)
	}
	before, _ := os.ReadFile(full)

	// Item 1: an existing --out is refused without --force, and the
	// file is kept as it was.
	o, e, code := d.cli("", "--json", "backup", "--out", full)
	if code == 0 || !strings.Contains(e, "loci::input::invalid") || !strings.Contains(e, "--force") {
		t.Fatalf("backup over an existing file: %d %s %s", code, o, e)
	}
	// The --since file is never the --out, even with --force and
	// spelled another way.
	other := filepath.Join(dir, "sub", "..", "full.backup")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"backup", "--since", full, "--out", full}, {"backup", "--since", full, "--out", other, "--force"}} {
		if o, e, code := d.cli("", args...); code == 0 || !strings.Contains(e, "loci::input::invalid") || !strings.Contains(e, "--since") {
			t.Fatalf("%v: %d %s %s", args, code, o, e)
		}
	}
	if after, _ := os.ReadFile(full); !bytes.Equal(before, after) {
		t.Fatal("a refused backup changed the existing file")
	}
	if _, e, code := d.cli("", "backup", "--out", full, "--force"); code != 0 {
		t.Fatalf("backup --force: %s", e)
	}

	// The same for export.
	exp := filepath.Join(dir, "precious.jsonl")
	if err := os.WriteFile(exp, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if o, e, code := d.cli("", "export", "--out", exp); code == 0 || !strings.Contains(e, "loci::input::invalid") || !strings.Contains(e, "--force") {
		t.Fatalf("export over an existing file: %d %s %s", code, o, e)
	}
	if b, _ := os.ReadFile(exp); string(b) != "precious\n" {
		t.Fatalf("a refused export changed the file: %q", b)
	}
	if _, e, code := d.cli("", "export", "--out", exp, "--force"); code != 0 {
		t.Fatalf("export --force: %s", e)
	}

	// Item 13: a file of the other kind names the other command.
	if o, e, code := d.cli("", "import", full); code == 0 || !strings.Contains(e, "loci restore") || !strings.Contains(e, "backup") {
		t.Fatalf("import of a backup: %d %s %s", code, o, e)
	}
	if o, e, code := d.cli("", "backup", "--since", exp, "--out", filepath.Join(dir, "inc.backup")); code == 0 || !strings.Contains(e, exp) || !strings.Contains(e, "loci import") {
		t.Fatalf("--since an export: %d %s %s", code, o, e)
	}
	junk := filepath.Join(dir, "junk.bin")
	if err := os.WriteFile(junk, []byte("hello, not a backup\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if o, e, code := d.cli("", "backup", "--since", junk, "--out", filepath.Join(dir, "inc.backup")); code == 0 || !strings.Contains(e, junk) {
		t.Fatalf("--since a stranger file: %d %s %s", code, o, e)
	}
	fresh := filepath.Join(t.TempDir(), "restored")
	if o, e, code := runCLI(home, "", []string{"restore", exp, "--data-dir", fresh}, nil); code == 0 || !strings.Contains(e, "loci import") {
		t.Fatalf("restore of an export: %d %s %s", code, o, e)
	}

	// Item 16: a relative --data-dir asks for an absolute --data-dir.
	if o, e, code := runCLI(home, "", []string{"restore", full, "--data-dir", "relative/dir"}, nil); code == 0 ||
		!strings.Contains(e, "absolute --data-dir") || strings.Contains(e, "configuration file, environment or flags") {
		t.Fatalf("relative --data-dir: %d %s %s", code, o, e)
	}

	// Item 9: a corrupt backup's message is whole, also with --json.
	flip := filepath.Join(dir, "flip.backup")
	b, _ := os.ReadFile(full)
	// A letter of a drawer's text changed: the framing holds, the
	// digest does not (the trial's "the body's digest is …" message).
	at := -1
	for _, w := range backupWords {
		if i := bytes.Index(b[4096:], []byte(w)); i >= 0 {
			at = 4096 + i
			break
		}
	}
	if at < 0 {
		t.Fatal("no drawer text in the backup")
	}
	b[at] ^= 0x20
	if err := os.WriteFile(flip, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"backup", "verify", flip}, {"--json", "backup", "verify", flip}} {
		o, e, code := runCLI(home, "", args, nil)
		if code == 0 || !strings.Contains(e, "loci::backup::corrupt") || !strings.Contains(e, "the header says sha256:") || strings.Contains(e, "…(") {
			t.Fatalf("%v: %d %s %s", args, code, o, e)
		}
		if args[0] == "--json" {
			var body struct{ Error, Code, Help string }
			if err := json.Unmarshal([]byte(e), &body); err != nil || body.Help == "" || !strings.HasSuffix(body.Error, ")") {
				t.Fatalf("--json error: %v %s", err, e)
			}
		}
	}

	// Item 16: a killed backup's temporary file (the CLI's own name,
	// a backup's first bytes, older than an hour) is removed by the next
	// backup into the folder; nothing else is.
	old := time.Now().Add(-2 * time.Hour)
	stale := filepath.Join(dir, ".e3.backup.tmp-123456")
	young := filepath.Join(dir, ".e4.backup.tmp-654321")
	notOurs := filepath.Join(dir, ".notes.tmp-777")
	plain := filepath.Join(dir, "keep.backup.tmp-888")
	for _, f := range []struct {
		path string
		data []byte
	}{{stale, b[:4096+100]}, {young, b[:4096+100]}, {notOurs, []byte("someone's notes")}, {plain, b[:4096]}} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if f.path != young {
			if err := os.Chtimes(f.path, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, e, code := d.cli("", "backup", "--out", filepath.Join(dir, "next.backup")); code != 0 {
		t.Fatalf("next backup: %s", e)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("the stale temporary file is still there: %v", err)
	}
	for _, p := range []string{young, notOurs, plain} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s was removed: %v", p, err)
		}
	}
}

// Item 15: doctor with authentication on and no token says how to give
// the token.
func TestTrial37DoctorSaysHowToGiveTheToken(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN=doctor-secret-0123456789abcdef")
	o, e, _ := runCLI(home, "", []string{"doctor"}, []string{"LOCI_PALACE_PATH=" + palace})
	var line, fix string
	lines := strings.Split(o, "\n")
	for i, l := range lines {
		if strings.Contains(l, "backup") && strings.Contains(l, "not checked") {
			line = l
			if i+1 < len(lines) && strings.Contains(lines[i+1], "fix:") {
				fix = lines[i+1]
			}
		}
	}
	if line == "" || !strings.Contains(fix, "LOCI_AUTH_TOKEN") {
		t.Fatalf("doctor without the token:\n%s\n%s", o, e)
	}
}

// Item 16: the dashboard saves a wing's export under a name that says
// the wing (loci-export-<wing>-<time>.jsonl), not the daemon's generic
// loci-export-<time>.jsonl.
func TestTrial37DashboardExportNamesTheWing(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	home, palace := newPalace(t)
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte("[web]\nenable = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := start(t, home, palace, "LOCI_CONFIG="+cfg)
	if _, err := fileDrawer(d.addr, "work", "notes", "the lighthouse keeper lights the lamp at dusk"); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting %s: %v", browser, err)
	}
	tctx, c := context.WithTimeout(ctx, 60*time.Second)
	defer c()
	var name string
	err := chromedp.Run(tctx, chromedp.Navigate("http://"+d.addr+"/ui/#/palace/work"), chromedp.WaitVisible("#export-wing", chromedp.ByQuery),
		// The saved name is the link's download attribute; the click
		// itself (a file dialog) is not needed.
		chromedp.Evaluate(`window.lociSaved = ''; HTMLAnchorElement.prototype.click = function () { window.lociSaved = this.download; }`, nil),
		chromedp.Click("#export-wing", chromedp.ByQuery),
		chromedp.Poll(`window.lociSaved !== ''`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(`window.lociSaved`, &name))
	if err != nil {
		t.Fatalf("export from the dashboard: %v\n%s", err, d.log.String())
	}
	if !regexp.MustCompile(`^loci-export-work-[0-9]{8}T[0-9]{6}Z\.jsonl$`).MatchString(name) {
		t.Fatalf("the wing's export is saved as %q", name)
	}
}
