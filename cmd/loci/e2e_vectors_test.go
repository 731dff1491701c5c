package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func withHashProfile(t *testing.T, home string) string {
	t.Helper()
	cfg := filepath.Join(home, "loci.toml")
	err := os.WriteFile(cfg, []byte("[embedding]\ndefault = \"test\"\n[embedding.profiles.test]\nprovider = \"hash\"\ndimension = 64\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return "LOCI_CONFIG=" + cfg
}

func TestSemanticAndHybridSearch(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace, withHashProfile(t, home))
	for _, c := range []struct{ name, content string }{
		{"deploy", "The web app deploys every Thursday morning."},
		{"lunch", "Lunch is at noon in the big kitchen."},
		{"queue", "The job queue moved from Redis to PostgreSQL."},
	} {
		if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"name": c.name, "content": c.content}); r.status != 201 {
			t.Fatalf("file: %s", r.raw)
		}
	}
	// Writes queue an embed job; wait until every drawer has a vector.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := d.do("GET", "/api/search?q=thursday+deploys&ranking=semantic&limit=10", nil)
		if r.status == 200 && len(get[[]any](r.body, "hits")) == 3 {
			h := get[[]any](r.body, "hits")[0].(map[string]any)
			if h["name"] != "deploy" || get[map[string]any](h, "signals", "semantic") == nil {
				t.Fatalf("semantic: %s", r.raw)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("vectors never filled: %s\n%s", r.raw, d.do("GET", "/api/jobs?kind=embed", nil).raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// loci status says how far each index has followed.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, _, _ := d.cli("", "status")
		if strings.Contains(out, "indexes:    lexical 3 drawers, caught up; vectors test 3 drawers, caught up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("loci status: %s", out)
		}
	}
	// Scope and validity in the vector leg (the whole palace is under the
	// exact-scan threshold only for rooms: a wing or tag scope goes through
	// the graph with the scope as a predicate).
	if r := d.do("POST", "/api/wings/w/rooms/other/drawers", map[string]any{"name": "elsewhere", "content": "The web app deploys on Thursday too, says the other room.", "tags": []string{"t"}}); r.status != 201 {
		t.Fatalf("file: %s", r.raw)
	}
	old := d.do("GET", "/api/wings/w/rooms/r/drawers/queue", nil)
	if r := d.do("POST", "/api/drawers/"+get[string](old.body, "id")+"/supersede", map[string]any{"content": "The job queue moved from PostgreSQL to NATS."}); r.status >= 300 {
		t.Fatalf("supersede: %s", r.raw)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r := d.do("GET", "/api/search?q=thursday+deploys&ranking=semantic&limit=10&wing=w&room=other", nil)
		if strings.Join(hitNames(r), ",") == "elsewhere" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("room scope in the vector leg: %s", r.raw)
		}
	}
	if r := d.do("GET", "/api/search?q=thursday+deploys&ranking=semantic&tags=t", nil); strings.Join(hitNames(r), ",") != "elsewhere" {
		t.Fatalf("tag scope in the vector leg: %s", r.raw)
	}
	r0 := d.do("GET", "/api/search?q=job+queue+postgresql&ranking=semantic&limit=10", nil)
	if strings.Contains(r0.raw, "Redis") {
		t.Fatalf("a superseded drawer in a current semantic search: %s", r0.raw)
	}
	if r := d.do("GET", "/api/search?q=job+queue+postgresql&ranking=semantic&limit=10&include_historical=true", nil); !strings.Contains(r.raw, "Redis") {
		t.Fatalf("the superseded drawer missing from a historical semantic search: %s", r.raw)
	}
	// auto is hybrid with a profile: both legs' signals.
	r := d.do("GET", "/api/search?q=deploys+thursday", nil)
	if get[string](r.body, "ranking") != "hybrid" {
		t.Fatalf("auto: %s", r.raw)
	}
	h := get[[]any](r.body, "hits")[0].(map[string]any)
	if h["name"] != "deploy" || get[map[string]any](h, "signals", "lexical") == nil || get[map[string]any](h, "signals", "semantic") == nil {
		t.Fatalf("hybrid hit: %v", h)
	}
	// A caller's vector with its profile; dimension and profile checks.
	vec := make([]float64, 64)
	vec[3] = 1
	if r := d.do("POST", "/api/search", map[string]any{"text": "x", "ranking": "semantic", "profile": "test", "query_embedding": vec}); r.status != 200 {
		t.Fatalf("query_embedding: %s", r.raw)
	}
	if r := d.do("POST", "/api/search", map[string]any{"text": "x", "ranking": "semantic", "profile": "test", "query_embedding": vec[:3]}); r.code() != "loci::embed::dimension_mismatch" {
		t.Fatalf("short query vector: %s", r.raw)
	}
	if r := d.do("GET", "/api/search?q=x&profile=other", nil); r.code() != "loci::input::invalid" || !strings.Contains(r.raw, "other") {
		t.Fatalf("unknown profile: %s", r.raw)
	}
	// PUT a drawer's vector.
	f := d.do("GET", "/api/wings/w/rooms/r/drawers/lunch", nil)
	id := get[string](f.body, "id")
	if r := d.do("PUT", "/api/drawers/"+id+"/embedding", map[string]any{"profile": "test", "embedding": vec}); r.status != 200 || get[float64](r.body, "dimension") != 64 {
		t.Fatalf("put embedding: %d %s", r.status, r.raw)
	}
	r = d.do("POST", "/api/search", map[string]any{"text": "x", "ranking": "semantic", "profile": "test", "query_embedding": vec, "limit": 1})
	if hitNames(r)[0] != "lunch" {
		t.Fatalf("the stored vector is not searched: %s", r.raw)
	}
	for _, c := range []struct {
		body map[string]any
		code string
	}{
		{map[string]any{"embedding": vec}, "loci::input::invalid"},
		{map[string]any{"profile": "nope", "embedding": vec}, "loci::input::invalid"},
		{map[string]any{"profile": "test", "embedding": vec[:10]}, "loci::embed::dimension_mismatch"},
		{map[string]any{"profile": "test", "embedding": make([]float64, 64)}, "loci::input::invalid"},
	} {
		if r := d.do("PUT", "/api/drawers/"+id+"/embedding", c.body); r.code() != c.code {
			t.Errorf("put %v: %s", c.body, r.raw)
		}
	}
	if r := d.do("PUT", "/api/drawers/6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a/embedding", map[string]any{"profile": "test", "embedding": vec}); r.status != 404 {
		t.Errorf("unknown drawer: %s", r.raw)
	}
	// Deleting a drawer removes it from semantic results.
	d.do("DELETE", "/api/wings/w/rooms/r/drawers/lunch", nil)
	r = d.do("POST", "/api/search", map[string]any{"text": "x", "ranking": "semantic", "profile": "test", "query_embedding": vec, "limit": 5})
	if strings.Contains(r.raw, `"lunch"`) {
		t.Fatalf("a deleted drawer is still found: %s", r.raw)
	}
	// An explicit embed job, through the CLI.
	if r := d.do("POST", "/api/jobs", map[string]any{"type": "embed", "wing": "w"}); r.status != 202 {
		t.Fatalf("embed job: %s", r.raw)
	}
}

