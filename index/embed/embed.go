// Package embed turns text into vectors for an embedding profile. A
// Provider is anything with Embed; the profile (provider, model,
// dimension, pipeline) is recorded with every vector so that vectors of
// another profile or pipeline are never mixed into its search. Providers:
// static (built in, the default: GloVe word vectors weighted by the
// palace's IDF, static.go), http (OpenAI-compatible /v1/embeddings, Ollama /api/embed), command (a
// program, JSON in and out, no shell) and hash (deterministic, for tests
// only).
package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
	"unicode"

	"github.com/cenkalti/backoff/v4"

	"github.com/loci-dev/loci/fault"
)

// Provider embeds a batch of texts, one vector per text, in order.
type Provider interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Settings are one profile's settings, with their defaults filled in by
// the caller (the daemon converts the configuration's embedding section:
// actors.EmbedSettings). The package reads no configuration of its own.
type Settings struct {
	// Provider is static (the built-in word vectors), http, command or
	// hash.
	Provider string
	// Format of an http provider: openai or ollama.
	Format string
	URL    string
	Model  string
	// Dimension of the vectors.
	Dimension int
	// KeyEnv names the environment variable holding an http provider's
	// API key, KeyFile a file holding it; the key is read at each call.
	KeyEnv  string
	KeyFile string
	// Command is a command provider's program and arguments (no shell).
	Command []string
	// BatchSize is the texts per provider call (at least 1).
	BatchSize int
	// TimeoutSecs bounds a provider call (at least 1).
	TimeoutSecs int
	// Pipeline names the text preparation, recorded with every vector.
	Pipeline string
}

// Profile is a configured profile with its provider.
type Profile struct {
	Name string
	Settings
	Provider Provider
}

// Identity is what a stored vector records of the profile that made it.
type Identity struct {
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	Dimension int    `json:"dimension"`
	Pipeline  string `json:"pipeline"`
}

// Identity of this profile's vectors.
func (p *Profile) Identity() Identity {
	return Identity{Provider: p.Settings.Provider, Model: p.Model, Dimension: p.Dimension, Pipeline: p.Pipeline}
}

// SetDocFreqs gives every static profile the palace's document
// frequencies (the lexical index) to weigh words by.
func SetDocFreqs(profiles map[string]*Profile, df DocFreqs) {
	for _, p := range profiles {
		if st, ok := p.Provider.(*Static); ok {
			st.DF = df
		}
	}
}

// Open builds every profile, by name. A batch size or timeout under 1 is
// refused (the configuration's defaults fill them in).
func Open(profiles map[string]Settings) (map[string]*Profile, error) {
	out := map[string]*Profile{}
	for name, pc := range profiles {
		if pc.BatchSize < 1 || pc.TimeoutSecs < 1 {
			return nil, fault.Newf(fault.ConfigInvalid, "set both to at least 1, or leave them unset",
				"embedding.profiles.%s: batch_size %d and timeout_secs %d must be at least 1", name, pc.BatchSize, pc.TimeoutSecs)
		}
		p := &Profile{Name: name, Settings: pc}
		switch pc.Provider {
		case "hash":
			p.Provider = Hash{Dim: pc.Dimension}
		case "static":
			if pc.Dimension != StaticDim {
				return nil, fault.Newf(fault.ConfigInvalid, fmt.Sprintf("leave it unset (the static provider's vectors have %d values)", StaticDim),
					"embedding.profiles.%s.dimension: %d", name, pc.Dimension)
			}
			st, err := NewStatic()
			if err != nil {
				return nil, fault.Wrap(fault.EmbedNotConfigured, err, "the built-in word vectors cannot be read: "+err.Error(), "this binary is damaged; reinstall loci")
			}
			p.Provider = st
		case "http":
			p.Provider = &HTTP{URL: pc.URL, Model: pc.Model, Format: pc.Format, KeyEnv: pc.KeyEnv, KeyFile: pc.KeyFile,
				Timeout: time.Duration(pc.TimeoutSecs) * time.Second, Client: &http.Client{}}
		case "command":
			p.Provider = &Command{Argv: pc.Command, Model: pc.Model, Timeout: time.Duration(pc.TimeoutSecs) * time.Second}
		default:
			return nil, fault.Newf(fault.ConfigInvalid, "use static, http, command or hash", "embedding.profiles.%s.provider: %q", name, pc.Provider)
		}
		out[name] = p
	}
	return out, nil
}

// EmbedChecked embeds texts in batches of the profile's size and checks
// every vector's length.
func (p *Profile) EmbedChecked(ctx context.Context, texts []string) ([][]float32, error) {
	var out [][]float32
	for start := 0; start < len(texts); start += p.BatchSize {
		batch := texts[start:min(start+p.BatchSize, len(texts))]
		vs, err := p.Provider.Embed(ctx, batch)
		if err != nil {
			var fe *fault.Error
			if errors.As(err, &fe) {
				return nil, err
			}
			return nil, fault.Wrap(fault.EmbedFailed, err, fmt.Sprintf("embedding profile %s failed: %v", p.Name, err),
				"check that the provider is up and configured; the embed job can be retried")
		}
		if len(vs) != len(batch) {
			return nil, fault.Newf(fault.EmbedFailed, "check the provider", "profile %s returned %d vectors for %d texts", p.Name, len(vs), len(batch))
		}
		for _, v := range vs {
			if len(v) != p.Dimension {
				return nil, fault.Newf(fault.EmbedDimensionMismatch, "set embedding.profiles."+p.Name+".dimension to the model's",
					"profile %s returned a vector of %d values; the profile has %d", p.Name, len(v), p.Dimension)
			}
		}
		out = append(out, vs...)
	}
	return out, nil
}

