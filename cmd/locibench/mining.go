package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// mining measures the mine job against a real daemon with embedding off
// (the targets of issue 13): a tree of small text files mined, then mined
// again unchanged, and a tree of large files (MB/s); then the small tree
// once more into a fresh palace with the default configuration (the
// built-in static embeddings), until every drawer is also embedded.
func mining(bin, dir string, small, bigMB int) error {
	r := rand.New(rand.NewPCG(13, 13))
	tree := filepath.Join(dir, "small")
	if err := smallTree(tree, small, r); err != nil {
		return err
	}
	big := filepath.Join(dir, "big")
	if err := os.MkdirAll(big, 0o755); err != nil {
		return err
	}
	const perFile = 1900 << 10 // under the 2 MiB default max_file_bytes
	written := 0
	for i := 0; written < bigMB<<20; i++ {
		var b strings.Builder
		for b.Len() < perFile {
			for range 4 {
				b.WriteString(sentence(r))
				b.WriteString(" ")
			}
			b.WriteString("\n\n")
		}
		if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("book%03d.txt", i)), []byte(b.String()), 0o644); err != nil {
			return err
		}
		written += b.Len()
	}
	d, err := startConfigured(bin, filepath.Join(dir, "p"), filepath.Join(dir, "off.toml"), "[embedding]\ndefault = \"\"\n")
	if err != nil {
		return err
	}
	defer d.stop()
	for _, c := range []struct {
		what, path string
		full       bool
	}{{"small", tree, false}, {"unchanged", tree, false}, {"unchanged, full", tree, true}, {"big", big, false}} {
		t0 := time.Now()
		res, err := mineJob(d.addr, c.path, c.full)
		if err != nil {
			return err
		}
		el := time.Since(t0)
		switch c.what {
		case "small":
			fmt.Printf("mining %d small files: %s, %.0f files/s (%d drawers created; target >= 2,000 files/s)\n",
				res.Documents, el.Round(time.Millisecond), float64(res.Documents)/el.Seconds(), res.Created)
		case "unchanged":
			fmt.Printf("mining the same %d files again, unchanged: %s (%d documents past the cursor; target < 2 s)\n",
				small, el.Round(time.Millisecond), res.Documents)
		case "unchanged, full":
			fmt.Printf("mining the same %d files again with full (every file read and compared): %s, %d unchanged\n",
				small, el.Round(time.Millisecond), res.Unchanged)
		case "big":
			fmt.Printf("mining %d large files, %.0f MB: %s, %.1f MB/s (%d drawers; target >= 50 MB/s)\n",
				res.Documents, float64(res.Bytes)/1e6, el.Round(time.Millisecond), float64(res.Bytes)/1e6/el.Seconds(), res.Created)
		}
	}
	d.stop()

	// The default configuration: the same small tree, embedded as it is mined.
	e, err := startConfigured(bin, filepath.Join(dir, "p2"), filepath.Join(dir, "default.toml"), "")
	if err != nil {
		return err
	}
	defer e.stop()
	t0 := time.Now()
	res, err := mineJob(e.addr, tree, false)
	if err != nil {
		return err
	}
	mined := time.Since(t0)
	for embedded(e.addr, "static") < res.Created {
		if time.Since(t0) > 10*time.Minute {
			return fmt.Errorf("only %d of %d drawers embedded after 10 minutes", embedded(e.addr, "static"), res.Created)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("mining %d small files with the default configuration (static embeddings): %s, %.0f files/s; all %d drawers embedded and in the vector index %s after the start\n",
		res.Documents, mined.Round(time.Millisecond), float64(res.Documents)/mined.Seconds(), res.Created, time.Since(t0).Round(time.Millisecond))
	return nil
}

// smallTree writes n small text files of three to seven sentences into
// 200 folders under tree.
func smallTree(tree string, n int, r *rand.Rand) error {
	for i := range n {
		p := filepath.Join(tree, fmt.Sprintf("pkg%03d", i%200), fmt.Sprintf("file%05d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		var b strings.Builder
		for range 3 + i%5 {
			b.WriteString(sentence(r))
			b.WriteString("\n")
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// embedded is the number of drawers in the profile's vector index (0 when
// the daemon cannot say).
func embedded(addr, profile string) int {
	var st struct {
		Indexes struct {
			Vectors map[string]struct{ Drawers int }
		}
	}
	_ = getJSON(addr, "/api/status", &st)
	return st.Indexes.Vectors[profile].Drawers
}

type mineResult struct {
	Documents int   `json:"documents"`
	Created   int   `json:"created"`
	Unchanged int   `json:"unchanged"`
	Bytes     int64 `json:"bytes"`
	Filtered  int   `json:"filtered"`
	Redacted  int   `json:"redacted"`
}

// mineJob submits a mine job and waits for its result.
func mineJob(addr, path string, full bool) (*mineResult, error) {
	return mineBody(addr, map[string]any{"type": "mine", "path": path, "full": full})
}

// mineBody submits a mine job of that body and waits for its result.
func mineBody(addr string, job0 map[string]any) (*mineResult, error) {
	body, _ := json.Marshal(job0)
	resp, err := http.Post("http://"+addr+"/api/jobs", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	var job struct {
		ID     string          `json:"id"`
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	err = json.NewDecoder(resp.Body).Decode(&job)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusAccepted {
		return nil, fmt.Errorf("submit a mine: status %d %v", resp.StatusCode, err)
	}
	for {
		resp, err := http.Get("http://" + addr + "/api/jobs/" + job.ID)
		if err != nil {
			return nil, err
		}
		err = json.NewDecoder(resp.Body).Decode(&job)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		switch job.Status {
		case "completed":
			var res mineResult
			return &res, json.Unmarshal(job.Result, &res)
		case "failed", "cancelled":
			return nil, fmt.Errorf("mine job %s %s: %s", job.ID, job.Status, job.Error)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