// TestVectorIndexSurvivesRestarts: a graceful stop saves the graph; the next
// start reads it; after a kill -9 the saved graph plus the change log give
// every vector back.
func TestVectorIndexSurvivesRestarts(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	cfg := withHashProfile(t, home)
	d := start(t, home, palace, cfg)
	file := func(name, content string) {
		if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"name": name, "content": content}); r.status != 201 {
			t.Fatalf("file: %s", r.raw)
		}
	}
	waitFor := func(name, query string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			r := d.do("GET", "/api/search?ranking=semantic&limit=1&q="+query, nil)
			if n := hitNames(r); len(n) == 1 && n[0] == name {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not found semantically: %s", name, r.raw)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	embedJobs := func() int {
		return len(get[[]any](d.do("GET", "/api/jobs?kind=embed", nil).body, "jobs"))
	}
	file("deploy", "The web app deploys every Thursday morning.")
	file("lunch", "Lunch is at noon in the big kitchen.")
	waitFor("lunch", "lunch+kitchen+noon")
	jobs := embedJobs()
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(palace, "index", "vectors", "test.vec")); err != nil {
		t.Fatalf("no saved vector index: %v", err)
	}
	d = start(t, home, palace, cfg)
	waitFor("deploy", "web+app+deploys+thursday")
	// Nothing is missing: the start queues no embed job (it used to,
	// asking before the saved index was read). Absence can only be shown
	// by waiting: the vectors follower asks a second after the last
	// change it saw, so 2.5 s is past any ask the start could make.
	time.Sleep(2500 * time.Millisecond)
	if n := embedJobs(); n != jobs {
		t.Fatalf("a restart with every vector queued embed jobs: %d, before %d: %s", n, jobs, d.do("GET", "/api/jobs?kind=embed", nil).raw)
	}
	file("queue", "The job queue moved from Redis to PostgreSQL.")
	waitFor("queue", "job+queue+redis+postgresql")
	d.cmd.Process.Kill()
	<-d.exited
	d = start(t, home, palace, cfg)
	waitFor("queue", "job+queue+redis+postgresql")
	waitFor("lunch", "lunch+kitchen+noon")
}

