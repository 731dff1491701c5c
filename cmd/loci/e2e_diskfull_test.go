package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// diskFS is a small tmpfs mounted for one test, filled and freed with a
// filler file beside the palace.
type diskFS struct {
	t      *testing.T
	dir    string
	filler string
}

// mountTmpfs mounts a tmpfs of size bytes, unmounted at the test's end
// (after the daemons started later are killed: cleanups run in reverse).
// It skips the test where a filesystem cannot be mounted.
func mountTmpfs(t *testing.T, size int64) *diskFS {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the full-disk test mounts a tmpfs: Linux only")
	}
	if os.Geteuid() != 0 {
		t.Skip("the full-disk test mounts a tmpfs: run it as root (CI does)")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s); the full-disk test needs it", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return &diskFS{t: t, dir: dir, filler: filepath.Join(dir, "filler")}
}

// free is what statfs says an unprivileged writer may still use.
func (fs *diskFS) free() int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(fs.dir, &st); err != nil {
		fs.t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// grow appends n bytes to the filler (fewer when the disk fills first).
func (fs *diskFS) grow(n int64) {
	f, err := os.OpenFile(fs.filler, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fs.t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, int64(len(buf)))
		if _, err := f.Write(buf[:k]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			fs.t.Fatal(err)
		}
		n -= k
	}
}

// fillBelow grows the filler until less than reserve is free.
func (fs *diskFS) fillBelow(reserve int64) {
	if f := fs.free(); f >= reserve {
		fs.grow(f - reserve + 1<<20)
	}
}

// release deletes the filler.
func (fs *diskFS) release() {
	if err := os.Remove(fs.filler); err != nil && !errors.Is(err, os.ErrNotExist) {
		fs.t.Fatal(err)
	}
}

// tryDo is do for a daemon that may have died: the error instead of a
// failed test.
func (d *daemon) tryDo(method, path string, body any) (response, error) {
	j, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, "http://"+d.addr+path, bytes.NewReader(j))
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r, nil
}

