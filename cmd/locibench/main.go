// Command locibench is loci's load benchmark: it starts the real daemon
// binary on a temporary palace and measures, over REST,
//   - durable acknowledged drawer writes per second with 16 concurrent
//     clients, unique content, dedup on;
//   - write latency p50/p99 in a room that already holds 100,000 drawers;
//   - daemon start to ready with those drawers stored, and the first write
//     into the big room after a start;
//   - checkpoint ingestion: 100 jobs of 100 items, drawers per second;
//   - with -only rss, the resident set per 10,000 near-identical mined
//     files (-writes of them, default 20,000);
//   - with -only export, the peak resident set and throughput of mining a
//     generated 128 MiB ChatGPT export;
//   - with -only transcripts, 1,000 Claude Code session files (200 MB)
//     mined (MB/s, peak resident set) and a session grown by one turn
//     timed from the watch trigger firing to the turn being searchable;
//   - with -only sourcepkg, the bundled WebAssembly directory source
//     against the built-in one on 20,000 small files (files/s, in turns)
//     and the git-history source over 10,000 commits (commits/s);
//   - with -only registry, a search over a 1,000-entry source registry
//     index served on loopback (p50, p95; the index revalidated) and the
//     install of a 5 MB package from a folder registry;
//   - with -only shared, the shared store (issue 31) on a PostgreSQL
//     cluster of its own: writes/s against the embedded store and with
//     three daemons, lexical search on a daemon following the shared log,
//     replication lag, and failover after a kill -9 (shared.go).
//
// It prints one line per figure; docs/BENCHMARKS.md records them.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/internal/markov"
)

