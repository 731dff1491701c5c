package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mineTree writes a project: files, a skipped directory, a .env with a
// key, an empty file.
func mineTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "proj")
	for rel, content := range map[string]string{
		"README.md":           "# Proj\n\nThe deploy queue runs nightly.\n",
		"src/main.go":         "package main\n\n// main starts the lamp server.\nfunc main() {}\n",
		"node_modules/x.js":   "skipped\n",
		".env":                "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLF\n",
		"docs/empty.txt":      "",
		"docs/kettle-note.md": "Copper kettles hold heat for a long time.\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Mining through the CLI, REST and MCP against the real daemon: the CLI's
// summary, the drawers and their search, the secret kept out, a second
// mine changing nothing, GET /api/sources, and bad inputs refused with
// {error, code, help} and nothing queued.
func TestMineEndToEnd(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	root := mineTree(t)

	// The CLI makes a relative path absolute and follows the job.
	out, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "mine", "proj"}, nil)
	_ = out
	if code == 0 || !strings.Contains(errOut, "cannot be read on the daemon's machine") {
		t.Fatalf("mine of a relative path that does not exist here: %d %s %s", code, out, errOut)
	}
	cmd := []string{"--addr", d.addr, "mine", root}
	out, errOut, code = runCLI(home, "", cmd, nil)
	if code != 0 || !strings.Contains(out, "mined 5 of 5 documents found: 4 changed the palace, 0 unchanged, 1 filtered, 0 skipped") ||
		!strings.Contains(out, "drawers: 4 created, 0 superseded, 0 closed; 0 similar; 1 secrets redacted") {
		t.Fatalf("loci mine: %d\n%s\n%s", code, out, errOut)
	}
	room := d.do("GET", "/api/wings/proj/rooms/files", nil)
	if room.status != 200 || get[float64](room.body, "drawers") != 4 {
		t.Fatalf("room files: %s", room.raw)
	}
	r := d.do("GET", "/api/wings/proj/rooms/files/drawers/src/main.go", nil)
	if r.status != 200 || !strings.Contains(r.body["content"].(string), "lamp server") || get[string](r.body, "source", "uri") != filepath.Join(root, "src", "main.go") ||
		get[string](r.body, "source", "kind") != "file" {
		t.Fatalf("a mined drawer: %s", r.raw)
	}
	r = d.do("GET", "/api/wings/proj/rooms/files/drawers/.env", nil)
	if r.status != 200 || strings.Contains(r.raw, "AKIA") || !strings.Contains(r.raw, "[REDACTED:aws_access_key_id]") {
		t.Fatalf("the .env drawer: %s", r.raw)
	}
	s := d.do("POST", "/api/search", map[string]any{"text": "copper kettles heat"})
	if s.status != 200 || len(s.body["hits"].([]any)) == 0 || !strings.Contains(s.raw, "docs/kettle-note.md") {
		t.Fatalf("search of mined text: %s", s.raw)
	}
	if strings.Contains(d.log.String(), "AKIA") {
		t.Fatal("the secret reached the daemon's log")
	}
	out, _, code = runCLI(home, "", cmd, nil)
	if code != 0 || !strings.Contains(out, "mined 0 of 0 documents found") {
		t.Fatalf("mining an unchanged tree: %d %s", code, out)
	}
	src := d.do("GET", "/api/sources", nil)
	adapters, _ := src.body["adapters"].([]any)
	mined, _ := src.body["sources"].([]any)
	if src.status != 200 || adapterInfo(adapters, "directory") == nil || len(mined) != 1 ||
		get[string](mined[0].(map[string]any), "locator") != root || get[float64](mined[0].(map[string]any), "documents") != 4 {
		t.Fatalf("sources: %s", src.raw)
	}
	// Every source of a fresh daemon is enabled, built in or bundled (the
	// source packages shipped with loci), and says so.
	for _, a := range adapters {
		if a := a.(map[string]any); a["state"] != "enabled" || (a["origin"] != "built-in" && a["origin"] != "bundled") {
			t.Fatalf("adapter %v: want state enabled, origin built-in or bundled", a)
		}
	}
	if a := adapterInfo(adapters, "directory"); a["origin"] != "built-in" {
		t.Fatalf("the directory adapter: %v", a)
	}
	// The address as loci status prints it works as --addr too.
	if out, _, code := runCLI(home, "", []string{"--addr", "http://" + d.addr + "/", "source", "list"}, nil); code != 0 || !strings.Contains(out, root+"  4 documents") {
		t.Fatalf("loci source list: %d %s", code, out)
	}

	// Over MCP, through a real SDK session.
	sess := mcpSession(t, d)
	wantError(t, sess, "loci_mine", map[string]any{"path": "relative/dir"}, "loci::input::invalid", "absolute")
	wantError(t, sess, "loci_mine", map[string]any{"path": root, "source": "directory"}, "loci::input::invalid", "exactly one")
	job, isErr := callTool(t, sess, "loci_mine", map[string]any{"path": root, "full": true})
	if isErr || job["kind"] != "mine" || job["status"] != "queued" {
		t.Fatalf("loci_mine: %v", job)
	}
	j := waitJob(t, d, job["id"].(string), 30*time.Second, finished)
	if j["status"] != "completed" || get[float64](j, "result", "unchanged") != 4 || get[float64](j, "result", "created") != 0 {
		t.Fatalf("a full mine over MCP: %v", j)
	}

	// Bad inputs over REST: each {error, code, help}, nothing queued.
	before := d.do("GET", "/api/jobs", nil).raw
	for _, c := range []struct {
		body   map[string]any
		status int
		code   string
	}{
		{map[string]any{"type": "mine", "path": "relative/dir"}, 400, "loci::input::invalid"},
		{map[string]any{"type": "mine", "path": root, "source": "directory"}, 400, "loci::input::invalid"},
		{map[string]any{"type": "mine", "source": "ftp", "locator": "x"}, 404, "loci::source::not_found"},
		{map[string]any{"type": "mine", "path": root, "options": map[string]string{"depth": "1"}}, 400, "loci::input::invalid"},
		{map[string]any{"type": "mine", "path": root, "options": map[string]string{"dir": "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"}}, 400, "loci::input::invalid"},
		{map[string]any{"type": "mine", "path": root, "options": map[string]string{"since": "yesterday"}}, 400, "loci::input::invalid"},
	} {
		r := d.do("POST", "/api/jobs", c.body)
		if r.status != c.status || r.code() != c.code || r.body["help"] == "" || r.body["error"] == "" {
			t.Errorf("%v: %d %s", c.body, r.status, r.raw)
		}
	}
	if after := d.do("GET", "/api/jobs", nil).raw; after != before {
		t.Fatal("a refused mine queued a job")
	}
	// Reading is allowed, mining is a write.
	if r := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "path": root}, "X-Loci-Mode", "read_only"); r.status != 403 {
		t.Fatalf("a mine in read_only: %d %s", r.status, r.raw)
	}
}

