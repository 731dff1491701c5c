package main_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/sources/pack"
)

var (
	wasmGuestsMu sync.Mutex
	wasmGuests   = map[string][]byte{}
)

// wasmGuest is the Go program in testdata/name built for wasip1, once.
func wasmGuest(t *testing.T, name string) []byte {
	t.Helper()
	wasmGuestsMu.Lock()
	defer wasmGuestsMu.Unlock()
	if b, ok := wasmGuests[name]; ok {
		return b
	}
	out := filepath.Join(t.TempDir(), name+".wasm")
	cmd := exec.Command("go", "build", "-o", out, "./testdata/"+name)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the guest %s: %v\n%s", name, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	wasmGuests[name] = b
	return b
}

// marker is a value found nowhere but where the test put it.
func marker(t *testing.T, what string) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "SECRET" + what + hex.EncodeToString(b)
}

// rssKiB is the resident memory of a process (VmRSS), 0 when unknown.
func rssKiB(pid int) int {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return n
		}
	}
	return 0
}

// mineJob submits a mine job and waits for its end.
func mineJob(t *testing.T, d *daemon, body map[string]any, within time.Duration) map[string]any {
	t.Helper()
	r := d.do("POST", "/api/jobs", body)
	if r.status != 202 {
		t.Fatalf("mine %v: %d %s", body, r.status, r.raw)
	}
	return waitJob(t, d, get[string](r.body, "id"), within, finished)
}

// The hostile package's manifest: its misdeed chosen by the option do;
// it may read its locator and the variable HOSTILE_GRANTED and run git,
// nothing else.
const hostileManifest = `contract = 1
name = "hostile"
version = "1.0.0"
description = "tries what a source must not"
module = "hostile.wasm"
[source]
options = ["do", "at", "path", "name", "program", "args", "url"]
[permissions]
read = ["locator"]
env = ["HOSTILE_GRANTED"]
programs = ["git"]
`

// installHostile installs testdata/hostileguest as the package hostile,
// enabled, with consent to its permissions.
func installHostile(t *testing.T, d *daemon) {
	t.Helper()
	m, err := pack.ParseManifest([]byte(hostileManifest))
	if err != nil {
		t.Fatal(err)
	}
	p := &pack.Package{Manifest: m, ManifestBytes: []byte(hostileManifest), Module: wasmGuest(t, "hostileguest")}
	var arc bytes.Buffer
	if err := p.WriteArchive(&arc); err != nil {
		t.Fatal(err)
	}
	if r := install(d, arc.Bytes(), "?enable=true&consent="+pack.ConsentDigest("hostile", m.Permissions)); r.status != 201 {
		t.Fatalf("install hostile: %d %s", r.status, r.raw)
	}
}

