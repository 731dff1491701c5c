// Command gen writes the codex transcript fixtures: it runs the real codex
// CLI (`codex exec`, then `codex exec resume` twice) in a temporary
// CODEX_HOME against a scripted model endpoint on loopback that speaks
// just enough of the OpenAI Responses API (streamed server-sent events),
// then copies the rollout files codex wrote. See ../README.md.
//
//	go run ./sources/testdata/transcripts/codex/gen -codex .ci/npm/node_modules/.bin/codex
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// The fake secrets: loci's rules detect both.
const (
	awsKey   = "AKIAIOSFODNN7EXAMPLF"
	ghToken  = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
	readme   = "# Lamp\n\nTOOL-OUTPUT-SENTINEL: the lamp manual says the wick is trimmed weekly.\n"
	agentsMD = "AGENTS-MD-SENTINEL: run the tests with make check before committing.\n"
)

// The three prompts, one per codex run; the server picks its script by
// the last real user message.
var prompts = []string{
	"Check the repo status before the deploy. My GitHub token is " + ghToken + " if you need it; the deploy key goes in AWS_ACCESS_KEY_ID.",
	"What should the nightly lamp job do next?",
	// The person pastes a tagged block: their words, though shaped like an
	// injection of older codex versions.
	"<task>Summarise the plan in one line.</task>",
	// A new session (codex exec, not resume) whose assistant hands a task
	// to a sub-agent: the sub-agent's session is a rollout of its own.
	"Ask a helper to count the lamps in the hall.",
	"SUBAGENT-TASK: count the lamps in the hall and say how many.",
}

// lastAgent is the id of the sub-agent spawn_agent started (its output
// names it); agentID finds it.
var (
	lastAgent string
	agentID   = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
)

// item is one output item of a scripted response.
type item map[string]any

func reasoning(id, summary string) item {
	return item{"type": "reasoning", "id": id, "summary": []any{map[string]any{"type": "summary_text", "text": summary}},
		"encrypted_content": "gAAAAABencryptedREASONING-SENTINEL-" + id}
}

