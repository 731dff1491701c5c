package kinds

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// threeFiles writes a.md, b.md and long.txt (four chunks at 200
// characters) under a new root.
func threeFiles(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write(t, root, "a.md", "# Notes\nremember the lamp\n", 1)
	write(t, root, "b.md", "the kettle is copper\n", 2)
	write(t, root, "long.txt", paragraph("first")+"\n\n"+paragraph("second")+"\n\n"+paragraph("third")+"\n\n"+paragraph("fourth")+"\n", 3)
	return root
}

func mineInto(t *testing.T, j *kindsRuntime, root, wing string, extra string) {
	t.Helper()
	mineOnce(t, j, `{"path":"`+root+`","wing":"`+wing+`"`+extra+`}`)
}

// byContent is a wing's current drawers in room files by content.
func byContent(t *testing.T, j *kindsRuntime, wing string) map[string]store.Drawer {
	t.Helper()
	out := map[string]store.Drawer{}
	for _, d := range files(t, j, wing) {
		if _, dup := out[d.Content]; dup {
			t.Fatalf("wing %s holds two current drawers with %q", wing, d.Content)
		}
		out[d.Content] = d
	}
	return out
}

// Mining one folder into a second wing files everything there (the
// cursor is per source and wing), and each wing is then up to date.
func TestMineIntoASecondWingFilesEverything(t *testing.T) {
	j := mineRuntime(t, 0)
	root := threeFiles(t)
	first := mineOnce(t, j, `{"path":"`+root+`","wing":"wa"}`)
	if first.Documents != 3 || first.Created != 6 {
		t.Fatalf("first mine: %+v", first)
	}
	second := mineOnce(t, j, `{"path":"`+root+`","wing":"wb"}`)
	if second.Documents != 3 || second.Discovered != 3 || second.Ingested != 3 || second.Created != 6 {
		t.Fatalf("mining into a second wing: %+v", second)
	}
	a, b := byContent(t, j, "wa"), byContent(t, j, "wb")
	if len(a) != 6 || len(b) != 6 || b["# Notes\nremember the lamp\n"].Name != "a.md" {
		t.Fatalf("wa %d drawers, wb %d: %+v", len(a), len(b), b)
	}
	for _, wing := range []string{"wa", "wb"} {
		if again := mineOnce(t, j, `{"path":"`+root+`","wing":"`+wing+`"}`); again.Documents != 0 || again.Created != 0 {
			t.Fatalf("mining %s again: %+v", wing, again)
		}
	}
	// An edit reaches both wings, each on its own cursor.
	write(t, root, "b.md", "the kettle is brass\n", 10)
	for _, wing := range []string{"wa", "wb"} {
		if res := mineOnce(t, j, `{"path":"`+root+`","wing":"`+wing+`"}`); res.Documents != 1 || res.Superseded != 1 {
			t.Fatalf("the edit mined into %s: %+v", wing, res)
		}
		if d, ok := byContent(t, j, wing)["the kettle is brass\n"]; !ok || d.Name != "b.md" {
			t.Fatalf("%s after the edit: %+v", wing, byContent(t, j, wing))
		}
	}
}