// Drawers filed while no embedding profile was configured get their
// vectors from an embed job the next start queues by itself.
func TestStartEmbedsWhatIsMissing(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"name": "lunch", "content": "Lunch was at one in the small kitchen."})
	if r.status != 201 {
		t.Fatalf("file: %s", r.raw)
	}
	if r := d.do("POST", "/api/drawers/"+get[string](r.body, "drawer", "id")+"/supersede", map[string]any{"content": "Lunch is at noon in the big kitchen."}); r.status != 200 {
		t.Fatalf("supersede: %s", r.raw)
	}
	if r := d.do("POST", "/api/wings/other/rooms/x/drawers", map[string]any{"content": "The backup runs nightly at two."}); r.status != 201 {
		t.Fatalf("file: %s", r.raw)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	d = start(t, home, palace, withHashProfile(t, home))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r := d.do("GET", "/api/search?ranking=semantic&limit=1&q=lunch+kitchen", nil)
		if n := hitNames(r); len(n) == 1 && n[0] == "lunch" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no vector after the start: %s\n%s", r.raw, d.do("GET", "/api/jobs?kind=embed", nil).raw)
		}
	}
	// Every stored drawer of every wing, the superseded one included.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		jobs := get[[]any](d.do("GET", "/api/jobs?kind=embed", nil).body, "jobs")
		if len(jobs) != 1 {
			t.Fatalf("want one embed job, got %d", len(jobs))
		}
		job := jobs[0].(map[string]any)
		if job["status"] != "completed" {
			if time.Now().After(deadline) {
				t.Fatalf("embed job: %v", job)
			}
			continue
		}
		if res := get[map[string]any](job, "result"); res["missing"] != 3.0 || res["embedded"] != 3.0 {
			t.Fatalf("embed job result: %v", res)
		}
		break
	}
}

