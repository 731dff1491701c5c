package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolText calls a tool and returns its answer's text as sent.
func toolText(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s %v: %v %+v", name, args, err, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// mineRepository mines this repository's own tree into wing loci and
// waits for the job.
func mineRepository(t *testing.T, d *daemon) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	r := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "path": root, "wing": "loci"})
	if r.status != 202 {
		t.Fatalf("mine: %s", r.raw)
	}
	if j := waitJob(t, d, get[string](r.body, "id"), 3*time.Minute, finished); j["status"] != "completed" {
		t.Fatalf("mine job: %v", j)
	}
}

// briefHit is a hit of the MCP answer.
type briefHit struct {
	ID        string `json:"id"`
	Wing      string `json:"wing"`
	Room      string `json:"room"`
	Name      string `json:"name"`
	Document  string `json:"document"`
	Chunk     int    `json:"chunk"`
	ValidFrom string `json:"valid_from"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated"`
	FullBytes int    `json:"full_bytes"`
	Window    []int  `json:"window"`
}

// An agent's search answer fits its context (issue 36, points 1 and 2):
// on this repository mined into a palace, the default MCP answer for ten
// hits is compact, at most 8 KB, each hit says where it is in words
// (wing, room, the document's path and the chunk's number) and a clipped
// hit is the verbatim window around the passage that matched, with the
// drawer's length and the window's offsets, its whole text one
// loci_history away. REST stays verbatim unless asked; both take
// max_bytes and max_hit_bytes, and refuse bad ones.
func TestSearchAnswersFitAnAgentsContext(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	mineRepository(t, d)
	s := mcpSession(t, d)

	for query, words := range map[string]*regexp.Regexp{
		"job queue": regexp.MustCompile(`(?i)\bjobs?\b|\bqueue`),
		"how does the daemon recover its jobs after a crash": regexp.MustCompile(`(?i)\bdaemons?\b|\brecover|\bjobs?\b|\bcrash`),
	} {
		text := toolText(t, s, "loci_search", map[string]any{"query": query})
		t.Logf("%q: %d bytes", query, len(text))
		if len(text) > 8192 {
			t.Errorf("%q: the default answer is %d bytes, over 8192", query, len(text))
		}
		if strings.Contains(text, "\n") {
			t.Errorf("%q: the answer is not compact JSON: %.300s", query, text)
		}
		for _, field := range []string{`"wing_id"`, `"room_id"`, `"provenance"`, `"created_at"`, `"signals"`, `"query"`} {
			if strings.Contains(text, field) {
				t.Errorf("%q: the brief answer sends %s", query, field)
			}
		}
		var out struct {
			Ranking string     `json:"ranking"`
			Hits    []briefHit `json:"hits"`
			Omitted int        `json:"omitted"`
		}
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatalf("%q: %v: %s", query, err, text)
		}
		if len(out.Hits) != 10 || out.Omitted != 0 {
			t.Fatalf("%q: %d hits, %d omitted: %s", query, len(out.Hits), out.Omitted, text)
		}
		clipped := 0
		for _, h := range out.Hits {
			if h.Wing != "loci" || h.Room != "files" || h.Document == "" || h.Chunk < 1 || h.ValidFrom == "" {
				t.Errorf("%q: hit %s does not say where it is: %+v", query, h.ID, h)
			}
			if h.Name == "" && h.Chunk < 2 {
				t.Errorf("%q: an unnamed chunk numbered %d: %+v", query, h.Chunk, h)
			}
			if !h.Truncated {
				continue
			}
			clipped++
			hist, isErr := callTool(t, s, "loci_history", map[string]any{"drawer_id": h.ID})
			// The whole drawer, once, by name: the answer costs little
			// beyond the drawer's own text.
			full := ""
			for _, v := range get[[]any](hist, "versions") {
				if v := v.(map[string]any); v["id"] == h.ID {
					full, _ = v["content"].(string)
				}
			}
			// Measured as sent against the content as JSON must carry it
			// (quotes, newlines and tabs escaped; the answer does not
			// escape HTML): json.Marshal here would add 5 bytes for
			// every <, > and & that the daemon never sends.
			sent := toolText(t, s, "loci_history", map[string]any{"drawer_id": h.ID})
			var enc strings.Builder
			je := json.NewEncoder(&enc)
			je.SetEscapeHTML(false)
			je.Encode(full)
			if len(get[[]any](hist, "versions")) == 1 && len(sent) > enc.Len()+400 || hist["wing"] != h.Wing || hist["room"] != h.Room {
				t.Errorf("%q: loci_history of %s answers %d bytes for %d of content, %d as JSON (wing %v, room %v)", query, h.ID, len(sent), len(full), enc.Len(), hist["wing"], hist["room"])
			}
			if isErr || len(full) != h.FullBytes || len(h.Window) != 2 || h.Window[0] < 0 || h.Window[1] > len(full) ||
				full[h.Window[0]:h.Window[1]] != h.Content {
				t.Fatalf("%q: clipped hit %s is not the verbatim window %v of its %d bytes (history has %d)", query, h.ID, h.Window, h.FullBytes, len(full))
			}
			if words.MatchString(full) && !words.MatchString(h.Content) {
				t.Errorf("%q: clipped hit %s (%s #%d) left out the passage that matched: %q", query, h.ID, h.Document, h.Chunk, h.Content)
			}
		}
		if clipped == 0 {
			t.Errorf("%q: no hit was clipped; the test proves nothing: %s", query, text)
		}
	}
	// The budget is the caller's: smaller, larger, one hit's share.
	if text := toolText(t, s, "loci_recall", map[string]any{"query": "job queue", "max_bytes": 2048, "wing": "loci"}); len(text) > 2048 || !strings.Contains(text, `"hits":[{`) {
		t.Fatalf("recall within 2048 bytes: %d bytes: %s", len(text), text)
	}
	var small struct {
		Hits []briefHit `json:"hits"`
	}
	json.Unmarshal([]byte(toolText(t, s, "loci_search", map[string]any{"query": "job queue", "max_hit_bytes": 200, "max_bytes": 100000})), &small)
	for _, h := range small.Hits {
		if len(h.Content) > 200 || (h.FullBytes > 200) != h.Truncated {
			t.Fatalf("max_hit_bytes 200: hit of %d bytes (truncated %v, full %d)", len(h.Content), h.Truncated, h.FullBytes)
		}
	}
	wantError(t, s, "loci_search", map[string]any{"query": "job", "max_bytes": 100}, "loci::input::invalid", "max_bytes")
	wantError(t, s, "loci_search", map[string]any{"query": "job", "max_hit_bytes": 10}, "loci::input::invalid", "max_hit_bytes")

	// An agent learns the wings' names from loci_status.
	st, _ := callTool(t, s, "loci_status", nil)
	wings, _ := st["wings"].([]any)
	if len(wings) != 1 || get[string](wings[0].(map[string]any), "name") != "loci" || get[float64](wings[0].(map[string]any), "drawers") < 100 {
		t.Fatalf("status wings: %v", st["wings"])
	}

	// REST: verbatim by default, every hit in words; budgets when asked.
	r := d.do("GET", "/api/search?q=job+queue", nil)
	if r.status != 200 || strings.Contains(r.raw, `"truncated"`) || len(r.raw) < 16384 {
		t.Fatalf("REST default: %d, %d bytes", r.status, len(r.raw))
	}
	r = d.do("GET", "/api/search?q=badger+transaction&limit=50", nil)
	unnamed := 0
	for _, x := range get[[]any](r.body, "hits") {
		h := x.(map[string]any)
		if h["document"] == nil || get[float64](h, "chunk") < 1 {
			t.Fatalf("REST hit without document and chunk: %v", h["id"])
		}
		if h["name"] == nil {
			unnamed++
			if get[float64](h, "chunk") < 2 {
				t.Fatalf("REST unnamed hit numbered %v", h["chunk"])
			}
		}
	}
	if unnamed == 0 {
		t.Fatalf("no unnamed chunk among %d hits: the test proves nothing", len(get[[]any](r.body, "hits")))
	}
	r = d.do("GET", "/api/search?q=job+queue&max_bytes=8192", nil)
	if r.status != 200 || len(r.raw) > 8192 || !strings.Contains(r.raw, `"truncated": true`) {
		t.Fatalf("REST max_bytes: %d, %d bytes", r.status, len(r.raw))
	}
	r = d.do("POST", "/api/recall", map[string]any{"query": "job queue", "max_hit_bytes": 300})
	for _, x := range get[[]any](r.body, "hits") {
		h := x.(map[string]any)
		if c := h["content"].(string); len(c) > 300 || (get[float64](h, "full_bytes") > 0) != (h["truncated"] == true) {
			t.Fatalf("REST max_hit_bytes: %d bytes, %v", len(c), h["truncated"])
		}
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/search?q=job&max_bytes=100"}, {"GET", "/api/search?q=job&max_bytes=lots"},
		{"GET", "/api/recall?q=job&max_hit_bytes=-5"}, {"POST", "/api/search"},
	} {
		var body any
		if c.method == "POST" {
			body = map[string]any{"text": "job", "max_hit_bytes": 1}
		}
		if r := d.do(c.method, c.path, body); r.status != 400 || r.code() != "loci::input::invalid" || !strings.Contains(r.raw, "max_") {
			t.Fatalf("%s %s: %d %s", c.method, c.path, r.status, r.raw)
		}
	}

	// The CLI: one short block per hit; --full whole drawers; --json the
	// REST answer unchanged.
	out, errOut, code := d.cli("", "search", "job", "queue")
	blocks := strings.Split(strings.TrimSpace(out), "\n\n")
	if code != 0 || len(out) > 6000 || len(blocks) != 10 {
		t.Fatalf("loci search: exit %d, %d bytes, %d blocks\n%s%s", code, len(out), len(blocks), out, errOut)
	}
	for _, b := range blocks {
		lines := strings.Split(b, "\n")
		if !regexp.MustCompile(`^\d+\. loci/files(  [\w./-]+ #\d+|/[\w./-]+)  `).MatchString(lines[0]) ||
			!regexp.MustCompile(`\d{4}-\d\d-\d\d`).MatchString(lines[0]) || !strings.Contains(lines[0], "score") || len(lines) < 2 {
			t.Fatalf("a block without its place, date and score:\n%s", b)
		}
	}
	full, _, _ := d.cli("", "search", "--full", "job", "queue")
	js, _, _ := d.cli("", "--json", "search", "job", "queue")
	if len(full) < 4*len(out) || strings.Contains(js, `"truncated"`) || len(js) < 16384 {
		t.Fatalf("--full %d bytes, --json %d bytes (brief %d)", len(full), len(js), len(out))
	}
	if clipped, _, _ := d.cli("", "--json", "search", "--max-hit-bytes", "100", "job", "queue"); !strings.Contains(clipped, `"truncated": true`) {
		t.Fatalf("--max-hit-bytes: %.500s", clipped)
	}
}

