package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// runIn runs the loci binary in dir with the environment of home plus
// extra, and says how long it took.
func runIn(dir, home, stdin string, args []string, extra ...string) (stdout, stderr string, code int, took time.Duration) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env(home, extra...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	begin := time.Now()
	err := cmd.Run()
	took = time.Since(begin)
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	return out.String(), errb.String(), code, took
}

// repoRoot is the repository's root (cmd/loci's grandparent).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// codexSchema is a JSON Schema Codex (the pinned @openai/codex) carries
// for its hooks, by title (e.g. "session-start.command.output"), read
// from the installed binary itself; the test skips when it is missing.
func codexSchema(t *testing.T, title string) *jsonschema.Resolved {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(repoRoot(t), ".ci/npm/node_modules/@openai/codex-*/vendor/*/bin/codex"))
	if len(matches) == 0 {
		t.Skip("the Codex CLI is not installed; run: npm install --prefix .ci/npm")
	}
	raw, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(raw, []byte(title+"{"))
	if at < 0 {
		t.Fatalf("codex carries no schema %q", title)
	}
	var s jsonschema.Schema
	if err := json.NewDecoder(bytes.NewReader(raw[at+len(title):])).Decode(&s); err != nil {
		t.Fatalf("codex's schema %q: %v", title, err)
	}
	if s.Title != title {
		t.Fatalf("codex's schema at %q is titled %q", title, s.Title)
	}
	res, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolving codex's schema %q: %v", title, err)
	}
	return res
}

