package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKill9KeepsAcknowledgedWrites writes from concurrent clients, kills
// the daemon with SIGKILL mid-load, restarts it, and checks that every
// write answered 2xx is present and readable.
func TestKill9KeepsAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	acked := map[string]string{} // id -> content
	var mu sync.Mutex
	for round := range 3 {
		d := start(t, home, palace)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		client := &http.Client{Timeout: 5 * time.Second}
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					content := fmt.Sprintf("round %d writer %d item %d: a memory that must survive a crash %d", round, w, i, time.Now().UnixNano())
					body, _ := json.Marshal(map[string]any{"content": content})
					resp, err := client.Post("http://"+d.addr+"/api/wings/crash/rooms/load/drawers", "application/json", bytes.NewReader(body))
					if err != nil {
						return // the daemon is gone: this write was never acknowledged
					}
					var out struct {
						Drawer struct {
							ID string `json:"id"`
						} `json:"drawer"`
					}
					err = json.NewDecoder(resp.Body).Decode(&out)
					resp.Body.Close()
					if err == nil && resp.StatusCode == 201 {
						mu.Lock()
						acked[out.Drawer.ID] = content
						mu.Unlock()
					}
				}
			}()
		}
		time.Sleep(time.Second) // the writers write for a second: the load, not a wait
		d.cmd.Process.Kill()    // SIGKILL
		<-d.exited
		close(stop)
		wg.Wait()
	}
	if len(acked) < 50 {
		t.Fatalf("only %d acknowledged writes; the load did not run", len(acked))
	}
	d := start(t, home, palace)
	if r := d.do("GET", "/api/status", nil); !get[bool](r.body, "datastore", "healthy") {
		t.Fatalf("unhealthy after crashes: %s", r.raw)
	}
	missing := 0
	for id, content := range acked {
		r := d.do("GET", "/api/wings/crash/rooms/load/drawers/"+id, nil)
		if r.status != 200 || r.body["content"] != content {
			missing++
			if missing < 5 {
				t.Errorf("acknowledged drawer %s: %d %s", id, r.status, r.raw)
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged writes lost", missing, len(acked))
	}
	t.Logf("%d acknowledged writes survived three kill -9", len(acked))
}

// TestKill9DuringCheckpointJobs kills the daemon while checkpoint jobs
// run, restarts it, and checks that every job completes with the right
// counts, no item is lost and none is stored twice.
func TestKill9DuringCheckpointJobs(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	const jobs, perJob, dupEvery = 8, 600, 50
	var ids []string
	for i := range jobs {
		r := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": items(fmt.Sprintf("job%d", i), perJob, dupEvery)})
		if r.status != 202 {
			t.Fatalf("submit: %d %s", r.status, r.raw)
		}
		ids = append(ids, r.body["id"].(string))
	}
	for kill := range 2 {
		// Let some items land, then SIGKILL.
		waitJob(t, d, ids[kill], 30*time.Second, func(j map[string]any) bool {
			return get[float64](j, "progress", "current") > 0 || finished(j)
		})
		d.cmd.Process.Kill()
		<-d.exited
		d = start(t, home, palace)
	}
	dups := (perJob - 1) / dupEvery
	for _, id := range ids {
		j := waitJob(t, d, id, 60*time.Second, finished)
		if j["status"] != "completed" || get[float64](j, "result", "items") != perJob || get[float64](j, "result", "duplicates") != float64(dups) {
			t.Fatalf("job %s after crashes: %v", id, j)
		}
	}
	room := d.do("GET", "/api/wings/projects/rooms/checkpoints", nil)
	if want := float64(jobs * (perJob - dups)); get[float64](room.body, "drawers") != want || get[float64](room.body, "drawers_stored") != want {
		t.Fatalf("drawers after crashes: %s, want %v", room.raw, want)
	}
}

// TestRecoveryBudget: a job running when the daemon dies is re-queued
// three times; the fourth crash fails it with the reason.
func TestRecoveryBudget(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	r := d.do("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": items("long", 15000, 0)})
	id := r.body["id"].(string)
	for crash := 1; crash <= 4; crash++ {
		j := waitJob(t, d, id, 60*time.Second, func(j map[string]any) bool {
			return (j["status"] == "running" && get[float64](j, "progress", "current") > 0) || finished(j)
		})
		if j["status"] != "running" {
			t.Fatalf("crash %d: job not running: %v", crash, j)
		}
		d.cmd.Process.Kill()
		<-d.exited
		d = start(t, home, palace)
		j = d.do("GET", "/api/jobs/"+id, nil).body
		if crash < 4 && (get[float64](j, "recovery_attempts") != float64(crash)) {
			t.Fatalf("after crash %d: %v", crash, j)
		}
	}
	j := d.do("GET", "/api/jobs/"+id, nil).body
	if j["status"] != "failed" || !strings.Contains(get[string](j, "error"), "budget") {
		t.Fatalf("after four crashes: %v", j)
	}
	// Retry gives it a fresh budget; it continues from its checkpoint.
	if r := d.do("POST", "/api/jobs/"+id+"/retry", nil); r.body["status"] != "queued" || get[float64](r.body, "checkpoint", "next_index") == 0 {
		t.Fatalf("retry: %s", r.raw)
	}
	d.do("POST", "/api/jobs/"+id+"/cancel", nil)
}
