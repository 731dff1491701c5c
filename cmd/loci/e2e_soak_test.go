package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The kill -9 soak (issue 11): trials of mixed load against the real
// binary (concurrent named drawer writes, supersedes, deletes, checkpoint
// jobs), each ended by SIGKILL. After every restart the palace must hold
// every acknowledged write exactly once, every unacknowledged one wholly or
// not at all, and the lexical and vector indexes must equal the store.
// LOCI_SOAK_TRIALS sets the number of trials (make test: 5, make soak:
// 100); LOCI_SOAK_SEED replays a run.

// soakModel is what the clients know: acknowledged writes, and the
// operations in flight when the daemon died (intents), resolved by reading
// the store after the restart.
type soakModel struct {
	mu sync.Mutex
	// drawers by id: content, and whether it was superseded or deleted.
	drawers map[string]*soakDrawer
	// creates in flight: name -> content.
	createIntents map[string]string
	// supersedes in flight: old id -> new content; deletes in flight: ids.
	supersedeIntents map[string]string
	deleteIntents    map[string]bool
	// checkpoint jobs: acknowledged ids, and prefixes of submissions in
	// flight.
	jobs       map[string]int
	jobIntents map[string]int
	// doneJobs are jobs verified complete; cpItems counts their items.
	doneJobs map[string]bool
	cpItems  int
	// live lists the current, never superseded drawers a supersede or
	// delete may pick.
	live []string
}

type soakDrawer struct {
	content    string
	superseded bool
	deleted    bool
	checked    bool // read back since its last change
}

func newSoakModel() *soakModel {
	return &soakModel{drawers: map[string]*soakDrawer{}, createIntents: map[string]string{}, supersedeIntents: map[string]string{},
		deleteIntents: map[string]bool{}, jobs: map[string]int{}, jobIntents: map[string]int{}, doneJobs: map[string]bool{}}
}

// take removes and returns a random live drawer id, or "".
func (m *soakModel) take(r *rand.Rand) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.live) == 0 {
		return ""
	}
	i := r.IntN(len(m.live))
	id := m.live[i]
	m.live[i] = m.live[len(m.live)-1]
	m.live = m.live[:len(m.live)-1]
	return id
}

