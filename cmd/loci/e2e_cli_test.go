package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func TestCLI(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	cli := func(stdin string, args ...string) (string, string, int) { return d.cli(stdin, args...) }

	// An empty palace: wake-up says what it looked for.
	if out, _, code := cli("", "wake-up", "--agent", "nobody"); code != 0 || !strings.Contains(out, "nothing to wake up to yet: no diary entry of nobody") {
		t.Fatalf("loci wake-up without a wing, nothing found: %d %s", code, out)
	}
	out, stderr, code := cli("", "drawer", "add", "--wing", "w", "--room", "r", "--name", "notes/today", "--tag", "a,b", "We", "ship", "on", "Friday.")
	if code != 0 || !strings.Contains(out, "stored drawer") {
		t.Fatalf("add: %d %s %s", code, out, stderr)
	}
	// Content from standard input, wing and room from the environment.
	_, _, code = runCLI(home, "Piped content for a drawer.", []string{"--addr", d.addr, "drawer", "add"}, []string{"LOCI_WING=w", "LOCI_ROOM=r"})
	if code != 0 {
		t.Fatal("add from stdin with LOCI_WING/LOCI_ROOM failed")
	}
	out, _, _ = cli("", "--json", "drawer", "get", "--wing", "w", "--room", "r", "notes/today")
	var dr struct {
		ID         string   `json:"id"`
		Content    string   `json:"content"`
		Tags       []string `json:"tags"`
		Provenance struct {
			RequestedBy string `json:"requested_by"`
		} `json:"provenance"`
	}
	if err := json.Unmarshal([]byte(out), &dr); err != nil || dr.Content != "We ship on Friday." || len(dr.Tags) != 2 || dr.Provenance.RequestedBy != "cli" {
		t.Fatalf("get --json: %v %s", err, out)
	}
	out, _, _ = cli("", "drawer", "list", "--wing", "w", "--room", "r")
	if !strings.Contains(out, "notes/today") || !strings.Contains(out, "Piped content") {
		t.Fatalf("list: %s", out)
	}
	out, _, code = cli("", "drawer", "supersede", dr.ID, "We ship on Monday.")
	if code != 0 || !strings.Contains(out, "replacement") {
		t.Fatalf("supersede: %d %s", code, out)
	}
	out, _, _ = cli("", "drawer", "history", dr.ID)
	if !strings.Contains(out, "1. "+dr.ID) || !strings.Contains(out, "Monday") {
		t.Fatalf("history: %s", out)
	}
	// A rejection shows the daemon's status and code.
	_, stderr, code = cli("", "drawer", "supersede", dr.ID, "again")
	if code != 1 || !strings.Contains(stderr, "loci::client::remote_rejected") || !strings.Contains(stderr, "409 loci::palace::drawer_superseded") {
		t.Fatalf("rejection: %d %s", code, stderr)
	}
	_, stderr, _ = cli("", "--json", "drawer", "supersede", dr.ID, "again")
	var body map[string]any
	if json.Unmarshal([]byte(stderr), &body); body["code"] != "loci::client::remote_rejected" || body["remote_code"] != "loci::palace::drawer_superseded" || body["status"] != 409.0 {
		t.Fatalf("--json rejection: %s", stderr)
	}
	// Memory mode from the flag and the environment.
	if _, stderr, code = cli("", "--mode", "read_only", "wing", "create", "x"); code != 1 || !strings.Contains(stderr, "loci::mode::forbidden") {
		t.Fatalf("--mode read_only: %d %s", code, stderr)
	}
	if _, stderr, code = runCLI(home, "", []string{"--addr", d.addr, "wing", "list"}, []string{"LOCI_MODE=disabled"}); code != 1 || !strings.Contains(stderr, "loci::mode::forbidden") {
		t.Fatalf("LOCI_MODE=disabled: %d %s", code, stderr)
	}
	if _, stderr, code = cli("", "--mode", "maybe", "wing", "list"); code != 1 || !strings.Contains(stderr, "loci::input::invalid") {
		t.Fatalf("bad mode: %d %s", code, stderr)
	}
	// Notes and diary.
	if out, _, code = cli("", "note", "add", "--wing", "w", "--room", "n", "a note"); code != 0 {
		t.Fatalf("note: %s", out)
	}
	if out, _, _ = cli("", "note", "add", "--wing", "w", "--room", "n", "a note"); !strings.Contains(out, "already stored") {
		t.Fatalf("same note: %s", out)
	}
	cli("", "diary", "write", "--agent", "claude", "--wing", "w", "dear diary")
	if out, _, _ = cli("", "diary", "read", "--agent", "claude", "--wing", "w"); !strings.Contains(out, "dear diary") {
		t.Fatalf("diary read: %s", out)
	}
	// Wings and rooms; delete asks unless --yes.
	if out, _, _ = cli("", "wing", "list"); !strings.Contains(out, "w ") {
		t.Fatalf("wing list: %s", out)
	}
	if _, stderr, code = cli("n\n", "wing", "delete", "w"); code != 1 || !strings.Contains(stderr, "loci::cli::aborted") {
		t.Fatalf("declined delete: %d %s", code, stderr)
	}
	if out, _, code = cli("", "room", "delete", "--wing", "w", "--yes", "n"); code != 0 || !strings.Contains(out, "removed 0 wings, 1 rooms, 1 drawers") {
		t.Fatalf("room delete: %d %s", code, out)
	}
	// Status: 0 while running.
	if out, _, code = cli("", "status"); code != 0 || !strings.Contains(out, "healthy") {
		t.Fatalf("status: %d %s", code, out)
	}
	// Completions.
	if out, _, code = cli("", "completion", "bash"); code != 0 || !strings.Contains(out, "bash completion") {
		t.Fatalf("completion: %d", code)
	}
	// Stop, then status exits 3 and says not_running.
	if out, _, code = cli("", "daemon", "stop"); code != 0 || !strings.Contains(out, "stopped") {
		t.Fatalf("daemon stop: %d %s", code, out)
	}
	_, stderr, code = cli("", "status")
	if code != 3 || !strings.Contains(stderr, "loci::client::not_running") {
		t.Fatalf("status when stopped: %d %s", code, stderr)
	}
	if _, stderr, code = cli("", "wing", "list"); code != 1 || !strings.Contains(stderr, "not_running") {
		t.Fatalf("wing list when stopped: %d %s", code, stderr)
	}
}

