package main_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A checkpoint job's result names the facts its items are about, so an
// agent can supersede, invalidate, link or read the history of a fact it
// stated without a graph read it has no tool for (found trying loci as an
// agent: loci_fact_history needed an id no MCP tool showed).
func TestCheckpointResultNamesItsFacts(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	s := mcpSession(t, d)
	checkpoint := func(items ...map[string]any) map[string]any {
		t.Helper()
		for _, it := range items {
			it["destination"], it["tags"], it["source"] = "project", []string{}, map[string]any{"kind": "manual"}
		}
		job, isErr := callTool(t, s, "loci_checkpoint", map[string]any{"payload": map[string]any{"items": items}})
		if isErr {
			t.Fatalf("checkpoint: %v", job)
		}
		return waitJob(t, d, job["id"].(string), 20*time.Second, finished)
	}
	facts := func(j map[string]any) []map[string]any {
		t.Helper()
		var out []map[string]any
		b, _ := json.Marshal(get[[]any](j, "result", "facts"))
		_ = json.Unmarshal(b, &out)
		return out
	}
	leads := map[string]any{"op": "add", "subject": map[string]any{"name": "Alice", "kind": "person"}, "predicate": "leads",
		"object": map[string]any{"name": "billing project", "kind": "project"}}
	first := facts(checkpoint(
		map[string]any{"content": "A note with no fact."},
		map[string]any{"content": "Alice leads the billing project.", "fact": leads}))
	if len(first) != 1 || first[0]["item"] != float64(1) || first[0]["op"] != "add" || first[0]["relationship_id"] == "" {
		t.Fatalf("first checkpoint's facts: %v", first)
	}
	id := first[0]["relationship_id"].(string)
	// The same fact stated again is more evidence of it: the same id.
	again := facts(checkpoint(map[string]any{"content": "As said: Alice leads the billing project.", "fact": leads}))
	if len(again) != 1 || again[0]["relationship_id"] != id {
		t.Fatalf("the same fact again: %v, want %s", again, id)
	}
	// The id works where the tools ask for one.
	hist, isErr := callTool(t, s, "loci_fact_history", map[string]any{"relationship_id": id})
	if isErr || !strings.Contains(fmt.Sprint(hist), "leads") {
		t.Fatalf("loci_fact_history: %v", hist)
	}
	moved := facts(checkpoint(map[string]any{"content": "Bob leads the billing project now.", "fact": map[string]any{"op": "supersede",
		"relationship_id": id, "object": map[string]any{"name": "billing project", "kind": "project"}, "reason": "handover"}}))
	if len(moved) != 1 || moved[0]["op"] != "supersede" || moved[0]["relationship_id"] == id || moved[0]["relationship_id"] == "" {
		t.Fatalf("supersede's fact: %v", moved)
	}
}