// A package that tries, one mine job at a time, every misdeed the
// sandbox forbids (a file outside its directories, an unlisted variable,
// an unlisted program, a shell, the network, memory past its ceiling,
// an endless loop, 20 MiB of output), in its discover call and again in
// the read call of one document. At discover the job fails with an error
// naming the source and the kind; at read that document fails and the
// job completes with a note saying the same. The daemon stays healthy (it answers,
// files and finds, its memory did not grow by the output), and nothing
// the misdeed could have reached is anywhere: not in the job, the
// palace, or the daemon's log.
func TestSourceRunHostileGuests(t *testing.T) {
	// Not parallel: the guests' calls have a 1 s limit the misdeeds must not reach first.
	home, palace := newPalace(t)
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte("[mining]\nsource_timeout_secs = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileSecret, envSecret, netSecret, runSecret := marker(t, "FILE"), marker(t, "ENV"), marker(t, "NET"), marker(t, "RUN")
	secretFile := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secretFile, []byte("the hidden word is "+fileSecret+" and "+runSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	var fetched atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		fmt.Fprint(w, netSecret)
	}))
	defer srv.Close()
	d := start(t, home, palace, "LOCI_CONFIG="+cfg, "HOSTILE_SECRET="+envSecret, "HOSTILE_GRANTED=granted-value")

	installHostile(t, d)
	locator := t.TempDir()
	mine := func(opts map[string]string) map[string]any {
		t.Helper()
		return mineJob(t, d, map[string]any{"type": "mine", "source": "hostile", "locator": locator, "wing": "hostile", "options": opts}, time.Minute)
	}

	// The guest works when it behaves: one note filed. This is the first
	// call of a module that takes the daemon about as long to compile as
	// the 1 s limit: the compilation is the daemon's time, not the source's.
	if j := mine(nil); j["status"] != "completed" || get[float64](j, "result", "ingested") != 1 {
		t.Fatalf("the harmless mine: %v", j)
	}
	searchable(t, d, 20*time.Second, "the harmless note", "copper kettles", "copper kettles")
	drawers := func() float64 {
		return get[float64](d.do("GET", "/api/status", nil).body, "counts", "drawers")
	}
	want := drawers()
	if want < 1 {
		t.Fatalf("no drawer after the harmless mine: %s", counts(d))
	}

	cases := []struct {
		name string
		opts map[string]string
		// words the job's error holds beside the source's name: the kind
		// (a job's error is its message; the code is not kept).
		words []string
	}{
		{"a file outside its directories", map[string]string{"do": "readfile", "path": secretFile},
			[]string{"could not read " + secretFile + ": open " + secretFile + ": Bad file number"}},
		{"a variable not listed", map[string]string{"do": "env", "name": "HOSTILE_SECRET"},
			[]string{"HOSTILE_SECRET is not set; the environment holds: HOSTILE_GRANTED=[$HOSTILE_GRANTED]"}},
		{"a program not listed", map[string]string{"do": "run", "program": "cat", "args": secretFile},
			[]string{"asked to run cat, which its permissions do not grant"}},
		{"a shell", map[string]string{"do": "run", "program": "sh", "args": "-c,cat " + secretFile},
			[]string{"asked to run sh, which its permissions do not grant"}},
		{"a shell by its path", map[string]string{"do": "run", "program": "/bin/sh", "args": "-c,cat " + secretFile},
			[]string{"asked to run /bin/sh, which its permissions do not grant"}},
		{"the network", map[string]string{"do": "fetch", "url": srv.URL + "/secret"},
			[]string{"asked to fetch from", "no network"}},
		{"memory past its ceiling", map[string]string{"do": "alloc"},
			[]string{"ran out of memory (its ceiling is 64 MiB)"}},
		{"an endless loop", map[string]string{"do": "loop"},
			[]string{"call ran past its time limit of 1s and was stopped"}},
		{"20 MiB of output", map[string]string{"do": "flood"},
			[]string{"answered more than 16 MiB"}},
	}
	pid := d.cmd.Process.Pid
	checks := 0
	for _, phase := range []string{"discover", "read"} {
		for _, c := range cases {
			name := c.name + " at " + phase
			opts := map[string]string{"at": phase}
			for k, v := range c.opts {
				opts[k] = v
			}
			rss0 := rssKiB(pid)
			t0 := time.Now()
			// full: the harmless mine's cursor would make discovery start past it.
			j := mineJob(t, d, map[string]any{"type": "mine", "source": "hostile", "locator": locator, "wing": "hostile", "full": true, "options": opts}, time.Minute)
			took := time.Since(t0)
			var msg string
			if phase == "discover" {
				// The job fails, naming the source.
				msg = get[string](j, "error")
				if j["status"] != "failed" || !strings.HasPrefix(msg, "the source hostile") {
					t.Fatalf("%s: want a failed job naming the source: %v", name, j)
				}
			} else {
				// The document fails; the job completes, the harmless note
				// as it was, and its note names the source and the failure.
				msg = get[string](j, "result", "note")
				if j["status"] != "completed" || get[float64](j, "result", "discovered") != 2 || get[float64](j, "result", "unchanged") != 1 ||
					get[float64](j, "result", "skipped") != 1 || get[float64](j, "result", "ingested") != 0 ||
					!strings.Contains(msg, "1 documents could not be read, the source failing on them (the first, misdeed: the source hostile") {
					t.Fatalf("%s: want a completed job with the document failed: %v", name, j)
				}
			}
			t.Logf("%s (%s): %s", name, took.Round(time.Millisecond), msg)
			for _, w := range c.words {
				if !strings.Contains(msg, w) {
					t.Fatalf("%s: the error does not say %q: %s", name, w, msg)
				}
			}
			if len(msg) > 4096 {
				t.Fatalf("%s: an error of %d bytes", name, len(msg))
			}
			if c.opts["do"] == "loop" && took > 15*time.Second {
				t.Fatalf("an endless loop held the job %s with a 1 s limit", took)
			}

			// The daemon stays healthy: it answers, files and finds.
			if h := d.do("GET", "/api/health", nil); h.status != 200 {
				t.Fatalf("%s: health: %d %s", name, h.status, h.raw)
			}
			checks++
			word := fmt.Sprintf("healthcheck%03dz", checks)
			if w := d.do("POST", "/api/wings/notes/rooms/health/drawers", map[string]any{"content": "the daemon still files " + word}); w.status != 201 {
				t.Fatalf("%s: a write after: %d %s", name, w.status, w.raw)
			}
			want++
			searchable(t, d, 20*time.Second, name+": the write after found", word, word)
			if got := drawers(); got != want {
				t.Fatalf("%s: %v drawers, want %v: the misdeed filed something", name, got, want)
			}
			// The output past the cap was never held: the daemon's memory grew
			// by less than the 20 MiB printed. (A guest's linear memory is the
			// daemon's while it runs, up to its ceiling: alloc is not measured.)
			if rss := rssKiB(pid); c.opts["do"] == "flood" && rss0 > 0 && rss-rss0 >= 20<<10 {
				t.Fatalf("%s: the daemon's memory grew from %d to %d KiB", name, rss0, rss)
			} else {
				t.Logf("%s: rss %d -> %d KiB", name, rss0, rss)
			}
		}
	}
	if n := fetched.Load(); n != 0 {
		t.Fatalf("the guest reached the network %d times", n)
	}

	// Nothing of any misdeed anywhere.
	jobs := d.do("GET", "/api/jobs?limit=100", nil)
	for _, s := range []string{fileSecret, envSecret, netSecret, runSecret} {
		if strings.Contains(jobs.raw, s) {
			t.Fatalf("a secret in the jobs: %s", jobs.raw)
		}
		for _, q := range []string{s, "the hidden word is", "the variable said", "the host gave", "the file said"} {
			// The hits only: the answer repeats the query.
			r := d.do("POST", "/api/search", map[string]any{"query": q})
			if hits := fmt.Sprint(r.body["hits"]); r.status != 200 || strings.Contains(hits, s) || strings.Contains(hits, "stolen") {
				t.Fatalf("search %q finds the misdeed: %s", q, r.raw)
			}
		}
		if strings.Contains(d.log.String(), s) {
			t.Fatalf("a secret in the daemon's log:\n%s", d.log.String())
		}
	}
	if strings.Contains(d.log.String(), strings.Repeat("x", 1024)) {
		t.Fatalf("the flood reached the daemon's log")
	}
	list := d.do("GET", "/api/wings/hostile/rooms", nil)
	if strings.Contains(list.raw, "stolen") || strings.Contains(list.raw, "flood") || strings.Contains(list.raw, "allocated") {
		t.Fatalf("a misdeed's room: %s", list.raw)
	}
}