// A mined drawer deleted, the room deleted, the wing deleted: the next mine
// notices and files them again, and reads only what it must.
func TestMineRefilesWhatWasDeleted(t *testing.T) {
	j := mineRuntime(t, 0)
	root := threeFiles(t)
	ctx := context.Background()
	mineInto(t, j, root, "wa", "")
	if _, err := j.Palace.DeleteDrawer(ctx, "wa", "files", "a.md"); err != nil {
		t.Fatal(err)
	}
	res := mineOnce(t, j, `{"path":"`+root+`","wing":"wa"}`)
	if res.Documents != 1 || res.Ingested != 1 || res.Created != 1 {
		t.Fatalf("after deleting a.md's drawer: %+v", res)
	}
	if d, ok := byContent(t, j, "wa")["# Notes\nremember the lamp\n"]; !ok || d.Name != "a.md" {
		t.Fatalf("a.md not filed again: %+v", byContent(t, j, "wa"))
	}
	// One unnamed chunk of long.txt: only it is filed again.
	chunk := byContent(t, j, "wa")[paragraph("third")+"\n\n"]
	if chunk.ID == "" || chunk.Name != "" {
		t.Fatalf("third chunk: %+v", chunk)
	}
	if _, err := j.Palace.DeleteDrawer(ctx, "wa", "files", chunk.ID); err != nil {
		t.Fatal(err)
	}
	res = mineOnce(t, j, `{"path":"`+root+`","wing":"wa"}`)
	if res.Documents != 1 || res.Created != 1 || res.Superseded != 0 || len(byContent(t, j, "wa")) != 6 {
		t.Fatalf("after deleting a chunk: %+v %+v", res, byContent(t, j, "wa"))
	}
	// Deleting a superseded version is not a reason to file anything.
	write(t, root, "b.md", "the kettle is brass\n", 10)
	mineInto(t, j, root, "wa", "")
	var old string
	for _, d := range drawersOf(t, j, "wa") {
		if d.Content == "the kettle is copper\n" {
			old = d.ID
		}
	}
	if _, err := j.Palace.DeleteDrawer(ctx, "wa", "files", old); err != nil {
		t.Fatal(err)
	}
	if res = mineOnce(t, j, `{"path":"`+root+`","wing":"wa"}`); res.Documents != 0 || res.Created != 0 {
		t.Fatalf("after deleting a superseded version: %+v", res)
	}
	if _, err := j.Palace.DeleteRoom(ctx, "wa", "files"); err != nil {
		t.Fatal(err)
	}
	if res = mineOnce(t, j, `{"path":"`+root+`","wing":"wa"}`); res.Documents != 3 || res.Created != 6 || len(byContent(t, j, "wa")) != 6 {
		t.Fatalf("after deleting the room: %+v", res)
	}
	if _, err := j.Palace.DeleteWing(ctx, "wa"); err != nil {
		t.Fatal(err)
	}
	if res = mineOnce(t, j, `{"path":"`+root+`","wing":"wa"}`); res.Documents != 3 || res.Created != 6 || len(byContent(t, j, "wa")) != 6 {
		t.Fatalf("after deleting the wing: %+v", res)
	}
	// The deleted wing's state went with it: one source state, for the
	// wing that exists.
	n := 0
	err := j.DB.View(ctx, func(r store.Reader) error {
		return r.Sources(func(*store.SourceState) bool { n++; return true })
	})
	if err != nil || n != 1 {
		t.Fatalf("%d source states (%v), want 1", n, err)
	}
}