// Hash is a deterministic test provider: a signed, hashed bag of words and
// word pairs. It is never a default.
type Hash struct{ Dim int }

// Embed implements Provider.
func (h Hash) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, h.Dim)
		words := strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		add := func(s string, w float32) {
			f := fnv.New64a()
			f.Write([]byte(s))
			x := f.Sum64()
			sign := float32(1)
			if x&1 == 1 {
				sign = -1
			}
			v[int(x>>1)%h.Dim] += sign * w
		}
		for j, w := range words {
			add(w, 1)
			if j > 0 {
				add(words[j-1]+" "+w, 0.5)
			}
		}
		if len(words) == 0 {
			v[0] = 1
		}
		out[i] = v
	}
	return out, nil
}

// HTTP calls an OpenAI-compatible /v1/embeddings endpoint or Ollama's
// /api/embed, with retries on transport errors and 5xx/429 answers.
type HTTP struct {
	URL, Model, Format string
	KeyEnv, KeyFile    string
	Timeout            time.Duration
	Client             *http.Client
}

func (h *HTTP) key() (string, error) {
	switch {
	case h.KeyEnv != "":
		k, ok := os.LookupEnv(h.KeyEnv)
		if !ok || k == "" {
			return "", fault.Newf(fault.EmbedNotConfigured, "export "+h.KeyEnv+" in the daemon's environment", "the API key variable %s is not set", h.KeyEnv)
		}
		return k, nil
	case h.KeyFile != "":
		b, err := os.ReadFile(h.KeyFile)
		if err != nil {
			return "", fault.Wrap(fault.EmbedNotConfigured, err, "the API key file cannot be read", "check key_file")
		}
		return strings.TrimSpace(string(b)), nil
	}
	return "", nil
}

// Embed implements Provider.
func (h *HTTP) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	key, err := h.key()
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(map[string]any{"model": h.Model, "input": texts})
	var out [][]float32
	op := func() error {
		cctx, cancel := context.WithTimeout(ctx, h.Timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(cctx, http.MethodPost, h.URL, bytes.NewReader(body))
		if err != nil {
			return backoff.Permanent(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := h.Client.Do(req)
		if err != nil {
			return err // transport: retry
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
		if err != nil {
			return err
		}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			return fmt.Errorf("the provider answered %d", resp.StatusCode)
		}
		if resp.StatusCode != http.StatusOK {
			return backoff.Permanent(fmt.Errorf("the provider answered %d: %.200s", resp.StatusCode, raw))
		}
		out, err = decodeVectors(raw, h.Format)
		if err != nil {
			return backoff.Permanent(err)
		}
		return nil
	}
	b := backoff.WithContext(backoff.WithMaxRetries(backoff.NewExponentialBackOff(backoff.WithInitialInterval(200*time.Millisecond)), 3), ctx)
	if err := backoff.Retry(op, b); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeVectors reads {"data": [{"embedding": [...], "index": i}]}
// (OpenAI) or {"embeddings": [[...]]} (Ollama, and the command provider).
func decodeVectors(raw []byte, format string) ([][]float32, error) {
	if format == "openai" {
		var r struct {
			Data []struct {
				Embedding []float32 `json:"embedding"`
				Index     int       `json:"index"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("the provider's answer is not an embeddings response: %w", err)
		}
		out := make([][]float32, len(r.Data))
		for i, d := range r.Data {
			idx := d.Index
			if idx < 0 || idx >= len(out) {
				idx = i
			}
			out[idx] = d.Embedding
		}
		return out, nil
	}
	var r struct {
		Embeddings [][]float32 `json:"embeddings"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("the answer is not {\"embeddings\": [[...]]}: %w", err)
	}
	for _, v := range r.Embeddings {
		for _, x := range v {
			if math.IsNaN(float64(x)) {
				return nil, errors.New("the answer holds NaN")
			}
		}
	}
	return r.Embeddings, nil
}

// Command runs a program (no shell) with {"model", "input": [texts]} on
// stdin, expecting {"embeddings": [[...]]} on stdout, within a timeout.
type Command struct {
	Argv    []string
	Model   string
	Timeout time.Duration
}

// Embed implements Provider.
func (c *Command) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	cctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	in, _ := json.Marshal(map[string]any{"model": c.Model, "input": texts})
	cmd := exec.CommandContext(cctx, c.Argv[0], c.Argv[1:]...)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if cctx.Err() != nil {
			return nil, fmt.Errorf("the embedding command did not answer within %s", c.Timeout)
		}
		return nil, fmt.Errorf("the embedding command failed: %v: %.200s", err, stderr.String())
	}
	return decodeVectors(stdout.Bytes(), "")
}
