package sources

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// codexFixture is the resumed session the real codex CLI wrote (see
// testdata/transcripts/codex/README.md), its bytes, and the generator's
// record of the project, the session's path, the line count after each
// of its three runs and the other sessions (a parent and its sub-agent).
type codexFixture struct {
	root string // the fixture's sessions directory
	raw  []byte
	// dir is a sessions directory holding the resumed session alone.
	dir   string
	steps struct {
		Project string   `json:"project"`
		Session string   `json:"session"`
		Lines   []int    `json:"lines_after_run"`
		Others  []string `json:"other_sessions"`
	}
}

func loadCodexFixture(t *testing.T) codexFixture {
	t.Helper()
	var f codexFixture
	root, err := filepath.Abs("testdata/transcripts/codex/sessions")
	if err != nil {
		t.Fatal(err)
	}
	f.root = root
	b, err := os.ReadFile("testdata/transcripts/codex/steps.json")
	if err != nil || json.Unmarshal(b, &f.steps) != nil || len(f.steps.Lines) != 3 || len(f.steps.Others) != 2 {
		t.Fatalf("steps.json: %s %v", b, err)
	}
	if f.raw, err = os.ReadFile(filepath.Join(root, filepath.FromSlash(f.steps.Session))); err != nil {
		t.Fatal(err)
	}
	f.dir = filepath.Join(t.TempDir(), "sessions")
	f.write(t, f.raw)
	return f
}

