package plugin

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
)

const pluginManifest = `
id = "notes-suite"
version = "1.0.0"
description = "Two note sources"
loci = ">= 0.1.0"

[[modules]]
kind = "source"
path = "modules/alpha"

[[modules]]
kind = "source"
path = "modules/beta"
`

func sourceManifest(name string, perms string) []byte {
	return []byte(`contract = 1
name = "` + name + `"
version = "0.2.0"
module = "` + name + `.wasm"
[permissions]
` + perms + "\n")
}

var wasm = []byte("\x00asm\x01\x00\x00\x00")

// files is a good plugin's files by path.
func files() map[string][]byte {
	return map[string][]byte{
		ManifestFile:                     []byte(pluginManifest),
		"modules/alpha/loci-source.toml": sourceManifest("alpha", `read = ["locator"]`),
		"modules/alpha/alpha.wasm":       wasm,
		"modules/beta/loci-source.toml":  sourceManifest("beta", ""),
		"modules/beta/beta.wasm":         append(bytes.Clone(wasm), 1),
	}
}

// entry is one raw tar entry of a hand-made (possibly hostile) archive.
type entry struct {
	name     string
	body     []byte
	typeflag byte
	link     string
	size     int64 // declared size when not len(body)
}

func archive(t *testing.T, entries []entry) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		tf := e.typeflag
		if tf == 0 {
			tf = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tf, Linkname: e.link}
		if tf != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if len(e.body) > 0 && tf == tar.TypeReg {
			if _, err := tw.Write(e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	tw.Close()
	zw.Close()
	return b.Bytes()
}

func goodEntries() []entry {
	var out []entry
	for _, n := range sortedPaths(files()) {
		out = append(out, entry{name: n, body: files()[n]})
	}
	return out
}

func readGood(t *testing.T) *Plugin {
	t.Helper()
	p, err := Read(bytes.NewReader(archive(t, goodEntries())))
	if err != nil {
		t.Fatalf("a good plugin: %v", err)
	}
	return p
}

// TestReadWriteRoundTrip: a good plugin reads with its modules in the
// manifest's order; Write is deterministic and reads back the same
// plugin with the same digest.
func TestReadWriteRoundTrip(t *testing.T) {
	p := readGood(t)
	if p.Manifest.ID != "notes-suite" || strings.Join(p.Names(), ",") != "alpha,beta" {
		t.Fatalf("read %+v %v", p.Manifest, p.Names())
	}
	if p.Sources[0].Package.Manifest.Permissions.Read[0] != pack.Locator {
		t.Fatalf("alpha's permissions: %+v", p.Sources[0].Package.Manifest.Permissions)
	}
	a, err := p.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Bytes()
	if !bytes.Equal(a, b) {
		t.Fatal("two archives of one plugin differ")
	}
	q, err := Read(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if q.Digest() != p.Digest() || len(q.Sources) != 2 || !bytes.Equal(q.Sources[1].Package.Module, p.Sources[1].Package.Module) {
		t.Fatal("the written plugin reads back otherwise")
	}
	if p.Compatible("0.1.0") != "" {
		t.Fatalf("compatible: %q", p.Compatible("0.1.0"))
	}
}

// TestDigestCoversEveryFileAndNotTheSignature: changing any file's bytes
// changes the digest; signing does not.
func TestDigestCoversEveryFileAndNotTheSignature(t *testing.T) {
	base := readGood(t).Digest()
	for path := range files() {
		f := files()
		f[path] = append(bytes.Clone(f[path]), '\n')
		p, err := fromFiles(f)
		if err != nil {
			t.Fatalf("%s changed: %v", path, err)
		}
		if p.Digest() == base {
			t.Errorf("changing %s does not change the digest", path)
		}
	}
	p := readGood(t)
	_, key, _ := pack.GenerateKey()
	p.Sign(key)
	if p.Digest() != base {
		t.Fatal("signing changed the digest")
	}
}

// TestSignVerify: a signed plugin written and read back verifies under
// its key; tampering after signing is untrusted under both policies
// when the key is trusted; an unknown key counts as unsigned (optional)
// or untrusted (required); unsigned likewise.
func TestSignVerify(t *testing.T) {
	pub, key, _ := pack.GenerateKey()
	trusted := []string{pack.FormatPublicKey(pub)}
	p := readGood(t)
	p.Sign(key)
	raw, err := p.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if k, err := q.CheckSignature(); err != nil || k != trusted[0] {
		t.Fatalf("CheckSignature = %q, %v", k, err)
	}
	for _, req := range []bool{false, true} {
		if by, err := q.Verify(trusted, req); err != nil || by != trusted[0] {
			t.Fatalf("Verify(trusted, %v) = %q, %v", req, by, err)
		}
	}
	// Tampered: a module's bytes changed after signing. A trusted key's
	// signature that does not hold is tampering (integrity, as a
	// registry archive's is), under either policy.
	q.Sources[1].Package.Module = append(q.Sources[1].Package.Module, 2)
	for _, req := range []bool{false, true} {
		if _, err := q.Verify(trusted, req); !fault.Is(err, fault.SourceIntegrity) {
			t.Fatalf("tampered, required=%v: %v", req, err)
		}
	}
	if _, err := q.CheckSignature(); !fault.Is(err, fault.SourceUntrusted) {
		t.Fatalf("tampered CheckSignature: %v", err)
	}
	// Unknown key: unsigned under optional, untrusted under required.
	other, _, _ := pack.GenerateKey()
	q2, _ := Read(bytes.NewReader(raw))
	if by, err := q2.Verify([]string{pack.FormatPublicKey(other)}, false); err != nil || by != "" {
		t.Fatalf("unknown key, optional: %q, %v", by, err)
	}
	if _, err := q2.Verify([]string{pack.FormatPublicKey(other)}, true); !fault.Is(err, fault.SourceUntrusted) || !strings.Contains(err.Error(), "not a trusted key") {
		t.Fatalf("unknown key, required: %v", err)
	}
	u := readGood(t)
	if by, err := u.Verify(trusted, false); err != nil || by != "" {
		t.Fatalf("unsigned, optional: %q, %v", by, err)
	}
	if _, err := u.Verify(trusted, true); !fault.Is(err, fault.SourceUntrusted) {
		t.Fatalf("unsigned, required: %v", err)
	}
}

// TestHostileArchives: every archive that is not a clean plugin is
// loci::input::invalid saying what is wrong.
func TestHostileArchives(t *testing.T) {
	with := func(extra ...entry) []entry { return append(goodEntries(), extra...) }
	replace := func(name string, body []byte) []entry {
		var out []entry
		for _, e := range goodEntries() {
			if e.name == name {
				e.body = body
			}
			out = append(out, e)
		}
		return out
	}
	without := func(name string) []entry {
		var out []entry
		for _, e := range goodEntries() {
			if e.name != name {
				out = append(out, e)
			}
		}
		return out
	}
	huge := entry{name: "modules/alpha/huge.bin", body: make([]byte, MaxArchiveBytes+1)}
	cases := []struct {
		name    string
		entries []entry
		want    string
	}{
		{"path traversal", with(entry{name: "../evil", body: []byte("x")}), "clean relative path"},
		{"absolute path", with(entry{name: "/etc/passwd", body: []byte("x")}), "clean relative path"},
		{"traversal inside", with(entry{name: "modules/../../evil", body: []byte("x")}), "clean relative path"},
		{"hidden file", with(entry{name: "modules/alpha/.hidden", body: []byte("x")}), "clean relative path"},
		{"symlink", with(entry{name: "modules/alpha/link", typeflag: tar.TypeSymlink, link: "/etc/passwd"}), "is a link"},
		{"hard link", with(entry{name: "modules/alpha/hard", typeflag: tar.TypeLink, link: "modules/alpha/alpha.wasm"}), "is a link"},
		{"device", with(entry{name: "modules/alpha/dev", typeflag: tar.TypeChar}), "not a regular file"},
		{"huge entry", with(huge), "more than 64 MiB"},
		{"duplicate entry", with(entry{name: "modules/beta/beta.wasm", body: wasm}), "appears twice"},
		{"extra file", with(entry{name: "modules/beta/notes.txt", body: []byte("x")}), "neither the manifest"},
		{"no manifest", without(ManifestFile), "no " + ManifestFile},
		{"module missing", without("modules/beta/beta.wasm"), "has no beta.wasm"},
		{"module manifest missing", without("modules/beta/loci-source.toml"), "has no loci-source.toml"},
		{"not wasm", replace("modules/beta/beta.wasm", []byte("#!/bin/sh")), "not a WebAssembly module"},
		{"bad source manifest", replace("modules/beta/loci-source.toml", []byte("name = \"Beta\"")), "module modules/beta"},
		{"duplicate source names", replace("modules/beta/loci-source.toml", bytes.Replace(sourceManifest("alpha", ""), []byte("alpha.wasm"), []byte("beta.wasm"), 1)), "both the source \"alpha\""},
		{"unknown module kind", replace(ManifestFile, []byte(strings.Replace(pluginManifest, `kind = "source"`, `kind = "theme"`, 1))), "knows only sources"},
		{"bad id", replace(ManifestFile, []byte(strings.Replace(pluginManifest, `"notes-suite"`, `"Notes Suite"`, 1))), "not a plugin id"},
		{"bad version", replace(ManifestFile, []byte(strings.Replace(pluginManifest, `"1.0.0"`, `"one"`, 1))), "not a semantic version"},
		{"bad loci", replace(ManifestFile, []byte(strings.Replace(pluginManifest, `">= 0.1.0"`, `"soon"`, 1))), "not a version constraint"},
		{"unknown key", replace(ManifestFile, []byte("colour = \"red\"\n"+pluginManifest)), "colour"},
		{"no modules", replace(ManifestFile, []byte("id = \"x\"\nversion = \"1.0.0\"\n")), "at least one module"},
		{"module path climbs", replace(ManifestFile, []byte(strings.Replace(pluginManifest, `"modules/beta"`, `"../beta"`, 1))), "not a folder in the archive"},
		{"two modules one folder", replace(ManifestFile, []byte(strings.Replace(pluginManifest, `"modules/beta"`, `"modules/alpha"`, 1))), "holds another module"},
		{"nested module folders", replace(ManifestFile, []byte(strings.Replace(pluginManifest, `"modules/beta"`, `"modules/alpha/beta"`, 1))), "inside another module"},
		{"bad signature file", with(entry{name: SignatureFile, body: []byte("{}")}), "not a signature"},
		{"not toml", replace(ManifestFile, []byte("[[[")), "not a plugin manifest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(archive(t, c.entries)))
			if !fault.Is(err, fault.InputInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Read = %v, want invalid saying %q", err, c.want)
			}
		})
	}
	if _, err := Read(strings.NewReader("not gzip")); !fault.Is(err, fault.InputInvalid) {
		t.Fatalf("not gzip: %v", err)
	}
	// A bomb: small compressed, beyond the bound unpacked.
	if _, err := Read(bytes.NewReader(archive(t, []entry{{name: "a", body: make([]byte, 40<<20)}, {name: "b", body: make([]byte, 40<<20)}}))); !fault.Is(err, fault.InputInvalid) || !strings.Contains(err.Error(), "more than 64 MiB") {
		t.Fatalf("bomb: %v", err)
	}
}

// TestFoldersAndDotSlashAreAccepted: an archive made by tar (folder
// entries, "./" prefixes) reads as the plugin.
func TestFoldersAndDotSlashAreAccepted(t *testing.T) {
	es := []entry{{name: "./", typeflag: tar.TypeDir}, {name: "modules/", typeflag: tar.TypeDir}}
	for _, e := range goodEntries() {
		e.name = "./" + e.name
		es = append(es, e)
	}
	// "./" alone is the archive's root: allowed as a folder entry.
	es = es[1:]
	if _, err := Read(bytes.NewReader(archive(t, es))); err != nil {
		t.Fatal(err)
	}
}

// TestReadDir: a plugin folder reads as its archive would; a module
// folder without its built module says so.
func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	for p, b := range files() {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest() != readGood(t).Digest() {
		t.Fatal("the folder's plugin is not the archive's")
	}
	os.Remove(filepath.Join(dir, "modules", "beta", "beta.wasm"))
	if _, err := ReadDir(dir); !fault.Is(err, fault.InputInvalid) || !strings.Contains(err.Error(), "module modules/beta") {
		t.Fatalf("no module: %v", err)
	}
}

// TestCompatible: the plugin's own loci requirement and each module's
// contract are judged.
func TestCompatible(t *testing.T) {
	f := files()
	f[ManifestFile] = []byte(strings.Replace(pluginManifest, `">= 0.1.0"`, `">= 9.0.0"`, 1))
	p, err := fromFiles(f)
	if err != nil {
		t.Fatal(err)
	}
	if why := p.Compatible("0.1.0"); !strings.Contains(why, "needs loci >= 9.0.0") {
		t.Fatalf("plugin requirement: %q", why)
	}
	f = files()
	f["modules/beta/loci-source.toml"] = []byte(strings.Replace(string(sourceManifest("beta", "")), "contract = 1", "contract = 99", 1))
	p, err = fromFiles(f)
	if err != nil {
		t.Fatal(err)
	}
	if why := p.Compatible("0.1.0"); !strings.Contains(why, "its beta source") || !strings.Contains(why, "contract 99") {
		t.Fatalf("module contract: %q", why)
	}
}
