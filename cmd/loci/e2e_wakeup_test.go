package main_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Wake-up is scoped to the agent: its own diary (the given wing's, else
// its newest anywhere) and the checkpoints it signed, then, marked, the
// ones nobody signed; never another agent's; wing narrows both (issue 36,
// point 3). Through REST, MCP and the CLI.
func TestWakeUpIsScopedToTheAgent(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	checkpoint := func(wing, agent, content string) {
		t.Helper()
		src := map[string]any{"kind": "manual"}
		if agent != "" {
			src["agent"] = agent
		}
		r := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": map[string]any{"items": []any{
			map[string]any{"destination": "project", "wing": wing, "content": content, "tags": []string{}, "source": src}}}})
		if r.status != 202 {
			t.Fatalf("checkpoint: %s", r.raw)
		}
		if j := waitJob(t, d, r.body["id"].(string), 20*time.Second, finished); j["status"] != "completed" {
			t.Fatalf("checkpoint job: %v", j)
		}
		time.Sleep(2 * time.Millisecond)
	}
	diary := func(wing, agent, content string) {
		t.Helper()
		if r := d.do("POST", "/api/diary", map[string]any{"agent_identity": agent, "wing": wing, "content": content}); r.status != 201 {
			t.Fatalf("diary: %s", r.raw)
		}
		time.Sleep(2 * time.Millisecond)
	}
	checkpoint("billing", "alice", "Alice: the invoice totals are rounded per line.")
	checkpoint("billing", "bob", "Bob: the refund queue is drained nightly.")
	checkpoint("search", "alice", "Alice: the search index is rebuilt at start.")
	checkpoint("search", "", "Nobody signed: the search page is slow on phones.")
	diary("billing", "alice", "Alice's billing diary entry.")
	diary("search", "alice", "Alice's newest diary entry, in search.")
	diary("search", "bob", "Bob's diary entry.")

	type item struct {
		Content      string `json:"content"`
		Unattributed bool   `json:"unattributed"`
	}
	type wake struct {
		Diary *struct {
			Content string `json:"content"`
		} `json:"diary"`
		Items []item `json:"items"`
	}
	read := func(q string) wake {
		t.Helper()
		r := d.do("GET", "/api/wake-up?"+q, nil)
		var w wake
		if r.status != 200 || json.Unmarshal([]byte(r.raw), &w) != nil {
			t.Fatalf("wake-up %s: %d %s", q, r.status, r.raw)
		}
		return w
	}
	contents := func(w wake) string {
		var out []string
		for _, it := range w.Items {
			c := it.Content
			if it.Unattributed {
				c += " [unattributed]"
			}
			out = append(out, c)
		}
		return strings.Join(out, " | ")
	}

	// Alice, every wing: her newest diary entry anywhere, her two
	// checkpoints newest first, then the unsigned one, marked; never Bob's.
	w := read("agent_identity=alice")
	if w.Diary == nil || w.Diary.Content != "Alice's newest diary entry, in search." {
		t.Fatalf("alice's diary without a wing: %+v", w.Diary)
	}
	if got, want := contents(w), "Alice: the search index is rebuilt at start. | Alice: the invoice totals are rounded per line. | Nobody signed: the search page is slow on phones. [unattributed]"; got != want {
		t.Fatalf("alice's checkpoints:\n got %s\nwant %s", got, want)
	}
	// The wing narrows both.
	w = read("agent_identity=alice&wing=billing")
	if w.Diary == nil || w.Diary.Content != "Alice's billing diary entry." || contents(w) != "Alice: the invoice totals are rounded per line." {
		t.Fatalf("alice in billing: %+v %s", w.Diary, contents(w))
	}
	// An agent that never wrote gets only what nobody signed, marked.
	w = read("agent_identity=carol")
	if w.Diary != nil || contents(w) != "Nobody signed: the search page is slow on phones. [unattributed]" {
		t.Fatalf("carol: %+v %s", w.Diary, contents(w))
	}
	// An unknown wing is refused, not answered with everything.
	if r := d.do("GET", "/api/wake-up?agent_identity=alice&wing=nowhere", nil); r.status != 404 || r.code() != "loci::palace::wing_not_found" {
		t.Fatalf("unknown wing: %d %s", r.status, r.raw)
	}

	// MCP answers the same.
	s := mcpSession(t, d)
	ans, isErr := callTool(t, s, "loci_wake_up", map[string]any{"agent_identity": "bob"})
	b, _ := json.Marshal(ans)
	res := string(b)
	if isErr || !strings.Contains(res, "the refund queue") || strings.Contains(res, "Alice:") || !strings.Contains(res, "Bob's diary entry.") {
		t.Fatalf("MCP wake-up for bob: %s", res)
	}
	// And the CLI marks the unsigned one.
	out, _, code := d.cli("", "wake-up", "--agent", "carol")
	if code != 0 || !strings.Contains(out, "unattributed") || strings.Contains(out, "Alice:") || strings.Contains(out, "Bob:") {
		t.Fatalf("loci wake-up --agent carol: %d %s", code, out)
	}
}
