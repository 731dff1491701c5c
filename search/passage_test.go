package search

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

// A clipped hit's window holds the passage that matched: the run of query
// words side by side in the query's order rather than a lone common word
// near the start, whole lines where they fit, never more than the limit,
// never a cut rune.
func TestWindowHoldsTheMatchingPassage(t *testing.T) {
	filler := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n", 40)
	content := "The job starts here.\n" + filler + "We keep the job queue in the palace itself.\n" + filler + "ünïcödé — 東京 🙂\n"
	// "job" is in many drawers, "queue" in few: rarity weighs.
	df := func(words []string) (uint64, []uint64) {
		out := make([]uint64, len(words))
		for i, w := range words {
			out[i] = map[string]uint64{"job": 900, "queue": 12}[strings.ToLower(w)]
		}
		return 1000, out
	}
	p := newPassages("job queue", df, nil, nil).of(context.Background(), "h", content, false)
	for _, limit := range []int{44, 60, 120, 500, 2000} {
		s, e := p.Window(limit)
		w := content[s:e]
		if e-s > limit || !strings.Contains(w, "job queue") || !utf8.ValidString(w) {
			t.Fatalf("limit %d: window [%d, %d) %q", limit, s, e, w)
		}
		if limit >= 120 && (s > 0 && content[s-1] != '\n') {
			t.Fatalf("limit %d: the window starts mid-line: %q", limit, w)
		}
	}
	if s, e := p.Window(len(content)); s != 0 || e != len(content) {
		t.Fatalf("a window as long as the content is all of it: [%d, %d)", s, e)
	}
	// Stemmed: "queues" and "Jobs" match "job queue".
	q := newPassages("jobs queues", nil, nil, nil).of(context.Background(), "h", content, false)
	if s, e := q.Window(100); !strings.Contains(content[s:e], "job queue") {
		t.Fatalf("stemmed query: %q", content[s:e])
	}
	// Multi-byte text near the end: every window is whole runes.
	u := newPassages("東京", nil, nil, nil).of(context.Background(), "u", content, false)
	for limit := 5; limit < 40; limit++ {
		s, e := u.Window(limit)
		if !utf8.ValidString(content[s:e]) || e-s > limit {
			t.Fatalf("limit %d: %q", limit, content[s:e])
		}
	}
}

// A hit holding none of the query's words (found by meaning) is clipped
// around its sentence closest to the query by the search's embedding;
// without an embedding, around its start.
func TestWindowOfASemanticHit(t *testing.T) {
	content := strings.Repeat("Nothing to see in this line at all.\n", 30) + "The kettle whistles on the stove.\n" + strings.Repeat("More lines that say little.\n", 30)
	qvec := []float32{1, 0, 0}
	embed := func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, t := range texts {
			out[i] = []float32{0, 1, 0}
			if strings.Contains(t, "kettle") {
				out[i] = []float32{0.9, 0.1, 0}
			}
		}
		return out, nil
	}
	p := newPassages("boiling water", nil, embed, qvec).of(context.Background(), "k", content, false)
	if s, e := p.Window(120); !strings.Contains(content[s:e], "The kettle whistles on the stove.") || e-s > 120 {
		t.Fatalf("semantic window: %q", content[s:e])
	}
	plain := newPassages("boiling water", nil, nil, nil).of(context.Background(), "k", content, false)
	if s, e := plain.Window(120); s != 0 || e > 120 || e < 100 {
		t.Fatalf("no embedding: [%d, %d)", s, e)
	}
}

// Any content, query and limit: the window lies in the content, is at
// most the limit, and cuts no rune.
func FuzzWindow(f *testing.F) {
	f.Add("We keep the job queue in the palace itself.", "job queue", 10)
	f.Add("Supercalifragilisticexpialidocious job", "supercalifragilisticexpialidocious", 5)
	f.Add("東京 🙂 ünï\n\ncödé queue", "queue 東京", 3)
	f.Fuzz(func(t *testing.T, content, query string, limit int) {
		if !utf8.ValidString(content) || limit < 1 {
			t.Skip()
		}
		p := newPassages(query, nil, nil, nil).of(context.Background(), "f", content, false)
		s, e := p.Window(limit)
		if s < 0 || e > len(content) || s > e || (limit < len(content) && e-s > limit) || !utf8.ValidString(content[s:e]) {
			t.Fatalf("limit %d: [%d, %d) of %d bytes", limit, s, e, len(content))
		}
	})
}

// BenchmarkPassages is the cost of finding the passages of ten hits of
// about 5 KB of code each and one window in each.
func BenchmarkPassages(b *testing.B) {
	content := strings.Repeat("\t// Submit validates a submission through its kind and queues the job.\n\tjob, _, err := j.submit(ctx, s, false)\n", 45)
	for b.Loop() {
		p := newPassages("job queue", nil, nil, nil)
		for i := range 10 {
			p.of(context.Background(), string(rune('a'+i)), content, false).Window(600)
		}
	}
}
