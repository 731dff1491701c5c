package sources

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
)

// old is a time long before any cursor a test takes.
var old = time.Date(2019, 5, 1, 12, 0, 0, 0, time.UTC)

// writeOld writes a file (its directories made) with old times.
func writeOld(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

// Files that keep an old modification time used to be skipped by every
// discovery past a cursor: renamed into the root or inside it, copied with
// their times (cp -p), replaced through a temporary file (rsync -a),
// unpacked (tar x, unzip) or brought in with a directory moved into the
// tree. Each is now listed past the cursor (its change time is new) or,
// for a moved directory whose files' own times stay old, as a suspect.
func TestDirectoryFindsFilesWithOldTimes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the change time is read on Linux only")
	}
	d := Directory{MaxFileBytes: 1 << 20}
	ctx := context.Background()
	// setup makes, before the cursor, files outside the root (outside/) and
	// the mined tree, and returns the root, outside and the cursor past
	// everything mined.
	setup := func(t *testing.T) (root, outside string, cursor json.RawMessage) {
		base := t.TempDir()
		root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
		writeOld(t, filepath.Join(outside, "in.md"), "renamed in")
		writeOld(t, filepath.Join(outside, "tree", "x", "deep", "y.md"), "moved with its directory")
		writeOld(t, filepath.Join(outside, "tree", "top.md"), "top of a moved directory")
		for _, dir := range []string{"tree/x/deep", "tree/x", "tree"} {
			if err := os.Chtimes(filepath.Join(outside, filepath.FromSlash(dir)), old, old); err != nil {
				t.Fatal(err)
			}
		}
		tree(t, root, map[string]string{"a.md": "alpha", "sub/b.md": "beta", "sub/c.md": "gamma"}, []string{"a.md", "sub/b.md", "sub/c.md"})
		time.Sleep(20 * time.Millisecond)
		afterTick(t, filepath.Join(root, "sub", "c.md"), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), 0)
		id, _ := d.Resolve(root, nil)
		refs, err := d.Discover(ctx, Run{ID: id}, nil)
		if err != nil || len(refs) != 3 {
			t.Fatalf("first discovery: %v %v", ids(refs), err)
		}
		cursor = refs[len(refs)-1].Cursor
		if again, sus, err := d.DiscoverSuspects(ctx, Run{ID: id}, cursor); err != nil || len(again) != 0 || len(sus) != 0 {
			t.Fatalf("nothing changed, yet discovered %v, suspects %v, %v", ids(again), ids(sus), err)
		}
		time.Sleep(20 * time.Millisecond) // the coarse clock that stamps changes moves on
		return root, outside, cursor
	}
	for _, c := range []struct {
		name    string
		op      func(t *testing.T, root, outside string)
		want    string
		suspect bool
	}{
		{"rename into the root", func(t *testing.T, root, outside string) {
			mv(t, filepath.Join(outside, "in.md"), filepath.Join(root, "sub", "in.md"))
		}, "sub/in.md", false},
		{"mv inside the root", func(t *testing.T, root, _ string) {
			mv(t, filepath.Join(root, "a.md"), filepath.Join(root, "sub", "a2.md"))
			if err := os.Chtimes(filepath.Join(root, "sub", "a2.md"), old, old); err != nil {
				t.Fatal(err)
			}
		}, "sub/a2.md", false},
		{"cp -p", func(t *testing.T, root, _ string) {
			writeOld(t, filepath.Join(root, "sub", "copy.md"), "alpha")
		}, "sub/copy.md", false},
		{"rsync -a over a mined file", func(t *testing.T, root, _ string) {
			tmp := filepath.Join(root, "sub", ".b.md.XYZ")
			writeOld(t, tmp, "beta, edited elsewhere")
			mv(t, tmp, filepath.Join(root, "sub", "b.md"))
		}, "sub/b.md", false},
		{"tar x", func(t *testing.T, root, _ string) {
			writeOld(t, filepath.Join(root, "pkg", "lib", "z.md"), "unpacked")
			for _, dir := range []string{"pkg/lib", "pkg"} {
				if err := os.Chtimes(filepath.Join(root, filepath.FromSlash(dir)), old, old); err != nil {
					t.Fatal(err)
				}
			}
		}, "pkg/lib/z.md", false},
		{"unzip over a mined file", func(t *testing.T, root, _ string) {
			writeOld(t, filepath.Join(root, "a.md"), "alpha, from the archive")
		}, "a.md", false},
		{"a directory moved in", func(t *testing.T, root, outside string) {
			mv(t, filepath.Join(outside, "tree"), filepath.Join(root, "sub", "tree"))
		}, "sub/tree/x/deep/y.md", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, outside, cursor := setup(t)
			id, _ := d.Resolve(root, nil)
			c.op(t, root, outside)
			before, _ := d.Discover(ctx, Run{ID: id}, cursor)
			refs, suspects, err := d.DiscoverSuspects(ctx, Run{ID: id}, cursor)
			if err != nil || !slices.Equal(ids(before), ids(refs)) {
				t.Fatalf("discover %v, with suspects %v, %v", ids(before), ids(refs), err)
			}
			in, sus := slices.Contains(ids(refs), c.want), slices.Contains(ids(suspects), c.want)
			if (!c.suspect && !in) || (c.suspect && !sus) {
				t.Fatalf("%s not found: past the cursor %v, suspects %v", c.want, ids(refs), ids(suspects))
			}
			if c.suspect && !slices.Contains(ids(suspects), "sub/tree/top.md") {
				t.Fatalf("the moved directory's top file is no suspect: %v", ids(suspects))
			}
			for _, s := range suspects {
				if s.Cursor == nil {
					t.Fatalf("suspect %s has no cursor", s.ID)
				}
			}
		})
	}
}

// A cursor stored before the change time (mtime_ns, path) still reads:
// what changed after it is listed.
func TestDirectoryOldCursorReads(t *testing.T) {
	root := t.TempDir()
	tree(t, root, map[string]string{"a.md": "a", "b.md": "b"}, []string{"a.md", "b.md"})
	d := Directory{MaxFileBytes: 100}
	id, _ := d.Resolve(root, nil)
	stored := json.RawMessage(`{"mtime_ns":1767225601000000000,"path":"a.md"}`) // a.md's modification time
	if err := d.ParseCursor(stored); err != nil {
		t.Fatal(err)
	}
	refs, err := d.Discover(context.Background(), Run{ID: id}, stored)
	if err != nil || !slices.Equal(ids(refs), []string{"a.md", "b.md"}) {
		t.Fatalf("past an old cursor: %v %v (both files changed after it)", ids(refs), err)
	}
}

func mv(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}