func message(id, text string) item {
	return item{"type": "message", "id": id, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

func patch(id, input string) item {
	return item{"type": "custom_tool_call", "id": "ctc_" + id, "call_id": "call_" + id, "name": "apply_patch", "input": input, "status": "completed"}
}

func withNS(it item, ns string) item {
	it["namespace"] = ns
	return it
}

func call(id, name string, args map[string]any) item {
	b, _ := json.Marshal(args)
	return item{"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id, "name": name, "arguments": string(b), "status": "completed"}
}

// script is the reply to a request: by which prompt it follows and how
// many tool results came back since.
func script(prompt string, results int) []item {
	switch {
	case strings.Contains(prompt, "repo status"):
		switch results {
		case 0:
			return []item{reasoning("rs_a1", "REASONING-SENTINEL: the user wants git status first; never echo their token."),
				message("msg_a1", "I'll check the working tree first."),
				call("a1", "exec_command", map[string]any{"cmd": "AWS_ACCESS_KEY_ID=" + awsKey + " git status --short", "workdir": "."})}
		case 1:
			return []item{call("a2", "exec_command", map[string]any{"cmd": "cat README.md"})}
		}
		return []item{reasoning("rs_a3", "REASONING-SENTINEL: the tree is clean and the README explains the wick."),
			message("msg_a3", "The working tree is clean and the README says the wick is trimmed weekly; ready to deploy.")}
	case strings.Contains(prompt, "nightly lamp job"):
		switch results {
		case 0:
			return []item{reasoning("rs_b1", "REASONING-SENTINEL: look for the job's log, then note the plan."),
				call("b1", "exec_command", map[string]any{"cmd": "cat nightly.log"})}
		case 1:
			return []item{patch("b2", "*** Begin Patch\n*** Add File: NOTES.md\n+PATCH-BODY-SENTINEL: rotate the copper kettles nightly.\n*** End Patch\n")}
		}
		return []item{reasoning("rs_b3", "REASONING-SENTINEL: suggest a rotation of the copper kettles."),
			message("msg_b3", "There is no nightly log yet. Next, the nightly lamp job should rotate the copper kettles and log the wick length; I noted it in NOTES.md.")}
	case strings.Contains(prompt, "Ask a helper"):
		switch results {
		case 0:
			return []item{withNS(call("d1", "spawn_agent", map[string]any{"message": prompts[4]}), "multi_agent_v1")}
		case 1:
			return []item{withNS(call("d2", "wait_agent", map[string]any{"targets": []string{lastAgent}, "timeout_ms": 60000}), "multi_agent_v1")}
		}
		return []item{message("msg_d3", "The helper counted three lamps in the hall.")}
	case strings.Contains(prompt, "SUBAGENT-TASK"):
		return []item{reasoning("rs_e1", "REASONING-SENTINEL: the sub-agent counts."), message("msg_e1", "There are three lamps in the hall.")}
	case strings.Contains(prompt, "Summarise"):
		return []item{message("msg_c1", "Plan: check the tree, trim the wick, rotate the kettles nightly.")}
	}
	return []item{message("msg_x", "I have no script for that.")}
}

// lastPrompt is the text of the last user message in the request's input
// that is not one of codex's injected contexts, and the number of tool
// results after it.
func lastPrompt(input []map[string]any) (string, int) {
	prompt, results := "", 0
	for _, in := range input {
		switch in["type"] {
		case "message":
			if in["role"] != "user" {
				continue
			}
			for _, c := range in["content"].([]any) {
				text, _ := c.(map[string]any)["text"].(string)
				for _, p := range prompts {
					if strings.Contains(text, p) {
						prompt, results = text, 0
					}
				}
			}
		case "function_call_output", "custom_tool_call_output":
			results++
			if in["call_id"] == "call_d1" {
				if m := agentID.FindString(fmt.Sprint(in["output"])); m != "" {
					lastAgent = m
				}
			}
		}
	}
	return prompt, results
}

func serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Input []map[string]any `json:"input"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	prompt, results := lastPrompt(req.Input)
	if os.Getenv("GEN_VERBOSE") != "" {
		log.Printf("request: prompt %.30q, %d results, last input %s", prompt, results, tail(body))
	}
	items := script(prompt, results)
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	seq := 0
	send := func(typ string, v map[string]any) {
		v["type"] = typ
		v["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		fl.Flush()
	}
	respID := fmt.Sprintf("resp_%d_%d", len(req.Input), results)
	send("response.created", map[string]any{"response": map[string]any{"id": respID, "status": "in_progress"}})
	for i, it := range items {
		added := item{}
		for k, v := range it {
			added[k] = v
		}
		switch it["type"] {
		case "message":
			added["content"] = []any{}
			added["status"] = "in_progress"
		case "reasoning":
			added["summary"] = []any{}
		case "function_call":
			added["arguments"] = ""
		case "custom_tool_call":
			added["input"] = ""
		}
		send("response.output_item.added", map[string]any{"output_index": i, "item": added})
		switch it["type"] {
		case "message":
			text := it["content"].([]any)[0].(map[string]any)["text"].(string)
			send("response.content_part.added", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, w := range strings.SplitAfter(text, " ") {
				send("response.output_text.delta", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "delta": w})
			}
			send("response.output_text.done", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "text": text})
		case "reasoning":
			text := it["summary"].([]any)[0].(map[string]any)["text"].(string)
			send("response.reasoning_summary_part.added", map[string]any{"item_id": it["id"], "output_index": i, "summary_index": 0,
				"part": map[string]any{"type": "summary_text", "text": ""}})
			send("response.reasoning_summary_text.delta", map[string]any{"item_id": it["id"], "output_index": i, "summary_index": 0, "delta": text})
			send("response.reasoning_summary_text.done", map[string]any{"item_id": it["id"], "output_index": i, "summary_index": 0, "text": text})
		case "custom_tool_call":
			send("response.custom_tool_call_input.delta", map[string]any{"item_id": it["id"], "output_index": i, "delta": it["input"]})
			send("response.custom_tool_call_input.done", map[string]any{"item_id": it["id"], "output_index": i, "input": it["input"]})
		case "function_call":
			send("response.function_call_arguments.delta", map[string]any{"item_id": it["id"], "output_index": i, "delta": it["arguments"]})
			send("response.function_call_arguments.done", map[string]any{"item_id": it["id"], "output_index": i, "arguments": it["arguments"]})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	send("response.completed", map[string]any{"response": map[string]any{"id": respID, "status": "completed",
		"usage": map[string]any{"input_tokens": 1200, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 60, "output_tokens_details": map[string]any{"reasoning_tokens": 20}, "total_tokens": 1260}}})
}

func main() {
	codex := flag.String("codex", ".ci/npm/node_modules/.bin/codex", "the codex CLI")
	out := flag.String("out", "sources/testdata/transcripts/codex", "where the fixtures go")
	flag.Parse()
	bin, err := filepath.Abs(*codex)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	var mu sync.Mutex
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		serve(w, r)
	}))

	tmp, err := os.MkdirTemp("", "codex-fixture-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	home, proj := filepath.Join(tmp, "home"), filepath.Join(tmp, "proj")
	codexHome := filepath.Join(home, ".codex")
	must(os.MkdirAll(codexHome, 0o755))
	must(os.MkdirAll(proj, 0o755))
	must(os.WriteFile(filepath.Join(proj, "README.md"), []byte(readme), 0o644))
	must(os.WriteFile(filepath.Join(proj, "AGENTS.md"), []byte(agentsMD), 0o644))
	// A 2x2 picture the first prompt attaches (an image in the transcript).
	pic := image.NewRGBA(image.Rect(0, 0, 2, 2))
	pic.Set(0, 0, color.RGBA{R: 200, A: 255})
	f, err := os.Create(filepath.Join(proj, "lamp.png"))
	must(err)
	must(png.Encode(f, pic))
	must(f.Close())
	config := fmt.Sprintf(`model = "gpt-5.5"
model_provider = "scripted"

[model_providers.scripted]
name = "scripted"
base_url = "http://%s/v1"
env_key = "SCRIPTED_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, ln.Addr())
	must(os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600))
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.email=f@example.com", "-c", "user.name=f", "commit", "-qm", "lamp"}} {
		run(proj, nil, "git", args...)
	}
	env := append(os.Environ(), "HOME="+home, "CODEX_HOME="+codexHome, "SCRIPTED_API_KEY=dummy", "NO_COLOR=1")
	// Runs 1-3: a session, resumed twice (codex appends to its rollout).
	var lines []int
	var main string
	for i, p := range prompts[:3] {
		args := []string{"exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--enable", "apply_patch_freeform", "-i", "lamp.png"}
		if i > 0 {
			args = []string{"exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--enable", "apply_patch_freeform", "resume", "--last"}
		}
		run(proj, env, bin, append(args, "--", p)...)
		files := rollouts(codexHome)
		if len(files) != 1 {
			log.Fatalf("after run %d: %d rollout files %v", i+1, len(files), files)
		}
		main = files[0]
		b, err := os.ReadFile(main)
		must(err)
		lines = append(lines, strings.Count(string(b), "\n"))
	}
	// Run 4: a new session that spawns a sub-agent.
	run(proj, env, bin, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--", prompts[3])
	var others []string
	for _, f := range rollouts(codexHome) {
		if f != main {
			others = append(others, relTo(codexHome, f))
		}
	}
	// Copy the sessions tree as codex wrote it.
	root := filepath.Join(codexHome, "sessions")
	must(filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		dst := filepath.Join(*out, "sessions", rel)
		must(os.MkdirAll(filepath.Dir(dst), 0o755))
		b, err := os.ReadFile(p)
		must(err)
		return os.WriteFile(dst, b, 0o644)
	}))
	// The line count after each run: the growing-session tests replay them.
	steps, _ := json.Marshal(map[string]any{"project": proj, "session": relTo(codexHome, main), "lines_after_run": lines, "other_sessions": others})
	must(os.WriteFile(filepath.Join(*out, "steps.json"), append(steps, '\n'), 0o644))
	log.Printf("wrote %s (lines after each run %v)", *out, lines)
}

// rollouts are the rollout files under codexHome's sessions.
func rollouts(codexHome string) []string {
	files, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	return files
}

// relTo is f's slash path under codexHome's sessions.
func relTo(codexHome, f string) string {
	rel, _ := filepath.Rel(filepath.Join(codexHome, "sessions"), f)
	return filepath.ToSlash(rel)
}

func run(dir string, env []string, name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader("")
	if out, err := cmd.CombinedOutput(); err != nil {
		log.Fatalf("%s %v: %v\n%s", name, args, err, out)
	} else if os.Getenv("GEN_VERBOSE") != "" {
		os.Stderr.Write(out)
	}
}

func tail(b []byte) string {
	if len(b) > 400 {
		b = b[len(b)-400:]
	}
	return string(b)
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
