package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/sources/pack"
)

// The CLI findings of issue 30's trial, against the real binary and
// daemon: a plugin install given every consent succeeds (from a file and
// from a registry) and plugin show says no trusted key vouched for it;
// source show of a registry source not installed succeeds; source update
// NAME fails when the update did not happen, a batch prints the command
// for one needing consent and fails with the daemon's whole message when
// one failed.
func TestTrial30CLIRegistriesAndPlugins(t *testing.T) {
	t.Parallel()
	needsSandbox(t)
	home, palace := newPalace(t)
	mod := guestModule(t)
	const readLocator = "read = [\"locator\"]\n"

	reg := t.TempDir()
	files := map[string][]byte{"notes/notes-1.0.0.tar.gz": regPackage(t, "notes", "1.0.0", "", readLocator)}
	writeRegistry(t, reg, files, nil, nil)
	// A plugin registry in a folder: pair (gamma and delta, each asking
	// for the notes' permissions), unsigned.
	plugs := t.TempDir()
	gamma, _ := notesPackage(t, "gamma", "1.0.0", notesPerms, mod)
	delta, _ := notesPackage(t, "delta", "1.0.0", notesPerms, mod)
	_, pairArc := notesPlugin(t, "pair", "1.0.0", gamma, delta)
	os.WriteFile(filepath.Join(plugs, "pair-1.0.0.tar.gz"), pairArc, 0o600)
	ib, _ := json.Marshal(map[string]any{"version": pack.IndexFormat, "sources": []any{}, "plugins": []any{map[string]any{
		"id": "pair", "description": "two notes",
		"versions": []any{map[string]any{"version": "1.0.0", "archive": "pair-1.0.0.tar.gz", "sha256": pack.Digest(pairArc), "size": len(pairArc), "contract": 1}},
	}}})
	os.WriteFile(filepath.Join(plugs, pack.IndexFile), ib, 0o600)
	d := start(t, home, palace, registryConfig(t, home, []string{"local=file://" + reg, "plugs=file://" + plugs}, "optional"))

	// 1. plugin install FILE --consent beta=DIGEST --adopt alpha, no
	// terminal: installed, exit 0 (it panicked after the install).
	if r := install(d, func() []byte { _, a := notesPackage(t, "alpha", "0.9.0", readLocator, mod); return a }(), "?consent="+consentOf(t, "alpha", readLocator)); r.status != 201 {
		t.Fatalf("alpha on its own: %d %s", r.status, r.raw)
	}
	alpha, _ := notesPackage(t, "alpha", "1.0.0", readLocator, mod)
	beta, _ := notesPackage(t, "beta", "1.0.0", notesPerms, mod)
	_, duoArc := notesPlugin(t, "duo", "1.0.0", alpha, beta)
	duo := filepath.Join(t.TempDir(), "duo.tar.gz")
	os.WriteFile(duo, duoArc, 0o600)
	out, errOut, code := d.cli("", "plugin", "install", duo, "--consent", "beta="+consentOf(t, "beta", notesPerms), "--adopt", "alpha")
	if code != 0 || !strings.Contains(out, "installed the plugin duo 1.0.0 (local)") || !strings.Contains(out, "it took over: alpha") || strings.Contains(errOut, "panic") {
		t.Fatalf("plugin install FILE --consent --adopt: %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = d.cli("", "plugin", "install", "pair", "--consent", "gamma="+consentOf(t, "gamma", notesPerms), "--consent", "delta="+consentOf(t, "delta", notesPerms))
	if code != 0 || !strings.Contains(out, "installed the plugin pair 1.0.0 (registry)") || strings.Contains(errOut, "panic") {
		t.Fatalf("plugin install ID --consent --consent: %d\n%s\n%s", code, out, errOut)
	}
	// 6. plugin show says what the daemon knows of the signature.
	for _, id := range []string{"duo", "pair"} {
		if out, errOut, code := d.cli("", "plugin", "show", id); code != 0 || !strings.Contains(out, "not vouched for by a trusted key") {
			t.Fatalf("plugin show %s: %d\n%s\n%s", id, code, out, errOut)
		}
	}

	// 2. source show NAME of a registry source not installed.
	if out, errOut, code := d.cli("", "source", "show", "notes"); code != 0 || !strings.Contains(out, "notes 1.0.0 (from the local registry)") || strings.Contains(errOut, "panic") {
		t.Fatalf("source show notes: %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = d.cli("", "--json", "source", "show", "notes")
	var shown map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || shown["version"] != "1.0.0" || shown["registry"] != "local" {
		t.Fatalf("source show notes --json: %d\n%s\n%s", code, out, errOut)
	}
	if out, errOut, code := d.cli("", "source", "show", "nothing"); code == 0 || !strings.Contains(errOut, "loci::source::not_found") {
		t.Fatalf("source show nothing: %d\n%s\n%s", code, out, errOut)
	}

	// 3. An update asking for more, without a terminal or with a wrong
	// digest: NAME's update fails the command; in a batch it prints the
	// command to run and exits 0.
	if out, errOut, code := d.cli("", "source", "install", "notes", "--yes"); code != 0 {
		t.Fatalf("source install notes: %d\n%s\n%s", code, out, errOut)
	}
	files["notes/notes-1.1.0.tar.gz"] = regPackage(t, "notes", "1.1.0", "", notesPerms)
	writeRegistry(t, reg, files, nil, nil)
	digest := consentOf(t, "notes", notesPerms)
	for _, args := range [][]string{{"source", "update", "notes"}, {"source", "update", "notes", "--consent", strings.Repeat("0", 64)}, {"--json", "source", "update", "notes"}} {
		out, errOut, code := d.cli("", args...)
		if code == 0 || !strings.Contains(errOut, "loci::source::consent_required") || !strings.Contains(out+errOut, "loci source update notes --consent "+digest) {
			t.Fatalf("%v: %d\n%s\n%s", args, code, out, errOut)
		}
	}
	out, errOut, code = d.cli("", "source", "update")
	if code != 0 || !strings.Contains(out, "notes: 1.0.0 -> 1.1.0 needs your consent") || !strings.Contains(out, "loci source update notes --consent "+digest) {
		t.Fatalf("source update (a batch needing consent): %d\n%s\n%s", code, out, errOut)
	}
	if r := d.do("GET", "/api/source-packages/notes", nil); r.body["version"] != "1.0.0" {
		t.Fatalf("updated without consent: %s", r.raw)
	}

	// 7. A newer release whose archive is gone: the batch fails, saying
	// the daemon's message whole.
	files["notes/notes-1.2.0.tar.gz"] = regPackage(t, "notes", "1.2.0", "", readLocator)
	writeRegistry(t, reg, files, nil, nil)
	os.Remove(filepath.Join(reg, "notes", "notes-1.2.0.tar.gz"))
	r := d.do("POST", "/api/source-registry/update", map[string]any{"name": "notes"})
	var results []map[string]any
	if json.Unmarshal([]byte(r.raw), &results) != nil || len(results) != 1 || results[0]["status"] != "failed" {
		t.Fatalf("the update of a release whose archive is gone: %d %s", r.status, r.raw)
	}
	msg := results[0]["message"].(string)
	if len(msg) <= 96 || strings.Contains(msg, "bytes)") {
		t.Fatalf("the daemon's message is not long enough to be cut, or already cut: %q", msg)
	}
	out, errOut, code = d.cli("", "source", "update")
	if code == 0 || !strings.Contains(out, "notes: failed: "+msg) || !strings.Contains(errOut, msg) || strings.Contains(errOut, "bytes)") {
		t.Fatalf("source update (a batch with a failure): %d\n%s\n%s", code, out, errOut)
	}
}

// 4. loci plugin test of a relative folder runs each module's cases
// (they all failed: "locator … is relative") and leaves no temporary
// folder behind.
func TestTrial30CLIPluginTestOfARelativeFolder(t *testing.T) {
	t.Parallel()
	needsSandbox(t)
	home := t.TempDir()
	work := t.TempDir()
	src := filepath.Join(work, "plug", "p1")
	manifest := "id = \"duo\"\nversion = \"1.0.0\"\ndescription = \"notes, twice\"\n" +
		"[[modules]]\nkind = \"source\"\npath = \"alpha\"\n[[modules]]\nkind = \"source\"\npath = \"beta\"\n"
	os.MkdirAll(src, 0o700)
	os.WriteFile(filepath.Join(src, "loci-plugin.toml"), []byte(manifest), 0o600)
	mod := guestModule(t)
	for _, name := range []string{"alpha", "beta"} {
		p, _ := notesPackage(t, name, "1.0.0", notesPerms, mod)
		loc := filepath.Join(src, name, "testdata", "locator")
		os.MkdirAll(loc, 0o700)
		os.WriteFile(filepath.Join(src, name, pack.ManifestFile), p.ManifestBytes, 0o600)
		os.WriteFile(filepath.Join(src, name, "notes.wasm"), mod, 0o600)
		for i := range 3 {
			os.WriteFile(filepath.Join(loc, fmt.Sprintf("note%d.txt", i)), []byte(fmt.Sprintf("note %d", i)), 0o600)
		}
	}
	tmp := t.TempDir()
	cmd := exec.Command(bin, "plugin", "test", filepath.Join("plug", "p1"))
	cmd.Dir = work
	cmd.Env = env(home, "TMPDIR="+tmp)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Run()
	// The notes guest fails one case (it accepts a cursor it did not
	// write), and only that one, in each module.
	if strings.Contains(out.String(), "is relative") || strings.Count(out.String(), "FAIL ") != 2 || strings.Count(out.String(), "FAIL  a foreign cursor refused") != 2 {
		t.Fatalf("plugin test plug/p1:\n%s\n%s", out.String(), errOut.String())
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("temporary folders left: %v", ents)
	}
}

// 5. loci source auth NAME --source-config ID refuses a configuration of
// another source, naming it, and starts no sign-in (it signed in the
// other source's configuration).
func TestTrial30CLIAuthOfAnotherSourcesConfiguration(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	if r := d.do("PUT", "/api/source-configs/work-dir", map[string]any{"source": "directory"}); r.status != 201 && r.status != 200 {
		t.Fatalf("the configuration: %d %s", r.status, r.raw)
	}
	for _, extra := range [][]string{nil, {"--status"}} {
		args := append([]string{"source", "auth", "notes", "--source-config", "work-dir"}, extra...)
		out, errOut, code := d.cli("", args...)
		if code == 0 || strings.Contains(out, "To sign") || !strings.Contains(errOut, "reads the source directory, not notes") ||
			!strings.Contains(errOut, "loci source auth directory --source-config work-dir") {
			t.Fatalf("%v: %d\n%s\n%s", args, code, out, errOut)
		}
	}
	// Its own source's name passes the check and reaches the daemon.
	if out, errOut, _ := d.cli("", "source", "auth", "directory", "--source-config", "work-dir", "--status"); strings.Contains(errOut, "not directory") ||
		!strings.Contains(out, "work-dir: the configuration reads without an oauth sign-in") {
		t.Fatalf("auth directory --source-config work-dir --status:\n%s\n%s", out, errOut)
	}
}
