package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// registryBench measures the source registries against a real daemon
// (issue 30): a search over a 1,000-entry index served on loopback, the
// index revalidated at each search (ETag), p50 and p95 over n searches;
// then installs of a 5 MB package from a folder registry, fetched and
// verified (size, SHA-256, manifest) each time.
func registryBench(bin, dir string, n int) error {
	web := filepath.Join(dir, "web")
	if err := os.MkdirAll(web, 0o755); err != nil {
		return err
	}
	type rel struct {
		Version  string `json:"version"`
		Archive  string `json:"archive"`
		SHA256   string `json:"sha256"`
		Size     int64  `json:"size"`
		Contract int    `json:"contract"`
		Loci     string `json:"loci,omitempty"`
	}
	type src struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Versions    []rel  `json:"versions"`
	}
	ix := struct {
		Version int   `json:"version"`
		Sources []src `json:"sources"`
	}{Version: 1}
	for i := range 1000 {
		name := fmt.Sprintf("source-%04d", i)
		ix.Sources = append(ix.Sources, src{Name: name, Description: "the " + name + " source of some service's documents",
			Versions: []rel{{"1.1.0", name + "/" + name + "-1.1.0.tar.gz", strings.Repeat("ab", 32), 40000, 1, ">= 0.1.0"},
				{"1.0.0", name + "/" + name + "-1.0.0.tar.gz", strings.Repeat("cd", 32), 39000, 1, ""}}})
	}
	b, _ := json.MarshalIndent(ix, "", "  ")
	if err := os.WriteFile(filepath.Join(web, "index.json"), b, 0o644); err != nil {
		return err
	}
	fi, _ := os.Stat(filepath.Join(web, "index.json"))
	etag := fmt.Sprintf(`"%d-%d"`, fi.Size(), fi.ModTime().UnixNano())
	files := http.FileServer(http.Dir(web))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()

	// The 5 MB package: a module that does not compress, packed and
	// indexed by loci itself.
	proj := filepath.Join(dir, "big")
	local := filepath.Join(dir, "local")
	for _, d := range []string{proj, local} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	mod := make([]byte, 5<<20)
	_, _ = rand.Read(mod)
	copy(mod, "\x00asm\x01\x00\x00\x00")
	if err := os.WriteFile(filepath.Join(proj, "big.wasm"), mod, 0o644); err != nil {
		return err
	}
	manifest := "contract = 1\nname = \"big\"\nversion = \"1.0.0\"\ndescription = \"a large source\"\nmodule = \"big.wasm\"\n"
	if err := os.WriteFile(filepath.Join(proj, "loci-source.toml"), []byte(manifest), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"source", "package", proj, "--out", filepath.Join(local, "big-1.0.0.tar.gz")}, {"source", "index", local}} {
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("loci %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	arc, _ := os.Stat(filepath.Join(local, "big-1.0.0.tar.gz"))

	d, err := startConfigured(bin, filepath.Join(dir, "p"), filepath.Join(dir, "reg.toml"),
		fmt.Sprintf("[embedding]\ndefault = \"\"\n[mining]\nregistries = [\"web=%s/\", \"local=%s\"]\n", srv.URL, local))
	if err != nil {
		return err
	}
	defer d.stop()
	var first time.Duration
	var lat []time.Duration
	for i := range n + 1 {
		t0 := time.Now()
		var out struct {
			Entries []json.RawMessage `json:"entries"`
		}
		if err := getJSON(d.addr, "/api/source-registry/search?registry=web&q=source-0"+fmt.Sprint(i%10), &out); err != nil {
			return err
		}
		el := time.Since(t0)
		if len(out.Entries) != 100 {
			return fmt.Errorf("the search found %d entries, want 100", len(out.Entries))
		}
		if i == 0 {
			first = el
			continue
		}
		lat = append(lat, el)
	}
	fmt.Printf("registry search over a 1,000-entry index on loopback: first (download) %s; revalidated p50 %s, p95 %s over %d searches (target p50 < 50ms)\n",
		first.Round(time.Microsecond), pct(lat, 0.5).Round(time.Microsecond), pct(lat, 0.95).Round(time.Microsecond), n)

	var inst []time.Duration
	for range 5 {
		body := []byte(`{"name":"big","registry":"local"}`)
		t0 := time.Now()
		resp, err := client.Post("http://"+d.addr+"/api/source-registry/install", "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		el := time.Since(t0)
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
			return fmt.Errorf("install: %d %.300s", resp.StatusCode, raw)
		}
		inst = append(inst, el)
	}
	fmt.Printf("registry install of a %.1f MB package from a folder registry (fetched, size and SHA-256 checked, manifest matched, installed): p50 %s, max %s over 5 (target < 1s)\n",
		float64(arc.Size())/(1<<20), pct(inst, 0.5).Round(time.Millisecond), pct(inst, 1).Round(time.Millisecond))
	return nil
}
