package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/loci-dev/loci/sources/exportgen"
)

// exportBench mines a generated ChatGPT export of about 128 MiB (issue
// 27: peak resident memory under 300 MB) through a real daemon with the
// default configuration: the peak resident set and throughput of the
// first mine, then of a second mine of the unchanged file (one streaming
// pass, nothing filed), then the peak once every drawer is embedded; then
// the same mine into a fresh palace with embedding off.
func exportBench(bin, dir string) error {
	exp := filepath.Join(dir, "export")
	if err := os.MkdirAll(exp, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(exp, "conversations.json"))
	if err != nil {
		return err
	}
	n, err := exportgen.ChatGPT(f, 127<<20, 0, 27)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	info, err := os.Stat(filepath.Join(exp, "conversations.json"))
	if err != nil {
		return err
	}
	d, err := startConfigured(bin, filepath.Join(dir, "p"), filepath.Join(dir, "default.toml"), "")
	if err != nil {
		return err
	}
	defer d.stop()
	pid := d.cmd.Process.Pid
	fmt.Printf("export: a generated ChatGPT export, %d conversations, %.1f MiB; daemon started, %v\n",
		n, float64(info.Size())/(1<<20), residentSplit(pid))
	job := map[string]any{"type": "mine", "source": "chatgpt-export", "locator": exp, "wing": "chats"}
	t0 := time.Now()
	res, err := mineBody(d.addr, job)
	if err != nil {
		return err
	}
	el := time.Since(t0)
	fmt.Printf("export: mined %d conversations (%d filtered), %.1f MB read, %d drawers: %s, %.1f MB/s; peak resident set %d MB (target under 300 MB), %v now\n",
		res.Documents, res.Filtered, float64(res.Bytes)/1e6, res.Created, el.Round(time.Millisecond),
		float64(res.Bytes)/1e6/el.Seconds(), peakKB(pid)/1024, residentSplit(pid))
	t0 = time.Now()
	again, err := mineBody(d.addr, job)
	if err != nil {
		return err
	}
	fmt.Printf("export: the same export mined again: %s, %d conversations past the cursor; peak resident set %d MB\n",
		time.Since(t0).Round(time.Millisecond), again.Documents, peakKB(pid)/1024)
	t0 = time.Now()
	for embedded(d.addr, "static") < stored(d.addr) {
		if time.Since(t0) > 20*time.Minute {
			return fmt.Errorf("drawers not embedded after 20 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Printf("export: every drawer embedded %s later; peak resident set %d MB, %v now\n",
		time.Since(t0).Round(time.Second), peakKB(pid)/1024, residentSplit(pid))
	d.stop()

	// Embedding off, into a fresh palace: what the mine alone holds.
	e, err := startConfigured(bin, filepath.Join(dir, "p2"), filepath.Join(dir, "off.toml"), "[embedding]\ndefault = \"\"\n")
	if err != nil {
		return err
	}
	defer e.stop()
	t0 = time.Now()
	if res, err = mineBody(e.addr, job); err != nil {
		return err
	}
	el = time.Since(t0)
	fmt.Printf("export, embedding off: mined %d conversations, %d drawers: %s, %.1f MB/s; peak resident set %d MB, %v now\n",
		res.Documents, res.Created, el.Round(time.Millisecond), float64(res.Bytes)/1e6/el.Seconds(),
		peakKB(e.cmd.Process.Pid)/1024, residentSplit(e.cmd.Process.Pid))
	return nil
}