// kill -9 in the middle of a mine, then a restart: the job resumes from
// its last batch and every file is filed exactly once.
func TestKill9DuringMine(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	root := filepath.Join(t.TempDir(), "many")
	const files = 3000
	for i := range files {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%30), fmt.Sprintf("f%04d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d holds the note about lamp %d and kettle %d\n", i, i*31, i*7919)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "path": root})
	if r.status != 202 {
		t.Fatalf("submit: %d %s", r.status, r.raw)
	}
	id := r.body["id"].(string)
	at := waitJob(t, d, id, 60*time.Second, func(j map[string]any) bool {
		return get[float64](j, "progress", "current") > 0 || finished(j)
	})
	d.cmd.Process.Kill()
	t.Logf("killed with the job %s at %v of %d documents", at["status"], get[float64](at, "progress", "current"), files)
	<-d.exited
	d = start(t, home, palace)
	j := waitJob(t, d, id, 120*time.Second, finished)
	if j["status"] != "completed" || get[float64](j, "result", "discovered") != files || get[float64](j, "result", "documents") != files ||
		get[float64](j, "result", "created") != files {
		t.Fatalf("the mine after a kill -9: %v", j)
	}
	room := d.do("GET", "/api/wings/many/rooms/files", nil)
	if get[float64](room.body, "drawers") != files || get[float64](room.body, "drawers_stored") != files {
		t.Fatalf("drawers after the crash: %s, want %d", room.raw, files)
	}
}