func TestDaemonStartStop(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	envs := []string{"LOCI_PALACE_PATH=" + palace, "LOCI_PORT=0"}
	out, stderr, code := runCLI(home, "", []string{"daemon", "start"}, envs)
	if code != 0 || !strings.Contains(out, "loci started") {
		t.Fatalf("start: %d %s %s", code, out, stderr)
	}
	t.Cleanup(func() { runCLI(home, "", []string{"daemon", "stop"}, envs) })
	if out, _, code = runCLI(home, "", []string{"daemon", "start"}, envs); code != 0 || !strings.Contains(out, "already running") {
		t.Fatalf("second start: %d %s", code, out)
	}
	if out, _, code = runCLI(home, "", []string{"daemon", "status"}, envs); code != 0 || !strings.Contains(out, palace) {
		t.Fatalf("status: %d %s", code, out)
	}
	if out, _, code = runCLI(home, "", []string{"doctor"}, envs); code != 0 || !strings.Contains(out, "held by the running daemon") {
		t.Fatalf("doctor while running: %d %s", code, out)
	}
	if out, _, code = runCLI(home, "", []string{"daemon", "status"}, envs); code != 0 || !strings.Contains(out, "/mcp") || !strings.Contains(out, "dashboard:  off") {
		t.Fatalf("status names MCP's address and the dashboard off: %d %s", code, out)
	}
	// --web reaches the restarted daemon: the dashboard is served, and
	// start and status say where it and MCP are.
	if out, _, code = runCLI(home, "", []string{"daemon", "restart", "--web"}, envs); code != 0 || !strings.Contains(out, "loci started") ||
		!strings.Contains(out, "/ui/") || !strings.Contains(out, "/mcp") {
		t.Fatalf("restart --web: %d %s", code, out)
	}
	out, _, code = runCLI(home, "", []string{"--json", "daemon", "status"}, envs)
	var st struct{ Address, MCP, Dashboard string }
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.Dashboard != "http://"+st.Address+"/ui/" || st.MCP != "http://"+st.Address+"/mcp" {
		t.Fatalf("status after restart --web: %d %s", code, out)
	}
	if resp, err := http.Get(st.Dashboard); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the dashboard after restart --web: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// A plain restart keeps it on.
	if out, _, code = runCLI(home, "", []string{"daemon", "restart"}, envs); code != 0 || !strings.Contains(out, "/ui/") {
		t.Fatalf("restart of a daemon serving the dashboard: %d %s", code, out)
	}
	if out, _, code = runCLI(home, "", []string{"daemon", "stop"}, envs); code != 0 || !strings.Contains(out, "stopped") {
		t.Fatalf("stop: %d %s", code, out)
	}
	if out, _, code = runCLI(home, "", []string{"doctor"}, envs); code != 0 || !strings.Contains(out, "opens cleanly") {
		t.Fatalf("doctor when stopped: %d %s", code, out)
	}
}

