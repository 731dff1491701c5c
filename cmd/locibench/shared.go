package main

import (
	"bytes"
	"encoding/json"
	"errors"
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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// sharedFill is -shared-fill: the drawers of -only shared's search
// comparison (a quick run uses fewer).
var sharedFill = flag.Int("shared-fill", 100000, "with -only shared: drawers in the lexical search comparison")

// sharedImport is -shared-import: the search comparison fills PostgreSQL
// by the import whatever the rate through REST.
var sharedImport = flag.Bool("shared-import", false, "with -only shared: fill PostgreSQL for the search comparison by an import, whatever the rate through REST")

// sharedParts is -shared-parts: the parts of -only shared to run.
var sharedParts = flag.String("shared-parts", "writes,search,lag,failover", "with -only shared: the parts to run, comma-separated (writes, search, lag, failover)")

// sharedLeaseTTL is the lease TTL (jobs.lease_ttl_secs) of every daemon of
// -only shared: short, so the failover figure is measured in seconds.
const sharedLeaseTTL = 6

// restFillLimit is the longest a fill through REST may take before the
// search comparison fills PostgreSQL by an import instead.
const restFillLimit = 10 * time.Minute

// sharedBench is -only shared (issue 31's benchmarks): the shared store
// against real daemons on a PostgreSQL cluster of its own (pgtest: initdb
// and pg_ctl in a temporary directory, fsync and synchronous commit on),
// every daemon with its own palace folder (its local indexes), embedding
// off (the write path and the lexical index are measured, not an
// embedder sharing the two cores), lease TTL 6 s:
//  1. durable writes/s over REST, 16 clients: one daemon on PostgreSQL
//     and one on the embedded store, the same load; then three daemons on
//     one database with the clients spread over them;
//  2. lexical search p50/p95 at -shared-fill drawers on a daemon that
//     followed the shared log, against the embedded store's on the same
//     drawers with the same queries (target: within 1.5x);
//  3. replication lag: a write acknowledged on daemon A to searchable on
//     daemon B, p50/p99 over 200;
//  4. failover: kill -9 of a daemon running two mine jobs to each running
//     again on another daemon, against the lease TTL.
//
// A part that fails is reported and the next one still runs.
func sharedBench(bin, dir string, writes, clients int) error {
	s := &sharedRun{bin: bin, dir: dir, writes: writes, clients: clients, fill: *sharedFill}
	fmt.Printf("machine: %s/%s, %d cores (%s), %s; load average %s; %s UTC\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		cpuModel(), memTotal(), loadAverage(), time.Now().UTC().Format("2006-01-02 15:04"))
	srv, err := pgtest.Start()
	if err != nil {
		return fmt.Errorf("starting PostgreSQL: %w (%s)", err, pgtest.Hint)
	}
	defer srv.Remove()
	s.srv = srv
	defer s.stopAll()
	fmt.Printf("PostgreSQL: %s, a cluster of its own on 127.0.0.1:%d (fsync on, synchronous_commit on, shared_buffers 32MB)\n", pgVersion(), srv.Port)
	s.cfg = filepath.Join(dir, "shared.toml")
	if err := os.WriteFile(s.cfg, []byte(fmt.Sprintf("[embedding]\ndefault = \"\"\n[jobs]\nlease_ttl_secs = %d\n", sharedLeaseTTL)), 0o600); err != nil {
		return err
	}
	var failed []string
	want := strings.Split(*sharedParts, ",")
	for _, p := range []struct {
		name string
		fn   func() error
	}{
		{"writes", s.writeRates},
		{"search", s.searchCompare},
		{"lag", s.replicationLag},
		{"failover", s.failover},
	} {
		if !slices.Contains(want, p.name) {
			continue
		}
		if err := p.fn(); err != nil {
			fmt.Printf("%s: FAILED: %v\n", p.name, err)
			failed = append(failed, p.name)
		}
	}
	fmt.Printf("load average at the end: %s; %s UTC\n", loadAverage(), time.Now().UTC().Format("2006-01-02 15:04"))
	if len(failed) > 0 {
		return fmt.Errorf("parts failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

// sharedRun is one -only shared run: the cluster, the configuration every
// daemon reads, and every daemon started (stopped at the end).
type sharedRun struct {
	bin, dir, cfg   string
	writes, clients int
	fill            int
	srv             *pgtest.Server

	palaces int
	daemons []*daemon
	// a and b are two daemons on one database holding the search
	// comparison's drawers, kept for the lag part (nil if that failed).
	a, b *daemon
}

// database creates an empty database on the cluster.
func (s *sharedRun) database() (string, error) { return s.srv.NewDatabase() }

// palace is a new palace folder under the run's directory.
func (s *sharedRun) palace(what string) string {
	s.palaces++
	return filepath.Join(s.dir, fmt.Sprintf("%s-%d", what, s.palaces))
}

// pgDaemon starts a daemon on the database (its own palace folder for its
// local indexes) and checks it says it runs on PostgreSQL.
func (s *sharedRun) pgDaemon(db string) (*daemon, error) {
	d, _, err := start(s.bin, s.palace("pg"), "LOCI_CONFIG="+s.cfg,
		"LOCI_DATASTORE_URL="+s.srv.URL(db), "LOCI_DATASTORE_PASSWORD="+pgtest.Password)
	if err != nil {
		return nil, err
	}
	s.daemons = append(s.daemons, d)
	if b := backend(d.addr); b != "postgres" {
		return nil, fmt.Errorf("a daemon started with LOCI_DATASTORE_URL reports backend %q, want postgres", b)
	}
	return d, nil
}

// embedded starts a daemon on a fresh embedded palace and answers its
// folder too.
func (s *sharedRun) embedded() (*daemon, string, error) {
	palace := s.palace("embedded")
	d, _, err := start(s.bin, palace, "LOCI_CONFIG="+s.cfg)
	if err != nil {
		return nil, "", err
	}
	s.daemons = append(s.daemons, d)
	return d, palace, nil
}

// stopAll stops every daemon still running, together.
func (s *sharedRun) stopAll() {
	var wg sync.WaitGroup
	for _, d := range s.daemons {
		wg.Go(func() { d.stop() })
	}
	wg.Wait()
}

// writeRates is part 1: the same load (16 clients, unique sentences of the
// same generator, dedup on) into an embedded daemon, a daemon on
// PostgreSQL, and three daemons on one database.
func (s *sharedRun) writeRates() error {
	room := "/api/wings/bench/rooms/throughput/drawers"
	e, _, err := s.embedded()
	if err != nil {
		return err
	}
	embRate, err := loadOver([]string{e.addr}, room, 0, s.writes, s.clients, 1)
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	e.stop()
	fmt.Printf("durable writes over REST, %d clients, %d unique drawers, dedup on: embedded store (Badger) %.0f acknowledged writes/s\n", s.clients, s.writes, embRate)

	db, err := s.database()
	if err != nil {
		return err
	}
	p, err := s.pgDaemon(db)
	if err != nil {
		return err
	}
	pgRate, err := loadOver([]string{p.addr}, room, 0, s.writes, s.clients, 1)
	if err != nil {
		return fmt.Errorf("postgres, one daemon: %w", err)
	}
	p.stop()
	fmt.Printf("durable writes over REST, %d clients, %d unique drawers, dedup on: one daemon on PostgreSQL %.0f acknowledged writes/s (%.2fx the embedded store's)\n",
		s.clients, s.writes, pgRate, pgRate/embRate)

	db, err = s.database()
	if err != nil {
		return err
	}
	var addrs []string
	var three []*daemon
	for range 3 {
		d, err := s.pgDaemon(db)
		if err != nil {
			return err
		}
		three = append(three, d)
		addrs = append(addrs, d.addr)
	}
	rate3, err := loadOver(addrs, room, 0, s.writes, s.clients, 1)
	if err != nil {
		return fmt.Errorf("postgres, three daemons: %w", err)
	}
	// Every acknowledged write is stored, seen from each daemon.
	for i, d := range three {
		if n := stored(d.addr); n != s.writes {
			return fmt.Errorf("daemon %d of 3 counts %d drawers after %d acknowledged writes", i+1, n, s.writes)
		}
	}
	for _, d := range three {
		d.stop()
	}
	fmt.Printf("durable writes over REST, %d clients spread over three daemons on one PostgreSQL database, %d unique drawers: %.0f acknowledged writes/s in all (%.2fx one daemon's); all %d counted by each daemon\n",
		s.clients, s.writes, rate3, rate3/pgRate, s.writes)
	return nil
}

// searchCompare is part 2: the same drawers in an embedded palace and in a
// PostgreSQL database, the same lexical queries on the embedded daemon and
// on a daemon that caught up from the shared log.
func (s *sharedRun) searchCompare() error {
	n := s.fill
	room := "/api/wings/bench/rooms/search/drawers"

	// The fill rate through REST on PostgreSQL, on the first drawers.
	db, err := s.database()
	if err != nil {
		return err
	}
	a, err := s.pgDaemon(db)
	if err != nil {
		return err
	}
	probe := min(5000, n)
	t0 := time.Now()
	probeRate, err := loadOver([]string{a.addr}, room, 0, probe, s.clients, 20)
	if err != nil {
		return fmt.Errorf("fill through REST on PostgreSQL: %w", err)
	}
	estimate := time.Duration(float64(n-probe) / probeRate * float64(time.Second))
	fmt.Printf("search: fill through REST on PostgreSQL, first %d drawers: %s, %.0f drawers/s; the other %d would take about %s\n",
		probe, time.Since(t0).Round(time.Millisecond), probeRate, n-probe, estimate.Round(time.Second))
	bulk := estimate > restFillLimit || *sharedImport

	// The embedded palace: the same drawers (the i-th content is the
	// same for the same seed), then its search figures.
	e, ePalace, err := s.embedded()
	if err != nil {
		return err
	}
	t0 = time.Now()
	if _, err := loadOver([]string{e.addr}, room, 0, n, s.clients, 20); err != nil {
		return fmt.Errorf("embedded fill: %w", err)
	}
	fmt.Printf("search: embedded palace filled with %d drawers through REST in %s\n", n, time.Since(t0).Round(time.Second))
	if err := caughtUp(e.addr, n, 30*time.Minute); err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	idle(e.cmd.Process.Pid, 5*time.Minute)
	emb, hits, err := lexicalTimes(e.addr)
	if err != nil {
		return fmt.Errorf("embedded search: %w", err)
	}
	fmt.Printf("lexical search over REST, %d drawers, embedded store: p50 %s p95 %s p99 %s (500 queries of 4 words, %d with hits)\n",
		n, emb.p50.Round(time.Microsecond), emb.p95.Round(time.Microsecond), emb.p99.Round(time.Microsecond), hits)
	export := filepath.Join(s.dir, "search.jsonl")
	if bulk {
		out, err := exec.Command(s.bin, "--addr", e.addr, "export", "--out", export).CombinedOutput()
		if err != nil {
			return fmt.Errorf("export of the embedded palace: %v: %s", err, out)
		}
	}
	e.stop()

	if bulk {
		// The bulk paths, each into a fresh database: `loci migrate --to`
		// (the embedded palace copied store to store), else an import of
		// its export through one daemon (the only one on it: the import's
		// file is in its palace folder), else the fill goes on through REST.
		if err := s.migrateFill(ePalace, &a, &db); err != nil {
			fmt.Printf("search: loci migrate --to PostgreSQL failed (%v); importing the export instead\n", err)
			if err := s.importFill(export, &a, &db); err != nil {
				fmt.Printf("search: the import into PostgreSQL failed (%v); filling through REST instead\n", err)
				bulk = false
			}
		}
	}
	if !bulk {
		t0 = time.Now()
		if _, err := loadOver([]string{a.addr}, room, probe, n, s.clients, 20); err != nil {
			return fmt.Errorf("fill through REST on PostgreSQL: %w", err)
		}
		fmt.Printf("search: PostgreSQL filled through REST on one daemon: %d drawers more in %s\n", n-probe, time.Since(t0).Round(time.Second))
	}
	if got := stored(a.addr); got != n {
		return fmt.Errorf("the PostgreSQL palace holds %d drawers, want %d", got, n)
	}

	// A second daemon on the filled database: its lexical index follows
	// the shared log from the start.
	t0 = time.Now()
	b, err := s.pgDaemon(db)
	if err != nil {
		return err
	}
	if err := caughtUp(b.addr, n, 30*time.Minute); err != nil {
		return fmt.Errorf("second daemon: %w", err)
	}
	fmt.Printf("search: a second daemon started on the filled database had its lexical index caught up with the shared log (%d drawers) %s after its start\n",
		n, time.Since(t0).Round(time.Second))
	idle(b.cmd.Process.Pid, 5*time.Minute)
	idle(a.cmd.Process.Pid, time.Minute)
	bt, hitsB, err := lexicalTimes(b.addr)
	if err != nil {
		return fmt.Errorf("search on the following daemon: %w", err)
	}
	at, _, err := lexicalTimes(a.addr)
	if err != nil {
		return fmt.Errorf("search on the writing daemon: %w", err)
	}
	fmt.Printf("lexical search over REST, %d drawers, PostgreSQL, the daemon that followed the shared log: p50 %s p95 %s p99 %s (%d with hits); %.2fx the embedded p50 (target within 1.5x), %.2fx its p95\n",
		n, bt.p50.Round(time.Microsecond), bt.p95.Round(time.Microsecond), bt.p99.Round(time.Microsecond), hitsB,
		float64(bt.p50)/float64(emb.p50), float64(bt.p95)/float64(emb.p95))
	fmt.Printf("lexical search over REST, %d drawers, PostgreSQL, the daemon that filled it: p50 %s p95 %s p99 %s; %.2fx the embedded p50\n",
		n, at.p50.Round(time.Microsecond), at.p95.Round(time.Microsecond), at.p99.Round(time.Microsecond), float64(at.p50)/float64(emb.p50))
	s.a, s.b = a, b
	return nil
}

// migrateFill copies the embedded palace (its daemon stopped) into a fresh
// database with `loci migrate --to`, then starts a daemon on it; on
// success *a and *db are that daemon and database (the one before is
// stopped).
func (s *sharedRun) migrateFill(palace string, a **daemon, db *string) error {
	fresh, err := s.database()
	if err != nil {
		return err
	}
	t0 := time.Now()
	cmd := exec.Command(s.bin, "--json", "migrate", "--palace", palace, "--to", s.srv.URL(fresh))
	cmd.Env = append(os.Environ(), "LOCI_LOG=warn", "LOCI_CONFIG="+s.cfg, "LOCI_DATASTORE_PASSWORD="+pgtest.Password)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %.500s", err, out)
	}
	el := time.Since(t0)
	var rep struct {
		Drawers int `json:"drawers"`
		Batches int `json:"batches"`
	}
	json.Unmarshal(out, &rep)
	d, err := s.pgDaemon(fresh)
	if err != nil {
		return err
	}
	fmt.Printf("search: PostgreSQL filled by loci migrate --to from the embedded palace (REST would take over %s): %d drawers (the whole palace, %d batches) in %s, %.0f drawers/s\n",
		restFillLimit, rep.Drawers, rep.Batches, el.Round(time.Second), float64(rep.Drawers)/el.Seconds())
	(*a).stop()
	*a, *db = d, fresh
	return nil
}

// importFill imports the export into a fresh database through a daemon
// alone on it; on success *a and *db are that daemon and database (the
// one before is stopped).
func (s *sharedRun) importFill(export string, a **daemon, db *string) error {
	fresh, err := s.database()
	if err != nil {
		return err
	}
	d, err := s.pgDaemon(fresh)
	if err != nil {
		return err
	}
	t0 := time.Now()
	cmd := exec.Command(s.bin, "--addr", d.addr, "import", export, "--json")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err == nil && !json.Valid(out) {
		err = fmt.Errorf("import answered %q", out)
	}
	if err != nil {
		d.stop()
		return err
	}
	el := time.Since(t0)
	got := stored(d.addr)
	fmt.Printf("search: PostgreSQL filled by an import of the embedded palace's export (REST would take over %s): %d drawers in %s, %.0f drawers/s\n",
		restFillLimit, got, el.Round(time.Second), float64(got)/el.Seconds())
	(*a).stop()
	*a, *db = d, fresh
	return nil
}

// latencies is a timing's percentiles.
type latencies struct{ p50, p95, p99 time.Duration }

// lexicalTimes warms the daemon with 30 queries of one stream, then times
// 500 lexical searches of four words of another, one at a time (the same
// queries on every daemon), answering their percentiles and how many had
// hits.
func lexicalTimes(addr string) (latencies, int, error) {
	query := func(r *rand.Rand) (time.Duration, int, error) {
		q := url.QueryEscape(strings.Join(strings.Fields(sentence(r))[:4], " "))
		t0 := time.Now()
		resp, err := client.Get("http://" + addr + "/api/search?ranking=lexical&q=" + q)
		if err != nil {
			return 0, 0, err
		}
		var out struct {
			Hits []json.RawMessage `json:"hits"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		el := time.Since(t0)
		if resp.StatusCode != http.StatusOK || err != nil {
			return 0, 0, fmt.Errorf("search: status %d %v", resp.StatusCode, err)
		}
		return el, len(out.Hits), nil
	}
	warm := rand.New(rand.NewPCG(9, 9))
	for range 30 {
		if _, _, err := query(warm); err != nil {
			return latencies{}, 0, err
		}
	}
	r := rand.New(rand.NewPCG(21, 21))
	lat := make([]time.Duration, 0, 500)
	withHits := 0
	for range 500 {
		el, hits, err := query(r)
		if err != nil {
			return latencies{}, 0, err
		}
		lat = append(lat, el)
		if hits > 0 {
			withHits++
		}
	}
	return latencies{pct(lat, 0.5), pct(lat, 0.95), pct(lat, 0.99)}, withHits, nil
}

// caughtUp waits until the daemon counts n drawers and its lexical index
// holds them with nothing of the change log left to follow.
func caughtUp(addr string, n int, limit time.Duration) error {
	t0 := time.Now()
	for {
		var st struct {
			Counts struct {
				Drawers int `json:"drawers"`
			} `json:"counts"`
			Indexes struct {
				Lexical struct {
					Behind  uint64 `json:"behind"`
					Drawers uint64 `json:"drawers"`
				} `json:"lexical"`
			} `json:"indexes"`
		}
		err := getJSON(addr, "/api/status", &st)
		if err == nil && st.Counts.Drawers >= n && st.Indexes.Lexical.Behind == 0 && st.Indexes.Lexical.Drawers >= uint64(n) {
			return nil
		}
		if time.Since(t0) > limit {
			return fmt.Errorf("not caught up in %s: %d drawers counted, lexical index %d drawers, %d changes behind (%v)",
				limit, st.Counts.Drawers, st.Indexes.Lexical.Drawers, st.Indexes.Lexical.Behind, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// replicationLag is part 3: 200 writes on daemon A, one at a time, each
// with a word no other drawer holds; B's lexical search is polled for the
// word from A's acknowledgment until it finds the drawer.
func (s *sharedRun) replicationLag() error {
	a, b := s.a, s.b
	if a == nil || b == nil {
		// The search part failed: two daemons on a fresh database.
		db, err := s.database()
		if err != nil {
			return err
		}
		if a, err = s.pgDaemon(db); err != nil {
			return err
		}
		if b, err = s.pgDaemon(db); err != nil {
			return err
		}
	}
	const samples = 200
	r := rand.New(rand.NewPCG(31, 31))
	room := "/api/wings/bench/rooms/lag/drawers"
	var fromAck, fromSend, writeLat []time.Duration
	missed := 0
	for i := range samples {
		word := "zqlag" + letters(uint64(i), 3) + letters(r.Uint64(), 4)
		t0 := time.Now()
		if err := postDrawer(a.addr, room, sentence(r)+" "+word); err != nil {
			return fmt.Errorf("write on A: %w", err)
		}
		ack := time.Now()
		found := false
		for time.Since(ack) < 10*time.Second {
			ok, err := holds(b.addr, word)
			if err != nil {
				return fmt.Errorf("search on B: %w", err)
			}
			if ok {
				found = true
				break
			}
			time.Sleep(time.Millisecond)
		}
		now := time.Now()
		if !found {
			missed++
			if missed >= 5 {
				return fmt.Errorf("%d writes on A not searchable on B within 10 s (of %d)", missed, i+1)
			}
			continue
		}
		writeLat = append(writeLat, ack.Sub(t0))
		fromAck = append(fromAck, now.Sub(ack))
		fromSend = append(fromSend, now.Sub(t0))
	}
	if len(fromAck) == 0 {
		return fmt.Errorf("none of %d writes on A was found on B within 10 s", samples)
	}
	within := 0
	for _, l := range fromAck {
		if l <= time.Second {
			within++
		}
	}
	fmt.Printf("replication lag, write acknowledged on daemon A to searchable on daemon B (B's lexical search polled every ~1 ms), %d samples: p50 %s p99 %s max %s; %d of %d within 1 s; not found within 10 s: %d\n",
		samples, pct(fromAck, 0.5).Round(time.Microsecond), pct(fromAck, 0.99).Round(time.Microsecond), slices.Max(fromAck).Round(time.Microsecond),
		within, samples, missed)
	fmt.Printf("replication lag from the write's request: p50 %s p99 %s (the write itself: p50 %s p99 %s)\n",
		pct(fromSend, 0.5).Round(time.Microsecond), pct(fromSend, 0.99).Round(time.Microsecond),
		pct(writeLat, 0.5).Round(time.Microsecond), pct(writeLat, 0.99).Round(time.Microsecond))
	if missed > 0 {
		return fmt.Errorf("%d of %d writes on A were not searchable on B within 10 s", missed, samples)
	}
	return nil
}

// letters writes the low digits of n in base 26, width of them, with the
// letters a-z (a word the lexical analyser keeps whole).
func letters(n uint64, width int) string {
	b := make([]byte, width)
	for k := range b {
		b[k] = byte('a' + n%26)
		n /= 26
	}
	return string(b)
}

// holds reports whether a lexical search for word finds a drawer holding
// it (its content, not a word of the same stem).
func holds(addr, word string) (bool, error) {
	var out struct {
		Hits []struct {
			Content string `json:"content"`
		} `json:"hits"`
	}
	if err := getJSON(addr, "/api/search?ranking=lexical&q="+url.QueryEscape(word), &out); err != nil {
		return false, err
	}
	for _, h := range out.Hits {
		if strings.Contains(h.Content, word) {
			return true, nil
		}
	}
	return false, nil
}

// sharedJob is what the failover part reads of a job.
type sharedJob struct {
	ID               string     `json:"id"`
	Status           string     `json:"status"`
	Error            string     `json:"error"`
	LeaseOwner       string     `json:"lease_owner"`
	LeaseExpiresAt   *time.Time `json:"lease_expires_at"`
	RecoveryAttempts int        `json:"recovery_attempts"`
	Progress         struct {
		Current int64 `json:"current"`
	} `json:"progress"`
	Result json.RawMessage `json:"result"`
}

// failover is part 4: daemon A alone on a fresh database runs two mine
// jobs of big folders (its background concurrency); daemon B starts; A is
// killed with SIGKILL while both run; each job is timed until it runs
// again (running under another lease owner, or finished) as B reads it.
func (s *sharedRun) failover() error {
	r := rand.New(rand.NewPCG(41, 41))
	var trees []string
	for i := range 2 {
		tree := filepath.Join(s.dir, fmt.Sprintf("failover-tree-%d", i))
		if err := smallTree(tree, 20000, r); err != nil {
			return err
		}
		trees = append(trees, tree)
	}
	db, err := s.database()
	if err != nil {
		return err
	}
	a, err := s.pgDaemon(db)
	if err != nil {
		return err
	}
	var ids []string
	for _, tree := range trees {
		id, err := submitJob(a.addr, map[string]any{"type": "mine", "path": tree})
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	running := func(addr string) (map[string]sharedJob, error) {
		jobs := map[string]sharedJob{}
		for _, id := range ids {
			var j sharedJob
			if err := getJSON(addr, "/api/jobs/"+id, &j); err != nil {
				return nil, err
			}
			jobs[id] = j
		}
		return jobs, nil
	}
	t0 := time.Now()
	for {
		jobs, err := running(a.addr)
		if err != nil {
			return err
		}
		n := 0
		for _, j := range jobs {
			if j.Status == "running" {
				n++
			}
			if j.Status != "running" && j.Status != "queued" {
				return fmt.Errorf("job %s is %s before the kill: %s", j.ID, j.Status, j.Error)
			}
		}
		if n == len(ids) {
			break
		}
		if time.Since(t0) > time.Minute {
			return fmt.Errorf("the mine jobs were not both running on A after a minute: %+v", jobs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, err := s.pgDaemon(db)
	if err != nil {
		return err
	}
	before, err := running(a.addr)
	if err != nil {
		return err
	}
	for _, j := range before {
		if j.Status != "running" {
			return fmt.Errorf("job %s is %s, not running, at the kill (the trees are too small for this machine)", j.ID, j.Status)
		}
	}
	if err := a.cmd.Process.Kill(); err != nil {
		return err
	}
	killed := time.Now()
	<-a.done
	a.stopped = true
	resumed := map[string]time.Duration{}
	after := map[string]sharedJob{}
	for len(resumed) < len(ids) {
		jobs, err := running(b.addr)
		if err != nil {
			return err
		}
		for id, j := range jobs {
			if _, ok := resumed[id]; ok {
				continue
			}
			// Running again: under another lease owner, or recovered (the
			// count moved), or already finished.
			again := j.Status == "running" && ((j.LeaseOwner != "" && j.LeaseOwner != before[id].LeaseOwner) || j.RecoveryAttempts > before[id].RecoveryAttempts)
			if again || j.Status == "completed" {
				resumed[id] = time.Since(killed)
				after[id] = j
			}
			if j.Status == "failed" || j.Status == "cancelled" {
				return fmt.Errorf("job %s %s after the kill: %s", id, j.Status, j.Error)
			}
		}
		if time.Since(killed) > 5*time.Minute {
			return fmt.Errorf("only %d of %d jobs running again 5 minutes after the kill", len(resumed), len(ids))
		}
		time.Sleep(20 * time.Millisecond)
	}
	var worst time.Duration
	for i, id := range ids {
		left := time.Duration(0)
		if e := before[id].LeaseExpiresAt; e != nil {
			left = e.Sub(killed)
		}
		j := after[id]
		fmt.Printf("failover, job %d (a mine of 20,000 files, progress %d at the kill): running again on another daemon %s after A's kill -9 (its lease had %s left; recovery_attempts %d; status %s)\n",
			i+1, before[id].Progress.Current, resumed[id].Round(time.Millisecond), left.Round(time.Millisecond), j.RecoveryAttempts, j.Status)
		worst = max(worst, resumed[id])
	}
	fmt.Printf("failover: kill -9 of a daemon running %d jobs to all running again on another: %s, against jobs.lease_ttl_secs = %d s (%.2fx the TTL)\n",
		len(ids), worst.Round(time.Millisecond), sharedLeaseTTL, worst.Seconds()/sharedLeaseTTL)
	// The resumed jobs finish on B (reported, not timed as failover).
	t1 := time.Now()
	for {
		jobs, err := running(b.addr)
		if err != nil {
			return err
		}
		done := 0
		for _, j := range jobs {
			switch j.Status {
			case "completed":
				done++
			case "failed", "cancelled":
				return fmt.Errorf("job %s %s after resuming: %s", j.ID, j.Status, j.Error)
			}
		}
		if done == len(ids) {
			var created []string
			for _, id := range ids {
				var res mineResult
				json.Unmarshal(jobs[id].Result, &res)
				created = append(created, fmt.Sprintf("%d documents, %d drawers created", res.Documents, res.Created))
			}
			fmt.Printf("failover: both jobs completed on B %s after the kill (%s)\n", time.Since(killed).Round(time.Second), strings.Join(created, "; "))
			return nil
		}
		if time.Since(t1) > time.Minute {
			var progress []string
			for _, id := range ids {
				progress = append(progress, fmt.Sprintf("%s at %d", jobs[id].Status, jobs[id].Progress.Current))
			}
			fmt.Printf("failover: the resumed jobs had not all completed a minute after resuming (%s); not waited for\n", strings.Join(progress, ", "))
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// submitJob submits a job and answers its id.
func submitJob(addr string, body map[string]any) (string, error) {
	b, _ := json.Marshal(body)
	resp, err := client.Post("http://"+addr+"/api/jobs", "application/json", bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var job struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(raw, &job) != nil || job.ID == "" {
		return "", fmt.Errorf("submit a %v job: status %d %.300s", body["type"], resp.StatusCode, raw)
	}
	return job.ID, nil
}

// postDrawer files one drawer; anything but 201 is an error naming the
// answer.
func postDrawer(addr, path, content string) error {
	body, _ := json.Marshal(map[string]string{"content": content})
	resp, err := client.Post("http://"+addr+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		raw, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST %s: status %d %.300s", path, resp.StatusCode, raw)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// loadOver files the drawers from..to-1 with c clients, client w writing
// through addrs[w%len(addrs)], and answers acknowledged writes/s. Drawer
// i's content depends only on seed and i, so two calls with the same seed
// file the same drawers whatever the daemons and interleaving.
func loadOver(addrs []string, path string, from, to, c int, seed uint64) (float64, error) {
	next := atomic.Int64{}
	next.Store(int64(from))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	t0 := time.Now()
	for w := range c {
		addr := addrs[w%len(addrs)]
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(to) {
					return
				}
				if err := postDrawer(addr, path, sentence(rand.New(rand.NewPCG(seed, uint64(i))))); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					next.Store(int64(to))
					return
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return 0, errors.Join(errs...)
	}
	return float64(to-from) / time.Since(t0).Seconds(), nil
}

// backend is the store backend the daemon reports in its status.
func backend(addr string) string {
	var st struct {
		Datastore struct {
			Backend string `json:"backend"`
		} `json:"datastore"`
	}
	_ = getJSON(addr, "/api/status", &st)
	return st.Datastore.Backend
}

// cpuModel is the first "model name" of /proc/cpuinfo ("" elsewhere).
func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// memTotal is the machine's memory from /proc/meminfo.
func memTotal() string {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
			return fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
		}
	}
	return "unknown memory"
}

// loadAverage is the 1, 5 and 15 minute load averages (the machine is
// shared: figures are read against it).
func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// pgVersion is the PostgreSQL server's version line.
func pgVersion() string {
	dir, err := pgtest.Bin()
	if err != nil {
		return "unknown version"
	}
	out, err := exec.Command(filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return "unknown version"
	}
	return strings.TrimSpace(string(out))
}