// TestDiskFull fills the palace's filesystem (a tmpfs the test mounts)
// while drawers are written and a mine job runs: writes are refused with
// loci::store::disk_full (507) before space runs out, the daemon stays up,
// reads and search keep working, status says the disk is full, the mine
// job waits instead of failing; once space is freed writes resume by
// themselves and the job completes, every acknowledged write present
// exactly once. A start on the full disk serves reads, and writes resume
// once space is freed again.
func TestDiskFull(t *testing.T) {
	// Not parallel: it mounts and fills a tmpfs.
	fs := mountTmpfs(t, 640<<20)
	home := t.TempDir()
	palace := filepath.Join(fs.dir, "palace")
	// A reserve far below Badger's own need: the daemon raises it to what
	// a new memtable and value log file take.
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte("[web]\nenable = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	extra := []string{"LOCI_STORE_MIN_FREE_BYTES=1048576", "LOCI_TEST_MINE_DELAY=40ms", "LOCI_CONFIG=" + cfg}
	d := start(t, home, palace, extra...)
	st := d.do("GET", "/api/status", nil)
	reserve := int64(get[float64](st.body, "disk", "min_free_bytes"))
	if st.status != 200 || reserve < 1<<20 || get[bool](st.body, "disk", "full") || get[string](st.body, "disk", "path") != palace {
		t.Fatalf("status before the disk fills: %s", st.raw)
	}

	// A tree the mine job reads slowly (LOCI_TEST_MINE_DELAY a document),
	// so the disk fills while it runs.
	src := filepath.Join(home, "notes")
	const files = 60
	for i := range files {
		p := filepath.Join(src, fmt.Sprintf("note-%03d.md", i))
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte(fmt.Sprintf("minednote%03d about the harbour lanterns, entry %d of the keeper's log\n", i, i)), 0o600)
	}
	// Leave a little more than the reserve free, then start the job.
	fs.grow(fs.free() - reserve - 6<<20)
	job := d.do("POST", "/api/jobs", map[string]any{"type": "mine", "path": src, "wing": "harbour"})
	jobID := get[string](job.body, "id")
	if job.status/100 != 2 || jobID == "" {
		t.Fatalf("mine job: %s", job.raw)
	}

	// Write drawers while the disk fills, until one is refused.
	acked := map[string]string{}
	var refused response
	for i := 0; ; i++ {
		if i == 400 {
			t.Fatalf("no write was refused; %d bytes free, reserve %d", fs.free(), reserve)
		}
		content := fmt.Sprintf("drawernote%04d the lighthouse keeper wrote entry %d %s", i, i, strings.Repeat("tide ", 2000))
		r, err := d.tryDo("POST", "/api/wings/log/rooms/entries/drawers", map[string]any{"content": content})
		if err != nil {
			select {
			case <-d.exited:
			case <-time.After(5 * time.Second):
			}
			t.Fatalf("the daemon is gone while the disk filled (%v): %v\n%s", d.err, err, tail(d.log.String(), 4000))
		}
		if r.status == 507 {
			refused = r
			break
		}
		if r.status != 201 {
			t.Fatalf("write %d: %d %s", i, r.status, r.raw)
		}
		acked[get[string](r.body, "drawer", "id")] = content
		fs.grow(2 << 20)
	}
	if refused.code() != "loci::store::disk_full" || !strings.Contains(get[string](refused.body, "help"), palace) ||
		!strings.Contains(get[string](refused.body, "help"), "free") {
		t.Fatalf("the refusal: %s", refused.raw)
	}
	// Fill further, to nothing left at all: loci must not touch it.
	fs.grow(1 << 40)
	waitFor(t, 5*time.Second, "the daemon reading the filled disk", func() bool {
		return get[float64](d.do("GET", "/api/status", nil).body, "disk", "free_bytes") <= float64(fs.free())
	})

	// Alive: reads, search, status, the CLI, other writes refused alike.
	for id, content := range acked {
		if r := d.do("GET", "/api/wings/log/rooms/entries/drawers/"+id, nil); r.status != 200 || r.body["content"] != content {
			t.Fatalf("read on a full disk: %d %s", r.status, r.raw)
		}
		break
	}
	if s := d.do("GET", "/api/search?q=drawernote0000", nil); s.status != 200 || !strings.Contains(s.raw, "drawernote0000") {
		t.Fatalf("search on a full disk: %s", s.raw)
	}
	st = d.do("GET", "/api/status", nil)
	if !get[bool](st.body, "disk", "full") || get[float64](st.body, "disk", "min_free_bytes") != float64(reserve) {
		t.Fatalf("status on a full disk: %s", st.raw)
	}
	if out, errOut, code := d.cli("", "status"); code != 1 || !strings.Contains(out, "disk full") || !strings.Contains(out, palace) {
		t.Fatalf("loci status on a full disk: %d\n%s\n%s", code, out, errOut)
	}
	dashboardSaysDiskFull(t, "http://"+d.addr+"/ui/#/overview", palace)
	if out, errOut, code := runCLI(home, "", []string{"doctor"}, []string{"LOCI_PALACE_PATH=" + palace}); code == 0 ||
		!strings.Contains(out, "disk full") {
		t.Fatalf("loci doctor on a full disk: %d\n%s\n%s", code, out, errOut)
	}
	var someID string
	for id := range acked {
		someID = id
	}
	for _, w := range []struct{ path, body string }{
		{"/api/notes", `{"wing":"log","room":"notes","content":"a note on a full disk"}`},
		{"/api/wings", `{"name":"more"}`},
		{"/api/jobs", `{"type":"demo"}`},
		{"/api/drawers/" + someID + "/mentions", `{"name":"Harbour Master","kind":"person"}`},
	} {
		if r := d.do("POST", w.path, w.body); r.status != 507 || r.code() != "loci::store::disk_full" {
			t.Fatalf("POST %s on a full disk: %d %s", w.path, r.status, r.raw)
		}
	}
	if _, errOut, code := d.cli("", "drawer", "add", "--wing", "log", "--room", "entries", "a drawer from the CLI"); code == 0 ||
		!strings.Contains(errOut, "loci::store::disk_full") {
		t.Fatalf("loci drawer add on a full disk: %d %s", code, errOut)
	}
	sess := mcpSession(t, d)
	wantError(t, sess, "loci_diary_write", map[string]any{"agent_identity": "claude", "wing": "log", "content": "a diary entry over MCP"}, "loci::store::disk_full", "free")
	if out, isErr := callTool(t, sess, "loci_search", map[string]any{"query": "drawernote0001"}); isErr || !strings.Contains(fmt.Sprint(out), "drawernote0001") {
		t.Fatalf("MCP search on a full disk: %v", out)
	}

	// The mine job waits for space: still running, saying why.
	waitFor(t, 10*time.Second, "the mine job waiting for disk space", func() bool {
		j := d.do("GET", "/api/jobs/"+jobID, nil)
		if s := get[string](j.body, "status"); s != "running" {
			t.Fatalf("the mine job on a full disk: %s", j.raw)
		}
		return strings.Contains(get[string](j.body, "progress", "message"), "disk")
	})

	// Space is freed: writes resume by themselves, the job completes.
	fs.release()
	waitFor(t, 15*time.Second, "writes resuming", func() bool {
		r := d.do("POST", "/api/wings/log/rooms/entries/drawers", map[string]any{"content": "drawernote9999 written once space was back"})
		if r.status == 201 {
			acked[get[string](r.body, "drawer", "id")] = "drawernote9999 written once space was back"
		}
		return r.status == 201
	})
	waitFor(t, 30*time.Second, "the mine job completing", func() bool {
		j := d.do("GET", "/api/jobs/"+jobID, nil)
		switch get[string](j.body, "status") {
		case "failed", "cancelled":
			t.Fatalf("the mine job: %s", j.raw)
		}
		return get[string](j.body, "status") == "completed"
	})
	checkOnce := func(d *daemon) {
		t.Helper()
		room := d.do("GET", "/api/wings/log/rooms/entries", nil)
		if n := get[float64](room.body, "drawers"); int(n) != len(acked) {
			t.Fatalf("%d acknowledged writes, the room holds %.0f: %s", len(acked), n, room.raw)
		}
		for id, content := range acked {
			if r := d.do("GET", "/api/wings/log/rooms/entries/drawers/"+id, nil); r.status != 200 || r.body["content"] != content {
				t.Fatalf("acknowledged drawer %s: %d %.200s", id, r.status, r.raw)
			}
		}
		mined := 0
		for _, room := range d.do("GET", "/api/wings/harbour/rooms", nil).body["rooms"].([]any) {
			mined += int(get[float64](room.(map[string]any), "drawers"))
		}
		if mined != files {
			t.Fatalf("%d files mined into %d drawers", files, mined)
		}
	}
	checkOnce(d)

	// A start on a full disk serves reads.
	fs.grow(1 << 40)
	d.cmd.Process.Kill()
	<-d.exited
	d = start(t, home, palace, extra...)
	checkOnce(d)
	if s := d.do("GET", "/api/search?q=minednote007", nil); s.status != 200 || !strings.Contains(s.raw, "minednote007") {
		t.Fatalf("search after a start on a full disk: %s", s.raw)
	}
	if st := d.do("GET", "/api/status", nil); !get[bool](st.body, "disk", "full") {
		t.Fatalf("status after a start on a full disk: %s", st.raw)
	}
	if r := d.do("POST", "/api/notes", `{"wing":"log","room":"notes","content":"a note on a full disk"}`); r.status != 507 || r.code() != "loci::store::disk_full" {
		t.Fatalf("a write after a start on a full disk: %d %s", r.status, r.raw)
	}
	fs.release()
	waitFor(t, 20*time.Second, "writes resuming after a start on a full disk", func() bool {
		r := d.do("POST", "/api/wings/log/rooms/entries/drawers", map[string]any{"content": "drawernote9998 after the full start"})
		if r.status == 201 {
			acked[get[string](r.body, "drawer", "id")] = "drawernote9998 after the full start"
		}
		return r.status == 201
	})
	if st := d.do("GET", "/api/status", nil); get[bool](st.body, "disk", "full") {
		t.Fatalf("status once space is back: %s", st.raw)
	}
	checkOnce(d)
}