func TestSoakKill9(t *testing.T) {
	// Not parallel: a soak: timed phases under load.
	trials := 5
	if v := os.Getenv("LOCI_SOAK_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("LOCI_SOAK_TRIALS=%q: a positive number is required", v)
		}
		trials = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("LOCI_SOAK_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("soak: %d trials, LOCI_SOAK_SEED=%d", trials, seed)
	rng := rand.New(rand.NewPCG(seed, 11))

	home, palace := newPalace(t)
	cfg := filepath.Join(home, "loci.toml")
	if err := os.WriteFile(cfg, []byte("[embedding]\ndefault = \"test\"\nsave_secs = 1\n[embedding.profiles.test]\nprovider = \"hash\"\ndimension = 32\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := newSoakModel()
	acked := 0
	began := time.Now()
	for trial := range trials {
		d := start(t, home, palace, "LOCI_CONFIG="+cfg)
		if trial > 0 {
			soakVerify(t, d, m, rng)
		}
		acked += soakLoad(t, d, m, trial, rand.New(rand.NewPCG(rng.Uint64(), uint64(trial))), time.Duration(300+rng.IntN(900))*time.Millisecond)
		if (trial+1)%10 == 0 {
			t.Logf("soak: %d trials, %d acknowledged operations (%s)", trial+1, acked, time.Since(began).Round(time.Second))
		}
	}
	d := start(t, home, palace, "LOCI_CONFIG="+cfg)
	soakVerify(t, d, m, rng)
	if acked < 20*trials {
		t.Fatalf("only %d acknowledged operations in %d trials: the load did not run", acked, trials)
	}
	t.Logf("soak: %d trials, %d acknowledged operations, %d drawers stored, every check held (%s)",
		trials, acked, len(m.drawers), time.Since(began).Round(time.Second))
}

// soakLoad runs the mixed load for dur and returns the acknowledged
// operations. The daemon is killed right after; requests in flight then
// are intents.
func soakLoad(t *testing.T, d *daemon, m *soakModel, trial int, r *rand.Rand, dur time.Duration) int {
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(method, path string, body any) (int, []byte, error) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, "http://"+d.addr+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		return resp.StatusCode, raw, err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		count int
		stop  = make(chan struct{})
		seeds = [6]uint64{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}
	)
	ack := func() { mu.Lock(); count++; mu.Unlock() }
	worker := func(w int, op func(r *rand.Rand, i int) bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seeds[w], 3))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if !op(r, i) {
					return
				}
			}
		}()
	}
	for w := range 3 {
		worker(w, func(r *rand.Rand, i int) bool {
			name := fmt.Sprintf("t%d/w%d/d%d", trial, w, i)
			content := fmt.Sprintf("%s soaktok%dx%dx%d %s", sentence("soak", r.IntN(1<<30)), trial, w, i, sentence("more", r.IntN(1<<30)))
			m.mu.Lock()
			m.createIntents[name] = content
			m.mu.Unlock()
			st, raw, err := post("POST", "/api/wings/soak/rooms/load/drawers", map[string]any{"name": name, "content": content})
			if err != nil {
				return false // the daemon is gone: an intent
			}
			var out struct{ Drawer struct{ ID string } }
			if st != 201 || json.Unmarshal(raw, &out) != nil {
				t.Errorf("create %s: %d %s", name, st, raw)
				return false
			}
			m.mu.Lock()
			delete(m.createIntents, name)
			m.drawers[out.Drawer.ID] = &soakDrawer{content: content}
			m.live = append(m.live, out.Drawer.ID)
			m.mu.Unlock()
			ack()
			return true
		})
	}
	worker(3, func(r *rand.Rand, i int) bool {
		id := m.take(r)
		if id == "" {
			time.Sleep(5 * time.Millisecond)
			return true
		}
		content := fmt.Sprintf("replacement soaktok%dx9x%d %s", trial, i, sentence("again", r.IntN(1<<30)))
		m.mu.Lock()
		m.supersedeIntents[id] = content
		m.mu.Unlock()
		st, raw, err := post("POST", "/api/drawers/"+id+"/supersede", map[string]any{"content": content})
		if err != nil {
			return false
		}
		var out struct{ Replacement struct{ ID string } }
		if st != 200 || json.Unmarshal(raw, &out) != nil {
			t.Errorf("supersede %s: %d %s", id, st, raw)
			return false
		}
		m.mu.Lock()
		delete(m.supersedeIntents, id)
		m.drawers[id].superseded, m.drawers[id].checked = true, false
		m.drawers[out.Replacement.ID] = &soakDrawer{content: content}
		m.mu.Unlock()
		ack()
		return true
	})
	worker(4, func(r *rand.Rand, i int) bool {
		time.Sleep(time.Duration(r.IntN(20)) * time.Millisecond)
		id := m.take(r)
		if id == "" {
			return true
		}
		m.mu.Lock()
		m.deleteIntents[id] = true
		m.mu.Unlock()
		st, raw, err := post("DELETE", "/api/wings/soak/rooms/load/drawers/"+id, nil)
		if err != nil {
			return false
		}
		if st != 200 {
			t.Errorf("delete %s: %d %s", id, st, raw)
			return false
		}
		m.mu.Lock()
		delete(m.deleteIntents, id)
		m.drawers[id].deleted, m.drawers[id].checked = true, false
		m.mu.Unlock()
		ack()
		return true
	})
	worker(5, func(r *rand.Rand, i int) bool {
		prefix := fmt.Sprintf("cp%dx%d", trial, i)
		n := 20 + r.IntN(300)
		m.mu.Lock()
		m.jobIntents[prefix] = n
		m.mu.Unlock()
		st, raw, err := post("POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": items(prefix, n, 0)})
		if err != nil {
			return false
		}
		var out struct{ ID string }
		if st != 202 || json.Unmarshal(raw, &out) != nil {
			t.Errorf("checkpoint: %d %s", st, raw)
			return false
		}
		m.mu.Lock()
		delete(m.jobIntents, prefix)
		m.jobs[out.ID] = n
		m.mu.Unlock()
		ack()
		time.Sleep(time.Duration(100+r.IntN(400)) * time.Millisecond)
		return true
	})
	time.Sleep(dur)
	// SIGKILL while the load runs: requests in flight stay intents.
	d.cmd.Process.Kill()
	<-d.exited
	close(stop)
	wg.Wait()
	return count
}

