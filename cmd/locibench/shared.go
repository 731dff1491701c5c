package main

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
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// sharedConfig is every daemon's configuration in the shared-store runs,
// embedded or not, so that they compare: lexical search only, a
// three-second lease.
const sharedConfig = "[embedding]\ndefault = \"\"\n\n[jobs]\nlease_ttl_secs = 3\n"

// sharedBench is -only shared (issue 31): on a throwaway PostgreSQL
// cluster (pgtest: initdb and pg_ctl in a temporary directory),
//   - durable writes/s over REST with clients clients: one daemon on
//     PostgreSQL against the embedded store, side by side; three daemons
//     on one database together (the clients spread over them);
//   - replication lag: a write acknowledged by one daemon to searchable on
//     another, p50 and p99;
//   - lexical search p50 at fill drawers on a daemon following the shared
//     log, against the embedded store;
//   - failover: a daemon killed -9 with a mine running, to the job resumed
//     on another, against the lease TTL.
func sharedBench(bin, dir string, writes, clients, fill int) error {
	s, err := pgtest.Start()
	if err != nil {
		return fmt.Errorf("starting PostgreSQL: %v (%s)", err, pgtest.Hint)
	}
	defer s.Remove()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(sharedConfig), 0o644); err != nil {
		return err
	}
	var stops []*daemon
	defer func() {
		for _, d := range stops {
			d.stop()
		}
	}()
	n := 0
	// startOn starts a daemon with a palace directory of its own, on
	// database db ("" the embedded store).
	startOn := func(db string, env ...string) (*daemon, error) {
		n++
		env = append(env, "LOCI_CONFIG="+cfg)
		if db != "" {
			env = append(env, "LOCI_DATASTORE_URL="+s.URL(db), "LOCI_DATASTORE_PASSWORD="+pgtest.Password)
		}
		d, _, err := start(bin, filepath.Join(dir, fmt.Sprintf("p%d", n)), env...)
		if err == nil {
			stops = append(stops, d)
		}
		return d, err
	}
	room := "/api/wings/bench/rooms/shared/drawers"

	// Writes per second: embedded, one daemon on PostgreSQL, three.
	emb, err := startOn("")
	if err != nil {
		return err
	}
	embRate, err := load(emb.addr, room, writes, clients, 31)
	if err != nil {
		return err
	}
	db1, err := s.NewDatabase()
	if err != nil {
		return err
	}
	one, err := startOn(db1)
	if err != nil {
		return err
	}
	oneRate, err := load(one.addr, room, writes, clients, 31)
	if err != nil {
		return err
	}
	fmt.Printf("shared store: %d writes, %d clients: embedded %.0f acknowledged writes/s, one daemon on PostgreSQL %.0f/s (%.2fx)\n",
		writes, clients, embRate, oneRate, oneRate/embRate)
	db2, err := s.NewDatabase()
	if err != nil {
		return err
	}
	var three []*daemon
	for range 3 {
		d, err := startOn(db2)
		if err != nil {
			return err
		}
		three = append(three, d)
	}
	threeRate, err := loadMany(three, room, writes, clients, 32)
	if err != nil {
		return err
	}
	fmt.Printf("shared store: three daemons on one database, %d clients spread over them: %.0f acknowledged writes/s in all (one daemon: %.0f/s)\n",
		clients, threeRate, oneRate)

	// Replication lag, A to B, one write at a time.
	var lag []time.Duration
	for i := range 300 {
		a, b := three[i%3], three[(i+1)%3]
		token := fmt.Sprintf("lagq%dx%dq", i, rand.IntN(1<<30))
		token = strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return 'b' + (r - '0')
			}
			return r
		}, token)
		if _, err := post(a.addr, "/api/wings/bench/rooms/lag/drawers", "replication probe "+token); err != nil {
			return err
		}
		t0 := time.Now()
		for {
			found, err := searchFinds(b.addr, token)
			if err != nil {
				return err
			}
			if found {
				lag = append(lag, time.Since(t0))
				break
			}
			if time.Since(t0) > 30*time.Second {
				return fmt.Errorf("a write on one daemon not searchable on another in 30 s")
			}
			time.Sleep(time.Millisecond)
		}
	}
	fmt.Printf("shared store: replication lag, a write acknowledged on one daemon to searchable on another: p50 %s p99 %s (300 writes)\n",
		pct(lag, 0.5).Round(time.Microsecond), pct(lag, 0.99).Round(time.Microsecond))

	// Lexical search at fill drawers: the embedded store against a daemon
	// that follows the shared log (it starts after the fill, and catches
	// up first).
	r := rand.New(rand.NewPCG(31, 3))
	big := "/api/wings/bench/rooms/big/drawers"
	if _, err := load(emb.addr, big, fill, clients, 33); err != nil {
		return err
	}
	embLat, err := searchLatency(emb.addr, r, 500)
	if err != nil {
		return err
	}
	if _, err := load(one.addr, big, fill, clients, 33); err != nil {
		return err
	}
	t0 := time.Now()
	follower, err := startOn(db1)
	if err != nil {
		return err
	}
	for {
		lex, _, _, err := behind(follower.addr)
		if err != nil {
			return err
		}
		if lex == 0 {
			break
		}
		if time.Since(t0) > 30*time.Minute {
			return fmt.Errorf("a new daemon did not catch up with %d drawers in 30 minutes", fill)
		}
		time.Sleep(200 * time.Millisecond)
	}
	caught := time.Since(t0)
	r = rand.New(rand.NewPCG(31, 3))
	folLat, err := searchLatency(follower.addr, r, 500)
	if err != nil {
		return err
	}
	fmt.Printf("shared store: lexical search at %d drawers: embedded p50 %s, a daemon following the shared log p50 %s (%.2fx; it started and caught up in %s)\n",
		fill, pct(embLat, 0.5).Round(time.Microsecond), pct(folLat, 0.5).Round(time.Microsecond),
		float64(pct(folLat, 0.5))/float64(pct(embLat, 0.5)), caught.Round(time.Millisecond))

	// Failover: three trials, each on a database of its own.
	var failovers []time.Duration
	for range 3 {
		d, err := failover(s, startOn)
		if err != nil {
			return err
		}
		failovers = append(failovers, d)
	}
	fmt.Printf("shared store: failover, kill -9 of a daemon running a mine to the job running on another: %s, %s, %s (lease TTL 3 s, reaper every 1 s)\n",
		failovers[0].Round(time.Millisecond), failovers[1].Round(time.Millisecond), failovers[2].Round(time.Millisecond))
	return nil
}

