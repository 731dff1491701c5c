// Command gen makes the opencode transcript fixtures: it runs the real
// OpenCode CLI (opencode run, non-interactively) in a temporary HOME and
// temporary project directories against a scripted OpenAI Chat Completions
// endpoint on loopback, then copies the database OpenCode wrote.
//
//	go run ./sources/testdata/transcripts/opencode/gen -opencode PATH -out DIR
//
// It lives under testdata so `go build ./...` ignores it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
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

// The fake secrets the fixtures carry (synthetic values loci's secret rules
// detect): one in a user prompt, one in a tool command.
const (
	promptSecret = "ghp_Zq3Xv8Lm2Np5Rt7Wy9Bc4Df6Gh1Jk0Ms8QuE"
	toolSecret   = "AKIAZ7QX3MPLR2W4N6TB"
)

// Strings the tests assert never reach a drawer: what the model reasoned
// and what the tools printed.
const (
	reasoning1 = "REASONING-ALPHA: the user wants the status; I should run git status before answering."
	reasoning2 = "REASONING-BETA: reading the README is the quickest way to summarise the project."
)

// png is a 1×1 image, the screenshot attached in the third turn.
var png = []byte{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1,
	8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0d, 'I', 'D', 'A', 'T', 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
	0x1f, 0, 0x05, 0, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82}

type request struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools  []json.RawMessage `json:"tools"`
	Stream bool              `json:"stream"`
}

type server struct {
	mu   sync.Mutex
	log  io.Writer
	proj string
}

func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// reply is one scripted answer: reasoning, text, and maybe one tool call.
type reply struct {
	reasoning string
	content   string
	tool      string
	args      any
}

func (s *server) script(req *request) reply {
	sys := ""
	lastUser := ""
	lastRole := ""
	for _, m := range req.Messages {
		if m.Role == "system" {
			sys += text(m.Content)
		}
		if m.Role == "user" {
			lastUser = text(m.Content)
		}
		lastRole = m.Role
	}
	if len(req.Tools) == 0 && strings.Contains(strings.ToLower(sys), "title") {
		switch {
		case strings.Contains(lastUser, "README"):
			return reply{content: "Reading the README"}
		case strings.Contains(lastUser, "deploy"):
			return reply{content: "Deploy checklist"}
		}
		return reply{content: "Checking the repository status"}
	}
	if len(req.Tools) == 0 {
		return reply{content: "A short summary."}
	}
	switch {
	case strings.Contains(lastUser, "Look for the deploy checklist"):
		// The sub-agent's own session (a child of the deploy session).
		return reply{content: "SUBAGENT-FINDING: no checklist file exists; the team's habit is tests, changelog, tag."}
	case lastRole == "tool" && strings.Contains(lastUser, "deploy"):
		return reply{content: "Deploys go through make deploy after the checklist: tests green, changelog updated, tag pushed."}
	case lastRole == "tool" && strings.Contains(lastUser, "README"):
		return reply{content: "The README says this is the widget service; it runs on port 8080 and is built with make."}
	case lastRole == "tool":
		return reply{content: "The working tree is clean apart from the untracked notes.txt; the deploy key check printed its line."}
	case strings.Contains(lastUser, "git status"):
		return reply{reasoning: reasoning1, content: "I'll check the repository status first.", tool: "bash",
			args: map[string]string{"command": "git status --short && echo deploy-key=" + toolSecret, "description": "Show the working tree status"}}
	case strings.Contains(lastUser, "README"):
		return reply{reasoning: reasoning2, content: "Let me read the README.", tool: "read",
			args: map[string]string{"filePath": filepath.Join(s.proj, "README.md")}}
	case strings.Contains(lastUser, "deploy"):
		return reply{content: "I'll have a sub-agent look for it.", tool: "task",
			args: map[string]string{"description": "Find the deploy checklist", "prompt": "Look for the deploy checklist in this repository and report it.", "subagent_type": "general"}}
	case strings.Contains(lastUser, "screenshot"):
		return reply{content: "The screenshot shows the build passing; nothing else to do."}
	}
	return reply{content: "Done: the summary is that nothing else needs doing."}
}

