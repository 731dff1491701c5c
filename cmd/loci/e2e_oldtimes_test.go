package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// oldTimesOp is one way a file arrives keeping an old modification time,
// and what a search then finds: query, and text in the answer (a line of
// the file, or its new path).
type oldTimesOp struct {
	name        string
	do          func(t *testing.T, root, outside string)
	query, text string
}

// longAgo is the time the operations keep.
var longAgo = time.Date(2018, 3, 4, 5, 6, 7, 0, time.UTC)

// writeLongAgo writes a file (its directories made) dated longAgo.
func writeLongAgo(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, longAgo, longAgo); err != nil {
		t.Fatal(err)
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// oldTimesSetup makes, outside the mined tree and before its first mine,
// the files the operations bring in: a file to rename in and a directory
// tree (its directories dated too) to move in.
func oldTimesSetup(t *testing.T) (outside string) {
	t.Helper()
	outside = filepath.Join(t.TempDir(), "outside")
	writeLongAgo(t, filepath.Join(outside, "lighthouse.md"), "The lighthouse keeper logs every passing ship.\n")
	writeLongAgo(t, filepath.Join(outside, "atlas", "maps", "north", "glacier.md"), "The glacier map marks the crevasse fields.\n")
	for _, dir := range []string{"atlas/maps/north", "atlas/maps", "atlas"} {
		if err := os.Chtimes(filepath.Join(outside, filepath.FromSlash(dir)), longAgo, longAgo); err != nil {
			t.Fatal(err)
		}
	}
	return outside
}

// oldTimesOps are the operations, each on mineTree's files.
var oldTimesOps = []oldTimesOp{
	{"rename into the folder", func(t *testing.T, root, outside string) {
		rename(t, filepath.Join(outside, "lighthouse.md"), filepath.Join(root, "docs", "lighthouse.md"))
	}, "lighthouse keeper", "lighthouse keeper logs"},
	{"mv inside the folder", func(t *testing.T, root, _ string) {
		rename(t, filepath.Join(root, "docs", "kettle-note.md"), filepath.Join(root, "notes", "kettle-moved.md"))
	}, "copper kettles", "kettle-moved.md"},
	{"cp -p", func(t *testing.T, root, _ string) {
		writeLongAgo(t, filepath.Join(root, "docs", "orchard.md"), "The orchard pears ripen in late September.\n")
	}, "orchard pears", "orchard pears ripen"},
	{"rsync -a over a mined file", func(t *testing.T, root, _ string) {
		tmp := filepath.Join(root, ".README.md.Xy12")
		writeLongAgo(t, tmp, "# Proj\n\nThe deploy queue runs hourly behind the walrus gate.\n")
		rename(t, tmp, filepath.Join(root, "README.md"))
	}, "walrus gate", "walrus gate"},
	{"tar x", func(t *testing.T, root, _ string) {
		writeLongAgo(t, filepath.Join(root, "pkg", "manual", "harbour.md"), "The harbour crane lifts forty tonnes.\n")
		for _, dir := range []string{"pkg/manual", "pkg"} {
			if err := os.Chtimes(filepath.Join(root, filepath.FromSlash(dir)), longAgo, longAgo); err != nil {
				t.Fatal(err)
			}
		}
	}, "harbour crane", "harbour crane lifts"},
	{"unzip over a mined file", func(t *testing.T, root, _ string) {
		writeLongAgo(t, filepath.Join(root, "src", "main.go"), "package main\n\n// main starts the saffron lamp server.\nfunc main() {}\n")
	}, "saffron lamp", "saffron lamp server"},
	{"a directory moved in", func(t *testing.T, root, outside string) {
		rename(t, filepath.Join(outside, "atlas"), filepath.Join(root, "atlas"))
	}, "glacier crevasse", "crevasse fields"},
}

// Files arriving with old modification times (renamed in or inside, cp -p,
// rsync -a, tar x, unzip, a directory moved in) were skipped by every
// incremental mine; a plain `loci mine` after each now files it, and a
// mine with nothing changed finds nothing to do.
func TestMineFindsOldTimesEndToEnd(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	outside := oldTimesSetup(t)
	root := mineTree(t)
	mine := func() string {
		t.Helper()
		out, errOut, code := d.cli("", "mine", root, "--wing", "wo")
		if code != 0 {
			t.Fatalf("loci mine: %d\n%s\n%s", code, out, errOut)
		}
		return out
	}
	mine()
	for _, op := range oldTimesOps {
		time.Sleep(20 * time.Millisecond) // past the coarse clock that stamps changes
		op.do(t, root, outside)
		out := mine()
		if !strings.Contains(out, "1 changed the palace") {
			t.Errorf("%s: the mine after it:\n%s", op.name, out)
		}
		searchable(t, d, 10*time.Second, op.name+": its file searchable", op.query, op.text)
	}
	if out := mine(); !strings.Contains(out, "Up to date") {
		t.Fatalf("a mine with nothing changed:\n%s", out)
	}
}

// The same operations through a watch trigger: each file is searchable
// within seconds, no full mine asked.
func TestWatchFindsOldTimes(t *testing.T) {
	t.Parallel()
	outside := oldTimesSetup(t)
	root := mineTree(t)
	d := watchDaemon(t, root, `debounce = "100ms"`)
	if err := os.WriteFile(filepath.Join(root, "docs", "start.md"), []byte("The weather vane turns north.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	searchable(t, d, 15*time.Second, "the first mine", "weather vane", "weather vane turns")
	searchable(t, d, 5*time.Second, "the first mine's tree", "copper kettles", "Copper kettles")
	for _, op := range oldTimesOps {
		time.Sleep(20 * time.Millisecond)
		op.do(t, root, outside)
		searchable(t, d, 15*time.Second, op.name+": its file searchable through the watch", op.query, op.text)
	}
	for _, j := range mineJobs(t, d) {
		if in, _ := j["input"].(map[string]any); in != nil && in["full"] == true {
			t.Fatalf("a full mine ran: %v", j)
		}
	}
}