// On short memories (LoCoMo turns of about a hundred bytes) the default
// MCP answer spends at most 250 bytes a hit on anything but the memory.
func TestShortMemoriesCostLittleOverMCP(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	for i := range 12 {
		content := fmt.Sprintf("Caroline: I went to the support group on day %d and it was so powerful, the stories there moved me.", i)
		if r := d.do("POST", "/api/wings/locomo/rooms/conv-26/drawers", map[string]any{"name": fmt.Sprintf("D1:%d", i+1), "content": content,
			"source": map[string]any{"kind": "transcript"}}); r.status != 201 {
			t.Fatalf("file: %s", r.raw)
		}
	}
	s := mcpSession(t, d)
	text := toolText(t, s, "loci_search", map[string]any{"query": "support group stories"})
	var out struct {
		Hits []briefHit `json:"hits"`
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil || len(out.Hits) != 10 {
		t.Fatalf("%v: %s", err, text)
	}
	content := 0
	for _, h := range out.Hits {
		content += len(h.Content)
		if h.Truncated || h.Wing != "locomo" || h.Room != "conv-26" || h.Document != "" || h.Chunk != 0 {
			t.Fatalf("hit: %+v", h)
		}
	}
	over := (len(text) - content) / len(out.Hits)
	t.Logf("%d bytes for %d hits, %d bytes a hit besides the memory", len(text), len(out.Hits), over)
	if over > 250 {
		t.Fatalf("%d bytes a hit besides the memory (%d in all): %s", over, len(text), text)
	}
}