// listRoom is every current drawer of a room as the list answers them,
// page by page.
func listRoom(t *testing.T, d *daemon, wing, room string) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := ""
	for {
		path := "/api/wings/" + wing + "/rooms/" + room + "/drawers?limit=200"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := d.do("GET", path, nil)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", path, r.status, r.raw)
		}
		for _, x := range get[[]any](r.body, "drawers") {
			out = append(out, x.(map[string]any))
		}
		if cursor = get[string](r.body, "next_cursor"); cursor == "" {
			return out
		}
	}
}

// A WebAssembly mine killed with SIGKILL half-way resumes after the
// restart and ends exactly: every file of the tree is one drawer (none
// missing, none twice), the job's counts are the tree's, and a mine
// after it finds nothing new.
func TestSourceRunKill9DuringWasmMine(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	const files = 2000
	root := t.TempDir()
	want := map[string]bool{}
	for i := range files {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i%30))
		if i < 30 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		p := filepath.Join(dir, fmt.Sprintf("note%04d.txt", i))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("note %d of the tree: the word is tok%dx\n", i, i)), 0o644); err != nil {
			t.Fatal(err)
		}
		want[p] = true
	}
	slow := "LOCI_TEST_MINE_DELAY=1ms" // a batch of 64 takes 64 ms at least
	t0 := time.Now()
	d := start(t, home, palace, slow)
	if out, errOut, code := d.cli("", "source", "list"); code != 0 || !strings.Contains(out, "directory-wasm") {
		t.Fatalf("loci source list: %d %s %s", code, out, errOut)
	}
	job := map[string]any{"type": "mine", "source": "directory-wasm", "locator": root, "wing": "tree"}
	r := d.do("POST", "/api/jobs", job)
	if r.status != 202 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	id := get[string](r.body, "id")
	at := waitJob(t, d, id, time.Minute, func(j map[string]any) bool {
		return get[float64](j, "progress", "current") >= 128 || finished(j)
	})
	if finished(at) || get[float64](at, "progress", "current") >= files {
		t.Fatalf("the mine ended before the kill: %v", at)
	}
	t.Logf("%s: killed at %v", time.Since(t0), at["progress"])
	d.cmd.Process.Kill() // SIGKILL
	<-d.exited
	d = start(t, home, palace, slow)
	t.Logf("%s: restarted", time.Since(t0))
	j := waitJob(t, d, id, 2*time.Minute, finished)
	t.Logf("%s: finished", time.Since(t0))
	if j["status"] != "completed" || get[float64](j, "result", "documents") != files || get[float64](j, "result", "ingested") != files ||
		get[float64](j, "recovery_attempts") != 1 {
		t.Fatalf("the mine after kill -9: %v", j)
	}
	seen := map[string]int{}
	for _, dr := range listRoom(t, d, "tree", "files") {
		uri := get[string](dr, "source", "uri")
		if seen[uri]++; seen[uri] > 1 {
			t.Fatalf("%s filed twice after kill -9", uri)
		}
		if !want[uri] {
			t.Fatalf("a drawer of no file: %v", dr)
		}
	}
	if len(seen) != files {
		t.Fatalf("%d of %d files filed after kill -9", len(seen), files)
	}
	if n := get[float64](d.do("GET", "/api/status", nil).body, "counts", "drawers"); n != files {
		t.Fatalf("%v drawers in the palace, want %d", n, files)
	}
	again := mineJob(t, d, job, time.Minute)
	if again["status"] != "completed" || get[float64](again, "result", "ingested") != 0 || get[string](again, "result", "outcome") != "up_to_date" {
		t.Fatalf("a mine after the resumed one: %v", again)
	}
}

