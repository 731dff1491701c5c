package sources

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// lineFormat is a test format: each line {"role","text","cwd"}; other
// shapes are unknown records.
var lineFormat = SessionFormat{Name: "test-agent", Version: "lines-1", DefaultDir: ".agent/sessions", Room: "test-agent",
	Match: func(rel string) bool { return strings.HasSuffix(rel, ".jsonl") },
	Parse: func(ctx context.Context, r io.Reader) (*Session, error) {
		s := &Session{Agent: "test-agent"}
		bad, err := JSONLines(ctx, r, func(n int, line []byte) error {
			var rec struct{ Role, Text, Cwd string }
			if json.Unmarshal(line, &rec) != nil || rec.Role == "" {
				s.Skipped++
				return nil
			}
			s.Project = rec.Cwd
			s.Turns = append(s.Turns, Turn{Role: rec.Role, Text: rec.Text, Time: time.Date(2026, 11, 25, 10, 0, n, 0, time.UTC)})
			return nil
		})
		s.Skipped += bad
		return s, err
	}}

func TestSessionFilesReadsCompleteLinesOnly(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".agent/sessions/p")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "s1.jsonl")
	os.WriteFile(file, []byte(`{"role":"user","text":"hello there","cwd":"/w/app"}`+"\n"+`{"kind":"unknown"}`+"\n"+
		`{"role":"assistant","text":"half writ`), 0o600)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a session"), 0o600)
	src := SessionFiles{Format: lineFormat, Home: home}
	id, err := src.Resolve("", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if id.Adapter != "test-agent" || id.Locator != filepath.Join(home, ".agent/sessions") {
		t.Fatalf("identity %+v", id)
	}
	refs, err := src.Discover(context.Background(), Run{ID: id}, nil)
	if err != nil || len(refs) != 1 || refs[0].ID != "p/s1.jsonl" {
		t.Fatalf("refs %+v %v", refs, err)
	}
	doc, err := src.Read(context.Background(), Run{ID: id}, refs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Units) != 1 || doc.Units[0] != "[user · 2026-11-25 10:00:01 UTC]\nhello there\n\n" || doc.Skipped != 1 || doc.Kind != "transcript" {
		t.Fatalf("the half-written line was read, or the unknown one not counted: %q skipped %d", doc.Units, doc.Skipped)
	}
	var origin map[string]any
	json.Unmarshal(doc.Origin, &origin)
	if origin["project"] != "/w/app" || origin["format"] != "test-agent/lines-1" || origin["first"] != "2026-11-25T10:00:01Z" {
		t.Fatalf("origin %s", doc.Origin)
	}
	// The line completed: the next read has both turns.
	f, _ := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("ten\"}\n")
	f.Close()
	if doc, _ = src.Read(context.Background(), Run{ID: id}, refs[0]); len(doc.Units) != 2 || !strings.Contains(doc.Units[1], "half written") {
		t.Fatalf("after the line completed: %q", doc.Units)
	}
	// A project option keeps only the sessions run under it.
	pid, err := src.Resolve("", map[string]string{OptionProject: "/w/other"})
	if err != nil || pid.Locator == id.Locator {
		t.Fatalf("the project option's identity %+v %v", pid, err)
	}
	if _, err := src.Read(context.Background(), Run{ID: pid}, refs[0]); err == nil {
		t.Fatal("a session of another project was read")
	} else if r, _ := IsFiltered(err); r != "other_project" {
		t.Fatalf("%v", err)
	}
	if _, err := src.Resolve("", map[string]string{OptionProject: "rel/dir"}); err == nil {
		t.Fatal("a relative project was taken")
	}
}

func TestTurnHeaderRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 3, 12, 0, time.UTC)
	for _, turn := range []Turn{{Role: "user", Time: at}, {Role: "assistant", Time: at, Sidechain: true}, {Role: "assistant"}} {
		role, when, ok := ParseTurnHeader(TurnHeader(turn))
		want := turn.Role
		if turn.Sidechain {
			want += " (sub-agent)"
		}
		if !ok || role != want || !when.Equal(turn.Time) {
			t.Fatalf("%+v: %q %v %v", turn, role, when, ok)
		}
	}
	if _, _, ok := ParseTurnHeader("[tool Bash: ls]"); ok {
		t.Fatal("a tool marker read as a turn header")
	}
	if got := ToolMarker("Bash", "git   status\n--short"); got != "[tool Bash: git status --short]" {
		t.Fatal(got)
	}
	if got := ToolMarker("Write", strings.Repeat("x", 500)); len([]rune(got)) > markerArgChars+14 || !strings.HasSuffix(got, "…]") {
		t.Fatal(got)
	}
	if got := ResultMarker(2048, true); got != "[tool result: 2.0 KB, error]" {
		t.Fatal(got)
	}
}

// bodies splits a transcript document's units into their roles and texts;
// every unit must start with a turn header carrying a time (the fixtures'
// are from 2025 on).
func bodies(t *testing.T, doc *Document) (roles, texts []string) {
	t.Helper()
	for _, u := range doc.Units {
		head, body, _ := strings.Cut(u, "\n")
		role, at, ok := ParseTurnHeader(head)
		if !ok || at.IsZero() || at.Year() < 2025 {
			t.Fatalf("a unit's header %q", head)
		}
		roles = append(roles, role)
		texts = append(texts, strings.TrimSpace(body))
	}
	return roles, texts
}

// One huge turn (a pasted log) keeps its start and says how much was left
// out: the session stays small enough to file, its other turns kept.
func TestHugeTurnIsCut(t *testing.T) {
	huge := strings.Repeat("é log line\n", 5<<20/12)
	units := TurnUnits(&Session{Turns: []Turn{{Role: "user", Text: "narwhal start"}, {Role: "user", Text: huge}, {Role: "assistant", Text: "narwhal end"}}})
	if len(units) != 3 || !strings.Contains(units[0], "narwhal start") || !strings.Contains(units[2], "narwhal end") {
		t.Fatalf("the other turns: %d units", len(units))
	}
	if len(units[1]) > MaxTurnBytes+100 || !strings.Contains(units[1], "[turn cut: ") || !utf8.ValidString(units[1]) {
		t.Fatalf("the huge turn: %d bytes, ends %q", len(units[1]), units[1][len(units[1])-60:])
	}
}
