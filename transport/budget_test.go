package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/search"
	"github.com/loci-dev/loci/store"
)

// budgetResult is a search answer of n hits: long code (quotes, tabs and
// <>& that JSON escapes), prose with multi-byte runes, a short note.
func budgetResult(n int) *search.SearchResult {
	now := time.Date(2026, 11, 22, 12, 0, 0, 5, time.UTC)
	res := &search.SearchResult{Query: "q", Ranking: "lexical"}
	for i := range n {
		var content string
		switch i % 3 {
		case 0:
			content = strings.Repeat("\tif a < b && c > \"d\" {\n\t\treturn `x`\n\t}\n", 200)
		case 1:
			content = strings.Repeat("Ünïcödé prose — 東京 at dawn 🙂. ", 300)
		default:
			content = fmt.Sprintf("A short note %d.", i)
		}
		d := store.Drawer{ID: fmt.Sprintf("%08d-0000-0000-0000-000000000000", i), WingID: "w", RoomID: "r", Content: content, Tags: []string{},
			Source:    store.Source{Kind: "file", URI: "/r/a.go", Origin: json.RawMessage(`{"path":"a.go","chunk":1}`)},
			ValidFrom: now, CreatedAt: now, Provenance: store.Provenance{RequestedBy: "cli"}}
		res.Hits = append(res.Hits, search.Hit{Drawer: d, WingName: "work", RoomName: "files", Document: "a.go", Chunk: 2, Score: 1 / float64(i+1)})
	}
	return res
}

// Every answer fits its budget, REST's (indented, HTML escaped) and MCP's
// brief one, and each hit sent is the verbatim window it says it is.
func TestAnswersFitTheirBudget(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, 3, 10, 60} {
		res := budgetResult(n)
		for _, b := range []budget{{answer: 512}, {answer: 1500}, {answer: 8192}, {answer: 8192, hit: 200}, {answer: 100000}, {hit: 64}} {
			for _, shape := range []string{"rest", "brief"} {
				var out []byte
				var err error
				if shape == "rest" {
					out, err = restSearch(ctx, res, b)
				} else {
					out, err = briefSearch(ctx, res, b)
				}
				if err != nil {
					t.Fatal(err)
				}
				if b.answer > 0 && len(out) > b.answer {
					t.Fatalf("%s, %d hits, %+v: %d bytes", shape, n, b, len(out))
				}
				var got struct {
					Hits []struct {
						ID        string `json:"id"`
						Content   string `json:"content"`
						Truncated bool   `json:"truncated"`
						FullBytes int    `json:"full_bytes"`
						Window    []int  `json:"window"`
					} `json:"hits"`
					Omitted int `json:"omitted"`
				}
				if err := json.Unmarshal(out, &got); err != nil {
					t.Fatalf("%s: %v: %s", shape, err, out)
				}
				// A REST hit's fields alone (indented) take more than 512 bytes.
				if len(got.Hits)+got.Omitted != n || (len(got.Hits) == 0 && !(shape == "rest" && b.answer == 512)) {
					t.Fatalf("%s, %d hits, %+v: %d sent, %d omitted", shape, n, b, len(got.Hits), got.Omitted)
				}
				for i, h := range got.Hits {
					full := res.Hits[i].Content
					if !h.Truncated {
						if h.Content != full || h.Window != nil || h.FullBytes != 0 {
							t.Fatalf("%s: an unclipped hit is not whole: %+v", shape, h)
						}
						continue
					}
					if h.FullBytes != len(full) || len(h.Window) != 2 || full[h.Window[0]:h.Window[1]] != h.Content ||
						(b.hit > 0 && len(h.Content) > b.hit) || len(h.Content) == 0 {
						t.Fatalf("%s, %+v: hit %d is not its window: %+v", shape, b, i, h)
					}
				}
			}
		}
	}
	// No budget: REST verbatim, exactly as before.
	res := budgetResult(4)
	out, _ := restSearch(ctx, res, budget{})
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	_ = enc.Encode(apiSearch(res))
	if string(out) != buf.String() {
		t.Fatal("a REST answer without a budget is not the verbatim answer")
	}
}

// The brief answer: compact, <>& as themselves, one timestamp to the
// second, the score to four digits.
func TestBriefAnswerShape(t *testing.T) {
	res := budgetResult(1)
	res.Hits[0].Content = "if a < b && c > d {}"
	res.Hits[0].Score = 0.0163934426
	out, err := briefSearch(context.Background(), res, budget{answer: 8192})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ranking":"lexical","hits":[{"id":"00000000-0000-0000-0000-000000000000","wing":"work","room":"files","document":"a.go","chunk":2,` +
		`"valid_from":"2026-11-22T12:00:00Z","score":0.01639,"content":"if a < b && c > d {}"}]}`
	if string(out) != want {
		t.Fatalf("brief answer:\n %s\nwant\n %s", out, want)
	}
}

// Bad budgets are refused naming the argument.
func TestSearchBudgetRefusals(t *testing.T) {
	for _, c := range []struct{ bytes, hit int }{{100, 0}, {-1, 0}, {MaxSearchBytes + 1, 0}, {0, 10}, {0, -3}, {600, MaxSearchBytes + 1}} {
		t.Run(fmt.Sprintf("bytes %d hit %d", c.bytes, c.hit), func(t *testing.T) {
			if _, err := searchBudget(c.bytes, c.hit, "no bound"); err == nil {
				t.Fatalf("%+v accepted", c)
			}
		})
	}
	if b, err := searchBudget(512, 64, "no bound"); err != nil || b != (budget{512, 64}) {
		t.Fatalf("%+v %v", b, err)
	}
}

// The clipped and brief answers are pinned like every answer.
func TestClippedAnswersRender(t *testing.T) {
	res := budgetResult(2)
	res.Hits[0].Content = strings.Repeat("word ", 100)
	var rest api.SearchResult
	out, _ := restSearch(context.Background(), res, budget{hit: 64})
	if err := json.Unmarshal(out, &rest); err != nil {
		t.Fatal(err)
	}
	sameAnswer(t, "search clipped", rest)
	var brief api.BriefResult
	out, _ = briefSearch(context.Background(), res, budget{answer: 1024})
	if err := json.Unmarshal(out, &brief); err != nil {
		t.Fatal(err)
	}
	sameAnswer(t, "search brief", brief)
}

// BenchmarkBriefSearch is the cost of fitting and rendering ten long hits
// into MCP's default budget (windows from the content's start).
func BenchmarkBriefSearch(b *testing.B) {
	res := budgetResult(10)
	for b.Loop() {
		if _, err := briefSearch(context.Background(), res, budget{answer: MCPSearchBytes}); err != nil {
			b.Fatal(err)
		}
	}
}
