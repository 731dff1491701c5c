package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Mining files what the user asked for, through the real daemon: a folder
// mined into a second wing files everything there; a deleted wing or
// drawer is filed again by the next mine; an edit mined into the first
// wing after a full mine into the second supersedes its own version; the
// CLI says what "mined 0 of 0" means; vanished files stay current unless
// prune (CLI, REST, MCP, a miner run by a trigger) closes their drawers,
// which history and as_of still find.
func TestMineFilesWhatWasAskedEndToEnd(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	root := mineTree(t)
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(`
[embedding]
default = ""

[miners.tomb]
locator = "`+root+`"
wing = "wm"
enabled = true
options = { prune = "true" }

[triggers.kick]
miner = "tomb"
type = "schedule"
enabled = true
settings = { every = "24h" }
`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := start(t, home, palace, "LOCI_CONFIG="+cfg)
	cli := func(args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(home, "", append([]string{"--addr", d.addr}, args...), nil)
		if code != 0 {
			t.Fatalf("loci %s: %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	drawers := func(wing string) float64 {
		t.Helper()
		r := d.do("GET", "/api/wings/"+wing+"/rooms/files", nil)
		if r.status != 200 {
			t.Fatalf("room files of %s: %d %s", wing, r.status, r.raw)
		}
		return get[float64](r.body, "drawers")
	}
	content := func(wing, name string) string {
		t.Helper()
		r := d.do("GET", "/api/wings/"+wing+"/rooms/files/drawers/"+name, nil)
		if r.status != 200 {
			t.Fatalf("%s in %s: %d %s", name, wing, r.status, r.raw)
		}
		return get[string](r.body, "content")
	}

	// Point 5: a second wing gets everything.
	if out := cli("mine", root, "--wing", "wa"); !strings.Contains(out, "mined 5 of 5 documents found: 4 changed the palace") ||
		!strings.Contains(out, `The first mine of this source into wing "wa"`) {
		t.Fatalf("first mine:\n%s", out)
	}
	if out := cli("mine", root, "--wing", "wb"); !strings.Contains(out, "mined 5 of 5 documents found: 4 changed the palace") || drawers("wb") != 4 {
		t.Fatalf("mine into a second wing:\n%s", out)
	}
	// Point 7: nothing found says why.
	if out := cli("mine", root, "--wing", "wa"); !strings.Contains(out, "mined 0 of 0 documents found") ||
		!strings.Contains(out, `Up to date: nothing changed since the last mine of this source into wing "wa" (4 documents filed there)`) ||
		!strings.Contains(out, "loci mine --full") {
		t.Fatalf("mine of an unchanged folder:\n%s", out)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.MkdirAll(filepath.Join(empty, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out := cli("mine", empty, "--wing", "e"); !strings.Contains(out, "mined 0 of 0 documents found") || !strings.Contains(out, "Nothing to mine: the source lists no documents") {
		t.Fatalf("mine of an empty folder:\n%s", out)
	}
	// Point 5: a deleted wing, a deleted drawer, filed again.
	cli("wing", "delete", "wb", "--yes")
	if out := cli("mine", root, "--wing", "wb"); !strings.Contains(out, "mined 5 of 5 documents found: 4 changed the palace") || drawers("wb") != 4 {
		t.Fatalf("mine after the wing was deleted:\n%s", out)
	}
	cli("drawer", "delete", "README.md", "--wing", "wa", "--room", "files", "--yes")
	if out := cli("mine", root, "--wing", "wa"); !strings.Contains(out, "mined 1 of 1 documents found: 1 changed the palace") ||
		!strings.Contains(out, "1 filed again (drawers had been deleted)") || !strings.Contains(content("wa", "README.md"), "nightly") {
		t.Fatalf("mine after a drawer was deleted:\n%s", out)
	}
	// Point 6: mined in full into wb, edited, mined into wa: wa's README.md
	// is the new text, one current version, under its name.
	if out := cli("mine", root, "--wing", "wb", "--full"); !strings.Contains(out, `Every document is as last filed in wing "wb"`) {
		t.Fatalf("a full mine into wb:\n%s", out)
	}
	readme := filepath.Join(root, "README.md")
	if err := os.WriteFile(readme, []byte("# Proj\n\nThe deploy queue runs hourly.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(readme, later, later); err != nil {
		t.Fatal(err)
	}
	if out := cli("mine", root, "--wing", "wa"); !strings.Contains(out, "mined 1 of 1 documents found: 1 changed the palace") ||
		!strings.Contains(out, "drawers: 0 created, 1 superseded") {
		t.Fatalf("the edit mined into wa:\n%s", out)
	}
	if c := content("wa", "README.md"); !strings.Contains(c, "hourly") || drawers("wa") != 4 {
		t.Fatalf("wa's README.md: %q, %v drawers", c, drawers("wa"))
	}
	s := d.do("POST", "/api/search", map[string]any{"text": "deploy queue", "filter": map[string]any{"wing": "wa"}})
	if s.status != 200 || strings.Contains(s.raw, "nightly") || !strings.Contains(s.raw, "hourly") {
		t.Fatalf("search of wa after the edit: %s", s.raw)
	}
	cli("mine", root, "--wing", "wb")
	if c := content("wb", "README.md"); !strings.Contains(c, "hourly") || drawers("wb") != 4 {
		t.Fatalf("wb's README.md: %q", c)
	}
	src := d.do("GET", "/api/sources", nil)
	mined, _ := src.body["sources"].([]any)
	if len(mined) != 2 || get[string](mined[0].(map[string]any), "wing") != "wa" || get[string](mined[1].(map[string]any), "wing") != "wb" ||
		get[float64](mined[1].(map[string]any), "documents") != 4 {
		t.Fatalf("sources: %s", src.raw)
	}
	if out := cli("source", "list"); !strings.Contains(out, root+"  4 documents in wing wa") || !strings.Contains(out, root+"  4 documents in wing wb") {
		t.Fatalf("loci source list:\n%s", out)
	}

	// Point 8: a vanished file stays current by default; --prune closes it.
	kettle := d.do("GET", "/api/wings/wa/rooms/files/drawers/docs/kettle-note.md", nil)
	kettleID := get[string](kettle.body, "id")
	if err := os.Remove(filepath.Join(root, "docs", "kettle-note.md")); err != nil {
		t.Fatal(err)
	}
	if out := cli("mine", root, "--wing", "wa"); !strings.Contains(out, "mined 0 of 0") || !strings.Contains(content("wa", "docs/kettle-note.md"), "Copper") {
		t.Fatalf("a vanished file without prune:\n%s", out)
	}
	before := time.Now().UTC()
	time.Sleep(10 * time.Millisecond)
	if out := cli("mine", root, "--wing", "wa", "--prune"); !strings.Contains(out, "1 gone from the source (pruned)") ||
		!strings.Contains(out, "their 1 drawers were closed (history and as_of still find them)") {
		t.Fatalf("mine --prune:\n%s", out)
	}
	if r := d.do("GET", "/api/wings/wa/rooms/files/drawers/docs/kettle-note.md", nil); r.status != 404 || drawers("wa") != 3 {
		t.Fatalf("the pruned drawer by name: %d %s", r.status, r.raw)
	}
	if h := d.do("GET", "/api/drawers/"+kettleID+"/history", nil); h.status != 200 || !strings.Contains(h.raw, "Copper kettles") {
		t.Fatalf("history of the pruned drawer: %s", h.raw)
	}
	if s := d.do("POST", "/api/search", map[string]any{"text": "copper kettles", "filter": map[string]any{"wing": "wa"}}); strings.Contains(s.raw, "Copper kettles") {
		t.Fatalf("a pruned drawer is found as current: %s", s.raw)
	}
	asOf := map[string]any{"wing": "wa", "temporal": map[string]any{"as_of": before.Format(time.RFC3339Nano)}}
	if s := d.do("POST", "/api/search", map[string]any{"text": "copper kettles", "filter": asOf}); !strings.Contains(s.raw, "Copper kettles") {
		t.Fatalf("as_of before the prune: %s", s.raw)
	}
	// REST: options {"prune": "true"}; a bad value is refused.
	if r := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "path": root, "wing": "wb", "options": map[string]string{"prune": "yes"}}); r.status != 400 ||
		r.code() != "loci::input::invalid" || !strings.Contains(r.raw, "prune") || r.body["help"] == "" {
		t.Fatalf("prune=yes over REST: %d %s", r.status, r.raw)
	}
	r := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "path": root, "wing": "wb", "options": map[string]string{"prune": "true"}})
	if r.status != 202 && r.status != 201 {
		t.Fatalf("prune over REST: %d %s", r.status, r.raw)
	}
	j := waitJob(t, d, get[string](r.body, "id"), 30*time.Second, finished)
	if j["status"] != "completed" || get[float64](j, "result", "pruned") != 1 || get[string](j, "result", "outcome") != "changed" || drawers("wb") != 3 {
		t.Fatalf("prune over REST: %v", j)
	}
	// MCP: the same options.
	sess := mcpSession(t, d)
	wantError(t, sess, "loci_mine", map[string]any{"path": root, "wing": "wa", "options": map[string]any{"prune": "maybe"}}, "loci::input::invalid", "prune")
	job, isErr := callTool(t, sess, "loci_mine", map[string]any{"path": root, "wing": "wa", "options": map[string]any{"prune": "true"}})
	if isErr {
		t.Fatalf("loci_mine with prune: %v", job)
	}
	j = waitJob(t, d, job["id"].(string), 30*time.Second, finished)
	if j["status"] != "completed" || get[string](j, "result", "outcome") != "up_to_date" || get[float64](j, "result", "pruned") != 0 ||
		!strings.Contains(get[string](j, "result", "note"), "Up to date") {
		t.Fatalf("loci_mine with prune over MCP: %v", j)
	}
	// A trigger runs the miner (prune in its options) into its own wing.
	f := d.do("POST", "/api/triggers/kick/fire", nil)
	if f.status != 202 {
		t.Fatalf("fire: %d %s", f.status, f.raw)
	}
	j = waitJob(t, d, get[string](f.body, "job", "id"), 30*time.Second, finished)
	if j["status"] != "completed" || get[string](j, "result", "wing") != "wm" || get[string](j, "result", "mode") != "first" ||
		get[float64](j, "result", "created") != 3 || drawers("wm") != 3 {
		t.Fatalf("the miner run by a trigger: %v", j)
	}
	r = d.do("POST", "/api/miners/tomb/run", nil)
	j = waitJob(t, d, get[string](r.body, "id"), 30*time.Second, finished)
	if j["status"] != "completed" || get[string](j, "result", "outcome") != "up_to_date" {
		t.Fatalf("the miner run again: %v", j)
	}
}
