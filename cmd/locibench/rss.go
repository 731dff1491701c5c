package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// rssBench measures the daemon's resident set as the palace grows (issue
// 38): n small near-identical files (a template with a few words changed,
// so that every drawer has many near duplicates) are mined with the default
// configuration, step files at a time, and the resident set is printed
// after each step once the drawers are embedded (then again after 30 idle
// seconds: at rest), with the peak. The target is 20,000 drawers under 200
// MB. With LOCI_PPROF set (a loopback host:port) and
// LOCIBENCH_HEAP set to a file prefix, a heap profile is saved after each
// step.
func rssBench(bin, dir string, n, step int) error {
	d, err := startConfigured(bin, filepath.Join(dir, "p"), filepath.Join(dir, "default.toml"), "")
	if err != nil {
		return err
	}
	defer d.stop()
	pid := d.cmd.Process.Pid
	fmt.Printf("rss: started, %v\n", residentSplit(pid))
	t0 := time.Now()
	for done := 0; done < n; done += step {
		tree := filepath.Join(dir, fmt.Sprintf("tree%03d", done/step))
		for i := done; i < min(done+step, n); i++ {
			p := filepath.Join(tree, fmt.Sprintf("pkg%03d", i%100), fmt.Sprintf("note%06d.txt", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(nearIdentical(i)), 0o644); err != nil {
				return err
			}
		}
		res, err := mineJob(d.addr, tree, false)
		if err != nil {
			return err
		}
		for embedded(d.addr, "static") < stored(d.addr) {
			if time.Since(t0) > 20*time.Minute {
				return fmt.Errorf("drawers not embedded after 20 minutes")
			}
			time.Sleep(100 * time.Millisecond)
		}
		var st struct {
			Counts struct {
				Drawers int `json:"drawers"`
				Links   int `json:"similar_links"`
			} `json:"counts"`
		}
		_ = getJSON(d.addr, "/api/status", &st)
		busy := residentSplit(pid)
		// At rest: Badger gives its table builders back after a few idle
		// seconds, and the Go runtime its freed pages.
		time.Sleep(30 * time.Second)
		fmt.Printf("rss at %d drawers (%d similar links, %d created by this mine, %s): %v at rest, %d MB when the mine ended, peak %d MB (target at 20,000: under 200 MB)\n",
			st.Counts.Drawers, st.Counts.Links, res.Created, time.Since(t0).Round(time.Second),
			residentSplit(pid), busy.total/1024, peakKB(pid)/1024)
		if err := saveHeap(fmt.Sprintf("%d", st.Counts.Drawers)); err != nil {
			return err
		}
		if os.Getenv("LOCIBENCH_SMAPS") != "" {
			printMapped(pid)
		}
	}
	return nil
}

// nearIdentical is file i of the rss benchmark: a fixed note with the
// file's number and a few words picked by it, so that any two files are
// near duplicates of each other.
func nearIdentical(i int) string {
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	return fmt.Sprintf("Build report %d for the %s service: the nightly pipeline compiled every package, "+
		"ran the unit and integration suites and published the artefacts to the %s channel. "+
		"No regressions were found; the deploy to %s went out on time and the on-call engineer "+
		"closed ticket %d without further action.\n",
		i, words[i%8], words[(i/8)%8], words[(i/64)%8], 1000+i)
}

// peakKB is a process's peak resident set (VmHWM) in KiB, 0 when unknown.
func peakKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
			return kb
		}
	}
	return 0
}

// saveHeap saves the daemon's heap profile to LOCIBENCH_HEAP's prefix plus
// tag, when both LOCIBENCH_HEAP and LOCI_PPROF are set.
func saveHeap(tag string) error {
	prefix, addr := os.Getenv("LOCIBENCH_HEAP"), os.Getenv("LOCI_PPROF")
	if prefix == "" || addr == "" {
		return nil
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(prefix + tag + ".pprof")
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// printMapped prints the files whose mapped pages the process holds most of
// (/proc/PID/smaps), for finding what the file part of the resident set is.
func printMapped(pid int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return
	}
	byFile := map[string]int64{}
	cur := ""
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			cur = "[anonymous]"
			if len(f) >= 6 {
				cur = filepath.Base(filepath.Dir(f[5])) + "/" + filepath.Ext(f[5])
			}
			continue
		}
		if len(f) == 3 && f[0] == "Rss:" {
			var kb int64
			fmt.Sscan(f[1], &kb)
			byFile[cur] += kb
		}
	}
	for k, v := range byFile {
		if v >= 1024 {
			fmt.Printf("  mapped %-30s %d MB\n", k, v/1024)
		}
	}
}
