package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
)

func TestHashIsDeterministicAndSimilar(t *testing.T) {
	h := Hash{Dim: 64}
	v, _ := h.Embed(context.Background(), []string{"Deploys happen on Fridays", "deploys happen on fridays!", "lunch menu"})
	for i := range v[0] {
		if v[0][i] != v[1][i] {
			t.Fatal("case and punctuation changed the hash vector")
		}
	}
	same := 0
	for i := range v[0] {
		if v[0][i] != 0 && v[2][i] != 0 {
			same++
		}
	}
	if same > 2 {
		t.Fatalf("unrelated texts share %d buckets", same)
	}
}

func TestHTTPOpenAIAndOllamaWithRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.Header.Get("Authorization") != "Bearer sekrit-key-for-tests" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		var in struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &in)
		if n == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable) // retried
			return
		}
		if r.URL.Path == "/api/embed" {
			out := map[string]any{"embeddings": [][]float32{}}
			var vs [][]float32
			for i := range in.Input {
				vs = append(vs, []float32{float32(i), 1, 0})
			}
			out["embeddings"] = vs
			json.NewEncoder(w).Encode(out)
			return
		}
		var data []map[string]any
		for i := len(in.Input) - 1; i >= 0; i-- { // out of order, by index
			data = append(data, map[string]any{"index": i, "embedding": []float32{float32(i), 1, 0}})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer srv.Close()
	t.Setenv("LOCI_TEST_EMBED_KEY", "sekrit-key-for-tests")
	for _, format := range []string{"openai", "ollama"} {
		t.Run(format, func(t *testing.T) {
			calls.Store(0)
			path := "/v1/embeddings"
			if format == "ollama" {
				path = "/api/embed"
			}
			cfg := map[string]Settings{"p": {Provider: "http", Format: format, URL: srv.URL + path, Model: "m", Dimension: 3, KeyEnv: "LOCI_TEST_EMBED_KEY", BatchSize: 2, TimeoutSecs: 30}}
			ps, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := ps["p"].EmbedChecked(context.Background(), []string{"a", "b", "c"})
			if err != nil {
				t.Fatalf("%v", err)
			}
			if len(vs) != 3 || vs[1][0] != 1 || vs[2][0] != 0 {
				t.Fatalf("vectors %v", vs)
			}
		})
	}
	// Wrong dimension.
	cfg := map[string]Settings{"p": {Provider: "http", Format: "openai", URL: srv.URL + "/v1/embeddings", Model: "m", Dimension: 5, KeyEnv: "LOCI_TEST_EMBED_KEY", BatchSize: 32, TimeoutSecs: 30}}
	ps, _ := Open(cfg)
	calls.Store(1)
	if _, err := ps["p"].EmbedChecked(context.Background(), []string{"a"}); !fault.Is(err, fault.EmbedDimensionMismatch) {
		t.Fatalf("dimension: %v", err)
	}
	// A missing key is not_configured; a refusal is failed, not retried forever.
	cfg["p"] = Settings{Provider: "http", Format: "openai", URL: srv.URL + "/v1/embeddings", Model: "m", Dimension: 3, KeyEnv: "LOCI_TEST_EMBED_UNSET", BatchSize: 32, TimeoutSecs: 30}
	ps, _ = Open(cfg)
	if _, err := ps["p"].EmbedChecked(context.Background(), []string{"a"}); !fault.Is(err, fault.EmbedNotConfigured) {
		t.Fatalf("missing key: %v", err)
	}
	cfg["p"] = Settings{Provider: "http", Format: "openai", URL: srv.URL + "/v1/embeddings", Model: "m", Dimension: 3, BatchSize: 32, TimeoutSecs: 30}
	ps, _ = Open(cfg)
	calls.Store(1)
	if _, err := ps["p"].EmbedChecked(context.Background(), []string{"a"}); !fault.Is(err, fault.EmbedFailed) {
		t.Fatalf("refused: %v", err)
	}
}

// TestHelperProcess is the command provider of TestCommand.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("LOCI_EMBED_HELPER") == "" {
		return
	}
	var in struct {
		Input []string `json:"input"`
	}
	json.NewDecoder(os.Stdin).Decode(&in)
	if os.Getenv("LOCI_EMBED_HELPER") == "sleep" {
		// A provider that hangs: far longer than the timeout the test
		// gives it, so only the timeout can end it.
		time.Sleep(10 * time.Second)
	}
	var vs [][]float32
	for _, s := range in.Input {
		vs = append(vs, []float32{float32(len(s)), 1})
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"embeddings": vs})
	os.Exit(0)
}

func TestCommand(t *testing.T) {
	argv := []string{os.Args[0], "-test.run=TestHelperProcess"}
	t.Setenv("LOCI_EMBED_HELPER", "1")
	c := &Command{Argv: argv, Timeout: 10 * time.Second}
	vs, err := c.Embed(context.Background(), []string{"abc", "de"})
	if err != nil || len(vs) != 2 || vs[0][0] != 3 || vs[1][0] != 2 {
		t.Fatalf("command: %v %v", vs, err)
	}
	t.Setenv("LOCI_EMBED_HELPER", "sleep")
	c.Timeout = 300 * time.Millisecond
	if _, err := c.Embed(context.Background(), []string{"x"}); err == nil || !errors.Is(err, err) {
		t.Fatal("a command over its timeout answered")
	} else if got := fmt.Sprint(err); got == "" {
		t.Fatal("no reason")
	}
}

// Open builds each profile by its settings and refuses what it cannot
// run: an unknown provider, a static profile of another dimension, and a
// batch size or timeout under 1 (a zero batch size would never advance
// through the texts).
func TestOpen(t *testing.T) {
	ok := Settings{Provider: "hash", Model: "m", Dimension: 8, BatchSize: 2, TimeoutSecs: 1, Pipeline: "text-v1"}
	ps, err := Open(map[string]Settings{"h": ok})
	if err != nil {
		t.Fatal(err)
	}
	p := ps["h"]
	if p.Name != "h" || p.Identity() != (Identity{Provider: "hash", Model: "m", Dimension: 8, Pipeline: "text-v1"}) {
		t.Fatalf("profile %s, identity %+v", p.Name, p.Identity())
	}
	if vs, err := p.EmbedChecked(t.Context(), []string{"a", "b", "c"}); err != nil || len(vs) != 3 {
		t.Fatalf("embedded %d vectors: %v", len(vs), err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Settings)
	}{
		{"unknown provider", func(s *Settings) { s.Provider = "telepathy" }},
		{"static of another dimension", func(s *Settings) { s.Provider = "static" }},
		{"zero batch size", func(s *Settings) { s.BatchSize = 0 }},
		{"zero timeout", func(s *Settings) { s.TimeoutSecs = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.edit(&s)
			if _, err := Open(map[string]Settings{"h": s}); !fault.Is(err, fault.ConfigInvalid) {
				t.Fatalf("Open: %v, want %s", err, fault.ConfigInvalid)
			}
		})
	}
}
