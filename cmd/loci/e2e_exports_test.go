package main_test

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/sources/exportgen"
)

// exportLeaks are what must never reach a drawer or the log from the export
// fixtures: reasoning, tool output, hidden context, attachments' text,
// abandoned branches, and the fake secrets.
var exportLeaks = []string{"REASONING-SENTINEL", "RECAP-SENTINEL", "TOOL-OUTPUT-SENTINEL", "BROWSE-OUTPUT-SENTINEL",
	"ABANDONED-BRANCH-SENTINEL", "CUSTOM-INSTRUCTIONS-SENTINEL", "HIDDEN-SYSTEM-SENTINEL", "ATTACHMENT-CONTENT-SENTINEL",
	"AKIAIOSFODNN7EXAMPLF", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"}

// The export-file sources through the real daemon: GET /api/sources shows
// them with their format; a ChatGPT export and a Claude.ai export mined
// into a wing, secrets redacted in text and tool arguments, reasoning and
// tool output absent, unknown records counted; a new export with one
// conversation continued files only that one; an over-size conversation
// filtered; a file over 128 MiB refused with nothing queued; nothing of a
// transcript in the log.
func TestExportSourcesEndToEnd(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	exp := filepath.Join(t.TempDir(), "chatgpt-export-2025-11-25")
	os.MkdirAll(exp, 0o755)
	fixture, err := os.ReadFile("../../sources/testdata/transcripts/chatgpt-export/conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	conv := filepath.Join(exp, "conversations.json")
	os.WriteFile(conv, fixture, 0o600)

	src := d.do("GET", "/api/sources", nil)
	formats := map[string]string{}
	for _, a := range src.body["adapters"].([]any) {
		m := a.(map[string]any)
		f, _ := m["format"].(string)
		formats[m["name"].(string)] = f
	}
	if formats["chatgpt-export"] != "conversations-2025" || formats["claude-export"] != "conversations-2025" {
		t.Fatalf("GET /api/sources: %s", src.raw)
	}

	mine := func(source, locator string) map[string]any {
		t.Helper()
		r := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "source": source, "locator": locator, "wing": "chats"})
		if r.status != 202 {
			t.Fatalf("mine %s: %d %s", source, r.status, r.raw)
		}
		j := waitJob(t, d, r.body["id"].(string), 60*time.Second, finished)
		if j["status"] != "completed" {
			t.Fatalf("mine %s: %v", source, j)
		}
		return j["result"].(map[string]any)
	}
	// room reads every current drawer of a room: name to content.
	room := func(name string) map[string]string {
		t.Helper()
		r := d.do("GET", "/api/wings/chats/rooms/"+name+"/drawers?limit=200", nil)
		if r.status != 200 {
			t.Fatalf("room %s: %d %s", name, r.status, r.raw)
		}
		out := map[string]string{}
		for _, p := range r.body["drawers"].([]any) {
			n := p.(map[string]any)["name"].(string)
			dr := d.do("GET", "/api/wings/chats/rooms/"+name+"/drawers/"+url.PathEscape(n), nil)
			if dr.status != 200 || get[string](dr.body, "source", "kind") != "transcript" {
				t.Fatalf("drawer %q: %d %s", n, dr.status, dr.raw)
			}
			out[n] = get[string](dr.body, "content")
		}
		return out
	}
	leaks := func(drawers map[string]string) {
		t.Helper()
		for n, c := range drawers {
			for _, s := range exportLeaks {
				if strings.Contains(c, s) {
					t.Errorf("drawer %q holds %s:\n%s", n, s, c)
				}
			}
		}
	}

	res := mine("chatgpt-export", exp)
	if res["documents"] != 3.0 || res["ingested"] != 3.0 || res["unknown_records"] != 1.0 || res["redacted"].(float64) < 2 {
		t.Fatalf("the ChatGPT export's mine: %v", res)
	}
	gpt := room("chatgpt")
	leaks(gpt)
	deploy := gpt["Deploy fails on the staging host"]
	if len(gpt) != 3 || !strings.Contains(deploy, "[tool python: import os os.environ['GITHUB_TOKEN'] = '[REDACTED:") ||
		!strings.Contains(deploy, "the key [REDACTED:aws_access_key_id]") || !strings.Contains(deploy, "[tool result: 1.6 KB]") ||
		!strings.Contains(deploy, "[user · 2025-11-25 10:01:00 UTC]\n[image]\nHere is the firewall dashboard.") {
		t.Fatalf("the ChatGPT drawers: %q", gpt)
	}
	s := d.do("POST", "/api/search", map[string]any{"text": "firewall dashboard port", "filter": map[string]any{"wing": "chats"}})
	if s.status != 200 || !strings.Contains(s.raw, "Deploy fails on the staging host") {
		t.Fatalf("search: %s", s.raw)
	}

	// The next export: the sourdough conversation continued, the others as
	// they were. Only it is discovered, and its drawer superseded.
	var convs []map[string]any
	json.Unmarshal(fixture, &convs)
	sour := convs[1]
	sour["update_time"] = sour["update_time"].(float64) + 2*86400
	mapping := sour["mapping"].(map[string]any)
	a2 := mapping["a2"].(map[string]any)
	a2["children"] = []string{"u3"}
	mapping["u3"] = map[string]any{"id": "u3", "parent": "a2", "children": []string{}, "message": map[string]any{
		"author": map[string]any{"role": "user"}, "create_time": sour["update_time"],
		"content": map[string]any{"content_type": "text", "parts": []string{"And how long should the bulk ferment take at 24 degrees?"}}}}
	sour["current_node"] = "u3"
	next, _ := json.Marshal(convs)
	os.WriteFile(conv, next, 0o600)
	res = mine("chatgpt-export", exp)
	if res["discovered"] != 1.0 || res["ingested"] != 1.0 || res["superseded"] != 1.0 || res["created"] != 0.0 {
		t.Fatalf("a new export with one conversation continued: %v", res)
	}
	gpt = room("chatgpt")
	leaks(gpt)
	if len(gpt) != 3 || !strings.Contains(gpt["Sourdough hydration"], "bulk ferment") || !strings.Contains(gpt["Sourdough hydration"], "70% hydration") {
		t.Fatalf("after the new export: %q", gpt)
	}
	if res = mine("chatgpt-export", exp); res["discovered"] != 0.0 {
		t.Fatalf("the same export again: %v", res)
	}

	// An over-size conversation is filtered, not an error.
	big, _ := json.Marshal(map[string]any{"id": "big-one", "title": "huge", "update_time": 1.8e9, "current_node": "u",
		"mapping": map[string]any{"u": map[string]any{"id": "u", "parent": nil, "children": []string{}, "message": map[string]any{
			"author": map[string]any{"role": "user"}, "create_time": 1.8e9,
			"content": map[string]any{"content_type": "text", "parts": []string{strings.Repeat("pasted log line ", 1<<20+1000)}}}}}})
	os.WriteFile(conv, append(append(next[:len(next)-1], ','), append(big, ']')...), 0o600)
	if res = mine("chatgpt-export", exp); res["discovered"] != 1.0 || res["filtered"] != 1.0 || res["ingested"] != 0.0 {
		t.Fatalf("an over-size conversation: %v", res)
	}

	// The Claude.ai export, into the same wing.
	claude, err := filepath.Abs("../../sources/testdata/transcripts/claude-export/conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	res = mine("claude-export", claude)
	if res["documents"] != 2.0 || res["ingested"] != 2.0 || res["unknown_records"] != 2.0 || res["redacted"].(float64) < 2 {
		t.Fatalf("the Claude.ai export's mine: %v", res)
	}
	cl := room("claude")
	leaks(cl)
	if b := cl["Borrow checker complaint"]; !strings.Contains(b, "[tool web_search: rust borrowed value does not live long enough [REDACTED:") ||
		!strings.Contains(b, "(my token is [REDACTED:") || !strings.Contains(b, "[attachment main.rs: 2.0 KB]") {
		t.Fatalf("the Claude drawers: %q", cl)
	}

	// A file over 128 MiB: refused at submission, nothing queued.
	huge := filepath.Join(t.TempDir(), "conversations.json")
	f, _ := os.Create(huge)
	f.WriteString("[")
	f.Truncate(128<<20 + 1)
	f.Close()
	mines := func() int {
		n := 0
		for _, j := range d.do("GET", "/api/jobs?limit=200", nil).body["jobs"].([]any) {
			if j.(map[string]any)["kind"] == "mine" {
				n++
			}
		}
		return n
	}
	before := mines()
	if before != 5 {
		t.Fatalf("%d mine jobs listed, 5 submitted", before)
	}
	r := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "source": "chatgpt-export", "locator": huge, "wing": "chats"})
	if r.status != 400 || r.code() != "loci::input::invalid" || !strings.Contains(r.raw, "at most 128 MiB") || r.body["help"] == "" {
		t.Fatalf("a file over 128 MiB: %d %s", r.status, r.raw)
	}
	if mines() != before {
		t.Fatal("a refused mine queued a job")
	}

	log := d.log.String()
	for _, s := range append(exportLeaks, "firewall dashboard", "bulk ferment", "borrow checker reject") {
		if strings.Contains(log, s) {
			t.Errorf("the daemon's log holds %q", s)
		}
	}
}

