package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"
)

// backupBench is issue 37's run on a big palace (the million run's, reused
// with -keep): a backup through the CLI while the daemon serves, then a
// restore into a fresh folder and the daemon's reindex there, then an
// export and an import into a fresh palace, each with its rate and the
// daemon's peak resident memory while it ran (streaming: it must stay
// bounded, never the whole palace). Badger's raw Backup rate on the same
// data is the Go benchmark BenchmarkBackupSideBySide (store/badgerdb).
func backupBench(bin, dir string, n, clients int) error {
	palace := filepath.Join(dir, "million")
	fmt.Printf("machine: %d cores, %s; palace %s\n", runtime.NumCPU(), time.Now().UTC().Format(time.DateOnly), palace)
	d, _, err := start(bin, palace)
	if err != nil {
		return err
	}
	defer d.stop()
	room := "/api/wings/bench/rooms/big/drawers"
	if have := stored(d.addr); have < n {
		t0 := time.Now()
		if _, err := load(d.addr, room, n-have, clients, uint64(10+have)); err != nil {
			return err
		}
		fmt.Printf("fill: %d drawers in %s\n", n-have, time.Since(t0).Round(time.Second))
	}
	drawers := stored(d.addr)
	work := filepath.Join(dir, "backup-run")
	os.RemoveAll(work)
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	cli := func(args ...string) ([]byte, error) {
		cmd := exec.Command(bin, append([]string{"--addr", d.addr}, args...)...)
		cmd.Stderr = os.Stderr
		return cmd.Output()
	}

	fmt.Printf("daemon resident before the backup: %v\n", residentSplit(d.cmd.Process.Pid))
	full := filepath.Join(work, "full.lbk")
	el, peak, err := measured(d, func() error { _, err := cli("backup", "--out", full, "--json"); return err })
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	size := fileSize(full)
	fmt.Printf("backup: %d drawers, %.1f MB in %s: %.1f MB/s, %.0f drawers/s; daemon peak resident %d MB (%d MB anonymous) during it\n",
		drawers, float64(size)/1e6, el.Round(time.Millisecond), float64(size)/1e6/el.Seconds(), float64(drawers)/el.Seconds(), peak.total/1024, peak.anon/1024)

	exp := filepath.Join(work, "palace.jsonl")
	el, peak, err = measured(d, func() error { _, err := cli("export", "--out", exp); return err })
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Printf("export: %d drawers, %.1f MB in %s: %.0f drawers/s (goal 50,000); daemon peak resident %d MB (%d MB anonymous) during it\n",
		drawers, float64(fileSize(exp))/1e6, el.Round(time.Millisecond), float64(drawers)/el.Seconds(), peak.total/1024, peak.anon/1024)
	if err := d.stop(); err != nil {
		return err
	}

	restored := filepath.Join(work, "restored")
	t0 := time.Now()
	cmd := exec.Command(bin, "restore", full, "--data-dir", restored)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	restoreTime := time.Since(t0)
	r, ready, err := start(bin, restored)
	if err != nil {
		return err
	}
	t1 := time.Now()
	for {
		lex, _, _, err := behind(r.addr)
		if err != nil {
			r.stop()
			return err
		}
		if lex == 0 && stored(r.addr) >= drawers {
			break
		}
		if time.Since(t1) > 60*time.Minute {
			r.stop()
			return fmt.Errorf("restored palace not reindexed in an hour")
		}
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Printf("restore: %s (%.0f drawers/s), start %s, lexical reindex %s; daemon peak resident %d MB\n",
		restoreTime.Round(time.Millisecond), float64(drawers)/restoreTime.Seconds(), ready.Round(time.Millisecond),
		time.Since(t1).Round(time.Second), peakKB(r.cmd.Process.Pid)/1024)
	if err := r.stop(); err != nil {
		return err
	}

	fresh, _, err := start(bin, filepath.Join(work, "imported"))
	if err != nil {
		return err
	}
	defer fresh.stop()
	el, peak, err = measured(fresh, func() error {
		cmd := exec.Command(bin, "--addr", fresh.addr, "import", exp, "--json")
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err == nil && !json.Valid(out) {
			err = fmt.Errorf("import answered %q", out)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	fmt.Printf("import: %d drawers in %s: %.0f drawers/s (goal 50,000); daemon peak resident %d MB (%d MB anonymous) during it\n",
		stored(fresh.addr), el.Round(time.Millisecond), float64(stored(fresh.addr))/el.Seconds(), peak.total/1024, peak.anon/1024)
	return nil
}

// measured runs fn and answers how long it took and the daemon's peak
// resident set while it ran, sampled every 100 ms: its total and its
// anonymous part (the heap; the rest is file pages of the store's
// memory-mapped tables, which the kernel may drop), in KiB.
func measured(d *daemon, fn func() error) (time.Duration, resident, error) {
	var mu sync.Mutex
	var peak resident
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			r := residentSplit(d.cmd.Process.Pid)
			mu.Lock()
			peak.total, peak.anon = max(peak.total, r.total), max(peak.anon, r.anon)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	t0 := time.Now()
	err := fn()
	el := time.Since(t0)
	close(stop)
	wg.Wait()
	return el, peak, err
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}
