package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A fresh install has no configuration file: the first miner saved
// creates it where the daemon reads it at its next start (private to the
// user, with a header saying what wrote it), the answer and the CLI say
// where, the log too; triggers are saved in it without a restart, saves at
// the same moment all land, and a restart reads the same file.
func TestMinersAndTriggersOnAFreshInstall(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	root := mineTree(t)
	d := start(t, home, palace)
	want := filepath.Join(home, ".config", "loci", "config.toml")
	r := d.do("GET", "/api/miners", nil)
	if r.status != 200 || r.body["config_file"] != nil || r.body["config_file_to_create"] != want {
		t.Fatalf("miners before any file: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/triggers", nil); r.status != 200 || r.body["config_file"] != nil || r.body["config_file_to_create"] != want {
		t.Fatalf("triggers before any file: %d %s", r.status, r.raw)
	}

	out, errOut, code := d.cli("", "miner", "set", "docs", "--locator", root, "--wing", "docs", "--max-documents", "3")
	if code != 0 || !strings.Contains(out, "miner docs created") || !strings.Contains(out, "created the configuration file "+want) {
		t.Fatalf("loci miner set on a fresh install: %d %s %s", code, out, errOut)
	}
	st, err := os.Stat(want)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the file: %v %v", err, st)
	}
	if st, err := os.Stat(filepath.Dir(want)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("its directory: %v %v", err, st)
	}
	b, _ := os.ReadFile(want)
	if !strings.HasPrefix(string(b), "# loci configuration file, created by the loci daemon") || !strings.Contains(string(b), time.Now().UTC().Format("2006-01-02")) ||
		!strings.Contains(string(b), "[miners.docs]") || !strings.Contains(string(b), "max_documents = 3") {
		t.Fatalf("the file written:\n%s", b)
	}
	if l := d.log.String(); !strings.Contains(l, "created the configuration file") || !strings.Contains(l, want) {
		t.Fatalf("no log line about the file:\n%s", l)
	}
	r = d.do("GET", "/api/miners", nil)
	if r.status != 200 || r.body["config_file"] != want || r.body["config_file_to_create"] != nil || len(get[[]any](r.body, "miners")) != 1 {
		t.Fatalf("miners after the first save: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/config", nil); r.body["config_file"] != want {
		t.Fatalf("the effective configuration names no file: %s", r.raw)
	}
	// The file is read from now on: a trigger is saved into it, and so are
	// miners saved at the same moment (none lost).
	r = d.do("PUT", "/api/triggers/hourly", map[string]any{"miner": "docs", "type": "schedule", "settings": map[string]any{"every": "1h"}})
	if r.status != 201 || r.body["config_file"] != want || r.body["config_file_created"] == true {
		t.Fatalf("put a trigger: %d %s", r.status, r.raw)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := d.do("PUT", fmt.Sprintf("/api/miners/m%d", i), map[string]any{"locator": root, "wing": "w"}); r.status != 201 {
				t.Errorf("put m%d: %d %s", i, r.status, r.raw)
			}
		}()
	}
	wg.Wait()
	if r := d.do("GET", "/api/miners", nil); len(get[[]any](r.body, "miners")) != 9 {
		t.Fatalf("miners saved together: %s", r.raw)
	}
	// max_documents is honoured by runs.
	if r := d.do("PUT", "/api/miners/docs", map[string]any{"enabled": true}); r.status != 200 || get[string](r.body, "miner", "state") != "ready" {
		t.Fatalf("enable docs: %d %s", r.status, r.raw)
	}
	r = d.do("POST", "/api/miners/docs/run", nil)
	if r.status != 202 {
		t.Fatalf("run docs: %d %s", r.status, r.raw)
	}
	if j := waitJob(t, d, r.body["id"].(string), 30*time.Second, finished); j["status"] != "completed" || get[float64](j, "result", "limit") != 3 ||
		!get[bool](j, "result", "truncated") {
		t.Fatalf("the run of a miner with max_documents = 3: %v", j)
	}

	if r := d.do("POST", "/api/shutdown", nil); r.status != 202 {
		t.Fatalf("shutdown: %s", r.raw)
	}
	d.wait(30 * time.Second)
	d = start(t, home, palace)
	r = d.do("GET", "/api/miners/docs", nil)
	if r.status != 200 || r.body["enabled"] != true || get[float64](r.body, "max_documents") != 3 {
		t.Fatalf("docs after a restart: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/triggers/hourly", nil); r.status != 200 {
		t.Fatalf("the trigger after a restart: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/miners", nil); r.body["config_file"] != want || len(get[[]any](r.body, "miners")) != 9 {
		t.Fatalf("miners after a restart: %s", r.raw)
	}
}

// A miner's fields are checked when it is saved, enabled or run, with the
// error a run gives (a wing name is loci::palace::path_invalid), and a
// refusal changes nothing; a miner the file defines badly reads
// unavailable, not ready. max_documents is saved through PUT and the CLI.
func TestMinerFieldsCheckedWhenSaved(t *testing.T) {
	t.Parallel()
	root := mineTree(t)
	d, cfg := withConfig(t, fmt.Sprintf(`
[miners.handmade]
locator = %q
wing = "two\nlines"

[miners.handon]
locator = %q
wing = "two\nlines"
enabled = true

[miners.badsched]
locator = %q
schedule = { every = "1ms" }
`, root, root, root))
	before, _ := os.ReadFile(cfg)
	unchanged := func(what string) {
		t.Helper()
		if after, _ := os.ReadFile(cfg); string(after) != string(before) {
			t.Fatalf("%s changed the file:\n%s", what, after)
		}
	}
	for _, name := range []string{"handmade", "handon", "badsched"} {
		r := d.do("GET", "/api/miners/"+name, nil)
		if r.status != 200 || r.body["state"] != "unavailable" || r.body["reason"] == "" {
			t.Errorf("a miner defined badly, %s: %s", name, r.raw)
		}
	}
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		code, names  string
	}{
		{"POST", "/api/miners/handmade/enable", nil, 400, "loci::palace::path_invalid", "wing"},
		{"POST", "/api/miners/handon/run", nil, 400, "loci::palace::path_invalid", "wing"},
		{"POST", "/api/miners/badsched/enable", nil, 400, "loci::miner::invalid", "schedule"},
		{"PUT", "/api/miners/badsched", map[string]any{"wing": "fine"}, 400, "loci::miner::invalid", "schedule"},
		{"PUT", "/api/miners/x", map[string]any{"locator": root, "wing": "two\nlines"}, 400, "loci::palace::path_invalid", "wing"},
		{"PUT", "/api/miners/x", map[string]any{"locator": root, "wing": " spaced"}, 400, "loci::palace::path_invalid", "wing"},
		{"PUT", "/api/miners/handmade", map[string]any{"enabled": false}, 400, "loci::palace::path_invalid", "wing"},
		{"PUT", "/api/miners/x", map[string]any{"locator": "/"}, 400, "loci::miner::invalid", "wing"},
		{"PUT", "/api/miners/x", map[string]any{"locator": root, "max_documents": -1}, 400, "loci::miner::invalid", "max_documents"},
		{"PUT", "/api/miners/x", map[string]any{"locator": "relative/dir"}, 400, "loci::miner::invalid", "relative"},
		{"PUT", "/api/miners/x", map[string]any{"locator": root, "options": map[string]string{"since": "yesterday"}}, 400, "loci::miner::invalid", "since"},
	} {
		r := d.do(c.method, c.path, c.body)
		if r.status != c.status || r.code() != c.code || !strings.Contains(r.raw, c.names) || r.body["help"] == "" {
			t.Errorf("%s %s %v: %d %s", c.method, c.path, c.body, r.status, r.raw)
		}
	}
	unchanged("a refused miner")
	if r := d.do("GET", "/api/miners/x", nil); r.status != 404 {
		t.Fatalf("a refused miner was saved: %s", r.raw)
	}

	r := d.do("PUT", "/api/miners/capped", map[string]any{"locator": root, "wing": "capped", "max_documents": 2})
	if r.status != 201 || get[float64](r.body, "miner", "max_documents") != 2 {
		t.Fatalf("put with max_documents: %d %s", r.status, r.raw)
	}
	if b, _ := os.ReadFile(cfg); !strings.Contains(string(b), "[miners.capped]") || !strings.Contains(string(b), "max_documents = 2") {
		t.Fatalf("the file:\n%s", b)
	}
	out, errOut, code := d.cli("", "miner", "set", "capped", "--max-documents", "1", "--enable")
	if code != 0 || !strings.Contains(out, "miner capped changed: ready") {
		t.Fatalf("loci miner set --max-documents: %d %s %s", code, out, errOut)
	}
	r = d.do("POST", "/api/miners/capped/run", nil)
	if r.status != 202 {
		t.Fatalf("run capped: %d %s", r.status, r.raw)
	}
	if j := waitJob(t, d, r.body["id"].(string), 30*time.Second, finished); get[float64](j, "result", "limit") != 1 || get[float64](j, "result", "documents") != 1 {
		t.Fatalf("the run of a miner capped at 1: %v", j)
	}
	if r := d.do("PUT", "/api/miners/capped", map[string]any{"unset": []string{"max_documents"}}); r.status != 200 || get[any](r.body, "miner", "max_documents") != nil {
		t.Fatalf("unset max_documents: %d %s", r.status, r.raw)
	}
	if _, errOut, code := d.cli("", "miner", "set", "capped", "--max-documents", "-4"); code == 0 || !strings.Contains(errOut, "loci::miner::invalid") {
		t.Fatalf("a negative --max-documents: %d %s", code, errOut)
	}
}

// A credential file set through REST or the CLI must lie inside
// credentials.dir, links followed; anything else is refused with the same
// answer whether the file exists or not (no file-existence oracle). A
// path written by hand in the file may still be anything.
func TestCredentialFilesOnlyInsideCredentialsDir(t *testing.T) {
	t.Parallel()
	root := mineTree(t)
	home := t.TempDir()
	creds := filepath.Join(home, "creds")
	outside := t.TempDir()
	for _, err := range []error{
		os.MkdirAll(filepath.Join(creds, "sub"), 0o700),
		os.WriteFile(filepath.Join(creds, "token"), []byte("s3cret-token-value\n"), 0o600),
		os.WriteFile(filepath.Join(outside, "exists"), []byte("not yours\n"), 0o600),
		os.Symlink(outside, filepath.Join(creds, "out")),
		os.Symlink(filepath.Join(outside, "exists"), filepath.Join(creds, "leak")),
		os.Symlink("../"+filepath.Base(outside), filepath.Join(creds, "rel")),
		os.Symlink("token", filepath.Join(creds, "inner")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	d, cfg := withConfig(t, fmt.Sprintf(`
[credentials]
dir = %q

[webhook]
enable = true
port = %d

[miners.docs]
locator = %q
enabled = true

[miners.hand]
locator = %q
credential = { file = %q }
`, creds, freePort(t), root, root, filepath.Join(outside, "exists")))
	before, _ := os.ReadFile(cfg)

	var first string
	for _, p := range []string{
		filepath.Join(outside, "exists"),
		filepath.Join(outside, "nope"),
		"/etc/shadow",
		"/etc/no-such-file",
		creds + "/../" + filepath.Base(creds) + "/../../" + filepath.Base(outside) + "/exists",
		filepath.Join(creds, "out", "exists"),
		filepath.Join(creds, "out", "nope"),
		filepath.Join(creds, "leak"),
		filepath.Join(creds, "rel", "exists"),
		filepath.Join(creds, "rel", "nope"),
		"token",
		creds,
	} {
		r := d.do("PUT", "/api/miners/x", map[string]any{"locator": root, "credential": map[string]any{"file": p}})
		if r.status != 400 || r.code() != "loci::miner::invalid" || !strings.Contains(r.raw, "credentials.dir") || strings.Contains(r.raw, "exist") {
			t.Errorf("credential file %s: %d %s", p, r.status, r.raw)
		}
		if first == "" {
			first = r.raw
		} else if r.raw != first {
			t.Errorf("credential file %s answered otherwise than another outside path:\n%s\n%s", p, r.raw, first)
		}
	}
	for _, c := range []struct{ path, body string }{
		{"/api/triggers/hook", fmt.Sprintf(`{"miner":"docs","type":"webhook","credential":{"file":%q}}`, filepath.Join(outside, "exists"))},
		{"/api/source-configs/sc", fmt.Sprintf(`{"source":"directory","credential":{"file":%q}}`, "/etc/shadow")},
	} {
		r := d.do("PUT", c.path, c.body)
		code := "loci::miner::invalid"
		if strings.HasPrefix(c.path, "/api/triggers") {
			code = "loci::trigger::invalid"
		}
		if r.status != 400 || r.code() != code || !strings.Contains(r.raw, "credentials.dir") {
			t.Errorf("PUT %s: %d %s", c.path, r.status, r.raw)
		}
	}
	if _, errOut, code := d.cli("", "miner", "set", "y", "--locator", root, "--credential-file", filepath.Join(outside, "exists")); code == 0 || !strings.Contains(errOut, "loci::miner::invalid") {
		t.Errorf("loci miner set --credential-file outside: %d %s", code, errOut)
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Fatalf("a refused credential changed the file:\n%s", after)
	}

	// Inside credentials.dir: accepted, links inside it too, and a file
	// not there yet.
	for p, available := range map[string]bool{filepath.Join(creds, "token"): true, filepath.Join(creds, "inner"): true, filepath.Join(creds, "sub", "later"): false} {
		r := d.do("PUT", "/api/miners/x", map[string]any{"locator": root, "credential": map[string]any{"file": p}})
		if r.status/100 != 2 || get[string](r.body, "miner", "credential", "kind") != "file" || get[bool](r.body, "miner", "credential", "available") != available {
			t.Errorf("credential file %s: %d %s", p, r.status, r.raw)
		}
	}
	if r := d.do("PUT", "/api/triggers/hook", map[string]any{"miner": "docs", "type": "webhook", "credential": map[string]any{"file": filepath.Join(creds, "token")}}); r.status != 201 ||
		get[bool](r.body, "trigger", "credential", "available") != true {
		t.Errorf("a webhook's secret inside credentials.dir: %d %s", r.status, r.raw)
	}
	if out, errOut, code := d.cli("", "miner", "set", "y", "--locator", root, "--credential-file", filepath.Join(creds, "token")); code != 0 {
		t.Errorf("loci miner set --credential-file inside: %d %s %s", code, out, errOut)
	}
	// Written by hand: anything, and kept by a change of another field.
	if r := d.do("PUT", "/api/miners/hand", map[string]any{"wing": "hand"}); r.status != 200 || get[bool](r.body, "miner", "credential", "available") != true {
		t.Errorf("a hand-written credential kept: %d %s", r.status, r.raw)
	}
	if b, _ := os.ReadFile(cfg); !strings.Contains(string(b), filepath.Join(outside, "exists")) {
		t.Errorf("the hand-written credential was lost:\n%s", b)
	}
}

// A miner or trigger defined badly by hand does not stop the daemon (nor
// the CLI reading the same file): it reads unavailable with the reason,
// as after a reload, and the others work.
func TestBadEntriesDoNotStopTheDaemon(t *testing.T) {
	t.Parallel()
	root := mineTree(t)
	text := fmt.Sprintf(`
[miners.docs]
locator = %q
enabled = true

[miners.negative]
locator = %q
max_documents = -1

[miners.Upper]
locator = %q

[miners.twocreds]
locator = %q
credential = { env = "A", file = "/b" }

[source_configs.nosource]
options = { dir = "docs" }

[miners.vianosource]
source = "nosource"
locator = %q

[triggers.cron]
miner = "docs"
type = "cron"
enabled = true

[triggers.Upper]
miner = "docs"
type = "poll"
settings = { every = "1h" }

[triggers.nominer]
miner = "No Such"
type = "poll"
settings = { every = "1h" }

[triggers.twocreds]
miner = "docs"
type = "webhook"
credential = { env = "A", file = "/b" }
`, root, root, root, root, root)
	d, cfg := withConfig(t, text)
	for name, says := range map[string]string{"negative": "max_documents", "Upper": "miner name", "twocreds": "credential",
		"vianosource": `source configuration "nosource": source is required`} {
		r := d.do("GET", "/api/miners/"+name, nil)
		if r.status != 200 || r.body["state"] != "unavailable" || !strings.Contains(get[string](r.body, "reason"), says) {
			t.Errorf("miner %s: %d %s", name, r.status, r.raw)
		}
	}
	for name, says := range map[string]string{"cron": "type", "Upper": "trigger name", "nominer": "miner name", "twocreds": "credential"} {
		r := d.do("GET", "/api/triggers/"+name, nil)
		if setup := get[[]any](r.body, "setup"); r.status != 200 || len(setup) == 0 || !strings.Contains(fmt.Sprint(setup), says) {
			t.Errorf("trigger %s: %d %s", name, r.status, r.raw)
		}
	}
	if r := d.do("GET", "/api/triggers/cron", nil); r.body["status"] != "unavailable" {
		t.Errorf("an enabled trigger of an unknown type: %s", r.raw)
	}
	if r := d.do("POST", "/api/miners/docs/run", nil); r.status != 202 {
		t.Fatalf("the good miner: %d %s", r.status, r.raw)
	}
	out, errOut, code := runCLI(d.home, "", []string{"--addr", d.addr, "miner", "list"}, []string{"LOCI_CONFIG=" + cfg})
	if code != 0 || !strings.Contains(out, "negative") {
		t.Fatalf("loci miner list with the same file: %d %s %s", code, out, errOut)
	}
}

// A wing given by an id no wing has is refused when a miner is saved or a
// mine submitted (it was saved, enabled as ready, and every run failed at
// its first document, suggesting a retry that could not help); an id that
// is a wing's is taken.
func TestWingIDsMustNameAWing(t *testing.T) {
	t.Parallel()
	root := mineTree(t)
	home, palace := newPalace(t)
	d := start(t, home, palace)
	const nowhere = "123e4567-e89b-12d3-a456-426614174000"
	if r := d.do("PUT", "/api/miners/ghost", map[string]any{"locator": root, "wing": nowhere}); r.status != 404 || r.code() != "loci::palace::wing_not_found" {
		t.Fatalf("miner with an unknown wing id: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/miners/ghost", nil); r.status != 404 {
		t.Fatalf("the refused miner was saved: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "path": root, "wing": nowhere}); r.status != 404 || r.code() != "loci::palace::wing_not_found" {
		t.Fatalf("mine into an unknown wing id: %d %s", r.status, r.raw)
	}
	if _, stderr, code := d.cli("", "mine", root, "--wing", nowhere); code != 1 || !strings.Contains(stderr, "wing_not_found") {
		t.Fatalf("loci mine --wing <unknown id>: %d %s", code, stderr)
	}
	w := d.do("POST", "/api/wings", map[string]any{"name": "real"})
	id := get[string](w.body, "wing", "id")
	if id == "" {
		t.Fatalf("wing: %s", w.raw)
	}
	if r := d.do("PUT", "/api/miners/byid", map[string]any{"locator": root, "wing": id}); r.status != 201 {
		t.Fatalf("miner with a wing's id: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "path": root, "wing": id}); r.status != 202 {
		t.Fatalf("mine into a wing's id: %d %s", r.status, r.raw)
	}
}
