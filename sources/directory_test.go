package sources

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
)

// tree writes files under root (slash paths), each with a modification
// time one second after the last and a change time after the last file's
// (the clock that stamps it is coarse), so that discovery order is known.
func tree(t *testing.T, root string, files map[string]string, order []string) {
	t.Helper()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	last := int64(0)
	for _, rel := range order {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[rel]), 0o644); err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Second)
		last = afterTick(t, p, at, last)
	}
}

// afterTick sets p's modification time to at, again until its change time
// is past last, and returns that change time.
func afterTick(t *testing.T, p string, at time.Time, last int64) int64 {
	t.Helper()
	for {
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if c := changeTime(info); c > last {
			return c
		}
		time.Sleep(time.Millisecond)
	}
}

func ids(refs []Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
		if r.Filtered != "" {
			out[i] += "(" + r.Filtered + ")"
		}
	}
	return out
}

// Discovery skips the named directories, every dot-directory and symlinks,
// lists files oldest first, marks empty and oversized ones as filtered,
// and goes on past a cursor; reading drops what is not UTF-8.
func TestDirectoryDiscoverAndRead(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"README.md": "# Project\n", "src/main.go": "package main\r\n\r\nfunc main() {}\r\n", "src/deep/x/y.txt": "\uFEFFdeep file",
		".git/config": "x", "node_modules/a/b.js": "x", "target/t": "x", ".venv/v": "x", "venv/v": "x", "dist/d": "x",
		"build/b": "x", ".cache/c": "x", ".hidden/h": "x", "src/.idea/i": "x",
		"empty.txt": "", "big.txt": strings.Repeat("b", 2000), "latin1.txt": "caf\xe9", "bin.dat": "a\x00b",
		".env": "KEY=1\n",
	}
	order := []string{"README.md", "src/main.go", "src/deep/x/y.txt", ".git/config", "node_modules/a/b.js", "target/t", ".venv/v",
		"venv/v", "dist/d", "build/b", ".cache/c", ".hidden/h", "src/.idea/i", "empty.txt", "big.txt", "latin1.txt", "bin.dat", ".env"}
	tree(t, root, files, order)
	if err := os.Symlink(filepath.Join(root, "README.md"), filepath.Join(root, "link.md")); err != nil {
		t.Fatal(err)
	}
	d := Directory{MaxFileBytes: 1000}
	id, err := d.Resolve(root+"//./src/..//", nil)
	if err != nil {
		t.Fatal(err)
	}
	if id.Locator != root {
		t.Fatalf("locator %q, want %q", id.Locator, root)
	}
	ctx := context.Background()
	refs, err := d.Discover(ctx, Run{ID: id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"README.md", "src/main.go", "src/deep/x/y.txt", "empty.txt(empty)", "big.txt(too_large)", "latin1.txt", "bin.dat", ".env"}
	if !slices.Equal(ids(refs), want) {
		t.Fatalf("discovered %v\nwant %v", ids(refs), want)
	}
	reasons := map[string]string{}
	for _, r := range refs[:3] {
		doc, err := d.Read(ctx, Run{ID: id}, r)
		if err != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		reasons[r.ID] = doc.Text()
		if doc.Name != r.ID || doc.Room != FilesRoom || doc.Kind != "file" || doc.URI != filepath.Join(root, filepath.FromSlash(r.ID)) {
			t.Fatalf("%s read as %+v", r.ID, doc)
		}
	}
	if reasons["src/main.go"] != "package main\n\nfunc main() {}\n" || reasons["src/deep/x/y.txt"] != "deep file" {
		t.Fatalf("normalised: %q", reasons)
	}
	for _, r := range refs[5:7] {
		if _, err := d.Read(ctx, Run{ID: id}, r); err == nil {
			t.Fatalf("%s read; want it filtered", r.ID)
		} else if why, ok := IsFiltered(err); !ok || (why != "not_utf8" && why != "binary") {
			t.Fatalf("%s: %v", r.ID, err)
		}
	}
	// Past the cursor of src/main.go: what came after it.
	after, err := d.Discover(ctx, Run{ID: id}, refs[1].Cursor)
	if err != nil || len(after) != len(refs)-2 || after[0].ID != "src/deep/x/y.txt" {
		t.Fatalf("past a cursor: %v %v", ids(after), err)
	}
	// A touched file comes again.
	now := time.Now()
	if err := os.Chtimes(filepath.Join(root, "README.md"), now, now); err != nil {
		t.Fatal(err)
	}
	again, _ := d.Discover(ctx, Run{ID: id}, refs[len(refs)-1].Cursor)
	if !slices.Equal(ids(again), []string{"README.md"}) {
		t.Fatalf("after a touch: %v", ids(again))
	}
	if err := d.ParseCursor(json.RawMessage(`{"mtime_ns":"x"}`)); !fault.Is(err, fault.SourceCursorInvalid) {
		t.Fatalf("bad cursor: %v", err)
	}
	if _, err := d.Discover(ctx, Run{ID: id}, json.RawMessage(`[1]`)); !fault.Is(err, fault.SourceCursorInvalid) {
		t.Fatalf("discover with a bad cursor: %v", err)
	}
}

