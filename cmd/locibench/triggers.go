package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// triggerBench measures triggers against a real daemon: the latency from a
// file written in a watched tree to its drawer being searchable (debounce
// 2 s and 100 ms), webhook deliveries accepted per second at
// max_concurrent 16, and the idle CPU and memory of 100 enabled triggers.
func triggerBench(bin, dir string) error {
	for _, debounce := range []string{"2s", "100ms"} {
		if err := watchLatency(bin, filepath.Join(dir, "watch-"+debounce), debounce, 20, 10); err != nil {
			return err
		}
	}
	if err := webhookRate(bin, filepath.Join(dir, "hooks"), 16, 5*time.Second); err != nil {
		return err
	}
	return idleTriggers(bin, filepath.Join(dir, "idle"))
}

func configured(bin, dir, text string) (*daemon, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "config.toml")
	return startConfigured(bin, filepath.Join(dir, "p"), cfg, text)
}

// watchLatency writes rounds of files into a watched tree and times each
// file from its write to a search finding it.
func watchLatency(bin, dir, debounce string, rounds, perRound int) error {
	tree := filepath.Join(dir, "tree")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		return err
	}
	d, err := configured(bin, dir, fmt.Sprintf(`
[miners.tree]
locator = %q
enabled = true

[triggers.files]
miner = "tree"
type = "watch"
enabled = true
settings = { path = %q, debounce = %q }
`, tree, tree, debounce))
	if err != nil {
		return err
	}
	defer d.stop()
	time.Sleep(time.Second) // the supervisor starts the watch
	var lat []time.Duration
	for round := range rounds {
		written := map[string]time.Time{}
		for i := range perRound {
			token := fmt.Sprintf("zq%dx%dw", round, i)
			p := filepath.Join(tree, fmt.Sprintf("r%02d", round), token+".txt")
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte("A note about "+token+" and the lamp.\n"), 0o644); err != nil {
				return err
			}
			written[token] = time.Now()
		}
		deadline := time.Now().Add(30 * time.Second)
		for len(written) > 0 {
			if time.Now().After(deadline) {
				return fmt.Errorf("watch %s: %d files not searchable after 30 s", debounce, len(written))
			}
			for token, at := range written {
				if found(d.addr, token) {
					lat = append(lat, time.Since(at))
					delete(written, token)
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	slices.Sort(lat)
	fmt.Printf("watch, debounce %s: file written -> searchable over %d files: p50 %s, p99 %s\n", debounce, len(lat),
		lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond))
	return nil
}

func found(addr, token string) bool {
	body, _ := json.Marshal(map[string]any{"query": token, "limit": 1})
	resp, err := http.Post("http://"+addr+"/api/search", "application/json", bytes.NewReader(body))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return bytes.Contains(b, []byte("A note about "+token))
}

func freeTCPPort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// webhookRate posts signed deliveries (each its own delivery id) from
// clients at once for a while; they are coalesced into runs.
func webhookRate(bin, dir string, clients int, span time.Duration) error {
	tree := filepath.Join(dir, "tree")
	os.MkdirAll(tree, 0o755)
	os.WriteFile(filepath.Join(tree, "a.txt"), []byte("one file\n"), 0o644)
	port := freeTCPPort()
	const secret = "a-shared-secret-for-the-bench"
	os.Setenv("LOCIBENCH_HOOK_SECRET", secret) // the daemon inherits it
	d, err := configured(bin, dir, fmt.Sprintf(`
[webhook]
enable = true
port = %d
max_concurrent = %d

[miners.tree]
locator = %q
enabled = true

[triggers.hook]
miner = "tree"
type = "webhook"
enabled = true
settings = { delivery_header = "X-GitHub-Delivery" }
credential = { env = "LOCIBENCH_HOOK_SECRET" }
`, port, clients, tree))
	if err != nil {
		return err
	}
	defer d.stop()
	url := fmt.Sprintf("http://127.0.0.1:%d/hooks/hook", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Post(url, "application/json", nil); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the webhook listener did not open")
		}
	}
	body := []byte(`{"ref":"refs/heads/main","after":"0123456789abcdef"}`)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	var accepted, other, seq atomic.Int64
	statuses := sync.Map{}
	stop := time.Now().Add(span)
	var wg sync.WaitGroup
	t0 := time.Now()
	for range clients {
		wg.Go(func() {
			for time.Now().Before(stop) {
				req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
				req.Header.Set("X-Hub-Signature-256", sig)
				req.Header.Set("X-GitHub-Delivery", "d-"+strconv.FormatInt(seq.Add(1), 10))
				resp, err := client.Do(req)
				if err != nil {
					other.Add(1)
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted {
					accepted.Add(1)
					var out struct{ Status string }
					_ = json.Unmarshal(b, &out)
					v, _ := statuses.LoadOrStore(out.Status, new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
				} else {
					other.Add(1)
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(t0)
	var parts []string
	statuses.Range(func(k, v any) bool {
		parts = append(parts, fmt.Sprintf("%s %d", k, v.(*atomic.Int64).Load()))
		return true
	})
	slices.Sort(parts)
	fmt.Printf("webhook deliveries, %d clients, max_concurrent %d: %.0f accepted/s (%d in %s: %s; %d refused)\n",
		clients, clients, float64(accepted.Load())/el.Seconds(), accepted.Load(), el.Round(time.Millisecond), strings.Join(parts, ", "), other.Load())
	return nil
}

// idleTriggers measures a daemon's CPU and resident memory over 30 idle
// seconds with no trigger, then with 100 enabled (25 of each type).
func idleTriggers(bin, dir string) error {
	measure := func(what, text string) error {
		d, err := configured(bin, filepath.Join(dir, what), text)
		if err != nil {
			return err
		}
		defer d.stop()
		time.Sleep(5 * time.Second) // settled: the supervisor started everything
		cpu0 := cpuTicks(d.cmd.Process.Pid)
		time.Sleep(30 * time.Second)
		cpu1 := cpuTicks(d.cmd.Process.Pid)
		fmt.Printf("idle, %s: %.2f%% of one core over 30 s, resident %s\n", what,
			float64(cpu1-cpu0)/100/30*100, rss(d.cmd.Process.Pid))
		return nil
	}
	tree := filepath.Join(dir, "tree")
	var b strings.Builder
	fmt.Fprintf(&b, "[webhook]\nenable = true\nport = %d\n\n[miners.tree]\nlocator = %q\nenabled = true\n", freeTCPPort(), tree)
	for i := range 25 {
		w := filepath.Join(tree, fmt.Sprintf("w%02d", i))
		os.MkdirAll(w, 0o755)
		fmt.Fprintf(&b, "\n[triggers.s%02d]\nminer = \"tree\"\ntype = \"schedule\"\nenabled = true\nsettings = { every = \"1h\" }\n", i)
		fmt.Fprintf(&b, "\n[triggers.p%02d]\nminer = \"tree\"\ntype = \"poll\"\nenabled = true\nsettings = { every = \"1h\" }\n", i)
		fmt.Fprintf(&b, "\n[triggers.w%02d]\nminer = \"tree\"\ntype = \"watch\"\nenabled = true\nsettings = { path = %q }\n", i, w)
		fmt.Fprintf(&b, "\n[triggers.h%02d]\nminer = \"tree\"\ntype = \"webhook\"\nenabled = true\ncredential = { env = \"HOME\" }\n", i)
	}
	if err := measure("no triggers", fmt.Sprintf("[miners.tree]\nlocator = %q\nenabled = true\n", tree)); err != nil {
		return err
	}
	return measure("100 triggers", b.String())
}

// cpuTicks is a process's user and system time in clock ticks (1/100 s).
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

func rss(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
		}
	}
	return "?"
}