// write writes the resumed session's file under f.dir.
func (f codexFixture) write(t *testing.T, b []byte) {
	t.Helper()
	file := filepath.Join(f.dir, filepath.FromSlash(f.steps.Session))
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readCodex reads the one session under root through the source.
func readCodex(t *testing.T, root string, opts map[string]string) (*Document, error) {
	t.Helper()
	src := Codex()
	id, err := src.Resolve(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := src.Discover(context.Background(), Run{ID: id, Options: opts}, nil)
	if err != nil || len(refs) != 1 {
		t.Fatalf("discover under %s: %+v %v", root, refs, err)
	}
	return src.Read(context.Background(), Run{ID: id}, refs[0])
}

// The session the real codex CLI wrote: the person's prompts (with the
// image they attached as a marker), the assistant's messages with its
// tool calls (the shell command, the apply_patch call's file) and the
// results' sizes (a failed command marked), in order; the origin names
// the session, codex's version and the project.
func TestCodexTurnsAndMarkers(t *testing.T) {
	f := loadCodexFixture(t)
	doc, err := readCodex(t, f.dir, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	roles, texts := bodies(t, doc)
	want := []string{
		"[image]\nCheck the repo status before the deploy. My GitHub token is ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 if you need it; the deploy key goes in AWS_ACCESS_KEY_ID.",
		"I'll check the working tree first.\n[tool exec_command: AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLF git status --short]\n[tool result: 0 B]\n" +
			"[tool exec_command: cat README.md]\n[tool result: 79 B]\n" +
			"The working tree is clean and the README says the wick is trimmed weekly; ready to deploy.",
		"What should the nightly lamp job do next?",
		"[tool exec_command: cat nightly.log]\n[tool result: 44 B, error]\n[tool apply_patch: add NOTES.md]\n[tool result: 49 B]\n" +
			"There is no nightly log yet. Next, the nightly lamp job should rotate the copper kettles and log the wick length; I noted it in NOTES.md.",
		"<task>Summarise the plan in one line.</task>",
		"Plan: check the tree, trim the wick, rotate the kettles nightly.",
	}
	if strings.Join(roles, ",") != "user,assistant,user,assistant,user,assistant" || len(texts) != len(want) {
		t.Fatalf("turns %q: %q", roles, texts)
	}
	for i := range want {
		if texts[i] != want[i] {
			t.Errorf("turn %d:\n got %q\nwant %q", i, texts[i], want[i])
		}
	}
	var origin map[string]any
	if err := json.Unmarshal(doc.Origin, &origin); err != nil {
		t.Fatal(err)
	}
	sessionID := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`).FindString(f.steps.Session)
	if sessionID == "" || origin["session_id"] != sessionID || origin["agent"] != "codex" || origin["agent_version"] != "0.169.0" ||
		origin["format"] != "codex/"+CodexFormat || origin["project"] != f.steps.Project || origin["turns"] != float64(6) ||
		origin["first"] == nil || origin["last"] == nil || origin["first"] == origin["last"] {
		t.Fatalf("origin %s", doc.Origin)
	}
	if doc.Kind != "transcript" || doc.Room != "codex" || doc.Skipped != 0 || doc.Bytes != int64(len(f.raw)) {
		t.Fatalf("document %s %s skipped %d bytes %d", doc.Kind, doc.Room, doc.Skipped, doc.Bytes)
	}
}

// What is in the rollout but not the conversation never reaches a unit:
// the reasoning (its summaries and encrypted content), the tools' output,
// the patch's body, Codex's instructions and the AGENTS.md, environment
// and skills blocks it sends as user messages, the image's data.
func TestCodexLeavesOutReasoningOutputAndInjections(t *testing.T) {
	f := loadCodexFixture(t)
	doc, err := readCodex(t, f.dir, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	text := doc.Text()
	for _, absent := range []string{"REASONING-SENTINEL", "gAAAAAB", "TOOL-OUTPUT-SENTINEL", "No such file or directory", "Chunk ID",
		"PATCH-BODY-SENTINEL", "Success. Updated", "AGENTS-MD-SENTINEL", "AGENTS.md instructions", "<environment_context>",
		"<skills_instructions>", "<permissions instructions>", "You are Codex, a coding agent", "<image", "iVBORw0KGgo"} {
		if !bytes.Contains(f.raw, []byte(absent)) {
			t.Fatalf("the fixture has no %q: the check could not fail", absent)
		}
		if strings.Contains(text, absent) {
			t.Errorf("%q reached the transcript:\n%s", absent, text)
		}
	}
}

// The secrets in the person's prompt and in the shell command are in the
// units as the pipeline's secret policy sees them (it redacts units): a
// marker keeps the whole key.
func TestCodexSecretsReachThePolicy(t *testing.T) {
	f := loadCodexFixture(t)
	doc, err := readCodex(t, f.dir, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, u := range doc.Units {
		for _, s := range Scan(u) {
			found[s.Kind] = true
		}
	}
	if !found["github_token"] || !found["aws_access_key_id"] {
		t.Fatalf("the secrets the policy finds in the units: %v", found)
	}
}

// A resumed session grows its rollout file: read after each of the three
// runs, the turns read before are read again unchanged and only the new
// ones are added (the chunker then files only those).
func TestCodexGrowingSessionKeepsItsTurns(t *testing.T) {
	f := loadCodexFixture(t)
	lines := bytes.SplitAfter(f.raw, []byte("\n"))
	var before []string
	for i, n := range f.steps.Lines {
		f.write(t, bytes.Join(lines[:n], nil))
		doc, err := readCodex(t, f.dir, map[string]string{})
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Units) != 2*(i+1) {
			t.Fatalf("after run %d: %d turns", i+1, len(doc.Units))
		}
		for j, u := range before {
			if doc.Units[j] != u {
				t.Fatalf("after run %d turn %d changed:\n%q\n%q", i+1, j, u, doc.Units[j])
			}
		}
		before = doc.Units
	}
	// Half a line (codex writing it) waits for its end.
	half := append(bytes.Join(lines[:f.steps.Lines[0]], nil), lines[f.steps.Lines[0]+3][:40]...)
	f.write(t, half)
	if doc, err := readCodex(t, f.dir, map[string]string{}); err != nil || len(doc.Units) != 2 || doc.Skipped != 0 {
		t.Fatalf("with a half-written line: %v %+v", err, doc)
	}
}

// The hand-made rollout (handmade/README.md): a corrupt line, a record
// type and a response item type codex 0.169 does not write are counted
// and left out; items of older codex versions (the shell tool's argv, a
// local shell call, a JSON shell output with its exit code, an output
// object, a web search, <user_instructions>) are read; the event_msg
// copies of the messages are not read, so nothing is doubled.
func TestCodexUnknownAndOlderRecords(t *testing.T) {
	root, _ := filepath.Abs("testdata/transcripts/codex/handmade")
	doc, err := readCodex(t, root, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if doc.Skipped != 3 {
		t.Fatalf("skipped %d, want 3 (the corrupt line, future_record, hologram_call)", doc.Skipped)
	}
	roles, texts := bodies(t, doc)
	want := []string{
		"Where is the lamp config?",
		"[tool shell: ls -la conf]\n[tool result: 12 B, error]\n[tool shell: find . -name lamp.toml]\n[tool result: 19 B]\n" +
			"[tool web_search: lamp wick trimming schedule]\n[tool view_image: {\"path\":\"wick.png\"}]\n[tool result: 7 B, error]\nIt is in conf/lamp.toml.",
		"Thanks.",
	}
	if strings.Join(roles, ",") != "user,assistant,user" || strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Fatalf("turns %q:\n%q\nwant\n%q", roles, texts, want)
	}
	if strings.Contains(doc.Text(), "OLD-INSTRUCTIONS") || strings.Contains(doc.Text(), "SECRET-LISTING") {
		t.Fatalf("the user instructions or a tool output reached the transcript: %s", doc.Text())
	}
}

// The project option keeps the sessions run under a path; the standard
// location is ~/.codex/sessions; archived sessions (flat) match too;
// GET /api/sources shows the format.
func TestCodexLocationAndProject(t *testing.T) {
	f := loadCodexFixture(t)
	if _, err := readCodex(t, f.dir, map[string]string{OptionProject: filepath.Dir(f.steps.Project)}); err != nil {
		t.Fatalf("a session under the project: %v", err)
	}
	_, err := readCodex(t, f.dir, map[string]string{OptionProject: "/srv/elsewhere"})
	if r, ok := IsFiltered(err); !ok || r != "other_project" {
		t.Fatalf("a session of another project: %v", err)
	}
	src := Codex()
	src.Home = t.TempDir()
	os.MkdirAll(filepath.Join(src.Home, ".codex", "sessions"), 0o755)
	id, err := src.Resolve("", map[string]string{})
	if err != nil || id.Locator != filepath.Join(src.Home, ".codex", "sessions") || id.Adapter != "codex" {
		t.Fatalf("the standard location: %+v %v", id, err)
	}
	info := src.Info()
	if info.Name != "codex" || info.Format != CodexFormat || info.DefaultLocator != "~/.codex/sessions" {
		t.Fatalf("info %+v", info)
	}
	for rel, want := range map[string]bool{f.steps.Session: true,
		"rollout-2025-06-01T10-00-00-0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl": true, "history.jsonl": false, "2026/11/26/rollout-x.json": false} {
		if codexMatch(rel) != want {
			t.Errorf("match %s: %v", rel, !want)
		}
	}
	// A JSONL file that is no rollout is not a session.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "rollout-notes.jsonl"), []byte(`{"role":"user","text":"hi"}`+"\n"), 0o644)
	if _, err := readCodex(t, dir, map[string]string{}); err == nil {
		t.Fatal("a file without session_meta was read as a session")
	} else if r, _ := IsFiltered(err); r != "not_a_session" {
		t.Fatalf("%v", err)
	}
}

// A marker shortens a long command; the cut never goes through a secret
// (the secret policy could not find the half left): a secret the cut
// would split is left out whole.
func TestCodexMarkerNeverCutsASecret(t *testing.T) {
	token := "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
	for pad := 90; pad <= 119; pad++ {
		cmd := strings.Repeat("a", pad) + " " + token + " --verbose"
		m := ToolMarker("exec_command", codexArgs("exec_command", `{"cmd":"`+cmd+`"}`))
		if strings.Contains(m, "ghp_") && !strings.Contains(m, token) {
			t.Fatalf("pad %d: the marker keeps part of the token: %s", pad, m)
		}
		if !strings.HasSuffix(m, "…]") || !strings.HasPrefix(m, "[tool exec_command: aaaa") {
			t.Fatalf("pad %d: %s", pad, m)
		}
	}
}

// A session whose assistant spawned a sub-agent: the parent keeps the
// spawn and wait calls as markers and leaves out the notification codex
// injects as a user message; the sub-agent's own rollout is a session
// apart whose every turn is marked a sub-agent's.
func TestCodexSubAgentKeptApart(t *testing.T) {
	f := loadCodexFixture(t)
	src := Codex()
	id, err := src.Resolve(f.root, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	refs, err := src.Discover(context.Background(), Run{ID: id}, nil)
	if err != nil || len(refs) != 3 {
		t.Fatalf("the fixture's sessions: %+v %v", refs, err)
	}
	docs := map[string]*Document{}
	for _, r := range refs {
		doc, err := src.Read(context.Background(), Run{ID: id}, r)
		if err != nil {
			t.Fatal(err)
		}
		docs[r.ID] = doc
	}
	parent, child := docs[f.steps.Others[0]], docs[f.steps.Others[1]]
	if parent == nil || child == nil {
		t.Fatalf("the parent and the sub-agent: %v", refs)
	}
	if strings.Contains(parent.Text(), "(sub-agent)") || strings.Contains(parent.Text(), "subagent_notification") ||
		!strings.Contains(parent.Text(), "[tool spawn_agent: {\"message\":\"SUBAGENT-TASK: count the lamps") ||
		!strings.Contains(parent.Text(), "[tool wait_agent: ") || !strings.Contains(parent.Text(), "The helper counted three lamps in the hall.") {
		t.Fatalf("the parent:\n%s", parent.Text())
	}
	roles, texts := bodies(t, child)
	if strings.Join(roles, ",") != "user (sub-agent),assistant (sub-agent)" ||
		texts[0] != "SUBAGENT-TASK: count the lamps in the hall and say how many." || texts[1] != "There are three lamps in the hall." {
		t.Fatalf("the sub-agent: %q %q", roles, texts)
	}
}
