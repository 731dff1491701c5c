// Command gen makes the claude-code transcript fixtures: it serves a
// scripted Anthropic Messages API on loopback and runs the real Claude Code
// CLI against it (print mode, a temporary HOME, a temporary project), then
// copies the session files the CLI wrote under ~/.claude/projects into the
// output directory.
//
//	go run ./sources/testdata/transcripts/claude-code/gen -claude .ci/npm/node_modules/.bin/claude -out sources/testdata/transcripts/claude-code
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The strings the tests look for: the reasoning and the tool output must
// never reach a drawer; the secrets must be redacted. The commands print
// their marks without spelling them (the command is kept in its marker,
// its output never).
const (
	thinkingMark = "reasoning-pelican-5521"
	_            = "toolout-zebra-7781" // the Bash command's output
	fileMark     = "filebody-walrus-3390"
	userSecret   = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
	cmdSecret    = "AKIAIOSFODNN7EXAMPLF"
	_            = "subagent-heron-4410" // the sub-agent's command's output
)

// redPixel is a 1x1 red PNG.
const redPixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

var runIn func(dir, stdin string, args ...string)

var logMu sync.Mutex

func logf(format string, a ...any) {
	logMu.Lock()
	defer logMu.Unlock()
	log.Printf(format, a...)
}

// block is one content block of a scripted reply.
type block struct {
	Type  string // text, thinking, tool_use
	Text  string
	Name  string
	Input any
}

type request struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	System   json.RawMessage   `json:"system"`
	Messages []json.RawMessage `json:"messages"`
	Tools    []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type content struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	ToolUseID string `json:"tool_use_id"`
}

// blocksOf reads a message's content: a string or blocks.
func blocksOf(raw json.RawMessage) []content {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []content{{Type: "text", Text: s}}
	}
	var bs []content
	json.Unmarshal(raw, &bs)
	return bs
}

var project string

// script is the reply to a conversation: chosen by the first user text
// (the scenario) and the number of tool results so far.
func script(req request) (blocks []block, stop string) {
	notified := false // the sub-agent's notification came
	var first string
	results := 0
	lastUser := ""
	for _, raw := range req.Messages {
		var m message
		json.Unmarshal(raw, &m)
		for _, c := range blocksOf(m.Content) {
			if m.Role == "user" && c.Type == "text" && !strings.HasPrefix(c.Text, "<system-reminder>") {
				if first == "" {
					first = c.Text
				}
				lastUser = c.Text
			}
			if m.Role == "user" && c.Type == "text" && strings.Contains(c.Text, "<task-notification>\n<task-id>") {
				notified = true
			}
			if c.Type == "tool_result" {
				results++
			}
		}
	}
	// The last user message that is not only tool results decides the step
	// of a resumed conversation.
	switch {
	case strings.Contains(first, "SUBAGENT-TASK"):
		// A sub-agent's own conversation.
		if results == 0 {
			return []block{{Type: "tool_use", Name: "Bash", Input: map[string]any{"command": "echo subagent-heron-$((4000+410)); exit 3", "description": "Echo a marker"}}}, "tool_use"
		}
		return []block{{Type: "text", Text: "The sub-agent ran the echo; the deploy script lives in scripts/deploy.sh."}}, "end_turn"
	case strings.Contains(lastUser, "After the compaction"):
		return []block{{Type: "text", Text: "It was one red pixel, remembered across the compaction."}}, "end_turn"
	case strings.Contains(first, "What is in this picture"):
		return []block{{Type: "text", Text: "A single red pixel on a transparent ground."}}, "end_turn"
	case strings.Contains(lastUser, "Now summarise what the notes said"):
		return []block{{Type: "thinking", Text: "Second turn: " + thinkingMark + " recall the earlier read."},
			{Type: "text", Text: "Summary for the resumed session: the notes describe the flamingo migration plan."}}, "end_turn"
	case strings.Contains(first, "Delegate"):
		if results == 0 {
			return []block{{Type: "text", Text: "I will hand this to a sub-agent."},
				{Type: "tool_use", Name: agentTool(req), Input: map[string]any{"description": "Find the deploy script",
					"prompt": "SUBAGENT-TASK: find where the deploy script lives and report back.", "subagent_type": "general-purpose"}}}, "tool_use"
		}
		if !notified {
			return []block{{Type: "text", Text: "The sub-agent is working; I will report when it finishes."}}, "end_turn"
		}
		return []block{{Type: "text", Text: "The sub-agent reports the deploy script is in scripts/deploy.sh."}}, "end_turn"
	case strings.Contains(first, "Check the repository"):
		switch results {
		case 0:
			return []block{{Type: "thinking", Text: "The user wants a status check. " + thinkingMark + " I should run a command first."},
				{Type: "text", Text: "Let me check the working tree first."},
				{Type: "tool_use", Name: "Bash", Input: map[string]any{"command": "echo toolout-zebra-$((7000+781)) && AWS_ACCESS_KEY_ID=" + cmdSecret + " true",
					"description": "Check the tree"}}}, "tool_use"
		case 1:
			return []block{{Type: "thinking", Text: "Now the notes file. " + thinkingMark},
				{Type: "tool_use", Name: "Read", Input: map[string]any{"file_path": filepath.Join(project, "notes.txt")}}}, "tool_use"
		}
		return []block{{Type: "text", Text: "The tree is clean and notes.txt describes the flamingo migration plan. Do not paste tokens into prompts."}}, "end_turn"
	}
	// Anything else (a title, a topic check): a short text.
	return []block{{Type: "text", Text: "Session notes"}}, "end_turn"
}