// loadMany is load with the clients spread over several daemons.
func loadMany(ds []*daemon, path string, n, c int, seed uint64) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	t0 := time.Now()
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			addr := ds[w%len(ds)].addr
			for next.Add(1) <= int64(n) {
				if _, err := post(addr, path, sentence(r)); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}

// searchFinds reports whether a lexical search for token answers a hit.
func searchFinds(addr, token string) (bool, error) {
	resp, err := client.Get("http://" + addr + "/api/search?ranking=lexical&limit=1&q=" + url.QueryEscape(token))
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var out struct {
		Hits []json.RawMessage `json:"hits"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return false, err
	}
	return len(out.Hits) > 0, nil
}

// jobState reads a job's status, recovery count and lease owner.
func jobState(addr, id string) (status string, recoveries int, owner string, err error) {
	resp, err := client.Get("http://" + addr + "/api/jobs/" + id)
	if err != nil {
		return "", 0, "", err
	}
	defer resp.Body.Close()
	var j struct {
		Status     string `json:"status"`
		Recoveries int    `json:"recovery_attempts"`
		Owner      string `json:"lease_owner"`
		Progress   struct {
			Current int `json:"current"`
		} `json:"progress"`
	}
	err = json.NewDecoder(resp.Body).Decode(&j)
	if j.Status == "running" && j.Progress.Current == 0 {
		j.Status = "starting"
	}
	return j.Status, j.Recoveries, j.Owner, err
}

// failover times one daemon's kill -9, with a slow mine running on it, to
// the job running again on another daemon.
func failover(s *pgtest.Server, startOn func(db string, env ...string) (*daemon, error)) (time.Duration, error) {
	db, err := s.NewDatabase()
	if err != nil {
		return 0, err
	}
	tree, err := os.MkdirTemp("", "locibench-failover-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tree)
	for i := range 300 {
		if err := os.WriteFile(filepath.Join(tree, fmt.Sprintf("n%03d.md", i)), []byte(fmt.Sprintf("note %d\n", i)), 0o644); err != nil {
			return 0, err
		}
	}
	a, err := startOn(db, "LOCI_TEST_MINE_DELAY=20ms")
	if err != nil {
		return 0, err
	}
	body, _ := json.Marshal(map[string]any{"type": "mine", "path": tree})
	resp, err := http.Post("http://"+a.addr+"/api/jobs", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	var sub struct {
		ID string `json:"id"`
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(raw, &sub); err != nil || sub.ID == "" {
		return 0, fmt.Errorf("submitting a mine: %s", raw)
	}
	for t0 := time.Now(); ; {
		st, _, _, err := jobState(a.addr, sub.ID)
		if err != nil {
			return 0, err
		}
		if st == "running" {
			break
		}
		if time.Since(t0) > time.Minute {
			return 0, fmt.Errorf("the mine did not start: %s", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, err := startOn(db)
	if err != nil {
		return 0, err
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return 0, err
	}
	a.stopped = true
	<-a.done
	killed := time.Now()
	for {
		st, rec, owner, err := jobState(b.addr, sub.ID)
		if err != nil {
			return 0, err
		}
		if rec > 0 && (st == "running" || st == "completed") && owner != "" || st == "completed" {
			return time.Since(killed), nil
		}
		if time.Since(killed) > time.Minute {
			return 0, fmt.Errorf("the job was not resumed in a minute: %s", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
