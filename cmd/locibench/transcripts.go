package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/loci-dev/loci/sources"
)

// claudeFixtures is where the real Claude Code session files are (the
// bench runs from the repository's root, as make bench does).
const claudeFixtures = "sources/testdata/transcripts/claude-code/projects"

// transcriptsBench measures the claude-code transcript source against a
// real daemon with the default configuration (issue 27):
//   - a miner of files Claude Code session files (about totalMB MB in all,
//     made from the real fixture sessions by claudeCorpus) run once: MB/s
//     of session file read, the daemon's peak resident set (sampled from
//     /proc every 50 ms during the mine and until every drawer is
//     embedded, and the kernel's VmHWM) — targets >= 20 MB/s, < 500 MB;
//   - then a watch trigger on the session directory (debounce 250 ms) and
//     rounds of one turn (a user record and an assistant record, as Claude
//     Code writes them) appended to one of the sessions: the time from the
//     trigger firing (its job's creation) and from the write to the new
//     turn being found by search — target 1 s from the firing.
//
// With LOCI_PPROF set (a loopback host:port) and LOCIBENCH_CPU set to a
// file, a CPU profile of the daemon from the mine's start
// (LOCIBENCH_CPU_SECONDS long, default 20) is saved there.
func transcriptsBench(bin, dir string, files, totalMB, rounds int) error {
	root := filepath.Join(dir, "claude", "projects")
	t0 := time.Now()
	corpus, err := claudeCorpus(root, files, int64(totalMB)*1e6, 27)
	if err != nil {
		return err
	}
	fmt.Printf("transcripts: %d session files, %.1f MB (%d sub-agent files), made in %s; parsed: %d turns, %.1f MB of turn text (%.1f %% of the bytes), %.1f MB of tool results\n",
		len(corpus.paths), float64(corpus.bytes)/1e6, corpus.subagents, time.Since(t0).Round(time.Millisecond),
		corpus.turns, float64(corpus.textBytes)/1e6, 100*float64(corpus.textBytes)/float64(corpus.bytes), float64(corpus.resultBytes)/1e6)

	d, err := startConfigured(bin, filepath.Join(dir, "p"), filepath.Join(dir, "config.toml"), fmt.Sprintf(`
[miners.cc]
source = "claude-code"
locator = %q
wing = "sessions"
enabled = true
`, root))
	if err != nil {
		return err
	}
	defer d.stop()
	pid := d.cmd.Process.Pid
	fmt.Printf("transcripts: daemon started, %v\n", residentSplit(pid))

	var peak atomic.Int64
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Add(1)
	go func() {
		defer sampling.Done()
		for {
			if kb := residentSplit(pid).total; kb > peak.Load() {
				peak.Store(kb)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	stopProfile := cpuProfile()
	cpu0, _ := procCPU(pid)
	t1 := time.Now()
	job, err := postJSON(d.addr, "/api/miners/cc/run", map[string]any{})
	if err != nil {
		return err
	}
	res, err := waitMine(d.addr, job)
	if err != nil {
		return err
	}
	mined := time.Since(t1)
	cpu1, _ := procCPU(pid)
	if err := stopProfile(); err != nil {
		return err
	}
	peakMine, hwmMine := peak.Load(), peakKB(pid)
	for embedded(d.addr, "static") < stored(d.addr) {
		if time.Since(t1) > 20*time.Minute {
			return fmt.Errorf("drawers not embedded after 20 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	all := time.Since(t1)
	close(stopSampling)
	sampling.Wait()
	fmt.Printf("transcripts: mining %d Claude Code session files, %.1f MB: %s, %.1f MB/s (target >= 20 MB/s; %d drawers, %d unknown records; daemon CPU %s, %.2f cores); peak resident set during the mine %d MB sampled, %d MB VmHWM (target < 500 MB)\n",
		res.Documents, float64(res.Bytes)/1e6, mined.Round(time.Millisecond), float64(res.Bytes)/1e6/mined.Seconds(), res.Created, res.Unknown,
		(cpu1 - cpu0).Round(time.Millisecond), (cpu1-cpu0).Seconds()/mined.Seconds(), peakMine/1024, hwmMine/1024)
	fmt.Printf("transcripts: every drawer embedded %s after the start (%s after the job); peak resident set until then %d MB sampled, %d MB VmHWM; now %v\n",
		all.Round(time.Millisecond), (all - mined).Round(time.Millisecond), peak.Load()/1024, peakKB(pid)/1024, residentSplit(pid))

	return sessionGrowth(d, root, corpus, rounds)
}

// sessionGrowth puts a watch trigger on the session directory and appends
// one turn to a session per round, timing each from the write and from the
// trigger's firing to a search finding it.
func sessionGrowth(d *daemon, root string, corpus *claudeSessions, rounds int) error {
	const debounce = "250ms"
	if _, err := putJSON(d.addr, "/api/triggers/cc-watch", map[string]any{"miner": "cc", "type": "watch", "enabled": true,
		"settings": map[string]any{"path": root, "debounce": debounce}}); err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		var tr struct {
			Running bool   `json:"running"`
			Status  string `json:"status"`
		}
		if err := getJSON(d.addr, "/api/triggers/cc-watch", &tr); err == nil && tr.Running && tr.Status == "active" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the watch trigger is not running after 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // the watch is set up on every directory
	r := rand.New(rand.NewPCG(27, 1))
	var fromFire, fromWrite, mineTook []time.Duration
	lastJob := ""
	for round := range rounds {
		token := fmt.Sprintf("kestrelgrew%dx%d", round, r.IntN(1e6))
		var path string
		var lines []byte
		for tries := 0; lines == nil; tries++ {
			var err error
			path = corpus.paths[r.IntN(len(corpus.paths))]
			if lines, err = appendTurn(path, token, r); err != nil && tries > 50 {
				return err
			}
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		written := time.Now()
		_, err = f.Write(lines)
		f.Close()
		if err != nil {
			return err
		}
		for deadline := written.Add(60 * time.Second); !foundText(d.addr, token, "code word "+token); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				return fmt.Errorf("round %d: the turn appended to %s not searchable after 60 s", round, path)
			}
		}
		at := time.Now()
		// The run the write asked for: the trigger's last job, created
		// after the write (its state is written just after the job is
		// queued, so it may show a moment after the turn is found).
		var job string
		var j struct {
			CreatedAt  time.Time  `json:"created_at"`
			StartedAt  *time.Time `json:"started_at"`
			FinishedAt *time.Time `json:"finished_at"`
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			var tr struct {
				LastJob string `json:"last_job"`
			}
			if getJSON(d.addr, "/api/triggers/cc-watch", &tr) == nil && tr.LastJob != "" && tr.LastJob != lastJob &&
				getJSON(d.addr, "/api/jobs/"+tr.LastJob, &j) == nil && j.CreatedAt.After(written) {
				job = tr.LastJob
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("round %d: the turn was found but the trigger queued no job after the write", round)
			}
		}
		lastJob = job
		fromFire = append(fromFire, at.Sub(j.CreatedAt))
		fromWrite = append(fromWrite, at.Sub(written))
		// Let the job finish before the next round, so each round is one run.
		for j.FinishedAt == nil && time.Since(at) < 30*time.Second {
			time.Sleep(20 * time.Millisecond)
			getJSON(d.addr, "/api/jobs/"+job, &j)
		}
		if j.StartedAt != nil && j.FinishedAt != nil {
			mineTook = append(mineTook, j.FinishedAt.Sub(*j.StartedAt))
		}
		time.Sleep(300 * time.Millisecond)
	}
	q := func(v []time.Duration, p float64) time.Duration {
		if len(v) == 0 {
			return 0
		}
		s := slices.Clone(v)
		slices.Sort(s)
		return s[min(len(s)-1, int(math.Ceil(p*float64(len(s))))-1)].Round(time.Millisecond)
	}
	fmt.Printf("transcripts: a session grown by one turn, searchable after the watch fired (debounce %s), over %d rounds among %d sessions: p50 %s, p99 %s, max %s (target 1 s); from the write: p50 %s, p99 %s; the mine job itself: p50 %s, p99 %s\n",
		debounce, len(fromFire), len(corpus.paths), q(fromFire, .5), q(fromFire, .99), q(fromFire, 1),
		q(fromWrite, .5), q(fromWrite, .99), q(mineTook, .5), q(mineTook, .99))
	return nil
}

// appendTurn is one more turn for the session at path, as Claude Code
// writes it: a user record (the prompt, holding token) and an assistant
// text record answering it, chained to the file's last record, with the
// session's ids, the CLI's fields and the time now.
func appendTurn(path, token string, r *rand.Rand) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var last, user, assistant []byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		switch gjson.GetBytes(l, "type").String() {
		case "user":
			if c := gjson.GetBytes(l, "message.content"); c.Type == gjson.String && !strings.HasPrefix(c.String(), "<") &&
				!gjson.GetBytes(l, "isMeta").Bool() && !gjson.GetBytes(l, "isCompactSummary").Bool() && !gjson.GetBytes(l, "origin").Exists() {
				user = l
			}
			last = l
		case "assistant":
			if c := gjson.GetBytes(l, "message.content"); c.IsArray() && c.Get("0.type").String() == "text" &&
				!gjson.GetBytes(l, "isApiErrorMessage").Bool() {
				assistant = l
			}
			last = l
		}
	}
	if user == nil || assistant == nil || last == nil {
		return nil, fmt.Errorf("%s: no user prompt and assistant text record to copy", path)
	}
	now := time.Now().UTC()
	parent := gjson.GetBytes(last, "uuid").String()
	u1, u2 := newUUID(r), newUUID(r)
	var err1, err2, err3, err4, err5, err6, err7 error
	user, err1 = setJSON(user, "message.content", "Next question: "+sentence(r)+" Remember the code word "+token+".")
	user, err2 = setJSON(user, "uuid", u1)
	user, err3 = setJSON(user, "parentUuid", parent)
	user, err4 = setJSON(user, "timestamp", now.Format("2006-01-02T15:04:05.000Z"))
	assistant, err5 = setJSON(assistant, "message.content.0.text", "Noted, "+token+": "+sentence(r))
	assistant, err6 = setJSON(assistant, "uuid", u2)
	assistant, err7 = setJSON(assistant, "parentUuid", u1)
	if err := firstErr(err1, err2, err3, err4, err5, err6, err7); err != nil {
		return nil, err
	}
	assistant, err = setJSON(assistant, "timestamp", now.Add(1500*time.Millisecond).Format("2006-01-02T15:04:05.000Z"))
	if err != nil {
		return nil, err
	}
	return slices.Concat(user, []byte("\n"), assistant, []byte("\n")), nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// foundText reports a search for query answers with text (which must not
// be the query: the answer repeats the query).
func foundText(addr, query, text string) bool {
	body, _ := json.Marshal(map[string]any{"query": query, "limit": 3})
	resp, err := client.Post("http://"+addr+"/api/search", "application/json", bytes.NewReader(body))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK && bytes.Contains(b, []byte(text))
}

// postJSON posts body and returns the job id of a 202 answer.
func postJSON(addr, path string, body any) (string, error) {
	return sendJSON("POST", addr, path, body, http.StatusAccepted)
}

// putJSON puts body and wants a 200 or 201.
func putJSON(addr, path string, body any) (string, error) {
	return sendJSON("PUT", addr, path, body, http.StatusCreated, http.StatusOK)
}

func sendJSON(method, addr, path string, body any, want ...int) (string, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, "http://"+addr+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if !slices.Contains(want, resp.StatusCode) {
		return "", fmt.Errorf("%s %s: %d %.300s", method, path, resp.StatusCode, out)
	}
	return gjson.GetBytes(out, "id").String(), nil
}

// transcriptResult is a mine job's result as the bench reads it.
type transcriptResult struct {
	mineResult
	Unknown int `json:"unknown_records"`
}

// waitMine waits for a mine job's result.
func waitMine(addr, id string) (*transcriptResult, error) {
	for {
		var job struct {
			Status string          `json:"status"`
			Error  string          `json:"error"`
			Result json.RawMessage `json:"result"`
		}
		if err := getJSON(addr, "/api/jobs/"+id, &job); err != nil {
			return nil, err
		}
		switch job.Status {
		case "completed":
			var res transcriptResult
			return &res, json.Unmarshal(job.Result, &res)
		case "failed", "cancelled":
			return nil, fmt.Errorf("mine job %s %s: %s", id, job.Status, job.Error)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cpuProfile starts a CPU profile of the daemon (LOCI_PPROF's
// /debug/pprof/profile) of LOCIBENCH_CPU_SECONDS seconds (default 20) into
// LOCIBENCH_CPU's file when LOCI_PPROF and LOCIBENCH_CPU are set; the
// function it returns waits for it to be saved.
func cpuProfile() func() error {
	addr, file := os.Getenv("LOCI_PPROF"), os.Getenv("LOCIBENCH_CPU")
	if addr == "" || file == "" {
		return func() error { return nil }
	}
	secs := os.Getenv("LOCIBENCH_CPU_SECONDS")
	if secs == "" {
		secs = "20"
	}
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/debug/pprof/profile?seconds=" + secs)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(file)
		if err != nil {
			done <- err
			return
		}
		defer f.Close()
		_, err = io.Copy(f, resp.Body)
		done <- err
	}()
	return func() error { return <-done }
}

// claudeSessions is the corpus claudeCorpus made.
type claudeSessions struct {
	paths            []string // the top-level sessions (not the sub-agents')
	bytes, textBytes int64
	resultBytes      int64
	turns, subagents int
}

// claudeTemplate is a fixture session file read into its lines.
type claudeTemplate struct {
	lines     [][]byte
	sessionID string
	start     time.Time
	span      time.Duration
	subagent  bool
}

// runOnce are the records Claude Code writes once per run of the CLI (a
// resumed session writes them again), not per prompt.
var runOnce = map[string]bool{"prompt_snapshot": true, "skill_listing": true, "agent_listing_delta": true,
	"deferred_tools_delta": true, "environment": true, "model": true, "session_context": true,
	"remote_session_change": true, "date": true}

// claudeCorpus writes files Claude Code session files under root, about
// total bytes in all, made from the real fixture sessions (the four
// sessions and the sub-agent's file Claude Code 2.1.328 wrote, every fifth
// file a sub-agent's under its parent session's directory). Each file
// replays its fixture's records, in the CLI's own field order and with
// their own bytes but for what follows, once whole as one run of the CLI
// (the records it writes once per run, prompt snapshots, skill and agent
// listings, the request shape, only at their first place), then pass
// after pass without those (with them every eighth pass: the session
// resumed) until it reaches its size: its first pass plus the rest of the
// budget spread over the files left, drawn exponentially (most sessions
// one run, a few long). Every pass gets new uuids, tool-use and message
// ids, times moved on and the project directory of one of 25 projects;
// the person's prompts, the model's text and thinking are new Markov
// sentences (each ending with a unique number, so no two sessions share
// text), Bash commands and file paths vary, and each tool result (and the
// toolUseResult copy the CLI keeps of it) is new text of a size drawn
// log-uniformly between 150 B and 24 KB. The attachments, request records,
// queue operations and costs come every pass as the CLI wrote them. The
// prompts of one file in 25 carry a GitHub-token-shaped secret (in its
// first pass).
func claudeCorpus(root string, files int, total int64, seed uint64) (*claudeSessions, error) {
	var tpls []*claudeTemplate
	err := filepath.WalkDir(claudeFixtures, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		t := &claudeTemplate{subagent: strings.Contains(p, "/subagents/")}
		var last time.Time
		for _, l := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(l)) == 0 {
				continue
			}
			t.lines = append(t.lines, l)
			if id := gjson.GetBytes(l, "sessionId").String(); id != "" && t.sessionID == "" {
				t.sessionID = id
			}
			if at, err := time.Parse(time.RFC3339Nano, gjson.GetBytes(l, "timestamp").String()); err == nil {
				if t.start.IsZero() || at.Before(t.start) {
					t.start = at
				}
				if at.After(last) {
					last = at
				}
			}
		}
		t.span = last.Sub(t.start) + time.Minute
		tpls = append(tpls, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the Claude Code fixtures (run from the repository's root): %w", err)
	}
	// The sub-agent's file last, after its parent (the last session).
	slices.SortStableFunc(tpls, func(a, b *claudeTemplate) int {
		switch {
		case a.subagent == b.subagent:
			return 0
		case a.subagent:
			return 1
		}
		return -1
	})
	if len(tpls) < 2 || !tpls[len(tpls)-1].subagent {
		return nil, fmt.Errorf("%s: expected the fixture sessions and a sub-agent's file", claudeFixtures)
	}
	r := rand.New(rand.NewPCG(seed, 27))
	c := &claudeSessions{}
	base := time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC)
	var parentDir, parentID string
	for i := range files {
		t := tpls[i%len(tpls)]
		proj := i % 25
		sid := newUUID(r)
		var path string
		if t.subagent {
			sid = parentID
			path = filepath.Join(parentDir, parentID, "subagents", fmt.Sprintf("agent-%016x.jsonl", r.Uint64()))
		} else {
			parentDir = filepath.Join(root, fmt.Sprintf("-home-dev-project-%02d", proj))
			parentID = sid
			path = filepath.Join(parentDir, sid+".jsonl")
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		start := base.Add(time.Duration(i) * 37 * time.Minute)
		var out bytes.Buffer
		target := 0
		for pass := 0; pass == 0 || out.Len() < target; pass++ {
			ids := map[string]string{t.sessionID: sid}
			once := map[string]bool{}
			for _, l := range t.lines {
				kind := gjson.GetBytes(l, "type").String()
				if kind == "attachment" {
					kind = gjson.GetBytes(l, "attachment.type").String()
				}
				if kind == "api-request-shape" || runOnce[kind] {
					if once[kind] || pass%8 != 0 {
						continue
					}
					once[kind] = true
				}
				rec, results, err := claudeRecordFor(l, r, ids, fmt.Sprintf("/home/dev/project-%02d", proj),
					start.Add(time.Duration(pass)*t.span).Sub(t.start), i%25 == 0 && pass == 0)
				if err != nil {
					return nil, err
				}
				c.resultBytes += int64(results)
				out.Write(rec)
				out.WriteByte('\n')
				if pass > 0 && out.Len() >= target {
					break
				}
			}
			if pass == 0 {
				// The rest of the budget spread over the files left, drawn
				// exponentially: most sessions short, a few long.
				left := float64(total-c.bytes)/float64(files-i) - float64(out.Len())
				target = out.Len() + int(max(0, left)*r.ExpFloat64())
			}
		}
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			return nil, err
		}
		s, err := sources.ParseClaudeCode(context.Background(), bytes.NewReader(out.Bytes()))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		c.turns += len(s.Turns)
		for _, tu := range s.Turns {
			c.textBytes += int64(len(tu.Text))
		}
		c.bytes += int64(out.Len())
		if t.subagent {
			c.subagents++
		} else {
			c.paths = append(c.paths, path)
		}
	}
	return c, nil
}

var (
	uuidRe  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	toolIDs = regexp.MustCompile(`\b(toolu|msg|req)_[0-9A-Za-z]{10,}`)
	stampRe = regexp.MustCompile(`"timestamp":"[^"]+"`)
	fixCwd  = regexp.MustCompile(`/tmp/loci-cc-fixture/project-[a-z]+`)
)

// claudeRecordFor is one fixture record replayed: ids mapped through ids
// (new ones made as met), times moved by shift, the fixture's project
// directory replaced by cwd, and the conversation's text new (secret: the
// prompt carries a token-shaped secret). results is the bytes of tool
// result text it made.
func claudeRecordFor(l []byte, r *rand.Rand, ids map[string]string, cwd string, shift time.Duration, secret bool) (out []byte, results int, err error) {
	remap := func(old []byte) []byte {
		n, ok := ids[string(old)]
		if !ok {
			if bytes.Contains(old, []byte("_")) {
				pre, _, _ := bytes.Cut(old, []byte("_"))
				n = string(pre) + "_" + randomID(r, 24)
			} else {
				n = newUUID(r)
			}
			ids[string(old)] = n
		}
		return []byte(n)
	}
	l = uuidRe.ReplaceAllFunc(l, remap)
	l = toolIDs.ReplaceAllFunc(l, remap)
	l = fixCwd.ReplaceAll(l, []byte(cwd))
	l = stampRe.ReplaceAllFunc(l, func(m []byte) []byte {
		at, err := time.Parse(time.RFC3339Nano, string(m[len(`"timestamp":"`):len(m)-1]))
		if err != nil {
			return m
		}
		return []byte(`"timestamp":"` + at.Add(shift).UTC().Format("2006-01-02T15:04:05.000Z") + `"`)
	})
	typ := gjson.GetBytes(l, "type").String()
	if typ != "user" && typ != "assistant" {
		return l, 0, nil
	}
	content := gjson.GetBytes(l, "message.content")
	if content.Type == gjson.String {
		if typ == "user" && !strings.HasPrefix(content.String(), "<") && !gjson.GetBytes(l, "isMeta").Bool() &&
			!gjson.GetBytes(l, "isCompactSummary").Bool() {
			p := paragraph(r, 1, 3)
			if secret {
				p += " The deploy token is ghp_" + randomID(r, 36) + " if you need it."
			}
			l, err = setJSON(l, "message.content", p)
		}
		return l, 0, err
	}
	var output string
	for k, b := range content.Array() {
		at := fmt.Sprintf("message.content.%d.", k)
		switch b.Get("type").String() {
		case "text":
			if typ == "assistant" || !strings.HasPrefix(b.Get("text").String(), "<") {
				l, err = setJSON(l, at+"text", paragraph(r, 1, 6))
			}
		case "thinking":
			l, err = setJSON(l, at+"thinking", paragraph(r, 2, 8))
		case "tool_use":
			switch b.Get("name").String() {
			case "Bash":
				l, err = setJSON(l, at+"input.command", fmt.Sprintf("go test ./pkg%03d/... -run Test%s -count=1", r.IntN(300), randomID(r, 6)))
			case "Read":
				l, err = setJSON(l, at+"input.file_path", fmt.Sprintf("%s/pkg%03d/file%04d.go", cwd, r.IntN(300), r.IntN(5000)))
			}
		case "tool_result":
			output = toolOutput(r)
			results += len(output)
			if b.Get("content").Type == gjson.String {
				l, err = setJSON(l, at+"content", output)
			} else if b.Get("content.0.type").String() == "text" {
				l, err = setJSON(l, at+"content.0.text", output)
			}
		}
		if err != nil {
			return nil, 0, err
		}
	}
	if output != "" {
		for _, p := range []string{"toolUseResult.stdout", "toolUseResult.file.content", "toolUseResult.content"} {
			if v := gjson.GetBytes(l, p); v.Type == gjson.String {
				if l, err = setJSON(l, p, output); err != nil {
					return nil, 0, err
				}
				results += len(output)
			}
		}
	}
	return l, results, nil
}

// setJSON sets the string at path in a JSON object in place, keeping the
// order of its fields.
func setJSON(doc []byte, path, s string) ([]byte, error) {
	v := gjson.GetBytes(doc, path)
	if !v.Exists() || v.Index <= 0 {
		return nil, fmt.Errorf("no %s in a record", path)
	}
	q, _ := json.Marshal(s)
	return slices.Concat(doc[:v.Index], q, doc[v.Index+len(v.Raw):]), nil
}

// paragraph is lo to hi Markov sentences.
func paragraph(r *rand.Rand, lo, hi int) string {
	var b strings.Builder
	for i := range lo + r.IntN(hi-lo+1) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(sentence(r))
	}
	return b.String()
}

// toolOutput is a tool's output of a size drawn log-uniformly between
// 150 B and 24 KB: numbered lines, as the Read tool shows a file.
func toolOutput(r *rand.Rand) string {
	size := int(150 * math.Exp(r.Float64()*math.Log(24576.0/150)))
	var b strings.Builder
	w := bufio.NewWriter(&b)
	for n := 1; b.Len()+w.Buffered() < size; n++ {
		fmt.Fprintf(w, "%6d\t%s\n", n, sentence(r))
	}
	w.Flush()
	return b.String()
}

func newUUID(r *rand.Rand) string {
	a, b := r.Uint64(), r.Uint64()
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xfff, 0x8000|(b>>48)&0x3fff, b&0xffffffffffff)
}

func randomID(r *rand.Rand, n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}