// Miners come from the configuration file: listed with their state (and a
// credential's kind and availability, never its name or value), run as mine
// jobs, refused while disabled or unable to run, and an option override
// that may widen what a miner reads needs allow_broaden.
func TestMinersFromTheConfigFile(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	root := mineTree(t)
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(`
[miners.docs]
locator = "`+root+`"
wing = "project-docs"
enabled = true
options = { dir = "docs" }
max_documents = 5
schedule = { every = "1h" }

[miners.off]
locator = "`+root+`"

[miners.broken]
source = "ftp"
locator = "x"
enabled = true

[miners.keyed]
locator = "`+root+`"
enabled = true
credential = { env = "LOCI_TEST_MINER_KEY" }

[source_configs.srcdocs]
source = "directory"
options = { dir = "src" }
credential = { file = "/no/such/key/file" }

[miners.viaconfig]
source = "srcdocs"
locator = "`+root+`"
wing = "via"
enabled = true
`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := start(t, home, palace, "LOCI_CONFIG="+cfg, "LOCI_TEST_MINER_KEY=kept-out-of-answers")
	r := d.do("GET", "/api/miners", nil)
	miners, _ := r.body["miners"].([]any)
	if r.status != 200 || len(miners) != 5 || r.body["config_file"] != cfg || strings.Contains(r.raw, "kept-out-of-answers") ||
		strings.Contains(r.raw, "LOCI_TEST_MINER_KEY") {
		t.Fatalf("miners: %s", r.raw)
	}
	state := map[string]map[string]any{}
	for _, m := range miners {
		mm := m.(map[string]any)
		state[mm["name"].(string)] = mm
	}
	if state["docs"]["state"] != "ready" || state["off"]["state"] != "disabled" || state["broken"]["state"] != "unavailable" ||
		!strings.Contains(state["broken"]["reason"].(string), `no source is named "ftp"`) || state["keyed"]["state"] != "ready" ||
		get[string](state["keyed"], "credential", "kind") != "env" || get[bool](state["keyed"], "credential", "available") != true {
		t.Fatalf("states: %v", state)
	}
	// Opting in to a schedule writes its flag; a miner without one cannot.
	if r := d.do("POST", "/api/miners/docs/schedule/enable", nil); r.status != 200 || get[bool](r.body, "schedule", "enabled") != true {
		t.Fatalf("schedule enable: %d %s", r.status, r.raw)
	}
	if b, _ := os.ReadFile(cfg); !strings.Contains(string(b), `schedule = { every = "1h", enabled = true }`) {
		t.Fatalf("the file after schedule enable:\n%s", b)
	}
	if r := d.do("POST", "/api/miners/keyed/schedule/enable", nil); r.status != 400 || r.code() != "loci::miner::invalid" {
		t.Fatalf("schedule enable without a schedule: %d %s", r.status, r.raw)
	}
	if out, _, code := runCLI(home, "", []string{"--addr", d.addr, "miner", "schedule", "disable", "docs"}, nil); code != 0 || !strings.Contains(out, "schedule off") {
		t.Fatalf("loci miner schedule disable: %d %s", code, out)
	}
	for _, c := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"nope", nil, 404, "loci::miner::not_found"},
		{"off", nil, 409, "loci::miner::disabled"},
		{"broken", nil, 409, "loci::miner::not_runnable"},
		{"docs", map[string]any{"options": map[string]string{"dir": "src"}}, 409, "loci::miner::scope_broadened"},
	} {
		r := d.do("POST", "/api/miners/"+c.name+"/run", c.body)
		if r.status != c.status || r.code() != c.code || r.body["help"] == "" {
			t.Errorf("run %s: %d %s", c.name, r.status, r.raw)
		}
	}
	r = d.do("POST", "/api/miners/docs/run", nil)
	if r.status != 202 || r.body["kind"] != "mine" {
		t.Fatalf("run docs: %d %s", r.status, r.raw)
	}
	j := waitJob(t, d, r.body["id"].(string), 30*time.Second, finished)
	if j["status"] != "completed" || get[float64](j, "result", "documents") != 2 || get[float64](j, "result", "filtered") != 1 ||
		get[float64](j, "result", "created") != 1 || get[bool](j, "result", "truncated") || get[float64](j, "result", "limit") != 5 {
		t.Fatalf("the docs miner's job: %v", j)
	}
	if room := d.do("GET", "/api/wings/project-docs/rooms/files", nil); get[float64](room.body, "drawers") != 1 {
		t.Fatalf("the docs miner filed: %s", room.raw)
	}
	r = d.do("POST", "/api/miners/docs/run", map[string]any{"options": map[string]string{"dir": "src"}, "allow_broaden": true})
	if r.status != 202 {
		t.Fatalf("run with allow_broaden: %d %s", r.status, r.raw)
	}
	waitJob(t, d, r.body["id"].(string), 30*time.Second, finished)
	out, _, code := runCLI(home, "", []string{"--addr", d.addr, "miner", "list"}, []string{"LOCI_CONFIG=" + cfg})
	if code != 0 || !strings.Contains(out, "off") || !strings.Contains(out, "disabled") || !strings.Contains(out, "unavailable") {
		t.Fatalf("loci miner list: %d %s", code, out)
	}
	out, _, code = runCLI(home, "", []string{"--addr", d.addr, "miner", "run", "keyed"}, []string{"LOCI_CONFIG=" + cfg})
	if code != 0 || !strings.Contains(out, "mined 5 of 5 documents found") {
		t.Fatalf("loci miner run: %d %s", code, out)
	}
	sess := mcpSession(t, d)
	got, isErr := callTool(t, sess, "loci_miner_get", map[string]any{"name": "docs"})
	if isErr || got["state"] != "ready" || got["locator"] != root {
		t.Fatalf("loci_miner_get: %v", got)
	}

	// A miner naming a source configuration reads with its options (and
	// shows its credential's status, never where it is).
	sc := d.do("GET", "/api/source-configs", nil)
	configs, _ := sc.body["configs"].([]any)
	// srcdocs, and one implicit configuration per adapter.
	explicit := 0
	for _, c := range configs {
		if get[bool](c.(map[string]any), "implicit") == false {
			explicit++
		}
	}
	if sc.status != 200 || explicit != 1 || len(configs) != 1+len(get[[]any](d.do("GET", "/api/sources", nil).body, "adapters")) ||
		strings.Contains(sc.raw, "/no/such/key/file") {
		t.Fatalf("source configs: %s", sc.raw)
	}
	if one := d.do("GET", "/api/source-configs/srcdocs", nil); one.status != 200 || get[string](one.body, "credential", "kind") != "file" ||
		get[bool](one.body, "credential", "available") || one.body["implicit"] != false {
		t.Fatalf("one source config: %s", one.raw)
	}
	if one := d.do("GET", "/api/source-configs/directory", nil); one.status != 200 || one.body["implicit"] != true {
		t.Fatalf("the implicit source config: %s", one.raw)
	}
	if one := d.do("GET", "/api/source-configs/nope", nil); one.status != 404 || one.code() != "loci::source::not_found" {
		t.Fatalf("an unknown source config: %s", one.raw)
	}
	if got, isErr := callTool(t, sess, "loci_source_config_list", nil); isErr || len(got["configs"].([]any)) != len(configs) {
		t.Fatalf("loci_source_config_list: %v", got)
	}
	// Its identity is the one docs ran with (root, dir=src) earlier, so its
	// cursor is past everything: full reads again, and files into its own
	// wing what was filed in another.
	r = d.do("POST", "/api/miners/viaconfig/run", map[string]any{"full": true})
	if r.status != 202 {
		t.Fatalf("run viaconfig: %d %s", r.status, r.raw)
	}
	if j := waitJob(t, d, r.body["id"].(string), 30*time.Second, finished); j["status"] != "completed" || get[float64](j, "result", "created") != 1 {
		t.Fatalf("the viaconfig miner read more than src/: %v", j)
	}

	// Reload: the file edited by a person, then broken.
	if err := os.WriteFile(cfg, []byte(`
# edited by hand
[miners.docs]
locator = "`+root+`"
wing = "project-docs"
enabled = true
options = { dir = "src" }

[miners.broken]
source = "ftp"
locator = "x"
enabled = true

[miners.keyed]
locator = "`+root+`"
credential = { env = "LOCI_TEST_MINER_KEY" }

[miners.fresh]
locator = "`+root+`"
enabled = true
`), 0o600); err != nil {
		t.Fatal(err)
	}
	rl := d.do("POST", "/api/miners/reload", nil)
	want := map[string][]any{"added": {"fresh"}, "removed": {"off", "viaconfig"}, "changed": {"docs", "keyed"}, "enabled": {"fresh"},
		"disabled": {"keyed"}, "broadened": {"docs"}}
	for k, v := range want {
		if got, _ := rl.body[k].([]any); rl.status != 200 || fmt.Sprint(got) != fmt.Sprint(v) {
			t.Fatalf("reload %s: %v, want %v (%s)", k, got, v, rl.raw)
		}
	}
	// Enable and disable change the one line and are idempotent; an
	// unavailable miner cannot be enabled.
	if r := d.do("POST", "/api/miners/keyed/enable", nil); r.status != 200 || r.body["state"] != "ready" || r.body["enabled"] != true {
		t.Fatalf("enable: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/miners/keyed/enable", nil); r.status != 200 || r.body["enabled"] != true {
		t.Fatalf("enable again: %d %s", r.status, r.raw)
	}
	if b, _ := os.ReadFile(cfg); !strings.Contains(string(b), "# edited by hand") || !strings.Contains(string(b), "[miners.keyed]\nenabled = true\n") {
		t.Fatalf("the file after enable:\n%s", b)
	}
	if out, _, code := runCLI(home, "", []string{"--addr", d.addr, "miner", "disable", "fresh"}, nil); code != 0 || !strings.Contains(out, "miner fresh: disabled") {
		t.Fatalf("loci miner disable: %d %s", code, out)
	}
	if r := d.do("POST", "/api/miners/broken/disable", nil); r.status != 200 {
		t.Fatalf("disable broken: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/miners/broken/enable", nil); r.status != 409 || r.code() != "loci::miner::not_runnable" {
		t.Fatalf("enable an unavailable miner: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/miners/nope/enable", nil); r.status != 404 || r.code() != "loci::miner::not_found" {
		t.Fatalf("enable an unknown miner: %d %s", r.status, r.raw)
	}
	// PUT creates and changes a miner in its table; the person's comment
	// stays; a widening change needs allow_broaden; DELETE removes it.
	r = d.do("PUT", "/api/miners/made", map[string]any{"locator": root, "wing": "made", "options": map[string]string{"dir": "src"}})
	if r.status != 201 || r.body["created"] != true || get[string](r.body, "miner", "state") != "disabled" {
		t.Fatalf("put a new miner: %d %s", r.status, r.raw)
	}
	r = d.do("PUT", "/api/miners/made", map[string]any{"unset_options": []string{"dir"}})
	if r.status != 409 || r.code() != "loci::miner::scope_broadened" {
		t.Fatalf("a widening change: %d %s", r.status, r.raw)
	}
	r = d.do("PUT", "/api/miners/made", map[string]any{"unset_options": []string{"dir"}, "allow_broaden": true, "enabled": true})
	if r.status != 200 || r.body["changed"] != true || r.body["identity_changed"] != true || get[string](r.body, "miner", "state") != "ready" {
		t.Fatalf("a widening change allowed: %d %s", r.status, r.raw)
	}
	for _, bad := range []map[string]any{{"options": map[string]string{"depth": "1"}}, {"options": map[string]string{"token": "x"}},
		{"source": "ftp"}, {"unset": []string{"colour"}}} {
		if r := d.do("PUT", "/api/miners/made", bad); r.status != 400 || r.code() != "loci::miner::invalid" {
			t.Fatalf("put %v: %d %s", bad, r.status, r.raw)
		}
	}
	if r := d.do("PUT", "/api/miners/Bad-Name", map[string]any{"locator": root}); r.status != 400 || r.code() != "loci::miner::invalid" {
		t.Fatalf("a bad name: %d %s", r.status, r.raw)
	}
	if b, _ := os.ReadFile(cfg); !strings.Contains(string(b), "# edited by hand") || !strings.Contains(string(b), "[miners.made]") {
		t.Fatalf("the file after put:\n%s", b)
	}
	if out, _, code := runCLI(home, "", []string{"--addr", d.addr, "miner", "rm", "made"}, nil); code != 0 || !strings.Contains(out, "removed miner made") {
		t.Fatalf("loci miner rm: %d %s", code, out)
	}
	if r := d.do("GET", "/api/miners/made", nil); r.status != 404 {
		t.Fatalf("a removed miner: %d %s", r.status, r.raw)
	}
	// Source configurations are written to their own tables too.
	r = d.do("PUT", "/api/source-configs/notes", map[string]any{"source": "directory", "options": map[string]string{"dir": "docs"},
		"credential": map[string]any{"env": "LOCI_TEST_MINER_KEY"}})
	if r.status != 201 || get[string](r.body, "config", "credential", "kind") != "env" || strings.Contains(r.raw, "LOCI_TEST_MINER_KEY") {
		t.Fatalf("put a source config: %d %s", r.status, r.raw)
	}
	r = d.do("PUT", "/api/source-configs/notes", map[string]any{"unset_credential": true, "unset_options": []string{"dir"}})
	if r.status != 200 || r.body["changed"] != true || get[any](r.body, "config", "credential") != nil {
		t.Fatalf("change a source config: %d %s", r.status, r.raw)
	}
	for _, bad := range []map[string]any{{"options": map[string]string{"depth": "1"}}, {"source": "ftp"}} {
		if r := d.do("PUT", "/api/source-configs/notes", bad); r.status != 400 || r.code() != "loci::miner::invalid" {
			t.Fatalf("put source config %v: %d %s", bad, r.status, r.raw)
		}
	}
	if r := d.do("PUT", "/api/source-configs/other", map[string]any{"options": map[string]string{"dir": "x"}}); r.status != 400 {
		t.Fatalf("a new source config without source: %d %s", r.status, r.raw)
	}
	if r := d.do("DELETE", "/api/source-configs/directory", nil); r.status != 400 {
		t.Fatalf("delete the implicit config: %d %s", r.status, r.raw)
	}
	if r := d.do("DELETE", "/api/source-configs/notes", nil); r.status != 200 || r.body["removed"] != "notes" {
		t.Fatalf("delete a source config: %d %s", r.status, r.raw)
	}
	if b, _ := os.ReadFile(cfg); strings.Contains(string(b), "source_configs.notes") || !strings.Contains(string(b), "# edited by hand") {
		t.Fatalf("the file after the source config went:\n%s", b)
	}
	if err := os.WriteFile(cfg, []byte("[miners.docs\nlocator = "), 0o600); err != nil {
		t.Fatal(err)
	}
	rl = d.do("POST", "/api/miners/reload", nil)
	if rl.status != 409 || rl.code() != "loci::miner::config_file" || rl.body["help"] == "" {
		t.Fatalf("reload of a broken file: %d %s", rl.status, rl.raw)
	}
	r = d.do("GET", "/api/miners", nil)
	if miners, _ := r.body["miners"].([]any); r.status != 200 || len(miners) != 4 || r.body["error"] == nil {
		t.Fatalf("miners after a failed reload: %s", r.raw)
	}
}
