package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/sources/pack"
)

// TestSourcePackageTrial29: what the trial of issue 29 found, through the
// real daemon and CLI: a downgrade is said; show names the package's
// folder; a miner of a disabled source says loci source enable NAME; a
// removal warns of the miners left without their source (and the log
// too); a package found unavailable is logged once; a bad manifest names
// its key and line and the file to correct.
func TestSourcePackageTrial29(t *testing.T) {
	t.Parallel()
	needsSandbox(t)
	home, palace := newPalace(t)
	d := start(t, home, palace)
	mod := guestModule(t)
	const perms = "read = [\"locator\"]\n"
	write := func(version string) string {
		_, arc := notesPackage(t, "mysrc", version, perms, mod)
		f := filepath.Join(t.TempDir(), "mysrc-"+version+".tar.gz")
		if err := os.WriteFile(f, arc, 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	if out, errOut, code := d.cli("", "source", "install", write("0.4.0"), "--yes", "--enable"); code != 0 {
		t.Fatalf("install 0.4.0: %d %s %s", code, out, errOut)
	}
	out, errOut, code := d.cli("", "source", "install", write("0.2.0"), "--yes")
	if code != 0 || !strings.Contains(out, "installed the mysrc source 0.2.0") || !strings.Contains(out, "it replaced version 0.4.0, a newer one: this is a downgrade") {
		t.Fatalf("a downgrade: %d %s %s", code, out, errOut)
	}
	p, arc := notesPackage(t, "mysrc", "0.1.0", perms, mod)
	r := install(d, arc, "?consent="+pack.ConsentDigest("mysrc", p.Manifest.Permissions))
	if r.status != 200 || get[string](r.body, "replaced") != "0.2.0" || r.body["downgrade"] != true {
		t.Fatalf("a downgrade over REST: %d %s", r.status, r.raw)
	}
	_, arc = notesPackage(t, "mysrc", "0.3.0", perms, mod)
	if r := install(d, arc, "?consent="+pack.ConsentDigest("mysrc", p.Manifest.Permissions)); r.status != 200 || r.body["downgrade"] != nil {
		t.Fatalf("an upgrade over REST: %d %s", r.status, r.raw)
	}

	dir := filepath.Join(palace, "sources", "mysrc")
	if out, errOut, code := d.cli("", "source", "show", "mysrc"); code != 0 || !strings.Contains(out, "files:          "+dir) {
		t.Fatalf("show: %d %s %s", code, out, errOut)
	}
	if r := d.do("GET", "/api/source-packages/mysrc", nil); get[string](r.body, "dir") != dir {
		t.Fatalf("GET shows no dir: %s", r.raw)
	}

	// A miner of the source, then the source disabled.
	if out, errOut, code := d.cli("", "miner", "set", "m", "--source", "mysrc", "--locator", t.TempDir(), "--enable"); code != 0 {
		t.Fatalf("miner set: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := d.cli("", "source", "disable", "mysrc"); code != 0 {
		t.Fatal(errOut)
	}
	_, errOut, code = d.cli("", "miner", "run", "m")
	if code == 0 || !strings.Contains(errOut, "the mysrc source is disabled") || !strings.Contains(errOut, "loci source enable mysrc") ||
		strings.Contains(errOut, "correct the miner") || strings.Contains(errOut, "not enabled") {
		t.Fatalf("a miner of a disabled source: %d %s", code, errOut)
	}
	if _, errOut, code := d.cli("", "source", "enable", "mysrc"); code != 0 {
		t.Fatal(errOut)
	}

	// Found unavailable: logged once, however often it is read.
	modPath := filepath.Join(dir, "notes.wasm")
	if err := os.WriteFile(modPath, append(append([]byte{}, mod...), 0), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		d.do("GET", "/api/source-packages", nil)
	}
	if n := strings.Count(d.log.String(), "a source package cannot run"); n != 1 || !strings.Contains(d.log.String(), "the module changed on disk") {
		t.Fatalf("%d warnings of the tampered module:\n%s", n, d.log.String())
	}

	out, errOut, code = d.cli("", "source", "remove", "mysrc")
	if code != 0 || !strings.Contains(out, "removed the mysrc source") ||
		!strings.Contains(out, "warning: the miner m names the mysrc source; it cannot run until a source of that name is installed again") {
		t.Fatalf("remove: %d %s %s", code, out, errOut)
	}
	if !strings.Contains(d.log.String(), "a removed source package is named by miners") {
		t.Fatalf("the log does not warn of the miners:\n%s", d.log.String())
	}

	// A bad manifest: the key, its line, the file to correct.
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, pack.ManifestFile), []byte("contract = 1\nname = \"bad\"\nversion = \"1.0.0\"\nmodule = \"notes.wasm\"\n[permissions]\nread = [\"locator\"]\nwrite = [\"/tmp\"]\n"), 0o600)
	os.WriteFile(filepath.Join(proj, "notes.wasm"), mod, 0o600)
	_, errOut, code = d.cli("", "source", "install", proj)
	if code == 0 || !strings.Contains(errOut, "loci-source.toml line 7: unknown key permissions.write") ||
		!strings.Contains(errOut, "correct loci-source.toml") || strings.Contains(errOut, "strict mode") {
		t.Fatalf("a bad manifest: %d %s", code, errOut)
	}
}
