package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// million is the big-palace run (make bench-million): fill one room to n
// drawers (16 clients, dedup on, lexical only) while sampling the daemon's
// resident memory, then write and search latency in the full room, and
// over three restarts: start to ready, the first write into the room, and
// the resident memory once its near-duplicate index is loaded. With keep
// set, a palace filled before is reused.
func million(bin, dir string, n, clients int) error {
	palace := filepath.Join(dir, "million")
	fmt.Printf("machine: %d cores, %s; palace %s\n", runtime.NumCPU(), time.Now().UTC().Format(time.DateOnly), palace)
	d, _, err := start(bin, palace)
	if err != nil {
		return err
	}
	room := "/api/wings/bench/rooms/big/drawers"
	if have := stored(d.addr); have < n {
		var mu sync.Mutex
		var peak resident
		sample := func() resident {
			r := residentSplit(d.cmd.Process.Pid)
			mu.Lock()
			defer mu.Unlock()
			if r.total > peak.total {
				peak = r
			}
			return r
		}
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Second):
					sample()
				}
			}
		}()
		t0 := time.Now()
		// In steps, so the figure at each step is visible while it runs.
		step := max((n-have)/10, 1)
		for done := have; done < n; done += step {
			k := min(step, n-done)
			if _, err := load(d.addr, room, k, clients, uint64(10+done)); err != nil {
				close(stop)
				return err
			}
			rss := sample()
			mu.Lock()
			fmt.Printf("  filled %d in %s, resident %s; peak %s\n", done+k, time.Since(t0).Round(time.Second), rss, peak)
			mu.Unlock()
		}
		close(stop)
		mu.Lock()
		fmt.Printf("fill: %d drawers in one room in %s; peak resident memory %s\n", n, time.Since(t0).Round(time.Second), peak)
		mu.Unlock()
	}
	// Seeded by what is stored, so a reused palace gets new sentences.
	r := rand.New(rand.NewPCG(uint64(stored(d.addr)), 7))
	lat := make([]time.Duration, 0, 1000)
	for range 1000 {
		el, err := post(d.addr, room, sentence(r))
		if err != nil {
			return err
		}
		lat = append(lat, el)
	}
	fmt.Printf("writes in the full room: p50 %s p99 %s (1,000 sequential)\n", pct(lat, 0.5).Round(time.Microsecond), pct(lat, 0.99).Round(time.Microsecond))
	slat, err := searchLatency(d.addr, r, 500)
	if err != nil {
		return err
	}
	fmt.Printf("lexical search: p50 %s p99 %s (500 queries of 4 words)\n", pct(slat, 0.5).Round(time.Microsecond), pct(slat, 0.99).Round(time.Microsecond))
	// Status right after a write, as a dashboard polling a palace in use
	// reads it (its counts are kept: target under 5 ms).
	stlat := make([]time.Duration, 0, 200)
	for range 200 {
		if _, err := post(d.addr, room, sentence(r)); err != nil {
			return err
		}
		t0 := time.Now()
		var st struct {
			Counts struct{ Drawers int } `json:"counts"`
		}
		if err := getJSON(d.addr, "/api/status", &st); err != nil {
			return err
		}
		stlat = append(stlat, time.Since(t0))
		if st.Counts.Drawers < n {
			return fmt.Errorf("status counts %d drawers, want at least %d", st.Counts.Drawers, n)
		}
	}
	fmt.Printf("status after a write: p50 %s p99 %s (200 reads, each right after a write; target < 5ms)\n", pct(stlat, 0.5).Round(time.Microsecond), pct(stlat, 0.99).Round(time.Microsecond))
	fmt.Printf("resident memory after the fill: %s\n", residentSplit(d.cmd.Process.Pid))
	if err := d.stop(); err != nil {
		return err
	}
	for range 3 {
		d, ready, err := start(bin, palace)
		if err != nil {
			return err
		}
		el, err := post(d.addr, room, sentence(r))
		if err != nil {
			return err
		}
		atStart := residentKB(d.cmd.Process.Pid)
		// The room's index loads in the background; wait until a write is
		// judged against it (the log says so) by watching memory settle.
		t0 := time.Now()
		prev := int64(-1)
		for time.Since(t0) < 2*time.Minute {
			time.Sleep(time.Second)
			cur := residentKB(d.cmd.Process.Pid)
			if cur == prev {
				break
			}
			prev = cur
		}
		el2, err := post(d.addr, room, sentence(r))
		if err != nil {
			return err
		}
		fmt.Printf("start to ready %s; first write into the room %s; resident %d MB at the first write, %d MB once loaded (next write %s)\n",
			ready.Round(time.Millisecond), el.Round(time.Millisecond), atStart/1024, prev/1024, el2.Round(time.Microsecond))
		if err := d.stop(); err != nil {
			return err
		}
	}
	return nil
}

// residentKB is a process's resident set (VmRSS) in KiB, 0 when unknown.
func residentKB(pid int) int64 { return residentSplit(pid).total }

// resident is a process's resident set in KiB: the total, its anonymous
// part (the heap) and its file pages (memory-mapped files: Badger's tables
// and logs, Bleve's segments), which the kernel may drop under pressure.
type resident struct{ total, anon, file int64 }

func (r resident) String() string {
	return fmt.Sprintf("%d MB (%d MB anonymous, %d MB file pages)", r.total/1024, r.anon/1024, r.file/1024)
}

// residentSplit reads a process's resident set from /proc; zero when unknown.
func residentSplit(pid int) resident {
	var r resident
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return r
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch name {
		case "VmRSS":
			r.total = kb
		case "RssAnon":
			r.anon = kb
		case "RssFile":
			r.file = kb
		}
	}
	return r
}