// gitRepo is a repository of n commits made with git fast-import, the
// one at leaseAt explaining a lease timeout change; git runs it in dir.
func gitRepo(t *testing.T, n, leaseAt int) (dir string, git func(args ...string) string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "repo")
	git = func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	subjects := []string{"Refactor the store's batch writer", "Fix a typo in the README", "Raise the HTTP client timeout for slow mirrors",
		"Renew leases in batches of one hundred", "Add tests for the search ranking", "Speed up the tokenizer", "Update dependencies",
		"Log the job id with every error", "Tidy the dashboard's mining view", "Document the backup format"}
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		msg := fmt.Sprintf("%s (step %d)\n\nA routine change to file%03d.\n", subjects[i%len(subjects)], i, i%50)
		if i == leaseAt {
			msg = "Lengthen the job lease timeout from 30s to 90s\n\nWorkers on busy machines lost their leases mid-job: the 30 second " +
				"lease timeout expired before the next heartbeat, so another worker took the job and it ran twice. Ninety seconds " +
				"leaves room for three missed heartbeats.\n"
		}
		content := fmt.Sprintf("version %d\n", i)
		fmt.Fprintf(&b, "commit refs/heads/main\nmark :%d\nauthor Dev <dev@example.com> %d +0000\ncommitter Dev <dev@example.com> %d +0000\n",
			i, 1700000000+i*60, 1700000000+i*60)
		fmt.Fprintf(&b, "data %d\n%s", len(msg), msg)
		if i > 1 {
			fmt.Fprintf(&b, "from :%d\n", i-1)
		}
		fmt.Fprintf(&b, "M 644 inline file%03d.txt\ndata %d\n%s\n", i%50, len(content), content)
	}
	cmd := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	cmd.Stdin = &b
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fast-import: %v\n%s", err, out)
	}
	git("reset", "-q", "--hard", "main")
	return dir, git
}