// TestVectorIndexSavedWhileRunning: with changes arriving, the running
// daemon saves its vector index every embedding.save_secs, so a kill -9
// without any graceful stop restarts from that file. Status shows how far
// each index has followed the change log; the configuration names the
// provider and model, never its URL.
func TestVectorIndexSavedWhileRunning(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	cfg := filepath.Join(home, "loci.toml")
	err := os.WriteFile(cfg, []byte("[embedding]\ndefault = \"test\"\nsave_secs = 1\n[embedding.profiles.test]\nprovider = \"hash\"\nmodel = \"h1\"\ndimension = 64\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, home, palace, "LOCI_CONFIG="+cfg)
	for i, c := range []string{"The web app deploys every Thursday morning.", "Lunch is at noon in the big kitchen.", "The job queue moved from Redis to PostgreSQL."} {
		if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"name": fmt.Sprint("d", i), "content": c}); r.status != 201 {
			t.Fatalf("file: %s", r.raw)
		}
	}
	file := filepath.Join(palace, "index", "vectors", "test.vec")
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := d.do("GET", "/api/status", nil)
		v := get[map[string]any](r.body, "indexes", "vectors", "test")
		_, statErr := os.Stat(file)
		if v != nil && v["drawers"] == float64(3) && v["behind"] == float64(0) && v["saved_seq"].(float64) > 0 && statErr == nil &&
			get[float64](r.body, "indexes", "lexical", "drawers") == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("vector index not saved while running: %s (file: %v)", r.raw, statErr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	r := d.do("GET", "/api/config", nil)
	if get[string](r.body, "providers", "embedding", "profiles", "test", "model") != "h1" || strings.Contains(r.raw, "url") {
		t.Fatalf("config providers: %s", r.raw)
	}
	d.cmd.Process.Kill()
	<-d.exited
	d = start(t, home, palace, "LOCI_CONFIG="+cfg)
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(d.log.String(), "vector index read from its file") {
		if time.Now().After(deadline) {
			t.Fatalf("the saved file was not read after kill -9: %s", d.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := d.do("GET", "/api/search?ranking=semantic&limit=1&q=job+queue+redis+postgresql", nil); strings.Join(hitNames(r), ",") != "d2" {
		t.Fatalf("semantic after kill -9: %s", r.raw)
	}
}

// TestDownProviderQueuesNoStormOfEmbedJobs: with the provider down, the
// embed job fails, auto search degrades to lexical with a warning, and new
// writes do not queue a failing embed job each until the back-off passes.
func TestDownProviderQueuesNoStormOfEmbedJobs(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	cfg := filepath.Join(home, "loci.toml")
	err := os.WriteFile(cfg, []byte("[embedding]\ndefault = \"down\"\n[embedding.profiles.down]\nprovider = \"http\"\nurl = \"http://127.0.0.1:1/v1/embeddings\"\nmodel = \"m\"\ntimeout_secs = 1\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, home, palace, "LOCI_CONFIG="+cfg)
	write := func(i int) {
		if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": fmt.Sprintf("note number %d about the deploy", i)}); r.status != 201 {
			t.Fatalf("file: %s", r.raw)
		}
	}
	embedJobs := func() (failed, other int) {
		r := d.do("GET", "/api/jobs?kind=embed", nil)
		for _, j := range get[[]any](r.body, "jobs") {
			if j.(map[string]any)["status"] == "failed" {
				failed++
			} else {
				other++
			}
		}
		return
	}
	write(0)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if failed, other := embedJobs(); failed >= 1 && other == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failed embed job: %s", d.do("GET", "/api/jobs?kind=embed", nil).raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
	failedBefore, _ := embedJobs()
	// Two more bursts, each settling (the vectors follower waits a second
	// without changes before it asks for an embed job).
	for i := 1; i <= 2; i++ {
		write(i)
		time.Sleep(2500 * time.Millisecond) // past the follower's second of quiet: absence needs the wait
	}
	if failed, other := embedJobs(); failed != failedBefore || other != 0 {
		t.Fatalf("embed jobs queued against a down provider: %d failed, %d others (before: %d)", failed, other, failedBefore)
	}
	r := d.do("GET", "/api/search?q=deploy", nil)
	if r.status != 200 || get[string](r.body, "ranking") != "lexical" || len(hitNames(r)) != 3 {
		t.Fatalf("auto with a down provider: %s", r.raw)
	}
	if !strings.Contains(d.log.String(), "lexical") {
		t.Fatalf("no warning about the degraded search: %s", d.log.String())
	}
}

// A fresh palace with no configuration searches semantically with the
// built-in static profile: a paraphrase with no shared word is found by
// auto, offline. Texts with no known word (another script, digits and
// symbols) embed without error and are found lexically.
func TestBuiltInSemanticSearch(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	for _, c := range []struct{ name, content string }{
		{"car", "I drove my car to the garage on Monday."},
		{"lunch", "Lunch is at noon in the big kitchen."},
		{"queue", "The job queue moved from Redis to PostgreSQL."},
		{"kanji", "東京の天気は晴れです"},
		{"symbols", "#### 1234 5678 ~~~ %%%"},
	} {
		if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"name": c.name, "content": c.content}); r.status != 201 {
			t.Fatalf("file %s: %s", c.name, r.raw)
		}
	}
	eventually(t, 30*time.Second, "every drawer embedded by the static profile", func() bool {
		out, _, _ := d.cli("", "status")
		return strings.Contains(out, "vectors static 5 drawers, caught up")
	})
	r := d.do("GET", "/api/search?q=automobile&limit=3", nil)
	if names := hitNames(r); r.status != 200 || get[string](r.body, "ranking") != "hybrid" || len(names) == 0 || names[0] != "car" {
		t.Fatalf("auto search for a paraphrase: %s", r.raw)
	}
	if h := get[[]any](r.body, "hits")[0].(map[string]any); get[map[string]any](h, "signals", "semantic") == nil {
		t.Fatalf("the paraphrase was not found by the semantic leg: %v", h)
	}
	if r := d.do("GET", "/api/search?q=東京の天気は晴れです", nil); strings.Join(hitNames(r), ",") != "kanji" {
		t.Fatalf("a text with no known word, found lexically: %s", r.raw)
	}
	if r := d.do("GET", "/api/search?q=5678", nil); strings.Join(hitNames(r), ",") != "symbols" {
		t.Fatalf("digits, found lexically: %s", r.raw)
	}
}

// Switching the default profile keeps search: after a restart with a new
// default, searches use the profile that served before (here the
// built-in one, no longer configured) while the embed jobs build the new
// one's vectors, and the new one serves once it has them all; loci
// status says so meanwhile.
func TestSwitchingTheDefaultProfileKeepsSearch(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	for i := range 40 {
		if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": fmt.Sprintf("Drawer %d: the car was parked near the station %d.", i, i*31)}); r.status != 201 {
			t.Fatalf("file: %s", r.raw)
		}
	}
	eventually(t, 30*time.Second, "the static vectors", func() bool {
		out, _, _ := d.cli("", "status")
		return strings.Contains(out, "vectors static 40 drawers, caught up")
	})
	if r := d.do("POST", "/api/shutdown", nil); r.status != 202 {
		t.Fatalf("shutdown: %s", r.raw)
	}
	d.wait(30 * time.Second)

	// The same palace, a new default (a slow one: a second per drawer
	// batch of 10), the built-in profile not configured any more.
	cfg := filepath.Join(home, "switch.toml")
	if err := os.WriteFile(cfg, []byte("[embedding]\ndefault = \"test\"\n[embedding.profiles.test]\nprovider = \"hash\"\ndimension = 64\nbatch_size = 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d = start(t, home, palace, "LOCI_CONFIG="+cfg, "LOCI_TEST_EMBED_DELAY=1s")
	r := d.do("GET", "/api/status", nil)
	if get[string](r.body, "indexes", "serving") != "static" || get[string](r.body, "indexes", "switch", "to") != "test" {
		t.Fatalf("right after the restart, searches should use the built-in profile while test is built: %s", r.raw)
	}
	out, _, _ := d.cli("", "status")
	if !strings.Contains(out, "switching the default profile from static to test") {
		t.Fatalf("loci status during the switch: %s", out)
	}
	if r := d.do("GET", "/api/search?q=automobile&limit=3", nil); get[string](r.body, "ranking") != "hybrid" || len(hitNames(r)) == 0 {
		t.Fatalf("search during the switch: %s", r.raw)
	}
	eventually(t, 60*time.Second, "the new default serving", func() bool {
		r := d.do("GET", "/api/status", nil)
		return get[string](r.body, "indexes", "serving") == "test" && r.body["indexes"].(map[string]any)["switch"] == nil
	})
	// Recorded: a restart goes on with the new default.
	if r := d.do("POST", "/api/shutdown", nil); r.status != 202 {
		t.Fatalf("shutdown: %s", r.raw)
	}
	d.wait(30 * time.Second)
	d = start(t, home, palace, "LOCI_CONFIG="+cfg)
	if r := d.do("GET", "/api/status", nil); get[string](r.body, "indexes", "serving") != "test" {
		t.Fatalf("after the switch and a restart: %s", r.raw)
	}
}

// A palace filled while semantic search was off (as one made before the
// built-in profile existed) is embedded at its first start with it: an
// embed job with progress, then the paraphrase is found.
func TestFirstStartEmbedsAnOlderPalace(t *testing.T) {
	t.Parallel()
	d, cfg := withConfig(t, "[embedding]\ndefault = \"\"\n")
	for i := range 30 {
		content := fmt.Sprintf("Note %d: the kettle in room %d is broken again.", i, i*13)
		if i == 7 {
			content = "I drove my car to the garage on Monday."
		}
		if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": content}); r.status != 201 {
			t.Fatalf("file: %s", r.raw)
		}
	}
	if r := d.do("GET", "/api/status", nil); len(get[map[string]any](r.body, "indexes", "vectors")) != 0 {
		t.Fatalf("semantic search was off: %s", r.raw)
	}
	if r := d.do("POST", "/api/shutdown", nil); r.status != 202 {
		t.Fatalf("shutdown: %s", r.raw)
	}
	d.wait(30 * time.Second)
	if err := os.WriteFile(cfg, nil, 0o600); err != nil { // now nothing configured
		t.Fatal(err)
	}
	d = start(t, d.home, d.palace, "LOCI_CONFIG="+cfg)
	var job map[string]any
	eventually(t, 30*time.Second, "an embed job to complete", func() bool {
		for _, j := range get[[]any](d.do("GET", "/api/jobs?kind=embed&status=completed", nil).body, "jobs") {
			if get[float64](j.(map[string]any), "result", "embedded") > 0 {
				job = j.(map[string]any)
			}
		}
		return job != nil
	})
	if get[float64](job, "result", "embedded") != 30 || get[float64](job, "progress", "current") != 30 || get[float64](job, "progress", "total") != 30 {
		t.Fatalf("the first start's embed job: %v", job)
	}
	r := d.do("GET", "/api/search?q=automobile&limit=3", nil)
	if hits := get[[]any](r.body, "hits"); len(hits) == 0 || hits[0].(map[string]any)["content"] != "I drove my car to the garage on Monday." || get[string](r.body, "ranking") != "hybrid" {
		t.Fatalf("after the first start's embedding: %s", r.raw)
	}
}

// Drawers filed while an embed job runs are embedded too: the job's list
// was made before them, and the settle that noticed them found it still
// pending, so its completion looks again.
func TestDrawersFiledDuringAnEmbedJobAreEmbedded(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	// A pause after each batch longer than the follower's settle tick.
	d := start(t, home, palace, withHashProfile(t, home), "LOCI_TEST_EMBED_DELAY=2500ms")
	file := func(i int) {
		if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": fmt.Sprintf("Drawer %d about kettles and lamps %d.", i, i*17)}); r.status != 201 {
			t.Fatalf("file: %s", r.raw)
		}
	}
	for i := range 6 {
		file(i)
	}
	eventually(t, 20*time.Second, "a running embed job", func() bool {
		return len(get[[]any](d.do("GET", "/api/jobs?kind=embed&status=running", nil).body, "jobs")) > 0
	})
	for i := 6; i < 10; i++ {
		file(i)
	}
	eventually(t, 30*time.Second, "all ten drawers embedded", func() bool {
		out, _, _ := d.cli("", "status")
		return strings.Contains(out, "vectors test 10 drawers, caught up")
	})
}
