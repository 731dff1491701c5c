package main_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// Issue 31, many daemons on one PostgreSQL database: writes searchable on
// every daemon, jobs run once and survive a daemon's kill -9, a schedule
// fires once per slot, and the database restarted under load. Each test
// has its own database (or cluster) and daemons on ports of their own,
// and runs in parallel with the others.

// multiConfig keeps the daemons cheap and their leases short: lexical
// search only (no model to load), a three-second lease.
const multiConfig = "[embedding]\ndefault = \"\"\n\n[jobs]\nlease_ttl_secs = 3\n"

// multiDB is a fresh database on the test binary's cluster.
func multiDB(t *testing.T) (*pgtest.Server, string) {
	t.Helper()
	s := pgtest.Shared(t)
	db, err := s.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	return s, db
}

// ownCluster is a cluster of the test's own (it is restarted), removed at
// the end; skipped like pgtest.Shared where PostgreSQL is absent.
func ownCluster(t *testing.T) *pgtest.Server {
	t.Helper()
	s, err := pgtest.Start()
	if err != nil {
		if os.Getenv("LOCI_REQUIRE_POSTGRES") == "1" {
			t.Fatalf("PostgreSQL is required here (LOCI_REQUIRE_POSTGRES=1) and could not start: %v; %s", err, pgtest.Hint)
		}
		t.Skipf("PostgreSQL could not start: %v; %s", err, pgtest.Hint)
	}
	t.Cleanup(s.Remove)
	return s
}

// startOnDB starts a daemon with a palace directory of its own on
// database db of cluster s, configured by cfgText (and extraEnv).
func startOnDB(t *testing.T, s *pgtest.Server, db, cfgText string, extraEnv ...string) *daemon {
	t.Helper()
	home, palace := newPalace(t)
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append([]string{"LOCI_CONFIG=" + cfg, "LOCI_DATASTORE_URL=" + s.URL(db), "LOCI_DATASTORE_PASSWORD=" + pgtest.Password}, extraEnv...)
	return start(t, home, palace, env...)
}

// multiClient bounds each request: a request to a daemon whose database
// is away must not hang the test.
var multiClient = &http.Client{Timeout: 15 * time.Second}

// multiDo is d.do for goroutines: an error instead of t.Fatal.
func multiDo(d *daemon, method, path string, body any) (response, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+d.addr+path, rd)
	if err != nil {
		return response{}, err
	}
	resp, err := multiClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	if r.status == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
		return r, fmt.Errorf("%w: %s", errNoRetryAfter, r.raw)
	}
	return r, nil
}

// errNoRetryAfter is a 503 answer without its Retry-After header.
var errNoRetryAfter = errors.New("a 503 answer without Retry-After")

// multiToken is a word of its own per (a, b, c), one lexical token that
// no stemmer shortens: consonants, ending in q.
func multiToken(a, b, c int) string {
	const letters = "bcdfghjklmnprtvwxz"
	word := func(n int) string {
		s := ""
		for {
			s += string(letters[n%len(letters)])
			n /= len(letters)
			if n == 0 {
				return s
			}
		}
	}
	return "zq" + word(a) + "v" + word(b) + "v" + word(c) + "q"
}

// fileNote files a drawer holding token through d: its id, or an error
// (with the answer) when it was not acknowledged.
func fileNote(d *daemon, wing, room, token string) (string, response, error) {
	r, err := multiDo(d, "POST", "/api/wings/"+wing+"/rooms/"+room+"/drawers",
		map[string]any{"content": "a note about " + token + " filed while other daemons write", "tags": []string{}})
	if err != nil {
		return "", r, err
	}
	if r.status != 201 {
		return "", r, fmt.Errorf("filing %s: %d %s", token, r.status, r.raw)
	}
	return get[string](r.body, "drawer", "id"), r, nil
}

// finds reports whether a lexical search for token on d answers drawer id.
func finds(d *daemon, token, id string) (bool, error) {
	r, err := multiDo(d, "GET", "/api/search?ranking=lexical&limit=5&q="+url.QueryEscape(token), nil)
	if err != nil {
		return false, err
	}
	if r.status != 200 {
		return false, fmt.Errorf("search: %d %s", r.status, r.raw)
	}
	for _, h := range get[[]any](r.body, "hits") {
		if m, _ := h.(map[string]any); m["id"] == id {
			return true, nil
		}
	}
	return false, nil
}

// percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

// Three daemons on one database, each written to by concurrent clients:
// every drawer acknowledged by one daemon is found by a lexical search on
// every daemon within a second of its acknowledgment (each daemon's index
// follows the shared change log, woken by NOTIFY).
func TestMultiDaemonsSearchEveryWrite(t *testing.T) {
	t.Parallel()
	s, db := multiDB(t)
	ds := []*daemon{startOnDB(t, s, db, multiConfig), startOnDB(t, s, db, multiConfig), startOnDB(t, s, db, multiConfig)}
	const writers, each = 2, 10
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		lags   []time.Duration
		failed []string
	)
	fail := func(f string, a ...any) {
		mu.Lock()
		failed = append(failed, fmt.Sprintf(f, a...))
		mu.Unlock()
	}
	for di, d := range ds {
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					token := multiToken(di, w, i)
					id, _, err := fileNote(d, "multi", fmt.Sprintf("daemon%d", di), token)
					if err != nil {
						fail("daemon %d: %v", di, err)
						return
					}
					acked := time.Now()
					for oi, o := range ds {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for {
								ok, err := finds(o, token, id)
								if err != nil {
									fail("search on daemon %d: %v", oi, err)
									return
								}
								lag := time.Since(acked)
								if ok {
									mu.Lock()
									lags = append(lags, lag)
									mu.Unlock()
									if lag > time.Second {
										fail("drawer %s (%s) filed on daemon %d found on daemon %d after %v", id, token, di, oi, lag.Round(time.Millisecond))
									}
									return
								}
								if lag > 5*time.Second {
									fail("drawer %s (%s) filed on daemon %d not found on daemon %d in %v", id, token, di, oi, lag.Round(time.Millisecond))
									return
								}
								time.Sleep(10 * time.Millisecond)
							}
						}()
					}
				}
			}()
		}
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d failures, first: %s", len(failed), strings.Join(failed[:min(5, len(failed))], "\n"))
	}
	if want := len(ds) * writers * each * len(ds); len(lags) != want {
		t.Fatalf("%d writes found, want %d", len(lags), want)
	}
	slices.Sort(lags)
	t.Logf("write acknowledged to searchable on each daemon (%d): p50 %v, p99 %v, max %v", len(lags),
		percentile(lags, 0.5).Round(time.Millisecond), percentile(lags, 0.99).Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
}

// jobAnswer reads a job through d.
func jobAnswer(t *testing.T, d *daemon, id string) map[string]any {
	t.Helper()
	r, err := multiDo(d, "GET", "/api/jobs/"+id, nil)
	if err != nil || r.status != 200 {
		t.Fatalf("job %s: %v %s", id, err, r.raw)
	}
	return r.body
}

// wingDrawers is the number of current drawers of a wing, as d answers.
func wingDrawers(t *testing.T, d *daemon, wing string) int {
	t.Helper()
	r, err := multiDo(d, "GET", "/api/wings/"+wing, nil)
	if err != nil || r.status != 200 {
		t.Fatalf("wing %s: %v %s", wing, err, r.raw)
	}
	return int(get[float64](r.body, "drawers"))
}

