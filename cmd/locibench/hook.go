package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// hookBench times `loci hook claude-code session-start` end to end, process
// start included, as Claude Code runs it: the hook JSON on stdin, in a
// project whose .loci.toml names a wing of 1,000 checkpoint drawers
// (a third signed by the agent, a third by another agent, a third
// unsigned), the daemon running (issue 26: p50 under 50 ms).
func hookBench(bin, dir string, runs int) error {
	palace := filepath.Join(dir, "hook")
	d, _, err := start(bin, palace)
	if err != nil {
		return err
	}
	defer d.stop()
	r := rand.New(rand.NewPCG(26, 26))
	var bodies [][]byte
	for j := range 10 {
		items := make([]map[string]any, 100)
		for i := range items {
			src := map[string]any{"kind": "manual"}
			switch (j*100 + i) % 3 {
			case 0:
				src["agent"] = "claude-code"
			case 1:
				src["agent"] = "codex"
			}
			items[i] = map[string]any{"destination": "project", "wing": "hookproj", "content": sentence(r), "tags": []string{}, "source": src}
		}
		b, _ := json.Marshal(map[string]any{"type": "checkpoint", "payload": map[string]any{"items": items}})
		bodies = append(bodies, b)
	}
	if err := runJobs(d.addr, bodies); err != nil {
		return err
	}
	if n := stored(d.addr); n < 1000 {
		return fmt.Errorf("%d drawers stored, want 1000", n)
	}
	proj := filepath.Join(dir, "project")
	if err := os.MkdirAll(filepath.Join(proj, "src"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(proj, ".loci.toml"), []byte("wing = \"hookproj\"\n"), 0o644); err != nil {
		return err
	}
	in, _ := json.Marshal(map[string]any{"session_id": "bench", "transcript_path": filepath.Join(proj, "t.jsonl"),
		"cwd": filepath.Join(proj, "src"), "hook_event_name": "SessionStart", "source": "startup"})
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	idle(d.cmd.Process.Pid, 60*time.Second)
	once := func() (time.Duration, string, error) {
		cmd := exec.Command(abs, "hook", "claude-code", "session-start")
		cmd.Dir = filepath.Join(proj, "src")
		cmd.Env = append(os.Environ(), "LOCI_PALACE_PATH="+palace, "LOCI_LOG=warn")
		cmd.Stdin = bytes.NewReader(in)
		var out bytes.Buffer
		cmd.Stdout = &out
		t0 := time.Now()
		err := cmd.Run()
		return time.Since(t0), out.String(), err
	}
	_, out, err := once()
	if err != nil || !strings.Contains(out, `"additionalContext"`) {
		return fmt.Errorf("the hook gave no context: %v %q", err, out)
	}
	lat := make([]time.Duration, 0, runs)
	for range runs {
		el, _, err := once()
		if err != nil {
			return err
		}
		lat = append(lat, el)
	}
	// The floor: the same binary doing nothing but start and exit.
	base := make([]time.Duration, 0, runs)
	for range runs {
		t0 := time.Now()
		if err := exec.Command(abs, "version").Run(); err != nil {
			return err
		}
		base = append(base, time.Since(t0))
	}
	fmt.Printf("process start alone (loci version), %d runs: p50 %s\n", runs, pct(base, 0.5).Round(100*time.Microsecond))
	fmt.Printf("session-start hook (claude-code), 1,000 checkpoint drawers in the project wing, %d runs, process start included: p50 %s p90 %s p99 %s; %d bytes of hook output\n",
		runs, pct(lat, 0.5).Round(100*time.Microsecond), pct(lat, 0.9).Round(100*time.Microsecond), pct(lat, 0.99).Round(100*time.Microsecond), len(out))
	return nil
}