func chunk(w io.Writer, delta map[string]any, finish any) {
	c := map[string]any{"id": "chatcmpl-fixture", "object": "chat.completion.chunk", "created": time.Now().Unix(),
		"model": "scripted-1", "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	b, _ := json.Marshal(c)
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	fmt.Fprintf(s.log, "%s %s\n%s\n\n", r.Method, r.URL.Path, body)
	s.mu.Unlock()
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	rep := s.script(&req)
	w.Header().Set("Content-Type", "text/event-stream")
	chunk(w, map[string]any{"role": "assistant", "content": ""}, nil)
	if rep.reasoning != "" {
		for _, word := range strings.SplitAfter(rep.reasoning, " ") {
			chunk(w, map[string]any{"reasoning_content": word}, nil)
		}
	}
	for _, word := range strings.SplitAfter(rep.content, " ") {
		chunk(w, map[string]any{"content": word}, nil)
	}
	finish := "stop"
	if rep.tool != "" {
		args, _ := json.Marshal(rep.args)
		half := len(args) / 2
		chunk(w, map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_fixture_1", "type": "function",
			"function": map[string]any{"name": rep.tool, "arguments": string(args[:half])}}}}, nil)
		chunk(w, map[string]any{"tool_calls": []any{map[string]any{"index": 0,
			"function": map[string]any{"arguments": string(args[half:])}}}}, nil)
		finish = "tool_calls"
	}
	chunk(w, map[string]any{}, finish)
	u := map[string]any{"id": "chatcmpl-fixture", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": "scripted-1",
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}}
	b, _ := json.Marshal(u)
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func main() {
	bin := flag.String("opencode", "", "the opencode binary")
	out := flag.String("out", "", "where the fixtures go")
	keep := flag.Bool("keep", false, "keep the temporary directory")
	work := flag.String("work", "/tmp/opencode-fixture", "the temporary HOME and projects (made afresh; its paths are in the sessions)")
	flag.Parse()
	if *bin == "" || *out == "" {
		log.Fatal("usage: gen -opencode PATH -out DIR")
	}
	tmp := *work
	must(os.RemoveAll(tmp))
	must(os.MkdirAll(tmp, 0o755))
	if !*keep {
		defer os.RemoveAll(tmp)
	}
	home := filepath.Join(tmp, "home")
	projA := filepath.Join(tmp, "work", "widget")
	projB := filepath.Join(tmp, "work", "deploys")
	for _, d := range []string{home, projA, projB} {
		must(os.MkdirAll(d, 0o755))
	}
	must(os.WriteFile(filepath.Join(projA, "README.md"), []byte("# widget\n\nThe widget service. Port 8080. Build with make.\nREADME-CONTENT-MARKER: never in a drawer.\n"), 0o644))
	must(os.WriteFile(filepath.Join(projA, "notes.txt"), []byte("scratch\n"), 0o644))
	must(os.WriteFile(filepath.Join(projA, "build.png"), png, 0o644))
	for _, p := range []string{projA, projB} {
		cmd := exec.Command("git", "init", "-q")
		cmd.Dir = p
		must(cmd.Run())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	reqLog, err := os.Create(filepath.Join(tmp, "requests.log"))
	must(err)
	srv := &server{log: reqLog, proj: projA}
	go http.Serve(ln, srv)
	base := "http://" + ln.Addr().String() + "/v1"

	config := map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"model":       "scripted/scripted-1",
		"small_model": "scripted/scripted-1",
		"autoupdate":  false,
		"share":       "disabled",
		"permission":  map[string]any{"bash": "allow", "read": "allow", "edit": "allow"},
		"provider": map[string]any{"scripted": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "Scripted",
			"options": map[string]any{"baseURL": base, "apiKey": "not-a-key"},
			"models":  map[string]any{"scripted-1": map[string]any{"name": "Scripted 1", "reasoning": true, "tool_call": true, "attachment": true}},
		}},
	}
	cfg, _ := json.MarshalIndent(config, "", "  ")
	cfgDir := filepath.Join(home, ".config", "opencode")
	must(os.MkdirAll(cfgDir, 0o755))
	must(os.WriteFile(filepath.Join(cfgDir, "opencode.json"), cfg, 0o644))

	env := append(os.Environ(), "HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_CLAUDE_CODE=1")
	// The prompt goes in on standard input, as a person's words (opencode
	// run quotes message arguments that hold spaces).
	run := func(dir, prompt string, args ...string) {
		cmd := exec.Command(*bin, append([]string{"run", "--print-logs", "--log-level", "WARN"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(env, "PWD="+dir)
		cmd.Stdin = strings.NewReader(prompt)
		cmd.Stdout = os.Stdout
		cmd.Stderr = os.Stderr
		log.Printf("opencode run %q %q in %s", args, prompt, dir)
		must(cmd.Run())
	}
	data := filepath.Join(home, ".local", "share", "opencode")
	must(os.MkdirAll(*out, 0o755))
	// snapshot copies the database as it stands into one self-contained
	// file (VACUUM INTO: the rows as OpenCode wrote them, WAL included).
	snapshot := func(name string) {
		dst := filepath.Join(*out, name)
		_ = os.Remove(dst)
		cmd := exec.Command("sqlite3", "file:"+filepath.Join(data, "opencode.db")+"?mode=ro", "VACUUM INTO '"+dst+"'")
		cmd.Stderr = os.Stderr
		must(cmd.Run())
	}
	run(projA, "Please run git status and tell me what changed. My GitHub token is "+promptSecret+" if you need it.")
	snapshot("grow-1.db")
	run(projA, "Now read README.md and summarise it.", "--continue")
	snapshot("grow-2.db")
	run(projA, "Thanks, anything else to do? Here is a screenshot of the build.", "--continue", "--file", filepath.Join(projA, "build.png"))
	run(projB, "What is our deploy checklist?")
	snapshot("opencode.db")
	fmt.Println("temporary directory:", tmp)
}