// dashboardSaysDiskFull opens the dashboard's overview in Chromium (when
// there is one) and waits for its alert naming the full disk and the
// palace.
func dashboardSaysDiskFull(t *testing.T, url, palace string) {
	t.Helper()
	browser := ""
	for _, name := range []string{os.Getenv("LOCI_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); name != "" && err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Log("no Chromium found: the dashboard's disk-full alert is not checked")
		return
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	tctx, c := context.WithTimeout(ctx, 30*time.Second)
	defer c()
	var alert string
	err := chromedp.Run(tctx, chromedp.Navigate(url),
		chromedp.Poll(`document.querySelector('main [role=alert]')?.textContent.includes('disk is full')`, nil, chromedp.WithPollingTimeout(25*time.Second)),
		chromedp.Text(`main [role=alert]`, &alert, chromedp.ByQuery),
		// The running mine job is listed, waiting for space.
		chromedp.Poll(`document.querySelector('#running-jobs')?.textContent.includes('waiting for disk space')`, nil, chromedp.WithPollingTimeout(25*time.Second)))
	if err != nil || !strings.Contains(alert, palace) || !strings.Contains(alert, "free") {
		var page string
		_ = chromedp.Run(ctx, chromedp.Evaluate(`document.body.innerText`, &page))
		t.Fatalf("the dashboard on a full disk: %v %q; the page:\n%s", err, alert, page)
	}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDaemonStartOnAFullDisk: `loci daemon start` on a disk full to the
// last byte, where the daemon cannot write its registry file but serves
// reads from a read-only store, says it started and that the store is
// read-only (instead of waiting 60 s and reporting a failure), and
// `loci daemon stop` stops it.
func TestDaemonStartOnAFullDisk(t *testing.T) {
	// Not parallel: it mounts a tmpfs; the start must take under 15 s.
	fs := mountTmpfs(t, 640<<20)
	home := t.TempDir()
	palace := filepath.Join(fs.dir, "palace")
	envs := []string{"LOCI_PALACE_PATH=" + palace, fmt.Sprintf("LOCI_PORT=%d", freePort(t))}
	cli := func(args ...string) (string, string, int) { return runCLI(home, "", args, envs) }
	t.Cleanup(func() { cli("daemon", "stop") })
	// The palace is made while there is space; then the disk is filled.
	if out, errOut, code := cli("daemon", "start"); code != 0 || !strings.Contains(out, "loci started") || strings.Contains(out, "read-only") {
		t.Fatalf("start with space: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := cli("drawer", "add", "--wing", "log", "--room", "entries", "fullstartnote written with space"); code != 0 {
		t.Fatalf("drawer add: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := cli("daemon", "stop"); code != 0 || !strings.Contains(out, "stopped") {
		t.Fatalf("stop: %d %s %s", code, out, errOut)
	}
	fs.grow(1 << 40)
	if f := fs.free(); f != 0 {
		t.Fatalf("%d bytes still free", f)
	}

	t0 := time.Now()
	out, errOut, code := cli("daemon", "start")
	took := time.Since(t0)
	if code != 0 || took > 15*time.Second || !strings.Contains(out, "loci started") || !strings.Contains(out, "read-only") ||
		!strings.Contains(out, "disk") || !strings.Contains(out, "full") {
		t.Fatalf("start on a full disk (%s): %d\n%s\n%s", took.Round(time.Millisecond), code, out, errOut)
	}
	t.Logf("start on a full disk (%s):\n%s", took.Round(time.Millisecond), out)
	if _, err := os.Stat(filepath.Join(palace, "daemon.json")); err == nil {
		t.Logf("the registry file was written after all")
	}
	// It serves reads; status says the disk is full.
	if out, errOut, code := cli("search", "fullstartnote"); code != 0 || !strings.Contains(out, "fullstartnote") {
		t.Fatalf("search on the full start: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := cli("status"); code != 1 || !strings.Contains(out, "disk full") || !strings.Contains(out, "read-only") {
		t.Fatalf("status on the full start: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := cli("daemon", "stop"); code != 0 || !strings.Contains(out, "stopped") {
		t.Fatalf("stop on a full disk: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := cli("status"); code != 3 || !strings.Contains(errOut, "not_running") {
		t.Fatalf("status after the stop: %d %s", code, errOut)
	}
}