// soakVerify checks the restarted palace against the model, resolving
// the intents of the killed trial, once the jobs have finished and the
// indexes caught up.
func soakVerify(t *testing.T, d *daemon, m *soakModel, r *rand.Rand) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	drawer := func(id string) response { return d.do("GET", "/api/wings/soak/rooms/load/drawers/"+id, nil) }

	// Creates in flight: wholly there (readable, its content) or absent.
	for name, content := range m.createIntents {
		got := d.do("GET", "/api/wings/soak/rooms/load/drawers/"+escPath(name), nil)
		switch {
		case got.status == 404:
		case got.status == 200 && got.body["content"] == content:
			id := got.body["id"].(string)
			m.drawers[id] = &soakDrawer{content: content}
			m.live = append(m.live, id)
		default:
			t.Fatalf("unacknowledged create %s: %d %s", name, got.status, got.raw)
		}
		delete(m.createIntents, name)
	}
	// Supersedes in flight: the old drawer closed with its replacement
	// present, or untouched.
	for id, content := range m.supersedeIntents {
		got := drawer(id)
		switch by, _ := got.body["superseded_by"].(string); {
		case got.status == 200 && by == "":
			m.live = append(m.live, id)
		case got.status == 200:
			rep := drawer(by)
			if rep.status != 200 || rep.body["content"] != content || rep.body["supersedes"] != id {
				t.Fatalf("half-applied supersede of %s: replacement %d %s", id, rep.status, rep.raw)
			}
			m.drawers[id].superseded, m.drawers[id].checked = true, false
			m.drawers[by] = &soakDrawer{content: content}
		default:
			t.Fatalf("unacknowledged supersede of %s: %d %s", id, got.status, got.raw)
		}
		delete(m.supersedeIntents, id)
	}
	for id := range m.deleteIntents {
		switch got := drawer(id); got.status {
		case 404:
			m.drawers[id].deleted, m.drawers[id].checked = true, false
		case 200:
			m.live = append(m.live, id)
		default:
			t.Fatalf("unacknowledged delete of %s: %d %s", id, got.status, got.raw)
		}
		delete(m.deleteIntents, id)
	}
	// Checkpoint jobs: every acknowledged one, and any submission in
	// flight that was recorded, completes with each item once.
	list := d.do("GET", "/api/jobs?kind=checkpoint&limit=200", nil)
	if list.status != 200 {
		t.Fatalf("jobs: %s", list.raw)
	}
	jobs, _ := list.body["jobs"].([]any)
	seen := map[string]bool{}
	for _, j := range jobs {
		id := j.(map[string]any)["id"].(string)
		seen[id] = true
		if _, ok := m.jobs[id]; !ok && !m.doneJobs[id] {
			// A submission whose answer was lost: its item count comes
			// from its result once finished.
			m.jobs[id] = -1
		}
	}
	for id := range m.jobs {
		if !seen[id] {
			t.Fatalf("acknowledged checkpoint job %s is gone", id)
		}
	}
	for id, n := range m.jobs {
		j := waitJob(t, d, id, 120*time.Second, finished)
		got := int(get[float64](j, "result", "items"))
		if j["status"] != "completed" || (n >= 0 && got != n) {
			t.Fatalf("checkpoint job %s: %v (want %d items)", id, j, n)
		}
		delete(m.jobs, id)
		m.doneJobs[id] = true
		m.cpItems += got
	}
	clear(m.jobIntents)
	items := m.cpItems

	// Exactly once: the store holds the model's drawers, no more.
	stored, current := items, items
	for _, dr := range m.drawers {
		if !dr.deleted {
			stored++
			if !dr.superseded {
				current++
			}
		}
	}
	var st response
	deadline := time.Now().Add(90 * time.Second)
	for {
		st = d.do("GET", "/api/status", nil)
		lex := get[map[string]any](st.body, "indexes", "lexical")
		vec := get[map[string]any](st.body, "indexes", "vectors", "test")
		if lex != nil && vec != nil && lex["behind"] == float64(0) && vec["behind"] == float64(0) &&
			lex["drawers"] == float64(stored) && vec["drawers"] == float64(stored) && embedIdle(d) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("indexes do not equal the store (%d drawers stored): %s", stored, st.raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := get[float64](st.body, "counts", "drawers_stored"); int(got) != stored {
		t.Fatalf("drawers stored %d, want %d (acknowledged and landed writes, once each)", int(got), stored)
	}
	if got := get[float64](st.body, "counts", "drawers"); int(got) != current {
		t.Fatalf("current drawers %d, want %d", int(got), current)
	}
	// Every drawer changed since the last check reads back (each deleted
	// one is gone), and a sample of the others still does.
	sample := 100
	for id, dr := range m.drawers {
		if dr.checked {
			if sample == 0 {
				continue
			}
			sample--
		}
		dr.checked = true
		got := drawer(id)
		if dr.deleted {
			if got.status != 404 {
				t.Fatalf("deleted drawer %s: %d", id, got.status)
			}
			continue
		}
		if got.status != 200 || got.body["content"] != dr.content {
			t.Fatalf("acknowledged drawer %s: %d %s", id, got.status, got.raw)
		}
		if sup, _ := got.body["superseded_by"].(string); (sup != "") != dr.superseded {
			t.Fatalf("drawer %s superseded_by %q, model says superseded=%v", id, sup, dr.superseded)
		}
	}
	// The indexes answer for what the store holds: a sample of drawers is
	// found by its own token (lexical) and its own text (semantic), and
	// deleted ones are found by neither.
	ids := make([]string, 0, len(m.drawers))
	for id := range m.drawers {
		ids = append(ids, id)
	}
	for range min(8, len(ids)) {
		id := ids[r.IntN(len(ids))]
		dr := m.drawers[id]
		tok := soakToken(dr.content)
		lex := d.do("POST", "/api/search", map[string]any{"text": tok, "ranking": "lexical", "filter": map[string]any{"temporal": "all"}, "limit": 5})
		sem := d.do("POST", "/api/search", map[string]any{"text": dr.content, "ranking": "semantic", "profile": "test", "filter": map[string]any{"temporal": "all"}, "limit": 1})
		lh, _ := lex.body["hits"].([]any)
		sh, _ := sem.body["hits"].([]any)
		if dr.deleted {
			for _, h := range append(lh, sh...) {
				if h.(map[string]any)["id"] == id {
					t.Fatalf("deleted drawer %s still found by search", id)
				}
			}
			continue
		}
		if len(lh) != 1 || lh[0].(map[string]any)["id"] != id {
			t.Fatalf("lexical search for %s: %s", tok, lex.raw)
		}
		if len(sh) != 1 || sh[0].(map[string]any)["id"] != id {
			t.Fatalf("semantic search for drawer %s: %s", id, sem.raw)
		}
	}
}

// embedIdle reports that no embed job is queued or running.
func embedIdle(d *daemon) bool {
	for _, s := range []string{"queued", "running"} {
		r := d.do("GET", "/api/jobs?kind=embed&status="+s, nil)
		if jobs, _ := r.body["jobs"].([]any); r.status != 200 || len(jobs) > 0 {
			return false
		}
	}
	return true
}

// soakToken is the unique word of a soak drawer's content.
func soakToken(content string) string {
	for _, w := range bytes.Fields([]byte(content)) {
		if bytes.HasPrefix(w, []byte("soaktok")) {
			return string(w)
		}
	}
	return content
}

// escPath escapes a drawer name segment by segment.
func escPath(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