// drawersOf is every drawer of a wing's room files, current or not.
func drawersOf(t *testing.T, j *kindsRuntime, wing string) []store.Drawer {
	t.Helper()
	var out []store.Drawer
	err := j.DB.View(context.Background(), func(r store.Reader) error {
		w, err := store.FindWing(r, wing)
		if err != nil {
			return err
		}
		rm, err := store.FindRoom(r, w, "files")
		if err != nil {
			return err
		}
		return r.Drawers(rm.ID, false, func(d *store.Drawer) bool { out = append(out, *d); return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A file edited after the folder was mined into a second wing, then mined
// into its first wing: the old version there is superseded, the new one
// takes its name, and each wing holds one current version.
func TestMineEditedFileKeepsOneCurrentVersionPerWing(t *testing.T) {
	j := mineRuntime(t, 0)
	root := threeFiles(t)
	mineInto(t, j, root, "wa", "")
	mineInto(t, j, root, "wb", `,"full":true`)
	write(t, root, "a.md", "# Notes\nremember the brass lamp\n", 10)
	res := mineOnce(t, j, `{"path":"`+root+`","wing":"wa"}`)
	if res.Documents != 1 || res.Superseded != 1 || res.Created != 0 {
		t.Fatalf("the edit mined into wa: %+v", res)
	}
	a := byContent(t, j, "wa")
	if _, stale := a["# Notes\nremember the lamp\n"]; stale || a["# Notes\nremember the brass lamp\n"].Name != "a.md" || len(a) != 6 {
		t.Fatalf("wa after the edit: %+v", a)
	}
	if b := byContent(t, j, "wb"); b["# Notes\nremember the lamp\n"].Name != "a.md" || len(b) != 6 {
		t.Fatalf("wb before it is mined again: %+v", b)
	}
	mineInto(t, j, root, "wb", "")
	if b := byContent(t, j, "wb"); b["# Notes\nremember the brass lamp\n"].Name != "a.md" || len(b) != 6 {
		t.Fatalf("wb after the edit: %+v", b)
	}
	if a := byContent(t, j, "wa"); len(a) != 6 {
		t.Fatalf("wa after wb was mined: %+v", a)
	}
}

// Vanished files stay current by default; with prune a full listing closes
// their drawers (history keeps them), whatever since narrows, and a file
// that comes back is filed again.
func TestMinePrunesVanishedFiles(t *testing.T) {
	j := mineRuntime(t, 0)
	root := threeFiles(t)
	mineInto(t, j, root, "w", "")
	if err := os.Remove(filepath.Join(root, "b.md")); err != nil {
		t.Fatal(err)
	}
	mineInto(t, j, root, "w", "")
	if _, ok := byContent(t, j, "w")["the kettle is copper\n"]; !ok {
		t.Fatal("without prune, a vanished file's drawer was closed")
	}
	res := mineOnce(t, j, `{"path":"`+root+`","wing":"w","options":{"prune":"true"}}`)
	if res.Documents != 0 || res.Retired != 1 {
		t.Fatalf("prune: %+v", res)
	}
	if _, ok := byContent(t, j, "w")["the kettle is copper\n"]; ok {
		t.Fatal("prune left b.md current")
	}
	var gone store.Drawer
	for _, d := range drawersOf(t, j, "w") {
		if d.Name == "b.md" {
			gone = d
		}
	}
	if gone.ValidTo == nil {
		t.Fatalf("b.md's drawer after prune: %+v", gone)
	}
	if _, versions, err := j.Palace.History(context.Background(), gone.ID); err != nil || len(versions) != 1 || versions[0].Content != "the kettle is copper\n" {
		t.Fatalf("history of the pruned drawer: %+v %v", versions, err)
	}
	// since narrows discovery, never the listing prune reads.
	if err := os.Remove(filepath.Join(root, "long.txt")); err != nil {
		t.Fatal(err)
	}
	res = mineOnce(t, j, `{"path":"`+root+`","wing":"w","options":{"prune":"true","since":"2099-01-01"}}`)
	if res.Retired != 4 || len(byContent(t, j, "w")) != 1 {
		t.Fatalf("prune with since: %+v %+v", res, byContent(t, j, "w"))
	}
	// Pruning again finds nothing more; a file back is filed again.
	if res = mineOnce(t, j, `{"path":"`+root+`","wing":"w","options":{"prune":"true"}}`); res.Retired != 0 {
		t.Fatalf("prune again: %+v", res)
	}
	write(t, root, "b.md", "the kettle is copper\n", 20)
	if res = mineOnce(t, j, `{"path":"`+root+`","wing":"w","options":{"prune":"true"}}`); res.Created != 1 ||
		byContent(t, j, "w")["the kettle is copper\n"].Name != "b.md" {
		t.Fatalf("b.md back: %+v %+v", res, byContent(t, j, "w"))
	}
	for _, bad := range []string{"yes please", ""} {
		_, err := submit(t, j, "mine", `{"path":"`+root+`","options":{"prune":"`+bad+`"}}`)
		if fault.As(err).Code != fault.InputInvalid || !strings.Contains(err.Error(), "prune") {
			t.Fatalf("prune=%q: %v", bad, err)
		}
	}
}

// "mined 0 of 0" said four things; the result's outcome and note tell
// them apart, and say to mine with full when that is what helps.
func TestMineSaysWhatNothingMeans(t *testing.T) {
	j := mineRuntime(t, 0)
	empty := t.TempDir()
	write(t, empty, ".git/config", "[core]\n", 1)
	res := mineOnce(t, j, `{"path":"`+empty+`","wing":"e"}`)
	if res.Outcome != "empty" || res.Mode != "first" || res.Discovered != 0 || !strings.Contains(res.Note, "lists no documents") {
		t.Fatalf("an empty folder: %+v", res)
	}
	binary := t.TempDir()
	write(t, binary, "x.bin", "a\x00b", 1)
	res = mineOnce(t, j, `{"path":"`+binary+`","wing":"b"}`)
	if res.Outcome != "nothing_filed" || res.Discovered != 1 || res.Filtered != 1 || !strings.Contains(res.Note, "None of the 1 documents found could be filed") {
		t.Fatalf("a folder of nothing to file: %+v", res)
	}
	root := threeFiles(t)
	res = mineOnce(t, j, `{"path":"`+root+`","wing":"wa"}`)
	if res.Outcome != "changed" || res.Mode != "first" || res.Wing != "wa" || res.Tracked != 3 || !strings.Contains(res.Note, `first mine of this source into wing "wa"`) {
		t.Fatalf("a first mine: %+v", res)
	}
	res = mineOnce(t, j, `{"path":"`+root+`","wing":"wa"}`)
	if res.Outcome != "up_to_date" || res.Mode != "incremental" || res.Tracked != 3 ||
		!strings.Contains(res.Note, `Up to date: nothing changed since the last mine of this source into wing "wa" (3 documents filed there)`) ||
		!strings.Contains(res.Note, "loci mine --full") {
		t.Fatalf("an unchanged folder: %+v", res)
	}
	res = mineOnce(t, j, `{"path":"`+root+`","wing":"wb"}`)
	if res.Outcome != "changed" || res.Mode != "first" || res.Created != 6 {
		t.Fatalf("a new wing: %+v", res)
	}
	res = mineOnce(t, j, `{"path":"`+root+`","wing":"wa","full":true}`)
	if res.Outcome != "unchanged" || res.Mode != "full" || res.Unchanged != 3 || !strings.Contains(res.Note, `as last filed in wing "wa"`) {
		t.Fatalf("a full mine of an unchanged folder: %+v", res)
	}
	if _, err := j.Palace.DeleteWing(context.Background(), "wa"); err != nil {
		t.Fatal(err)
	}
	res = mineOnce(t, j, `{"path":"`+root+`","wing":"wa"}`)
	if res.Outcome != "changed" || res.Mode != "first" || res.Created != 6 {
		t.Fatalf("a deleted wing: %+v", res)
	}
	if _, err := j.Palace.DeleteDrawer(context.Background(), "wa", "files", "b.md"); err != nil {
		t.Fatal(err)
	}
	res = mineOnce(t, j, `{"path":"`+root+`","wing":"wa"}`)
	if res.Outcome != "changed" || res.Refiled != 1 || res.Created != 1 || !strings.Contains(res.Note, "1 documents were read again because drawers of theirs had been deleted") {
		t.Fatalf("a deleted drawer: %+v", res)
	}
	if err := os.Remove(filepath.Join(root, "b.md")); err != nil {
		t.Fatal(err)
	}
	res = mineOnce(t, j, `{"path":"`+root+`","wing":"wa","options":{"prune":"true"}}`)
	if res.Outcome != "changed" || res.Pruned != 1 || res.Retired != 1 || res.Tracked != 2 ||
		!strings.Contains(res.Note, "1 documents are gone from the source: their 1 drawers were closed") {
		t.Fatalf("a pruned file: %+v", res)
	}
}
