package main_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// frames reads a server-sent-events stream into (event name, data object)
// pairs.
func frames(t *testing.T, d *daemon) (<-chan [2]string, func()) {
	t.Helper()
	resp, err := http.Get("http://" + d.addr + "/api/events")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %v %v", resp, err)
	}
	out := make(chan [2]string, 1000)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var name string
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				out <- [2]string{name, v}
			}
		}
	}()
	return out, func() { resp.Body.Close() }
}

// next waits for the next frame satisfying ok.
func next(t *testing.T, ch <-chan [2]string, what string, ok func(name string, e map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case f, open := <-ch:
			if !open {
				t.Fatalf("stream ended waiting for %s", what)
			}
			var e map[string]any
			if err := json.Unmarshal([]byte(f[1]), &e); err != nil {
				t.Fatalf("frame data is not JSON: %s", f[1])
			}
			if e["kind"] != f[0] {
				t.Fatalf("frame named %s carries kind %v", f[0], e["kind"])
			}
			for k := range e {
				if k != "kind" && k != "action" && k != "id" && k != "job_kind" && k != "status" {
					t.Fatalf("frame carries %s: %s", k, f[1])
				}
			}
			if ok(f[0], e) {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s frame", what)
		}
	}
}

// TestEventStream: a subscriber sees open first, then a drawer write (with
// its wing and room), a supersession, and a job's lifecycle; identifiers
// and kinds only. `loci events --json` prints the same stream.
func TestEventStream(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	ch, stop := frames(t, d)
	defer stop()
	if e := next(t, ch, "open", func(string, map[string]any) bool { return true }); e["kind"] != "open" {
		t.Fatalf("first frame: %v", e)
	}
	cli := exec.Command(bin, "--addr", d.addr, "--json", "events")
	cli.Env = env(home)
	var cliOut, cliErr syncBuffer
	cli.Stdout, cli.Stderr = &cliOut, &cliErr
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	defer cli.Process.Kill()
	// The CLI says on stderr once it is subscribed.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(cliErr.String(), "following change notices"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the CLI never subscribed: %s", cliErr.String())
		}
	}

	r := d.do("POST", "/api/wings/secret-project/rooms/ops/drawers", map[string]any{"content": "The launch code is 1234."})
	id := get[string](r.body, "drawer", "id")
	next(t, ch, "wing created", func(n string, e map[string]any) bool { return n == "wing" && e["action"] == "created" })
	next(t, ch, "room created", func(n string, e map[string]any) bool { return n == "room" && e["action"] == "created" })
	next(t, ch, "drawer created", func(n string, e map[string]any) bool {
		return n == "drawer" && e["action"] == "created" && e["id"] == id
	})

	s := d.do("POST", "/api/drawers/"+id+"/supersede", map[string]any{"content": "The launch code is 5678."})
	newID := get[string](s.body, "replacement", "id")
	next(t, ch, "superseded drawer updated", func(n string, e map[string]any) bool {
		return n == "drawer" && e["action"] == "updated" && e["id"] == id
	})
	next(t, ch, "replacement created", func(n string, e map[string]any) bool {
		return n == "drawer" && e["action"] == "created" && e["id"] == newID
	})

	j := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": map[string]any{"items": []any{
		map[string]any{"destination": "project", "content": "Checkpointed memory.", "tags": []string{}, "source": map[string]any{"kind": "manual"}}}}})
	jobID := get[string](j.body, "id")
	isJob := func(status string) func(string, map[string]any) bool {
		return func(n string, e map[string]any) bool {
			return n == "job" && e["id"] == jobID && e["job_kind"] == "checkpoint" && e["status"] == status
		}
	}
	if e := next(t, ch, "job queued", isJob("queued")); e["action"] != "created" {
		t.Fatalf("job queued: %v", e)
	}
	next(t, ch, "job running", isJob("running"))
	if e := next(t, ch, "job completed", isJob("completed")); e["action"] != "updated" {
		t.Fatalf("job completed: %v", e)
	}

	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(cliOut.String(), `"status":"completed"`); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("loci events printed: %s", cliOut.String())
		}
	}
	if strings.Contains(cliOut.String(), "launch code") || strings.Contains(cliOut.String(), "secret-project") {
		t.Fatalf("content in the event stream: %s", cliOut.String())
	}
	// Disabled mode is refused; the stream is a read.
	if r := d.do("GET", "/api/events", nil, "X-Loci-Mode", "disabled"); r.status != 403 {
		t.Fatalf("disabled mode: %d", r.status)
	}
}
