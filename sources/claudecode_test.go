package sources

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionFilesLongLineKeepsItsStart: a line longer than the reader's
// buffer (Claude Code writes 100 KB attachment records) is read whole, and
// the lines after it once each.
func TestSessionFilesLongLineKeepsItsStart(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".agent/sessions/p")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The padding is in a field the format ignores: the turn's text stays
	// under MaxTurnBytes, so what is checked is the reader's.
	long := `{"role":"user","pad":"` + strings.Repeat("p", 100<<10) + `","text":"start ` + strings.Repeat("x", 10<<10) + ` end","cwd":"/w"}`
	body := long + "\n" + `{"role":"assistant","text":"second"}` + "\n" + `{"role":"user","text":"third"}` + "\n"
	os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(body), 0o600)
	src := SessionFiles{Format: lineFormat, Home: home}
	id, _ := src.Resolve("", map[string]string{})
	doc, err := src.Read(context.Background(), Run{ID: id}, Ref{ID: "p/s.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Units) != 3 || doc.Skipped != 0 || !strings.Contains(doc.Units[0], "start x") || !strings.Contains(doc.Units[0], "x end") ||
		doc.Bytes != int64(len(body)) {
		t.Fatalf("%d units, %d skipped, %d bytes of %d", len(doc.Units), doc.Skipped, doc.Bytes, len(body))
	}
}

// ccDocs reads every session of the fixture the real Claude Code CLI
// wrote, by the text of its first unit.
func ccDocs(t *testing.T, opts map[string]string) (map[string]*Document, map[string]string) {
	t.Helper()
	root, err := filepath.Abs("testdata/transcripts/claude-code/projects")
	if err != nil {
		t.Fatal(err)
	}
	src := ClaudeCode()
	id, err := src.Resolve(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := src.Discover(context.Background(), Run{ID: id, Options: opts}, nil)
	if err != nil || len(refs) != 5 {
		t.Fatalf("%d sessions (the .meta.json is none): %+v %v", len(refs), refs, err)
	}
	docs, filtered := map[string]*Document{}, map[string]string{}
	for _, ref := range refs {
		doc, err := src.Read(context.Background(), Run{ID: id}, ref)
		if reason, ok := IsFiltered(err); ok {
			filtered[ref.ID] = reason
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := strings.Cut(doc.Units[0], "\n")
		first, _, _ := strings.Cut(body, "\n")
		docs[first] = doc
	}
	return docs, filtered
}

// The sessions Claude Code 2.1.328 wrote become turns: the person's
// prompts; the assistant's text with a marker per tool call and per
// result (its size, never its text) across the tool round trips; no
// thinking; an image as a marker; a sub-agent's file as its own document
// of sub-agent turns. The origin names the session, the version and the
// project; the many record types that are not conversation are known.
func TestClaudeCodeFixtureTurns(t *testing.T) {
	docs, filtered := ccDocs(t, nil)
	if len(docs) != 5 || len(filtered) != 0 {
		t.Fatalf("%d documents, filtered %v", len(docs), filtered)
	}
	want := map[string][]string{
		"Check the repository and read notes.txt. My GitHub token is ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 if you need it.": {
			"user", "Check the repository and read notes.txt. My GitHub token is ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 if you need it.",
			"assistant", "Let me check the working tree first.\n[tool Bash: echo toolout-zebra-$((7000+781)) && AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLF true]\n" +
				"[tool result: 18 B]\n[tool Read: /tmp/loci-cc-fixture/project-app/notes.txt]\n[tool result: 75 B]\n" +
				"The tree is clean and notes.txt describes the flamingo migration plan. Do not paste tokens into prompts.",
			"user", "Now summarise what the notes said in one line.",
			"assistant", "Summary for the resumed session: the notes describe the flamingo migration plan.",
		},
		"What is in this picture?": {
			"user", "What is in this picture?\n[image]",
			"assistant", "A single red pixel on a transparent ground.",
			"user", "[command /compact]",
			"user", "[command /usage]",
			"user", "After the compaction, what was the picture?",
			"assistant", "It was one red pixel, remembered across the compaction.",
		},
		"Delegate: find the deploy script.": {
			"user", "Delegate: find the deploy script.",
			"assistant", "I will hand this to a sub-agent.\n[tool Agent: Find the deploy script]\n[tool result: 1.0 KB]\n" +
				"The sub-agent is working; I will report when it finishes.\nThe sub-agent reports the deploy script is in scripts/deploy.sh.",
		},
		// The API refused the request: the CLI's synthetic assistant
		// message (isApiErrorMessage) is not the model's words.
		"Provoke an API error, please.": {
			"user", "Provoke an API error, please.",
		},
		"SUBAGENT-TASK: find where the deploy script lives and report back.": {
			"user (sub-agent)", "SUBAGENT-TASK: find where the deploy script lives and report back.",
			"assistant (sub-agent)", "[tool Bash: echo subagent-heron-$((4000+410)); exit 3]\n[tool result: 31 B, error]\n" +
				"The sub-agent ran the echo; the deploy script lives in scripts/deploy.sh.",
		},
	}
	for first, w := range want {
		doc := docs[first]
		if doc == nil {
			t.Fatalf("no session begins %q", first)
		}
		roles, texts := bodies(t, doc)
		var got []string
		for i := range roles {
			got = append(got, roles[i], texts[i])
		}
		if strings.Join(got, "\n|\n") != strings.Join(w, "\n|\n") {
			t.Fatalf("session %q:\n%s\nwant\n%s", first, strings.Join(got, "\n|\n"), strings.Join(w, "\n|\n"))
		}
		if doc.Skipped != 0 || doc.Kind != "transcript" || doc.Room != "claude-code" {
			t.Fatalf("%q: skipped %d, kind %s, room %s", first, doc.Skipped, doc.Kind, doc.Room)
		}
		var o struct {
			SessionID    string `json:"session_id"`
			Agent        string `json:"agent"`
			AgentVersion string `json:"agent_version"`
			Format       string `json:"format"`
			Project      string `json:"project"`
			First, Last  string
			Path         string `json:"path"`
		}
		if err := json.Unmarshal(doc.Origin, &o); err != nil {
			t.Fatal(err)
		}
		session := strings.SplitN(o.Path, "/", 3)[1]
		if o.SessionID != strings.TrimSuffix(session, ".jsonl") || o.Agent != "claude-code" || o.AgentVersion != "2.1.328" ||
			o.Format != "claude-code/jsonl-2.1" || !strings.HasPrefix(o.Project, "/tmp/loci-cc-fixture/project-") || o.First == "" || o.Last < o.First {
			t.Fatalf("%q origin %s", first, doc.Origin)
		}
	}
	// Nothing of the reasoning, the tools' output, the reminders Claude
	// Code adds or the image's data is in any unit.
	for _, doc := range docs {
		for _, never := range []string{"reasoning-pelican-5521", "toolout-zebra-7781", "filebody-walrus-3390", "subagent-heron-4410",
			"Exit code 3", "system-reminder", "task-notification", "Async agent launched", "iVBORw0KGgo", "Session notes",
			"continued from a previous conversation", "Compacted", "local-command", "Estimated cost", "command-name", "Prompt is too long"} {
			if strings.Contains(doc.Text(), never) {
				t.Fatalf("%q in %s", never, doc.Text())
			}
		}
	}
}

// A record type the parser does not know, a cut-off line and an unknown
// content block are counted, never an error; the conversation is read.
func TestClaudeCodeUnknownRecordsCounted(t *testing.T) {
	f, err := os.Open("testdata/transcripts/claude-code/handmade/unknown-records.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ParseClaudeCode(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if s.Skipped != 3 || len(s.Turns) != 2 || s.Turns[1].Text != "The staging proxy listens on port 8443." || s.Project != "/work/app" ||
		s.ID != "0d6c2c7e-0000-4000-8000-00000000cafe" {
		t.Fatalf("%+v", s)
	}
	// A file of no record Claude Code writes is not a session.
	if _, err := ParseClaudeCode(context.Background(), strings.NewReader("{\"a\":1}\nnot json\n")); err == nil {
		t.Fatal("a file of no session record was read as a session")
	}
}

// The project option keeps the sessions run in that directory or under it.
func TestClaudeCodeProjectOption(t *testing.T) {
	docs, filtered := ccDocs(t, map[string]string{OptionProject: "/tmp/loci-cc-fixture/project-other"})
	if len(docs) != 3 || len(filtered) != 2 || docs["Delegate: find the deploy script."] == nil {
		t.Fatalf("%d documents, filtered %v", len(docs), filtered)
	}
	for id, reason := range filtered {
		if reason != "other_project" || !strings.HasPrefix(id, "-tmp-loci-cc-fixture-project-app/") {
			t.Fatalf("%s filtered %s", id, reason)
		}
	}
	if docs, _ := ccDocs(t, map[string]string{OptionProject: "/tmp/loci-cc-fixture"}); len(docs) != 5 {
		t.Fatalf("a parent directory keeps %d sessions", len(docs))
	}
}

// The source declares its format and the agent's standard location, which
// an empty locator stands for.
func TestClaudeCodeInfoAndDefaultLocator(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".claude", "projects"), 0o700); err != nil {
		t.Fatal(err)
	}
	src := ClaudeCode()
	src.Home = home
	info := src.Info()
	if info.Name != "claude-code" || info.Format != "jsonl-2.1" || info.DefaultLocator != "~/.claude/projects" || !info.Capabilities.Incremental {
		t.Fatalf("%+v", info)
	}
	id, err := src.Resolve("", map[string]string{})
	if err != nil || id.Locator != filepath.Join(home, ".claude", "projects") || id.Adapter != "claude-code" {
		t.Fatalf("%+v %v", id, err)
	}
}

// A tool call's marker shows what it acted on: the command, the file, the
// pattern; other tools their input as compact JSON.
func TestClaudeCodeToolArgs(t *testing.T) {
	for _, c := range []struct{ name, input, want string }{
		{"Bash", `{"command":"git status","description":"x"}`, "git status"},
		{"Edit", `{"file_path":"/a/b.go","old_string":"x","new_string":"y"}`, "/a/b.go"},
		{"Write", `{"file_path":"/a/c.go","content":"package c"}`, "/a/c.go"},
		{"Grep", `{"pattern":"func main","path":"."}`, "func main"},
		{"TodoWrite", `{"todos": [ {"content":"a"} ]}`, `{"todos":[{"content":"a"}]}`},
		{"ExitPlanMode", `{}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := claudeToolArgs(c.name, json.RawMessage(c.input)); got != c.want {
				t.Fatalf("%s: %q", c.input, got)
			}
		})
	}
}

// Hand-made records of what print mode cannot make: a shell command the
// person ran (! mode) is a marker and its output is left out; an older
// version's summary record titles the session; redacted thinking is
// dropped.
func TestClaudeCodeShellModeAndSummary(t *testing.T) {
	f, err := os.Open("testdata/transcripts/claude-code/handmade/shell-mode-and-summary.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ParseClaudeCode(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, turn := range s.Turns {
		got = append(got, turn.Role+": "+turn.Text)
	}
	want := "user: [tool Bash: git log -1 --oneline]|user: Explain that commit.|assistant: It bumps the proxy port."
	if strings.Join(got, "|") != want || s.Title != "Checking the last commit" || s.Skipped != 0 || s.AgentVersion != "1.0.120" {
		t.Fatalf("%q title %q skipped %d version %s", got, s.Title, s.Skipped, s.AgentVersion)
	}
}

// Hand-made: older versions wrote a sub-agent's records into the session's
// own file (isSidechain): they are its turns, marked, and a result goes to
// the turn of the side that called the tool.
func TestClaudeCodeInlineSidechain(t *testing.T) {
	f, err := os.Open("testdata/transcripts/claude-code/handmade/sidechain-inline.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ParseClaudeCode(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range TurnUnits(s) {
		head, body, _ := strings.Cut(strings.TrimSpace(u), "\n")
		role, _, _ := ParseTurnHeader(head)
		got = append(got, role+": "+strings.ReplaceAll(body, "\n", " / "))
	}
	want := []string{
		"user: Find the flaky test.",
		"assistant: [tool Task: Hunt the flaky test]",
		"user (sub-agent): Run the suite",
		"assistant (sub-agent): [tool Bash: go test ./...] / [tool result: 13 B, error] / TestRace fails.",
		// The main side's result comes back after the sub-agent's turns.
		"assistant: [tool result: 15 B] / The flaky one is TestRace.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
