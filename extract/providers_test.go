package extract

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain lets the test binary act as a command provider: with
// LOCI_TEST_EXTRACT_COMMAND set it reads a Request on stdin and answers
// with the heuristic's results (or fails, or answers badly, as asked).
func TestMain(m *testing.M) {
	switch os.Getenv("LOCI_TEST_EXTRACT_COMMAND") {
	case "":
		// No goroutine may outlive the tests: a provider command's
		// pipes and waits must end with its call.
		goleak.VerifyTestMain(m)
		return
	case "fail":
		fmt.Fprintln(os.Stderr, "model not loaded")
		os.Exit(3)
	case "short":
		fmt.Println(`{"results": []}`)
		os.Exit(0)
	}
	var req Request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil || len(req.Kinds) == 0 || len(req.Predicates) == 0 {
		os.Exit(4)
	}
	res, _ := Heuristic{}.Extract(context.Background(), req.Texts)
	json.NewEncoder(os.Stdout).Encode(Response{Results: res})
	os.Exit(0)
}

var voc = Request{Kinds: []string{"person", "place"}, Predicates: []string{"lives_in"}}

func TestCommandProvider(t *testing.T) {
	texts := []string{"Melanie lives in Lisbon.", "Nothing here."}
	t.Setenv("LOCI_TEST_EXTRACT_COMMAND", "answer")
	c := Command{Args: []string{os.Args[0]}, Timeout: 10 * time.Second, Vocabulary: voc}
	res, err := c.Extract(context.Background(), texts)
	if err != nil || len(res) != 2 || len(res[0].Facts) != 1 || res[0].Facts[0].Predicate != "lives_in" {
		t.Fatalf("command provider: %+v %v", res, err)
	}
	t.Setenv("LOCI_TEST_EXTRACT_COMMAND", "fail")
	if _, err := c.Extract(context.Background(), texts); err == nil || !strings.Contains(err.Error(), "model not loaded") {
		t.Fatalf("a failing command: %v", err)
	}
	t.Setenv("LOCI_TEST_EXTRACT_COMMAND", "short")
	if _, err := c.Extract(context.Background(), texts); err == nil || !strings.Contains(err.Error(), "0 results for 2 texts") {
		t.Fatalf("a short answer: %v", err)
	}
}

func TestHTTPProvider(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req Request
		if json.Unmarshal(b, &req) != nil || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(400)
			return
		}
		if strings.Contains(strings.Join(req.Texts, " "), "boom") {
			http.Error(w, "upstream model error", 502)
			return
		}
		res, _ := Heuristic{}.Extract(context.Background(), req.Texts)
		json.NewEncoder(w).Encode(Response{Results: res})
	}))
	defer srv.Close()
	h := HTTP{URL: srv.URL, Timeout: 5 * time.Second, Vocabulary: voc}
	res, err := h.Extract(context.Background(), []string{"Melanie lives in Lisbon."})
	if err != nil || len(res) != 1 || len(res[0].Entities) != 2 {
		t.Fatalf("http provider: %+v %v", res, err)
	}
	if _, err := h.Extract(context.Background(), []string{"boom"}); err == nil || !strings.Contains(err.Error(), "502") {
		t.Fatalf("a failing endpoint: %v", err)
	}
}
