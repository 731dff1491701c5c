package main_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/sources"
)

// conversation is a session's turns as a transcript source files them:
// one a minute from t0, alternating user and assistant, a question whose
// answer (port 7411) is the next turn's and holds none of its words.
func conversation(t0 time.Time) (*sources.Session, string) {
	texts := []string{
		"Morning. Let us look at the lighthouse pictures first.",
		"Sure, the lighthouse pictures are in the assets folder.",
		"Good. Now the other thing, since the proxy and the metrics exporter both run on this box and we keep tripping over them: " +
			strings.Repeat("we moved things around twice already and nobody wrote it down anywhere sensible. ", 3) +
			"Which port should the dashboard listen on?",
		"Let me check what else runs on this machine first; the proxy and the metrics exporter both bind numbers below eight " +
			"thousand, and the kernel hands out ephemeral ones from a range above. Use 7411 then.",
		"Thanks, noted. Next time we wire up the alerting.",
		"Agreed: alerting next, starting with the disk-full page.",
	}
	s := &sources.Session{ID: "s1", Agent: "claude-code", Project: "/work/app"}
	for i, text := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		s.Turns = append(s.Turns, sources.Turn{Role: role, Time: t0.Add(time.Duration(i) * time.Minute), Text: text})
	}
	return s, strings.Join(sources.TurnUnits(s), "")
}

// Finding things in conversations (issue 27, point 5), against the real
// daemon: a transcript drawer's search hit names the turn that matched
// (REST, the MCP answer, the CLI); the MCP answer clipped to its budget
// keeps the reply to the matching question; and a project's session-start
// hook carries the closing turns of its last session until a checkpoint
// is newer than the session's end.
func TestFindingThingsInConversations(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	t0 := time.Now().UTC().Truncate(time.Second).Add(-30 * time.Minute)
	_, content := conversation(t0)
	r := d.do("POST", "/api/wings/app/rooms/sessions/drawers", map[string]any{"content": content,
		"source": map[string]any{"kind": "transcript", "uri": "/home/a/.claude/projects/-work-app/s1.jsonl", "agent": "claude-code"}})
	if r.status != 201 {
		t.Fatalf("file the transcript: %s", r.raw)
	}
	id := get[string](r.body, "drawer", "id")
	asked := t0.Add(2 * time.Minute).Format(time.RFC3339)

	// REST: the hit names the question's turn.
	r = d.do("GET", "/api/search?ranking=lexical&q=which+port+should+the+dashboard+listen+on", nil)
	hits := get[[]any](r.body, "hits")
	if r.status != 200 || len(hits) != 1 {
		t.Fatalf("search: %s", r.raw)
	}
	turn := get[map[string]any](hits[0].(map[string]any), "turn")
	if turn["role"] != "user" || turn["at"] != asked || turn["sub_agent"] != nil {
		t.Fatalf("the hit's turn: %v", turn)
	}

	// MCP: the brief hit names it too, and its window, clipped to the
	// budget, holds the answer in the next turn.
	s := mcpSession(t, d)
	text := toolText(t, s, "loci_search", map[string]any{"query": "which port should the dashboard listen on", "ranking": "lexical",
		"max_bytes": 700})
	var brief struct {
		Hits []struct {
			briefHit
			Turn *struct {
				Role string `json:"role"`
				At   string `json:"at"`
			} `json:"turn"`
		} `json:"hits"`
	}
	if err := json.Unmarshal([]byte(text), &brief); err != nil || len(brief.Hits) != 1 {
		t.Fatalf("MCP search: %s", text)
	}
	h := brief.Hits[0]
	if h.Turn == nil || h.Turn.Role != "user" || h.Turn.At != asked || !h.Truncated || len(text) > 700 {
		t.Fatalf("the MCP hit: %s", text)
	}
	if !strings.Contains(h.Content, "Which port should the dashboard listen on?") || !strings.Contains(h.Content, "Use 7411 then.") {
		t.Fatalf("the clipped window should hold the question and its answer: %q", h.Content)
	}

	// The CLI's title line says who said it and when (local time).
	out, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "search", "--ranking", "lexical", "which port should the dashboard listen on"}, []string{"TZ=UTC"})
	if code != 0 || !strings.Contains(out, "(user, "+t0.Add(2*time.Minute).Format("2006-01-02 15:04")+")") {
		t.Fatalf("loci search: %d %q %q", code, out, errOut)
	}

	// The project's session-start hook carries the session's closing
	// turns (no checkpoint is newer than its end).
	proj := writeProject(t, "wing = \"app\"\n")
	hook := func() string {
		t.Helper()
		out, errOut, code, _ := runIn(proj, home, jsonText(hookInputs("claude-code", "session-start", proj)),
			[]string{"hook", "claude-code", "session-start"}, "LOCI_PALACE_PATH="+palace)
		if code != 0 || errOut != "" {
			t.Fatalf("hook: %d %q", code, errOut)
		}
		var got struct {
			Out struct {
				Context string `json:"additionalContext"`
			} `json:"hookSpecificOutput"`
		}
		if out != "" {
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("hook output: %q", out)
			}
		}
		return got.Out.Context
	}
	ended := t0.Add(5 * time.Minute).Format(time.RFC3339)
	ctxText := hook()
	if !strings.Contains(ctxText, "How the last session ended (claude-code), its last 6 turns, to "+ended+":") ||
		!strings.Contains(ctxText, "Agreed: alerting next, starting with the disk-full page.") ||
		!strings.Contains(ctxText, "[user · "+t0.Format("2006-01-02 15:04:05")+" UTC]") {
		t.Fatalf("the session-start context lacks the closing turns:\n%s", ctxText)
	}
	out, errOut, code = runCLI(home, "", []string{"--addr", d.addr, "wake-up", "--agent", "claude-code", "--wing", "app"}, nil)
	if code != 0 || !strings.Contains(out, "How the last session ended (claude-code), its last 6 turns, to "+ended+":\n[user · ") ||
		!strings.Contains(out, "Use 7411 then.") || strings.Contains(out, "nothing to wake up to") {
		t.Fatalf("loci wake-up: %d %q %q", code, out, errOut)
	}
	r = d.do("GET", "/api/wake-up?agent_identity=claude-code&wing=app", nil)
	if ls := get[map[string]any](r.body, "last_session"); ls == nil || ls["ended"] != ended || fmt.Sprint(ls["drawers"]) != "["+id+"]" ||
		get[float64](r.body, "bytes") != float64(len(get[string](ls, "content"))) {
		t.Fatalf("wake-up: %s", r.raw)
	}

	// A checkpoint after the session's end: the wake-up gives it instead.
	r = d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": map[string]any{"items": []any{
		map[string]any{"destination": "project", "wing": "app", "content": "The dashboard listens on 7411; alerting is next.", "tags": []string{},
			"source": map[string]any{"kind": "manual", "agent": "claude-code"}}}}})
	if r.status != 202 {
		t.Fatalf("checkpoint: %s", r.raw)
	}
	if j := waitJob(t, d, get[string](r.body, "id"), 20*time.Second, finished); j["status"] != "completed" {
		t.Fatalf("checkpoint job: %v", j)
	}
	ctxText = hook()
	if strings.Contains(ctxText, "How the last session ended") || !strings.Contains(ctxText, "The dashboard listens on 7411; alerting is next.") {
		t.Fatalf("after a checkpoint:\n%s", ctxText)
	}
}
