package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/sources/pack"
)

// TestTrial30PubIndexServesDaemon: what a publisher does with the binary
// only. loci source keygen makes a key outside the registry's folder;
// loci source index --sign --yank indexes source packages beside the
// index and an (unsigned) plugin in plugins/; a new release indexed again
// keeps the yank; a daemon reading the folder under signature_policy =
// required with the key trusted offers the newest version not yanked,
// shows the yanked one only when pinned, and installs the plugin the CLI
// indexed, vouched for by the index's signature. A private key inside
// the folder warns.
func TestTrial30PubIndexServesDaemon(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	reg := t.TempDir()
	keys := filepath.Join(t.TempDir(), "release")
	cli := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, code := runCLI(home, "", args, nil)
		if code != 0 {
			t.Fatalf("loci %s: %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
		}
		return out, errOut
	}
	pubText, _ := cli("source", "keygen", "--out", keys)
	pub := strings.TrimSpace(pubText)

	write := func(rel string, b []byte) {
		t.Helper()
		p := filepath.Join(reg, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("notes-1.0.0.tar.gz", regPackage(t, "notes", "1.0.0", "", "read = [\"locator\"]\n"))
	write("notes-1.1.0.tar.gz", regPackage(t, "notes", "1.1.0", "", "read = [\"locator\"]\n"))
	_, errOut := cli("source", "index", reg, "--sign", keys+".key", "--yank", "notes@1.1.0")
	if strings.Contains(errOut, "warning") {
		t.Fatalf("a key outside the folder warned: %s", errOut)
	}

	// A plugin release in plugins/: indexing again keeps the yank.
	p, _ := notesPackage(t, "scribe", "1.0.0", notesPerms, guestModule(t))
	_, arc := notesPlugin(t, "notes-suite", "1.0.0", p)
	write("plugins/notes-suite-1.0.0.tar.gz", arc)
	out, _ := cli("source", "index", reg, "--sign", keys+".key")
	if !strings.Contains(out, "1.1.0 (yanked)") || !strings.Contains(out, "notes-suite") {
		t.Fatalf("re-index summary:\n%s", out)
	}
	ixb, err := os.ReadFile(filepath.Join(reg, pack.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := pack.ParseIndex(ixb)
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.Plugins) != 1 || ix.Plugins[0].Versions[0].Archive != "plugins/notes-suite-1.0.0.tar.gz" || ix.Plugins[0].Versions[0].Key != pub {
		t.Fatalf("index:\n%s", ixb)
	}

	d := start(t, home, palace, registryConfig(t, home, []string{"pub=file://" + reg}, "required", pub))
	r := d.do("GET", "/api/source-registry/search?q=notes", nil)
	e := entryOf(t, r, "notes", "pub")
	if r.status != 200 || e == nil || e["version"] != "1.0.0" {
		t.Fatalf("search (1.1.0 is yanked): %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/source-registry/sources/notes?version=1.1.0", nil); r.status != 200 || r.body["yanked"] != true {
		t.Fatalf("the yanked version pinned: %d %s", r.status, r.raw)
	}
	s := d.do("GET", "/api/plugin-registry/plugins/notes-suite", nil)
	if s.status != 200 || get[string](s.body, "plugin", "signed_by") != pub || get[string](s.body, "archive_digest") != pack.Digest(arc) {
		t.Fatalf("plugin preview: %d %s", s.status, s.raw)
	}
	digest := pack.ConsentDigest("scribe", p.Manifest.Permissions)
	in := d.do("POST", "/api/plugin-registry/install", map[string]any{"id": "notes-suite", "consents": map[string]string{"scribe": digest}, "archive_digest": pack.Digest(arc)})
	if in.status != 201 || get[string](in.body, "plugin", "origin") != "registry" || get[string](in.body, "plugin", "signed_by") != pub {
		t.Fatalf("plugin install: %d %s", in.status, in.raw)
	}
	if sp := d.do("GET", "/api/source-packages/scribe", nil); get[string](sp.body, "plugin") != "notes-suite" {
		t.Fatalf("the plugin's module: %s", sp.raw)
	}

	// The private key inside the folder: indexed, with a warning.
	inner := filepath.Join(reg, "keys", "release")
	cli("source", "keygen", "--out", inner)
	_, errOut = cli("source", "index", reg, "--sign", inner+".key")
	if !strings.Contains(errOut, "warning: the private key") || !strings.Contains(errOut, "publishes it") {
		t.Fatalf("no warning of a key inside the folder: %s", errOut)
	}
}