// 200 checkpoint jobs submitted across three daemons at once, each filing
// one drawer of its own: every job completes, claimed once (attempt 1,
// no recovery), and the wing holds exactly 200 drawers.
func TestMultiDaemonsRunEachJobOnce(t *testing.T) {
	t.Parallel()
	s, db := multiDB(t)
	ds := []*daemon{startOnDB(t, s, db, multiConfig), startOnDB(t, s, db, multiConfig), startOnDB(t, s, db, multiConfig)}
	const jobs = 200
	ids := make([]string, jobs)
	var wg sync.WaitGroup
	errs := make(chan error, jobs)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < jobs; i += 6 {
				d := ds[i%len(ds)]
				item := map[string]any{"destination": "project", "wing": "runonce", "content": "checkpoint item " + multiToken(i, 0, 0),
					"tags": []string{}, "source": map[string]any{"kind": "manual"}}
				r, err := multiDo(d, "POST", "/api/jobs", map[string]any{"type": "checkpoint", "payload": map[string]any{"items": []any{item}}})
				if err == nil && r.status != 202 {
					err = fmt.Errorf("submit %d: %d %s", i, r.status, r.raw)
				}
				if err != nil {
					errs <- err
					return
				}
				ids[i] = get[string](r.body, "id")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "200 jobs completed", func() bool {
		r := ds[0].do("GET", "/api/jobs?kind=checkpoint&status=completed&limit=200", nil)
		return len(get[[]any](r.body, "jobs")) == jobs
	})
	for i, id := range ids {
		j := jobAnswer(t, ds[i%len(ds)], id)
		if j["status"] != "completed" || get[float64](j, "attempt") != 1 || get[float64](j, "recovery_attempts") != 0 ||
			get[float64](j, "result", "items") != 1 {
			t.Fatalf("job %d: %v; want completed, claimed once, one item", i, j)
		}
	}
	for _, d := range ds {
		if n := wingDrawers(t, d, "runonce"); n != jobs {
			t.Fatalf("the wing holds %d drawers, want %d", n, jobs)
		}
	}
}

