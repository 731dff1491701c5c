package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestKill9KeepsAcknowledgedWrites writes from concurrent clients, kills
// the daemon with SIGKILL mid-load, restarts it, and checks that every
// write answered 2xx is present and readable.
func TestKill9KeepsAcknowledgedWrites(t *testing.T) {
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
		time.Sleep(time.Second)
		d.cmd.Process.Kill() // SIGKILL
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
