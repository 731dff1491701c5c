package pack

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
)

// testArchive is the archive of a small package name@version whose
// module is a WebAssembly header and a marker.
func testArchive(t *testing.T, name, version, description string) []byte {
	t.Helper()
	mb := fmt.Sprintf("contract = 1\nname = %q\nversion = %q\ndescription = %q\nloci = \">= 0.1.0\"\nmodule = \"%s.wasm\"\n\n[permissions]\nread = [\"locator\"]\n",
		name, version, description, name)
	m, err := ParseManifest([]byte(mb))
	if err != nil {
		t.Fatal(err)
	}
	p := &Package{Manifest: m, ManifestBytes: []byte(mb), Module: []byte("\x00asm\x01\x00\x00\x00" + name + version)}
	var b bytes.Buffer
	if err := p.WriteArchive(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBuildIndex: the index lists sources by name and their versions
// newest first (by semantic version, not text), each with its archive's
// name, digest, size, contract and loci requirement, the newest version's
// description; the same archives in another order give the same bytes;
// it reads back with ParseIndex.
func TestBuildIndex(t *testing.T) {
	a := []IndexArchive{
		{"notes-0.9.0.tar.gz", testArchive(t, "notes", "0.9.0", "old notes")},
		{"notes-0.10.0.tar.gz", testArchive(t, "notes", "0.10.0", "notes")},
		{"chat-1.0.0.tar.gz", testArchive(t, "chat", "1.0.0", "chat")},
		{"chat-b.tar.gz", testArchive(t, "chat", "0.1.0+b", "chat")},
		{"chat-a.tar.gz", testArchive(t, "chat", "0.1.0+a", "chat")},
	}
	ix, err := BuildIndex(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Version != IndexFormat || len(ix.Sources) != 2 || ix.Sources[0].Name != "chat" || ix.Sources[1].Name != "notes" {
		t.Fatalf("index %+v", ix)
	}
	notes := ix.Sources[1]
	if notes.Description != "notes" || len(notes.Versions) != 2 || notes.Versions[0].Version != "0.10.0" || notes.Versions[1].Version != "0.9.0" {
		t.Fatalf("notes %+v", notes)
	}
	r := notes.Versions[0]
	if r.Archive != "notes-0.10.0.tar.gz" || r.SHA256 != Digest(a[1].Bytes) || r.Size != int64(len(a[1].Bytes)) || r.Contract != 1 || r.Loci != ">= 0.1.0" || r.Signed() {
		t.Fatalf("release %+v", r)
	}
	if v := ix.Sources[0].Versions; len(v) != 3 || v[0].Version != "1.0.0" || v[1].Version != "0.1.0+a" || v[2].Version != "0.1.0+b" {
		t.Fatalf("chat's versions %+v", v)
	}
	for _, order := range [][]int{{4, 3, 2, 1, 0}, {2, 3, 0, 4, 1}, {3, 4, 1, 0, 2}} {
		var b []IndexArchive
		for _, i := range order {
			b = append(b, a[i])
		}
		again, err := BuildIndex(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ix.Marshal(), again.Marshal()) {
			t.Fatalf("the order %v of the archives changed the index:\n%s\n%s", order, ix.Marshal(), again.Marshal())
		}
	}
	var raw map[string]any
	if err := json.Unmarshal(ix.Marshal(), &raw); err != nil || raw["version"] != float64(1) {
		t.Fatalf("written index %s: %v", ix.Marshal(), err)
	}
	back, err := ParseIndex(ix.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Marshal(), ix.Marshal()) {
		t.Fatalf("read back differs:\n%s", back.Marshal())
	}
	p, err := r.Open("notes", a[1].Bytes)
	if err != nil || p.Manifest.Version != "0.10.0" {
		t.Fatalf("Open: %v", err)
	}
}

// TestBuildIndexRefuses: an archive that is no package, or two archives
// of one source and version, is an error naming the files.
func TestBuildIndexRefuses(t *testing.T) {
	good := testArchive(t, "notes", "1.0.0", "")
	for _, c := range []struct {
		name  string
		a     []IndexArchive
		names []string
	}{
		{"not an archive", []IndexArchive{{"notes-1.0.0.tar.gz", good}, {"broken.tar.gz", []byte("not gzip")}}, []string{"broken.tar.gz"}},
		{"truncated", []IndexArchive{{"cut.tar.gz", good[:len(good)/2]}}, []string{"cut.tar.gz"}},
		{"the same version twice", []IndexArchive{{"a.tar.gz", good}, {"b.tar.gz", good}}, []string{"a.tar.gz", "b.tar.gz", "notes 1.0.0"}},
		{"above the index", []IndexArchive{{"sub/../../notes.tar.gz", good}}, []string{"sub/../../notes.tar.gz"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := BuildIndex(c.a, nil)
			if !fault.Is(err, fault.InputInvalid) {
				t.Fatalf("BuildIndex = %v, want invalid", err)
			}
			for _, n := range c.names {
				if !strings.Contains(err.Error(), n) && !strings.Contains(fault.As(err).Msg, n) {
					t.Errorf("the error %q does not name %s", fault.As(err).Msg, n)
				}
			}
		})
	}
}

// TestSignedIndex: a signed index's releases carry the signature and the
// key's text form; Open accepts the archive signed and refuses a
// tampered one (integrity: the digest differs), a tampered archive with
// its digest and size rewritten to match (untrusted: the signature
// fails), and a signature moved from another archive.
func TestSignedIndex(t *testing.T) {
	pub, key, _ := GenerateKey()
	one := testArchive(t, "notes", "1.0.0", "")
	two := testArchive(t, "notes", "2.0.0", "")
	ix, err := BuildIndex([]IndexArchive{{"notes-1.0.0.tar.gz", one}, {"notes-2.0.0.tar.gz", two}}, key)
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := ix.Sources[0].Versions[1], ix.Sources[0].Versions[0]
	if !r1.Signed() || r1.Key != FormatPublicKey(pub) {
		t.Fatalf("release %+v", r1)
	}
	if err := Verify(pub, one, r1.Signature); err != nil {
		t.Fatalf("the signature: %v", err)
	}
	if _, err := ParseIndex(ix.Marshal()); err != nil {
		t.Fatal(err)
	}
	if _, err := r1.Open("notes", one); err != nil {
		t.Fatalf("Open of the signed archive: %v", err)
	}
	tampered := bytes.Clone(one)
	tampered[len(tampered)-20] ^= 0xff
	if _, err := r1.Open("notes", tampered); !fault.Is(err, fault.SourceIntegrity) {
		t.Fatalf("Open of tampered bytes = %v, want integrity", err)
	}
	forged := r1
	forged.SHA256, forged.Size = Digest(tampered), int64(len(tampered))
	if _, err := forged.Open("notes", tampered); !fault.Is(err, fault.SourceUntrusted) {
		t.Fatalf("Open of tampered bytes with a matching digest = %v, want untrusted", err)
	}
	moved := r2
	moved.Signature = r1.Signature
	if _, err := moved.Open("notes", two); !fault.Is(err, fault.SourceUntrusted) {
		t.Fatalf("Open with another archive's signature = %v, want untrusted", err)
	}
	if _, err := r2.Open("chat", two); !fault.Is(err, fault.SourceIntegrity) {
		t.Fatalf("Open as another source = %v, want integrity", err)
	}
}

// TestParseIndexRefuses: every malformed field is loci::input::invalid
// naming it, and an index of another format version says which.
func TestParseIndexRefuses(t *testing.T) {
	a := testArchive(t, "notes", "1.0.0", "")
	_, key, _ := GenerateKey()
	ix, _ := BuildIndex([]IndexArchive{{"notes-1.0.0.tar.gz", a}}, key)
	good := string(ix.Marshal())
	r := ix.Sources[0].Versions[0]
	for _, c := range []struct{ name, old, new, field string }{
		{"format 2", `"version": 1,`, `"version": 2,`, "format 2"},
		{"unknown field", `"version": 1,`, `"version": 1, "extra": true,`, "extra"},
		{"name", `"name": "notes"`, `"name": "Notes!"`, "sources[0].name"},
		{"version", `"version": "1.0.0"`, `"version": "1.0"`, "versions[0].version"},
		{"archive climbing out", `"archive": "notes-1.0.0.tar.gz"`, `"archive": "../notes-1.0.0.tar.gz"`, "archive"},
		{"archive climbing out in a folder", `"archive": "notes-1.0.0.tar.gz"`, `"archive": "a/../../notes-1.0.0.tar.gz"`, "archive"},
		{"archive absolute", `"archive": "notes-1.0.0.tar.gz"`, `"archive": "/srv/notes-1.0.0.tar.gz"`, "archive"},
		{"archive with a scheme", `"archive": "notes-1.0.0.tar.gz"`, `"archive": "https://elsewhere.example/notes-1.0.0.tar.gz"`, "archive"},
		{"archive with a backslash", `"archive": "notes-1.0.0.tar.gz"`, `"archive": "a\\notes-1.0.0.tar.gz"`, "archive"},
		{"archive percent-encoded", `"archive": "notes-1.0.0.tar.gz"`, `"archive": "%2e%2e/notes-1.0.0.tar.gz"`, "archive"},
		{"archive hidden folder", `"archive": "notes-1.0.0.tar.gz"`, `"archive": ".git/notes-1.0.0.tar.gz"`, "archive"},
		{"archive empty segment", `"archive": "notes-1.0.0.tar.gz"`, `"archive": "a//notes-1.0.0.tar.gz"`, "archive"},
		{"yanked not a bool", `"contract": 1`, `"contract": 1, "yanked": "yes"`, "yanked"},
		{"plugin id", `"sources": [`, `"plugins": [{"id": "Bad!", "versions": []}], "sources": [`, "plugins[0].id"},
		{"plugin without versions", `"sources": [`, `"plugins": [{"id": "bundle", "versions": []}], "sources": [`, "plugins[0].versions"},
		{"plugin field unknown", `"sources": [`, `"plugins": [{"id": "bundle", "name": "x", "versions": []}], "sources": [`, "name"},
		{"digest", r.SHA256, "abc", "sha256"},
		{"size", fmt.Sprintf(`"size": %d`, r.Size), `"size": 0`, "size"},
		{"contract", `"contract": 1`, `"contract": 0`, "contract"},
		{"loci", `"loci": ">= 0.1.0"`, `"loci": "soon"`, "loci"},
		{"signature without key", fmt.Sprintf(`"key": %q`, r.Key), `"key": ""`, "signature"},
		{"key", fmt.Sprintf(`"key": %q`, r.Key), `"key": "loci-ed25519 AAAA"`, "key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := strings.Replace(good, c.old, c.new, 1)
			if bad == good {
				t.Fatalf("%q is not in the index", c.old)
			}
			_, err := ParseIndex([]byte(bad))
			if !fault.Is(err, fault.InputInvalid) || !strings.Contains(fault.As(err).Msg, c.field) {
				t.Fatalf("ParseIndex = %v, want invalid naming %s", err, c.field)
			}
		})
	}
}

// FuzzParseIndex: ParseIndex never panics, and an index it accepts
// writes back to one it reads the same.
func FuzzParseIndex(f *testing.F) {
	_, key, _ := GenerateKey()
	a := []byte("\x1f\x8b")
	f.Add(a)
	f.Add([]byte(`{"version":1,"sources":[]}`))
	f.Add([]byte(`{"version":1,"sources":[{"name":"notes","versions":[{"version":"1.0.0","archive":"n.tar.gz","sha256":"` + strings.Repeat("ab", 32) + `","size":10,"contract":1}]}]}`))
	f.Add([]byte(FormatPublicKey(key.Public().(ed25519.PublicKey))))
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := ParseIndex(b)
		if err != nil {
			return
		}
		again, err := ParseIndex(ix.Marshal())
		if err != nil {
			t.Fatalf("an accepted index does not read back: %v\n%s", err, ix.Marshal())
		}
		if !bytes.Equal(again.Marshal(), ix.Marshal()) {
			t.Fatalf("the index changed when read back")
		}
	})
}

