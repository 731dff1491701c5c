package registry

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
)

// archive is a small package name@version (contract, loci requirement)
// whose module is a WebAssembly header and a marker.
func archive(t testing.TB, name, version string, contract int, loci string) []byte {
	t.Helper()
	mb := fmt.Sprintf("contract = %d\nname = %q\nversion = %q\ndescription = \"the %s source\"\nmodule = \"%s.wasm\"\n", contract, name, version, name, name)
	if loci != "" {
		mb += fmt.Sprintf("loci = %q\n", loci)
	}
	mb += "\n[permissions]\nread = [\"locator\"]\n"
	m, err := pack.ParseManifest([]byte(mb))
	if err != nil {
		t.Fatal(err)
	}
	p := &pack.Package{Manifest: m, ManifestBytes: []byte(mb), Module: []byte("\x00asm\x01\x00\x00\x00" + name + version)}
	var b bytes.Buffer
	if err := p.WriteArchive(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// folder writes archives (path → bytes) and their index (signed by key
// when not nil, edited by edit when not nil) into a new folder.
func folder(t testing.TB, files map[string][]byte, key ed25519.PrivateKey, edit func(*pack.Index)) string {
	t.Helper()
	dir := t.TempDir()
	var as []pack.IndexArchive
	for f, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		as = append(as, pack.IndexArchive{File: f, Bytes: b})
	}
	ix, err := pack.BuildIndex(as, key)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(ix)
	}
	if err := os.WriteFile(filepath.Join(dir, pack.IndexFile), ix.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func client(t testing.TB, o Options) *Client {
	t.Helper()
	if o.LociVersion == "" {
		o.LociVersion = "0.1.0"
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantCode(t *testing.T, err error, code fault.Code, words ...string) {
	t.Helper()
	if !fault.Is(err, code) {
		t.Fatalf("err = %v, want %s", err, code)
	}
	for _, w := range words {
		if !strings.Contains(fault.As(err).Msg, w) {
			t.Fatalf("the message %q does not say %q", fault.As(err).Msg, w)
		}
	}
}

// TestNewLocations: https, http to loopback, file:// and absolute paths
// are registries; http beyond loopback, relative paths, other schemes,
// bad names and keys are loci::config::invalid naming the entry, and no
// message carries a URL's password.
func TestNewLocations(t *testing.T) {
	specs, err := ParseSpecs([]string{"https://reg.example.com/loci", "mine=http://127.0.0.1:8080/index.json", "http://[::1]/r/", "http://localhost:9/",
		"file:///srv/loci-registry", "/srv/other/index.json", "https://reg.example.com/two"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, " "); got != "reg.example.com mine 1 localhost loci-registry other reg.example.com-2" {
		t.Fatalf("names %q", got)
	}
	if _, err := New(Options{Registries: specs}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"http://192.0.2.1/index.json", "http://user:hunter2@reg.example.com/", "ftp://reg.example.com/", "relative/folder", "file://host/srv/x", "bundled=/srv/x", "Bad Name=/srv/x"} {
		t.Run(bad, func(t *testing.T) {
			specs, err := ParseSpecs([]string{bad})
			if err == nil {
				_, err = New(Options{Registries: specs})
			}
			wantCode(t, err, fault.ConfigInvalid, "mining.registries[0]")
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(fault.As(err).Msg, "hunter2") {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
	if _, err := New(Options{TrustedKeys: []string{"loci-ed25519 nope"}}); !fault.Is(err, fault.ConfigInvalid) {
		t.Fatalf("a bad trusted key = %v", err)
	}
	if _, err := New(Options{Policy: "sometimes"}); !fault.Is(err, fault.ConfigInvalid) {
		t.Fatalf("a bad policy = %v", err)
	}
}

// TestSearchFindFetch: a folder registry answers a search (newest
// version that runs here, yanked and incompatible skipped), Find picks
// the same and a pinned yanked one, refuses a pinned incompatible one
// with why, and Fetch reads an archive in a folder below the index.
func TestSearchFindFetch(t *testing.T) {
	files := map[string][]byte{
		"notes/notes-1.0.0.tar.gz": archive(t, "notes", "1.0.0", 1, ""),
		"notes/notes-1.1.0.tar.gz": archive(t, "notes", "1.1.0", 1, ""),
		"notes/notes-1.2.0.tar.gz": archive(t, "notes", "1.2.0", 1, ""),
		"notes/notes-2.0.0.tar.gz": archive(t, "notes", "2.0.0", 1, ">= 9.0.0"),
		"notes/notes-3.0.0.tar.gz": archive(t, "notes", "3.0.0", 2, ""),
		"chat-0.1.0.tar.gz":        archive(t, "chat", "0.1.0", 1, ""),
	}
	dir := folder(t, files, nil, func(ix *pack.Index) {
		for i, r := range ix.Sources[1].Versions {
			if r.Version == "1.2.0" {
				ix.Sources[1].Versions[i].Yanked = true
			}
		}
	})
	c := client(t, Options{Registries: []Spec{{Name: "local", URL: dir}}})
	ctx := context.Background()
	got, warns, err := c.Search(ctx, Sources, "", "")
	if err != nil || len(warns) != 0 || len(got) != 2 || got[0].Name != "chat" || got[1].Name != "notes" || got[1].Version != "1.1.0" || got[1].Registry != "local" {
		t.Fatalf("search = %+v %v %v", got, warns, err)
	}
	if got, _, _ := c.Search(ctx, Sources, "CHAT", ""); len(got) != 1 || got[0].Name != "chat" {
		t.Fatalf("search chat = %+v", got)
	}
	if got, _, _ := c.Search(ctx, Sources, "the notes source", ""); len(got) != 1 || got[0].Name != "notes" {
		t.Fatalf("search by description = %+v", got)
	}
	r, err := c.Find(ctx, Sources, "notes", "", "")
	if err != nil || r.Version != "1.1.0" {
		t.Fatalf("find = %+v %v", r, err)
	}
	if r, err := c.Find(ctx, Sources, "notes", "1.2.0", ""); err != nil || !r.Yanked {
		t.Fatalf("find pinned yanked = %+v %v", r, err)
	}
	_, err = c.Find(ctx, Sources, "notes", "2.0.0", "")
	wantCode(t, err, fault.SourceIncompatible, "9.0.0")
	_, err = c.Find(ctx, Sources, "notes", "3.0.0", "")
	wantCode(t, err, fault.SourceIncompatible, "contract 2")
	_, err = c.Find(ctx, Sources, "mail", "", "")
	wantCode(t, err, fault.SourceNotInRegistry, "mail")
	_, err = c.Find(ctx, Sources, "notes", "", "elsewhere")
	wantCode(t, err, fault.SourceNotInRegistry, "elsewhere")
	f, err := c.Fetch(ctx, r)
	if err != nil || f.Package == nil || f.Package.Manifest.Version != "1.1.0" || f.SignedBy != "" {
		t.Fatalf("fetch = %+v %v", f, err)
	}
}

// TestFetchRefuses: a wrong SHA-256 or size is refused before the
// archive is read (loci::source::integrity), as is a package that is not
// the one the index names, and an archive outside the index's folder
// (a symbolic link climbing out).
func TestFetchRefuses(t *testing.T) {
	ctx := context.Background()
	good := archive(t, "notes", "1.0.0", 1, "")
	t.Run("digest", func(t *testing.T) {
		dir := folder(t, map[string][]byte{"notes-1.0.0.tar.gz": good}, nil, nil)
		// The file swapped for another package of the same size: not read.
		other := bytes.Repeat([]byte("x"), len(good))
		os.WriteFile(filepath.Join(dir, "notes-1.0.0.tar.gz"), other, 0o644)
		c := client(t, Options{Registries: []Spec{{Name: "local", URL: dir}}})
		r, err := c.Find(ctx, Sources, "notes", "", "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Fetch(ctx, r)
		wantCode(t, err, fault.SourceIntegrity, "not the one its index names", "nothing was read")
	})
	t.Run("another source", func(t *testing.T) {
		dir := folder(t, map[string][]byte{"notes-1.0.0.tar.gz": good}, nil, func(ix *pack.Index) { ix.Sources[0].Name = "mail" })
		c := client(t, Options{Registries: []Spec{{Name: "local", URL: dir}}})
		r, err := c.Find(ctx, Sources, "mail", "", "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Fetch(ctx, r)
		wantCode(t, err, fault.SourceIntegrity, "mail", "notes")
	})
	t.Run("symbolic link out", func(t *testing.T) {
		outside := t.TempDir()
		os.WriteFile(filepath.Join(outside, "notes.tar.gz"), good, 0o644)
		dir := folder(t, map[string][]byte{"notes-1.0.0.tar.gz": good}, nil, nil)
		os.Remove(filepath.Join(dir, "notes-1.0.0.tar.gz"))
		if err := os.Symlink(filepath.Join(outside, "notes.tar.gz"), filepath.Join(dir, "notes-1.0.0.tar.gz")); err != nil {
			t.Fatal(err)
		}
		c := client(t, Options{Registries: []Spec{{Name: "local", URL: dir}}})
		r, _ := c.Find(ctx, Sources, "notes", "", "")
		_, err := c.Fetch(ctx, r)
		wantCode(t, err, fault.SourceIntegrity, "outside the index's folder")
	})
}

// TestTrust: signed by a trusted key, by an unknown key, unsigned, and
// tampered (a trusted key's signature over other bytes), under both
// policies.
func TestTrust(t *testing.T) {
	ctx := context.Background()
	good := archive(t, "notes", "1.0.0", 1, "")
	pub, key, _ := pack.GenerateKey()
	_, stranger, _ := pack.GenerateKey()
	trusted := pack.FormatPublicKey(pub)
	tampered := func(ix *pack.Index) {
		ix.Sources[0].Versions[0].Signature = pack.Sign(key, []byte("other bytes"))
	}
	cases := []struct {
		name     string
		key      ed25519.PrivateKey
		edit     func(*pack.Index)
		optional fault.Code // "" accepted
		required fault.Code
		signedBy string
	}{
		{"trusted", key, nil, "", "", trusted},
		{"unknown key", stranger, nil, "", fault.SourceUntrusted, ""},
		{"unsigned", nil, nil, "", fault.SourceUntrusted, ""},
		{"tampered", key, tampered, fault.SourceIntegrity, fault.SourceIntegrity, ""},
	}
	for _, c := range cases {
		for _, pol := range []Policy{PolicyOptional, PolicyRequired} {
			t.Run(c.name+"/"+string(pol), func(t *testing.T) {
				dir := folder(t, map[string][]byte{"notes-1.0.0.tar.gz": good}, c.key, c.edit)
				cl := client(t, Options{Registries: []Spec{{Name: "local", URL: dir}}, TrustedKeys: []string{trusted + " publisher"}, Policy: pol})
				r, err := cl.Find(ctx, Sources, "notes", "", "")
				if err != nil {
					t.Fatal(err)
				}
				f, err := cl.Fetch(ctx, r)
				want := c.optional
				if pol == PolicyRequired {
					want = c.required
				}
				if want == "" {
					if err != nil || f.SignedBy != c.signedBy {
						t.Fatalf("fetch = signed by %q, %v; want %q", f.SignedBy, err, c.signedBy)
					}
					return
				}
				wantCode(t, err, want)
			})
		}
	}
}

// serve serves dir over loopback HTTP with ETags (http.FileServer
// answers If-Modified-Since), counting full index answers.
func serve(t testing.TB, dir string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var full atomic.Int64
	fs := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, pack.IndexFile) {
			fi, err := os.Stat(filepath.Join(dir, pack.IndexFile))
			if err == nil {
				tag := fmt.Sprintf(`"%d-%d"`, fi.Size(), fi.ModTime().UnixNano())
				w.Header().Set("ETag", tag)
				if r.Header.Get("If-None-Match") == tag {
					w.WriteHeader(http.StatusNotModified)
					return
				}
			}
			full.Add(1)
		}
		fs.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &full
}

// TestHTTP: a loopback HTTP registry answers, its index revalidated (a
// second search downloads nothing) and kept on disk for the next
// client; an archive path climbing out after decoding is refused; a
// redirect to a non-loopback http address is refused; an unreadable
// registry is a warning in a search of several and an error naming it
// (never its password) otherwise.
func TestHTTP(t *testing.T) {
	ctx := context.Background()
	dir := folder(t, map[string][]byte{"a/notes-1.0.0.tar.gz": archive(t, "notes", "1.0.0", 1, "")}, nil, nil)
	srv, full := serve(t, dir)
	cache := t.TempDir()
	c := client(t, Options{Registries: []Spec{{Name: "web", URL: srv.URL + "/"}}, CacheDir: cache})
	for range 3 {
		got, warns, err := c.Search(ctx, Sources, "notes", "")
		if err != nil || len(warns) != 0 || len(got) != 1 {
			t.Fatalf("search = %+v %v %v", got, warns, err)
		}
	}
	if n := full.Load(); n != 1 {
		t.Fatalf("the index was downloaded %d times, want once (revalidated since)", n)
	}
	again := client(t, Options{Registries: []Spec{{Name: "web", URL: srv.URL + "/"}}, CacheDir: cache})
	if _, _, err := again.Search(ctx, Sources, "", ""); err != nil || full.Load() != 1 {
		t.Fatalf("a new client with the disk cache downloaded the index again (%d) or failed: %v", full.Load(), err)
	}
	// A changed index is downloaded again at the next use.
	b := archive(t, "notes", "1.1.0", 1, "")
	os.WriteFile(filepath.Join(dir, "a", "notes-1.1.0.tar.gz"), b, 0o644)
	ix, _ := pack.BuildIndex([]pack.IndexArchive{{File: "a/notes-1.0.0.tar.gz", Bytes: archive(t, "notes", "1.0.0", 1, "")}, {File: "a/notes-1.1.0.tar.gz", Bytes: b}}, nil)
	os.WriteFile(filepath.Join(dir, pack.IndexFile), ix.Marshal(), 0o644)
	if got, _, err := c.Search(ctx, Sources, "notes", ""); err != nil || len(got) != 1 || got[0].Version != "1.1.0" || full.Load() != 2 {
		t.Fatalf("after the index changed: %+v %v (downloads %d)", got, err, full.Load())
	}
	r, err := c.Find(ctx, Sources, "notes", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if f, err := c.Fetch(ctx, r); err != nil || f.Package == nil || f.Package.Manifest.Version != "1.1.0" {
		t.Fatalf("fetch = %v", err)
	}
	if !strings.HasPrefix(r.URL, srv.URL+"/a/") {
		t.Fatalf("archive URL %s", r.URL)
	}

	t.Run("climbing out", func(t *testing.T) {
		for _, u := range []string{srv.URL + "/a/%2e%2e/%2e%2e/secret.tar.gz", srv.URL + "/secret.tar.gz"} {
			bad := r
			bad.URL = u
			reg2 := client(t, Options{Registries: []Spec{{Name: "web", URL: srv.URL + "/a/index.json"}}})
			bad.Registry = "web"
			_, err := reg2.Fetch(ctx, bad)
			wantCode(t, err, fault.SourceIntegrity, "outside the index's folder")
		}
	})
	t.Run("redirect", func(t *testing.T) {
		redir := httptest.NewServer(http.RedirectHandler("http://192.0.2.1/index.json", http.StatusFound))
		defer redir.Close()
		c := client(t, Options{Registries: []Spec{{Name: "redir", URL: redir.URL + "/index.json"}}})
		_, _, err := c.Search(ctx, Sources, "", "redir")
		wantCode(t, err, fault.SourceRegistryUnavailable, "redir", "192.0.2.1", "loopback only")
	})
	t.Run("too many redirects", func(t *testing.T) {
		var loop *httptest.Server
		loop = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, loop.URL+r.URL.Path+"x", http.StatusFound)
		}))
		defer loop.Close()
		c := client(t, Options{Registries: []Spec{{Name: "loop", URL: loop.URL + "/i.json"}}})
		_, _, err := c.Search(ctx, Sources, "", "loop")
		wantCode(t, err, fault.SourceRegistryUnavailable, "redirects")
	})
	t.Run("unreadable", func(t *testing.T) {
		down := httptest.NewServer(http.NotFoundHandler())
		down.Close()
		u := strings.Replace(down.URL, "http://", "http://user:hunter2@", 1)
		c := client(t, Options{Registries: []Spec{{Name: "down", URL: u + "/"}, {Name: "web", URL: srv.URL + "/"}}})
		got, warns, err := c.Search(ctx, Sources, "", "")
		if err != nil || len(got) != 1 || len(warns) != 1 || warns[0].Registry != "down" || warns[0].Code != string(fault.SourceRegistryUnavailable) {
			t.Fatalf("search = %+v %+v %v", got, warns, err)
		}
		_, _, err = c.Search(ctx, Sources, "", "down")
		wantCode(t, err, fault.SourceRegistryUnavailable, "down")
		if strings.Contains(fault.As(err).Msg, "hunter2") || strings.Contains(warns[0].Message, "hunter2") {
			t.Fatalf("a password shows: %v / %s", err, warns[0].Message)
		}
	})
}

// TestBundled: the bundled packages form a registry named bundled, read
// from memory, searchable and fetchable, needing no signature.
func TestBundled(t *testing.T) {
	b := archive(t, "notes", "1.0.0", 1, "")
	p, err := pack.ReadArchive(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, Options{BundledPackages: func() ([]*pack.Package, error) { return []*pack.Package{p}, nil }, Policy: PolicyRequired})
	got, _, err := c.Search(context.Background(), Sources, "", "")
	if err != nil || len(got) != 1 || got[0].Registry != Bundled {
		t.Fatalf("search = %+v %v", got, err)
	}
	f, err := c.Fetch(context.Background(), got[0])
	if err != nil || f.Package.Manifest.Name != "notes" {
		t.Fatalf("fetch = %v", err)
	}
}

// BenchmarkSearch1000Loopback is a search over a 1,000-entry index
// served on loopback, the index revalidated at each search (ETag).
func BenchmarkSearch1000Loopback(b *testing.B) {
	dir := b.TempDir()
	ix := &pack.Index{Version: pack.IndexFormat}
	for i := range 1000 {
		name := fmt.Sprintf("source-%04d", i)
		ix.Sources = append(ix.Sources, pack.IndexSource{Name: name, Description: "the " + name + " source for things",
			Versions: []pack.IndexRelease{{Version: "1.0.0", Archive: name + "-1.0.0.tar.gz", SHA256: strings.Repeat("ab", 32), Size: 1000, Contract: 1, Loci: ">= 0.1.0"},
				{Version: "0.9.0", Archive: name + "-0.9.0.tar.gz", SHA256: strings.Repeat("cd", 32), Size: 1000, Contract: 1}}})
	}
	if err := os.WriteFile(filepath.Join(dir, pack.IndexFile), ix.Marshal(), 0o644); err != nil {
		b.Fatal(err)
	}
	srv, _ := serve(b, dir)
	c := client(b, Options{Registries: []Spec{{Name: "web", URL: srv.URL + "/"}}})
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		got, _, err := c.Search(ctx, Sources, "source-09", "")
		if err != nil || len(got) != 100 {
			b.Fatalf("search = %d %v", len(got), err)
		}
	}
}