func agentTool(req request) string {
	for _, t := range req.Tools {
		if t.Name == "Task" || t.Name == "Agent" {
			return t.Name
		}
	}
	return "Task"
}

var ids int
var idMu sync.Mutex

func nextID(prefix string) string {
	idMu.Lock()
	defer idMu.Unlock()
	ids++
	return fmt.Sprintf("%s_%024d", prefix, ids)
}

func sse(w io.Writer, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
}

func messages(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	if strings.Contains(string(body), "Provoke an API error") {
		// A refusal the CLI records as a synthetic assistant message.
		logf("POST %s -> 400", r.URL)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"type":"error","error":{"type":"invalid_request_error","message":"scripted refusal: prompt is too long"}}`))
		return
	}
	blocks, stop := script(req)
	var tools []string
	for _, t := range req.Tools {
		tools = append(tools, t.Name)
	}
	logf("POST %s model=%s stream=%v messages=%d tools=%v -> %d blocks %s", r.URL, req.Model, req.Stream, len(req.Messages), tools, len(blocks), stop)
	if os.Getenv("GEN_DUMP") != "" {
		os.WriteFile(filepath.Join(os.Getenv("GEN_DUMP"), nextID("req")+".json"), body, 0o644)
	}
	id := nextID("msg")
	usage := map[string]any{"input_tokens": 120, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	if !req.Stream {
		var cs []map[string]any
		for _, b := range blocks {
			cs = append(cs, jsonBlock(b, true))
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content": cs, "stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 120, "output_tokens": 20}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message",
		"role": "assistant", "model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	for i, b := range blocks {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": jsonBlock(b, false)})
		switch b.Type {
		case "thinking":
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "thinking_delta", "thinking": b.Text}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "signature_delta", "signature": "c2lnbmF0dXJlLWZvci10ZXN0cw=="}})
		case "text":
			half := len(b.Text) / 2
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b.Text[:half]}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b.Text[half:]}})
		case "tool_use":
			in, _ := json.Marshal(b.Input)
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		if fl != nil {
			fl.Flush()
		}
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 42}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
	if fl != nil {
		fl.Flush()
	}
}

// jsonBlock is a block as content_block_start (empty) or a whole message
// (full) carries it.
func jsonBlock(b block, full bool) map[string]any {
	switch b.Type {
	case "thinking":
		if full {
			return map[string]any{"type": "thinking", "thinking": b.Text, "signature": "c2lnbmF0dXJlLWZvci10ZXN0cw=="}
		}
		return map[string]any{"type": "thinking", "thinking": "", "signature": ""}
	case "tool_use":
		if full {
			return map[string]any{"type": "tool_use", "id": nextID("toolu"), "name": b.Name, "input": b.Input}
		}
		return map[string]any{"type": "tool_use", "id": nextID("toolu"), "name": b.Name, "input": map[string]any{}}
	}
	if full {
		return map[string]any{"type": "text", "text": b.Text}
	}
	return map[string]any{"type": "text", "text": ""}
}

func main() {
	claude := flag.String("claude", ".ci/npm/node_modules/.bin/claude", "the claude CLI")
	out := flag.String("out", "sources/testdata/transcripts/claude-code", "where the session files go")
	base := flag.String("base", "/tmp/loci-cc-fixture", "the temporary HOME and project live here (removed first)")
	flag.Parse()
	claudeAbs, err := filepath.Abs(*claude)
	if err != nil {
		log.Fatal(err)
	}
	os.RemoveAll(*base)
	home := filepath.Join(*base, "home")
	project = filepath.Join(*base, "project-app")
	other := filepath.Join(*base, "project-other")
	for _, d := range []string{home, project, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			log.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(project, "notes.txt"), []byte("Migration plan: "+fileMark+"\nMove the flamingo tables first.\n"), 0o644)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/messages", messages)
	mux.HandleFunc("/v1/messages/count_tokens", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		logf("POST %s", r.URL)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"input_tokens":120}`))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		logf("unscripted %s %s", r.Method, r.URL)
		http.NotFound(w, r)
	})
	go http.Serve(ln, mux)
	baseURL := "http://" + ln.Addr().String()

	run := func(dir string, args ...string) { runIn(dir, "", args...) }
	mayFail := false
	runIn = func(dir, stdin string, args ...string) {
		cmd := exec.Command(claudeAbs, args...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + baseURL,
			"ANTHROPIC_API_KEY=sk-ant-dummy-not-a-key", "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1", "TERM=dumb", "SHELL=/bin/bash"}
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		logf("claude %q in %s: %v (%s)\nstdout: %s\nstderr: %s", args, dir, err, time.Since(start).Round(time.Millisecond), stdout.String(), stderr.String())
		if err != nil && !mayFail {
			log.Fatal("the claude run failed")
		}
	}
	common := []string{"--output-format", "json", "--allowedTools", "Bash,Read,Task,Agent", "--model", "claude-sonnet-4-5"}
	// 1. A session: text, thinking, a Bash call, a Read call, a secret in
	// the prompt and in the command.
	run(project, append([]string{"-p", "Check the repository and read notes.txt. My GitHub token is " + userSecret + " if you need it."}, common...)...)
	// 2. The same session continued: it appends to the same file.
	run(project, append([]string{"-p", "-c", "Now summarise what the notes said in one line."}, common...)...)
	// 3. A session in another project that delegates to a sub-agent.
	run(other, append([]string{"-p", "Delegate: find the deploy script."}, common...)...)

	// 4. A prompt with an image (stream-json input), a new session in the
	// first project.
	img := map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "What is in this picture?"},
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": redPixel}}}}}
	line, _ := json.Marshal(img)
	runIn(project, string(line)+"\n", "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-5")

	// 5. That session compacted (/compact: a summary request, a
	// compact_boundary, a generated summary), its cost shown (/cost, a
	// local command), then continued.
	run(project, append([]string{"-p", "-c", "/compact"}, common...)...)
	run(project, append([]string{"-p", "-c", "/cost"}, common...)...)
	run(project, append([]string{"-p", "-c", "After the compaction, what was the picture?"}, common...)...)

	// 6. A session whose request the API refuses: the CLI records a
	// synthetic assistant message (isApiErrorMessage) and exits 1.
	mayFail = true
	run(other, append([]string{"-p", "Provoke an API error, please."}, common...)...)
	mayFail = false

	src := filepath.Join(home, ".claude", "projects")
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(*out, "projects", rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		logf("copied %s (%d bytes)", rel, len(b))
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		log.Fatal(err)
	}
}