// noteTree is a folder of n one-line notes, each a drawer of its own.
func noteTree(t *testing.T, name string, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("note-%03d.md", i)),
			[]byte(fmt.Sprintf("note %d of %s about %s\n", i, name, multiToken(i, 1, 2))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// kill -9 of a daemon running two mine jobs: another daemon's reaper
// recovers them once their leases expired (recovery_attempts 1) and
// finishes them from their checkpoints, with exactly the expected
// drawers: every note once, none twice.
func TestMultiDaemonKilledJobsFinishElsewhere(t *testing.T) {
	t.Parallel()
	s, db := multiDB(t)
	const notes = 200
	dirs := []string{noteTree(t, "alpha", notes), noteTree(t, "beta", notes)}
	// A reads a note in 40 ms: a batch of 64 (a checkpoint) in 2.6 s, the
	// job in 8 s; B reads at full speed.
	a := startOnDB(t, s, db, multiConfig, "LOCI_TEST_MINE_DELAY=40ms")
	var ids []string
	for i, dir := range dirs {
		r := a.do("POST", "/api/jobs", map[string]any{"type": "mine", "path": dir, "wing": fmt.Sprintf("killed%d", i)})
		if r.status != 202 {
			t.Fatalf("mine: %d %s", r.status, r.raw)
		}
		ids = append(ids, get[string](r.body, "id"))
	}
	owner := fmt.Sprintf("/%d/", a.cmd.Process.Pid)
	eventually(t, 30*time.Second, "both mine jobs running on A, a batch of each filed", func() bool {
		for _, id := range ids {
			j := a.do("GET", "/api/jobs/"+id, nil).body
			if j["status"] != "running" || !strings.Contains(get[string](j, "lease_owner"), owner) || get[float64](j, "progress", "current") < 1 {
				return false
			}
		}
		return true
	})
	b := startOnDB(t, s, db, multiConfig)
	// The later of the leases as last renewed before the kill (a renewal
	// after the read only moves it later): the jobs are recovered after it.
	var expires time.Time
	for _, id := range ids {
		j := jobAnswer(t, b, id)
		if !strings.Contains(get[string](j, "lease_owner"), owner) {
			t.Fatalf("B took a job A runs: %v", j)
		}
		at, err := time.Parse(time.RFC3339Nano, get[string](j, "lease_expires_at"))
		if err != nil {
			t.Fatalf("lease_expires_at: %v", j)
		}
		if at.After(expires) {
			expires = at
		}
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	killed := time.Now()
	var resumed time.Duration
	eventually(t, 30*time.Second, "the jobs resumed on B", func() bool {
		for _, id := range ids {
			j := jobAnswer(t, b, id)
			if get[float64](j, "recovery_attempts") < 1 {
				return false
			}
		}
		resumed = time.Since(killed)
		return true
	})
	t.Logf("failover: the jobs of a daemon killed -9 were recovered elsewhere %v after the kill (lease TTL 3 s, reaper every 1 s)", resumed.Round(time.Millisecond))
	if recovered := killed.Add(resumed); recovered.Before(expires) {
		t.Fatalf("recovered at %v, before the lease expired (%v)", recovered, expires)
	}
	for i, id := range ids {
		j := waitJob(t, b, id, 60*time.Second, finished)
		if j["status"] != "completed" || get[float64](j, "recovery_attempts") != 1 || get[float64](j, "attempt") != 2 {
			t.Fatalf("job %s after the kill: %v; want completed, recovered once, claimed twice", id, j)
		}
		if n := wingDrawers(t, b, fmt.Sprintf("killed%d", i)); n != notes {
			t.Fatalf("the mine of %d notes left %d drawers", notes, n)
		}
		if got := get[float64](j, "result", "documents"); got != notes {
			t.Fatalf("the resumed mine's result counts %v documents, want %d: %v", got, notes, j["result"])
		}
	}
}

// A one-second schedule on three daemons fires once per slot: the
// trigger's requests (fired, joined or failed, counted in the shared
// state) are one per second that passed, not three.
func TestMultiDaemonsScheduleFiresOncePerSlot(t *testing.T) {
	t.Parallel()
	s, db := multiDB(t)
	dir := noteTree(t, "scheduled", 3)
	cfg := multiConfig + fmt.Sprintf(`
[miners.docs]
locator = %q
enabled = true

[triggers.tick]
miner = "docs"
type = "schedule"
enabled = true
settings = { every = "1s" }
`, dir)
	began := time.Now()
	ds := []*daemon{startOnDB(t, s, db, cfg), startOnDB(t, s, db, cfg), startOnDB(t, s, db, cfg)}
	requests := func() (fired, coalesced, failed float64) {
		r := ds[0].do("GET", "/api/triggers/tick", nil)
		return get[float64](r.body, "counters", "fired"), get[float64](r.body, "counters", "coalesced"), get[float64](r.body, "counters", "failed")
	}
	// Every daemon runs the trigger.
	for i, d := range ds {
		eventually(t, 15*time.Second, fmt.Sprintf("the trigger running on daemon %d", i), func() bool {
			return d.do("GET", "/api/triggers/tick", nil).body["running"] == true
		})
	}
	time.Sleep(5 * time.Second)
	fired, coalesced, failed := requests()
	elapsed := time.Since(began)
	total := fired + coalesced + failed
	if total < 3 || total > elapsed.Seconds()+1 {
		t.Fatalf("in %v a one-second schedule on three daemons asked %v times (fired %v, joined %v, failed %v); want one per slot",
			elapsed.Round(time.Millisecond), total, fired, coalesced, failed)
	}
	if failed > 0 {
		t.Fatalf("requests failed: %s", ds[0].do("GET", "/api/triggers/tick", nil).raw)
	}
}

// PostgreSQL restarted while two daemons take writes from concurrent
// clients: a write answers 201 (acknowledged) or 503 with Retry-After
// (loci::store::backend_failed) meanwhile; every acknowledged drawer is
// in the palace afterwards and searchable on both daemons, and both take
// writes again without being restarted.
func TestMultiDaemonsPostgresRestartedUnderLoad(t *testing.T) {
	t.Parallel()
	s := ownCluster(t)
	db, err := s.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	ds := []*daemon{startOnDB(t, s, db, multiConfig), startOnDB(t, s, db, multiConfig)}
	type ack struct {
		id, token string
	}
	var (
		mu        sync.Mutex
		acked     []ack
		refused   atomic.Int32
		bad       []string
		stop      atomic.Bool
		restarted atomic.Bool
		after     [2]atomic.Int32 // acknowledgments after the restart, per daemon
		wg        sync.WaitGroup
	)
	for di, d := range ds {
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; !stop.Load(); i++ {
					token := multiToken(di, w+7, i)
					id, r, err := fileNote(d, "load", "notes", token)
					switch {
					case err == nil:
						mu.Lock()
						acked = append(acked, ack{id, token})
						mu.Unlock()
						if restarted.Load() {
							after[di].Add(1)
						}
					case errors.Is(err, errNoRetryAfter):
						mu.Lock()
						bad = append(bad, err.Error())
						mu.Unlock()
						time.Sleep(50 * time.Millisecond)
					case r.status == 503 && r.code() == "loci::store::backend_failed":
						refused.Add(1)
						time.Sleep(50 * time.Millisecond)
					case r.status == 0:
						// No answer within the client's bound: not
						// acknowledged, tried again.
					default:
						mu.Lock()
						bad = append(bad, err.Error())
						mu.Unlock()
						time.Sleep(50 * time.Millisecond)
					}
				}
			}()
		}
	}
	time.Sleep(1500 * time.Millisecond)
	if err := s.Restart(); err != nil {
		stop.Store(true)
		wg.Wait()
		t.Fatal(err)
	}
	restarted.Store(true)
	deadline := time.Now().Add(60 * time.Second)
	for after[0].Load() < 10 || after[1].Load() < 10 {
		if time.Now().After(deadline) {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("writes after the restart: %d and %d acknowledged in a minute; the daemons did not recover\nA:\n%s", after[0].Load(), after[1].Load(), ds[0].log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d writes answered neither 201 nor 503 backend_failed, first: %s", len(bad), bad[0])
	}
	t.Logf("%d writes acknowledged, %d refused with 503 while PostgreSQL restarted", len(acked), refused.Load())
	// Every acknowledged drawer is in the palace, read through each daemon.
	for di, d := range ds {
		have := map[string]bool{}
		for cursor := ""; ; {
			r := d.do("GET", "/api/wings/load/rooms/notes/drawers?limit=200&cursor="+url.QueryEscape(cursor), nil)
			if r.status != 200 {
				t.Fatalf("list on daemon %d: %s", di, r.raw)
			}
			for _, p := range get[[]any](r.body, "drawers") {
				m, _ := p.(map[string]any)
				id, _ := m["id"].(string)
				have[id] = true
			}
			if cursor, _ = r.body["next_cursor"].(string); cursor == "" {
				break
			}
		}
		for _, a := range acked {
			if !have[a.id] {
				t.Fatalf("acknowledged drawer %s (%s) is not in the palace read through daemon %d", a.id, a.token, di)
			}
		}
	}
	// And searchable on each: the followers caught up after the restart.
	for di, d := range ds {
		for _, a := range acked {
			eventually(t, 10*time.Second, fmt.Sprintf("drawer %s searchable on daemon %d", a.id, di), func() bool {
				ok, err := finds(d, a.token, a.id)
				return err == nil && ok
			})
		}
	}
}

// A job running on daemon A, controlled through daemon B: force-cancel is
// refused (A runs it: loci::jobs::transition_invalid naming A, nothing
// changed); a pause through B reaches A's worker through the database
// (its next save or heartbeat) and the job pauses; resumed through B it
// runs again, and a cancel through B ends it, whichever daemon runs it.
func TestMultiDaemonsControlAnotherDaemonsJob(t *testing.T) {
	t.Parallel()
	s, db := multiDB(t)
	dir := noteTree(t, "controlled", 400)
	slow := "LOCI_TEST_MINE_DELAY=40ms"
	a := startOnDB(t, s, db, multiConfig, slow)
	r := a.do("POST", "/api/jobs", map[string]any{"type": "mine", "path": dir})
	if r.status != 202 {
		t.Fatalf("mine: %d %s", r.status, r.raw)
	}
	id := get[string](r.body, "id")
	owner := fmt.Sprintf("/%d/", a.cmd.Process.Pid)
	eventually(t, 30*time.Second, "the mine running on A", func() bool {
		j := a.do("GET", "/api/jobs/"+id, nil).body
		return j["status"] == "running" && strings.Contains(get[string](j, "lease_owner"), owner)
	})
	b := startOnDB(t, s, db, multiConfig, slow)

	fc := b.do("POST", "/api/jobs/"+id+"/force-cancel", nil)
	if fc.status != 400 || fc.code() != "loci::jobs::transition_invalid" || !strings.Contains(fc.raw, owner) {
		t.Fatalf("force-cancel through B of A's job: %d %s", fc.status, fc.raw)
	}
	if j := jobAnswer(t, b, id); j["status"] != "running" || j["cancel_requested"] == true {
		t.Fatalf("a refused force-cancel changed the job: %v", j)
	}

	asked := time.Now()
	if p := b.do("POST", "/api/jobs/"+id+"/pause", nil); p.status != 200 || p.body["pause_requested"] != true {
		t.Fatalf("pause through B: %d %s", p.status, p.raw)
	}
	eventually(t, 10*time.Second, "the job paused by A's worker", func() bool { return jobAnswer(t, b, id)["status"] == "paused" })
	t.Logf("a pause through B reached A's worker in %v", time.Since(asked).Round(time.Millisecond))

	if p := b.do("POST", "/api/jobs/"+id+"/resume", nil); p.status != 200 {
		t.Fatalf("resume through B: %d %s", p.status, p.raw)
	}
	eventually(t, 10*time.Second, "the job running again", func() bool { return jobAnswer(t, a, id)["status"] == "running" })
	if c := b.do("POST", "/api/jobs/"+id+"/cancel", nil); c.status != 200 {
		t.Fatalf("cancel through B: %d %s", c.status, c.raw)
	}
	j := waitJob(t, a, id, 10*time.Second, finished)
	if j["status"] != "cancelled" || get[float64](j, "recovery_attempts") != 0 {
		t.Fatalf("after a cancel through B: %v", j)
	}
}

// A webhook delivery retried to another daemon (a load balancer in front
// of two) is a duplicate there: its id was remembered in the database by
// the daemon that accepted it, and one run is asked for, not two.
func TestMultiDaemonsWebhookDeliveryOnce(t *testing.T) {
	t.Parallel()
	s, db := multiDB(t)
	dir := noteTree(t, "hooked", 3)
	const secret = "It's a Secret to Everybody"
	var ds []*daemon
	var bases []string
	for range 2 {
		port := freePort(t)
		cfg := multiConfig + fmt.Sprintf(`
[webhook]
enable = true
port = %d

[miners.docs]
locator = %q
enabled = true

[triggers.gh]
miner = "docs"
type = "webhook"
enabled = true
settings = { delivery_header = "X-GitHub-Delivery" }
credential = { env = "LOCI_TEST_HOOK_SECRET" }
`, port, dir)
		d := startOnDB(t, s, db, cfg, "LOCI_TEST_HOOK_SECRET="+secret)
		eventually(t, 10*time.Second, "the listener open", func() bool {
			return get[bool](d.do("GET", "/api/triggers", nil).body, "webhook", "listening")
		})
		ds = append(ds, d)
		bases = append(bases, fmt.Sprintf("http://127.0.0.1:%d/hooks/gh", port))
	}
	body := `{"ref":"refs/heads/main"}`
	deliver := func(base string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", base, strings.NewReader(body))
		req.Header.Set("X-Hub-Signature-256", githubSign(secret, body))
		req.Header.Set("X-GitHub-Delivery", "9b2f6c1e-0d7a-4c55-8f3e-1a2b3c4d5e6f")
		resp, err := multiClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, first := deliver(bases[0])
	if code != 202 || first["status"] != "queued" || get[string](first, "job", "id") == "" {
		t.Fatalf("the delivery on daemon A: %d %v", code, first)
	}
	code, again := deliver(bases[1])
	if code != 202 || again["status"] != "duplicate" || get[string](again, "job", "id") != get[string](first, "job", "id") {
		t.Fatalf("the same delivery retried on daemon B: %d %v; want a duplicate of %v", code, again, first)
	}
	r := ds[1].do("GET", "/api/triggers/gh", nil)
	if get[float64](r.body, "counters", "fired")+get[float64](r.body, "counters", "coalesced") != 1 || get[float64](r.body, "counters", "deliveries") != 1 {
		t.Fatalf("one delivery on two daemons: %s", r.raw)
	}
}