// claudeSessionStartOutput is Claude Code's SessionStart hook output as its
// hooks reference documents it (checked against the zod schema bundled in
// @anthropic-ai/claude-code 2.1.328): the common fields and
// hookSpecificOutput {hookEventName: "SessionStart", additionalContext}.
const claudeSessionStartOutput = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "continue": {"type": "boolean"},
    "suppressOutput": {"type": "boolean"},
    "stopReason": {"type": "string"},
    "systemMessage": {"type": "string"},
    "hookSpecificOutput": {
      "type": "object",
      "additionalProperties": false,
      "required": ["hookEventName"],
      "properties": {
        "hookEventName": {"const": "SessionStart"},
        "additionalContext": {"type": "string", "maxLength": 10000},
        "initialUserMessage": {"type": "string"},
        "sessionTitle": {"type": "string"},
        "watchPaths": {"type": "array", "items": {"type": "string"}}
      }
    }
  }
}`

// hookInputs are the hook JSON each agent documents for an event, for a
// session in dir (Claude Code's hooks reference; Codex's
// *.command.input schemas; the OpenCode plugin contract of loci's
// integration).
func hookInputs(agent, event, dir string) map[string]any {
	base := map[string]any{"session_id": "5f0c1e6a-0000-4000-8000-000000000001", "cwd": dir,
		"transcript_path": filepath.Join(dir, "transcript.jsonl")}
	switch agent + " " + event {
	case "claude-code session-start":
		base["hook_event_name"], base["source"] = "SessionStart", "startup"
	case "claude-code pre-compact":
		base["hook_event_name"], base["trigger"], base["custom_instructions"] = "PreCompact", "auto", nil
	case "claude-code session-end":
		base["hook_event_name"], base["reason"] = "SessionEnd", "prompt_input_exit"
	case "codex session-start":
		base["hook_event_name"], base["source"], base["model"], base["permission_mode"] = "SessionStart", "startup", "gpt-5", "default"
	case "codex pre-compact":
		base["hook_event_name"], base["trigger"], base["model"], base["turn_id"] = "PreCompact", "auto", "gpt-5", "t1"
	case "codex session-end":
		base["hook_event_name"], base["reason"] = "SessionEnd", "other"
	default: // opencode: the plugin sends cwd and session_id
		delete(base, "transcript_path")
	}
	return base
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The session-start hook of each agent prints, in the agent's documented
// output format, the agent's wake-up for the project's wing (the
// .loci.toml found from the hook's cwd): its checkpoints there and none
// of another wing's or another agent's; fast, exit 0 (issue 26, point 2).
func TestHookSessionStartGivesTheProjectsWakeUp(t *testing.T) {
	// Not parallel: the hook must answer within 1 s.
	home, palace := newPalace(t)
	d := start(t, home, palace)
	for _, c := range []struct{ wing, agent, content string }{
		{"billing", "claude-code", "claude-code in billing: invoices round per line."},
		{"billing", "codex", "codex in billing: refunds drain nightly."},
		{"billing", "opencode", "opencode in billing: the ledger is append-only."},
		{"search", "claude-code", "claude-code in search: the index rebuilds at start."},
		{"search", "codex", "codex in search: phones are slow."},
		{"search", "opencode", "opencode in search: stemming is off."},
	} {
		r := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": map[string]any{"items": []any{
			map[string]any{"destination": "project", "wing": c.wing, "content": c.content, "tags": []string{},
				"source": map[string]any{"kind": "manual", "agent": c.agent}}}}})
		if r.status != 202 {
			t.Fatalf("checkpoint: %s", r.raw)
		}
		if j := waitJob(t, d, r.body["id"].(string), 20*time.Second, finished); j["status"] != "completed" {
			t.Fatalf("checkpoint job: %v", j)
		}
	}
	proj := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, ".loci.toml"), []byte("wing = \"billing\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(proj, "src", "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir() // the process's own directory has no project
	var claudeSchema jsonschema.Schema
	if err := json.Unmarshal([]byte(claudeSessionStartOutput), &claudeSchema); err != nil {
		t.Fatal(err)
	}
	claude, err := claudeSchema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	codex := codexSchema(t, "session-start.command.output")
	codexIn := codexSchema(t, "session-start.command.input")
	for _, agent := range []string{"claude-code", "codex", "opencode"} {
		in := hookInputs(agent, "session-start", sub)
		if agent == "codex" {
			if err := codexIn.Validate(in); err != nil {
				t.Fatalf("the test's codex input does not match codex's own schema: %v", err)
			}
		}
		out, errOut, code, took := runIn(elsewhere, home, jsonText(in), []string{"hook", agent, "session-start"}, "LOCI_PALACE_PATH="+palace)
		if code != 0 || errOut != "" {
			t.Fatalf("%s: exit %d, stderr %q", agent, code, errOut)
		}
		if took > time.Second {
			t.Errorf("%s: the hook took %s", agent, took)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: the output is not one JSON object: %q", agent, out)
		}
		var text string
		switch agent {
		case "claude-code":
			if err := claude.Validate(got); err != nil {
				t.Fatalf("claude-code: the output breaks Claude Code's schema: %v\n%s", err, out)
			}
			text = get[string](got, "hookSpecificOutput", "additionalContext")
		case "codex":
			if err := codex.Validate(got); err != nil {
				t.Fatalf("codex: the output breaks Codex's own schema: %v\n%s", err, out)
			}
			text = get[string](got, "hookSpecificOutput", "additionalContext")
		case "opencode":
			if len(got) != 1 {
				t.Fatalf("opencode: want exactly {context}, got %s", out)
			}
			text = get[string](got, "context")
		}
		if !strings.Contains(text, agent+" in billing:") {
			t.Errorf("%s: the context lacks the agent's checkpoint of the project's wing:\n%s", agent, text)
		}
		if strings.Contains(text, " in search:") {
			t.Errorf("%s: the context holds another wing's checkpoint:\n%s", agent, text)
		}
		for _, other := range []string{"claude-code", "codex", "opencode"} {
			if other != agent && strings.Contains(text, other+" in billing:") {
				t.Errorf("%s: the context holds %s's checkpoint:\n%s", agent, other, text)
			}
		}
		if !strings.Contains(text, filepath.Join(proj, ".loci.toml")) {
			t.Errorf("%s: the context does not say which project file applies:\n%s", agent, text)
		}
	}

	// LOCI_WING (the agent's environment) wins over the project file,
	// as for the CLI.
	out, _, _, _ := runIn(sub, home, jsonText(hookInputs("codex", "session-start", sub)), []string{"hook", "codex", "session-start"},
		"LOCI_PALACE_PATH="+palace, "LOCI_WING=search")
	if !strings.Contains(out, "codex in search:") || strings.Contains(out, " in billing:") {
		t.Errorf("LOCI_WING=search: %s", out)
	}

	// A wing of large checkpoints: the context stays within the 8,192
	// bytes of the wake-up and Claude Code's 10,000 characters.
	var items []any
	for i := range 12 {
		items = append(items, map[string]any{"destination": "project", "wing": "big", "tags": []string{},
			"content": strings.Repeat("é", 700) + " checkpoint " + itoa(i), "source": map[string]any{"kind": "manual", "agent": "claude-code"}})
	}
	r := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": map[string]any{"items": items}})
	if j := waitJob(t, d, r.body["id"].(string), 20*time.Second, finished); j["status"] != "completed" {
		t.Fatalf("checkpoint job: %v", j)
	}
	big := writeProject(t, "wing = \"big\"\n")
	out, _, _, _ = runIn(big, home, jsonText(hookInputs("claude-code", "session-start", big)), []string{"hook", "claude-code", "session-start"},
		"LOCI_PALACE_PATH="+palace)
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("big wing: %q", out)
	}
	if err := claude.Validate(got); err != nil {
		t.Fatalf("big wing: the output breaks Claude Code's schema: %v", err)
	}
	if text := get[string](got, "hookSpecificOutput", "additionalContext"); !strings.Contains(text, "more did not fit") || len(text) > 9000 {
		t.Errorf("big wing: %d bytes of context:\n%s", len(text), text)
	}

	// A project whose wing does not exist yet, and a project in mode
	// disabled: nothing to say, nothing printed, exit 0.
	for _, toml := range []string{"wing = \"newproject\"\n", "wing = \"billing\"\nmode = \"disabled\"\n"} {
		p := t.TempDir()
		os.WriteFile(filepath.Join(p, ".loci.toml"), []byte(toml), 0o644)
		out, errOut, code, _ := runIn(p, home, jsonText(hookInputs("claude-code", "session-start", p)),
			[]string{"hook", "claude-code", "session-start"}, "LOCI_PALACE_PATH="+palace)
		if code != 0 || out != "" || errOut != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 0 and nothing", toml, code, out, errOut)
		}
	}
}

// With the daemon down, unreachable or silent, with stdin never closed,
// with a bad project file or a bad command line, every hook exits 0
// quickly and prints nothing on stdout (issue 26, point 2: the agent's
// session never breaks because loci is not running).
func TestHookIsHarmlessWhenLociIsNot(t *testing.T) {
	// Not parallel: the hook must exit within 1-3 s.
	home, palace := newPalace(t)
	d := start(t, home, palace)
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, ".loci.toml"), []byte("wing = \"billing\"\n"), 0o644)
	d.cmd.Process.Kill()
	d.wait(10 * time.Second)
	// A stale registry file names a dead daemon; the configured port is
	// one nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// A listener that accepts and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	silentPort := silent.Addr().(*net.TCPAddr).Port
	down := []string{"LOCI_PALACE_PATH=" + palace, "LOCI_PORT=" + itoa(closedPort)}
	for _, agent := range []string{"claude-code", "codex", "opencode"} {
		for _, event := range []string{"session-start", "pre-compact", "session-end"} {
			in := hookInputs(agent, event, proj)
			in["summary"] = "a summary that cannot be filed"
			out, errOut, code, took := runIn(proj, home, jsonText(in), []string{"hook", agent, event}, down...)
			if code != 0 || out != "" || took > time.Second {
				t.Errorf("%s %s, daemon down: exit %d in %s, stdout %q (stderr %q); want exit 0 within 1s and no output", agent, event, code, took, out, errOut)
			}
		}
	}
	cases := []struct {
		name  string
		dir   string
		stdin string
		args  []string
		env   []string
		limit time.Duration
	}{
		{"silent daemon", proj, jsonText(hookInputs("claude-code", "session-start", proj)), []string{"hook", "claude-code", "session-start"},
			[]string{"LOCI_PALACE_PATH=" + palace, "LOCI_PORT=" + itoa(silentPort)}, 3 * time.Second},
		{"not JSON", proj, "{not json", []string{"hook", "codex", "session-start"}, down, time.Second},
		{"unknown agent", proj, "{}", []string{"hook", "cursor", "session-start"}, down, time.Second},
		{"unknown event", proj, "{}", []string{"hook", "claude-code", "stop"}, down, time.Second},
		{"no arguments", proj, "{}", []string{"hook"}, down, time.Second},
		{"bad project file", writeProject(t, "wing = \"billing\"\ncolour = \"red\"\n"), "{}", []string{"hook", "claude-code", "session-start"}, down, time.Second},
	}
	for _, c := range cases {
		out, errOut, code, took := runIn(c.dir, home, c.stdin, c.args, c.env...)
		if code != 0 || out != "" || took > c.limit {
			t.Errorf("%s: exit %d in %s, stdout %q (stderr %q); want exit 0 within %s and no output", c.name, code, took, out, errOut, c.limit)
		}
		if c.name == "bad project file" && !strings.Contains(errOut, "loci::project::invalid") {
			t.Errorf("bad project file: stderr does not name the code: %q", errOut)
		}
	}

	// stdin left open by the agent: the hook does not wait for it.
	cmd := exec.Command(bin, "hook", "claude-code", "session-start")
	cmd.Dir, cmd.Env = proj, env(home, down...)
	pr, pw, _ := os.Pipe()
	defer pw.Close()
	cmd.Stdin = pr
	var out bytes.Buffer
	cmd.Stdout = &out
	begin := time.Now()
	if err := cmd.Run(); err != nil || out.Len() != 0 || time.Since(begin) > 2*time.Second {
		t.Errorf("stdin never closed: %v in %s, stdout %q", err, time.Since(begin), out.String())
	}
	pr.Close()
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// writeProject makes a directory holding a .loci.toml with text.
func writeProject(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".loci.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Before compaction and at session end, a summary the hook carries is
// filed as a checkpoint of the agent in the project's wing (found by the
// next session's wake-up); a hook without one files nothing; the hook
// prints nothing either way (issue 26, points 1 and 2).
func TestHookCheckpointsTheSessionSummary(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	proj := writeProject(t, "wing = \"billing\"\n")
	run := func(agent, event string, in map[string]any) {
		t.Helper()
		out, errOut, code, _ := runIn(proj, home, jsonText(in), []string{"hook", agent, event}, "LOCI_PALACE_PATH="+palace)
		if code != 0 || out != "" || errOut != "" {
			t.Fatalf("%s %s: exit %d, stdout %q, stderr %q", agent, event, code, out, errOut)
		}
	}
	jobs := func() int {
		r := d.do("GET", "/api/jobs?kind=checkpoint&limit=200", nil)
		list, _ := r.body["jobs"].([]any)
		return len(list)
	}
	// The documented inputs of Claude Code's PreCompact and SessionEnd and
	// of Codex's carry no summary: nothing is filed.
	for _, agent := range []string{"claude-code", "codex", "opencode"} {
		for _, event := range []string{"pre-compact", "session-end"} {
			run(agent, event, hookInputs(agent, event, proj))
		}
	}
	if n := jobs(); n != 0 {
		t.Fatalf("hooks without a summary queued %d checkpoint jobs", n)
	}
	post := hookInputs("claude-code", "pre-compact", proj)
	post["hook_event_name"], post["compact_summary"] = "PostCompact", "We settled that invoices round per line, not per total."
	run("claude-code", "pre-compact", post)
	oc := hookInputs("opencode", "session-end", proj)
	oc["summary"] = "OpenCode session: the ledger migration is half done."
	run("opencode", "session-end", oc)
	deadline := time.Now().Add(20 * time.Second)
	for jobs() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	r := d.do("GET", "/api/jobs?kind=checkpoint&limit=200", nil)
	for _, j := range r.body["jobs"].([]any) {
		if j := waitJob(t, d, j.(map[string]any)["id"].(string), 20*time.Second, finished); j["status"] != "completed" {
			t.Fatalf("checkpoint job: %v", j)
		}
	}
	for agent, want := range map[string]string{"claude-code": "invoices round per line", "opencode": "ledger migration is half done"} {
		w := d.do("GET", "/api/wake-up?wing=billing&agent_identity="+agent, nil)
		items, _ := w.body["items"].([]any)
		if len(items) != 1 || !strings.Contains(get[string](items[0].(map[string]any), "content"), want) {
			t.Fatalf("%s's wake-up in billing: %s", agent, w.raw)
		}
		it := items[0].(map[string]any)
		if get[string](it, "source", "agent") != agent || get[string](it, "source", "kind") != "transcript" {
			t.Errorf("%s's checkpoint is not signed as its own transcript: %v", agent, it["source"])
		}
	}
	// The next session starts with it.
	out, _, _, _ := runIn(proj, home, jsonText(hookInputs("claude-code", "session-start", proj)), []string{"hook", "claude-code", "session-start"}, "LOCI_PALACE_PATH="+palace)
	if !strings.Contains(out, "invoices round per line") {
		t.Errorf("the next session-start lacks the summary: %s", out)
	}
}

// A .loci.toml sets the CLI's default wing, room and mode; status says
// which file applies; a bad one is loci::project::invalid naming the file
// and the key (issue 26, point 4).
func TestProjectScopeInTheCLI(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	proj := writeProject(t, "wing = \"billing\"\nroom = \"decisions\"\n")
	sub := filepath.Join(proj, "deep")
	os.Mkdir(sub, 0o755)
	cli := func(dir string, args ...string) (string, string, int) {
		t.Helper()
		out, errOut, code, _ := runIn(dir, home, "", append([]string{"--addr", d.addr}, args...))
		return out, errOut, code
	}
	if out, errOut, code := cli(sub, "--json", "drawer", "add", "Invoices round per line."); code != 0 {
		t.Fatalf("drawer add in the project: %d %s %s", code, out, errOut)
	}
	if r := d.do("GET", "/api/wings/billing/rooms/decisions/drawers", nil); len(get[[]any](r.body, "drawers")) != 1 {
		t.Fatalf("the drawer is not in the project's wing and room: %s", r.raw)
	}
	if _, _, code := cli(t.TempDir(), "drawer", "add", "--wing", "search", "--room", "notes", "Stemming is off."); code != 0 {
		t.Fatal("drawer add outside the project")
	}
	// A checkpoint's project items without a wing go to the project's
	// wing, as the hooks file them; an item naming its wing keeps it.
	payload := `{"items":[{"destination":"project","content":"Refunds drain nightly.","tags":[],"source":{"kind":"manual"}},` +
		`{"destination":"project","wing":"search","content":"Phones are slow.","tags":[],"source":{"kind":"manual"}}]}`
	if out, errOut, code, _ := runIn(sub, home, payload, []string{"--addr", d.addr, "checkpoint", "--watch"}); code != 0 {
		t.Fatalf("checkpoint in the project: %d %s %s", code, out, errOut)
	}
	if r := d.do("GET", "/api/wings/billing/rooms/checkpoints/drawers", nil); !strings.Contains(r.raw, "Refunds drain nightly") || strings.Contains(r.raw, "Phones are slow") {
		t.Fatalf("the checkpoint's project item is not in the project's wing alone: %s", r.raw)
	}
	// Flags win over the project file.
	if out, _, code := cli(sub, "--json", "drawer", "list", "--wing", "search", "--room", "notes"); code != 0 || !strings.Contains(out, "Stemming") {
		t.Fatalf("drawer list with flags in the project: %d %s", code, out)
	}
	// Search defaults to the project's wing; --wing= searches every wing.
	waitSearchable := func(text string) {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if out, _, _ := cli(t.TempDir(), "--json", "search", text); strings.Contains(out, "\"id\"") {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%q never became searchable", text)
	}
	waitSearchable("stemming")
	waitSearchable("invoices")
	if out, _, _ := cli(sub, "--json", "search", "stemming"); strings.Contains(out, "Stemming") {
		t.Errorf("search in the project found another wing's drawer: %s", out)
	}
	if out, _, _ := cli(sub, "--json", "search", "invoices"); !strings.Contains(out, "Invoices") {
		t.Errorf("search in the project missed its own drawer: %s", out)
	}
	if out, _, _ := cli(sub, "--json", "search", "--wing=", "stemming"); !strings.Contains(out, "Stemming") {
		t.Errorf("search --wing= in the project did not search every wing: %s", out)
	}

	// Status says which file applies, human and JSON.
	out, errOut, code := cli(sub, "status")
	if code != 0 || !strings.Contains(out, "project:    "+filepath.Join(proj, ".loci.toml")+" (wing billing, room decisions)") {
		t.Errorf("status in the project: %d %q %q", code, out, errOut)
	}
	out, _, _ = cli(sub, "--json", "status")
	var st map[string]any
	json.Unmarshal([]byte(out), &st)
	if get[string](st, "project", "file") != filepath.Join(proj, ".loci.toml") || get[string](st, "project", "wing") != "billing" ||
		get[string](st, "project", "room") != "decisions" || get[string](st, "version") == "" {
		t.Errorf("status --json in the project: %s", out)
	}
	out, _, _ = cli(t.TempDir(), "status")
	if !strings.Contains(out, "project:    none") {
		t.Errorf("status outside a project: %s", out)
	}

	// The project's mode is sent: read_only refuses a write.
	ro := writeProject(t, "wing = \"billing\"\nroom = \"decisions\"\nmode = \"read_only\"\n")
	if _, errOut, code := cli(ro, "--json", "drawer", "add", "Not stored."); code == 0 || !strings.Contains(errOut, "loci::mode::forbidden") {
		t.Errorf("a write in a read_only project: exit %d, %s", code, errOut)
	}
	if _, _, code := cli(ro, "--mode", "full", "drawer", "add", "Stored: --mode wins."); code != 0 {
		t.Errorf("--mode full in a read_only project was refused")
	}

	// A bad project file: project::invalid naming the file and the key,
	// for the commands that use it and in status; nothing written.
	bad := writeProject(t, "wing = \"billing\"\nmode = \"sometimes\"\n")
	before := counts(d)
	_, errOut, code = cli(bad, "--json", "drawer", "add", "--room", "r", "Not stored.")
	var body map[string]any
	json.Unmarshal([]byte(errOut), &body)
	if code != 1 || body["code"] != "loci::project::invalid" || !strings.Contains(get[string](body, "error"), filepath.Join(bad, ".loci.toml")+": mode") {
		t.Errorf("a bad project file: exit %d, %s", code, errOut)
	}
	if counts(d) != before {
		t.Errorf("a bad project file still wrote")
	}
	out, errOut, code = cli(bad, "status")
	if code != 1 || !strings.Contains(out, "project:    INVALID: ") || !strings.Contains(errOut, "loci::project::invalid") {
		t.Errorf("status with a bad project file: exit %d, %q, %q", code, out, errOut)
	}
	// Every daemon command sends the project's mode, so a bad file stops
	// it; --mode (or LOCI_MODE) given, the file is not needed.
	if _, errOut, code := cli(bad, "wing", "list"); code != 1 || !strings.Contains(errOut, "loci::project::invalid") {
		t.Errorf("wing list with a bad project file: exit %d %s", code, errOut)
	}
	if _, errOut, code := cli(bad, "--mode", "full", "wing", "list"); code != 0 {
		t.Errorf("wing list --mode full with a bad project file: exit %d %s", code, errOut)
	}
	// LOCI_PROJECT names the file directly.
	out, _, _, _ = runIn(t.TempDir(), home, "", []string{"--addr", d.addr, "status"}, "LOCI_PROJECT="+proj)
	if !strings.Contains(out, filepath.Join(proj, ".loci.toml")) {
		t.Errorf("status with LOCI_PROJECT: %s", out)
	}
	// Stopping the daemon does not depend on the project file.
	if _, errOut, code := cli(bad, "daemon", "stop"); code != 0 {
		t.Errorf("daemon stop with a bad project file: exit %d %s", code, errOut)
	}
	d.wait(30 * time.Second)
}

// With authentication on, the hooks take the token the way the CLI does
// (LOCI_AUTH_TOKEN or the configuration file); without it they say so on
// stderr and print nothing; the token is never printed (issue 26: auth
// from the environment).
func TestHookTakesTheTokenLikeTheCLI(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	const secret = "a-hook-shared-secret-0026"
	d := start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+secret)
	r := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": map[string]any{"items": []any{
		map[string]any{"destination": "project", "wing": "billing", "content": "Invoices round per line.", "tags": []string{},
			"source": map[string]any{"kind": "manual", "agent": "codex"}}}}}, "Authorization", "Bearer "+secret)
	if r.status != 202 {
		t.Fatalf("checkpoint: %s", r.raw)
	}
	for {
		j := d.do("GET", "/api/jobs/"+r.body["id"].(string), nil, "Authorization", "Bearer "+secret)
		if j.body["status"] == "completed" {
			break
		}
		if j.body["status"] == "failed" {
			t.Fatalf("checkpoint job: %s", j.raw)
		}
		time.Sleep(10 * time.Millisecond)
	}
	proj := writeProject(t, "wing = \"billing\"\n")
	in := jsonText(hookInputs("codex", "session-start", proj))
	out, errOut, code, _ := runIn(proj, home, in, []string{"hook", "codex", "session-start"}, "LOCI_PALACE_PATH="+palace, "LOCI_AUTH_TOKEN="+secret)
	if code != 0 || !strings.Contains(out, "Invoices round per line.") || errOut != "" {
		t.Fatalf("with the token: exit %d, %q, %q", code, out, errOut)
	}
	out, errOut, code, _ = runIn(proj, home, in, []string{"hook", "codex", "session-start"}, "LOCI_PALACE_PATH="+palace)
	if code != 0 || out != "" || !strings.Contains(errOut, "loci::auth::unauthorized") {
		t.Fatalf("without the token: exit %d, %q, %q", code, out, errOut)
	}
	out, errOut, _, _ = runIn(proj, home, in, []string{"hook", "codex", "session-start"}, "LOCI_PALACE_PATH="+palace, "LOCI_AUTH_TOKEN=wrong-"+secret)
	if out != "" || strings.Contains(errOut, secret) {
		t.Fatalf("with a wrong token: %q, %q", out, errOut)
	}
}

// The help of a refusal the project file causes says what to type: a
// missing room points at `loci room list --wing <wing>` (room list takes no
// argument), and a write refused for the file's read_only mode names the
// file and the --mode full that overrides it.
func TestProjectScopeHelpSaysWhatToType(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	d.do("POST", "/api/wings", map[string]any{"name": "billing"})
	proj := writeProject(t, "wing = \"billing\"\nroom = \"decisions\"\n")
	cli := func(dir string, args ...string) (string, string, int) {
		t.Helper()
		out, errOut, code, _ := runIn(dir, home, "", append([]string{"--addr", d.addr}, args...))
		return out, errOut, code
	}
	_, errOut, code := cli(proj, "drawer", "list")
	if code == 0 || !strings.Contains(errOut, "room_not_found") || !strings.Contains(errOut, "`loci room list --wing billing`") {
		t.Fatalf("drawer list of a missing room: %d %s", code, errOut)
	}
	if out, errOut, code := cli(proj, "room", "list", "--wing", "billing"); code != 0 {
		t.Fatalf("the command the help names: %d %s %s", code, out, errOut)
	}

	ro := writeProject(t, "wing = \"billing\"\nroom = \"decisions\"\nmode = \"read_only\"\n")
	file := filepath.Join(ro, ".loci.toml")
	_, errOut, code = cli(ro, "drawer", "add", "x")
	if code == 0 || !strings.Contains(errOut, "mode") || !strings.Contains(errOut, file) || !strings.Contains(errOut, "--mode full") ||
		strings.Contains(errOut, "X-Loci-Mode") {
		t.Fatalf("drawer add in a read_only project: %d %s", code, errOut)
	}
	out, errOut, _ := cli(ro, "--json", "drawer", "add", "x")
	var body map[string]any
	if json.Unmarshal([]byte(errOut), &body); !strings.Contains(get[string](body, "help"), file) {
		t.Fatalf("drawer add --json in a read_only project: %s %s", out, errOut)
	}
	if out, errOut, code := cli(ro, "--mode", "full", "drawer", "add", "x"); code != 0 {
		t.Fatalf("--mode full overrides the file: %d %s %s", code, out, errOut)
	}
	// A mode given by LOCI_MODE, not the file, keeps the daemon's help.
	out, errOut, code, _ = runIn(t.TempDir(), home, "", []string{"--addr", d.addr, "drawer", "add", "--wing", "billing", "--room", "r", "x"}, "LOCI_MODE=read_only")
	if code == 0 || strings.Contains(errOut, ".loci.toml") {
		t.Fatalf("drawer add with LOCI_MODE=read_only: %d %s %s", code, out, errOut)
	}
}

// A FIFO as the project file (a .loci.toml anyone could make in /tmp, or
// LOCI_PROJECT naming one) is refused at once: the CLI and the hook no
// longer block opening it.
func TestAFIFOProjectFileDoesNotHang(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := t.TempDir()
	fifo := filepath.Join(dir, ".loci.toml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	sub := filepath.Join(dir, "repo")
	os.Mkdir(sub, 0o755)
	for _, tc := range []struct {
		extra []string
		args  []string
	}{
		{nil, []string{"--addr", "127.0.0.1:1", "drawer", "list"}},
		{[]string{"LOCI_PROJECT=" + fifo}, []string{"--addr", "127.0.0.1:1", "drawer", "list"}},
		{nil, []string{"hook", "claude-code", "session-start"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, bin, tc.args...)
		cmd.Dir, cmd.Env, cmd.Stdin = sub, env(home, tc.extra...), strings.NewReader("{}")
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			t.Fatalf("%v %v still running after 10s", tc.extra, tc.args)
		}
		if !strings.Contains(string(out), "not a regular file") || !strings.Contains(string(out), fifo) {
			t.Fatalf("%v %v: %v %s", tc.extra, tc.args, err, out)
		}
	}
}
