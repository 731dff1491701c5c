package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSession connects a real MCP client (the SDK's, streamable HTTP).
func mcpSession(t *testing.T, d *daemon) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "loci-test", Version: "1"}, nil)
	s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + d.addr + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("mcp connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// callTool calls a tool and returns its JSON answer (compact, checked)
// and whether it is an error result.
func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content items", name, len(res.Content))
	}
	text := res.Content[0].(*mcp.TextContent).Text
	// Every tool answers compact JSON (issue 36: an agent reads every
	// byte; the spec's pretty printing was about 30% of an answer).
	if strings.Contains(text, "\n") {
		t.Fatalf("%s: not compact JSON: %s", name, text)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%s: not a JSON object: %s", name, text)
	}
	return out, res.IsError
}

// wantError checks an error result's {error, code, help} body.
func wantError(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, code, mention string) {
	t.Helper()
	out, isErr := callTool(t, s, name, args)
	if !isErr || out["code"] != code || out["help"] == "" || out["error"] == "" || !strings.Contains(strings.ToLower(out["error"].(string)+" "+out["help"].(string)), mention) {
		t.Fatalf("%s %v: want error %s mentioning %q, got %v (error result %v)", name, args, code, mention, out, isErr)
	}
}

// TestMCPSession walks every tool of the spec's table through a real MCP
// client session: names, annotations, instructions, answers, error results
// and memory modes per session.
func TestMCPSession(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	if r := d.do("POST", "/api/wings/projects/rooms/ops/drawers", map[string]any{"name": "deploy", "content": "Deploys happen on Fridays after the review."}); r.status != 201 {
		t.Fatalf("file: %s", r.raw)
	}
	s := mcpSession(t, d)

	// The tool list and its annotations, exactly the spec's table.
	type ann struct{ ro, destructive, idem, open bool }
	read, search, control := ann{true, false, true, false}, ann{true, false, true, true}, ann{false, false, true, false}
	want := map[string]ann{
		"loci_set_mode": control, "loci_status": read, "loci_search": search, "loci_recall": search,
		"loci_history": read, "loci_fact_history": read, "loci_wake_up": read,
		"loci_diary_write": {false, false, false, false}, "loci_diary_read": read,
		"loci_checkpoint": {false, true, false, false}, "loci_mine": {false, false, true, true},
		"loci_miner_list": read, "loci_miner_get": read, "loci_source_config_list": read, "loci_source_config_get": read,
		"loci_trigger_list": read, "loci_trigger_get": read, "loci_audit": {false, false, false, false},
		"loci_repair": {false, true, false, false}, "loci_job_list": read, "loci_job_get": read,
		"loci_job_pause": control, "loci_job_resume": control, "loci_job_cancel": {false, true, true, false}, "loci_job_retry": control,
	}
	tools, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != len(want) {
		t.Fatalf("%d tools, want %d", len(tools.Tools), len(want))
	}
	instructions := s.InitializeResult().Instructions
	args := map[string][]string{}
	for _, tl := range tools.Tools {
		w, ok := want[tl.Name]
		a := tl.Annotations
		if !ok || a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
			t.Fatalf("tool %s: unexpected or without every annotation: %+v", tl.Name, a)
		}
		if got := (ann{a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, *a.OpenWorldHint}); got != w {
			t.Errorf("%s annotations %+v, want %+v", tl.Name, got, w)
		}
		if !strings.Contains(instructions, tl.Name) {
			t.Errorf("instructions do not mention %s", tl.Name)
		}
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		b, _ := json.Marshal(tl.InputSchema)
		json.Unmarshal(b, &schema)
		for p := range schema.Properties {
			args[tl.Name] = append(args[tl.Name], p)
		}
		slices.Sort(args[tl.Name])
	}
	for name, wantArgs := range map[string][]string{
		// The spec's arguments, known_at, the record-time option issue 15
		// adds to search and recall, and the byte budgets of issue 36.
		"loci_search":       {"as_of", "expand", "from", "include_historical", "known_at", "limit", "max_bytes", "max_hit_bytes", "profile", "query", "ranking", "room", "source_kind", "tags", "until", "wing"},
		"loci_recall":       {"as_of", "expand", "from", "include_historical", "known_at", "limit", "max_bytes", "max_hit_bytes", "profile", "query", "ranking", "source_kind", "tags", "until", "wing"},
		"loci_fact_history": {"as_of", "known_at", "relationship_id"},
		"loci_wake_up":      {"agent_identity", "max_bytes", "max_items", "wing"},
		"loci_checkpoint":   {"emergency", "payload"},
		"loci_mine":         {"full", "locator", "options", "path", "source", "wing"},
		"loci_repair":       {"based_on_job", "dry_run"},
		"loci_job_list":     {"automatic", "status"},
		"loci_job_cancel":   {"id"},
		"loci_status":       nil,
	} {
		if !slices.Equal(args[name], wantArgs) {
			t.Errorf("%s arguments %v, want %v", name, args[name], wantArgs)
		}
	}

	// Reads.
	st, isErr := callTool(t, s, "loci_status", nil)
	if isErr || st["version"] == nil || st["mode"] != "full" || st["counts"] == nil {
		t.Fatalf("status: %v", st)
	}
	res, isErr := callTool(t, s, "loci_search", map[string]any{"query": "deploying fridays", "limit": 5})
	hits, _ := res["hits"].([]any)
	if isErr || len(hits) != 1 || hits[0].(map[string]any)["content"] != "Deploys happen on Fridays after the review." {
		t.Fatalf("search: %v", res)
	}
	// A hit says where it lives by name: no second call to name its wing and room.
	if h := hits[0].(map[string]any); h["wing"] != "projects" || h["room"] != "ops" {
		t.Fatalf("the hit's wing and room: %v", h)
	}
	drawerID := hits[0].(map[string]any)["id"].(string)
	if res, isErr := callTool(t, s, "loci_recall", map[string]any{"query": "review", "wing": "projects"}); isErr || len(res["hits"].([]any)) != 1 ||
		res["hits"].([]any)[0].(map[string]any)["wing"] != "projects" || res["hits"].([]any)[0].(map[string]any)["room"] != "ops" {
		t.Fatalf("recall: %v", res)
	}
	if res, isErr := callTool(t, s, "loci_history", map[string]any{"drawer_id": drawerID}); isErr || len(res["versions"].([]any)) != 1 {
		t.Fatalf("history: %v", res)
	}
	// The same search over REST gives the same hits.
	rest := d.do("GET", "/api/search?q=deploying+fridays&limit=5", nil)
	if strings.Join(hitNames(rest), ",") != "deploy" {
		t.Fatalf("REST search: %s", rest.raw)
	}

	// Writes and jobs.
	if res, isErr := callTool(t, s, "loci_diary_write", map[string]any{"agent_identity": "claude", "wing": "projects", "content": "Learned the deploy day."}); isErr || res["created"] != true {
		t.Fatalf("diary write: %v", res)
	}
	if res, isErr := callTool(t, s, "loci_diary_read", map[string]any{"agent_identity": "claude", "wing": "projects"}); isErr || len(res["entries"].([]any)) != 1 {
		t.Fatalf("diary read: %v", res)
	}
	if res, isErr := callTool(t, s, "loci_wake_up", map[string]any{"agent_identity": "claude", "wing": "projects"}); isErr || res["diary"] == nil {
		t.Fatalf("wake up: %v", res)
	}
	payload := map[string]any{"items": []any{map[string]any{"destination": "project", "content": "Rollbacks need the on-call engineer.",
		"tags": []string{}, "source": map[string]any{"kind": "transcript"}}}}
	job, isErr := callTool(t, s, "loci_checkpoint", map[string]any{"payload": payload})
	if isErr || job["kind"] != "checkpoint" || job["id"] == nil {
		t.Fatalf("checkpoint (object): %v", job)
	}
	b, _ := json.Marshal(payload)
	if job2, isErr := callTool(t, s, "loci_checkpoint", map[string]any{"payload": string(b), "emergency": true}); isErr || job2["kind"] != "checkpoint" {
		t.Fatalf("checkpoint (JSON string): %v", job2)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		j, _ := callTool(t, s, "loci_job_get", map[string]any{"id": job["id"]})
		if j["status"] == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint job: %v", j)
		}
	}
	// Over MCP a transcript source kind is stored as other.
	if r := d.do("GET", "/api/search?q=rollbacks+engineer", nil); !strings.Contains(r.raw, `"other"`) {
		t.Fatalf("MCP source kind: %s", r.raw)
	}
	if res, isErr := callTool(t, s, "loci_job_list", map[string]any{"status": "completed"}); isErr || len(res["jobs"].([]any)) < 1 {
		t.Fatalf("job list: %v", res)
	}
	audit, isErr := callTool(t, s, "loci_audit", map[string]any{"wing": "projects"})
	if isErr || audit["kind"] != "audit" {
		t.Fatalf("audit: %v", audit)
	}
	if res, isErr := callTool(t, s, "loci_repair", nil); isErr || res["kind"] != "repair" {
		t.Fatalf("repair: %v", res)
	}
	wantError(t, s, "loci_job_pause", map[string]any{"id": job["id"]}, "loci::jobs::transition_invalid", "")
	wantError(t, s, "loci_job_resume", map[string]any{"id": job["id"]}, "loci::jobs::transition_invalid", "")
	wantError(t, s, "loci_job_retry", map[string]any{"id": job["id"]}, "loci::jobs::transition_invalid", "")
	wantError(t, s, "loci_job_cancel", map[string]any{"id": "not-a-uuid"}, "loci::jobs::id_invalid", "")
	wantError(t, s, "loci_job_get", map[string]any{"id": "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a"}, "loci::jobs::not_found", "")

	// Bad arguments are error results naming the argument.
	wantError(t, s, "loci_search", map[string]any{"limit": 5}, "loci::input::invalid", "query")
	wantError(t, s, "loci_search", map[string]any{"query": "x", "colour": "red"}, "loci::input::invalid", "colour")
	wantError(t, s, "loci_search", map[string]any{"query": "x", "limit": 500}, "loci::input::invalid", "limit")
	wantError(t, s, "loci_search", map[string]any{"query": "x", "as_of": "2026-01-01", "include_historical": true}, "loci::input::invalid", "combined")
	wantError(t, s, "loci_checkpoint", map[string]any{"payload": "{not json"}, "loci::input::invalid", "payload")
	wantError(t, s, "loci_history", map[string]any{"drawer_id": "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a"}, "loci::palace::drawer_not_found", "")
	wantError(t, s, "loci_mine", map[string]any{"path": "relative/dir"}, "loci::input::invalid", "absolute")
	wantError(t, s, "loci_mine", map[string]any{"path": "/tmp", "source": "git"}, "loci::input::invalid", "exactly one")
	wantError(t, s, "loci_mine", map[string]any{"path": "/no/such/dir"}, "loci::input::invalid", "cannot be read")
	wantError(t, s, "loci_mine", map[string]any{"path": "/tmp", "options": map[string]any{"depth": "2"}}, "loci::input::invalid", "accepts: dir, prune, since")
	wantError(t, s, "loci_fact_history", map[string]any{"relationship_id": "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a"}, "loci::graph::relationship_not_found", "no relationship")
	wantError(t, s, "loci_trigger_get", map[string]any{"name": "nightly"}, "loci::trigger::not_found", "no trigger")
	if list, isErr := callTool(t, s, "loci_trigger_list", nil); isErr || list["triggers"] == nil || list["webhook"] == nil {
		t.Fatalf("loci_trigger_list: %v", list)
	}
	wantError(t, s, "loci_miner_get", map[string]any{"name": "files"}, "loci::miner::not_found", "no miner")
	if list, isErr := callTool(t, s, "loci_miner_list", nil); isErr || list["miners"] == nil {
		t.Fatalf("loci_miner_list: %v", list)
	}
	wantError(t, s, "loci_set_mode", map[string]any{"mode": "sleepy"}, "loci::input::invalid", "mode")

	// Modes are per session: this one goes read-only, a second stays full.
	if res, isErr := callTool(t, s, "loci_set_mode", map[string]any{"mode": "read_only"}); isErr || res["mode"] != "read_only" {
		t.Fatalf("set mode: %v", res)
	}
	wantError(t, s, "loci_diary_write", map[string]any{"agent_identity": "claude", "wing": "projects", "content": "x"}, "loci::mode::forbidden", "loci_set_mode")
	wantError(t, s, "loci_checkpoint", map[string]any{"payload": payload}, "loci::mode::forbidden", "")
	if _, isErr := callTool(t, s, "loci_search", map[string]any{"query": "deploy"}); isErr {
		t.Fatal("read_only refused a search")
	}
	if st, _ := callTool(t, s, "loci_status", nil); st["mode"] != "read_only" {
		t.Fatalf("status mode: %v", st["mode"])
	}
	other := mcpSession(t, d)
	if _, isErr := callTool(t, other, "loci_diary_write", map[string]any{"agent_identity": "claude", "wing": "projects", "content": "From the second session."}); isErr {
		t.Fatal("a second session inherited the first one's mode")
	}
	callTool(t, s, "loci_set_mode", map[string]any{"mode": "disabled"})
	wantError(t, s, "loci_search", map[string]any{"query": "deploy"}, "loci::mode::forbidden", "")
	if _, isErr := callTool(t, s, "loci_job_list", nil); isErr {
		t.Fatal("job control is never mode-gated")
	}

	// Plain GET without the event-stream Accept: 406; a foreign Host is
	// refused even on an otherwise valid request.
	r, _ := http.Get("http://" + d.addr + "/mcp")
	if r.StatusCode != http.StatusNotAcceptable {
		t.Fatalf("plain GET /mcp: %d", r.StatusCode)
	}
	r.Body.Close()
	req, _ := http.NewRequest("POST", "http://"+d.addr+"/mcp", strings.NewReader(`{}`))
	req.Host = "attacker.example"
	req.Header.Set("Accept", "application/json, text/event-stream")
	r, err = http.DefaultClient.Do(req)
	if err != nil || r.StatusCode != http.StatusBadRequest {
		t.Fatalf("foreign Host: %v %v", r, err)
	}
	r.Body.Close()
}