// A kill -9 during an export's mine resumes from the last committed batch:
// every conversation filed exactly once, none twice, the cursor at the
// end (a second mine finds nothing).
func TestExportMineResumesAfterKill9(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	exp := t.TempDir()
	f, err := os.Create(filepath.Join(exp, "conversations.json"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := exportgen.ChatGPT(f, 150*3<<10, 3<<10, 9)
	f.Close()
	if err != nil || n < 100 {
		t.Fatalf("%d conversations: %v", n, err)
	}
	slow := "LOCI_TEST_MINE_DELAY=25ms" // a batch of 64 takes 1.6 s
	d := start(t, home, palace, slow)
	job := map[string]any{"type": "mine", "source": "chatgpt-export", "locator": exp, "wing": "chats"}
	r := d.do("POST", "/api/jobs", job)
	if r.status != 202 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	id := r.body["id"].(string)
	at := waitJob(t, d, id, 60*time.Second, func(j map[string]any) bool {
		return get[float64](j, "progress", "current") > 0 || finished(j)
	})
	if finished(at) || get[float64](at, "progress", "current") >= float64(n) {
		t.Fatalf("the mine ended before the kill: %v", at)
	}
	d.cmd.Process.Kill()
	<-d.exited
	d = start(t, home, palace, slow)
	j := waitJob(t, d, id, 120*time.Second, finished)
	if j["status"] != "completed" || get[float64](j, "result", "documents") != float64(n) || get[float64](j, "result", "ingested") != float64(n) {
		t.Fatalf("the mine after kill -9: %v", j)
	}
	list := d.do("GET", "/api/wings/chats/rooms/chatgpt/drawers?limit=200", nil)
	names := map[string]int{}
	for _, p := range list.body["drawers"].([]any) {
		name := p.(map[string]any)["name"].(string)
		if names[name]++; names[name] > 1 {
			t.Fatalf("drawer %q twice after kill -9", name)
		}
	}
	room := d.do("GET", "/api/wings/chats/rooms/chatgpt", nil)
	if get[float64](room.body, "drawers") != get[float64](j, "result", "created") || len(names) < n {
		t.Fatalf("after kill -9: %d names for %d conversations, room %s, job %v", len(names), n, room.raw, j["result"])
	}
	r = d.do("POST", "/api/jobs", job)
	if again := waitJob(t, d, r.body["id"].(string), 60*time.Second, finished); get[float64](again, "result", "discovered") != 0 {
		t.Fatalf("the export mined again after the resumed mine: %v", again)
	}
}
