package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// catchUp times searches right after a burst of writes (issue 38, point
// 8): the first search, the next 200 while the indexes catch up (the
// vectors of the burst are still being made and applied), and 200 once
// they have, all with the default ranking (auto: lexical and the built-in
// semantic profile). It reads where the indexes stood after the searches.
func catchUp(addr string, writes int) error {
	r := rand.New(rand.NewPCG(38, 8))
	query := func() (time.Duration, error) {
		q := url.QueryEscape(strings.Join(strings.Fields(sentence(r))[:4], " "))
		t0 := time.Now()
		resp, err := client.Get("http://" + addr + "/api/search?q=" + q)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("search: status %d", resp.StatusCode)
		}
		return time.Since(t0), nil
	}
	first, err := query()
	if err != nil {
		return err
	}
	var during []time.Duration
	for range 200 {
		el, err := query()
		if err != nil {
			return err
		}
		during = append(during, el)
	}
	lex, vec, vecs, err := behind(addr)
	if err != nil {
		return err
	}
	fmt.Printf("search right after %d writes: first %s, next 200 p50 %s p99 %s (then the lexical index was %d changes behind, the vectors %d, holding %d vectors)\n",
		writes, first.Round(time.Microsecond), pct(during, 0.5).Round(time.Microsecond), pct(during, 0.99).Round(time.Microsecond), lex, vec, vecs)
	t0 := time.Now()
	for lex > 0 || vec > 0 || vecs < uint64(writes) {
		if time.Since(t0) > 5*time.Minute {
			return fmt.Errorf("the indexes did not catch up in 5 minutes (lexical %d behind, vectors %d behind, %d vectors)", lex, vec, vecs)
		}
		time.Sleep(500 * time.Millisecond)
		if lex, vec, vecs, err = behind(addr); err != nil {
			return err
		}
	}
	var after []time.Duration
	for range 200 {
		el, err := query()
		if err != nil {
			return err
		}
		after = append(after, el)
	}
	fmt.Printf("search once caught up (%s later): p50 %s p99 %s (200 queries)\n", time.Since(t0).Round(time.Second),
		pct(after, 0.5).Round(time.Microsecond), pct(after, 0.99).Round(time.Microsecond))
	return nil
}

// behind reads how far the lexical index and the first vector index are
// behind the change log, and how many vectors that index holds.
func behind(addr string) (lex, vec, vecs uint64, err error) {
	resp, err := client.Get("http://" + addr + "/api/status")
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	var st struct {
		Indexes struct {
			Lexical struct {
				Behind uint64 `json:"behind"`
			} `json:"lexical"`
			Vectors map[string]struct {
				Behind  uint64 `json:"behind"`
				Drawers uint64 `json:"drawers"`
			} `json:"vectors"`
		} `json:"indexes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, 0, 0, err
	}
	for _, v := range st.Indexes.Vectors {
		vec, vecs = v.Behind, v.Drawers
		break
	}
	return st.Indexes.Lexical.Behind, vec, vecs, nil
}

// catchUpBench is -only catchup: the throughput run's burst of writes into
// a fresh palace, then catchUp.
func catchUpBench(bin, dir string, writes, clients int) error {
	d, _, err := start(bin, filepath.Join(dir, "catchup"))
	if err != nil {
		return err
	}
	defer d.stop()
	rate, err := load(d.addr, "/api/wings/bench/rooms/throughput/drawers", writes, clients, 1)
	if err != nil {
		return err
	}
	fmt.Printf("burst: %d writes, %d clients: %.0f acknowledged writes/s\n", writes, clients, rate)
	return catchUp(d.addr, writes)
}