// FuzzParsePublicKey: ParsePublicKey never panics, and a key it accepts
// formats to text it reads as the same key.
func FuzzParsePublicKey(f *testing.F) {
	pub, _, _ := GenerateKey()
	f.Add(FormatPublicKey(pub))
	f.Add("loci-ed25519 AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParsePublicKey(s)
		if err != nil {
			return
		}
		back, err := ParsePublicKey(FormatPublicKey(k))
		if err != nil || !back.Equal(k) {
			t.Fatalf("%q: %v", s, err)
		}
	})
}

// TestIndexFolders: an archive may sit in folders below the index, a
// release may be yanked, and an index may list plugins with the same
// release shape; all read back as written (format 1).
func TestIndexFolders(t *testing.T) {
	a := testArchive(t, "notes", "1.0.0", "notes")
	ix, err := BuildIndex([]IndexArchive{{"archives/notes/notes-1.0.0.tar.gz", a}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix.Sources[0].Versions[0].Yanked = true
	pl := ix.Sources[0].Versions[0]
	pl.Archive = "plugins/bundle-1.0.0.tar.gz"
	ix.Plugins = []IndexPlugin{{ID: "bundle", Description: "a bundle", Versions: []IndexRelease{pl}}}
	back, err := ParseIndex(ix.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if back.Version != 1 || back.Sources[0].Versions[0].Archive != "archives/notes/notes-1.0.0.tar.gz" || !back.Sources[0].Versions[0].Yanked ||
		len(back.Plugins) != 1 || back.Plugins[0].ID != "bundle" || back.Plugins[0].Versions[0].Archive != "plugins/bundle-1.0.0.tar.gz" {
		t.Fatalf("read back %+v", back)
	}
	if _, err := BuildIndex([]IndexArchive{{"../notes-1.0.0.tar.gz", a}}, nil); !fault.Is(err, fault.InputInvalid) {
		t.Fatalf("BuildIndex of an archive above the index = %v", err)
	}
	plain, _ := BuildIndex([]IndexArchive{{"notes-1.0.0.tar.gz", a}}, nil)
	if strings.Contains(string(plain.Marshal()), "yanked") || strings.Contains(string(plain.Marshal()), "plugins") {
		t.Fatalf("an index with nothing yanked and no plugins names them:\n%s", plain.Marshal())
	}
	if why := (IndexRelease{Contract: 1, Loci: ">= 99.0.0"}).Compatible("0.1.0"); !strings.Contains(why, "99.0.0") {
		t.Fatalf("Compatible = %q", why)
	}
	if why := (IndexRelease{Contract: 99}).Compatible("0.1.0"); !strings.Contains(why, "contract 99") {
		t.Fatalf("Compatible = %q", why)
	}
	if why := (IndexRelease{Contract: 1, Loci: ">= 0.1.0"}).Compatible("0.1.0"); why != "" {
		t.Fatalf("Compatible = %q", why)
	}
}

// TestBuildIndexKeepsYanked: a release the previous index marks yanked
// stays yanked when its name, version and SHA-256 are the same (a
// rebuilt archive of that version, other bytes, is a new release and is
// not); SetYanked sets and clears the flag and names an unknown release.
func TestBuildIndexKeepsYanked(t *testing.T) {
	old := testArchive(t, "notes", "1.0.0", "notes")
	a := []IndexArchive{{"notes-1.0.0.tar.gz", old}, {"notes-1.1.0.tar.gz", testArchive(t, "notes", "1.1.0", "notes")}}
	prev, err := BuildIndex(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := prev.SetYanked("notes@1.0.0", true); err != nil {
		t.Fatal(err)
	}
	a = append(a, IndexArchive{"notes-2.0.0.tar.gz", testArchive(t, "notes", "2.0.0", "notes")})
	ix, err := BuildIndexWith(a, IndexOptions{Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range ix.Sources[0].Versions {
		got[r.Version] = r.Yanked
	}
	if !got["1.0.0"] || got["1.1.0"] || got["2.0.0"] || len(got) != 3 {
		t.Fatalf("yanked after re-indexing = %v, want only 1.0.0", got)
	}
	// Another archive of 1.0.0 (other bytes) is not the release yanked.
	a[0] = IndexArchive{"notes-1.0.0.tar.gz", testArchive(t, "notes", "1.0.0", "notes, repacked")}
	ix2, err := BuildIndexWith(a, IndexOptions{Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	if ix2.Sources[0].Versions[2].Yanked {
		t.Fatalf("a repacked 1.0.0 inherited the yank: %+v", ix2.Sources[0].Versions)
	}
	if err := ix.SetYanked("notes@1.0.0", false); err != nil || ix.Sources[0].Versions[2].Yanked {
		t.Fatalf("unyank: %v %+v", err, ix.Sources[0].Versions)
	}
	for _, ref := range []string{"notes@9.9.9", "other@1.0.0", "notes", "@1.0.0"} {
		err := ix.SetYanked(ref, true)
		if !fault.Is(err, fault.InputInvalid) || !strings.Contains(fault.As(err).Msg, ref) {
			t.Errorf("SetYanked(%q) = %v, want invalid naming it", ref, err)
		}
	}
}

// TestBuildIndexPlugins: with a plugin reader, an archive that is not a
// source package is read as a plugin and listed under plugins by id
// (version, archive in a subfolder, digest, size, contract, loci,
// signature); a folder of plugins only is an index; an archive that is
// neither names both failures; a plugin's yank is kept like a source's.
func TestBuildIndexPlugins(t *testing.T) {
	plug := []byte("a plugin archive")
	reader := func(b []byte) (IndexPluginInfo, error) {
		if bytes.Equal(b, plug) {
			return IndexPluginInfo{ID: "bundle", Version: "1.2.0", Description: "a bundle", Loci: ">= 0.1.0", Contract: 1}, nil
		}
		return IndexPluginInfo{}, fault.New(fault.InputInvalid, "there is no loci-plugin.toml in the plugin", "")
	}
	_, key, _ := GenerateKey()
	a := []IndexArchive{{"plugins/bundle-1.2.0.tar.gz", plug}, {"notes-1.0.0.tar.gz", testArchive(t, "notes", "1.0.0", "notes")}}
	ix, err := BuildIndexWith(a, IndexOptions{Key: key, Plugin: reader})
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.Sources) != 1 || len(ix.Plugins) != 1 {
		t.Fatalf("index %s", ix.Marshal())
	}
	p := ix.Plugins[0]
	r := p.Versions[0]
	if p.ID != "bundle" || p.Description != "a bundle" || r.Version != "1.2.0" || r.Archive != "plugins/bundle-1.2.0.tar.gz" ||
		r.SHA256 != Digest(plug) || r.Size != int64(len(plug)) || r.Contract != 1 || r.Loci != ">= 0.1.0" || !r.Signed() {
		t.Fatalf("plugin entry %+v", p)
	}
	pub, _ := ParsePublicKey(r.Key)
	if err := Verify(pub, plug, r.Signature); err != nil {
		t.Fatalf("the plugin's index signature: %v", err)
	}
	back, err := ParseIndex(ix.Marshal())
	if err != nil || len(back.Plugins) != 1 {
		t.Fatalf("read back: %v %+v", err, back)
	}
	back.Plugins[0].Versions[0].Yanked = true
	only, err := BuildIndexWith(a[:1], IndexOptions{Plugin: reader, Previous: back})
	if err != nil || len(only.Sources) != 0 || len(only.Plugins) != 1 || !only.Plugins[0].Versions[0].Yanked {
		t.Fatalf("plugins only, yank kept: %v %s", err, only.Marshal())
	}
	if err := only.SetYanked("bundle@1.2.0", false); err != nil || only.Plugins[0].Versions[0].Yanked {
		t.Fatalf("unyank a plugin: %v", err)
	}
	_, err = BuildIndexWith([]IndexArchive{{"junk.tar.gz", []byte("junk")}}, IndexOptions{Plugin: reader})
	if !fault.Is(err, fault.InputInvalid) || !strings.Contains(fault.As(err).Msg, "junk.tar.gz is neither a source package") ||
		!strings.Contains(fault.As(err).Msg, "loci-plugin.toml") {
		t.Fatalf("junk = %v", err)
	}
	_, err = BuildIndexWith([]IndexArchive{{"a.tar.gz", plug}, {"b/a.tar.gz", plug}}, IndexOptions{Plugin: reader})
	if !fault.Is(err, fault.InputInvalid) || !strings.Contains(fault.As(err).Msg, "plugin bundle 1.2.0") {
		t.Fatalf("a plugin twice = %v", err)
	}
	// Without a plugin reader a plugin is not a package, as before.
	if _, err := BuildIndex(a[:1], nil); !fault.Is(err, fault.InputInvalid) {
		t.Fatalf("BuildIndex of a plugin = %v", err)
	}
}