// A word that is not a command is loci::input::invalid with a suggestion,
// at the root and in a command group, and so are arguments a command does
// not take (with its usage); a group alone prints its help.
func TestCLIUnknownCommands(t *testing.T) {
	t.Parallel()
	home, _ := newPalace(t)
	for _, c := range []struct {
		args    []string
		suggest string
	}{
		{[]string{"stop"}, "`loci daemon stop`"},
		{[]string{"drawer", "ad"}, "`loci drawer add`"},
		{[]string{"job", "lst"}, "`loci job list`"},
		{[]string{"serch", "x"}, "`loci search`"},
		{[]string{"--json", "wing", "nope"}, ""},
		{[]string{"search"}, "usage: loci search TEXT..."},
		{[]string{"room", "list", "projects"}, "usage: loci room list"},
		{[]string{"drawer", "get", "a", "b"}, "usage: loci drawer get DRAWER"},
	} {
		stdout, stderr, code := runCLI(home, "", c.args, nil)
		if code != 1 || stdout != "" || !strings.Contains(stderr, "loci::input::invalid") || !strings.Contains(stderr, c.suggest) {
			t.Errorf("loci %v: exit %d, stdout %q, stderr %q", c.args, code, stdout, stderr)
		}
	}
	if stdout, stderr, code := runCLI(home, "", []string{"drawer"}, nil); code != 0 || !strings.Contains(stdout, "Usage:\n  loci drawer [command]\n") || stderr != "" {
		t.Errorf("loci drawer: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// `loci --help` says where MCP and the dashboard live and how to connect
// an agent (issue 36, point 14).
func TestHelpNamesMCPAndTheDashboard(t *testing.T) {
	t.Parallel()
	home, _ := newPalace(t)
	out, _, code := runCLI(home, "", []string{"--help"}, nil)
	for _, want := range []string{"/mcp", "/ui/", "--web", "claude mcp add"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("loci --help lacks %q: %d\n%s", want, code, out)
		}
	}
}

// A command missing a flag it cannot do without names the flag before
// calling the daemon (the daemon would name its own field,
// agent_identity), and no error tells a person at the CLI to call a REST
// route (issue 36, point 12).
func TestCLINamesItsOwnRequiredFlags(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	for _, args := range [][]string{
		{"wake-up"},
		{"wake-up", "--wing", "w"},
		{"diary", "write", "--wing", "w", "hello"},
		{"diary", "read", "--wing", "w"},
	} {
		_, stderr, code := d.cli("", args...)
		if code != 1 || !strings.Contains(stderr, "--agent is required") || strings.Contains(stderr, "agent_identity") || strings.Contains(stderr, "remote_rejected") {
			t.Errorf("loci %s: %d %s", strings.Join(args, " "), code, stderr)
		}
	}
	if _, stderr, code := d.cli("", "checkpoint"); code != 1 || !strings.Contains(stderr, "payload is empty") || !strings.Contains(stderr, "-f FILE") {
		t.Errorf("loci checkpoint with nothing on stdin: %d %s", code, stderr)
	}
	for _, args := range [][]string{
		{"entity", "get", "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a"},
		{"graph", "--entity", "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a"},
		{"fact", "history", "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a"},
		{"miner", "get", "nope"},
		{"trigger", "get", "nope"},
	} {
		_, stderr, code := d.cli("", args...)
		if code != 1 || !strings.Contains(stderr, "help: ") || strings.Contains(stderr, "/api/") || strings.Contains(stderr, "()") {
			t.Errorf("loci %s: %d %s", strings.Join(args, " "), code, stderr)
		}
	}
}

// drawer supersede, history and duplicates take a name with --wing and
// --room, like drawer get (issue 36, point 15).
func TestDrawerCommandsTakeNames(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	if _, stderr, code := d.cli("", "drawer", "add", "--wing", "w", "--room", "r", "--name", "notes/deploy", "We deploy on Tuesdays."); code != 0 {
		t.Fatalf("add: %s", stderr)
	}
	out, stderr, code := d.cli("", "drawer", "supersede", "--wing", "w", "--room", "r", "notes/deploy", "We deploy on Thursdays.")
	if code != 0 || !strings.Contains(out, "superseded") {
		t.Fatalf("supersede by name: %d %s %s", code, out, stderr)
	}
	out, stderr, code = d.cli("", "drawer", "history", "--wing", "w", "--room", "r", "notes/deploy")
	if code != 0 || !strings.Contains(out, "Tuesdays") || !strings.Contains(out, "Thursdays") {
		t.Fatalf("history by name: %d %s %s", code, out, stderr)
	}
	if out, stderr, code = d.cli("", "drawer", "duplicates", "--wing", "w", "--room", "r", "notes/deploy"); code != 0 {
		t.Fatalf("duplicates by name: %d %s %s", code, out, stderr)
	}
	// drawer get takes an id alone.
	list := d.do("GET", "/api/wings/w/rooms/r/drawers", nil)
	cur := get[string](get[[]any](list.body, "drawers")[0].(map[string]any), "id")
	if out, _, code = d.cli("", "drawer", "get", cur); code != 0 || !strings.Contains(out, "Thursdays") {
		t.Fatalf("drawer get by id alone: %d %s", code, out)
	}
	if out, _, code = d.cli("", "--json", "drawer", "get", cur); code != 0 || !strings.Contains(out, `"id": "`+cur+`"`) || strings.Contains(out, "versions") {
		t.Fatalf("drawer get --json by id alone: %d %s", code, out)
	}
	// Search with --all says which hit is no longer current.
	if out, _, code = d.cli("", "search", "--all", "--ranking", "lexical", "deploy", "Tuesdays"); code != 0 || !strings.Contains(out, "[superseded ") {
		t.Fatalf("search --all marks the superseded version: %d %s", code, out)
	}
	// A name without a room says how to give one; an unknown name is the
	// daemon's drawer_not_found.
	if _, stderr, code = d.cli("", "drawer", "history", "notes/deploy"); code != 1 || !strings.Contains(stderr, "--wing and --room") {
		t.Fatalf("history by name without a room: %d %s", code, stderr)
	}
	if _, stderr, code = d.cli("", "drawer", "history", "--wing", "w", "--room", "r", "nope"); code != 1 || !strings.Contains(stderr, "drawer_not_found") {
		t.Fatalf("history of an unknown name: %d %s", code, stderr)
	}
}

// A room's drawer list pages with a cursor over REST and the CLI, and says
// when more drawers follow (issue 36, point 16: 283 of 483 mined drawers
// were out of reach past 200).
func TestDrawerListPages(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	for i := range 7 {
		if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": fmt.Sprintf("Drawer number %d of the paged room.", i)}); r.status != 201 {
			t.Fatalf("add: %s", r.raw)
		}
	}
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		path := "/api/wings/w/rooms/r/drawers?limit=3"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := d.do("GET", path, nil)
		if r.status != 200 {
			t.Fatalf("page %d: %s", pages, r.raw)
		}
		pages++
		for _, p := range get[[]any](r.body, "drawers") {
			id := p.(map[string]any)["id"].(string)
			if seen[id] {
				t.Fatalf("drawer %s on two pages", id)
			}
			seen[id] = true
		}
		next, _ := r.body["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
		if pages > 5 {
			t.Fatalf("pages never end")
		}
	}
	if pages != 3 || len(seen) != 7 {
		t.Fatalf("%d pages, %d drawers; want 3 pages of all 7", pages, len(seen))
	}
	if r := d.do("GET", "/api/wings/w/rooms/r/drawers?cursor=nonsense", nil); r.status != 400 || !strings.Contains(r.raw, "cursor") {
		t.Fatalf("bad cursor: %d %s", r.status, r.raw)
	}
	out, _, code := d.cli("", "drawer", "list", "--wing", "w", "--room", "r", "--limit", "5")
	if code != 0 || !strings.Contains(out, "more drawers: add --cursor ") {
		t.Fatalf("drawer list says more: %d %s", code, out)
	}
	next := strings.TrimSuffix(out[strings.Index(out, "--cursor ")+len("--cursor "):], " for the next page\n")
	out, _, code = d.cli("", "drawer", "list", "--wing", "w", "--room", "r", "--limit", "5", "--cursor", next)
	if code != 0 || strings.Count(out, "Drawer number") != 2 || strings.Contains(out, "more drawers") {
		t.Fatalf("second page: %d %s", code, out)
	}
}

// A daemon on a fixed port answers a moment before it writes its registry
// file: daemon start waits for the file and does not say it could not be
// written (the trial of issue 27 saw that note on every start with --port).
func TestDaemonStartOnAFixedPortFindsItsRegistry(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	envs := []string{"LOCI_PALACE_PATH=" + palace}
	for range 3 {
		port := strconv.Itoa(freePort(t))
		out, stderr, code := runCLI(home, "", []string{"daemon", "start", "--port", port}, envs)
		runCLI(home, "", []string{"daemon", "stop"}, envs)
		if code != 0 || !strings.Contains(out, "loci started") || strings.Contains(out, "could not be written") {
			t.Fatalf("start on port %s: %d\n%s%s", port, code, out, stderr)
		}
	}
}
