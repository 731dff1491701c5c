package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/loci-dev/loci/index/embed"
)

// staticBench measures the built-in static profile on a palace with no
// configuration: fill drawers, time from the last one filed until every
// one is semantically searchable (vector index caught up), the embed
// jobs' own pace, the query embedding, and search latency for every
// ranking with everything on (one client, after a warm-up).
func staticBench(bin, dir string, fill, clients int) error {
	st, err := embed.NewStatic()
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(11, 11))
	qs := make([]string, 2000)
	for i := range qs {
		qs[i] = sentence(r)
	}
	t0 := time.Now()
	for _, q := range qs {
		if _, err := st.Embed(context.Background(), []string{q}); err != nil {
			return err
		}
	}
	fmt.Printf("static: a query embedded in %s (mean of %d sentences, one core, no IDF source)\n", (time.Since(t0) / time.Duration(len(qs))).Round(100*time.Nanosecond), len(qs))

	d, _, err := start(bin, filepath.Join(dir, "static"))
	if err != nil {
		return err
	}
	defer d.stop()
	t0 = time.Now()
	if _, err := load(d.addr, "/api/wings/bench/rooms/big/drawers", fill, clients, 12); err != nil {
		return err
	}
	filed := time.Since(t0)
	t1 := time.Now()
	for {
		var s struct {
			Indexes struct {
				Lexical struct{ Behind int }
				Vectors map[string]struct{ Behind, Drawers int }
			}
		}
		if err := getJSON(d.addr, "/api/status", &s); err != nil {
			return err
		}
		if v := s.Indexes.Vectors["static"]; v.Drawers >= fill && v.Behind == 0 {
			break
		}
		if time.Since(t1) > 30*time.Minute {
			return fmt.Errorf("the static index did not catch up in 30 minutes: %+v", s.Indexes)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("static: %d drawers filed in %s; all semantically searchable %s after the last was filed\n", fill, filed.Round(time.Second), time.Since(t1).Round(100*time.Millisecond))
	var jobs embedJobs
	if err := getJSON(d.addr, "/api/jobs?kind=embed&status=completed&limit=200", &jobs); err != nil {
		return err
	}
	n, busy := jobs.total()
	fmt.Printf("static: embed jobs embedded and stored %d drawers in %d jobs, %.0f drawers/s while running\n", n, len(jobs.Jobs), float64(n)/busy.Seconds())
	if w := idle(d.cmd.Process.Pid, 5*time.Minute); w > 0 {
		fmt.Printf("static: the daemon's background work took %s more\n", w.Round(time.Second))
	}
	if err := searchLatencies(d, fill, r); err != nil {
		return err
	}
	// A switch of the default profile on the filled palace: one embed job
	// builds the new profile's vectors for every drawer (its pace alone),
	// while searches use the old one.
	d.stop()
	d, err = startConfigured(bin, filepath.Join(dir, "static"), filepath.Join(dir, "static2.toml"),
		"[embedding]\ndefault = \"static2\"\n[embedding.profiles.static2]\nprovider = \"static\"\n")
	if err != nil {
		return err
	}
	defer d.stop()
	t2 := time.Now()
	for {
		var s struct {
			Indexes struct {
				Serving string
				Switch  *struct{ Embedded, Total int }
			}
		}
		if err := getJSON(d.addr, "/api/status", &s); err != nil {
			return err
		}
		if s.Indexes.Serving == "static2" && s.Indexes.Switch == nil {
			break
		}
		if time.Since(t2) > 30*time.Minute {
			return fmt.Errorf("the switch did not end in 30 minutes: %+v", s.Indexes)
		}
		time.Sleep(100 * time.Millisecond)
	}
	switched := time.Since(t2)
	if err := getJSON(d.addr, "/api/jobs?kind=embed&status=completed&limit=1", &jobs); err != nil {
		return err
	}
	if len(jobs.Jobs) > 0 {
		j := jobs.Jobs[0]
		fmt.Printf("static: switching the default profile re-embedded %d drawers in one embed job at %.0f drawers/s; the new profile served %s after the restart\n",
			j.Result.Embedded, float64(j.Result.Embedded)/j.FinishedAt.Sub(j.StartedAt).Seconds(), switched.Round(100*time.Millisecond))
	}
	return nil
}

// searchLatencies times every ranking over REST, one client, after a
// warm-up, the query embedded by the daemon.
func searchLatencies(d *daemon, fill int, r *rand.Rand) error {
	for _, ranking := range []string{"lexical", "semantic", "hybrid", "auto"} {
		warm := rand.New(rand.NewPCG(9, 9))
		for range 30 {
			_ = getJSON(d.addr, "/api/search?ranking="+ranking+"&q="+url.QueryEscape(strings.Join(strings.Fields(sentence(warm))[:4], " ")), nil)
		}
		var lat []time.Duration
		for range 300 {
			q := strings.Join(strings.Fields(sentence(r))[:4], " ")
			t := time.Now()
			if err := getJSON(d.addr, "/api/search?ranking="+ranking+"&q="+url.QueryEscape(q), nil); err != nil {
				return err
			}
			lat = append(lat, time.Since(t))
		}
		fmt.Printf("static: %s search over REST, %d drawers, whole palace, query embedded by the daemon: p50 %s p99 %s (300 queries, one client)\n",
			ranking, fill, pct(lat, 0.5).Round(time.Microsecond), pct(lat, 0.99).Round(time.Microsecond))
	}
	return nil
}

// embedJobs is a list of embed jobs as GET /api/jobs gives it.
type embedJobs struct {
	Jobs []struct {
		StartedAt  time.Time `json:"started_at"`
		FinishedAt time.Time `json:"finished_at"`
		Result     struct {
			Embedded int `json:"embedded"`
		} `json:"result"`
	} `json:"jobs"`
}

// total is the drawers the jobs embedded and the time they ran.
func (e embedJobs) total() (n int, busy time.Duration) {
	for _, j := range e.Jobs {
		n += j.Result.Embedded
		busy += j.FinishedAt.Sub(j.StartedAt)
	}
	return n, busy
}

// getJSON GETs path and decodes the answer into out (nil: discard).
func getJSON(addr, path string, out any) error {
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %d %.200s", path, resp.StatusCode, b)
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