// The options: dir selects directories by pattern (and is its own
// identity), since narrows by modification time; equivalent spellings of
// a root are one identity.
func TestDirectoryOptions(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{"a/docs/x.md": "x", "b/docs/y.md": "y", "b/src/z.go": "z", "docs/top.md": "t"}
	tree(t, root, files, []string{"a/docs/x.md", "b/docs/y.md", "b/src/z.go", "docs/top.md"})
	d := Directory{MaxFileBytes: 1000}
	ctx := context.Background()
	for _, c := range []struct {
		opts map[string]string
		want []string
	}{
		{map[string]string{"dir": "docs"}, []string{"docs/top.md"}},
		{map[string]string{"dir": "*docs"}, []string{"a/docs/x.md", "b/docs/y.md", "docs/top.md"}},
		{map[string]string{"dir": "b"}, []string{"b/docs/y.md", "b/src/z.go"}},
		{map[string]string{"dir": "b/*"}, []string{"b/docs/y.md", "b/src/z.go"}},
		{map[string]string{"since": "2026-01-01T00:00:03Z"}, []string{"b/src/z.go", "docs/top.md"}},
	} {
		id, err := d.Resolve(root, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		refs, err := d.Discover(ctx, Run{ID: id, Options: c.opts}, nil)
		if err != nil || !slices.Equal(ids(refs), c.want) {
			t.Errorf("%v: %v %v, want %v", c.opts, ids(refs), err, c.want)
		}
	}
	plain, _ := d.Resolve(root, nil)
	for _, spelling := range []string{root + "/", root + "//", root + "/./", root + "/a/..", filepath.Dir(root) + "//" + filepath.Base(root)} {
		id, err := d.Resolve(spelling, nil)
		if err != nil || id.Key() != plain.Key() {
			t.Errorf("%q: %+v %v, want the identity of %q", spelling, id, err, root)
		}
	}
	withDir, _ := d.Resolve(root, map[string]string{"dir": "docs/"})
	if withDir.Key() == plain.Key() {
		t.Error("a dir option shares the root's identity")
	}
	for _, bad := range []struct {
		loc  string
		opts map[string]string
	}{{"relative/path", nil}, {filepath.Join(root, "missing"), nil}, {filepath.Join(root, "docs/top.md"), nil},
		{root, map[string]string{"since": "yesterday"}}, {root, map[string]string{"dir": "/"}}} {
		if _, err := d.Resolve(bad.loc, bad.opts); !fault.Is(err, fault.InputInvalid) {
			t.Errorf("%q %v: %v, want input::invalid", bad.loc, bad.opts, err)
		}
	}
}

// List is the whole listing whatever the cursor and since say (what prune
// compares with); prune is true or false and never changes the identity.
func TestDirectoryListAndPrune(t *testing.T) {
	root := t.TempDir()
	tree(t, root, map[string]string{"a.md": "a", "sub/b.md": "b", "other/c.md": "c", ".git/x": "x"}, []string{"a.md", "sub/b.md", "other/c.md", ".git/x"})
	d := Directory{MaxFileBytes: 100}
	ctx := context.Background()
	id, err := d.Resolve(root, map[string]string{"prune": "true", "since": "2099-01-01"})
	if err != nil || id.Locator != root {
		t.Fatalf("resolve with prune: %+v %v", id, err)
	}
	refs, err := d.Discover(ctx, Run{ID: id, Options: map[string]string{"since": "2099-01-01"}}, nil)
	if err != nil || len(refs) != 0 {
		t.Fatalf("discover since 2099: %v %v", ids(refs), err)
	}
	cursor, _ := json.Marshal(dirCursor{MTime: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()})
	if refs, err = d.Discover(ctx, Run{ID: id}, cursor); err != nil || len(refs) != 0 {
		t.Fatalf("discover past a later cursor: %v %v", ids(refs), err)
	}
	all, complete, err := d.List(ctx, Run{ID: id, Options: map[string]string{"since": "2099-01-01"}})
	if err != nil || !complete || !slices.Equal(ids(all), []string{"a.md", "sub/b.md", "other/c.md"}) {
		t.Fatalf("list: %v %v %v", ids(all), complete, err)
	}
	sub, _ := d.Resolve(root, map[string]string{"dir": "sub"})
	if all, _, err = d.List(ctx, Run{ID: sub, Options: map[string]string{"dir": "sub"}}); err != nil || !slices.Equal(ids(all), []string{"sub/b.md"}) {
		t.Fatalf("list of dir=sub: %v %v", ids(all), err)
	}
	for _, bad := range []string{"yes", "TRUE", "1", ""} {
		if _, err := d.Resolve(root, map[string]string{"prune": bad}); fault.As(err).Code != fault.InputInvalid || !strings.Contains(err.Error(), "prune") {
			t.Fatalf("prune=%q: %v", bad, err)
		}
	}
	if _, err := d.Resolve(root, map[string]string{"prune": "false"}); err != nil {
		t.Fatal(err)
	}
}