func main() {
	bin := flag.String("bin", "bin/loci", "the loci binary")
	writes := flag.Int("writes", 20000, "writes in the throughput run")
	clients := flag.Int("clients", 16, "concurrent clients in the throughput run")
	fill := flag.Int("fill", 100000, "drawers in the big room")
	samples := flag.Int("samples", 2000, "sequential writes timed in the big room")
	only := flag.String("only", "", "run one part only: writes, checkpoints, vectors, mcp, events, mining, triggers, static, dashboard, catchup, bridge, hook, export, rss, transcripts, backup, sourcepkg, registry, shared or million")
	wasmSource := flag.String("wasm-source", "directory-wasm", "with -only sourcepkg: the bundled WebAssembly directory source's name")
	keep := flag.String("keep", "", "with -only vectors, million or backup: keep the palaces in this directory and reuse a filled one")
	flag.Parse()
	if f := os.Getenv("LOCIBENCH_CPUPROFILE"); f != "" {
		// The benchmark's own CPU (the clients), for performance work.
		if out, err := os.Create(f); err == nil {
			pprof.StartCPUProfile(out)
			defer pprof.StopCPUProfile()
		}
	}
	if *only != "" && *only != "writes" {
		dir, err := *keep, error(nil)
		if dir == "" {
			dir, err = os.MkdirTemp("", "locibench-")
			defer os.RemoveAll(dir)
		}
		if err == nil {
			switch *only {
			case "checkpoints":
				err = checkpoints(*bin, filepath.Join(dir, "p"), 100, 100)
			case "vectors":
				err = vectors(*bin, dir, *fill, *clients)
			case "mcp":
				err = searchRates(*bin, dir, 10000)
			case "events":
				err = eventFanOut(*bin, dir, 1000, 1000, 10)
			case "million":
				err = million(*bin, dir, *fill, *clients)
			case "mining":
				err = mining(*bin, dir, 20000, 200)
			case "triggers":
				err = triggerBench(*bin, dir)
			case "static":
				err = staticBench(*bin, dir, *fill, *clients)
			case "dashboard":
				err = dashboardBench(*bin, dir, *fill, *clients)
			case "catchup":
				err = catchUpBench(*bin, dir, *writes, *clients)
			case "rss":
				err = rssBench(*bin, dir, *writes, 10000)
			case "bridge":
				err = bridgeBench(*bin, dir, 10000)
			case "hook":
				err = hookBench(*bin, dir, 200)
			case "export":
				err = exportBench(*bin, dir)
			case "transcripts":
				err = transcriptsBench(*bin, dir, 1000, 200, 20)
			case "sourcepkg":
				err = sourcePackages(*bin, dir, 20000, 10000, *wasmSource)
			case "backup":
				err = backupBench(*bin, dir, *fill, *clients)
			case "registry":
				err = registryBench(*bin, dir, 200)
			case "shared":
				err = sharedBench(*bin, dir, *writes, *clients)
			default:
				err = fmt.Errorf("-only %q: checkpoints, vectors, mcp, events, mining, triggers, static, dashboard, catchup, bridge, hook, export, rss, transcripts, backup, sourcepkg, registry, shared or million", *only)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "locibench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*bin, *writes, *clients, *fill, *samples, *only == "writes"); err != nil {
		fmt.Fprintln(os.Stderr, "locibench:", err)
		os.Exit(1)
	}
}

type daemon struct {
	cmd  *exec.Cmd
	addr string
	done chan error
	// stopped: stop was called (a second call does nothing).
	stopped bool
}

func start(bin, palace string, env ...string) (*daemon, time.Duration, error) {
	os.Remove(filepath.Join(palace, "daemon.json"))
	t0 := time.Now()
	cmd := exec.Command(bin, "serve", "--port", "0", "--palace", palace)
	cmd.Env = append(append(os.Environ(), "LOCI_LOG=warn"), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	d := &daemon{cmd: cmd, done: make(chan error, 1)}
	go func() { d.done <- cmd.Wait() }()
	for time.Since(t0) < 60*time.Second {
		select {
		case err := <-d.done:
			return nil, 0, fmt.Errorf("daemon exited: %v", err)
		default:
		}
		if b, err := os.ReadFile(filepath.Join(palace, "daemon.json")); err == nil {
			var reg struct {
				PID     int    `json:"pid"`
				Address string `json:"address"`
			}
			if json.Unmarshal(b, &reg) == nil && reg.PID == cmd.Process.Pid {
				if resp, err := http.Get("http://" + reg.Address + "/api/health"); err == nil {
					resp.Body.Close()
					d.addr = reg.Address
					return d, time.Since(t0), nil
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil, 0, fmt.Errorf("daemon not ready in 60s")
}

func (d *daemon) stop() error {
	if d.stopped {
		return nil
	}
	d.stopped = true
	resp, err := http.Post("http://"+d.addr+"/api/shutdown", "application/json", nil)
	if err == nil {
		resp.Body.Close()
	}
	select {
	case <-d.done:
		return nil
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		return fmt.Errorf("daemon did not stop")
	}
}

var text = markov.NewText()

func sentence(r *rand.Rand) string { return text.Sentence(r) }

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}

func post(addr, path, content string) (time.Duration, error) {
	body, _ := json.Marshal(map[string]string{"content": content})
	t0 := time.Now()
	resp, err := client.Post("http://"+addr+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	el := time.Since(t0)
	if resp.StatusCode != 201 {
		return el, fmt.Errorf("status %d", resp.StatusCode)
	}
	return el, nil
}

// load writes n unique drawers with c clients and returns writes/s.
func load(addr, path string, n, c int, seed uint64) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	t0 := time.Now()
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for next.Add(1) <= int64(n) {
				if _, err := post(addr, path, sentence(r)); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}

// searchLatency times n lexical searches of four words, one at a time.
func searchLatency(addr string, r *rand.Rand, n int) ([]time.Duration, error) {
	var lat []time.Duration
	for range n {
		q := url.QueryEscape(strings.Join(strings.Fields(sentence(r))[:4], " "))
		t0 := time.Now()
		resp, err := http.Get("http://" + addr + "/api/search?ranking=lexical&q=" + q)
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

func pct(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// run is the full benchmark; with writesOnly it stops after the write
// figures (throughput, and latency in the big room), for A/B comparisons.
func run(bin string, writes, clients, fill, samples int, writesOnly bool) error {
	dir, err := os.MkdirTemp("", "locibench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("machine: %s/%s, %d cores, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().UTC().Format(time.DateOnly))

	d, _, err := start(bin, filepath.Join(dir, "p1"))
	if err != nil {
		return err
	}
	rate, err := load(d.addr, "/api/wings/bench/rooms/throughput/drawers", writes, clients, 1)
	if err != nil {
		return err
	}
	fmt.Printf("throughput: %d writes, %d clients, dedup on: %.0f acknowledged writes/s\n", writes, clients, rate)
	if !writesOnly {
		if err := catchUp(d.addr, writes); err != nil {
			return err
		}
	}
	d.stop()

	palace := filepath.Join(dir, "p2")
	d, _, err = start(bin, palace)
	if err != nil {
		return err
	}
	room := "/api/wings/bench/rooms/big/drawers"
	t0 := time.Now()
	if _, err := load(d.addr, room, fill, clients, 2); err != nil {
		return err
	}
	fmt.Printf("fill: %d drawers in one room in %s\n", fill, time.Since(t0).Round(time.Millisecond))
	r := rand.New(rand.NewPCG(3, 3))
	lat := make([]time.Duration, 0, samples)
	for range samples {
		el, err := post(d.addr, room, sentence(r))
		if err != nil {
			return err
		}
		lat = append(lat, el)
	}
	fmt.Printf("latency in a room of %d: p50 %s p99 %s (%d sequential writes)\n", fill, pct(lat, 0.5).Round(time.Microsecond), pct(lat, 0.99).Round(time.Microsecond), samples)
	if writesOnly {
		return d.stop()
	}
	if _, err := post(d.addr, room, "the rebuild marker zqxjkvmarker"); err != nil {
		return err
	}
	// Lexical search latency over the same room (16 clients would measure
	// throughput; one client measures latency).
	slat, err := searchLatency(d.addr, r, 500)
	if err != nil {
		return err
	}
	fmt.Printf("lexical search over REST in a room of %d: p50 %s p99 %s (500 queries of 4 words)\n", fill, pct(slat, 0.5).Round(time.Microsecond), pct(slat, 0.99).Round(time.Microsecond))
	if err := d.stop(); err != nil {
		return err
	}
	var starts, firsts []time.Duration
	for range 5 {
		d, ready, err := start(bin, palace)
		if err != nil {
			return err
		}
		starts = append(starts, ready)
		// The first write into the big room loads its near-duplicate index.
		el, err := post(d.addr, room, sentence(r))
		if err != nil {
			return err
		}
		firsts = append(firsts, el)
		if err := d.stop(); err != nil {
			return err
		}
	}
	fmt.Printf("start to ready with %d drawers: median %s (5 starts, min %s)\n", fill+samples, pct(starts, 0.5).Round(time.Millisecond), slices.Min(starts).Round(time.Millisecond))
	fmt.Printf("first write into that room after a start: median %s\n", pct(firsts, 0.5).Round(time.Millisecond))
	// A deleted index directory is rebuilt from the store at start.
	if err := os.RemoveAll(filepath.Join(palace, "index")); err != nil {
		return err
	}
	d, _, err = start(bin, palace)
	if err != nil {
		return err
	}
	t0 = time.Now()
	for {
		resp, err := http.Get("http://" + d.addr + "/api/search?q=zqxjkvmarker")
		if err != nil {
			return err
		}
		var out struct {
			Hits []any `json:"hits"`
		}
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if len(out.Hits) > 0 {
			break
		}
		if time.Since(t0) > 10*time.Minute {
			return fmt.Errorf("the index was not rebuilt in 10 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("lexical index rebuilt from %d drawers after its directory was deleted: %s\n", fill+samples+6, time.Since(t0).Round(time.Millisecond))
	d.stop()
	if err := checkpoints(bin, filepath.Join(dir, "p3"), 100, 100); err != nil {
		return err
	}
	if err := vectors(bin, dir, fill, clients); err != nil {
		return err
	}
	if err := searchRates(bin, dir, 10000); err != nil {
		return err
	}
	if err := eventFanOut(bin, dir, 1000, 1000, 10); err != nil {
		return err
	}
	if err := mining(bin, filepath.Join(dir, "mining"), 20000, 200); err != nil {
		return err
	}
	return triggerBench(bin, filepath.Join(dir, "triggers"))
}

// vectors fills a palace whose default profile is the hash provider (768
// dimensions), waits until every drawer has a vector, and times semantic and
// hybrid searches over REST, over the whole palace and in one room of 1 %.
func vectors(bin, dir string, fill, clients int) error {
	d, err := startConfigured(bin, filepath.Join(dir, "p4"), filepath.Join(dir, "vectors.toml"),
		"[embedding]\ndefault = \"bench\"\n[embedding.profiles.bench]\nprovider = \"hash\"\ndimension = 768\n")
	if err != nil {
		return err
	}
	defer d.stop()
	t0 := time.Now()
	if stored(d.addr) < fill {
		if _, err := load(d.addr, "/api/wings/bench/rooms/big/drawers", fill-fill/100, clients, 5); err != nil {
			return err
		}
		if _, err := load(d.addr, "/api/wings/bench/rooms/small/drawers", fill/100, clients, 6); err != nil {
			return err
		}
	}
	// Every drawer embedded and in the graph: an exact query finds the last one.
	for {
		resp, err := http.Get("http://" + d.addr + "/api/jobs?kind=embed&status=completed")
		if err != nil {
			return err
		}
		var out embedJobs
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		n, busy := out.total()
		if n >= fill {
			// The embed job's own pace: provider, vector writes, with the
			// daemon filing drawers and building the graph alongside.
			fmt.Printf("embed jobs: %d drawers in %d jobs, %.0f drawers/s while running (hash provider)\n",
				n, len(out.Jobs), float64(n)/busy.Seconds())
			break
		}
		if time.Since(t0) > 30*time.Minute {
			return fmt.Errorf("only %d of %d drawers embedded after 30 minutes", n, fill)
		}
		time.Sleep(time.Second)
	}
	// Searches are timed on a settled daemon: the graph has every vector
	// and both indexes have followed the whole change log.
	for {
		resp, err := http.Get("http://" + d.addr + "/api/status")
		if err != nil {
			return err
		}
		var st struct {
			Indexes struct {
				Lexical struct{ Behind int }
				Vectors map[string]struct{ Behind, Drawers int }
			}
		}
		json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if v := st.Indexes.Vectors["bench"]; v.Drawers >= fill && v.Behind == 0 && st.Indexes.Lexical.Behind == 0 {
			break
		}
		if time.Since(t0) > 30*time.Minute {
			return fmt.Errorf("the indexes did not catch up in 30 minutes: %+v", st.Indexes)
		}
		time.Sleep(time.Second)
	}
	fmt.Printf("vectors: %d drawers filed, embedded and indexed (hash provider, 768 dimensions) in %s\n", fill, time.Since(t0).Round(time.Second))
	if w := idle(d.cmd.Process.Pid, 5*time.Minute); w > 0 {
		fmt.Printf("vectors: the daemon's background work (index merges, compactions) took %s more\n", w.Round(time.Second))
	}
	r := rand.New(rand.NewPCG(8, 8))
	for _, c := range []struct{ ranking, scope string }{
		{"semantic", ""}, {"semantic", "&wing=bench&room=small"}, {"hybrid", ""}, {"hybrid", "&wing=bench&room=small"}, {"lexical", "&wing=bench&room=small"},
	} {
		// Warm-up, not timed: 30 queries of another stream.
		warm := rand.New(rand.NewPCG(9, 9))
		for range 30 {
			resp, err := http.Get("http://" + d.addr + "/api/search?ranking=" + c.ranking + "&q=" + url.QueryEscape(strings.Join(strings.Fields(sentence(warm))[:4], " ")))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		var lat []time.Duration
		for range 300 {
			words := strings.Join(strings.Fields(sentence(r))[:4], " ")
			// The query's vector is sent with it: the figure excludes the
			// query embedding, as the target does.
			qv, _ := embed.Hash{Dim: 768}.Embed(context.Background(), []string{words})
			body := map[string]any{"text": words, "ranking": c.ranking, "profile": "bench", "query_embedding": qv[0]}
			if c.scope != "" {
				body["filter"] = map[string]any{"wing": "bench", "room": "small"}
			}
			b, _ := json.Marshal(body)
			t := time.Now()
			resp, err := http.Post("http://"+d.addr+"/api/search", "application/json", bytes.NewReader(b))
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return fmt.Errorf("%s search: status %d", c.ranking, resp.StatusCode)
			}
			lat = append(lat, time.Since(t))
		}
		scope := "whole palace"
		if c.scope != "" {
			scope = "one room of 1 %"
		}
		fmt.Printf("%s search over REST, %d drawers, %s: p50 %s p99 %s (300 queries, query vector sent)\n",
			c.ranking, fill, scope, pct(lat, 0.5).Round(time.Microsecond), pct(lat, 0.99).Round(time.Microsecond))
	}
	return nil
}

// checkpoints submits jobs checkpoint jobs of items items each and reports
// drawers per second from the first submission to the last completion.
func checkpoints(bin, palace string, jobs, items int) error {
	d, _, err := start(bin, palace)
	if err != nil {
		return err
	}
	defer d.stop()
	r := rand.New(rand.NewPCG(4, 4))
	bodies := make([][]byte, jobs)
	for j := range bodies {
		list := make([]map[string]any, items)
		for i := range list {
			list[i] = map[string]any{"destination": "project", "content": sentence(r), "tags": []string{}, "source": map[string]any{"kind": "manual"}}
		}
		bodies[j], _ = json.Marshal(map[string]any{"type": "checkpoint", "payload": map[string]any{"items": list}})
	}
	t0 := time.Now()
	if err := runJobs(d.addr, bodies); err != nil {
		return err
	}
	el := time.Since(t0)
	fmt.Printf("checkpoint ingestion: %d jobs of %d items in %s: %.0f drawers/s\n", jobs, items, el.Round(time.Millisecond), float64(jobs*items)/el.Seconds())
	return nil
}

// idle waits until the process has used under a tenth of a core for two
// seconds in a row (Linux; elsewhere it returns at once) and reports how
// long it waited. Latency is measured on a settled daemon.
func idle(pid int, limit time.Duration) time.Duration {
	cpu := func() (time.Duration, bool) { return procCPU(pid) }
	t0 := time.Now()
	quiet := 0
	last, ok := cpu()
	for ok && quiet < 2 && time.Since(t0) < limit {
		time.Sleep(time.Second)
		var now time.Duration
		now, ok = cpu()
		if now-last < 100*time.Millisecond {
			quiet++
		} else {
			quiet = 0
		}
		last = now
	}
	return time.Since(t0) - 2*time.Second
}

// procCPU is the CPU time a process has used (Linux; false elsewhere).
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command name (which may hold spaces): utime and
	// stime are the 12th and 13th, in clock ticks (100 per second).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, false
	}
	var u, st int64
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &st)
	return time.Duration(u+st) * 10 * time.Millisecond, true
}

// startConfigured writes the configuration file cfg and starts the daemon
// on palace with it (an empty text: every default).
func startConfigured(bin, palace, cfg, text string) (*daemon, error) {
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		return nil, err
	}
	d, _, err := start(bin, palace, "LOCI_CONFIG="+cfg)
	return d, err
}

// stored is the number of drawers the daemon holds (0 when it cannot say).
func stored(addr string) int {
	var st struct {
		Counts struct {
			Drawers int `json:"drawers"`
		} `json:"counts"`
	}
	_ = getJSON(addr, "/api/status", &st)
	return st.Counts.Drawers
}

// runJobs submits each job body (POST /api/jobs) and waits until every job
// completed; a job that failed or was cancelled is an error.
func runJobs(addr string, bodies [][]byte) error {
	var ids []string
	for _, b := range bodies {
		resp, err := http.Post("http://"+addr+"/api/jobs", "application/json", bytes.NewReader(b))
		if err != nil {
			return err
		}
		var job struct {
			ID string `json:"id"`
		}
		err = json.NewDecoder(resp.Body).Decode(&job)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("submit: status %d %v", resp.StatusCode, err)
		}
		ids = append(ids, job.ID)
	}
	for _, id := range ids {
		for {
			var job struct {
				Status string `json:"status"`
			}
			if err := getJSON(addr, "/api/jobs/"+id, &job); err != nil {
				return err
			}
			if job.Status == "completed" {
				break
			}
			if job.Status == "failed" || job.Status == "cancelled" {
				return fmt.Errorf("job %s %s", id, job.Status)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}