// The bundled git-history source end to end: a repository of a few
// hundred commits mined with loci mine --source; the commit that explains
// the lease timeout change is in the top three of a search asking why;
// three new commits mined again are exactly three new documents; a
// fourth mine files nothing.
func TestSourceRunGitHistory(t *testing.T) {
	t.Parallel()
	const commits = 300
	repo, git := gitRepo(t, commits, 137)
	lease := strings.TrimSpace(git("log", "--format=%H", "--grep", "lease timeout"))
	if len(lease) != 40 {
		t.Fatalf("the lease commit: %q", lease)
	}
	home, palace := newPalace(t)
	d := start(t, home, palace)
	out, errOut, code := d.cli("", "mine", "--source", "git-history", repo, "--wing", "code")
	if code != 0 {
		t.Fatalf("loci mine --source git-history: %d %s %s", code, out, errOut)
	}
	if !strings.Contains(out, "status:    completed") || !strings.Contains(out, "mined 300 of 300 documents found: 300 changed the palace") {
		t.Fatalf("loci mine does not say it filed %d commits: %s", commits, out)
	}
	if n := get[float64](d.do("GET", "/api/status", nil).body, "counts", "drawers"); n != commits {
		t.Fatalf("%v drawers for %d commits", n, commits)
	}

	// The commit that explains the change answers why.
	eventually(t, 20*time.Second, "the lease commit in the top 3", func() bool {
		r := d.do("POST", "/api/search", map[string]any{"query": "why did we change the lease timeout?", "limit": 3})
		return r.status == 200 && strings.Contains(fmt.Sprint(r.body["hits"]), lease[:12])
	})

	// Three new commits: exactly three new documents.
	for i := range 3 {
		os.WriteFile(filepath.Join(repo, "new.txt"), []byte(fmt.Sprintf("new %d\n", i)), 0o644)
		git("add", "new.txt")
		git("commit", "-q", "-m", fmt.Sprintf("Add the new file, revision %d", i))
	}
	job := map[string]any{"type": "mine", "source": "git-history", "locator": repo, "wing": "code"}
	j := mineJob(t, d, job, time.Minute)
	if j["status"] != "completed" || get[string](j, "result", "mode") != "incremental" || get[float64](j, "result", "discovered") != 3 ||
		get[float64](j, "result", "ingested") != 3 || get[float64](j, "result", "created") != 3 {
		t.Fatalf("the mine after three commits: %v", j)
	}
	if n := get[float64](d.do("GET", "/api/status", nil).body, "counts", "drawers"); n != commits+3 {
		t.Fatalf("%v drawers for %d commits", n, commits+3)
	}
	j = mineJob(t, d, job, time.Minute)
	if j["status"] != "completed" || get[float64](j, "result", "discovered") != 0 || get[float64](j, "result", "ingested") != 0 ||
		get[string](j, "result", "outcome") != "up_to_date" {
		t.Fatalf("a mine with nothing new: %v", j)
	}
}

// An agent mines with an installed source through MCP (loci_mine with
// source): the job files its documents and loci_search finds them; a
// misdeed asked through the same tool fails as it does for a user
// (the agent gains nothing), and a disabled source cannot be mined. That
// no tool installs or changes a source is TestNoMCPToolTouchesSourcePackages.
func TestSourceRunMCPMine(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	installHostile(t, d)
	dir := t.TempDir()

	s := mcpSession(t, d)
	jobOf := func(out map[string]any) map[string]any {
		t.Helper()
		id := get[string](out, "id")
		if id == "" {
			id = get[string](out, "job", "id")
		}
		if id == "" {
			t.Fatalf("loci_mine answered no job: %v", out)
		}
		return waitJob(t, d, id, time.Minute, finished)
	}
	// Without a misdeed the package files one harmless note.
	out, isErr := callTool(t, s, "loci_mine", map[string]any{"source": "hostile", "locator": dir, "wing": "agent"})
	if isErr {
		t.Fatalf("loci_mine with an installed source: %v", out)
	}
	if j := jobOf(out); j["status"] != "completed" || get[float64](j, "result", "ingested") != 1 || get[string](j, "requested_by") != "mcp" {
		t.Fatalf("the agent's mine: %v", j)
	}
	eventually(t, 20*time.Second, "the agent's mine searchable through MCP", func() bool {
		res, isErr := callTool(t, s, "loci_search", map[string]any{"query": "copper kettles"})
		return !isErr && strings.Contains(fmt.Sprint(res["hits"]), "a harmless note about copper kettles")
	})

	// A misdeed through the agent's tool: refused the same way.
	out, isErr = callTool(t, s, "loci_mine", map[string]any{"source": "hostile", "locator": dir, "wing": "agent", "full": true,
		"options": map[string]any{"do": "run", "program": "sh", "args": "-c,id"}})
	if isErr {
		t.Fatalf("loci_mine of the hostile source: %v", out)
	}
	if j := jobOf(out); j["status"] != "failed" || get[string](j, "error") != "the source hostile asked to run sh, which its permissions do not grant" {
		t.Fatalf("the agent's hostile mine: %v", j)
	}

	// Disabled by the user: the agent cannot mine it.
	if r := d.do("POST", "/api/source-packages/hostile/disable", nil); r.status != 200 {
		t.Fatalf("disable: %d %s", r.status, r.raw)
	}
	wantError(t, s, "loci_mine", map[string]any{"source": "hostile", "locator": dir, "wing": "agent"}, "loci::source::not_enabled", "")
}
