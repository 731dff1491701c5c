package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMineWaitNamesItsJobAfterKill9: a daemon killed while `loci mine`
// waits for its job leaves the command saying which job it waited on
// (it resumes when the daemon starts again), as one JSON error with
// --json; the job then completes on the next daemon.
func TestMineWaitNamesItsJobAfterKill9(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	slow := "LOCI_TEST_MINE_DELAY=25ms"
	d := start(t, home, palace, slow)
	dir := t.TempDir()
	for i := range 120 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("note-%03d.md", i)), []byte(fmt.Sprintf("note %d about the deploy schedule\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "--addr", d.addr, "--json", "mine", dir)
	cmd.Env = env(home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var id string
	deadline := time.Now().Add(30 * time.Second)
	for id == "" {
		r := d.do("GET", "/api/jobs?kind=mine&limit=1", nil)
		if jobs, _ := r.body["jobs"].([]any); len(jobs) == 1 {
			j := jobs[0].(map[string]any)
			if finished(j) {
				t.Fatalf("the mine ended before the kill: %v", j)
			}
			if get[float64](j, "progress", "current") > 0 {
				id = j["id"].(string)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no mine running: %s", r.raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.cmd.Process.Kill()
	<-d.exited
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("loci mine succeeded after kill -9: %s %s", out.String(), errb.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("loci mine still waits after kill -9")
	}
	var e struct{ Error, Code, Help string }
	dec := json.NewDecoder(strings.NewReader(errb.String()))
	if err := dec.Decode(&e); err != nil || dec.More() || out.Len() != 0 {
		t.Fatalf("--json: stdout %q, stderr %q is not one JSON error: %v", out.String(), errb.String(), err)
	}
	if !strings.Contains(e.Help, "mine job "+id) || !strings.Contains(e.Help, "loci job get "+id) {
		t.Fatalf("the error names no job %s: %+v", id, e)
	}
	d = start(t, home, palace)
	if j := waitJob(t, d, id, 60*time.Second, finished); j["status"] != "completed" {
		t.Fatalf("the mine after kill -9: %v", j)
	}
}
