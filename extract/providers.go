package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"time"

	"github.com/loci-dev/loci/extract/provider"
)

// Request is what the command and http providers receive: the texts to
// read and the vocabularies their answer must use.
type Request struct {
	Texts      []string `json:"texts"`
	Kinds      []string `json:"kinds"`
	Predicates []string `json:"predicates"`
}

// Response is what they answer: one result per text, in order.
type Response struct {
	Results []Result `json:"results"`
}

// Command runs a program (no shell) with a Request as JSON on stdin and
// reads a Response as JSON from stdout, within Timeout.
type Command struct {
	Args       []string
	Timeout    time.Duration
	Vocabulary Request
}

// Name is the provenance of what it finds.
func (c Command) Name() string { return string(provider.Command) }

// Extract runs the program once for the texts.
func (c Command) Extract(ctx context.Context, texts []string) ([]Result, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	in := c.Vocabulary
	in.Texts = texts
	body, _ := json.Marshal(in)
	cmd := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("extraction command %s: %v: %s", c.Args[0], err, bytes.TrimSpace(stderr.Bytes()))
	}
	return decodeResponse(out, len(texts))
}

// HTTP posts a Request as JSON to URL and reads a Response, within
// Timeout: for example a small service in front of an LLM with an
// OpenAI-compatible API (see docs/DECISIONS.md for the prompt and schema).
type HTTP struct {
	URL        string
	Timeout    time.Duration
	Vocabulary Request
	Client     *http.Client
}

// Name is the provenance of what it finds.
func (h HTTP) Name() string { return string(provider.HTTP) }

// Extract posts the texts once.
func (h HTTP) Extract(ctx context.Context, texts []string) ([]Result, error) {
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	in := h.Vocabulary
	in.Texts = texts
	body, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	c := h.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("extraction endpoint: %v", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("extraction endpoint answered %d: %s", resp.StatusCode, bytes.TrimSpace(out[:min(len(out), 300)]))
	}
	return decodeResponse(out, len(texts))
}

func decodeResponse(b []byte, n int) ([]Result, error) {
	var r Response
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("the extraction answer is not {\"results\": [...]}: %v", err)
	}
	if len(r.Results) != n {
		return nil, fmt.Errorf("the extraction answer has %d results for %d texts", len(r.Results), n)
	}
	return r.Results, nil
}
