package main_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var vocabulary = strings.Fields(`release queue writer monday postgres durability agent memory backup
index search vector lexical daemon palace drawer wing room schedule review deploy staging token
session login bug fix test benchmark latency throughput cache badger bleve shutdown signal job`)

// sentence is a distinct, unremarkable sentence for item i.
func sentence(prefix string, i int) string {
	r := rand.New(rand.NewPCG(uint64(i), 42))
	words := []string{prefix, strconv.Itoa(i) + ":"}
	for range 12 + r.IntN(10) {
		words = append(words, vocabulary[r.IntN(len(vocabulary))])
	}
	return strings.Join(words, " ") + "."
}

// items builds a checkpoint payload of n distinct items (every dupEvery-th
// item repeats item 0 exactly, 0: none).
func items(prefix string, n, dupEvery int) map[string]any {
	out := make([]map[string]any, n)
	for i := range n {
		content := sentence(prefix, i)
		if dupEvery > 0 && i > 0 && i%dupEvery == 0 {
			content = sentence(prefix, 0)
		}
		out[i] = map[string]any{"destination": "project", "content": content, "tags": []string{}, "source": map[string]any{"kind": "manual"}}
	}
	return map[string]any{"items": out}
}

// waitJob polls a job until done(status) or the timeout.
func waitJob(t *testing.T, d *daemon, id string, timeout time.Duration, done func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := d.do("GET", "/api/jobs/"+id, nil)
		if r.status != 200 {
			t.Fatalf("get job: %d %s", r.status, r.raw)
		}
		if done(r.body) {
			return r.body
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not done in %s: %s", id, timeout, r.raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func finished(j map[string]any) bool {
	s := j["status"]
	return s == "completed" || s == "failed" || s == "cancelled"
}

func TestJobsOverRESTAndCLI(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)

	r := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": items("rest", 30, 10)})
	if r.status != 202 || r.body["status"] != "queued" || r.body["priority"] != "high" || r.body["input"] != nil {
		t.Fatalf("submit: %d %s", r.status, r.raw)
	}
	id := r.body["id"].(string)
	j := waitJob(t, d, id, 20*time.Second, finished)
	if j["status"] != "completed" || get[float64](j, "result", "items") != 30 || get[float64](j, "result", "duplicates") != 2 {
		t.Fatalf("checkpoint: %v", j)
	}
	if c := get[float64](j, "checkpoint", "next_index"); c != 30 {
		t.Fatalf("checkpoint next_index %v", c)
	}
	room := d.do("GET", "/api/wings/projects/rooms/checkpoints", nil)
	if get[float64](room.body, "drawers") != 28 {
		t.Fatalf("checkpoint room: %s", room.raw)
	}
	// Emergency runs at critical priority.
	r = d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "emergency": true, "payload": items("sos", 1, 0)})
	if r.body["priority"] != "critical" {
		t.Fatalf("emergency: %s", r.raw)
	}

	// Control of finished jobs: the state machine refuses.
	for _, act := range []string{"pause", "resume", "retry", "cancel"} {
		r := d.do("POST", "/api/jobs/"+id+"/"+act, nil)
		if r.status != 400 || r.code() != "loci::jobs::transition_invalid" {
			t.Errorf("%s of a completed job: %d %s", act, r.status, r.raw)
		}
	}
	// Bad ids and unknown jobs.
	if r := d.do("GET", "/api/jobs/not-a-uuid", nil); r.status != 400 || r.code() != "loci::jobs::id_invalid" {
		t.Errorf("bad id: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/jobs/6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a/cancel", nil); r.status != 404 || r.code() != "loci::jobs::not_found" {
		t.Errorf("unknown job: %d %s", r.status, r.raw)
	}
	// Job control is never mode-gated; submission of a writing job is.
	if r := d.do("POST", "/api/jobs/"+id+"/cancel", nil, "X-Loci-Mode", "disabled"); r.code() != "loci::jobs::transition_invalid" {
		t.Errorf("control under disabled mode: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/jobs", map[string]any{"type": "demo"}, "X-Loci-Mode", "read_only"); r.status != 403 {
		t.Errorf("submit under read_only: %d %s", r.status, r.raw)
	}

	// Listing: every job without kind and limit; bounded page with them.
	if r := d.do("GET", "/api/jobs?kind=checkpoint&limit=1", nil); len(get[[]any](r.body, "jobs")) != 1 {
		t.Errorf("bounded page: %s", r.raw)
	}
	if r := d.do("GET", "/api/jobs?status=completed", nil); len(get[[]any](r.body, "jobs")) < 1 {
		t.Errorf("status filter: %s", r.raw)
	}

	// Demo, audit, dry-run repair based on it, through the CLI.
	out, errOut, code := d.cli("", "demo")
	if code != 0 || !strings.Contains(out, "completed") {
		t.Fatalf("loci demo: %d %s %s", code, out, errOut)
	}
	if r := d.do("GET", "/api/wings/projects/rooms/webapp/drawers/deploy", nil); !strings.Contains(r.raw, "Thursday") {
		t.Fatalf("demo supersession: %s", r.raw)
	}
	out, errOut, code = d.cli("", "--json", "audit", "--watch")
	if code != 0 || !strings.Contains(out, `"orphan_drawers": []`) {
		t.Fatalf("loci audit: %d %s %s", code, out, errOut)
	}
	audits := d.do("GET", "/api/jobs?kind=audit", nil)
	auditID := get[string](get[[]any](audits.body, "jobs")[0].(map[string]any), "id")
	r = d.do("POST", "/api/jobs", map[string]any{"type": "repair", "based_on_job": auditID})
	rep := waitJob(t, d, r.body["id"].(string), 10*time.Second, finished)
	if rep["status"] != "completed" || get[bool](rep, "result", "dry_run") != true {
		t.Fatalf("repair: %v", rep)
	}
	if r := d.do("POST", "/api/jobs", map[string]any{"type": "repair", "based_on_job": id}); r.status != 400 || r.code() != "loci::repair::based_on_job_invalid" {
		t.Errorf("repair based on a checkpoint job: %d %s", r.status, r.raw)
	}

	// Wake-up: the diary entry and recent checkpoint drawers within the byte budget.
	r = d.do("GET", "/api/wake-up?agent_identity=demo-agent&wing=projects&max_items=3", nil)
	if r.status != 200 || get[map[string]any](r.body, "diary") == nil || len(get[[]any](r.body, "items")) != 3 {
		t.Fatalf("wake-up: %s", r.raw)
	}
	r = d.do("GET", "/api/wake-up?agent_identity=demo-agent&max_bytes=100", nil)
	// Without a wing the agent's newest diary entry anywhere (92 bytes)
	// comes first and fills most of the budget.
	if get[float64](r.body, "bytes") > 100 || get[map[string]any](r.body, "diary") == nil || get[float64](r.body, "skipped") == 0 {
		t.Fatalf("wake-up byte budget: %s", r.raw)
	}
	out, _, code = d.cli("", "wake-up", "--agent", "demo-agent", "--wing", "projects")
	if code != 0 || !strings.Contains(out, "Session 2") {
		t.Fatalf("loci wake-up: %d %s", code, out)
	}

	// CLI job list and a checkpoint from stdin.
	out, errOut, code = d.cli(`{"items":[{"destination":"general","content":"From stdin.","tags":["cli"],"source":{"kind":"note"}}]}`, "checkpoint", "--watch")
	if code != 0 || !strings.Contains(out, "completed") {
		t.Fatalf("loci checkpoint: %d %s %s", code, out, errOut)
	}
	out, _, code = d.cli("", "job", "list", "--kind", "demo")
	if code != 0 || !strings.Contains(out, "demo") {
		t.Fatalf("loci job list: %d %s", code, out)
	}
}

func TestJobSubmissionRefusals(t *testing.T) {
	t.Parallel()
	// Semantic search turned off (no default profile), so that an embed
	// submission has no provider.
	d, _ := withConfig(t, "[embedding]\ndefault = \"\"\n")
	item := func(extra map[string]any) map[string]any {
		it := map[string]any{"destination": "project", "content": "x is y", "tags": []string{}, "source": map[string]any{"kind": "manual"}}
		for k, v := range extra {
			it[k] = v
		}
		return map[string]any{"type": "checkpoint", "payload": map[string]any{"items": []any{it}}}
	}
	cases := []struct {
		name string
		body any
		code string
		want string
	}{
		{"no type", map[string]any{}, "loci::input::invalid", "type"},
		{"unknown type", map[string]any{"type": "dance"}, "loci::input::invalid", "type"},
		{"no payload", map[string]any{"type": "checkpoint"}, "loci::input::invalid", "payload"},
		{"empty items", map[string]any{"type": "checkpoint", "payload": map[string]any{"items": []any{}}}, "loci::input::invalid", "payload.items"},
		{"bad destination", item(map[string]any{"destination": "mars"}), "loci::input::invalid", "items[0].destination"},
		{"blank content", item(map[string]any{"content": "  "}), "loci::input::invalid", "items[0].content"},
		{"no tags", item(map[string]any{"tags": nil}), "loci::input::invalid", "items[0].tags"},
		{"unknown item field", item(map[string]any{"colour": "red"}), "loci::input::invalid", "colour"},
		{"confidence", item(map[string]any{"fact": map[string]any{"op": "add", "subject": "a", "predicate": "uses", "object": "b", "confidence": 1.5}}), "loci::input::invalid", "confidence"},
		{"blank predicate", item(map[string]any{"fact": map[string]any{"op": "add", "subject": "a", "predicate": " ", "object": "b"}}), "loci::graph::empty_label", "predicate"},
		{"link without reason", item(map[string]any{"fact": map[string]any{"op": "link", "relationship_id": "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a", "other_id": "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2b", "kind": "confirms"}}), "loci::input::invalid", "reason"},
		{"unknown op", item(map[string]any{"fact": map[string]any{"op": "merge"}}), "loci::input::invalid", "op"},
		{"field of another kind", map[string]any{"type": "demo", "wing": "x"}, "loci::input::invalid", "wing"},
		{"demo steps", map[string]any{"type": "demo", "steps": 0}, "loci::input::invalid", "steps"},
		{"audit unknown wing", map[string]any{"type": "audit", "wing": "nowhere"}, "loci::palace::wing_not_found", "nowhere"},
		{"repair bad based_on_job", map[string]any{"type": "repair", "based_on_job": "nope"}, "loci::repair::based_on_job_invalid", "nope"},
		{"mine relative path", map[string]any{"type": "mine", "path": "rel/dir"}, "loci::input::invalid", "absolute"},
		{"embed without provider", map[string]any{"type": "embed"}, "loci::embed::not_configured", "embedding"},
		{"bad requested_by", map[string]any{"type": "demo", "requested_by": "cat"}, "loci::input::invalid", "requested_by"},
	}
	for _, c := range cases {
		r := d.do("POST", "/api/jobs", c.body)
		if r.status < 400 || r.code() != c.code || !strings.Contains(r.raw, c.want) || r.body["help"] == "" {
			t.Errorf("%s: %d %s", c.name, r.status, r.raw)
		}
	}
	if r := d.do("GET", "/api/jobs", nil); len(get[[]any](r.body, "jobs")) != 0 {
		t.Fatalf("a refused submission left a job: %s", r.raw)
	}
	for _, q := range []string{"status=bogus", "kind=bogus", "limit=500", "limit=-1"} {
		if r := d.do("GET", "/api/jobs?"+q, nil); r.status != 400 {
			t.Errorf("list %s: %d %s", q, r.status, r.raw)
		}
	}
	if r := d.do("GET", "/api/wake-up", nil); r.status != 400 {
		t.Errorf("wake-up without agent: %d %s", r.status, r.raw)
	}
}

// TestBusyGuardsDeletes: a paused checkpoint job keeps wing and room
// deletes refused with palace::busy until it is cancelled.
func TestBusyGuardsDeletes(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	d.do("POST", "/api/wings/projects/rooms/notes/drawers", map[string]any{"content": "keep me"})
	r := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": items("busy", 6000, 0)})
	id := r.body["id"].(string)
	waitJob(t, d, id, 10*time.Second, func(j map[string]any) bool {
		return (j["status"] == "running" && get[float64](j, "progress", "current") > 0) || finished(j)
	})
	p := d.do("POST", "/api/jobs/"+id+"/pause", nil)
	if p.status != 200 || (p.body["pause_requested"] != true && p.body["status"] != "completed") {
		t.Fatalf("pause: %d %s", p.status, p.raw)
	}
	j := waitJob(t, d, id, 20*time.Second, func(j map[string]any) bool { return j["status"] != "running" })
	if j["status"] != "paused" {
		t.Skipf("the job finished before the pause took effect: %v", j["status"])
	}
	next := get[float64](j, "checkpoint", "next_index")
	if next <= 0 || next >= 6000 {
		t.Fatalf("paused checkpoint: %v", j["checkpoint"])
	}
	for _, path := range []string{"/api/wings/projects/rooms/notes", "/api/wings/projects"} {
		if r := d.do("DELETE", path, nil); r.status != 409 || r.code() != "loci::palace::busy" {
			t.Fatalf("delete %s while a checkpoint is paused: %d %s", path, r.status, r.raw)
		}
	}
	// Resume: it continues from its checkpoint and completes with every item.
	d.do("POST", "/api/jobs/"+id+"/resume", nil)
	j = waitJob(t, d, id, 60*time.Second, finished)
	if j["status"] != "completed" || get[float64](j, "result", "items") != 6000 {
		t.Fatalf("resumed: %v", j)
	}
	if room := d.do("GET", "/api/wings/projects/rooms/checkpoints", nil); get[float64](room.body, "drawers") != 6000 {
		t.Fatalf("drawers after resume: %s", room.raw)
	}
	if r := d.do("DELETE", "/api/wings/projects/rooms/notes", nil); r.status != 200 {
		t.Fatalf("delete after the job: %d %s", r.status, r.raw)
	}
}

// TestShutdownDrainsJobs: SIGTERM while a checkpoint job runs puts it back
// to queued with its checkpoint (no recovery spent); a paused job stays
// paused; after a restart the running one completes with every item once.
func TestShutdownDrainsJobs(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	const n = 15000
	r := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": items("drain", n, 0)})
	id := r.body["id"].(string)
	waitJob(t, d, id, 30*time.Second, func(j map[string]any) bool {
		return (j["status"] == "running" && get[float64](j, "progress", "current") > 0) || finished(j)
	})
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, d.log.String())
	}
	d = start(t, home, palace)
	j := waitJob(t, d, id, 60*time.Second, finished)
	if j["status"] != "completed" || get[float64](j, "recovery_attempts") != 0 || get[float64](j, "result", "items") != n {
		t.Fatalf("after a drain and a restart: %v", j)
	}
	if get[float64](j, "attempt") < 2 {
		t.Skip("the job finished before the signal arrived")
	}
	room := d.do("GET", "/api/wings/projects/rooms/checkpoints", nil)
	if get[float64](room.body, "drawers") != n {
		t.Fatalf("drawers: %s", room.raw)
	}
}
